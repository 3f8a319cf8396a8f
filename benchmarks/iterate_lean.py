"""Does an iterated split lean to the device listed first? (issue 22)

    python3 benchmarks/iterate_lean.py --devices 0,1 [--size 8192x8192] [--steps 64] [--h 8]
        [--lean 0.075] [--rounds 7] [--out JSON]

Times Conway's game of life iterated `--steps` steps across two devices (`multidevice.iterate`,
halo exchanges every `--h` steps) at equal shares and at `--lean` more of the rows on either
device, in both device orders, as interleaved rounds after one untimed call of each; reports the
median, fastest and slowest call (ms). On two identical GPUs a split whose fastest shares favour
the device listed first, whichever GPU it is, is bent by the order the devices' threads start in,
not by the devices (BENCHMARKS.md, "An iterated call's cost once, and GPUs started together in
`iterate`"). The last call's board is checked against a single-device run.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import imagecl
from imagecl.runtime import multidevice
from imagecl.runtime.devices import device_key, select_device

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default="0,1", help="two device indices, comma-separated")
    parser.add_argument("--size", default="8192x8192", help="WxH")
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--h", type=int, default=8, help="steps between halo exchanges")
    parser.add_argument("--lean", type=float, default=0.075, help="the share moved from one device to the other")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", default=None, help="write the results here (JSON)")
    args = parser.parse_args(argv)
    indices = [int(v) for v in args.devices.split(",")]
    if len(indices) != 2:
        parser.error("--devices names two devices")
    width, height = (int(v) for v in args.size.lower().split("x"))
    life = imagecl.load(EXAMPLES / "conway.icl")
    board = (np.random.default_rng(0).random((height, width)) < 0.4).astype(np.int8)
    splits = [[0.5, 0.5], [0.5 + args.lean, 0.5 - args.lean], [0.5 - args.lean, 0.5 + args.lean]]
    orders = [indices, indices[::-1]]
    expected = life.iterate(args.steps, input=board, devices=[indices[0]])["output"]
    results = []
    for order in orders:
        devices = [select_device(i) for i in order]
        times: dict[int, list[float]] = {k: [] for k in range(len(splits))}
        last = None
        for shares in splits:  # untimed: builds, first allocations
            multidevice.iterate(life, args.steps, {"input": board}, devices, shares, args.h)
        for _ in range(args.rounds):
            for k, shares in enumerate(splits):
                start = time.perf_counter()
                last = multidevice.iterate(life, args.steps, {"input": board}, devices, shares, args.h)
                times[k].append(time.perf_counter() - start)
        if not np.array_equal(last["output"], expected):
            raise SystemExit(f"devices {order}: the split board differs from the single-device run")
        for k, shares in enumerate(splits):
            t = times[k]
            row = {"devices": order, "first_device": device_key(devices[0]), "shares": shares,
                   "median_ms": statistics.median(t) * 1e3, "min_ms": min(t) * 1e3, "max_ms": max(t) * 1e3,
                   "runs_ms": [v * 1e3 for v in t]}
            results.append(row)
            print(f"devices {order} shares {shares[0]:.3f}/{shares[1]:.3f}: median {row['median_ms']:.2f} ms "
                  f"({row['min_ms']:.2f}-{row['max_ms']:.2f})", flush=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "host": platform.node(),
              "size": [width, height], "steps": args.steps, "h": args.h, "rounds": args.rounds, "results": results}
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
