"""The builders: one pool of processes that generates and builds sources for a measurement's
device while the device runs the built ones, used by every path that builds in parallel.

Each builder process generates a source from its job (an `.icl` program's configuration: code
generation runs in the builders too), builds it for the measurement's device in its own OpenCL
context and writes the binary, or the compiler's verdict, to the on-disk build cache, where the
measurement worker picks it up (`launcher.preload`: a program made from NVIDIA's PTX or PoCL's
binary, much cheaper than a build from source). A `Built` carries the generated source too,
which the engine hands to the worker with the group (so it is not generated again there).

One API, two ways of asking:
- `results(jobs)`: build these now; (name, Built) as each build finishes, so the engine measures
  each source's configurations as soon as it is built, while the builders go on with the rest
  (a measurement with `prebuild`).
- `announce(jobs)` then `take(name)` (a pool made with `keep=True`): build these ahead, in order,
  while the device runs something else; a later `take` returns a build if it is done within a
  bounded wait (`wait` seconds, halved at each build that was late: a builder far slower than the
  worker costs little), else None and the worker builds it now under its watchdog. A new
  announcement drops the builds of the previous one that have not started. A live search on a GPU
  announces its next proposals (`Measurer.prefetch`); a cluster worker's `results(jobs, ahead)`
  announces its successor task's sources behind its own, and the next call takes those under way
  instead of starting them again.
- A quiet pool (`quiet=True`, a live search on a CPU device, whose timings builders on the same
  cores would disturb) takes announcements in batches (one whose first source is still announced
  from before adds nothing: a walk going on down its ranking, so the next batch's builds start
  together) and builds them in rounds: an announcement is kept in order, and a round of up to
  one build per builder starts when the announcement is made and whenever `take` asks for a
  source that no round has built yet; `take` waits for that round, and `settle` (which the
  measurer calls before every timed launch) waits until no build of it is under way. So the
  builds share every core while nothing is timed, and what a round built is timed before the
  next round starts.
A kept pool (a live search's, a Dask worker's: tuner/cluster.py) keeps its builders and their
OpenCL contexts between calls; otherwise the pool lives for one `results` call.

Announcing changes nothing that is measured, nor its order. A builder that crashes (a compiler
that aborts) breaks the pool: the jobs its builders were on (each writes which, beside the pool)
are left to the measurement worker, which builds them itself under its watchdog and records what
happens; the others go to a fresh pool. A job that times out or cannot be generated is left to
the worker too. On leaving early (an exception, Ctrl-C, the deadline) or `close` the builders are
killed, so none outlives the run.
"""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import shutil
import signal
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Optional

from .buildcache import BuildCache, build_key
from .spawn import main_module_hidden
from .store import text_hash

Job = dict  # picklable: {"kind": "source", "source", "options"} or {"kind": "icl", "program", "filename", "config"}


def source_hash(source: str, options) -> str:
    """The hash a record keeps of the source (and build options) it was measured from."""
    return text_hash(source + "\0" + " ".join(options) if options else source)


@dataclass
class Built:
    """What became of one job."""

    status: str  # "built", "cached" (built before), "rejected" (the compiler's error, cached), "left" (see below)
    source_hash: Optional[str] = None
    generate_seconds: float = 0.0  # code generation, in the builder
    build_seconds: float = 0.0  # the OpenCL build, in the builder
    error: Optional[str] = None  # "left": why the measurement worker builds it itself
    source: Optional[str] = None  # the generated source (the measurement worker need not generate it again)


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 2


