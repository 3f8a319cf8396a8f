"""The default tuner's first sample with and without the code-shape lead, replayed on recorded CPU spaces.

    python benchmarks/cpu_design_replay.py benchmarks/results/cpu-design/conv9-512.kt.json \
        benchmarks/results/cpu-design/sobel-512.kt.json --budgets 12,24,48 --runs 10 \
        --out benchmarks/results/cpu-design/replay.json

Each recorded space (benchmarks/cpu_design_record.py: a uniform sample of a CPU peer workload's
space) is searched by the default strategy `--runs` times per budget, once with the plain spread
sample (`code_shape=False`, what a search did before) and once led by the code shape
(`code_shape=True`, what a search on a CPU device now does: tuner/strategies/design.py). Run r
uses the same random stream in both (imagecl simulate's seeding), so the two differ only where the
design acts (run r of a variant is `imagecl simulate`'s run 0 with seed r). Prints per space and budget: the mean and median slowdown of the run's best against
the best recorded configuration, the runs within 10% of it, and the runs whose best is vector
code (`vector_x = 2`); writes every run to --out.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from imagecl.tuner.simulate import load_problem, simulate

VARIANTS = {"before (plain spread)": {"code_shape": False}, "after (code-shape lead)": {"code_shape": True}}


def _one(task: tuple) -> dict:
    """One run (seed r) of the strategy on a file at a budget, with the variant's options."""
    path, strategy, budget, options, run = task
    report = simulate(lambda: load_problem(path), strategy, budget, 1, run, options=options)
    return report["repeats"][0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--budgets", default="12,24,48")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--strategy", default="hybrid")
    parser.add_argument("--out", default=None)
    parser.add_argument("--jobs", type=int, default=1, help="runs replayed at once, in processes")
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
    if not budgets or min(budgets) < 1 or args.runs < 1:
        parser.error("--budgets are positive integers and --runs at least 1")
    keys = [(path, budget, label, run) for path in args.files for budget in budgets for label in VARIANTS
            for run in range(args.runs)]
    tasks = [(path, args.strategy, budget, VARIANTS[label], run) for path, budget, label, run in keys]
    with ProcessPoolExecutor(max(1, args.jobs)) as pool:
        done = dict(zip(keys, pool.map(_one, tasks)))
    results = []
    for path in args.files:
        problem = load_problem(path)
        optimum = problem.optimum()
        print(f"{Path(path).name}: {len(problem.candidate_matrix())} recorded configurations, best "
              f"{optimum * 1e3:.3f} ms")
        for budget in budgets:
            for label, options in VARIANTS.items():
                repeats = [done[(path, budget, label, run)] for run in range(args.runs)]
                slow = [r["slowdown"] for r in repeats if "slowdown" in r]
                vector = sum(1 for r in repeats if (r.get("best_config") or {}).get("vector_x") == 2)
                near = sum(1 for s in slow if s <= 1.10)
                row = {"file": str(path), "budget": budget, "variant": label, "options": options,
                       "mean_slowdown": statistics.fmean(slow), "median_slowdown": statistics.median(slow),
                       "within_10pct": near, "vector_best": vector, "runs": args.runs,
                       "repeats": repeats}
                results.append(row)
                print(f"  budget {budget:3d} {label:24s} slowdown mean {row['mean_slowdown']:.2f}x median "
                      f"{row['median_slowdown']:.2f}x; within 10% {near}/{args.runs}; best is vector code "
                      f"{vector}/{args.runs}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
