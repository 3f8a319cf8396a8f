"""Paired replays of one strategy with and without an option, over several sets of random streams.

    python benchmarks/replay_options.py benchmarks/results/ground-convolution9-gpu-large.kt.json.gz \
        --fraction 0.01 --seed-sets 0,1,2,3 --option pick=mean --option pick=thompson

Each recorded space (Kernel Tuner cache or T4 file) is searched by `--strategy` (default: the
default tuner) with a budget of `--fraction` of its valid configurations, `--runs` times per seed
set, once per `--option` variant (`NAME=VALUE[,NAME=VALUE]`; `none` for the defaults). Run r of
seed set s uses the random stream `simulate(..., seed=1000 * s + r)` in every variant, so the
variants start from the same first sample and differ only where the option acts. Why several
seed sets: on the H200 convolution space at 1%, the mean of 10 runs moves between 0.5% and 22%
from one set of streams to the next, because a run that stays in the scalar family is 100% off.

`--transfer` adds, for each space, the 3 fastest mutually distinct configurations of each of the
other files given as `seeds` (leave-one-out, as `transfer_seeds.py`; give one device's spaces).

Prints per space and variant the mean slowdown per seed set, the overall mean and the runs 50%
or more off the best; writes the runs to `--out` as JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


from imagecl.tuner.simulate import _option, load_problem, simulate  # noqa: E402
from transfer_seeds import leave_one_out_seeds  # noqa: E402


def _variant(text: str) -> dict:
    """'pick=mean,local_share=0.6' -> {'pick': 'mean', 'local_share': 0.6}; 'none' -> {}."""
    if text == "none":
        return {}
    return dict(_option(part) for part in text.split(","))


def _one(task: tuple) -> float:
    path, strategy, budget, seed, options = task
    report = simulate(lambda: load_problem(path), strategy, budget, 1, seed, options=options)
    return float(report["mean_slowdown"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--strategy", default="hybrid")
    parser.add_argument("--fraction", type=float, default=0.01)
    parser.add_argument("--seed-sets", default="0", help="comma-separated seed sets")
    parser.add_argument("--runs", type=int, default=10, help="runs per seed set")
    parser.add_argument("--option", action="append", default=None, metavar="NAME=VALUE[,...]",
                        help="a variant of the strategy's options (repeatable; 'none': its defaults)")
    parser.add_argument("--transfer", action="store_true", help="seeds from the other files (leave-one-out)")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--out", default=None, metavar="JSON")
    args = parser.parse_args(argv)
    variants = [_variant(v) for v in (args.option or ["none"])]
    seed_sets = [int(s) for s in args.seed_sets.split(",")]
    report = {"command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d"), "spaces": []}
    cases = []  # (path, budget, options): every run of every case goes to the pool at once
    for path in args.files:
        problem = load_problem(path)
        budget = max(5, round(args.fraction * problem.valid_count))
        extra = {"seeds": leave_one_out_seeds(problem, path, args.files)} if args.transfer else {}
        cases += [(path, budget, options, {**options, **extra}) for options in variants]
    with ProcessPoolExecutor(args.processes) as pool:
        pending = [{s: [pool.submit(_one, (path, args.strategy, budget, 1000 * s + r, run_options))
                        for r in range(args.runs)] for s in seed_sets}
                   for path, budget, _, run_options in cases]
        for (path, budget, options, _), futures in zip(cases, pending):
            runs = {s: [100 * (f.result() - 1) for f in fs] for s, fs in futures.items()}
            every = [x for v in runs.values() for x in v]
            report["spaces"].append({"file": path, "budget": budget, "options": options, "runs": runs,
                                     "mean": float(np.mean(every))})
            per_set = " ".join(f"{np.mean(v):5.1f}%" for v in runs.values())
            far = sum(x >= 50 for x in every)
            print(f"{Path(path).name:40s} {json.dumps(options):24s} budget {budget:4d}: per seed set {per_set}; "
                  f"mean {np.mean(every):5.2f}%, {far} of {len(every)} runs 50% or more off", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
