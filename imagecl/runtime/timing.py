"""Timing launches with OpenCL profiling events: one loop for `.icl` variants (session.py) and
hand-written kernels (tuner/kernelrun.py).

What is timed: the kernel's execution from its start to its end event
(`CL_PROFILING_COMMAND_START..END`); not timed: building, uploads, argument setting, the restore
of read-and-written arrays before each launch, downloads.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..errors import ExecutionError


@dataclass
class Timing:
    times: list[float]  # seconds, one per timed launch
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    problem: Optional[str] = None  # set when a verified launch did not reproduce the reference

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    @property
    def spread(self) -> float:
        """Relative spread: (max - min) / median."""
        return float((max(self.times) - min(self.times)) / self.median) if self.times else 0.0


def event_seconds(event: Any) -> float:
    """The kernel's execution time of a finished launch, from its profiling event."""
    return (event.profile.end - event.profile.start) * 1e-9


def check_work_group_limit(kernel: Any, device: Any, local_size: Optional[Sequence[int]]) -> None:
    """Raise ExecutionError when `local_size` exceeds what this built kernel allows on `device`
    (its registers or local memory can lower the limit below the device's)."""
    import pyopencl as cl

    if local_size is None:
        return
    limit = int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device))
    if int(np.prod(local_size)) > limit:
        raise ExecutionError(f"work-group size {tuple(local_size)} exceeds this kernel's limit of {limit} "
                             "work-items on this device (registers or local memory)")


def time_launches(queue: Any, launch: Callable[[], Any], restore: Callable[[], None], first_seconds: float,
                  repeats: int, warmup: int = 1, max_seconds: Optional[float] = None) -> list[float]:
    """The times of `repeats` launches after a checked launch that took `first_seconds` (which
    counts as the first warm-up launch). `restore` gives read-and-written arrays their initial
    data before each launch; `launch` enqueues one launch and returns its event. A variant whose
    checked launch took over `max_seconds` is not launched again: that launch is its one time."""
    for _ in range(max(0, warmup - 1)):
        restore()
        launch()
    if max_seconds is not None and first_seconds > max_seconds:
        queue.finish()
        return [first_seconds]
    events = []
    for _ in range(repeats):
        restore()
        events.append(launch())
    queue.finish()
    return [event_seconds(e) for e in events] or [first_seconds]
