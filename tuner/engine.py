"""The measurement engine: configurations in, trustworthy times (or classified failures) out.

- Configurations are completed and checked against the space's constraints all at once
  (validate.py); the invalid ones are recorded in one transaction, without a launch.
- Configurations that share an OpenCL source (they differ only in launch-only parameters) are
  measured together, after one build; sources are generated and built in parallel processes into
  the on-disk build cache while the worker measures those already built (pipeline.py).
- Launches run in a worker process (worker.py). A variant that hangs is stopped by a watchdog
  (the worker is killed and replaced) and recorded as a timeout, with the timeout it had; a
  worker that dies is recorded as a crash; the run goes on. The reference's run, when a worker
  starts, is under the same watchdog: one that hangs is replaced by another (a program's naive
  variant with other `tunable` values), and when none finishes the run stops with an error.
- Results are committed to the store as they arrive, together at most STORE_EVERY seconds apart
  (and whenever the measurement stops, by an error or Ctrl-C too); a restarted run skips what is
  stored, except timeouts recorded with less time than it allows, which are measured again.
"""
from __future__ import annotations

import contextlib
import json
import multiprocessing
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import ImageCLError
from ..runtime.isolated import check_timeout
from ..runtime.timing import Timing
from .buildcache import BuildCache
from .censor import Audit, CensorRule
from .pipeline import Built, BuildPipeline, builds_beside_launches, source_hash
from .spawn import main_module_hidden
from .store import Record, Store, canonical_config, settled
from .target import ProgramTarget, Target, run_key  # noqa: F401 - run_key: part of this module's API
from .validate import plan_measurements
from .worker import worker_main


@dataclass
class MeasureOptions:
    timeout: float = 60.0  # seconds one configuration may take (its build included) before the watchdog
    repeats: int = 3  # timed launches per configuration (at least MIN_TIMED, runtime/timing.py), after a warm-up
    max_repeats: int = 10
    max_spread: float = 0.10  # repeat more while (max - min) / median exceeds this
    build_workers: int = 0  # builder processes; 0: one per CPU core but one (pipeline.builder_count)
    cache_dir: Optional[Path] = None
    prebuild: bool = True
    # prebuild=False (a live search, a few configurations a call): build the sources the search
    # announces (Measurer.prefetch) ahead in builder processes (pipeline.py); None: yes
    build_ahead: Optional[bool] = None
    # builds ahead never overlap a timed launch (pipeline.py's quiet pool: the worker waits for
    # them, announcements come in batches); None: where builds share the measured device's cores
    # (not on a GPU)
    quiet_builds: Optional[bool] = None
    # seconds the builders' pool waits for a build ahead under way before the worker builds it itself;
    # halved whenever one is not done in time (a builder on NVIDIA once took 25 s for a source the
    # worker built in under 1 s), down to taking only finished builds
    ahead_wait: float = 2.0
    deadline: Optional[float] = None  # seconds for the whole call; stops cleanly after the result in flight
    # a checked launch over censor x the best so far is recorded as `slow` (censor.py); 0: off
    censor: float = 0.0
    audit_every: int = 50  # of those, the ones whose key hashes to 0 modulo this are timed anyway
    probe: float = 0.0  # > 0: before its checked launch, a launch of this part of the work-groups (censor.py)

    def __post_init__(self) -> None:
        self.timeout = check_timeout(self.timeout)
        CensorRule(self.censor, self.audit_every, self.probe)  # a clear error for a bad factor


@dataclass
class Summary:
    total: int = 0
    skipped: int = 0  # already in the store
    measured: int = 0
    statuses: Counter = field(default_factory=Counter)
    best_time: Optional[float] = None
    best_config: Optional[dict] = None
    seconds: float = 0.0
    build_seconds: float = 0.0  # waiting for builds (the rest of the building overlaps the launches)
    sources: int = 0
    stopped_early: bool = False  # the deadline passed before every configuration was measured
    notes: list = field(default_factory=list)  # what the user should know (a reference replaced)
    # seconds by phase: the main process's (validate, generate, wait_for_builds, measure: the round
    # trips to the worker; store), the builders' summed (generate_cpu, build_cpu) and the worker's
    # (worker_generate, worker_load: the binary, or a build; worker_launch: checked, timed, settling)
    phases: dict = field(default_factory=dict)
    build_status: Counter = field(default_factory=Counter)  # built, cached, rejected, left (pipeline.Built)
    audits: list = field(default_factory=list)  # censor.Audit: slow ones timed anyway

    @property
    def per_second(self) -> float:
        return self.measured / self.seconds if self.seconds > 0 else 0.0

    def describe(self) -> str:
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(self.statuses.items())) or "none"
        best = (f"best {self.best_time * 1e3:.4f} ms with {json.dumps(self.best_config)}"
                if self.best_time is not None else "no successful measurement")
        return (f"{self.measured} measured ({statuses}), {self.skipped} already stored, "
                f"{self.sources} distinct sources; {self.seconds:.1f} s ({self.per_second:.1f} configurations/s, "
                f"{self.build_seconds:.1f} s waiting for builds); {best}")


