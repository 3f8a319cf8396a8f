"""How many timed launches each stored time rests on (issue 21), and what the measurement costs.

    python benchmarks/launch_counts.py [--device cpu|nvidia] [--configs 60] [--size 256] [--seed 11]

Measures `--configs` random configurations of examples/sobel.icl on a `--size` square image into
a fresh store and build cache (as `imagecl measure` does), then prints the engine's summary, how
many stored successful times come from a single launch, the fewest and mean launches per
stored time, and the median spread. Run it with the code before and after a change to the
timing loop to compare the two.
"""
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np

import imagecl
from imagecl.runtime.devices import select_device
from imagecl.tuner.engine import MeasureOptions, measure
from imagecl.tuner.store import Store

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--configs", type=int, default=60)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    image = np.random.default_rng(0).random((args.size, args.size), dtype=np.float32)
    configs = prog.space_for(problem_shape=image.shape).random(args.configs, seed=args.seed)
    with tempfile.TemporaryDirectory() as folder:
        os.environ["IMAGECL_CACHE"] = str(Path(folder) / "cache")  # cold: no build cache
        with Store(Path(folder) / "r.db") as store:
            summary = measure(prog, {"input": image}, configs, store, device=select_device(args.device),
                              options=MeasureOptions(build_workers=1))
            records = [r for r in store.records() if r.status == "ok"]
    print(summary.describe())
    if not records:
        print("no successful measurement")
        return
    counts = [len(r.times) for r in records]
    print(f"successful: {len(records)}; from a single launch: {sum(n == 1 for n in counts)}; launches per time: "
          f"fewest {min(counts)}, mean {np.mean(counts):.2f}; median spread {np.median([r.spread for r in records]):.3f}")


if __name__ == "__main__":
    main()
