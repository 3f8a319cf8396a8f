"""A whole tuning space measured cold: every valid configuration built, verified and timed, every
invalid one recorded with its reason; the time of each phase (issue 21).

    python3 benchmarks/exhaustive.py --device nvidia --out $OUT/exhaustive.json

By default the paper's convolution space (Table 1: 131,072 configurations of
examples/convolution9.icl, as benchmarks/throughput.py builds it) at 4096x4096; `--program P.icl
--space all` takes every configuration of another program's own space instead. The build cache
is a new folder (cold) unless `--cache` names one. `--limit N` measures a seeded random sample of
N. Measuring stops after `--deadline` seconds (400 by default, so that a call stays under 8
minutes); the same `--db` in a later call goes on where the last stopped (what is stored is
skipped; the binaries built ahead are kept in DB.cache), and its summary adds up every call's
phases (kept in DB.calls.json):

    python3 benchmarks/exhaustive.py --device nvidia --db /tmp/exhaustive.db --out $OUT/exhaustive-1.json
    python3 benchmarks/exhaustive.py --device nvidia --db /tmp/exhaustive.db --out $OUT/exhaustive-2.json

`--censor K` (4 by default, 0: off) records a configuration whose checked launch takes over K
times the best so far as `slow` after that one launch (tuner/censor.py); every `--audit-every`-th
of them (by a hash of its configuration) is timed fully anyway, and the summary gives the
smallest such true median over the best at the time. So that censoring bites from the start,
`--warm N` configurations (a seeded random sample) are measured first. `--probe F` (0.25 on a GPU,
off on PoCL by default) launches that part of a variant's work-groups before its checked launch: a
probe over the bound already censors it (unchecked: a part of the work should never take longer
than all of it, which the audit checks as its largest probe / true median; on the H100 the largest
was 0.915, BENCHMARKS.md). A worst audited ratio near or below 1
means censoring hid a contender (PoCL compiles a kernel inside its first launches): the summary
says so, and such a run is measured again with --censor 0.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# NVIDIA's binaries are PTX: the worker's program made from one is compiled for the GPU again
# unless the driver's compute cache holds it from the builder's build; tens of thousands of them
# overflow its default size (set before the driver starts, inherited by the builders)
os.environ.setdefault("CUDA_CACHE_MAXSIZE", str(4 << 30))

import imagecl  # noqa: E402
from imagecl.bench.paper_space import paper_space  # noqa: E402
from imagecl.cli import parse_size  # noqa: E402
from imagecl.runtime.devices import describe, select_device  # noqa: E402
from imagecl.runtime.synthetic import synthetic_arguments  # noqa: E402
from imagecl.tuner.censor import SLOW, SLOWER, default_probe  # noqa: E402
from imagecl.tuner.engine import MeasureOptions, Measurer, Summary  # noqa: E402
from imagecl.tuner.store import Store  # noqa: E402
from imagecl.tuner.validate import plan_measurements  # noqa: E402



def whole_space(space) -> list[dict]:
    """Every configuration of `space`, valid or not."""
    if space.size > 2_000_000:
        raise SystemExit(f"the space has {space.size:,} configurations: too many to measure them all")
    columns = space._decode(np.arange(space.size, dtype=np.int64))
    names = list(columns)
    return [dict(zip(names, row)) for row in zip(*(columns[n].tolist() for n in names))]


def _merged(summaries: list) -> "Summary":
    """One call's summary from its measure() calls (the warm-up sample's, then the rest's)."""
    if len(summaries) == 1:
        return summaries[0]
    out = Summary()
    for s in summaries:
        out.measured += s.measured
        out.sources += s.sources
        out.statuses.update(s.statuses)
        out.build_status.update(s.build_status)
        out.audits.extend(s.audits)
        for k, v in s.phases.items():
            out.phases[k] = out.phases.get(k, 0.0) + v
        if s.best_time is not None and (out.best_time is None or s.best_time < out.best_time):
            out.best_time, out.best_config = s.best_time, s.best_config
    last = summaries[-1]
    out.skipped, out.stopped_early, out.total = last.skipped - summaries[0].measured, last.stopped_early, last.total
    return out


