"""The `imagecl` command line: check, compile, run, devices."""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from . import __version__
from .errors import ArgumentError, ImageCLError


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake exits with status 1 like every other user error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="imagecl", description="Compile and run ImageCL (.icl) image filters on OpenCL devices.")
    parser.add_argument("--version", action="version", version=f"imagecl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    check = sub.add_parser("check", help="check a program and report its errors")
    check.add_argument("file")

    comp = sub.add_parser("compile", help="print or write the generated OpenCL C")
    comp.add_argument("file")
    comp.add_argument("-o", "--output", help="write the OpenCL source here instead of printing it")
    comp.add_argument("--config", help="a tuning configuration as JSON (a dict), or @file.json")

    run = sub.add_parser("run", help="run a program on images and arrays",
                         description="Run a program. Inputs are NAME=VALUE: image files (.png, .tif, .jpg, .bmp), "
                                     ".npy arrays, or numbers for scalars. Outputs are saved with -o NAME=PATH.")
    run.add_argument("file")
    run.add_argument("assignments", nargs="*", metavar="NAME=VALUE", help="inputs and scalars")
    run.add_argument("-o", "--output", action="append", default=[], metavar="NAME=PATH",
                     help="save an output array (.npy, .png, .tif, ...); repeatable")
    run.add_argument("--device", help="device index or name fragment (default: $IMAGECL_DEVICE, else the first GPU)")
    run.add_argument("--config", help="a tuning configuration as JSON (a dict), or @file.json")

    space = sub.add_parser("space", help="print a program's tuning space on a device")
    space.add_argument("file")
    space.add_argument("--device", help="device index or name fragment (default: $IMAGECL_DEVICE, else the first GPU)")
    space.add_argument("--size", help="problem size WxH[xD], for size-dependent constraints (e.g. image limits)")
    space.add_argument("--json", action="store_true", help="print the space as JSON")
    space.add_argument("--random", type=int, metavar="N", help="also print N random valid configurations")
    space.add_argument("--seed", type=int, default=0, help="seed for --random")

    comp.add_argument("--device", help="device whose limits the configuration is checked against")

    sub.add_parser("devices", help="list the OpenCL devices")
    return parser


def _read_source(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise ImageCLError(f"{path}: no such file" if not p.exists() else f"{path}: not a file")
    try:
        return p.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ImageCLError(f"{path}: cannot read ({exc})") from None


def _load(path: str):
    from .program import compile as compile_program

    return compile_program(_read_source(path), path)


def _parse_config(text: Optional[str]) -> Optional[dict]:
    if text is None:
        return None
    if text.startswith("@"):
        text = _read_source(text[1:])
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImageCLError(f"--config is not valid JSON: {exc}") from None
    if not isinstance(config, dict):
        raise ImageCLError("--config must be a JSON object, e.g. '{\"wg_x\": 16}'")
    return config


def _split(assignment: str, what: str) -> tuple[str, str]:
    if "=" not in assignment:
        raise ArgumentError(f"expected {what} as NAME=VALUE, got '{assignment}'")
    name, value = assignment.split("=", 1)
    if not name or not value:
        raise ArgumentError(f"expected {what} as NAME=VALUE, got '{assignment}'")
    return name.strip(), value.strip()


def _run(args) -> int:
    from .imagefiles import read_array, write_array
    from .ir import types as ty

    program = _load(args.file)
    info = program.info
    params = {p.name: p for p in info.params}
    values = {}
    for assignment in args.assignments:
        name, text = _split(assignment, "an input")
        if name not in params:
            from .errors import suggestion_suffix

            raise ArgumentError(f"'{program.name}' has no parameter '{name}'" + suggestion_suffix(name, params)
                                + f" (parameters: {', '.join(params)})")
        array = info.arrays.get(name)
        if array is not None:
            channels = array.element.width if isinstance(array.element, ty.VectorType) else 0
            values[name] = read_array(text, array.element.dtype, channels)
        else:
            values[name] = _number(name, text)
    saves = dict(_split(o, "an output") for o in args.output)
    for name in saves:
        if name not in info.outputs:
            raise ArgumentError(f"'{name}' is not an output of '{program.name}' (outputs: {', '.join(info.outputs)})")
    outputs, seconds = program.run(values, device=args.device, config=_parse_config(args.config))
    for name, out in outputs.items():
        if name in saves:
            write_array(saves[name], out)
            print(f"{name}: {out.shape} {out.dtype} -> {saves[name]}")
        else:
            print(f"{name}: {out.shape} {out.dtype} min {out.min():.6g} max {out.max():.6g} "
                  f"mean {out.astype(np.float64).mean():.6g} (not saved; use -o {name}=PATH)")
    print(f"kernel time: {seconds * 1e3:.3f} ms")
    return 0


def parse_size(text: str) -> tuple[int, ...]:
    """'4096x2048' (width x height [x depth]) -> NumPy shape (2048, 4096)."""
    try:
        sizes = [int(part) for part in text.lower().split("x")]
    except ValueError:
        raise ArgumentError(f"--size must look like WIDTHxHEIGHT[xDEPTH], got '{text}'") from None
    if not 2 <= len(sizes) <= 3 or any(s <= 0 for s in sizes):
        raise ArgumentError(f"--size must look like WIDTHxHEIGHT[xDEPTH] with positive sizes, got '{text}'")
    return tuple(reversed(sizes))


def _space(args) -> int:
    program = _load(args.file)
    shape = parse_size(args.size) if args.size else None
    if shape is not None and len(shape) != program.info.grid_dims:
        raise ArgumentError(f"--size has {len(shape)} dimensions but the grid of '{program.name}' has "
                            f"{program.info.grid_dims}")
    space = program.space_for(args.device, shape)
    samples = space.random(args.random, seed=args.seed) if args.random else []
    if args.json:
        data = space.to_json()
        if args.random:
            data["random"] = samples
        print(json.dumps(data, indent=2))
    else:
        print(space.describe())
        for config in samples:
            print(json.dumps(config))
    return 0


def _number(name: str, text: str):
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ArgumentError(f"scalar '{name}' needs a number, got '{text}'") from None


def _devices() -> int:
    from .runtime.devices import list_devices

    for d in list_devices():
        print(d.describe())
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            program = _load(args.file)
            print(f"{args.file}: ok: kernel '{program.name}', grid {program.info.grid_dims}-D, "
                  f"outputs {', '.join(program.outputs)}")
            for note in program.info.unchecked_races:
                print(f"note: not proven race-free: {note}")
            return 0
        if args.command == "compile":
            program = _load(args.file)
            source = program.opencl_source(_parse_config(args.config), device=args.device)
            if args.output:
                try:
                    Path(args.output).write_text(source)
                except OSError as exc:
                    raise ImageCLError(f"{args.output}: cannot write ({exc.strerror or exc})") from None
            else:
                sys.stdout.write(source)
            return 0
        if args.command == "run":
            return _run(args)
        if args.command == "devices":
            return _devices()
        if args.command == "space":
            return _space(args)
    except ImageCLError as exc:
        from .errors import CompileError

        print(str(exc) if isinstance(exc, CompileError) else f"imagecl: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `imagecl space ... | head`: the reader left, nothing to report
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except KeyboardInterrupt:
        print("imagecl: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug in imagecl, not a user mistake
        if os.environ.get("IMAGECL_DEBUG"):
            traceback.print_exc()
        print(f"imagecl: internal error: {type(exc).__name__}: {exc}\n"
              "(this is a bug in imagecl; rerun with IMAGECL_DEBUG=1 for details and report it)", file=sys.stderr)
        return 2
    return 0  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