def builder_count(requested: int = 0, sharing: int = 1) -> int:
    """Builders: as requested, else one per core but one (the measurement worker's), of this
    host's cores divided among the `sharing` measurements that run on it at once."""
    return requested if requested > 0 else max(1, usable_cores() // max(1, sharing) - 1)


class BuildPipeline:
    """A pool of builder processes: `results` builds jobs now, `announce` and `take` ahead."""

    RETRIES = 1  # pools broken with no job known to be in flight, before the rest is left to the worker
    AHEAD_MOST = 6  # builders of a live search's pool unless asked for more (see for_search)
    QUIET_MOST = 16  # builders of a quiet pool: nothing is timed while they build (see for_search)

    def __init__(self, cache: BuildCache, device_index: int, device_name: str, driver: str, workers: int = 0,
                 timeout: float = 120.0, keep: bool = False, wait: float = 2.0, quiet: bool = False) -> None:
        self.cache = cache
        self.device = (device_index, device_name, driver)
        self.workers = builder_count(workers)
        self.timeout = timeout  # seconds one build may take (the pool's share of it: see results)
        self.keep = keep  # the pool outlives a results() call (see the module docstring)
        self.wait = max(0.0, float(wait))  # seconds `take` waits for a build under way (halved when late)
        self.quiet = quiet  # builds never overlap the timing: take waits them out, settle before timing
        self._warming: list[concurrent.futures.Future] = []  # the builders' starts (warm), which settle waits for too
        self._waiting: dict[str, Job] = {}  # a quiet pool's announced builds not in a round yet, in order
        self.pool: Optional[concurrent.futures.ProcessPoolExecutor] = None
        self.starts = 0  # pools started so far
        self._marks: Optional[str] = None  # where each builder writes the job it is on (see _build_job)
        self._queued: dict[str, concurrent.futures.Future] = {}  # kept pool: builds under way or not yet taken
        # announced, cancelled, waited_too_long, crashed, and per Built status of the builds taken
        self.counts: Counter = Counter()
        self.seconds = {"generate_cpu": 0.0, "build_cpu": 0.0}  # the builders', summed over the builds taken

    @classmethod
    def for_search(cls, cache: BuildCache, device_index: int, device_name: str, driver: str, workers: int = 0,
                   wait: float = 2.0, quiet: bool = False) -> "BuildPipeline":
        """A kept pool for a live search's builds ahead: a search announces a handful at a time
        (a first stage's sample, a walk's next few); more builders than AHEAD_MOST would only add
        processes creating contexts and compiling beside the launches. A quiet pool builds while
        nothing is timed, so it takes every core but the worker's (up to QUIET_MOST)."""
        most = cls.QUIET_MOST if quiet else cls.AHEAD_MOST
        return cls(cache, device_index, device_name, driver, workers or min(builder_count(), most),
                   keep=True, wait=wait, quiet=quiet)

    def __enter__(self) -> "BuildPipeline":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Kill the builders (a no-op once every result was taken without `keep`)."""
        self._stop(kill=True)

    def warm(self) -> None:
        """Start a kept pool's builders now (Python, pyopencl, the device's context), while the
        worker starts and the baseline runs, rather than when the first announcement waits for them."""
        if self.keep and self.pool is None:
            pool = self._start(self.workers)
            with main_module_hidden():
                self._warming = [pool.submit(_warm, self.device[0]) for _ in range(self.workers)]

    def _start(self, count: int) -> concurrent.futures.ProcessPoolExecutor:
        if self.pool is not None and not getattr(self.pool, "_broken", False):
            return self.pool  # kept from an earlier call
        self._stop(kill=True, forget_announced=False)  # a quiet pool's next rounds run in the new pool
        context = multiprocessing.get_context("spawn")
        size = self.workers if self.keep else max(1, min(self.workers, count))
        self.pool = concurrent.futures.ProcessPoolExecutor(max_workers=size, mp_context=context,
                                                           initializer=_ignore_interrupts)
        self._marks = tempfile.mkdtemp(prefix="imagecl-builders-")
        self.starts += 1
        return self.pool

    def _stop(self, kill: bool, forget_announced: bool = True) -> None:
        """Stop the builders and drop their builds; `forget_announced`: a quiet pool's announced
        builds not in a round yet too (kept where a new pool is started for them)."""
        pool, self.pool = self.pool, None
        self._queued.clear()
        if forget_announced:
            self._waiting.clear()
        self._warming = []
        marks, self._marks = self._marks, None
        if marks is not None:
            shutil.rmtree(marks, ignore_errors=True)
        if pool is None:
            return
        if kill:
            kill_pool(pool)
        else:
            pool.shutdown(wait=True, cancel_futures=True)

    def _submit(self, pool, name: str, job: Job) -> concurrent.futures.Future:
        future = self._queued.get(name)
        if future is None or future.cancelled():
            future = pool.submit(_build_job, self.device, str(self.cache.directory), name, job,
                                 os.path.join(self._marks, "%d"))
            if self.keep:
                self._queued[name] = future
        return future

    def _drop_unwanted(self, wanted) -> None:
        """Cancel the builds queued ahead, not started yet, that are not in `wanted` (the plans changed)."""
        for name, future in list(self._queued.items()):
            if name not in wanted and future.cancel():
                del self._queued[name]
                self.counts["cancelled"] += 1

    def announce(self, jobs: Mapping[str, Job]) -> int:
        """Build `jobs` (name -> job) ahead, in their order, for a later `take` or `results`; the
        builds of an earlier announcement not yet started and not in `jobs` are dropped (a quiet
        pool: see the module's docstring). Returns how many builds were queued (those queued
        already are not queued again)."""
        if not self.keep:
            raise ValueError("building ahead needs a kept pool (keep=True)")
        if self.quiet and jobs and self.queued(next(iter(jobs))):
            return 0  # the batch announced before goes on
        self._drop_unwanted(jobs)
        before = self.counts["announced"]
        if self.quiet:
            for name in [n for n in self._waiting if n not in jobs]:
                del self._waiting[name]
                self.counts["cancelled"] += 1
            for name, job in jobs.items():
                if not self.queued(name):
                    self._waiting[name] = job
                    self.counts["announced"] += 1
            if not any(not f.done() for f in self._queued.values()):
                self._next_round()
            return self.counts["announced"] - before
        try:
            pool = self._start(len(jobs))
            with main_module_hidden():  # the pool starts its processes as jobs are submitted
                self._queue_ahead(pool, jobs)
        except RuntimeError:  # a broken pool (a builder crashed): the worker builds the rest itself
            self._stop(kill=True)
        return self.counts["announced"] - before

    def _next_round(self, first: Optional[str] = None) -> None:
        """A quiet pool's next round: `first`, then the earliest announced, one per builder."""
        names = list(self._waiting)
        if first in self._waiting:
            names.remove(first)
            names.insert(0, first)
        names = names[:self.workers]
        if not names:
            return
        self.counts["rounds"] += 1
        try:
            pool = self._start(len(names))
            with main_module_hidden():
                for name in names:
                    self._submit(pool, name, self._waiting.pop(name))
        except RuntimeError:  # a broken pool (a builder crashed): the worker builds the rest itself
            self._stop(kill=True)

    def _queue_ahead(self, pool: concurrent.futures.ProcessPoolExecutor, jobs: Mapping[str, Job]) -> None:
        """Submit the `jobs` not queued already, for a later `take` or `results` (counted as announced)."""
        for name, job in jobs.items():
            if name not in self._queued:
                self._submit(pool, name, job)
                self.counts["announced"] += 1

    def queued(self, name: str) -> bool:
        """Whether `name` was announced and not taken yet (under way, queued or done)."""
        future = self._queued.get(name)
        return name in self._waiting or (future is not None and not future.cancelled())

    def take(self, name: str, until: Optional[float] = None) -> Optional[Built]:
        """The build of `name` if it was announced, waited for up to `wait` seconds; None when it
        was not announced, was dropped, is still queued, failed or is late: the worker builds it
        now. A late build halves the wait, down to taking finished builds only. A quiet pool waits
        for an announced build until the build's timeout, starting the next round for it if no
        round has built it (the worker would build it on the cores the builders use, in no less
        time), or until `until` (a search's deadline)."""
        if self.quiet and name in self._waiting:
            self.settle(until)  # the round under way (none, when the measurer settled before timing)
            self._next_round(first=name)
        future = self._queued.pop(name, None)
        if future is None or future.cancelled():
            return None
        if not self.quiet and not future.running() and not future.done() and future.cancel():
            self.counts["cancelled"] += 1  # still queued: the worker builds it now rather than wait for a builder
            return None
        try:
            built = future.result(timeout=self._bounded(until) if self.quiet else self.wait)
        except concurrent.futures.TimeoutError:
            self.counts["waited_too_long"] += 1
            self.wait = self.wait / 2 if self.wait > 0.25 else 0.0
            return None
        except BrokenProcessPool:  # a crashed builder: the worker builds it under
            self.counts["crashed"] += 1  # its watchdog, and the pool starts again
            self._stop(kill=True)
            return None
        except Exception:  # noqa: BLE001 - this build alone failed (the others announced go on)
            self.counts["failed"] += 1
            return None
        self.counts[built.status] += 1
        self.seconds["generate_cpu"] += built.generate_seconds
        self.seconds["build_cpu"] += built.build_seconds
        return built

    def _bounded(self, until: Optional[float]) -> float:
        """One build's timeout, or less: the seconds left before `until` (a time.time())."""
        return self.timeout if until is None else max(0.0, min(self.timeout, until - time.time()))

    def settle(self, until: Optional[float] = None) -> float:
        """Wait until no build (nor a builder's start) is under way, so that a launch timed next
        shares its cores with none; returns the seconds waited. A round's builds run side by side,
        so those unfinished after one build's timeout, or at `until` (a search's deadline), are
        killed with the pool (the worker builds those itself, should it need them)."""
        pending = [f for f in [*self._warming, *self._queued.values()] if not f.done()]
        if not pending:
            return 0.0
        t = time.perf_counter()
        _, late = concurrent.futures.wait(pending, timeout=self._bounded(until))
        if late:
            self.counts["settle_timeouts"] += len(late)
            self._stop(kill=True)
        self._warming = []
        return time.perf_counter() - t

    def results(self, jobs: Mapping[str, Job], ahead: Optional[Mapping[str, Job]] = None
                ) -> Iterator[tuple[str, Built]]:
        """(name, Built) for every job, as its build finishes (taking over the builds already
        announced). `ahead` (a kept pool only): announced behind these, for a later call."""
        pending = dict(jobs)
        blind = 0  # pools broken with no job found in flight
        while pending:
            pool = self._start(len(pending))
            with main_module_hidden():  # the pool starts its processes as jobs are submitted
                futures = {self._submit(pool, name, job): name for name, job in pending.items()}
                if self.keep:
                    later = {name: job for name, job in (ahead or {}).items() if name not in pending}
                    self._drop_unwanted(set(pending) | set(later))
                    self._queue_ahead(pool, later)
            crashed: dict[str, Job] = {}
            taken = set()
            # a job waits for the ones ahead of it: the whole queue's share of the timeout
            queued = len(set(self._queued.values()) | set(futures))
            budget = self.timeout * max(1.0, queued / self.workers)
            try:
                for future in concurrent.futures.as_completed(futures, timeout=budget):
                    name = futures[future]
                    taken.add(name)
                    if self._queued.get(name) is future:
                        del self._queued[name]
                    try:
                        yield name, future.result()
                    except BrokenProcessPool:
                        crashed[name] = pending[name]
                    except Exception as exc:  # noqa: BLE001 - the worker builds it and records what happens
                        yield name, Built("left", error=f"the build process failed: {exc}")
            except concurrent.futures.TimeoutError:
                self._stop(kill=True)
                for future, name in futures.items():
                    if name in taken:
                        continue
                    if future.done() and not future.cancelled() and future.exception() is None:
                        yield name, future.result()
                    else:
                        yield name, Built("left", error="the build timed out")
                return
            # the jobs a crashed pool's builders were building when it broke: left to the
            # measurement worker; the others are tried again in a fresh pool
            suspects = set()
            if crashed:
                for mark in os.listdir(self._marks):
                    with open(os.path.join(self._marks, mark)) as f:
                        suspects.add(f.read())
            if crashed or not self.keep:
                self._stop(kill=bool(crashed))
            suspects &= set(crashed)
            blind = blind + 1 if crashed and not suspects else 0
            for name in list(crashed):
                if name in suspects or blind > self.RETRIES:
                    del crashed[name]
                    yield name, Built("left", error="the build process died (the compiler crashed?)")
            pending = crashed


