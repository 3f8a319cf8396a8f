"""Where the CPUs' measured oracles launch, in absolute counts and in the device's own units.

    python benchmarks/knowledge_cpu_oracles.py [--folder benchmarks/results/knowledge]

For every case (program, size) measured on two CPUs of the knowledge folder, the best measured
configuration's log2 work-group count and `tuner.knowledge.dataset.launch_features`, compared
between the CPUs: a device-relative encoding can carry one CPU's optimum to the other only where
these agree.
"""
from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", default=str(ROOT / "benchmarks" / "results" / "knowledge"))
    args = parser.parse_args()

    from imagecl.features import CONFIG_FIELDS
    from imagecl.tuner.knowledge.dataset import LAUNCH_FIELDS, assemble, launch_features
    from imagecl.tuner.knowledge.sources import load_source

    knowledge = load_source(args.folder)
    data, _ = assemble(knowledge.records, knowledge.programs, knowledge.devices)
    cpus = sorted(name for name, d in knowledge.devices.items() if d.type == "CPU")
    groups = list(CONFIG_FIELDS).index("work_groups")
    best: dict[tuple[str, str, str], np.ndarray] = {}
    for c, case in enumerate(data.cases):
        rows = data.rows_of(c)
        rows = rows[data.ok[rows]]
        if case.device not in cpus or not len(rows):
            continue
        r = rows[np.argmin(data.log_time[rows])]
        units = launch_features(data.case_features[[c]], data.config_features[[r]])[0]
        best[(case.program_hash, case.size, case.device)] = np.concatenate(
            [[np.log2(max(data.config_features[r, groups], 1.0))], units])
    names = ["log2 work-groups (absolute)", *LAUNCH_FIELDS]
    for a, b in itertools.combinations(cpus, 2):
        pairs = [(p, s) for (p, s, d) in best if d == a and (p, s, b) in best]
        print(f"\n{a} (A) and {b} (B): {len(pairs)} cases measured on both, sizes "
              f"{', '.join(sorted({s for _, s in pairs}))}")
        if not pairs:
            continue
        print("| quantity of the oracle | A median | B median | median B - A | mean abs(B - A) |\n|---|---:|---:|---:|---:|")
        for i, name in enumerate(names):
            va = np.array([best[(p, s, a)][i] for p, s in pairs])
            vb = np.array([best[(p, s, b)][i] for p, s in pairs])
            print(f"| {name} | {np.median(va):.2f} | {np.median(vb):.2f} | {np.median(vb - va):.2f} "
                  f"| {np.mean(np.abs(vb - va)):.2f} |")
    for d in cpus:
        per_unit = np.array([v[1] for (p, s, dd), v in best.items() if dd == d])
        print(f"\n{d}: {len(per_unit)} cases, the oracles' log2 work-groups per compute unit, quartiles "
              f"{', '.join(f'{q:.1f}' for q in np.percentile(per_unit, [25, 50, 75]))}")


if __name__ == "__main__":
    main()