def _reason(error: str) -> str:
    return error.split("): ", 1)[1] if "): " in error else error


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--program", default=str(ROOT / "examples" / "convolution9.icl"))
    parser.add_argument("--space", choices=("paper", "all"), default=None,
                        help="paper: Table 1's convolution space (the default for convolution9.icl); all: every "
                             "configuration of the program's space")
    parser.add_argument("--size", default="4096x4096", help="WIDTHxHEIGHT (default 4096x4096)")
    parser.add_argument("--limit", type=int, default=0, help="measure a seeded random sample of N configurations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=10.0, help="watchdog seconds per configuration")
    parser.add_argument("--deadline", type=float, default=400.0,
                        help="stop measuring after this many seconds, 0: never (default 400: a call stays under 8 "
                             "minutes; resume with the same --db)")
    parser.add_argument("--workers", type=int, default=0, help="builder processes (default: cores - 1)")
    parser.add_argument("--db", default=None, help="results store (default: a temporary one); reused to resume")
    parser.add_argument("--cache", default=None,
                        help="build cache folder (default: DB.cache with --db, else a temporary one; new: cold)")
    parser.add_argument("--out", default=None, help="write the summary here as JSON")
    parser.add_argument("--censor", type=float, default=SLOWER,
                        help="record a configuration whose checked launch exceeds K x the best so far as 'slow', "
                             "not timed further (default 4; 0: off)")
    parser.add_argument("--audit-every", type=int, default=50,
                        help="time every Nth would-be-censored configuration fully anyway (default 50; 0: none)")
    parser.add_argument("--probe", type=float, default=None,
                        help="with --censor: first launch this part of the work-groups (e.g. 0.25); over the bound, "
                             "the configuration is censored without its checked launch (default: 0.25 on a GPU, "
                             "0 (off) on PoCL, where a first launch includes compilation: docs/kernel-tuning.md)")
    parser.add_argument("--warm", type=int, default=300,
                        help="measure this many configurations first, so that censoring has a best (default 300)")
    args = parser.parse_args(argv)

    t0 = time.time()
    device = select_device(args.device)
    if args.probe is None:
        args.probe = default_probe(device)
    prog = imagecl.load(args.program)
    shape = parse_size(args.size)
    arguments, _ = synthetic_arguments(prog, shape, {}, seed=args.seed, device=device)
    space_kind = args.space or ("paper" if Path(args.program).name == "convolution9.icl" else "all")
    configs = paper_space(prog) if space_kind == "paper" else whole_space(prog.space_for(device, shape))
    total = len(configs)
    order = np.random.default_rng(args.seed).permutation(total)  # a uniform picture if stopped early
    configs = [configs[i] for i in order[: args.limit or None]]
    enumerate_seconds = time.time() - t0

    workdir = tempfile.TemporaryDirectory(prefix="imagecl-exhaustive-")
    db = Path(args.db) if args.db else Path(workdir.name) / "results.db"
    # a resumed run keeps the binaries its first call built ahead of the launches
    cache = Path(args.cache) if args.cache else Path(str(db) + ".cache") if args.db else Path(workdir.name) / "cache"
    options = MeasureOptions(timeout=args.timeout, deadline=args.deadline or None, build_workers=args.workers,
                             cache_dir=cache, censor=args.censor, audit_every=args.audit_every,
                             probe=args.probe if args.censor else 0.0)
    start = time.time()
    with Store(db) as store, Measurer(prog, arguments, store, device, options) as measurer:
        summaries = []
        if args.censor and args.warm:
            summaries.append(measurer.measure(configs[: args.warm]))
            options.deadline = max(1.0, args.deadline - (time.time() - start)) if args.deadline else None
        summaries.append(measurer.measure(configs))
        summary = _merged(summaries)
        wall = time.time() - start
        records = list(store.records(measurer.run))
    sources_in_space = len(plan_measurements(measurer.space, configs, set()).groups)
    mine = records  # the store holds this benchmark's run only (a fresh one, or the one resumed)
    invalid = Counter(_reason(r.error or "") for r in records if r.status == "invalid_config")
    timed = [len(r.times) for r in records if r.status == "ok"]
    # the kernels' own time: the timed launches plus the checked one (at about the median): the
    # floor of the launch phase on one device, whatever the host does
    # (a slow record's one launch is its checked one)
    kernel_seconds = sum(sum(r.times) + (r.time or 0.0) for r in records if r.status == "ok") + \
        sum(sum(r.times) for r in records if r.status == SLOW)
    call = {"wall_seconds": wall, "enumerate_seconds": enumerate_seconds, "phases": summary.phases,
            "measured": summary.measured, "skipped": summary.skipped, "sources": summary.sources,
            "build_status": dict(summary.build_status), "stopped_early": summary.stopped_early,
            "audits": [a.to_json() for a in summary.audits]}
    calls_file = Path(str(db) + ".calls.json")
    calls = json.loads(calls_file.read_text()) if args.db and calls_file.exists() else []
    calls.append(call)
    if args.db:
        calls_file.write_text(json.dumps(calls, indent=1))
    phases: Counter = Counter()
    for c in calls:
        phases.update(c["phases"])
        phases["enumerate"] += c["enumerate_seconds"]
    all_wall = sum(c["wall_seconds"] + c["enumerate_seconds"] for c in calls)
    statuses = Counter(r.status for r in records)
    audits = [a for c in calls for a in c.get("audits", [])]
    worst = min(audits, key=lambda a: a["ratio"], default=None)
    # a probe is a lower bound only if a part of the work-groups never takes longer than all of them
    probe_worst = max((a["probe_over_median"] for a in audits if a.get("probe_over_median") is not None),
                      default=None)
    slow = [r for r in records if r.status == SLOW]
    best = min((r for r in records if r.status == "ok" and r.time), key=lambda r: r.time, default=None)
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "device": describe(device).__dict__,
        "program": Path(args.program).name, "space": space_kind, "size": args.size, "configurations": total,
        "asked": len(configs), "stored": len(mine), "statuses": dict(statuses), "invalid_by_reason": dict(invalid),
        "distinct_sources_this_call": summary.sources, "build_status_this_call": dict(summary.build_status),
        "timed_launches_per_ok": {"min": min(timed, default=0), "mean": float(np.mean(timed)) if timed else 0.0,
                                  "max": max(timed, default=0)},
        "kernel_seconds_stored": kernel_seconds,
        "distinct_sources_space": sources_in_space,
        "censor": {"factor": args.censor, "audit_every": args.audit_every, "warm": args.warm, "probe": args.probe,
                   "censored": len(slow), "censored_by_probe": sum(not r.verified for r in slow),
                   "audited": len(audits), "audit_worst_probe_over_median": probe_worst,
                   "audit_worst_ratio": worst["ratio"] if worst else None, "audit_worst": worst,
                   "censored_bound_ms_min": min((r.limit for r in slow if r.limit), default=0.0) * 1e3,
                   "censored_first_over_bound_min": min((r.times[0] / r.limit for r in slow if r.limit and r.times),
                                                        default=None)},
        "calls": len(calls), "wall_seconds_all_calls": all_wall, "phases_all_calls": dict(phases),
        "configs_per_second_all_calls": len(mine) / all_wall if all_wall else 0.0,
        "complete": not summary.stopped_early,
        "this_call": call, "best_ms": best.time * 1e3 if best else None,
        "best_config": best.config if best else None, "command": " ".join(sys.argv),
    }
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1, default=str))
    print(f"{result['program']} {args.size} on {describe(device).name}: {len(mine):,} of {len(configs):,} "
          f"configurations stored ({', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))}) in "
          f"{all_wall:.1f} s over {len(calls)} call(s): {result['configs_per_second_all_calls']:.1f} configurations/s")
    print("phases (s, all calls): " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(phases.items())))
    print(f"kernels' own time in the stored results (timed + checked launches): {kernel_seconds:.1f} s")
    print(f"distinct sources of the space: {sources_in_space:,}")
    if args.censor:
        ratio = f"{worst['ratio']:.2f}" if worst else "none yet"
        print(f"censored (slow, over {args.censor:g} x the best at the time): {len(slow):,} "
              f"({result['censor']['censored_by_probe']:,} by a probe of {args.probe:g} of the work-groups); "
              f"audited {len(audits)}, worst audited ratio (true median / best at the time): {ratio}; "
              f"largest probe / true median: " + (f"{probe_worst:.3f}" if probe_worst is not None else "none"))
    print(f"this call: {summary.sources} sources ({dict(summary.build_status)}), timed launches per stored time "
          f"min {result['timed_launches_per_ok']['min']} mean {result['timed_launches_per_ok']['mean']:.1f}")
    for reason, count in invalid.most_common():
        print(f"  invalid {count:,}: {reason}")
    if worst is not None and worst["ratio"] < 2:
        print(f"WARNING: an audited configuration censored at {args.censor:g} x the best ran at {worst['ratio']:.2f} x "
              "it: censoring is not sound on this device (first launches include compilation?); "
              "measure again with --censor 0")
    if probe_worst is not None and probe_worst > 1.1:
        print(f"WARNING: a probe took {probe_worst:.2f} x its configuration's median: the probe is no lower bound "
              "on this device; measure again with --probe 0")
    if not result["complete"]:
        print("not complete: run the same command with the same --db to go on")
    workdir.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
