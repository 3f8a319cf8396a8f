"""The tuner's own time: seconds per replayed run of the default strategy, and where it ends.

    python benchmarks/tuner_speed.py FILE:BUDGET [FILE:BUDGET ...] [--repeats 5] [--out JSON]

Each FILE (Kernel Tuner cache or T4 file) is replayed `--repeats` times at BUDGET evaluations,
the runs' random streams fixed (seed 0), after one untimed run that pays for the imports and
first calls. Nothing is measured on a device, so the seconds are the strategy's own: model fits,
predictions and the neighbourhoods it walks. To compare two versions of the package, run the
script with each one first on PYTHONPATH (`git archive REV imagecl grammar templates tuner`
unpacked in a folder) on a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", metavar="FILE:BUDGET")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    import imagecl
    from imagecl.tuner.simulate import load_problem, simulate

    cases = []
    for case in args.cases:
        file, _, budget = case.rpartition(":")
        if not file or not budget.isdigit() or int(budget) < 1:
            parser.error(f"{case!r}: expected FILE:BUDGET with a positive number of evaluations")
        if not Path(file).is_file():
            parser.error(f"{file}: no such file")
        cases.append((file, int(budget)))
    simulate(lambda: load_problem(cases[0][0]), "hybrid", 20, 1, 99)  # imports and first calls, untimed
    report = {"date": time.strftime("%Y-%m-%d %H:%M"), "command": " ".join(sys.argv), "package": imagecl.__file__,
              "machine": platform.processor() or platform.machine(), "cases": []}
    for file, budget in cases:
        start = time.perf_counter()
        result = simulate(lambda: load_problem(file), "hybrid", budget, args.repeats, 0)
        seconds = (time.perf_counter() - start) / args.repeats
        report["cases"].append({"file": file, "budget": budget, "repeats": args.repeats, "seconds_per_run": seconds,
                                "mean_slowdown": result["mean_slowdown"], "within_5pct": result.get("within_5pct"),
                                "slowdowns": [r.get("slowdown") for r in result["repeats"]]})
        print(f"{Path(file).name}: {budget} evaluations, {seconds:.2f} s a run, mean slowdown "
              f"{result['mean_slowdown']:.4f}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
