"""Building a live search's next proposals ahead, on the host's other cores.

A search asks for one configuration at a time (each choice waits for the times before it), so
the engine measures one source after another, and each new source's OpenCL build (seconds on
NVIDIA for a large unrolled source) holds up the device. The strategies know some proposals
ahead: a first stage's whole sample, a model's next ranked candidates, a local search's likely
neighbours. They announce them (`Problem.prefetch`); `BuildAhead` builds those sources in a
pool of builder processes into the build cache, from where the measurement worker loads the
binary instead of building it.

Announcing changes nothing that is measured, nor its order: a source announced but never
measured costs a builder's time only; one the engine reaches while its build is under way is
waited for (not built a second time by the worker), up to a cap; one whose build failed or
crashed is left to the worker, which builds it under its watchdog and records what happens,
as without building ahead. A new announcement replaces the builds of the previous one that
have not started yet (the search's plans changed).
"""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import tempfile
from collections import Counter
from typing import Mapping, Optional

from .buildcache import BuildCache
from .pipeline import Built, Job, _build_job, _ignore_interrupts, builder_count, kill_pool
from .spawn import main_module_hidden


class BuildAhead:
    """A pool of builder processes, kept for a whole search, that builds announced sources."""

    MOST = 6  # builders unless asked for more (workers)

    def __init__(self, cache: BuildCache, device_index: int, device_name: str, driver: str,
                 workers: int = 0) -> None:
        self.cache = cache
        self.device = (device_index, device_name, driver)
        # a search announces a handful at a time (a first stage's sample, a walk's next few); more
        # builders only add processes creating contexts and compiling at once
        self.workers = builder_count(workers) if workers > 0 else min(builder_count(), self.MOST)
        self.pool: Optional[concurrent.futures.ProcessPoolExecutor] = None
        self.futures: dict[str, concurrent.futures.Future] = {}  # source key -> its build
        self.counts: Counter = Counter()  # announced, cancelled, and per Built status, of those taken
        self.seconds = {"generate_cpu": 0.0, "build_cpu": 0.0}  # the builders', summed over the builds taken
        self._marks = tempfile.TemporaryDirectory(prefix="imagecl-ahead-")

    def __enter__(self) -> "BuildAhead":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def warm(self) -> None:
        """Start the builders now (Python, pyopencl, the device's context), while the worker
        starts and the baseline runs, rather than when the first announcement waits for them."""
        if self.pool is None:
            self.pool = self._new_pool()
            with main_module_hidden():
                for _ in range(self.workers):
                    self.pool.submit(_warm, self.device[0])

    def _new_pool(self) -> concurrent.futures.ProcessPoolExecutor:
        context = multiprocessing.get_context("spawn")
        return concurrent.futures.ProcessPoolExecutor(max_workers=self.workers, mp_context=context,
                                                      initializer=_ignore_interrupts)

    def announce(self, jobs: Mapping[str, Job]) -> int:
        """Build `jobs` (source key -> job) ahead, in their order; the builds of an earlier
        announcement not yet started and not in `jobs` are dropped. Returns how many were queued."""
        for key, future in list(self.futures.items()):
            if key not in jobs and future.cancel():
                del self.futures[key]
                self.counts["cancelled"] += 1
        queued = 0
        for key, job in jobs.items():
            if key in self.futures:
                continue
            if self.pool is None:
                self.pool = self._new_pool()
            try:
                with main_module_hidden():  # the pool starts its processes as jobs are submitted
                    self.futures[key] = self.pool.submit(_build_job, self.device, str(self.cache.directory), key,
                                                         job, os.path.join(self._marks.name, "%d"))
            except RuntimeError:  # a broken pool (a builder crashed): the worker builds the rest itself
                self._stop()
                return queued
            queued += 1
            self.counts["announced"] += 1
        return queued

    def wait(self, key: str, seconds: float) -> Optional[Built]:
        """The build of `key` if it was announced: waited for up to `seconds`; None when it was
        not announced, was dropped, failed, or is not done in time (the worker then builds it)."""
        future = self.futures.pop(key, None)
        if future is None or future.cancelled():
            return None
        if not future.running() and not future.done() and future.cancel():
            self.counts["cancelled"] += 1  # still queued: the worker builds it now rather than wait for a builder
            return None
        try:
            built = future.result(timeout=max(0.0, seconds))
        except concurrent.futures.TimeoutError:
            self.counts["waited_too_long"] += 1
            return None
        except Exception:  # noqa: BLE001 - a crashed builder: the worker builds it under its watchdog
            self.counts["crashed"] += 1
            self._stop()
            return None
        self.counts[built.status] += 1
        self.seconds["generate_cpu"] += built.generate_seconds
        self.seconds["build_cpu"] += built.build_seconds
        return built

    def _stop(self) -> None:
        pool, self.pool = self.pool, None
        self.futures.clear()
        if pool is None:
            return
        kill_pool(pool)

    def close(self) -> None:
        """Stop the builders (a build under way is not needed any more) and remove the marks."""
        self._stop()
        self._marks.cleanup()


def _warm(device_index: int) -> None:
    """A builder's start: what every build needs (pyopencl, the device's context, the code generator)."""
    import imagecl  # noqa: F401 - imported once per builder, as the builds need it
    from imagecl.runtime.devices import _all_devices, context_and_queue

    context_and_queue(_all_devices()[device_index])


def ahead_by_default(device) -> bool:
    """Whether a live search builds ahead unless told: on a GPU, whose builds run on host cores
    the measured kernels do not use; not on a CPU device, whose timings the builders would
    disturb."""
    import pyopencl as cl

    try:
        return bool(device.type & cl.device_type.GPU)
    except Exception:  # noqa: BLE001 - a device without the query: keep the plain path
        return False


__all__ = ["BuildAhead", "ahead_by_default"]
