"""ImageCL's tuned kernels against the libraries a user would otherwise call (issues 6, 23).

    python benchmarks/peers.py --device nvidia|cpu [--runs 3] [--budget N] [--tune-seconds S]
                               [--workloads w1,w2] [--quick] [--out DIR]
    python benchmarks/peers.py --merge A.json B.json ... [--tag T] [--out DIR]

For each workload (peer_workloads.py): the naive ImageCL variant, then --runs independent tuning
runs (each from scratch in a fresh temporary store, seed 0, 1, ..., with --budget configurations
and at most --tune-seconds; no stored configuration is ever reused), each run's tuned variant
timed; and every peer that offers the workload with the same boundary semantics (peer_impls.py,
peer_halide.py, peer_halide_gpu.py, peer_opencv_ocl.py). Each peer's output is checked against
ours before its time counts; then it is called until two consecutive calls agree (its compile
caches filled, peer_timing.py), and only the calls after count. A published ratio is the median
over the runs of (peer time / the run's tuned time), with the runs' range (peer_runs.py). Also
measured: the device's copy bandwidth with a STREAM-like OpenCL copy kernel (bytes read +
written), the reference for the memory-bound workloads.
Writes DIR/peers-<tag>.json, .md and .png, and regenerates the peer section of BENCHMARKS.md
from every DIR/peers-*.json present (peers_report.py). --merge joins the JSONs of several calls
on one device (a workload list split to fit a time limit) into one result.

On a host whose commands have a time limit, split the list and join the parts, e.g.
    python benchmarks/peers.py --device nvidia --runs 3 --budget 40 --tune-seconds 30 \
        --deadline-minutes 7 --workloads conv3,conv9 --out $OUT/gpu-1.json
    ... (the other workloads into gpu-2.json, ...)
    python benchmarks/peers.py --merge gpu-1.json gpu-2.json ... --tag nvidia

Timings: ImageCL columns are OpenCL profiling-event kernel times (no transfers); each peer's
"timing" field says how it is timed (CUDA events, or the wall clock around the call and a device
synchronisation, inputs already on the device). Each is the median of at least 3 calls (launches)
after the warm-up, with its spread.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Optional

import numpy as np

import imagecl
from imagecl.errors import ImageCLError
from imagecl.runtime.devices import describe, select_device
from imagecl.runtime.session import Session
from imagecl.runtime.timing import MIN_TIMED

from . import repository
from .bandwidth import copy_bandwidth
from .peer_impls import NotOffered, Peer, PeerRun, peers_for
from .peer_runs import median_time, run_times
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


def first_that_passes(run: PeerRun, reference: dict, workload: Workload,
                      notes: Optional[dict]) -> tuple[PeerRun, float, Optional[str]]:
    """The peer's fastest schedule whose output passes the check (a peer with one schedule: that
    one), the time of its checked call, and, when none passes, the first one's problem. A schedule
    whose output is wrong is said in `notes` (the peer's per-schedule record)."""
    first_problem = None
    for candidate in [run, *run.alternatives]:
        seconds = candidate.time_once()  # the checked call (also the warm-up)
        problem = check_output(candidate.fetch(), reference, workload)
        if problem is None:
            if notes is not None and candidate.label:
                notes["chosen"] = candidate.label
            return candidate, seconds, None
        first_problem = first_problem or problem
        if notes is not None and candidate.label:
            notes.setdefault(candidate.label, {})["wrong_output"] = problem
    return run, 0.0, first_problem


def time_peer(peer: Peer, workload: Workload, args: dict, reference: dict, repeats: int,
              max_seconds: float) -> dict:
    """A peer's record: 'ok' with its median time (after its output passed the check), or why not."""
    record = {"peer": peer.name, "timing": peer.timing}
    started = time.time()
    try:
        run, first, problem = first_that_passes(peer.prepare(workload, args), reference, workload,
                                                getattr(peer, "notes", {}).get(workload.key))
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
# what a first run on a fresh machine finds empty (each is read by the processes a Measurer starts:
# its worker and builders): the PoCL kernel cache and the NVIDIA compute cache
COMPILER_CACHES = ("POCL_CACHE_DIR", "CUDA_CACHE_PATH")


@contextlib.contextmanager
def cold_caches(folder: Path) -> Iterator[Path]:
    """Empty compiler caches under `folder` for the processes started inside (imagecl's build cache
    is the Measurer's `cache_dir`, the yielded folder): a tuning run does not reuse the builds of
    an earlier run on this machine, which with the same seed and the same CPU seeds would be most
    of its configurations."""
    saved = {name: os.environ.get(name) for name in COMPILER_CACHES}
    try:
        for name in COMPILER_CACHES:
            os.environ[name] = str(folder / name.lower())
            os.makedirs(os.environ[name], exist_ok=True)
        yield folder / "builds"
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def tune(program, args: dict, device, store_path: Path, seconds: float, budget: Optional[int], naive_seconds: float,
         seed: int = 0, build_ahead: Optional[bool] = None, batch: int = 1, cache_dir: Optional[Path] = None) -> dict:
    """One independent tuning run, as `imagecl tune` tunes (the naive variant as the baseline, the
    default strategy) in the store at `store_path` (the caller gives a fresh one: no measurement,
    prior or transfer seed from an earlier run) with `budget` configurations (None: as many as
    about `seconds` allow) and at most about `seconds`; returns the run's three fastest
    configurations and what the tuning did. The session's confirmation is left out: `imagecl_side`
    times the three fastest again itself, as it times the naive variant and the peers.
    `build_ahead`: MeasureOptions' (None: yes; on a CPU between the timed launches).

    `cache_dir`: imagecl's build cache for this run (None: the shared one).

    `batch` > 1: the search proposes that many configurations at a time (Session's batches, as
    on a cluster) and that many builder processes build them while the worker measures: on a
    CPU at a million elements a build (1-3 s, unrolled 9x9 and 11x11 filters) costs far more
    than the launches, and a 12 s run built 4 configurations one after the other. The builds
    share the cores with the launches, so the times that rank the search are noisier; the
    finalists are timed again on an idle device."""
    from imagecl.tuner.engine import MeasureOptions, Measurer
    from imagecl.tuner.models import import_in_background
    from imagecl.tuner.phases import phase_report
    from imagecl.tuner.session import SessionOptions, run_session
    from imagecl.tuner.store import Store

    info: dict = {"seed": seed}
    slow = naive_seconds > 0.25  # big problems on a CPU: fewer timed launches per configuration
    options = MeasureOptions(timeout=max(30.0, seconds, 20 * naive_seconds), prebuild=batch > 1,
                             build_workers=batch if batch > 1 else 0, repeats=MIN_TIMED, max_repeats=MIN_TIMED if slow else 5,
                             build_ahead=build_ahead, cache_dir=cache_dir)
    info["batch"] = batch
    with Store(store_path) as store, Measurer(program, args, store, device, options) as measurer:
        measurer.workers = batch  # configurations proposed at a time (run_session reads it as a cluster's)
        info["stored_before"] = len(measurer.stored())  # 0 for an independent run
        space = measurer.space
        info["space_size"] = space.size
        info["problem_size"] = measurer.run.problem_size  # what the tuning measured on
        if seconds > 0 or budget:
            started = time.time()
            import_in_background()  # the search's torch, while the worker starts
            measurer.measure([space.defaults])  # starts the worker (builds and runs the naive variant)
            if budget is None:
                warm = time.time()
                probes = max(2, batch)
                measurer.measure(space.random(probes, seed=seed))  # how long one configuration takes here
                per_config = max((time.time() - warm) / probes, 0.02)
                budget = int(min(500, max(8, seconds / per_config)))
            session = run_session(measurer, SessionOptions(budget=budget, seed=seed, confirm=0, transfer=False,
                                                           seconds=max(0.0, started + seconds - time.time())))
            info.update(tuned_seconds=time.time() - started, evaluations=session.evaluations, budget=budget,
                        speedup_over_naive=session.speedup,
                        phases=phase_report(measurer, time.time() - started))
        records = list(measurer.stored().values())
    ok = [r for r in records if r.status == "ok" and r.time is not None]
    info["measured"] = len(records)
    info["failed"] = len(records) - len(ok)
    if not ok:
        return {**info, "config": None}
    ok.sort(key=lambda r: r.time)
    return {**info, "config": ok[0].config, "tuner_seconds_of_best": ok[0].time,
            "finalists": [r.config for r in ok[:3]]}


def imagecl_side(workload: Workload, args: dict, device, runs: int, tune_seconds: float, budget: Optional[int],
                 repeats: int, max_seconds: float, tune_args: Optional[dict] = None,
                 batch: int = 1, cold: bool = True) -> tuple[dict, dict]:
    """Our record (the naive time, and per independent tuning run its tuned time; the tuned time
    is the runs' median) and the naive variant's outputs, the reference. `tune_args`: smaller
    inputs the tuning runs measure on (tuning_shape), each run's three fastest then timed on
    `args`; None: the tuning measures on `args`. `cold`: each run starts with empty build caches
    (cold_caches), as a first run on a fresh machine."""
    program = imagecl.compile(workload.source, f"<{workload.key}>")
    session = Session(program, args, device)
    naive = session.time(program.plan(None), repeats=repeats, max_seconds=max_seconds)
    record = {"naive_seconds": naive.median, "naive_times": naive.times, "runs": []}
    # the naive variant's time on the tuning inputs, as far as the element count tells
    scale = 1.0 if tune_args is None else _elements(tune_args) / _elements(args)
    if tune_args is not None:
        record["tuning_size"] = _grid_size(workload, tune_args)
    session.set_reference_from(program.plan(None))
    repeats_tuned = repeats if naive.median < 0.25 else MIN_TIMED  # slow kernels (big problems on a CPU): fewer
    for seed in range(runs):
        t0 = time.time()
        with tempfile.TemporaryDirectory(prefix="imagecl-peers-") as folder, \
                cold_caches(Path(folder)) if cold else contextlib.nullcontext() as cache_dir:
            tuning = tune(program, args if tune_args is None else tune_args, device, Path(folder) / "tuning.db",
                          tune_seconds, budget, naive.median * scale, seed=seed, batch=batch, cache_dir=cache_dir)
        tuning["wall_seconds"] = time.time() - t0
        run = {"tuning": tuning, "tuned_seconds": None}
        record["runs"].append(run)
        if tuning["config"] is None:
            continue
        # the run's three fastest, timed again here as the naive variant was: one measurement is a
        # noisy pick on a busy machine; the fastest again is the run's tuned variant
        finalists = []
        for config in tuning["finalists"]:
            try:
                timing = session.time(program.plan(config, device), repeats=repeats_tuned, max_seconds=max_seconds,
                                      verify=True)
            except ImageCLError as exc:  # tuned on smaller inputs: a configuration these cannot take
                record.setdefault("rejected", []).append({"config": config, "problem": str(exc)[:300]})
                continue
            if timing.problem:  # the tuner verified it; should it differ now, it is left out, and said
                record.setdefault("rejected", []).append({"config": config, "problem": timing.problem})
                continue
            finalists.append((timing.median, timing.times, config))
        if finalists:
            seconds, times, config = min(finalists, key=lambda f: f[0])
            run.update(tuned_seconds=seconds, tuned_times=times, config=config,
                       finalists_seconds=[f[0] for f in finalists])
    times = run_times(record)
    if not times:
        if record.get("rejected"):
            raise ImageCLError(f"{workload.key}: no tuned variant reproduces the naive one: {record['rejected']}")
        record["tuned_seconds"] = None
        return record, naive.outputs
    median_run = min(record["runs"], key=lambda r: abs((r["tuned_seconds"] or float("inf")) - median_time(times)))
    record.update(tuned_seconds=median_time(times), config=median_run.get("config"),
                  tuned_range=[min(times), max(times)])
    return record, naive.outputs


def _elements(args: dict) -> int:
    return max(int(np.asarray(a).size) for a in args.values() if isinstance(a, np.ndarray))


def _grid_size(workload: Workload, args: dict) -> list[int]:
    return list(reversed(args[workload.reads[0]].shape)) if workload.reads else []


# the CPU's tuning runs measure on inputs of at most this many elements (--tune-scale's default)
CPU_TUNING_ELEMENTS = 1 << 20


def tuning_shape(shape: tuple[int, ...], scale: Optional[float], cpu: bool) -> Optional[tuple[int, ...]]:
    """The shape the tuning runs measure on, None for `shape` itself: each side times `scale`
    (at least 16); by default (None) on a CPU the sides scaled alike to CPU_TUNING_ELEMENTS
    elements where the problem is larger. Why on a CPU: one measurement there costs a build plus
    launches of up to a second at the published sizes, so a tuning run of a minute measured 1-4
    configurations of convolution 9x9 and never reached the vector code; at a million elements
    a launch takes milliseconds and the build is most of the cost. The tuned variants are timed
    at the published size afterwards, so the ratios stay those of the published size."""
    if scale is None:
        elements = int(np.prod(shape))
        if not cpu or elements <= CPU_TUNING_ELEMENTS:
            return None
        scale = (CPU_TUNING_ELEMENTS / elements) ** (1.0 / len(shape))
    if scale >= 1.0:
        return None
    return tuple(max(16, int(round(s * scale))) for s in shape)


# ---- the run ---------------------------------------------------------------------------------------------
def machine_description(device_kind: str, info, peers: list[Peer]) -> dict:
    text = {"opencl_device": info.name, "opencl_platform": info.platform, "opencl_driver": info.driver,
            "compute_units": info.compute_units, "python": platform.python_version(), "host": platform.node(),
            "cpu": cpu_name(), "cpu_cores": os.cpu_count(), "load_average": list(os.getloadavg())}
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


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), else what the platform module says."""
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
    parser.add_argument("--device", choices=("nvidia", "cpu"),
                        help="the OpenCL device (name fragment) and which peers to compare with")
    parser.add_argument("--quick", action="store_true", help="small problem sizes (a quick local check)")
    parser.add_argument("--size-scale", type=float, default=None,
                        help="scale the large problem sizes (each side), e.g. 0.5 on a small machine")
    parser.add_argument("--runs", type=int, default=3,
                        help="independent tuning runs per workload (fresh store, own seed); the published ratio is "
                             "their median, with its range (default 3)")
    parser.add_argument("--budget", type=int, default=None,
                        help="configurations each tuning run measures (default: as many as --tune-seconds allows)")
    parser.add_argument("--tune-seconds", type=float, default=None,
                        help="most tuning time per run and workload (0 with no --budget: none; default 20 on a GPU, "
                             "120 on a CPU, where one measurement costs a build and launches of up to a second)")
    parser.add_argument("--tune-scale", type=float, default=None,
                        help="the tuning runs measure on inputs with each side this times the timed size, and "
                             "their three fastest are then timed at the timed size (default: 1 on a GPU; on a CPU "
                             "the scale that brings the problem to about a million elements, where larger)")
    parser.add_argument("--tune-batch", type=int, default=None,
                        help="configurations a tuning run proposes at a time, built in parallel while the worker "
                             "times the others (default 1: one at a time, its next few built ahead, on a CPU "
                             "between the timed launches)")
    parser.add_argument("--warm-caches", action="store_true",
                        help="tuning runs share the build caches (imagecl's, PoCL's, NVIDIA's compute cache) with "
                             "earlier runs on this machine; by default each starts with empty ones, as a first run "
                             "on a fresh machine")
    parser.add_argument("--deadline-minutes", type=float, default=None,
                        help="shorten the tuning of the later workloads so that the run ends in about this time")
    parser.add_argument("--out", default=None, help="default: benchmarks/results of the checkout")
    parser.add_argument("--workloads", "--only", dest="only", default=None, help="comma-separated workloads: " +
                        ",".join(w.key for w in all_workloads()))
    parser.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                        help="join these results of one device (calls on parts of the workload list) into one "
                             "report; nothing is measured")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU peers' threads (default: the OpenCL CPU device's compute units)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed calls per measurement, at least 3 (default 10 GPU, 5 CPU)")
    parser.add_argument("--note", default=None, help="a line for the report (the machine's state, say)")
    parser.add_argument("--tag", default=None,
                        help="results are peers-TAG.*; default the device (plus -quick), e.g. cpu-laptop")
    parser.add_argument("--halide-schedulers", default="Mullapudi2016,Adams2019,Li2018,Anderson2021",
                        help="Halide autoschedulers to try on the CPU (the fastest counts; Anderson2021 schedules "
                             "GPU targets only, so on the CPU it is recorded as not offered, and the GPU run's Halide "
                             "peer uses it); Adams2019 searches for tens of seconds per pipeline")
    parser.add_argument("--benchmarks-md", default=None,
                        help="the file whose peer section is regenerated ('' for none)")
    args = parser.parse_args(argv)
    if args.merge:
        return merge_files(parser, args)
    if args.device is None:
        parser.error("--device is required (or --merge)")
    if args.runs < 1 or (args.budget is not None and args.budget < 1) or (
            args.tune_batch is not None and args.tune_batch < 1):
        parser.error("--runs, --budget and --tune-batch must be at least 1")

    tag = args.tag or (args.device + ("-quick" if args.quick else ""))
    if not tag.replace("-", "").replace("_", "").isalnum():
        parser.error(f"--tag {tag!r}: use letters, digits, '-' and '_' only")
    negative_tuning = args.tune_seconds is not None and args.tune_seconds < 0
    if negative_tuning or (args.size_scale is not None and args.size_scale <= 0) or (
            args.tune_scale is not None and not 0 < args.tune_scale <= 1):
        parser.error("--tune-seconds must be >= 0, --size-scale > 0 and --tune-scale in (0, 1]")
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
    json_path = output_json(args.out, tag)
    out = json_path.parent
    if args.benchmarks_md is None:  # a call writing one named JSON (a part of a split run): none
        args.benchmarks_md = "" if _names_json(args.out) else str(repository() / "BENCHMARKS.md")
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
                  "tune_seconds": args.tune_seconds, "tune_scale": args.tune_scale, "runs": args.runs,
                  "cold_caches": not args.warm_caches, "budget": args.budget, "repeats": repeats,
                  "workloads": [w.key for w in workloads], "records": done, "note": args.note,
                  "seconds": time.time() - started, "tag": tag, "partial": not complete}
        result["machine"]["load_average_after"] = list(os.getloadavg())
        json_path.write_text(json.dumps(result, indent=1, default=_json_default))
        return result

    for index, w in enumerate(workloads):
        tune_seconds = args.tune_seconds
        if args.deadline_minutes:
            # about half of what is left per workload goes to tuning (its runs), the rest to the peers
            left = args.deadline_minutes * 60 - (time.time() - started)
            tune_seconds = max(0.0, min(tune_seconds, 0.5 * left / (len(workloads) - index) / args.runs))
        shape = w.quick if args.quick else w.full
        if args.size_scale and (args.quick or int(np.prod(w.full)) > 1 << 20):  # stereo, raycasting: small already
            shape = tuple(max(16, int(s * args.size_scale)) for s in shape)
        arguments = w.make(shape, rng)
        small = tuning_shape(shape, args.tune_scale, info.kind == "CPU")
        # inputs of their own (not drawn from `rng`: the timed inputs stay those of a run without them)
        tune_arguments = w.make(small, np.random.default_rng(2018 + index)) if small is not None else None
        batch = args.tune_batch or 1
        print(f"[{info.name}] {w.title} {'x'.join(map(str, reversed(shape)))} ...", file=sys.stderr, flush=True)
        record = {"workload": w.key, "title": w.title, "family": w.family, "size": list(reversed(shape)),
                  "boundary": w.boundary, "memory_bound": w.memory_bound, "bytes": w.bytes_moved(arguments),
                  "tune_seconds": tune_seconds}
        t0 = time.time()
        try:
            ours, reference = imagecl_side(w, arguments, device, args.runs, tune_seconds, args.budget,
                                           repeats, max_seconds, tune_arguments, batch, not args.warm_caches)
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
              f"{'-' if tuned is None else f'{tuned * 1e3:.3f} ms'} (runs: "
              + ", ".join(f"{t * 1e3:.3f}" for t in run_times(ours)) + "); "
              + "; ".join(f"{p['peer']}: " + (f"{p['seconds'] * 1e3:.3f} ms" if p["status"] == "ok"
                                             else f"{p['status']} ({p.get('reason', '')[:80]})")
                          for p in record["peers"])
              + f" [{record['wall_seconds']:.0f} s]", file=sys.stderr, flush=True)

    result = save(records, complete=True)
    return write_report(result, json_path, args.benchmarks_md if not args.quick else "")


def _names_json(out: Optional[str]) -> bool:
    return out is not None and out.endswith(".json")


def output_json(out: Optional[str], tag: str) -> Path:
    """Where the result's JSON goes: --out itself when it names a .json file, else
    peers-TAG.json in the --out folder (default benchmarks/results); the .md and .png beside it."""
    if _names_json(out):
        return Path(out)
    folder = Path(out) if out is not None else repository() / "benchmarks" / "results"
    return folder / f"peers-{tag}.json"


def write_report(result: dict, json_path: Path, benchmarks_md: str) -> dict:
    """The Markdown table and plot of a result (its JSON already written), and BENCHMARKS.md's section."""
    from . import peers_report

    table = peers_report.device_section(result)
    json_path.with_suffix(".md").write_text(table + "\n")
    peers_report.plot(result, json_path.with_suffix(".png"))
    out = json_path.parent
    if benchmarks_md:
        peers_report.update_benchmarks_md(out, Path(benchmarks_md))
    print(table)
    return result


