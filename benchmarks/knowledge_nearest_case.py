"""Zero-shot by nearest case, the baseline the knowledge model must beat (issue 17).

    python benchmarks/knowledge_nearest_case.py [--seed 0]

For each held-out case of three of knowledge_eval.py's schemes, the training cases on the same
device are ordered by distance (standardized program features, plus half the log2 ratio of the
grid sizes); the best measured configuration of the nearest lands on the held-out case's nearest
candidate (`nearest_candidate`, as J48's labels do) and scores its share of the oracle; "best of
3" scores the best of the three nearest cases' (distinct) picks. No model is trained.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from imagecl.bench.knowledge_cases import knowledge_folder, load, schemes
from imagecl.features import ProgramFeatures
from imagecl.tuner.knowledge.dataset import assemble
from imagecl.tuner.knowledge.models import nearest_candidate

ROOT = Path(__file__).resolve().parent.parent

SCHEMES = ("10-fold", "synthetic-train/real-test", "leave one program out")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="the 10-fold split's seed")
    args = parser.parse_args()
    knowledge = load([], knowledge_folder(ROOT), ROOT / "examples")
    data, _ = assemble(knowledge.records, knowledge.programs, knowledge.devices)
    program = data.case_features[:, :len(ProgramFeatures.names())]
    z = (program - program.mean(0)) / (program.std(0) + 1e-9)
    portable = data.portable()
    planned = schemes(data, knowledge.synthetic, args.seed)
    for name in SCHEMES:
        first, best_of_3 = [], []
        for _, train, test in planned[name]:
            for c in test:
                case, rows = data.cases[c], data.rows_of(c)
                times = np.exp(data.log_time[rows])
                same = [j for j in train if (data.cases[j].device, data.cases[j].compute_units)
                        == (case.device, case.compute_units) and not np.all(np.isnan(data.log_time[data.rows_of(j)]))]
                if np.all(np.isnan(times)) or not same:
                    continue
                points = np.prod(case.shape_xyz())
                distance = [np.linalg.norm(z[j] - z[c]) + 0.5 * abs(np.log2(np.prod(data.cases[j].shape_xyz()) / points))
                            for j in same]
                picks: list[int] = []
                for j in (same[i] for i in np.argsort(distance)):
                    theirs = data.rows_of(j)
                    wanted = portable[theirs[int(np.nanargmin(data.log_time[theirs]))]]
                    k = nearest_candidate(portable[rows], wanted, np.ones(len(rows), dtype=bool))
                    if k is not None and k not in picks:
                        picks.append(k)
                    if len(picks) == 3:
                        break
                shares = [np.nanmin(times) / times[k] if not np.isnan(times[k]) else 0.0 for k in picks]
                first.append(shares[0])
                best_of_3.append(max(shares))
        print(f"{name}: {len(first)} cases, nearest case's best {np.mean(first):.3f} of the oracle, "
              f"best of the 3 nearest {np.mean(best_of_3):.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
