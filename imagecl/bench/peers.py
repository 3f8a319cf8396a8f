"""ImageCL's tuned kernels against the libraries a user would otherwise call (issue 6).

    python benchmarks/peers.py --device nvidia|cpu [--quick] [--tune-seconds S] [--out DIR] [--only w1,w2]

For each workload (peer_workloads.py): the naive and the tuned ImageCL variant (tuned with the
project's model-based tuner for about S seconds; the measurements go to DIR/peers-tuning.db, so a
rerun reuses them instead of tuning again unless --retune), and every peer that offers the workload
with the same boundary semantics (peer_impls.py, peer_halide.py). Each peer's output is checked
against ours before its time counts; then it is called until two consecutive calls agree (its
compile caches filled, peer_timing.py), and only the calls after count. Also measured: the
device's copy bandwidth with a STREAM-like OpenCL copy kernel (bytes read + written), the
reference for the memory-bound workloads.
Writes DIR/peers-<device>.json, .md and .png, and regenerates the peer section of BENCHMARKS.md
from every DIR/peers-*.json present (peers_report.py).

Timings: ImageCL columns are OpenCL profiling-event kernel times (no transfers); GPU peers are
timed with CUDA events around the call (synchronised), CPU peers by the wall clock around the call
with inputs already in memory. Each is the median of at least 3 calls (launches) after the
warm-up, with its spread.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np

import imagecl
from imagecl.errors import ImageCLError
from imagecl.runtime.devices import describe, select_device
from imagecl.runtime.session import Session
from imagecl.runtime.timing import MIN_TIMED

from . import repository
from .bandwidth import copy_bandwidth
from .peer_impls import NotOffered, Peer, peers_for
from .peer_timing import warm_then_time
from .peer_workloads import Workload, all_workloads

# ---- checking a peer's output ----------------------------------------------------------------------------
def check_output(got: dict, expected: dict, workload: Workload) -> Optional[str]:
    """None when the peer's outputs equal ours (floats within the workload's tolerance of the
    output's scale; integers exactly, or within max_level_difference), else what differs."""
    rtol = workload.tolerance or 1e-4
    for name, ref in expected.items():
        out = got.get(name)
        if out is None:
            return f"no output '{name}'"
        out = np.asarray(out)
        if out.shape != ref.shape:
            return f"output '{name}' has shape {out.shape}, ours {ref.shape}"
        if ref.dtype.kind == "f":
            scale = max(1.0, float(np.abs(ref).max()))
            bad = ~np.isclose(out.astype(np.float64), ref, rtol=rtol, atol=rtol * scale)
        else:
            bad = np.abs(out.astype(np.int64) - ref.astype(np.int64)) > workload.max_level_difference
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            return (f"output '{name}' differs at {where} (NumPy index): {out[where]} instead of {ref[where]}, "
                    f"{int(bad.sum())} of {bad.size} values")
    return None


def time_peer(peer: Peer, workload: Workload, args: dict, reference: dict, repeats: int,
              max_seconds: float) -> dict:
    """A peer's record: 'ok' with its median time (after its output passed the check), or why not."""
    record = {"peer": peer.name, "timing": peer.timing}
    started = time.time()
    try:
        run = peer.prepare(workload, args)
        first = run.time_once()  # the checked call (also the warm-up)
        problem = check_output(run.fetch(), reference, workload)
        if problem:
            record.update(status="wrong output", reason=problem)
            return record
        timing = warm_then_time(run.time_once, first, repeats, max_seconds)
    except NotOffered as exc:
        record.update(status="n/a", reason=str(exc))
        return record
    except Exception as exc:  # noqa: BLE001 - a peer that breaks is reported, the run goes on
        record.update(status="error", reason=f"{type(exc).__name__}: {exc}"[:400])
        return record
    record.update(status="ok", seconds=timing.median, times=timing.times, spread=timing.spread,
                  warmup_times=timing.warmup, warm=timing.settled, wall_seconds=time.time() - started)
    notes = getattr(peer, "notes", {}).get(workload.key)
    if notes:
        record["notes"] = notes
    return record


