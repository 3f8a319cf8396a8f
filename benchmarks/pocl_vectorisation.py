"""Does PoCL vectorise a kernel across work-items? Count packed and scalar float instructions.

    python benchmarks/pocl_vectorisation.py [--device cpu]

PoCL runs a work-group as a loop over its work-items and relies on LLVM's loop vectoriser to
execute several work-items per SIMD instruction. Whether that happened is visible in the machine
code PoCL leaves in its kernel cache: packed single-precision arithmetic (`vmulps`, `vaddps`,
`vfmadd...ps`) against scalar (`...ss`). This script builds a 9x9 convolution in several forms
(hand-written ones that isolate one feature each, and imagecl's generated variants), launches each
once so that PoCL compiles it for a 16x1 work-group, disassembles the result with `objdump` and
prints the counts. Used for the "what limits the CPU" notes in BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TAPS = "#pragma unroll\n  for (int j = -4; j <= 4; j++)\n  #pragma unroll\n  for (int i = -4; i <= 4; i++)\n    "
SUM = "s += input[(idy + j) * w + idx + i] * filter[(j + 4) * 9 + i + 4];"
CLAMPED = "s += input[clamp(idy + j, 0, h - 1) * w + clamp(idx + i, 0, w - 1)] * filter[(j + 4) * 9 + i + 4];"
SIGNATURE = ("__kernel void convolution9(__global const float* input, const int w, const int h, "
             "__global float* output, const int ow, const int oh, __global const float* filter)")
IDS = "const int idx = get_global_id(0), idy = get_global_id(1);"


def hand_written() -> dict[str, str]:
    """One feature each: per-work-item guard, boundary clamp, helper function, uniform branch."""
    helper = ("{attr}void pt(__global const float* input, const int w, __global float* output,\n"
              "        __global const float* filter, const int idx, const int idy)\n"
              "{{\n  float s = 0.0f;\n  " + TAPS + SUM + "\n  output[idy * w + idx] = s;\n}}\n")
    body = "  float s = 0.0f;\n  " + TAPS + SUM + "\n  output[idy * w + idx] = s;\n"
    return {
        "body in the kernel": f"{SIGNATURE}\n{{\n  {IDS}\n{body}}}\n",
        "body + early-return guard": f"{SIGNATURE}\n{{\n  {IDS}\n  if (idx >= w || idy >= h) return;\n{body}}}\n",
        "body with clamped reads": f"{SIGNATURE}\n{{\n  {IDS}\n  float s = 0.0f;\n  {TAPS}{CLAMPED}\n"
                                   "  output[idy * w + idx] = s;\n}\n",
        "body in a helper function": helper.format(attr="") + f"{SIGNATURE}\n{{\n  {IDS}\n"
                                     "  pt(input, w, output, filter, idx, idy);\n}\n",
        "helper, always_inline": helper.format(attr="__attribute__((always_inline)) ") +
                                 f"{SIGNATURE}\n{{\n  {IDS}\n  pt(input, w, output, filter, idx, idy);\n}}\n",
        "uniform branch: plain / clamped": f"{SIGNATURE}\n{{\n  {IDS}\n  float s = 0.0f;\n"
            "  const bool inside = (get_group_id(0) + 1) * get_local_size(0) + 4 <= w && get_group_id(0) > 0\n"
            "                      && get_group_id(1) >= 4 && get_group_id(1) + 4 < h;\n"
            f"  if (inside) {{\n  {TAPS}{SUM}\n  }} else {{\n  {TAPS}{CLAMPED}\n  }}\n"
            "  output[idy * w + idx] = s;\n}\n",
    }


def generated() -> dict[str, str]:
    """imagecl's variants of the peer benchmark's 9x9 convolution (taps fully unrolled)."""
    import imagecl
    from imagecl.bench.peer_workloads import convolution_source

    prog = imagecl.compile(convolution_source(4), filename="convolution9.icl")
    unroll = {"unroll_convolution9_l7": 9, "unroll_convolution9_l8": 9, "wg_x": 16, "wg_y": 1}
    out = {}
    for label, extra in [("imagecl: unrolled", {}), ("imagecl: unrolled + interior", {"interior": 1})]:
        out[label] = prog.source_of(prog.plan({**unroll, **extra}))
    inside_only = out["imagecl: unrolled + interior"]
    start = inside_only.index("    else\n    {")
    end = inside_only.index("    }\n}", start)
    inside_only = inside_only[:start] + inside_only[end + 6:]
    out["imagecl: interior, general path removed"] = inside_only
    out["... and always_inline helpers"] = re.sub(r"^(void imcl_point|float imcl_read)",
                                                  r"__attribute__((always_inline)) \1", inside_only, flags=re.M)
    return out


def count(source: str, device_fragment: str) -> tuple[int, int]:
    """(scalar, packed) float add/mul/FMA instructions in PoCL's build of `source`."""
    with tempfile.TemporaryDirectory() as cache:
        script = (
            "import sys, numpy as np, pyopencl as cl\n"
            "from imagecl.runtime.devices import select_device\n"
            "dev = select_device(%r); ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)\n"
            "p = cl.Program(ctx, sys.stdin.read()).build()\n"
            "w = 256; mf = cl.mem_flags\n"
            "a = cl.Buffer(ctx, mf.READ_WRITE, (w + 8) * (w + 8) * 4)\n"
            "f = cl.Buffer(ctx, mf.READ_WRITE, 81 * 4); o = cl.Buffer(ctx, mf.READ_WRITE, w * w * 4)\n"
            "p.convolution9(q, (w, w), (16, 1), a, np.int32(w), np.int32(w), o, np.int32(w), np.int32(w), f)\n"
            "q.finish()\n") % (device_fragment,)
        env = {**os.environ, "POCL_CACHE_DIR": cache, "POCL_KERNEL_CACHE": "1"}
        subprocess.run([sys.executable, "-c", script], input=source, text=True, env=env, check=True,
                       capture_output=True)
        objects = list(Path(cache).rglob("*.so"))
        if not objects:
            raise SystemExit("PoCL left no kernel object in its cache: is the device PoCL?")
        asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(objects[0])], capture_output=True,
                             text=True, check=True).stdout
    scalar = len(re.findall(r"\bv(?:fn?m(?:add|sub)\d*ss|mulss|addss)\b", asm))
    packed = len(re.findall(r"\bv(?:fn?m(?:add|sub)\d*ps|mulps|addps)\b", asm))
    return scalar, packed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="a PoCL device (name fragment)")
    args = parser.parse_args()
    print("| kernel | scalar float ops | packed float ops | vectorised |")
    print("| --- | ---: | ---: | --- |")
    for label, source in {**hand_written(), **generated()}.items():
        scalar, packed = count(source, args.device)
        print(f"| {label} | {scalar} | {packed} | {'yes' if packed else 'no'} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
