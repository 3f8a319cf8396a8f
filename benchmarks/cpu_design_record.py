"""Record a uniform sample of a CPU peer workload's space, for replaying the strategies offline.

    python benchmarks/cpu_design_record.py conv9 --size 512 --count 300 --device cpu \
        --out benchmarks/results/cpu-design-conv9-512.kt.json

Measures `--count` distinct valid configurations drawn uniformly from the workload's space (the
naive variant's outputs are the reference every one is checked against) on the peer harness's
inputs at SIZE x SIZE, and writes them as a Kernel Tuner cache (`imagecl simulate` and
benchmarks/cpu_design_replay.py replay it). A uniform sample keeps the proportions of the real
space: vector code (`vector_x = 2`) is about 8% of the valid configurations of convolution 9x9.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from imagecl.bench import use_repository

use_repository(Path(__file__).resolve().parent.parent)

import imagecl  # noqa: E402
from imagecl.bench.peer_workloads import all_workloads  # noqa: E402
from imagecl.tuner.engine import MeasureOptions, Measurer  # noqa: E402
from imagecl.tuner.formats import write_kernel_tuner_cache  # noqa: E402
from imagecl.tuner.problem import Parameter  # noqa: E402
from imagecl.tuner.store import Store  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", help="a peer workload: " + ",".join(w.key for w in all_workloads()))
    parser.add_argument("--size", type=int, default=512, help="image side (default 512)")
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", required=True, help="the Kernel Tuner cache to write (.kt.json)")
    args = parser.parse_args(argv)
    by_key = {w.key: w for w in all_workloads()}
    if args.workload not in by_key:
        parser.error(f"unknown workload {args.workload!r}; known: {', '.join(by_key)}")
    if args.size < 16 or args.count < 1:
        parser.error("--size must be >= 16 and --count >= 1")
    out = Path(args.out)
    workload = by_key[args.workload]
    program = imagecl.compile(workload.source, f"<{workload.key}>")
    shape = (args.size,) * len(workload.full)
    arguments = workload.make(shape, np.random.default_rng(2017))
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="imagecl-record-") as folder, \
            Store(Path(folder) / "record.db") as store, \
            Measurer(program, arguments, store, args.device, MeasureOptions(timeout=30.0)) as measurer:
        space = measurer.space
        configs = space.random(args.count, seed=args.seed)

        def progress(done: int, todo: int, summary) -> None:
            if done % 25 == 0 or done == todo:
                print(f"  {done}/{todo} measured, {time.time() - started:.0f} s", file=sys.stderr, flush=True)

        summary = measurer.measure(configs, progress)
        records = list(measurer.stored().values())
        parameters = [Parameter(p.name, list(p.values)) for p in space.parameters]
        measurements = [{"config": space.complete(r.config), "time_seconds": r.time, "status": r.status,
                         "error": r.error, "times_seconds": list(r.times)} for r in records]
        write_kernel_tuner_cache(out, parameters, measurements, device_name=measurer.device.name.strip(),
                                 kernel_name=workload.key, problem_size=f"{args.size}x{args.size}")
    print(f"{workload.key} {args.size}x{args.size}: {summary.describe()}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
