"""What starting from other programs' best configurations is worth (transfer seeds), replayed.

    python benchmarks/transfer_seeds.py benchmarks/results/ground-*-gpu-large.kt.json.gz \
        --out benchmarks/results/transfer-gpu-large

Leave one out: each recorded space (all recorded on one device) is searched with and without
the `seeds` option, the seeds being the `--per-file` fastest mutually distinct configurations
of each of the other files, as `imagecl tune` takes them from a shared database and
`imagecl simulate --seeds-from` from files. Budgets are fractions of the space's successful
configurations; the same random streams are used with and without seeds. Writes transfer.json
and transfer.md (a table of mean and worst slowdowns against the recorded optimum) under --out.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from imagecl.tuner.simulate import load_problem, seed_for, seeds_from_files, simulate  # noqa: E402


def _name(path: str) -> str:
    return Path(path).name.split(".")[0]


def leave_one_out_seeds(problem, target: str, files: list[str], per_file: int = 3) -> list[dict]:
    """The seeds of `target` (loaded as `problem`): the `per_file` best of every other file, as
    `problem`'s values."""
    return [seed_for(problem, s) for s in seeds_from_files([f for f in files if f != target], per_file)]


def evaluate(files: list[str], fractions: list[float], repeats: int, per_file: int, strategy: str,
             seed: int) -> list[dict]:
    rows = []
    for target in files:
        problem = load_problem(target)
        others = [f for f in files if f != target]
        seeds = leave_one_out_seeds(problem, target, files, per_file)
        for fraction in fractions:
            budget = max(2, round(fraction * problem.valid_count))
            row = {"space": _name(target), "valid": problem.valid_count, "fraction": fraction, "budget": budget,
                   "seeds_from": [_name(f) for f in others], "seeds": len(seeds)}
            for label, options in (("plain", {}), ("seeded", {"seeds": seeds})):
                started = time.time()
                report = simulate(problem, strategy, budget, repeats, seed, options)  # loaded once: read-only
                row[label] = {k: report[k] for k in ("mean_slowdown", "max_slowdown", "found_optimum",
                                                     "mean_evaluations")}
                row[label]["slowdowns"] = [r.get("slowdown") for r in report["repeats"]]
                row[label]["seconds"] = round(time.time() - started, 1)
                if label == "seeded":
                    row[label]["mean_seeded"] = report.get("mean_seeded")
            rows.append(row)
            print(f"{row['space']} at {fraction:.1%} ({budget}): {strategy} {row['plain']['mean_slowdown']:.3f}"
                  f" -> seeded {row['seeded']['mean_slowdown']:.3f}", file=sys.stderr)
    return rows


def markdown(rows: list[dict], strategy: str, repeats: int, per_file: int) -> str:
    lines = [f"Replayed `{strategy}`, {repeats} runs per cell, with and without the {per_file} fastest mutually "
             "distinct configurations (>= 2 parameters apart) of each other recorded space as seeds. "
             "Slowdown of the best configuration found against the recorded optimum: mean (worst).", "",
             "| space | budget | seeds | without seeds | with seeds |", "|---|---|---|---|---|"]
    for r in rows:
        cell = lambda d: f"{d['mean_slowdown']:.3f} ({d['max_slowdown']:.3f})"  # noqa: E731
        lines.append(f"| {r['space']} | {r['budget']} ({r['fraction']:.1%}) | {r['seeds']} from "
                     f"{', '.join(r['seeds_from'])} | {cell(r['plain'])} | {cell(r['seeded'])} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="recorded spaces of one device (at least two)")
    parser.add_argument("--fractions", default="0.01", help="budgets as fractions of the successful configurations")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--per-file", type=int, default=3)
    parser.add_argument("--strategy", default="hybrid")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="benchmarks/results/transfer")
    args = parser.parse_args(argv)
    if len(args.files) < 2:
        parser.error("give at least two recorded spaces: each is seeded from the others")
    fractions = [float(f) for f in args.fractions.split(",")]
    rows = evaluate(args.files, fractions, args.repeats, args.per_file, args.strategy, args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "transfer.json").write_text(json.dumps({"strategy": args.strategy, "repeats": args.repeats,
                                                   "per_file": args.per_file, "seed": args.seed,
                                                   "files": args.files, "rows": rows}, indent=1))
    (out / "transfer.md").write_text(markdown(rows, args.strategy, args.repeats, args.per_file))
    print(f"wrote {out / 'transfer.json'} and {out / 'transfer.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
