"""Touching the pages of new host arrays before a device's copy writes into them.

A new NumPy array of a few MiB or more is memory the kernel has not mapped yet: its first write
faults each page in and zeroes it. A GPU driver copying down into pageable memory makes that first
write from its own thread, page by page behind its staging buffer, so the faults slow the copy
itself (benchmarks/host_pages.py and multi_gpu_transfers.py: 3.9 against 10.4 GB/s at 256 MiB on
an H200 host). Written first by the host, from a few threads and while the device is busy with
the uploads and the kernel, the pages are mapped when the copy comes.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Optional

import numpy as np

# below this an array's pages cost less than handing them to threads
SMALL = 4 << 20
# threads that touch one array; NumPy's fill releases the GIL, and the kernel maps pages of one
# array from several threads at once
THREADS = max(1, min(8, os.cpu_count() or 1))

_pool: Optional[ThreadPoolExecutor] = None
_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(THREADS, thread_name_prefix="imagecl-pages")
        return _pool


def touch_pages(arrays: Iterable[np.ndarray], threads: int = THREADS,
                before: Optional[Callable[[], None]] = None) -> None:
    """Write zeros over each array of SMALL bytes or more (new, C-contiguous: what it holds is
    lost), in up to `threads` parts at once. A smaller one is left as it is: the allocator takes
    it from memory already mapped, and a fill would only add to a small call's cost. `before` is
    called once before the first page is touched, and not at all when none is (a queue's flush:
    the device starts its work before the host starts its own, and a small call pays nothing)."""
    large = [a for a in arrays if a.nbytes >= SMALL and a.flags.c_contiguous and a.flags.writeable]
    if large and before is not None:
        before()
    for array in large:
        flat = array.reshape(-1)
        parts = max(1, min(threads, array.nbytes // SMALL))
        edges = np.linspace(0, flat.size, parts + 1).astype(np.int64)
        if parts == 1:
            flat.fill(0)
            continue
        pool = _executor()
        for future in [pool.submit(flat[a:b].fill, 0) for a, b in zip(edges[:-1], edges[1:])]:
            future.result()
