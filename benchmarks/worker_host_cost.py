"""The measurement worker's host cost per configuration, in one process (issue 21).

    python3 benchmarks/worker_host_cost.py --device nvidia --size 4096x4096 --sources 80 --best 0.000371

Takes `--sources` random sources of the paper's convolution space (examples/convolution9.icl,
imagecl.bench.paper_space) with all their configurations, builds them once, then measures every
configuration with the worker's own `_measure_one` four times: with and without the next
configuration prepared during the checked launch (`meanwhile`), each without censoring and with
censoring against `--best` seconds (the exhaustive run's best). Host cost = wall time minus the
stored launches' own time (timed launches plus the median standing for the checked one; the
probes and comparisons are host cost here), per configuration.
"""
from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

import numpy as np

import imagecl
from imagecl.bench.paper_space import paper_space
from imagecl.cli import parse_size
from imagecl.runtime.devices import describe, select_device
from imagecl.runtime.synthetic import synthetic_arguments
from imagecl.tuner.censor import CensorRule, default_probe
from imagecl.tuner.target import ProgramTarget, make_runner
from imagecl.tuner.validate import plan_measurements
from imagecl.tuner.worker import _ahead, _measure_one

ROOT = Path(__file__).resolve().parent.parent


def measure_all(groups, runner, device, best: float, censor: CensorRule, ahead: bool) -> dict:
    stats: Counter = Counter()
    for group in groups:
        for i, config in enumerate(group):
            after = group[i + 1] if ahead and i + 1 < len(group) else None
            start = time.perf_counter()
            result = _measure_one(config, runner, device, None, 3, 10, 0.1, {}, best, censor=censor,
                                  meanwhile=_ahead(runner, after))
            stats["wall"] += time.perf_counter() - start
            stats["kernel"] += sum(result.get("times") or []) + (result.get("time") or 0.0)
            stats[result["status"]] += 1
            stats["configs"] += 1
    stats["host_ms_per_config"] = (stats["wall"] - stats["kernel"]) / stats["configs"] * 1e3
    return dict(stats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--size", default="4096x4096", help="WIDTHxHEIGHT")
    parser.add_argument("--sources", type=int, default=80, help="random sources of the space, all their configurations")
    parser.add_argument("--best", type=float, default=None, help="seconds: censor against this best (default: no pass)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    device = select_device(args.device)
    prog = imagecl.load(ROOT / "examples" / "convolution9.icl")
    arguments, _ = synthetic_arguments(prog, parse_size(args.size), {}, seed=args.seed, device=device)
    target = ProgramTarget(prog, arguments, device)
    groups = list(plan_measurements(target.space, paper_space(prog), set()).groups.values())
    pick = np.random.default_rng(args.seed).choice(len(groups), min(args.sources, len(groups)), replace=False)
    groups = [groups[i] for i in pick]
    runner = make_runner(target.worker_setup(), device)
    print(f"{describe(device).name}, {args.size}: {sum(map(len, groups))} configurations of {len(groups)} sources")
    measure_all(groups, runner, device, float("inf"), CensorRule(), True)  # builds, first launches
    censor = CensorRule(factor=4.0, probe=default_probe(device))
    for ahead in (False, True):
        runs = [("no censoring", float("inf"), CensorRule())]
        if args.best:
            runs.append((f"censored against {args.best * 1e3:.3f} ms", args.best, censor))
        for label, best, rule in runs:
            stats = measure_all(groups, runner, device, best, rule, ahead)
            print(f"{'prepared ahead' if ahead else 'one at a time'}, {label}: host "
                  f"{stats['host_ms_per_config']:.3f} ms a configuration (wall {stats['wall']:.2f} s, launches "
                  f"{stats['kernel']:.2f} s; " + ", ".join(f"{k} {v}" for k, v in sorted(stats.items())
                                                           if isinstance(v, int) and k != "configs") + ")")


if __name__ == "__main__":
    main()
