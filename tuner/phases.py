"""Where a tuning run's seconds went: the measurer's phases, as a record and as text.

The phases (engine.Summary.phases, summed over a run by the Measurer) are wall-clock seconds of
the main process (validate, generate, start: the worker's starts and restarts, announce, wait_for_ahead:
waiting for a build ahead, wait_for_quiet: for the builders to stop before timing on a CPU,
wait_for_builds, measure: the round trips to the worker, store,
confirm: timing the fastest again),
the worker's (worker_generate, worker_load: a cached binary, worker_build: a build in the
worker, worker_launch: checked, timed and settling launches, worker_kernel: of those, the timed
launches' device time) and the builders' CPU seconds
(generate_cpu, build_cpu; they overlap the rest). `worker_*` lie inside `measure`.
"""
from __future__ import annotations

import json
from typing import Any

# main-process phases, in the order a measurement passes through them
_MAIN = ("validate", "generate", "start", "announce", "wait_for_ahead", "wait_for_quiet", "wait_for_builds", "measure",
         "store", "confirm")
_WORKER = ("worker_generate", "worker_load", "worker_build", "worker_launch", "worker_kernel")


def phase_report(measurer: Any, wall_seconds: float) -> dict:
    """A run's phases (seconds), its sources and how they were built, as plain data for JSON;
    `wall_seconds`: the run's wall-clock time, for the share nothing above accounts for."""
    phases = dict(getattr(measurer, "phases", {}))
    counts = dict(getattr(measurer, "counts", {}))
    worker = getattr(measurer, "worker", None)
    if getattr(worker, "starts", 0):
        phases["start"] = worker.start_seconds
        counts["worker_starts"] = worker.starts
    phases = {k: round(v, 4) for k, v in sorted(phases.items())}
    ahead = getattr(measurer, "ahead", None)
    report: dict = {"wall_seconds": round(wall_seconds, 4), "phases": phases,
                    "other_seconds": round(wall_seconds - sum(phases.get(k, 0.0) for k in _MAIN), 4),
                    "counts": counts}
    if getattr(measurer, "slowest", None):
        report["slowest"] = list(measurer.slowest)
    if ahead is not None:
        report["ahead"] = {"builders": ahead.workers, "quiet": bool(getattr(ahead, "quiet", False)),
                           "counts": dict(ahead.counts),
                           **{k: round(v, 4) for k, v in ahead.seconds.items()}}
    return report


def describe_phases(report: dict) -> str:
    """Lines for `imagecl tune --verbose`: the main process's phases, then the worker's within
    'measure', then the builders' (their seconds overlap the rest)."""
    phases = report["phases"]

    def part(names) -> str:
        return ", ".join(f"{n} {phases[n]:.2f} s" for n in names if phases.get(n, 0.0) >= 0.005) or "none"

    lines = [f"time by phase ({report['wall_seconds']:.1f} s in all): {part(_MAIN)}; "
             f"other (the search's own work) {report['other_seconds']:.2f} s",
             f"  in the worker (within measure): {part(_WORKER)}"]
    counts = report.get("counts", {})
    if counts.get("worker_starts", 0) > 1:
        lines.append(f"  the worker started {counts['worker_starts']} times (restarted after a hang or a crash)")
    if counts.get("sources"):
        built = {k[len('ahead_'):]: v for k, v in counts.items() if k.startswith("ahead_")}
        lines.append(f"  sources measured: {counts['sources']}"
                     + (" (built ahead: " + ", ".join(f"{k} {v}" for k, v in sorted(built.items())) + ")"
                        if built else ""))
    ahead = report.get("ahead")
    if ahead:
        when = "between timed launches" if ahead.get("quiet") else "alongside"
        lines.append(f"  builders ({ahead['builders']}, {when}): generation {ahead['generate_cpu']:.2f} s, "
                     f"builds {ahead['build_cpu']:.2f} s; "
                     + ", ".join(f"{k} {v}" for k, v in sorted(ahead["counts"].items())))
    for entry in report.get("slowest", [])[:3]:
        lines.append(f"  slow: {entry['seconds']:.2f} s ({entry['status']}; "
                     + ", ".join(f"{k} {v:.2f}" for k, v in entry["phases"].items() if v >= 0.005)
                     + f") for {json.dumps(entry['config'])}")
    return "\n".join(lines)


__all__ = ["describe_phases", "phase_report"]
