"""The CPU seeds' code shapes on peer workloads, each reading its input directly and staged in
local memory (issue 23).

    python3 benchmarks/cpu_seeds.py [--device cpu] [--workloads median7,median5,conv9,conv11]
        [--size-scale 0.5] [--repeats 5] [--shapes 16x1/1x8,32x4/1x2] [--out JSON]

For each workload of the peer harness (imagecl.bench.peer_workloads) at its size (scaled as
peers.py scales it), every shape of design.CPU_SEEDS is built as a tuning run builds a seed (the
shape and the plain code around it, design.plain_code), once with the staged images read
directly and once staged in local memory; the program's own tunables take their first values
that make the configuration valid. `--shapes` times other shapes of the same vector code
instead (points along x and y per work-item / work-group size, e.g. 16x1/1x8). Each is checked
against the naive variant's output on its first launch, then launched `--repeats` times (median
of the profiling events). Whether staging a wide window pays on a CPU decides which seed a 15 s
run measures first (design.WIDE_WINDOW).
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import imagecl
from imagecl.bench.peer_workloads import all_workloads
from imagecl.bench.seed_configs import with_tunables
from imagecl.errors import ImageCLError
from imagecl.runtime.devices import device_key, select_device
from imagecl.runtime.session import Session
from imagecl.tuner.strategies.design import CPU_SEEDS, plain_code


def parse_shapes(text: str) -> list[dict]:
    """`16x1/1x8,...` as seed shapes (points per work-item along x and y / work-group size)."""
    shapes = []
    for item in text.split(","):
        try:
            px, wg = item.split("/")
            (px_x, px_y), (wg_x, wg_y) = (tuple(int(v) for v in part.split("x")) for part in (px, wg))
        except ValueError:
            raise ValueError(f"'{item}': expected PXxPY/WGXxWGY, e.g. 16x1/1x8") from None
        shapes.append({"interior": 1, "vector_x": 2, "px_x": px_x, "px_y": px_y, "wg_x": wg_x, "wg_y": wg_y})
    return shapes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--workloads", default="median7,median5,conv9,conv11")
    parser.add_argument("--size-scale", type=float, default=0.5, help="each side of the peer size times this")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--shapes", default=None,
                        help="shapes to time instead of the CPU seeds' (PXxPY/WGXxWGY, comma-separated)")
    parser.add_argument("--out", default=None, help="write the results here (JSON)")
    args = parser.parse_args(argv)
    try:
        shapes = parse_shapes(args.shapes) if args.shapes else [
            {k: v for k, v in seed.items() if k != "tiles"} for seed in CPU_SEEDS]
    except ValueError as exc:
        parser.error(f"--shapes: {exc}")
    device = select_device(args.device)
    known = {w.key: w for w in all_workloads()}
    wanted = args.workloads.split(",")
    unknown = [k for k in wanted if k not in known]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(known)}")
    rows = []
    for key in wanted:
        w = known[key]
        if len(w.full) != 2:
            parser.error(f"'{key}' is not a 2-D workload (the 3-D grids have seeds of their own)")
        shape = tuple(max(16, int(s * args.size_scale)) for s in w.full)
        program = imagecl.compile(w.source, f"<{key}>")
        arguments = w.make(shape, np.random.default_rng(0))
        space = program.space_for(device, shape)
        session = Session(program, arguments, device)
        session.set_reference_from(program.plan("naive", device))
        print(f"{key} {shape[1]}x{shape[0]} (windows {space.tile_window}):", flush=True)
        for index, shape_of in enumerate(shapes):
            for tiles in (0, 1):
                config = with_tunables(space, {k: v for k, v in {**plain_code(space, tiles), **shape_of}.items()
                                       if k in space.names})
                row = {"workload": key, "size": list(shape), "seed": index, "shape": shape_of, "staged": tiles,
                       "config": config}
                if config is None:
                    row["problem"] = "no valid configuration"
                else:
                    started = time.perf_counter()
                    try:
                        timing = session.time(program.plan(config, device), repeats=args.repeats, verify=True)
                    except ImageCLError as exc:
                        timing, row["problem"] = None, str(exc)
                    row["seconds_with_build"] = time.perf_counter() - started
                    if timing is not None and timing.problem:
                        row["problem"] = timing.problem
                    elif timing is not None:
                        row["ms"] = statistics.median(timing.times) * 1e3
                        row["runs_ms"] = [t * 1e3 for t in timing.times]
                rows.append(row)
                shown = f"{row['ms']:.3f} ms" if "ms" in row else row.get("problem", "")
                print(f"  shape {index} (wg {shape_of['wg_x']}x{shape_of['wg_y']}, "
                      f"points {shape_of['px_x']}x{shape_of['px_y']}), "
                      f"{'staged' if tiles else 'direct'}: {shown}", flush=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "host": platform.node(),
              "device": device_key(device), "command": "python3 benchmarks/cpu_seeds.py " + " ".join(sys.argv[1:] if argv is None else argv),
              "rows": rows}
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
