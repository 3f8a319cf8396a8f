"""Time generating the OpenCL source of every distinct variant of the paper's convolution space
(benchmarks/throughput.py's 131,072 configurations of examples/convolution9.icl, on a device with
an H200's limits at 4096x4096): the code-generation share of measuring the whole space (issue 21).

    python benchmarks/codegen_speed.py [--limit N]

No device is needed: the limits are given, and only sources are generated (not built).
"""
from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import imagecl
from imagecl.errors import ConfigError
from imagecl.bench.paper_space import H200, POW2

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="generate only the first N distinct sources")
    args = parser.parse_args(argv)
    prog = imagecl.load(EXAMPLES / "convolution9.icl")
    space = prog.space_for_limits(H200, (4096, 4096))
    unroll = [p.name for p in space.parameters if p.kind == "unroll"]
    distinct, invalid = {}, 0
    for wx, wy, px, py, img, loc, inter, unr, const in itertools.product(POW2, POW2, POW2, POW2, *[(0, 1)] * 5):
        config = {"wg_x": wx, "wg_y": wy, "px_x": px, "px_y": py, "image_input": img, "local_input": loc,
                  "interleaved": inter, "constant_filter": const, **{n: 9 if unr else 1 for n in unroll}}
        try:
            full = space.complete(config)
        except ConfigError:  # breaks a static limit: recorded as invalid by a measurement
            invalid += 1
            continue
        distinct.setdefault(tuple(sorted(space.source_key(full).items())), full)
    plans = [space.plan(c) for c in distinct.values()][: args.limit or None]
    start = time.perf_counter()
    for plan in plans:
        prog.source_of(plan)
    spent = time.perf_counter() - start
    print(f"131,072 configurations: {invalid} invalid, {len(distinct)} distinct sources; generated {len(plans)} "
          f"in {spent:.1f} s ({1000 * spent / max(len(plans), 1):.2f} ms/source)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
