"""Where each device's part of a split call spends its time, on the host's clock (issue 22).

    python3 benchmarks/split_timeline.py --devices 0,1 [--program convolution9] [--size 8192x8192]
        [--shares 0.5,0.5] [--repeats 7] [--out JSON]

Runs one program split across `--devices` `--repeats` times (after one untimed call), each
device with its tuned variant (`prog(...)`'s), and reports per device the medians of
`SplitRun.host_times` (when its host thread began, when its uploads, kernel and downloads were
enqueued, when they were done, from the call's start) beside its profiling-event kernel and
transfer seconds. On two identical GPUs with equal shares, a device whose enqueueing ends later
waited for the other's copies: the question behind the best splits leaning to GPU 0
(BENCHMARKS.md, "New output pages, and devices of one model as one"). Inputs as
benchmarks/multi_device.py makes them; the output is checked against a single-device run.
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
from imagecl.bench.split_cases import make_case
from imagecl.runtime import multidevice
from imagecl.runtime.devices import device_key, select_device

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", required=True, help="device indices, comma-separated")
    parser.add_argument("--program", default="convolution9", choices=("convolution9", "median"))
    parser.add_argument("--size", default="8192x8192", help="WxH")
    parser.add_argument("--shares", default=None, help="each device's share of the rows (default: equal)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    devices = [int(d) for d in args.devices.split(",")]
    width, height = (int(v) for v in args.size.lower().split("x"))
    shares = [float(s) for s in args.shares.split(",")] if args.shares else [1 / len(devices)] * len(devices)
    prog = imagecl.load(EXAMPLES / f"{args.program}.icl")
    case = make_case(args.program, (height, width), np.random.default_rng(0))
    expected = prog(**case, device=devices[0])
    first, _ = multidevice.run(prog, case, devices, shares)  # builds, first-touch costs: untimed
    for name, value in expected.items():  # each device runs its own variant: floats may round apart
        same = np.array_equal(first[name], value) if value.dtype.kind in "iub" else \
            np.allclose(first[name], value, rtol=1e-4, atol=1e-4)
        if not same:
            raise SystemExit(f"the split's '{name}' differs from a single-device run")
    runs = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        _, ran = multidevice.run(prog, case, devices, shares)
        runs.append((time.perf_counter() - start, ran))
    report = {"date": time.strftime("%Y-%m-%d %H:%M"), "command": " ".join(sys.argv), "host": platform.node(),
              "program": args.program, "size": args.size, "shares": shares, "bands": [list(b) for b in runs[0][1].bands],
              "call_ms": statistics.median(t for t, _ in runs) * 1e3, "devices": []}
    print(f"{args.program} {args.size}, shares {shares}: a call {report['call_ms']:.2f} ms (median of {args.repeats})")
    for i, index in enumerate(devices):
        times = np.array([ran.host_times[i] for _, ran in runs]) * 1e3
        entry = {"device": device_key(select_device(index)), "began_ms": float(np.median(times[:, 0])),
                 "enqueued_ms": float(np.median(times[:, 1])), "done_ms": float(np.median(times[:, 2])),
                 "kernel_ms": statistics.median(ran.kernel_seconds[i] for _, ran in runs) * 1e3,
                 "transfer_ms": statistics.median(ran.transfer_seconds[i] for _, ran in runs) * 1e3,
                 "done_ms_each": [float(t) for t in times[:, 2]]}
        report["devices"].append(entry)
        print(f"  [{index}] {entry['device']}: began {entry['began_ms']:.2f}, enqueued {entry['enqueued_ms']:.2f}, "
              f"done {entry['done_ms']:.2f} ms; kernel {entry['kernel_ms']:.2f}, transfers {entry['transfer_ms']:.2f} ms")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
