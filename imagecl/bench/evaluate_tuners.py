"""The paper's evaluation, on our own exhaustive data (issue 5).

    python benchmarks/evaluate_tuners.py benchmarks/results/ground-*-gpu-large.kt.json.gz \
        --out benchmarks/results/gpu-large

For each recorded space (Kernel Tuner cache, T4 file or our database):
1. model accuracy: mean relative error of each model (bagged neural network, SVR, boosted trees,
   random forest, gradient boosting, a constant predictor) against the training-set size, on the
   configurations not used for training (the paper's Figure on model accuracy);
2. search: the slowdown of the best configuration found against the global best, averaged over
   repeats, for the ML tuner, random search, simulated annealing and PSO at the same budgets
   (fractions of the valid space), and the number of measurements used; with a Kernel Tuner
   cache file and kernel_tuner installed, also Kernel Tuner's own strategies ("kt:NAME"),
   replayed in its simulation mode at the same budgets (benchmarks/kt_replay.py).
Writes tuners.md (tables), tuners.json and PNG plots (matplotlib) under --out.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from imagecl.tuner.encoding import Encoder
from imagecl.tuner.models import make_model
from imagecl.tuner.simulate import load_problem, simulate

from .kt_replay import KT_STRATEGIES, simulate_kt

MODELS = ["bnn", "svr", "adaboost", "random_forest", "gradient_boosting", "constant"]
STRATEGIES = ["hybrid", "ml", "random", "annealing", "pso"]


def kernel_tuner_available() -> bool:
    try:
        import kernel_tuner  # noqa: F401
    except ImportError:
        return False
    return True


def model_errors(problem, sizes, repeats: int, seed: int) -> dict:
    """Mean relative error of predicted times on held-out valid configurations."""
    rows = problem.candidate_matrix()
    times = np.array([np.nan if problem.records.get(tuple(r)) is None else problem.records[tuple(r)]
                      for r in rows], dtype=float)
    valid = ~np.isnan(times)
    rows, times = rows[valid], times[valid]
    encoder = Encoder(problem.parameters)
    X = encoder.encode(rows)
    out: dict = {}
    for name in MODELS:
        out[name] = []
        for n in sizes:
            if n >= len(rows) - 10:
                break
            errors = []
            for r in range(repeats):
                rng = np.random.default_rng([seed, n, r])
                order = rng.permutation(len(rows))
                train, test = order[:n], order[n:]
                model = make_model(name, seed=r).fit(X[train], np.log(times[train]))
                mean, _ = model.predict(X[test])
                errors.append(float(np.mean(np.abs(np.exp(mean) - times[test]) / times[test])))
            out[name].append({"train": int(n), "mean_relative_error": float(np.mean(errors))})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--fractions", default="0.005,0.01,0.02", help="budgets as fractions of the valid space")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--model-sizes", default="25,50,100,200,400")
    parser.add_argument("--model-repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models-from", default=None, metavar="JSON",
                        help="take the model-accuracy results from an earlier tuners.json (same spaces) instead of "
                             "recomputing them")
    parser.add_argument("--strategies", default=",".join(STRATEGIES), help="our strategies to replay")
    parser.add_argument("--kt-strategies", default=",".join(KT_STRATEGIES),
                        help="Kernel Tuner strategies to replay on .kt.json(.gz) files ('' for none)")
    parser.add_argument("--update", default=None, metavar="JSON",
                        help="an earlier tuners.json of the same spaces: keep its results and models, replace only "
                             "the strategies run now (after a change to one strategy)")
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)
    if args.update:
        args.models_from = args.models_from or args.update
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fractions = [float(f) for f in args.fractions.split(",")]
    sizes = [int(s) for s in args.model_sizes.split(",") if s]
    ours = [s for s in args.strategies.split(",") if s]
    theirs = [s for s in args.kt_strategies.split(",") if s]
    if theirs and not kernel_tuner_available():
        print("kernel_tuner is not installed: its strategies are left out", file=sys.stderr)
        theirs = []
    report = {"date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv), "spaces": []}
    earlier = {e["space"]: e["models"] for e in json.loads(Path(args.models_from).read_text())["spaces"]} \
        if args.models_from else {}
    for file in args.files:
        problem = load_problem(file)
        matrix = problem.candidate_matrix()
        valid = problem.valid_count
        name = Path(file).name.split(".")[0]
        kt = theirs if str(file).endswith((".kt.json", ".kt.json.gz")) else []
        print(f"{name}: {len(matrix)} recorded, {valid} valid", file=sys.stderr, flush=True)
        entry = {"space": name, "file": str(file), "recorded": len(matrix), "valid": valid, "search": [],
                 "models": earlier[name] if name in earlier else model_errors(problem, sizes, args.model_repeats,
                                                                              args.seed)}
        for fraction in fractions:
            budget = max(5, round(fraction * valid))
            for strategy in ours + [f"kt:{s}" for s in kt]:
                t = time.time()
                if strategy.startswith("kt:"):
                    try:
                        rep = simulate_kt(file, strategy[3:], budget, args.repeats, args.seed, problem.optimum())
                    except Exception as e:  # a strategy of theirs that breaks on this space: say so, go on
                        print(f"  {strategy}: failed: {type(e).__name__}: {e}", file=sys.stderr)
                        rep = {"mean_slowdown": None, "max_slowdown": None, "mean_evaluations": None,
                               "found_optimum": None, "error": f"{type(e).__name__}: {e}"}
                else:
                    rep = simulate(lambda: load_problem(file), strategy, budget, args.repeats, args.seed)
                entry["search"].append({"strategy": strategy, "fraction": fraction, "budget": budget,
                                        "mean_slowdown": rep.get("mean_slowdown"),
                                        "max_slowdown": rep.get("max_slowdown"),
                                        "mean_evaluations": rep.get("mean_evaluations"),
                                        "found_optimum": rep.get("found_optimum"), "within_5pct": rep.get("within_5pct"),
                                        "seconds": time.time() - t, "repeats": args.repeats})
                print(f"  {strategy:22s} {fraction:6.2%} budget {budget}: slowdown {rep.get('mean_slowdown')}, "
                      f"{rep.get('mean_evaluations')} measurements", file=sys.stderr, flush=True)
        report["spaces"].append(entry)
    if args.update:
        report = _updated(json.loads(Path(args.update).read_text()), report)
    (out / "tuners.json").write_text(json.dumps(report, indent=1))
    (out / "tuners.md").write_text(markdown(report, fractions))
    plots(report, out)
    print(markdown(report, fractions))
    return 0


def _updated(earlier: dict, now: dict) -> dict:
    """`earlier` with the results of the strategies in `now` replaced by `now`'s (same spaces and
    budgets), in the earlier order of strategies."""
    fresh = {e["space"]: e for e in now["spaces"]}
    for entry in earlier["spaces"]:
        new = fresh.get(entry["space"])
        if new is None:
            continue
        replaced = {(r["strategy"], r["fraction"]): r for r in new["search"]}
        entry["search"] = [replaced.pop((r["strategy"], r["fraction"]), r) for r in entry["search"]]
        entry["search"] += list(replaced.values())
    earlier["updated"] = {"date": now["date"], "command": now["command"]}
    return earlier


def markdown(report: dict, fractions) -> str:
    lines = []
    for entry in report["spaces"]:
        names = list(dict.fromkeys(r["strategy"] for r in entry["search"]))
        budgets = {r["fraction"]: r["budget"] for r in entry["search"]}
        lines.append(f"**{entry['space']}** ({entry['valid']} valid of {entry['recorded']} recorded): mean slowdown "
                     "against the best over the repeats (worst run), mean measurements used; share of runs within "
                     "5% of the best, seconds per run")
        lines.append("")
        lines.append("| strategy | " + " | ".join(f"{f:.1%} ({budgets[f]})" for f in fractions) + " |")
        lines.append("| --- |" + " ---: |" * len(fractions))
        for s in names:
            cells = []
            for fraction in fractions:
                r = next(x for x in entry["search"] if x["strategy"] == s and x["fraction"] == fraction)
                if r["mean_slowdown"] is None:
                    cells.append("no result")
                    continue
                cell = (f"{(r['mean_slowdown'] - 1) * 100:.2f}% (max {(r['max_slowdown'] - 1) * 100:.1f}%), "
                        f"{r['mean_evaluations']:.1f}")
                if r.get("within_5pct") is not None and r.get("repeats"):  # results of older runs have neither
                    cell += f"; {100 * r['within_5pct']:.0f}%, {r['seconds'] / r['repeats']:.2f} s"
                cells.append(cell)
            lines.append(f"| {s} | " + " | ".join(cells) + " |")
        lines.append("")
        if entry["models"].get("bnn"):
            lines.append("| model | " + " | ".join(f"{m['train']} samples" for m in entry["models"]["bnn"]) + " |")
            lines.append("| --- |" + " ---: |" * len(entry["models"]["bnn"]))
            for name, points in entry["models"].items():
                lines.append(f"| {name} | " + " | ".join(f"{100 * p['mean_relative_error']:.1f}%" for p in points)
                             + " |")
            lines.append("")
    return "\n".join(lines) + "\n"


def plots(report: dict, out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots", file=sys.stderr)
        return
    for entry in report["spaces"]:
        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
        for name, points in entry["models"].items():
            a.plot([p["train"] for p in points], [100 * p["mean_relative_error"] for p in points], marker="o",
                   label=name)
        a.set_xscale("log")
        a.set_xlabel("training-set size")
        a.set_ylabel("mean relative error (%)")
        a.set_title(f"{entry['space']}: model accuracy")
        a.legend(fontsize=8)
        for s in dict.fromkeys(r["strategy"] for r in entry["search"]):
            rows = [r for r in entry["search"] if r["strategy"] == s and r["mean_slowdown"] is not None]
            b.plot([100 * r["fraction"] for r in rows], [100 * (r["mean_slowdown"] - 1) for r in rows], marker="o",
                   label=s, linestyle="--" if s.startswith("kt:") else "-")
        b.set_xlabel("budget (% of the valid space)")
        b.set_ylabel("mean slowdown vs the best (%)")
        b.set_title(f"{entry['space']}: search")
        b.set_yscale("symlog", linthresh=1.0)
        b.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        fig.savefig(out / f"tuners-{entry['space']}.png", dpi=90)
        plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
