"""Checking that a run's arrays fit before anything is allocated.

A problem size or an array parameter far too large for the machine (`--size 100000x100000`,
`float f[0x7fffffff]`) would otherwise allocate until the process is killed, or fail deep in
the OpenCL driver. The checks compare each array with the device's largest allocation
(CL_DEVICE_MAX_MEM_ALLOC_SIZE), their sum with its global memory, and what the host must hold
with its available memory (MemAvailable), and name the array, its size and the limit.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Iterable, Optional

import numpy as np

from ..errors import ImageCLError

# the host holds each array about twice while running (the caller's data and the owned copy
# that is uploaded; the measurement worker's copy replaces the caller's)
HOST_COPIES = 2


class ResourceError(ImageCLError):
    """Arrays that do not fit in the device's or the host's memory."""


@dataclass(frozen=True)
class Buffer:
    label: str  # how messages name it: "image 'input' (4096x2048 float)"
    nbytes: int


def array_bytes(shape: Iterable[int], dtype: Any) -> int:
    """Bytes of an array of `shape` and `dtype`, computed without allocating (Python integers,
    which do not overflow)."""
    return math.prod(int(s) for s in shape) * np.dtype(dtype).itemsize


def size_text(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} bytes"


def host_available() -> Optional[int]:
    """Bytes of memory the host can still give (MemAvailable; else the free pages); None if
    neither can be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_host(buffers: list[Buffer], what: str = "the arguments", copies: int = HOST_COPIES,
               available: Optional[int] = None) -> None:
    """ResourceError unless `copies` times the buffers fit in the host's available memory."""
    available = host_available() if available is None else available
    total = sum(b.nbytes for b in buffers)
    if available is None or not buffers or total * copies <= available:
        return
    largest = max(buffers, key=lambda b: b.nbytes)
    raise ResourceError(f"{what} need {size_text(total)} ({copies} copies: {size_text(total * copies)}; the largest "
                        f"is {largest.label}, {size_text(largest.nbytes)}), but the host has only "
                        f"{size_text(available)} of memory available")


def check_device(buffers: list[Buffer], device: Any, what: str = "the arguments") -> None:
    """ResourceError unless every buffer fits in one allocation on `device` and all of them in
    its global memory."""
    name = device.name.strip()
    max_alloc, global_mem = int(device.max_mem_alloc_size), int(device.global_mem_size)
    for b in buffers:
        if b.nbytes > max_alloc:
            raise ResourceError(f"{b.label} needs {size_text(b.nbytes)}, but '{name}' allocates at most "
                                f"{size_text(max_alloc)} at once (of {size_text(global_mem)} of memory)")
    total = sum(b.nbytes for b in buffers)
    if total > global_mem:
        raise ResourceError(f"{what} need {size_text(total)} on the device, but '{name}' has "
                            f"{size_text(global_mem)} of memory")


def prepared_buffers(info: Any, arrays: dict[str, np.ndarray]) -> list[Buffer]:
    """The buffers of marshalled arguments (see arguments.prepare), as the checks take them."""
    return [Buffer(f"{info.arrays[n].kind} '{n}' {tuple(a.shape)} {a.dtype}", int(a.nbytes))
            for n, a in arrays.items()]