def kill_pool(pool: concurrent.futures.ProcessPoolExecutor, seconds: float = 10.0) -> None:
    """Stop a pool of builders now: queued builds are cancelled and builds under way killed.
    The pool's own table of processes is kept (shutdown drops the pool's reference to it, and its
    manager thread may still be adding a process it was starting), and emptied until every
    process in it is dead."""
    table = getattr(pool, "_processes", None) or {}
    seen: dict[int, Any] = {}
    pool.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + seconds
    while True:
        seen.update(dict(table))
        alive = [p for p in seen.values() if p.is_alive()]
        if not alive or time.monotonic() > deadline:
            break
        for process in alive:
            process.kill()
        for process in alive:
            process.join(1)


def _ignore_interrupts() -> None:
    # Ctrl-C reaches the whole process group: the engine stops the builders itself
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # a parent killed outright (a Dask worker's SIGKILL) cannot stop its builders, and an idle
    # builder never learns of it (it holds its queue's pipe open itself): it watches its parent
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="imagecl-parent-watch").start()


_PROGRAMS: dict[tuple[str, str], Any] = {}


def job_source(job: Job, device) -> tuple[str, tuple[str, ...], Optional[tuple[Any, Any]]]:
    """The OpenCL source and build options of a job, and for an `.icl` program (whose source is
    generated here, from a program compiled once per builder) its program and plan."""
    if job["kind"] == "source":
        return job["source"], tuple(job["options"]), None
    import imagecl

    key = (job["program"], job["filename"])
    program = _PROGRAMS.get(key)
    if program is None:
        program = _PROGRAMS[key] = imagecl.compile(job["program"], job["filename"])
    plan = program.plan(dict(job["config"]), device)
    return program.source_of(plan), (), (program, plan)