def merge_files(parser: argparse.ArgumentParser, args) -> dict:
    """--merge: one result from several calls' JSONs on one device."""
    from .peers_report import merge_results

    parts = []
    for name in args.merge:
        try:
            parts.append(json.loads(Path(name).read_text()))
        except (OSError, ValueError) as exc:
            parser.error(f"--merge {name}: {exc}")
    try:
        result = merge_results(parts)
    except ValueError as exc:
        parser.error(str(exc))
    except (KeyError, TypeError, AttributeError) as exc:
        parser.error(f"--merge: not a result of benchmarks/peers.py (no {exc})")
    tag = args.tag or result["tag"]
    if not tag.replace("-", "").replace("_", "").isalnum():
        parser.error(f"--tag {tag!r}: use letters, digits, '-' and '_' only")
    result["tag"] = tag
    target = output_json(args.out, tag)
    if any(Path(name).resolve() == target.resolve() for name in args.merge):
        parser.error(f"--merge would overwrite its input {target}: give another --tag or --out")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(result, indent=1, default=_json_default))
    if args.benchmarks_md is None:
        args.benchmarks_md = "" if _names_json(args.out) else str(repository() / "BENCHMARKS.md")
    return write_report(result, target, args.benchmarks_md if not result.get("quick") else "")


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")


def main(argv=None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
