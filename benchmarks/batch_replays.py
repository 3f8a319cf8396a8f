"""Batches of proposals on recorded spaces: the default strategy at batch 1/2/4/8 with each lie
(Session.measure: "believer", the model's prediction; "constant", the slowest time so far),
paired by seed against batch 1 at the same number of measurements.

    PYTHONPATH=$PWD python3 benchmarks/batch_replays.py --jobs 16 --out $OUT/batch-replays.json

Each run is one replay (`simulate` with repeats=1 and seed r, so run r of every cell starts from
the same first sample). Runs go in the order (seed, budget, cell), so a run stopped early
(`--minutes`) still holds every cell at about the same number of seeds; finished runs are
appended to OUT.jsonl as they come, and `--resume` skips those already there. The report: per
cell the median/mean/worst slowdown (best found / recorded optimum) and, against batch 1 with the
same seed, the median ratio, the wins/ties/losses and a Wilcoxon signed-rank p-value.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

SPACES = ("sobel-gpu-large", "convolution9-gpu", "convolution9-cpu-large", "bilateral-cpu")
CELLS = (("1", 1, "believer"), ("2b", 2, "believer"), ("4b", 4, "believer"), ("8b", 8, "believer"),
         ("4c", 4, "constant"), ("2c", 2, "constant"), ("8c", 8, "constant"))


def _cache(space: str) -> Path:
    return Path(__file__).resolve().parent / "results" / f"ground-{space}.kt.json.gz"


@lru_cache(maxsize=None)
def _problem(space: str):
    from imagecl.tuner.simulate import load_problem

    return load_problem(_cache(space))


def one_run(space: str, budget: int, batch: int, lie: str, seed: int) -> dict[str, Any]:
    """One replay of the default strategy; its slowdown against the recorded optimum."""
    from imagecl.tuner.simulate import simulate

    started = time.perf_counter()
    report = simulate(lambda: _fresh(space), max_evals=budget, repeats=1, seed=seed, batch=batch,
                      options={"lie": lie})
    run = report["repeats"][0]
    return {"space": space, "budget": budget, "batch": batch, "lie": lie, "seed": seed,
            "slowdown": run.get("slowdown"), "evaluations": run["evaluations"],
            "seconds": time.perf_counter() - started}


def _slowdown(run: dict[str, Any]) -> str:
    return f"{run['slowdown']:.3f}" if run["slowdown"] is not None else "found nothing"


def _fresh(space: str):
    from imagecl.tuner.problem import ReplayProblem

    base = _problem(space)
    return ReplayProblem(base.parameters, base.records)


def _key(r: dict[str, Any]) -> tuple:
    return (r["space"], r["budget"], r["batch"], r["lie"] if r["batch"] > 1 else "believer", r["seed"])


ALL = "all spaces"  # the pooled rows: every (space, seed) a pair


def summarise(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (space, budget, batch, lie), and per (budget, batch, lie) over all spaces: slowdown
    statistics and the paired comparison with batch 1 (same space and seed)."""
    from scipy.stats import wilcoxon

    by: dict[tuple, dict[Any, Optional[float]]] = {}  # None: the run found no configuration
    for r in runs:
        space, budget, batch, lie, seed = _key(r)
        by.setdefault((space, budget, batch, lie), {})[seed] = r["slowdown"]
        by.setdefault((ALL, budget, batch, lie), {})[(space, seed)] = r["slowdown"]
    rows = []
    for (space, budget, batch, lie), seeds in sorted(by.items(), key=lambda kv: (kv[0][0] == ALL, kv[0])):
        values = [seeds[s] for s in sorted(seeds) if seeds[s] is not None]
        row: dict[str, Any] = {"space": space, "budget": budget, "batch": batch, "lie": lie if batch > 1 else "-",
                               "runs": len(seeds), "no_result": len(seeds) - len(values)}
        if not values:
            rows.append(row)
            continue
        row.update({"median": statistics.median(values),
                               "mean": statistics.fmean(values), "worst": max(values),
                               "found_optimum": sum(v <= 1.0 + 1e-9 for v in values) / len(values)})
        if batch > 1:
            row.update(_paired(seeds, by.get((space, budget, 1, "believer"), {}), wilcoxon))
        if batch > 1 and lie == "believer":  # the two lies, same batch and seeds
            row["vs_constant"] = _paired(seeds, by.get((space, budget, batch, "constant"), {}), wilcoxon)
        rows.append(row)
    return rows