# ---- the ImageCL side ------------------------------------------------------------------------------------
def tune(program, args: dict, device, store_path: Path, seconds: float, retune: bool, naive_seconds: float,
         seed: int = 0) -> dict:
    """Tune as `imagecl tune` does (one tuning session: the naive variant as the baseline, the
    default strategy, the store's prior and transfer seeds) for about `seconds` (skipped when the
    store already holds measurements of this program, size, device and driver, unless `retune`);
    returns the best stored configurations and what the tuning did. The session's confirmation is
    left out: `imagecl_side` times the three fastest again itself, as it times the naive variant
    and the peers."""
    from imagecl.tuner.engine import MeasureOptions, Measurer
    from imagecl.tuner.session import SessionOptions, run_session
    from imagecl.tuner.store import Store

    info: dict = {"store": str(store_path)}
    slow = naive_seconds > 0.25  # big problems on a CPU: fewer timed launches per configuration
    options = MeasureOptions(timeout=max(30.0, seconds, 20 * naive_seconds), prebuild=False,
                             repeats=MIN_TIMED, max_repeats=MIN_TIMED if slow else 5)
    with Store(store_path) as store, Measurer(program, args, store, device, options) as measurer:
        stored = [r for r in measurer.stored().values() if r.status == "ok"]
        info["stored_before"] = len(stored)
        space = measurer.space
        info["space_size"] = space.size
        if (retune or not stored) and seconds > 0:
            started = time.time()
            measurer.measure([space.defaults])  # starts the worker (builds and runs the naive variant)
            warm = time.time()
            measurer.measure(space.random(2, seed=seed))  # how long one configuration takes here
            per_config = max((time.time() - warm) / 2, 0.02)
            budget = int(min(500, max(8, seconds / per_config)))
            session = run_session(measurer, SessionOptions(budget=budget, seed=seed, confirm=0,
                                                           seconds=max(0.0, started + seconds - time.time())))
            info.update(tuned_seconds=time.time() - started, evaluations=session.evaluations, budget=budget,
                        speedup_over_naive=session.speedup)
        records = list(measurer.stored().values())
    ok = [r for r in records if r.status == "ok" and r.time is not None]
    info["measured"] = len(records)
    info["failed"] = len(records) - len(ok)
    if not ok:
        return {**info, "config": None}
    ok.sort(key=lambda r: r.time)
    return {**info, "config": ok[0].config, "tuner_seconds_of_best": ok[0].time,
            "finalists": [r.config for r in ok[:3]]}


def imagecl_side(workload: Workload, args: dict, device, store_path: Path, tune_seconds: float, retune: bool,
                 repeats: int, max_seconds: float) -> tuple[dict, dict]:
    """Our record (naive and tuned times, the tuning) and the naive variant's outputs, the reference."""
    program = imagecl.compile(workload.source, f"<{workload.key}>")
    session = Session(program, args, device)
    naive = session.time(program.plan(None), repeats=repeats, max_seconds=max_seconds)
    record = {"naive_seconds": naive.median, "naive_times": naive.times}
    session.set_reference_from(program.plan(None))
    t0 = time.time()
    tuning = tune(program, args, device, store_path, tune_seconds, retune, naive.median)
    tuning["wall_seconds"] = time.time() - t0
    record["tuning"] = tuning
    if tuning["config"] is None:
        record["tuned_seconds"] = None
        return record, naive.outputs
    # the tuner's three fastest, timed again here as the naive variant was: one measurement is a
    # noisy pick on a busy machine; the fastest again is the tuned variant
    finalists = []
    repeats = repeats if naive.median < 0.25 else MIN_TIMED  # slow kernels (big problems on a CPU): fewer
    for config in tuning["finalists"]:
        timing = session.time(program.plan(config, device), repeats=repeats, max_seconds=max_seconds, verify=True)
        if timing.problem:  # the tuner verified it; should it differ now, it is left out, and said
            record.setdefault("rejected", []).append({"config": config, "problem": timing.problem})
            continue
        finalists.append((timing.median, timing.times, config))
    if not finalists:
        raise ImageCLError(f"{workload.key}: no tuned variant reproduces the naive one: {record['rejected']}")
    seconds, times, config = min(finalists, key=lambda f: f[0])
    record.update(tuned_seconds=seconds, tuned_times=times, config=config,
                  finalists_seconds=[f[0] for f in finalists])
    return record, naive.outputs


