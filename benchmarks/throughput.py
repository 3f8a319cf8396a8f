"""Measurement throughput on the paper's convolution space (Table 1 of Falch & Elster 2017).

    python benchmarks/throughput.py --device nvidia --deadline 540 --out results/

The space: work-group size 1..128 in x and y, 1..128 output pixels per work-item in x and y,
image memory, local memory, interleaved layout, unrolling (none or full, both loops) and, in
place of the paper's host-side padding, constant memory for the filter: 8^4 * 2^5 = 131,072
configurations of examples/convolution9.icl on a 4096x4096 float image with a 9x9 filter.
Configurations that break the device's static limits are recorded as invalid without a launch.
Prints configurations per second and where the time went (parallel builds, launches).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

import imagecl  # noqa: E402
from imagecl.bench.paper_space import paper_space  # noqa: E402
from imagecl.runtime.devices import describe, select_device  # noqa: E402
from imagecl.tuner.engine import MeasureOptions, measure  # noqa: E402
from imagecl.tuner.store import Store  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--deadline", type=float, default=540.0, help="seconds of measuring before stopping")
    parser.add_argument("--timeout", type=float, default=10.0, help="watchdog seconds per configuration")
    parser.add_argument("--limit", type=int, default=0, help="measure only the first N configurations")
    parser.add_argument("--db", default=None)
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)

    device = select_device(args.device)
    info = describe(device)
    prog = imagecl.load(ROOT / "examples" / "convolution9.icl")
    rng = np.random.default_rng(0)
    inputs = {"input": rng.random((args.size, args.size), dtype=np.float32),
              "filter": np.full((9, 9), 1 / 81, np.float32)}
    configs = paper_space(prog)
    assert len(configs) == 131072
    rng.shuffle(configs)  # a uniform picture of the space if the deadline stops the run
    if args.limit:
        configs = configs[: args.limit]
    db = args.db or tempfile.mktemp(suffix=".db")
    start = time.time()
    with Store(db) as store:
        summary = measure(prog, inputs, configs, store, device=device,
                          options=MeasureOptions(timeout=args.timeout, deadline=args.deadline))
    wall = time.time() - start
    valid = summary.total - summary.statuses.get("invalid_config", 0)
    result = {"date": time.strftime("%Y-%m-%d"), "device": info.__dict__, "configs": len(configs),
              "statically_invalid": summary.statuses.get("invalid_config", 0), "valid": valid,
              "measured": summary.measured, "statuses": dict(summary.statuses), "sources": summary.sources,
              "build_seconds": summary.build_seconds, "wall_seconds": wall,
              "measure_seconds": wall - summary.build_seconds,
              "configs_per_second": summary.measured / max(wall, 1e-9),
              "stopped_early": summary.stopped_early,
              "best_ms": summary.best_time * 1e3 if summary.best_time else None, "best_config": summary.best_config,
              "command": " ".join(sys.argv)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "throughput.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    print(summary.describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
