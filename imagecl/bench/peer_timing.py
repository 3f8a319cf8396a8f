"""Timing a peer's calls (peers.py): warmed up until its caches are filled, then a median.

A peer's first calls can include work that later calls skip: cupyx and PyTorch compile and cache
kernels on first use (over 2 s against microseconds after), OpenCV and NumPy touch fresh memory.
Such a call must never be a timing. The calls are repeated until two consecutive ones agree
within WARM_AGREE (or WARM_CAP calls ran), then at least MIN_TIMED calls are timed (more while
they are cheap) and their median reported with their spread.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
import math
from typing import Callable

import numpy as np

from ..runtime.timing import MIN_TIMED

WARM_AGREE = 0.2  # two consecutive warm-up calls within 20% of the faster: warm
WARM_CAP = 20  # at most this many warm-up calls (the checked call included)
MAX_TIMED = 50  # cheap peers: at most this many timed calls
BATCH_SECONDS = 0.002  # a GPU peer's timing of a fast kernel spans about this many back-to-back calls
MAX_BATCH = 20


@dataclass
class PeerTiming:
    times: list[float]  # the timed calls, seconds
    warmup: list[float]  # the warm-up calls (the checked call first), never among `times`
    settled: bool  # whether two consecutive warm-up calls agreed within WARM_AGREE

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    @property
    def spread(self) -> float:
        """Relative spread of the timed calls: (max - min) / median."""
        median = self.median
        return float((max(self.times) - min(self.times)) / median) if median > 0 else 0.0


def warm_then_time(call: Callable[[], float], first: float, repeats: int, max_seconds: float) -> PeerTiming:
    """`call()` runs the peer once and returns its time; `first` is the time of the checked call
    already made. Warm-up calls follow until two consecutive agree (the time they take is not
    bounded by `max_seconds`: a slow compile is what they are for, and WARM_CAP bounds them), then
    max(repeats, MIN_TIMED) timed calls, and more, up to MAX_TIMED, while all timed calls together
    stay under `max_seconds`."""
    warmup = [first]
    settled = False
    while len(warmup) < WARM_CAP:
        warmup.append(call())
        previous, last = warmup[-2], warmup[-1]
        if abs(last - previous) <= WARM_AGREE * min(last, previous):
            settled = True
            break
    times: list[float] = []
    wanted = max(repeats, MIN_TIMED)
    while len(times) < wanted or (len(times) < MAX_TIMED and sum(times) + float(np.median(times)) < max_seconds):
        times.append(call())
    return PeerTiming(times, warmup, settled)


class BatchedTimer:
    """A GPU peer timed by the wall clock (one whose kernels CUDA events of ours cannot bracket:
    Halide's own CUDA context, OpenCV's OpenCL queue): `batch` back-to-back calls (the library
    queues the kernels without waiting), then one `wait()` for the device; the time over them
    divided by `batch`. A batch hides the host's per-call cost (Python, argument marshalling,
    launch) behind the kernels, as it is absent from our profiling-event kernel times; a kernel
    long enough (BATCH_SECONDS) is timed one call at a time."""

    def __init__(self, call: Callable[[], object], wait: Callable[[], object]) -> None:
        self.call, self.wait, self.batch = call, wait, 1

    def once(self) -> float:
        start = time.perf_counter()
        for _ in range(self.batch):
            self.call()
        self.wait()
        return (time.perf_counter() - start) / self.batch

    def set_batch(self, seconds: float) -> None:
        """Calls per timing such that one timing lasts about BATCH_SECONDS (at most MAX_BATCH)."""
        self.batch = max(1, min(MAX_BATCH, int(math.ceil(BATCH_SECONDS / max(seconds, 1e-9) - 1e-6))))

    def calibrated(self, calls: int = 3) -> "BatchedTimer":
        """`calls` single calls (the first fills the compile caches), then the batch from the
        fastest of the others."""
        seconds = [self.once() for _ in range(max(2, calls))]
        self.set_batch(min(seconds[1:]))
        return self