# ---- the run ---------------------------------------------------------------------------------------------
def machine_description(device_kind: str, info, peers: list[Peer]) -> dict:
    text = {"opencl_device": info.name, "opencl_platform": info.platform, "opencl_driver": info.driver,
            "compute_units": info.compute_units, "python": platform.python_version(), "host": platform.node(),
            "cpu": _cpu_name(), "cpu_cores": os.cpu_count(), "load_average": list(os.getloadavg())}
    if device_kind == "nvidia":
        try:
            import cupy

            props = cupy.cuda.runtime.getDeviceProperties(0)
            text["cuda_device"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
            text["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
            text["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        except Exception as exc:  # noqa: BLE001
            text["cuda_device"] = f"unknown ({type(exc).__name__})"
    text["peers"] = {}
    for peer in peers:
        missing = peer.missing()
        text["peers"][peer.name] = {"version": None if missing else peer.version(), "missing": missing,
                                    "timing": peer.timing}
    return text


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run(argv=None, extra_peers: Optional[list[Peer]] = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    started = time.time()
    parser.add_argument("--device", required=True, choices=("nvidia", "cpu"),
                        help="the OpenCL device (name fragment) and which peers to compare with")
    parser.add_argument("--quick", action="store_true", help="small problem sizes (a quick local check)")
    parser.add_argument("--size-scale", type=float, default=None,
                        help="scale the large problem sizes (each side), e.g. 0.5 on a small machine")
    parser.add_argument("--tune-seconds", type=float, default=None,
                        help="tuning time per workload (0: none; default 20 on a GPU, 120 on a CPU, where one "
                             "measurement costs a build and launches of up to a second: BENCHMARKS.md)")
    parser.add_argument("--deadline-minutes", type=float, default=None,
                        help="shorten the tuning of the later workloads so that the run ends in about this time")
    parser.add_argument("--retune", action="store_true", help="tune again even if the store has measurements")
    parser.add_argument("--out", default=None, help="default: benchmarks/results of the checkout")
    parser.add_argument("--only", default=None, help="comma-separated workloads: " +
                        ",".join(w.key for w in all_workloads()))
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU peers' threads (default: the OpenCL CPU device's compute units)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed calls per measurement, at least 3 (default 10 GPU, 5 CPU)")
    parser.add_argument("--note", default=None, help="a line for the report (the machine's state, say)")
    parser.add_argument("--tag", default=None,
                        help="results are peers-TAG.*; default the device (plus -quick), e.g. cpu-laptop")
    parser.add_argument("--halide-schedulers", default="Mullapudi2016,Adams2019",
                        help="Halide autoschedulers to try (the faster counts); Adams2019 searches for tens of "
                             "seconds per pipeline")
    parser.add_argument("--benchmarks-md", default=None,
                        help="the file whose peer section is regenerated ('' for none)")
    args = parser.parse_args(argv)

    tag = args.tag or (args.device + ("-quick" if args.quick else ""))
    if not tag.replace("-", "").replace("_", "").isalnum():
        parser.error(f"--tag {tag!r}: use letters, digits, '-' and '_' only")
    negative_tuning = args.tune_seconds is not None and args.tune_seconds < 0
    if negative_tuning or (args.size_scale is not None and args.size_scale <= 0):
        parser.error("--tune-seconds must be >= 0 and --size-scale > 0")
    workloads = all_workloads()
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        unknown = [w for w in wanted if w not in {x.key for x in workloads}]
        if unknown:
            parser.error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(w.key for w in workloads)}")
        workloads = [w for w in workloads if w.key in wanted]
    try:
        device = select_device(args.device)
    except ImageCLError as exc:
        parser.error(str(exc))
    info = describe(device)
    if args.tune_seconds is None:
        args.tune_seconds = 20.0 if info.kind == "GPU" else 120.0
    threads = args.threads or (info.compute_units if info.kind == "CPU" else os.cpu_count())
    schedulers = tuple(s.strip() for s in args.halide_schedulers.split(",") if s.strip())
    peers = peers_for(args.device, threads, schedulers) + list(extra_peers or [])
    out = Path(args.out) if args.out is not None else repository() / "benchmarks" / "results"
    if args.benchmarks_md is None:
        args.benchmarks_md = str(repository() / "BENCHMARKS.md")
    out.mkdir(parents=True, exist_ok=True)
    repeats = max(MIN_TIMED, args.repeats or (10 if info.kind == "GPU" else 5))
    max_seconds = 2.0 if info.kind == "GPU" else 3.0
    machine = machine_description(args.device, info, peers)
    available = {p.name: p for p in peers if p.missing() is None}
    for name, meta in machine["peers"].items():
        if meta["missing"]:
            print(f"note: peer {name} skipped: {meta['missing']}", file=sys.stderr)

    bandwidth = copy_bandwidth(device, (16 << 20) if args.quick else (512 << 20 if info.kind == "GPU" else 256 << 20))
    print(f"[{info.name}] copy kernel: {bandwidth['bytes_per_second'] / 1e9:.0f} GB/s", file=sys.stderr, flush=True)
    rng = np.random.default_rng(2017)
    records = []

    def save(done: list, complete: bool) -> dict:
        """Write the JSON; after every workload too, so that a run stopped from outside keeps what
        it measured (marked partial)."""
        result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device_kind": args.device,
                  "machine": machine, "copy_bandwidth": bandwidth, "quick": args.quick,
                  "command": "python benchmarks/peers.py " + " ".join(sys.argv[1:] if argv is None else argv),
                  "tune_seconds": args.tune_seconds, "repeats": repeats, "records": done, "note": args.note,
                  "seconds": time.time() - started, "tag": tag, "partial": not complete}
        result["machine"]["load_average_after"] = list(os.getloadavg())
        (out / f"peers-{tag}.json").write_text(json.dumps(result, indent=1, default=_json_default))
        return result

    for index, w in enumerate(workloads):
        tune_seconds = args.tune_seconds
        if args.deadline_minutes:
            # about half of what is left per workload goes to tuning, the rest to timing the peers
            left = args.deadline_minutes * 60 - (time.time() - started)
            tune_seconds = max(0.0, min(tune_seconds, 0.5 * left / (len(workloads) - index)))
        shape = w.quick if args.quick else w.full
        if args.size_scale and (args.quick or int(np.prod(w.full)) > 1 << 20):  # stereo, raycasting: small already
            shape = tuple(max(16, int(s * args.size_scale)) for s in shape)
        arguments = w.make(shape, rng)
        print(f"[{info.name}] {w.title} {'x'.join(map(str, reversed(shape)))} ...", file=sys.stderr, flush=True)
        record = {"workload": w.key, "title": w.title, "family": w.family, "size": list(reversed(shape)),
                  "boundary": w.boundary, "memory_bound": w.memory_bound, "bytes": w.bytes_moved(arguments),
                  "tune_seconds": tune_seconds}
        t0 = time.time()
        try:
            ours, reference = imagecl_side(w, arguments, device, out / "peers-tuning.db", tune_seconds,
                                           args.retune, repeats, max_seconds)
        except ImageCLError as exc:
            record["error"] = str(exc)
            records.append(record)
            save(records, complete=False)
            print(f"  imagecl failed: {exc}", file=sys.stderr)
            continue
        record["imagecl"] = ours
        record["peers"] = []
        for peer in peers:
            if peer.name not in available:
                record["peers"].append({"peer": peer.name, "status": "missing",
                                        "reason": machine["peers"][peer.name]["missing"]})
                continue
            record["peers"].append(time_peer(peer, w, arguments, reference, repeats, max_seconds))
        record["wall_seconds"] = time.time() - t0
        records.append(record)
        save(records, complete=False)
        tuned = ours.get("tuned_seconds")
        print(f"  naive {ours['naive_seconds'] * 1e3:.3f} ms, tuned "
              f"{'-' if tuned is None else f'{tuned * 1e3:.3f} ms'}; "
              + "; ".join(f"{p['peer']}: " + (f"{p['seconds'] * 1e3:.3f} ms" if p["status"] == "ok"
                                             else f"{p['status']} ({p.get('reason', '')[:80]})")
                          for p in record["peers"])
              + f" [{record['wall_seconds']:.0f} s]", file=sys.stderr, flush=True)

    result = save(records, complete=True)
    from . import peers_report

    table = peers_report.device_section(result)
    (out / f"peers-{tag}.md").write_text(table + "\n")
    peers_report.plot(result, out / f"peers-{tag}.png")
    if args.benchmarks_md and not args.quick:
        peers_report.update_benchmarks_md(out, Path(args.benchmarks_md))
    print(table)
    return result


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")


def main(argv=None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