# a worker's start up to its reference (Python, pyopencl, the program, the upload and the build
# of the reference) may take this long whatever the timeout: it is not the variants' time
_START_SECONDS = 120.0


class ReferenceTimeout(ImageCLError):
    """The reference did not finish within the timeout when a worker started."""


class _Worker:
    """A worker process and its pipe; replaced whenever it hangs or dies."""

    def __init__(self, setup: dict) -> None:
        self.setup = setup
        self.process = None
        self.conn = None
        self.starts = 0  # processes started, the first included (a restart follows a hang or a crash)
        self.start_seconds = 0.0  # their starts up to ready: spawn, setup, upload, the reference's run

    def _receive(self, seconds: float) -> Optional[dict]:
        """The worker's next message, or None if none came within `seconds`."""
        if not self.conn.poll(seconds):
            return None
        try:
            return self.conn.recv()
        except EOFError:
            code = self.process.exitcode if self.process is not None else None
            self.stop()
            raise ImageCLError(f"the measurement worker died while starting (exit code {code}): the reference "
                               "crashed the driver?") from None

    def start(self, timeout: float) -> None:
        """Start a worker; its reference's run gets `timeout` seconds (ReferenceTimeout after)."""
        began = time.time()
        try:
            self._start(timeout)
        finally:
            self.starts += 1
            self.start_seconds += time.time() - began

    def _start(self, timeout: float) -> None:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        self.process = ctx.Process(target=worker_main, args=(child, self.setup), daemon=True)
        with main_module_hidden():
            self.process.start()
        child.close()
        self.conn = parent
        hello = self._receive(max(timeout, _START_SECONDS))
        if hello is None:
            self.stop()
            raise ImageCLError(f"the measurement worker did not start within {max(timeout, _START_SECONDS):g} s")
        if hello.get("built"):
            hello = self._receive(timeout)
            if hello is None:
                self.stop()
                raise ReferenceTimeout(f"the reference every variant is checked against did not finish within "
                                       f"{timeout:g} s when the measurement worker started")
        if not hello.get("ready"):
            self.stop()
            raise ImageCLError(f"the measurement worker could not start: {hello.get('error')}")

    def stop(self) -> None:
        if self.process is not None and self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        if self.conn is not None:
            self.conn.close()
        self.process, self.conn = None, None

    def measure_group(self, configs: list[dict], timeout: float, repeats: Optional[int] = None,
                      forget: bool = False, censor: Optional[dict] = None, source: Optional[str] = None):
        """Yield one result per configuration, in order: the worker's, or a timeout / crash record
        (after which a fresh worker takes the rest of the group). `repeats` asks for exactly that
        many timed launches each (re-timing), instead of the worker's adaptive count. `forget`: the
        worker drops the group's built program afterwards (it is not measured again). `source`:
        the group's generated source (an `.icl` program's), which the worker then takes as is."""
        pending = list(configs)
        while pending:
            if self.process is None:
                self.start(timeout)
            try:
                self.conn.send({"configs": pending, "repeats": repeats, "forget": forget, "censor": censor,
                                "source": source})
                while pending:
                    if not self.conn.poll(timeout):
                        self.stop()
                        yield {"config": pending.pop(0), "status": "timeout", "time": None, "limit": timeout,
                               "error": f"no result within {timeout:g} s: the kernel hung or ran too long; the "
                                        "worker was killed and restarted"}
                        break
                    result = self.conn.recv()
                    pending.pop(0)
                    yield result
            except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
                code = self.process.exitcode if self.process is not None else None
                self.stop()
                yield {"config": pending.pop(0), "status": "crash", "time": None,
                       "error": f"the measurement worker died (exit code {code})"}


