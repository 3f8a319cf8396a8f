"""Markdown tables of `knowledge_eval.py` results: per scheme and method, and per device.

    python benchmarks/knowledge_table.py benchmarks/results/knowledge/eval-2026-11-24d-*.json

Per scheme and method: cases, splits finished, share of the oracle (mean, median, worst), the
share of cases under half their oracle (the tail), speed-up over the default and over the best
single configuration (geometric means), illegal picks, and the best of the top 10 (few-shot).
Per scheme, method and device of the held-out cases: their share of the oracle, tail, illegal
picks and best of the top 10.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

TAIL = 0.5


def _stats(cases: list[dict]) -> dict:
    shares = np.array([c["share"] for c in cases if not _nan(c["share"])])

    def geomean(key: str) -> float:
        v = np.array([c[key] for c in cases if not _nan(c[key]) and c[key] > 0])
        return float(np.exp(np.log(v).mean())) if len(v) else math.nan

    few = [c["share_few_shot"] for c in cases if not _nan(c.get("share_few_shot"))]
    return {"cases": len(cases), "mean": float(shares.mean()) if len(shares) else math.nan,
            "median": float(np.median(shares)) if len(shares) else math.nan,
            "worst": float(shares.min()) if len(shares) else math.nan,
            "tail": float(np.mean(shares < TAIL)) if len(shares) else math.nan,
            "x_default": geomean("speedup_default"), "x_single": geomean("speedup_single"),
            "illegal": float(np.mean([bool(c["illegal"]) for c in cases])) if cases else math.nan,
            "top10": float(np.mean(few)) if few else math.nan}


def _nan(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _f(v: float, digits: int = 3) -> str:
    return "-" if _nan(v) else f"{v:.{digits}f}"


def tables(reports: list[dict]) -> str:
    head = ("| scheme | splits | method | cases | share of oracle: mean / median / worst | under 0.5 | x default "
            "| x best single | illegal | best of top 10 |\n|---|---|---|---:|---|---:|---:|---:|---:|---:|")
    rows, per_device = [head], ["| scheme | device | method | cases | share of oracle: mean / worst "
                                "| under 0.5 | illegal | best of top 10 |\n|---|---|---|---:|---|---:|---:|---:|"]
    for report in reports:
        for scheme, body in report["schemes"].items():
            splits = f"{len(body['splits'])}/{len(body['all_splits'])}"
            for method, result in body.items():
                if not isinstance(result, dict) or "cases" not in result:
                    continue
                s = _stats(result["cases"])
                rows.append(f"| {scheme} | {splits} | {method} | {s['cases']} | {_f(s['mean'])} / {_f(s['median'])} / "
                            f"{_f(s['worst'], 2)} | {_f(s['tail'])} | {_f(s['x_default'], 2)} | {_f(s['x_single'], 2)} "
                            f"| {_f(s['illegal'])} | {_f(s['top10'])} |")
                for device in sorted({c["device"] for c in result["cases"]}):
                    d = _stats([c for c in result["cases"] if c["device"] == device])
                    per_device.append(f"| {scheme} | {device} | {method} | {d['cases']} | {_f(d['mean'])} / "
                                      f"{_f(d['worst'], 2)} | {_f(d['tail'])} | {_f(d['illegal'])} | "
                                      f"{_f(d['top10'])} |")
    return "\n".join(rows) + ("\n\n" + "\n".join(per_device) if len(per_device) > 1 else "") + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", help="knowledge_eval.py --out files")
    args = parser.parse_args()
    print(tables([json.loads(Path(p).read_text()) for p in args.reports]), end="")


if __name__ == "__main__":
    main()