def _paired(these: dict, those: dict, wilcoxon) -> dict[str, Any]:
    """These slowdowns against those of the same seeds: ratio, better/same/worse, Wilcoxon p."""
    common = sorted(set(these) & set(those))
    paired = [s for s in common if these[s] is not None and those[s] is not None]
    # a run that found nothing loses to one that found something (and ties with another)
    lost = sum(these[s] is None and those[s] is not None for s in common)
    won = sum(these[s] is not None and those[s] is None for s in common)
    if not paired:
        return {}
    ratios = [these[s] / those[s] for s in paired]
    diffs = [these[s] - those[s] for s in paired]
    nonzero = [d for d in diffs if abs(d) > 1e-12]
    return {"paired": len(common), "median_ratio": statistics.median(ratios), "mean_ratio": statistics.fmean(ratios),
            "better": sum(d < -1e-12 for d in diffs) + won, "same": len(common) - len(nonzero) - won - lost,
            "worse": sum(d > 1e-12 for d in diffs) + lost,
            "wilcoxon_p": float(wilcoxon(nonzero).pvalue) if len(nonzero) >= 6 else None}


def _cell(p: dict[str, Any]) -> str:
    if not p:
        return "-"
    value = f"{p['wilcoxon_p']:.2f}" if p["wilcoxon_p"] is not None else "n/a"
    return f"{p['median_ratio']:.3f} / {p['mean_ratio']:.3f}, {p['better']}/{p['same']}/{p['worse']}, p={value}"


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| space | measurements | batch | lie | runs | median / mean / worst slowdown | found optimum "
             "| vs batch 1 | believer vs constant |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "median" not in r:
            lines.append(f"| {r['space']} | {r['budget']} | {r['batch']} | {r['lie']} | {r['runs']} | "
                         "no run found a configuration | - | - | - |")
            continue
        missing = f" ({r['no_result']} found nothing)" if r.get("no_result") else ""
        lines.append(f"| {r['space']} | {r['budget']} | {r['batch']} | {r['lie']} | {r['runs']}{missing} | "
                     f"{r['median']:.3f} / {r['mean']:.3f} / {r['worst']:.3f} | {r['found_optimum']:.2f} | "
                     f"{_cell(r) if 'paired' in r else '-'} | {_cell(r.get('vs_constant', {}))} |")
    return ("Paired columns, same space and seed: median / mean ratio of slowdowns, runs better/same/worse, "
            "Wilcoxon signed-rank p (n/a under 6 differing pairs).\n\n" + "\n".join(lines) + "\n")


def _init_worker() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the report (JSON); finished runs go to OUT.jsonl as they come")
    p.add_argument("--spaces", nargs="+", default=list(SPACES), help="recorded spaces (benchmarks/results/ground-NAME)")
    p.add_argument("--budgets", nargs="+", type=int, default=[30, 60])
    p.add_argument("--cells", nargs="+", default=[c[0] for c in CELLS],
                   help="batch and lie: 1, 2b, 4b, 8b (believer), 2c, 4c, 8c (constant)")
    p.add_argument("--seeds", type=int, default=20, help="runs per cell (seeds 0..N-1)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--minutes", type=float, default=None, help="submit no new run after this long")
    p.add_argument("--resume", action="store_true", help="skip the runs OUT.jsonl holds already")
    p.add_argument("--report-only", action="store_true", help="run nothing: the report of the runs OUT.jsonl holds")
    args = p.parse_args(argv)
    cells = {c[0]: c for c in CELLS}
    unknown = [c for c in args.cells if c not in cells]
    if unknown:
        p.error(f"unknown cell(s) {', '.join(unknown)}; known: {', '.join(cells)}")
    for space in args.spaces:
        if not _cache(space).exists():
            p.error(f"no recorded space {_cache(space)}")
    out = Path(args.out)
    log = out.with_suffix(".jsonl")
    done: list[dict[str, Any]] = []
    if (args.resume or args.report_only) and log.exists():
        done = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    have = {_key(r) for r in done}
    todo = [(space, budget, cells[c][1], cells[c][2], seed)
            for seed in range(args.seeds) for budget in args.budgets for c in args.cells for space in args.spaces]
    todo = [t for t in todo if _key(dict(zip(("space", "budget", "batch", "lie", "seed"), t))) not in have]
    if args.report_only:
        todo = []
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.time()
    runs = list(done)
    with ProcessPoolExecutor(args.jobs, initializer=_init_worker) as pool, log.open("a") as sink:
        queue = iter(todo)
        running = set()
        while True:
            while len(running) < args.jobs and (args.minutes is None or time.time() - started < 60 * args.minutes):
                task = next(queue, None)
                if task is None:
                    break
                running.add(pool.submit(one_run, *task))
            if not running:
                break
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for f in finished:
                r = f.result()
                runs.append(r)
                sink.write(json.dumps(r) + "\n")
                sink.flush()
                print(f"{len(runs)}/{len(todo) + len(done)} {r['space']} {r['budget']} b{r['batch']} {r['lie']} "
                      f"seed {r['seed']}: {_slowdown(r)} ({r['seconds']:.1f} s)", file=sys.stderr)
    rows = summarise(runs)
    report = {"command": " ".join(["python3", "benchmarks/batch_replays.py", *(argv or sys.argv[1:])]),
              "strategy": "hybrid", "cells": rows, "runs": runs}
    out.write_text(json.dumps(report, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(rows))
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