class Measurer:
    """Measures configurations of one target (an `.icl` program on one set of arguments, or a
    hand-written kernel: see target.py) on one device, into a store; keeps its worker between
    calls, so a tuner can ask for a few configurations at a time."""

    def __init__(self, program, arguments: Optional[dict], store: Store, device: Any = None,
                 options: Optional[MeasureOptions] = None) -> None:
        from ..runtime.devices import _all_devices, select_device

        if isinstance(program, Target):
            self.target = program
            self.device = program.device
        else:
            self.device = select_device(device)
            self.target = ProgramTarget(program, dict(arguments or {}), self.device)
        self.store = store
        self.options = options or MeasureOptions()
        self.device_index = list(_all_devices()).index(self.device)
        self.run = self.target.run
        self.space = self.target.space
        self.cache = BuildCache(self.options.cache_dir)
        self.notes: list[str] = []
        self.censor = CensorRule(self.options.censor, self.options.audit_every, self.options.probe)
        self.best: Optional[float] = None  # the best time confirmed (censoring's reference), None: not read yet
        self._unstored: list[Record] = []  # measured, not yet committed (see _store_results)
        self._stored_at = 0.0
        # seconds by phase over every call (Summary.phases, and "start": the worker's starts), for
        # a search's report of where its time went (phase_report)
        self.phases: dict[str, float] = {}
        self.counts: Counter = Counter()  # sources measured, and how each was built (see phase_report)
        self.slowest: list[dict] = []  # the configurations that took the worker longest (_note_slow)
        ahead = self.options.build_ahead
        self.builds_ahead = not self.options.prebuild if ahead is None else bool(ahead)
        quiet = self.options.quiet_builds
        self.quiet_builds = self.builds_ahead and (not builds_beside_launches(self.device) if quiet is None else quiet)
        # the kept pool of builders (pipeline.py): a live search's builds ahead, started by
        # warm_ahead (a search's start) or the first prefetch, or a cluster worker's, reused by
        # every call; None: a pool per call (with prebuild) and nothing built ahead
        self.builders: Optional[BuildPipeline] = None
        # when the search stops (a time.time(); run_session sets it): a quiet pool's builds are not
        # waited for past it
        self.search_deadline: Optional[float] = None
        self.worker = _Worker({**self.target.worker_setup(), "device_index": self.device_index,
                               "cache_dir": str(self.cache.directory), "repeats": self.options.repeats,
                               "max_repeats": self.options.max_repeats, "max_spread": self.options.max_spread})

    def __enter__(self) -> "Measurer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.worker.stop()
        if self.builders is not None:
            self.builders.close()

    @property
    def ahead(self) -> Optional[BuildPipeline]:
        """The pool that builds a live search's proposals ahead, if this measurer does (phases.py)."""
        return self.builders if self.builds_ahead else None

    def warm_ahead(self) -> None:
        """Start the builders when building ahead (a search is about to start), so that they are
        ready by its first announcement; a measurer no search announces to starts none."""
        if self.builds_ahead and self.builders is None:
            self.builders = BuildPipeline.for_search(self.cache, self.device_index, self.device.name.strip(),
                                                     self.device.driver_version.strip(),
                                                     workers=self.options.build_workers, wait=self.options.ahead_wait,
                                                     quiet=self.quiet_builds)
            self.builders.warm()

    def prefetch(self, configs: list[dict]) -> int:
        """Build the sources of `configs` (a search's next proposals) ahead, when building ahead
        (pipeline.py); those stored or invalid are left out. Returns how many builds were queued."""
        if not self.builds_ahead or not configs:
            return 0
        self.warm_ahead()
        t = time.time()
        plan = plan_measurements(self.space, configs, self.store.done_keys(self.run, self.options.timeout))
        queued = self.builders.announce({k: self.target.build_job(g[0]) for k, g in plan.groups.items()})
        self._add_phase("announce", time.time() - t)
        return queued

    def _add_phase(self, phase: str, seconds: float) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + seconds

    # at most this many references are tried (each that hangs costs a timeout)
    REFERENCE_TRIES = 3

    def _start_worker(self, configs: list[dict]) -> None:
        """Start the worker unless it runs, with the first reference that finishes within the
        timeout (see Target.reference_candidates); a clear error when none does."""
        if self.worker.process is not None:
            return
        if "reference_tunables" in self.worker.setup:  # chosen by an earlier start: keep it
            self.worker.start(self.options.timeout)
            return
        timeout = self.options.timeout
        candidates = self.target.reference_candidates(configs, self.REFERENCE_TRIES)
        hung = []
        for candidate in candidates:
            self.worker.setup["reference_tunables"] = candidate
            try:
                self.worker.start(timeout)
            except ReferenceTimeout:
                hung.append(candidate)
                continue
            if hung:
                self.notes.append(
                    f"{self._references(hung)} (the reference every variant is checked against) did not finish "
                    f"within {timeout:g} s; variants are checked against "
                    f"{self.target.describe_reference(candidate)} instead")
            return
        del self.worker.setup["reference_tunables"]
        raise ImageCLError(
            f"{self._references(hung)}, the reference every variant is checked against, did not finish within "
            f"{timeout:g} s: it hangs or needs more time (a larger --timeout); nothing was measured")

    def _references(self, candidates: list) -> str:
        names = [self.target.describe_reference(c) for c in candidates]
        return names[0] if len(names) == 1 else "neither " + " nor ".join(names)

    def settled(self, record: Record) -> bool:
        """Whether a stored record stands for this run: any result but a timeout recorded with a
        smaller limit than this run's (or with none), which is measured again."""
        return settled(record, self.options.timeout)

    def stored(self, key: Optional[str] = None) -> dict[str, Record]:
        """What the store already holds for this program, device, driver and problem size (only
        the configuration with canonical key `key`, if given)."""
        return {canonical_config(r.config): r for r in self.store.records(self.run, key)}

    def measure(self, configs: list[dict], progress: Optional[Callable[[int, int, Summary], None]] = None,
                upcoming: Optional[list[dict]] = None) -> Summary:
        """Measure `configs` (those already stored are skipped); every result goes to the store.
        `upcoming`: configurations a later call will probably measure, whose sources a kept
        pipeline builds after these (ignored without one)."""
        options, store, run, space, target = self.options, self.store, self.run, self.space, self.target
        summary = Summary(total=len(configs))
        start = time.time()
        done = store.done_keys(run, options.timeout)
        if self.censor.factor and self.best is None and done:
            # a resumed run censors from its first launch on: the best that the store holds
            self.best = min((r.time for r in store.records(run) if r.status == "ok" and r.time), default=None)
        plan = plan_measurements(space, configs, done)
        groups, invalid = plan.groups, plan.invalid
        summary.skipped += plan.skipped
        if invalid:
            summary.statuses["invalid_config"] += len(invalid)
        summary.sources = len(groups)
        summary.phases["validate"] = time.time() - start
        if invalid:
            t = time.time()
            store.add_many(run, invalid)  # one transaction: recorded without a launch, thousands at once
            summary.phases["store"] = time.time() - t

        todo = sum(len(g) for g in groups.values())
        if not groups:
            summary.seconds = time.time() - start
            return summary
        self._unstored, self._stored_at = [], time.time()
        try:
            if options.prebuild:
                self._measure_pipelined(groups, summary, start, todo, progress, upcoming)
            else:
                t = time.time()
                builds = {k: source_hash(*target.build_input(g[0])) for k, g in groups.items()}
                summary.phases["generate"] = time.time() - t
                self._start_worker([c for g in groups.values() for c in g])
                summary.notes = list(self.notes)
                for source_key, group in groups.items():
                    if options.deadline is not None and time.time() - start > options.deadline:
                        summary.stopped_early = True
                        break
                    built = self._take_ahead(source_key, summary)
                    # a build ahead is handed over as the pipelined path's are: its source and hash
                    self._measure_group(group, built.source_hash if built is not None and built.source_hash
                                        else builds[source_key], summary, start, todo, progress,
                                        built.source if built is not None else None)
        finally:
            self._store_results(summary)  # also on Ctrl-C or an error: what was measured is kept
            for phase, seconds in summary.phases.items():
                self._add_phase(phase, seconds)
            self.counts["sources"] += summary.sources
        summary.seconds = time.time() - start
        return summary

    def _settle_builds(self, phases: dict[str, float]) -> None:
        """With a quiet pool: wait until no builder runs, before the worker times anything."""
        if self.builders is not None and self.builders.quiet:
            waited = self.builders.settle(self.search_deadline)
            phases["wait_for_quiet"] = phases.get("wait_for_quiet", 0.0) + waited

    def _take_ahead(self, source_key: str, summary: Summary) -> Optional[Built]:
        """The source's build ahead, if one was announced and is done within the pool's bounded
        wait (BuildPipeline.take); None: the worker builds it itself."""
        if self.ahead is None:
            return None
        t = time.time()
        built = self.ahead.take(source_key, self.search_deadline)
        summary.phases["wait_for_ahead"] = summary.phases.get("wait_for_ahead", 0.0) + time.time() - t
        self.counts["ahead_" + (built.status if built is not None else "none")] += 1
        return built

    def _measure_pipelined(self, groups: dict[str, list[dict]], summary: Summary, start: float, todo: int,
                           progress, upcoming: Optional[list[dict]] = None) -> None:
        """Measure the groups as their sources are built, in parallel, into the build cache
        (pipeline.py); the worker loads each binary from there."""
        options = self.options
        jobs = {k: self.target.build_job(g[0]) for k, g in groups.items()}
        later = {}
        if upcoming and self.builders is not None:
            plan = plan_measurements(self.space, upcoming, self.store.done_keys(self.run, options.timeout))
            later = {k: self.target.build_job(g[0]) for k, g in plan.groups.items() if k not in jobs}
        device = self.device
        kept = self.builders is not None
        pipeline = self.builders or BuildPipeline(self.cache, self.device_index, device.name.strip(),
                                                  device.driver_version.strip(), workers=options.build_workers)
        with contextlib.nullcontext() if kept else pipeline:
            waited = time.time()
            for source_key, built in pipeline.results(jobs, later):
                summary.phases["wait_for_builds"] = summary.phases.get("wait_for_builds", 0.0) + time.time() - waited
                summary.phases["generate_cpu"] = summary.phases.get("generate_cpu", 0.0) + built.generate_seconds
                summary.phases["build_cpu"] = summary.phases.get("build_cpu", 0.0) + built.build_seconds
                summary.build_status[built.status] += 1
                if options.deadline is not None and time.time() - start > options.deadline:
                    summary.stopped_early = True
                    break
                group = groups[source_key]
                if self.worker.process is None:
                    self._start_worker([c for g in groups.values() for c in g])
                    summary.notes = list(self.notes)
                hashed = built.source_hash
                if hashed is None:  # left to the worker (a builder crashed or timed out): hash it here
                    try:
                        hashed = source_hash(*self.target.build_input(group[0]))
                    except Exception:  # noqa: BLE001 - the worker records why it cannot be generated
                        pass
                self._measure_group(group, hashed, summary, start, todo, progress, built.source)
                waited = time.time()
        summary.build_seconds = summary.phases.get("wait_for_builds", 0.0)

    def _measure_group(self, group: list[dict], source: Optional[str], summary: Summary, start: float, todo: int,
                       progress, text: Optional[str] = None) -> None:
        """Measure one source's configurations in the worker (`text`: their source, generated by
        a builder); each result goes to the store."""
        self._settle_builds(summary.phases)
        t = time.time()
        stored = 0.0
        restarts = self.worker.start_seconds  # a restart (after a hang or a crash) is the "start" phase's
        censor = self.censor.to_message(self.best) if self.censor.factor else None
        for result in self.worker.measure_group(group, self.options.timeout, forget=self.options.prebuild,
                                                censor=censor, source=text):
            config = result["config"]
            audit = result.pop("audit", None)
            if audit is not None:
                summary.audits.append(Audit(config, audit["first"], audit["median"], audit["best"], audit.get("probe")))
            spent = result.pop("seconds", None) or {}
            for phase, seconds in spent.items():
                summary.phases["worker_" + phase] = summary.phases.get("worker_" + phase, 0.0) + seconds
            self._note_slow(config, result["status"], spent)
            record = Record(config, result["status"], result.get("time"), result.get("times", []),
                            result.get("spread"), result.get("error"), bool(result.get("verified")),
                            source, limit=result.get("limit"))
            self._unstored.append(record)
            if time.time() - self._stored_at > self.STORE_EVERY:
                s = time.time()
                self._store_results(summary)
                stored += time.time() - s
            summary.measured += 1
            summary.statuses[record.status] += 1
            if record.time is not None and (summary.best_time is None or record.time < summary.best_time):
                summary.best_time, summary.best_config = record.time, config
            if record.time is not None and (self.best is None or record.time < self.best):
                self.best = record.time
            summary.seconds = time.time() - start
            if progress is not None:
                progress(summary.measured, todo, summary)
        restarts = self.worker.start_seconds - restarts
        summary.phases["measure"] = summary.phases.get("measure", 0.0) + time.time() - t - stored - restarts

    SLOWEST = 5  # configurations kept in `slowest`

    def _note_slow(self, config: dict, status: str, spent: dict) -> None:
        """Keep the SLOWEST configurations by the worker's seconds (for the phase report)."""
        total = sum(v for k, v in spent.items() if k != "kernel")
        self.slowest.append({"seconds": round(total, 4), "status": status, "config": dict(config),
                             "phases": {k: round(v, 4) for k, v in spent.items()}})
        self.slowest.sort(key=lambda e: -e["seconds"])
        del self.slowest[self.SLOWEST:]

    # results are committed together at most this many seconds apart: a synchronous commit of
    # its own per result costs milliseconds (4 ms on the 2-core machine), minutes over a whole
    # space; a run killed outright loses at most these seconds of results
    STORE_EVERY = 1.0

    def _store_results(self, summary: Summary) -> None:
        unstored, self._unstored = self._unstored, []
        t = time.time()
        if unstored:
            self.store.add_many(self.run, unstored)
        self._stored_at = time.time()
        summary.phases["store"] = summary.phases.get("store", 0.0) + self._stored_at - t

    def retime(self, configs: list[dict], repeats: int = 15, rounds: int = 5,
               progress: Optional[Callable[[int, int, Any], None]] = None) -> dict[str, Record]:
        """Time stored, successful configurations again with `repeats` more launches each and store
        the median of all their launches: for the few contenders whose order decides the result,
        where the handful of launches of the search cannot tell apart differences of a few percent
        on a noisy device. The launches are spread over `rounds` rounds that take the contenders in
        turn (forward, then backward): the load of a shared machine drifts over seconds, by 5% or
        more between two consecutive series of launches of one configuration on the 16-core Xeon
        (benchmarks/timing_noise.py), and timing one contender after the other would turn that
        drift into an order. Configurations whose record already holds `repeats` launches are not
        timed again. Returns the records of the configurations given, by canonical key (failures
        left out). `progress` is called with (series done, series, None) after each series of launches."""
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
            raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
        if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
            raise ValueError(f"rounds must be a positive integer, got {rounds!r}")
        self._settle_builds(self.phases)  # a search's last builds ahead may still be under way
        begun = time.time()
        stored = self.stored()
        updated: dict[str, Record] = {}
        groups: dict[str, list[dict]] = {}
        for config in configs:
            full = self.space.complete(config)
            key = canonical_config(full)
            old = stored.get(key)
            if old is None or old.time is None:
                continue  # nothing to refine: never measured here, or failed
            if len(old.times) >= repeats:
                updated[key] = old  # timed at length already (an earlier run's confirmation): not again
                continue
            groups.setdefault(canonical_config(self.space.source_key(full)), []).append(full)
        launches: dict[str, list[float]] = {}
        failed: set[str] = set()
        order = list(groups.values())
        if order:
            self._start_worker([c for g in order for c in g])
        series = interleaved_rounds(len(order), repeats, rounds)
        for step, (index, share) in enumerate(series):
            for result in self.worker.measure_group(order[index], self.options.timeout, repeats=share):
                key = canonical_config(result["config"])
                if result.get("time") is None:
                    failed.add(key)  # a contender that fails now (a flaky device) keeps what was measured
                else:
                    launches.setdefault(key, []).extend(result.get("times", []))
            if progress is not None:
                progress(step + 1, len(series), None)
        for key, times in launches.items():
            if key in failed:
                continue
            old = stored[key]
            timing = Timing(list(old.times) + times)
            record = Record(old.config, old.status, timing.median, timing.times, timing.spread, old.error,
                            old.verified, old.source_hash)
            self.store.add(self.run, record)
            updated[key] = record
        self._add_phase("confirm", time.time() - begun)
        return updated


def interleaved_rounds(count: int, repeats: int, rounds: int) -> list[tuple[int, int]]:
    """The order in which `retime` times `count` groups of contenders: (group, launches) pairs,
    `rounds` rounds (at most one per launch) that take every group in turn, forward then backward
    (so that a steady drift of the machine favours none), and `repeats` launches per group in all."""
    rounds = min(rounds, repeats)
    plan = []
    for turn in range(rounds):
        share = repeats // rounds + (turn < repeats % rounds)
        groups = range(count) if turn % 2 == 0 else range(count - 1, -1, -1)
        plan.extend((group, share) for group in groups)
    return plan


def measure(program, arguments: dict, configs: list[dict], store: Store, device: Any = None,
            options: Optional[MeasureOptions] = None,
            progress: Optional[Callable[[int, int, Summary], None]] = None) -> Summary:
    """Measure `configs` of `program` on `arguments`; results go to `store`."""
    with Measurer(program, arguments, store, device, options) as measurer:
        return measurer.measure(configs, progress)
