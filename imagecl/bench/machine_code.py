"""How much of a PoCL-built kernel is SIMD code: packed against scalar floating-point instructions.

PoCL keeps each kernel it compiles for a CPU as a shared object in its cache (POCL_CACHE_DIR).
`pocl_instruction_mix` runs one variant of a program once in a child process with a fresh
cache (the variable must be set before PoCL starts, and PoCL compiles the work-group function
at the first launch), disassembles what PoCL left there with `objdump` and counts the x86
floating-point arithmetic: packed (`vmulps`, `vfmadd231ps`, ... on xmm/ymm/zmm registers) against
scalar (`...ss`/`...sd`). Each machine-code count is of instructions in the object, not of
instructions executed.

    python -m imagecl.bench.machine_code examples/sobel.icl --config '{"interior": 1, "vector_x": 2, "px_x": 8}'
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping, Optional, Union

# float arithmetic whose packed form means SIMD work: add/sub/mul/div/min/max/sqrt and FMAs
_OPS = r"(?:add|sub|mul|div|min|max|sqrt|fn?m(?:add|sub)(?:132|213|231))"
_PACKED = re.compile(rf"^\s*[0-9a-f]+:\s+v?{_OPS}p[sd]\s+(.*)$", re.M)
_SCALAR = re.compile(rf"^\s*[0-9a-f]+:\s+v?{_OPS}s[sd]\s", re.M)


@dataclass(frozen=True)
class InstructionMix:
    """Floating-point arithmetic instructions in one kernel object, by kind."""

    scalar: int
    packed: int
    packed_ymm: int  # of `packed`: 256-bit
    packed_zmm: int  # of `packed`: 512-bit

    @property
    def packed_share(self) -> float:
        total = self.scalar + self.packed
        return self.packed / total if total else 0.0


def count(assembly: str) -> InstructionMix:
    """The mix of an `objdump -d` listing (AT&T syntax, as objdump prints by default)."""
    packed = _PACKED.findall(assembly)
    return InstructionMix(scalar=len(_SCALAR.findall(assembly)), packed=len(packed),
                          packed_ymm=sum("%ymm" in operands for operands in packed),
                          packed_zmm=sum("%zmm" in operands for operands in packed))


_CHILD = """
import json, sys
import numpy as np
import imagecl
from inputs_for_probe import arguments
spec = json.loads(sys.stdin.read())
prog = imagecl.compile(spec["source"], filename=spec["filename"])
prog(**arguments(prog, spec["shape"]), device=spec["device"], config=spec["config"])
"""

_INPUTS = '''
import numpy as np
def arguments(prog, shape):
    """Random inputs of the program's types; grid images of `shape`, arrays of their own shape."""
    rng = np.random.default_rng(0)
    out = {}
    for name, array in prog.info.arrays.items():
        if not array.is_read:
            continue
        dims = tuple(shape) if array.kind == "image" else tuple(array.shape or (16,))
        dtype = array.element.dtype
        value = rng.uniform(0, 100, dims)
        if array.kind == "image" and array.dims != len(shape):
            raise SystemExit(f"image {name!r} is {array.dims}-D, the shape given is {len(shape)}-D")
        out[name] = value.astype(dtype)
    for p in prog.info.params:
        if p.name not in prog.info.arrays:
            out[p.name] = 1
    return out
'''


def pocl_instruction_mix(source: str, config: Union[Mapping, str], shape: tuple[int, ...] = (64, 256),
                         device: str = "cpu", filename: str = "probe.icl",
                         keep: Optional[Path] = None) -> InstructionMix:
    """Run `config` of the program `source` once on the PoCL device `device` (on images of
    `shape`, NumPy order) and count the instructions of the kernel PoCL built. `keep`: copy
    PoCL's cache there (the kernel's .so and, with POCL_LEAVE_KERNEL_COMPILER_TEMP_FILES=1 in
    the environment, its LLVM IR)."""
    if shutil.which("objdump") is None:
        raise RuntimeError("objdump (binutils) is needed to read the machine code")
    with tempfile.TemporaryDirectory(prefix="imagecl-pocl-") as scratch:
        cache = Path(scratch) / "cache"
        (Path(scratch) / "inputs_for_probe.py").write_text(_INPUTS)
        env = {**os.environ, "POCL_CACHE_DIR": str(cache), "POCL_KERNEL_CACHE": "1",
               "PYTHONPATH": os.pathsep.join(filter(None, [scratch, os.environ.get("PYTHONPATH")]))}
        spec = {"source": source, "config": config, "shape": list(shape), "device": device, "filename": filename}
        done = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(spec), text=True, env=env,
                              capture_output=True, timeout=600)
        if done.returncode:
            raise RuntimeError(f"the variant did not run:\n{done.stderr[-2000:]}")
        objects = sorted(cache.rglob("*.so"))
        if not objects:
            raise RuntimeError(f"PoCL left no kernel object in its cache: is '{device}' a PoCL CPU device?")
        listing = "".join(subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(o)], capture_output=True,
                                         text=True, check=True).stdout for o in objects)
        if keep is not None:
            shutil.copytree(cache, keep, dirs_exist_ok=True)
    return count(listing)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("program", help="an .icl file")
    parser.add_argument("--config", default="naive", help="a configuration as JSON, or 'naive'")
    parser.add_argument("--shape", default="64,256", help="image shape, NumPy order (default 64,256)")
    parser.add_argument("--device", default="cpu", help="a PoCL CPU device (name fragment)")
    parser.add_argument("--keep", type=Path, help="copy PoCL's cache (the kernel objects) here")
    args = parser.parse_args(argv)
    config = args.config if args.config == "naive" else json.loads(args.config)
    mix = pocl_instruction_mix(Path(args.program).read_text(), config, tuple(int(s) for s in args.shape.split(",")),
                               args.device, Path(args.program).name, args.keep)
    print(json.dumps({**asdict(mix), "packed_share": round(mix.packed_share, 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
