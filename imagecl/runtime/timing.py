"""Timing launches with OpenCL profiling events: one loop for `.icl` variants (session.py) and
hand-written kernels (tuner/kernelrun.py).

What is timed: the kernel's execution from its start to its end event
(`CL_PROFILING_COMMAND_START..END`); not timed: building, uploads, argument setting, the restore
of read-and-written arrays before each launch, downloads.
"""
from __future__ import annotations

import math
import statistics

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..errors import ExecutionError


@dataclass
class Timing:
    times: list[float]  # seconds, one per timed launch
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    problem: Optional[str] = None  # set when a verified launch did not reproduce the reference
    first: Optional[float] = None  # seconds of the checked launch (never among `times`)
    censored: bool = False  # a launch took over `stop_above`: no (more) launches followed
    probe: Optional[float] = None  # seconds of a launch of part of the work-groups (probe_global), if one ran

    @property
    def median(self) -> float:
        # statistics.median: the same value as numpy's, at a tenth of its cost on a handful of
        # times (it is taken several times per variant, tens of thousands of variants a run)
        return float(statistics.median(self.times)) if self.times else float("nan")

    @property
    def spread(self) -> float:
        """Relative spread: (max - min) / median."""
        return float((max(self.times) - min(self.times)) / self.median) if self.times else 0.0


def event_seconds(event: Any) -> float:
    """The kernel's execution time of a finished launch, from its profiling event."""
    return (event.profile.end - event.profile.start) * 1e-9


def probe_global(global_size: Sequence[int], local_size: Optional[Sequence[int]],
                 fraction: float, min_groups: int = 1) -> Optional[tuple[int, ...]]:
    """The global size of a launch of about `fraction` of the work-groups, cut along the axis that
    has the most; None where there is nothing to cut (the driver's work-group size, too few
    groups along that axis, or fewer than `min_groups` left: a launch of a few waves of
    work-groups takes about as long as one of all). Such a launch does part of the work, so it
    takes no longer than the whole launch: a lower bound of its time (tuner/censor.py)."""
    if local_size is None or not 0 < fraction < 1:
        return None
    groups = [int(g) // int(w) for g, w in zip(global_size, local_size)]
    axis = max(range(len(groups)), key=lambda d: groups[d])
    keep = int(groups[axis] * fraction)
    if keep < 1 or keep * math.prod(groups) // groups[axis] < min_groups:
        return None
    cut = list(global_size)
    cut[axis] = keep * int(local_size[axis])
    return tuple(cut)


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


# every stored or reported time is the median of at least this many timed launches, none of
# them the warm-up launch (whose time includes first-launch work: PoCL compiles the work-group
# function then, a GPU driver uploads the code)
MIN_TIMED = 3


def time_launches(queue: Any, launch: Callable[[], Any], restore: Callable[[], None], first_seconds: float,
                  repeats: int, warmup: int = 1, max_seconds: Optional[float] = None) -> list[float]:
    """The times of `repeats` launches after a checked launch that took `first_seconds` (which
    counts as the first warm-up launch and is never among the times). `restore` gives
    read-and-written arrays their initial data before each launch; `launch` enqueues one launch
    and returns its event. `max_seconds` bounds the time the timed launches may take, judged from
    the checked launch: a slow variant gets fewer launches, but never fewer than
    min(repeats, MIN_TIMED)."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    for _ in range(max(0, warmup - 1)):
        restore()
        launch()
    count = launch_count(repeats, first_seconds, max_seconds)
    events = []
    for _ in range(count):
        restore()
        events.append(launch())
    queue.finish()
    return [event_seconds(e) for e in events]


def launch_count(repeats: int, first_seconds: float, max_seconds: Optional[float]) -> int:
    """How many of `repeats` timed launches fit in `max_seconds` at `first_seconds` each, never
    fewer than min(repeats, MIN_TIMED)."""
    if max_seconds is None or first_seconds <= 0 or first_seconds * repeats <= max_seconds:
        return repeats
    return max(min(repeats, MIN_TIMED), int(max_seconds // first_seconds))


def settle(timing: Timing, more: Callable[[], Timing], max_spread: float, max_repeats: int, budget: float,
           max_rounds: Optional[int] = None) -> Timing:
    """`timing` (a first round of launches) with more rounds added while its spread is large:
    `more()` times one more round (after its own warm-up launch, whose time it leaves out). Rounds
    are added while the spread of all times exceeds `max_spread`, fewer than `max_repeats` times
    are held, fewer than `max_rounds` extra rounds ran (None: no limit) and the next round, at the
    median so far (its warm-up launch included), keeps the launches within `budget` seconds."""
    launches = len(timing.times) + 1
    rounds = 0
    while timing.times and timing.spread > max_spread and len(timing.times) < max_repeats \
            and (max_rounds is None or rounds < max_rounds):
        if sum(timing.times) + timing.median * launches > budget:
            break
        timing.times.extend(more().times)
        rounds += 1
    return timing
