"""Wall-clock timing of a call for the benchmark scripts: warm-up calls, then timed ones."""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def wall_times(call: Callable[[], Any], repeats: int, warmup: int = 1) -> list[float]:
    """Seconds of each of `repeats` calls, after `warmup` untimed ones."""
    for _ in range(warmup):
        call()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        runs.append(time.perf_counter() - start)
    return runs


def wall_median(call: Callable[[], Any], repeats: int, warmup: int = 1) -> float:
    return statistics.median(wall_times(call, repeats, warmup))