def _warmer(job: Job, device, variant: Optional[tuple[Any, Any]]) -> Optional[Callable[[Any], Any]]:
    """What compiles the work-group function of an `.icl` job's `variant` (its program and plan)
    in the builder, on a CPU device whose compiler does that at the first launch (PoCL:
    runtime/warm.py); None elsewhere (a GPU's binary is complete, and a launch there would run
    beside the timed ones)."""
    import pyopencl as cl

    if variant is None or not job.get("arguments") or device.type & cl.device_type.GPU:
        return None
    from imagecl.runtime.warm import warm_launch

    program, plan = variant
    return lambda built: warm_launch(program, plan, job["arguments"], device, built)


def _build_job(device: tuple[int, str, str], cache_dir: str, name: str, job: Job, mark: str) -> Built:
    """Build one job in a builder process; `mark` % pid names the file that says which job this
    builder is on while it builds (so that a crash can be pinned on it)."""
    from imagecl.runtime.devices import _all_devices

    from .buildcache import _build_in_child

    index, device_name, driver = device
    cl_device = _all_devices()[index]
    start = time.perf_counter()
    try:
        source, options, variant = job_source(job, cl_device)
    except Exception as exc:  # noqa: BLE001 - the worker generates it again and records the error
        return Built("left", error=f"{type(exc).__name__}: {exc}", generate_seconds=time.perf_counter() - start)
    generated = time.perf_counter()
    cache = BuildCache(cache_dir)
    key = build_key(source, options, device_name, driver)
    done = Built("cached", source_hash(source, options), generated - start, source=source)
    if cache.path(key).exists() or cache.error(key) is not None:
        return done
    mark = mark % os.getpid()
    with open(mark, "w") as f:
        f.write(name)
    binary, log = _build_in_child(index, source, options, _warmer(job, cl_device, variant))
    os.remove(mark)
    done.build_seconds = time.perf_counter() - generated
    if binary is not None:
        cache.put(key, binary)
        done.status = "built"
    else:
        cache.put_error(key, log or "unknown build error")
        done.status = "rejected"
    return done


def _warm(device_index: int) -> None:
    """A builder's start: what every build needs (pyopencl, the device's context, the code generator)."""
    import imagecl  # noqa: F401 - imported once per builder, as the builds need it
    from imagecl.runtime.devices import _all_devices, context_and_queue

    context_and_queue(_all_devices()[device_index])


def builds_beside_launches(device) -> bool:
    """Whether builds may run while kernels are timed: on a GPU, whose builds run on host cores
    the measured kernels do not use; not on a CPU device, whose timings the builders would
    disturb (its pool is quiet: BuildPipeline.settle before each timed launch)."""
    import pyopencl as cl

    try:
        return bool(device.type & cl.device_type.GPU)
    except Exception:  # noqa: BLE001 - a device without the query: keep the plain path
        return False
