"""Building the distinct sources of a measurement on every core while the device runs the built ones.

Each builder process generates a source from its job (an `.icl` program's configuration: code
generation runs in the builders too), builds it for the measurement's device in its own OpenCL
context and writes the binary, or the compiler's verdict, to the on-disk build cache, where the
measurement worker picks it up (`launcher.preload`: a program made from NVIDIA's PTX or PoCL's
binary, much cheaper than a build from source). The engine measures each source's configurations
as soon as its build is done, in the order the builds finish, while the builders go on with the
rest.

A builder that crashes (a compiler that aborts) breaks the pool: the jobs its builders were on
(each writes which, beside the pool) are left to the measurement worker, which builds them itself
under its watchdog and records what happens; the others go to a fresh pool. A job that times out
or cannot be generated is left to the worker too. On leaving the `with` block early (an
exception, Ctrl-C, the deadline) the builders are killed, so none outlives the run.

A pipeline made with `keep=True` (a Dask worker's, tuner/cluster.py) keeps its pool between
`results` calls, so its builders start once and keep their OpenCL contexts; `results(jobs,
ahead)` also queues `ahead` (what the next call will probably ask for) behind the jobs, and a
later call takes the builds already under way instead of starting them again.
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
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional

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
    """Builds jobs in a pool of processes; `results` yields (name, Built) as builds finish."""

    RETRIES = 1  # pools broken with no job known to be in flight, before the rest is left to the worker

    def __init__(self, cache: BuildCache, device_index: int, device_name: str, driver: str, workers: int = 0,
                 timeout: float = 120.0, keep: bool = False) -> None:
        self.cache = cache
        self.device = (device_index, device_name, driver)
        self.workers = builder_count(workers)
        self.timeout = timeout  # seconds one build may take (the pool's share of it: see results)
        self.keep = keep  # the pool outlives a results() call (see the module docstring)
        self.pool: Optional[concurrent.futures.ProcessPoolExecutor] = None
        self.starts = 0  # pools started so far
        self._marks: Optional[str] = None  # where each builder writes the job it is on (see _build_job)
        self._queued: dict[str, concurrent.futures.Future] = {}  # kept pool: builds under way or not yet taken

    def __enter__(self) -> "BuildPipeline":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Kill the builders (a no-op once every result was taken without `keep`)."""
        self._stop(kill=True)

    def _start(self, count: int) -> concurrent.futures.ProcessPoolExecutor:
        if self.pool is not None and not getattr(self.pool, "_broken", False):
            return self.pool  # kept from an earlier call
        self._stop(kill=True)
        context = multiprocessing.get_context("spawn")
        size = self.workers if self.keep else max(1, min(self.workers, count))
        self.pool = concurrent.futures.ProcessPoolExecutor(max_workers=size, mp_context=context,
                                                           initializer=_ignore_interrupts)
        self._marks = tempfile.mkdtemp(prefix="imagecl-builders-")
        self.starts += 1
        return self.pool

    def _stop(self, kill: bool) -> None:
        pool, self.pool = self.pool, None
        self._queued.clear()
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

    def results(self, jobs: Mapping[str, Job], ahead: Optional[Mapping[str, Job]] = None
                ) -> Iterator[tuple[str, Built]]:
        """(name, Built) for every job, as its build finishes. `ahead` (a kept pool only): jobs
        queued behind these for a later call, not waited for here."""
        pending = dict(jobs)
        blind = 0  # pools broken with no job found in flight
        while pending:
            pool = self._start(len(pending))
            with main_module_hidden():  # the pool starts its processes as jobs are submitted
                futures = {self._submit(pool, name, job): name for name, job in pending.items()}
                if self.keep:
                    for name, job in (ahead or {}).items():
                        if name not in pending:
                            self._submit(pool, name, job)
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


def job_source(job: Job, device) -> tuple[str, tuple[str, ...]]:
    """The OpenCL source and build options of a job (generated here for an `.icl` program)."""
    if job["kind"] == "source":
        return job["source"], tuple(job["options"])
    import imagecl

    key = (job["program"], job["filename"])
    program = _PROGRAMS.get(key)
    if program is None:
        program = _PROGRAMS[key] = imagecl.compile(job["program"], job["filename"])
    return program.source_of(program.plan(dict(job["config"]), device)), ()


def _build_job(device: tuple[int, str, str], cache_dir: str, name: str, job: Job, mark: str) -> Built:
    """Build one job in a builder process; `mark` % pid names the file that says which job this
    builder is on while it builds (so that a crash can be pinned on it)."""
    from imagecl.runtime.devices import _all_devices

    from .buildcache import _build_in_child

    index, device_name, driver = device
    cl_device = _all_devices()[index]
    start = time.perf_counter()
    try:
        source, options = job_source(job, cl_device)
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
    binary, log = _build_in_child(index, source, options)
    os.remove(mark)
    done.build_seconds = time.perf_counter() - generated
    if binary is not None:
        cache.put(key, binary)
        done.status = "built"
    else:
        cache.put_error(key, log or "unknown build error")
        done.status = "rejected"
    return done
