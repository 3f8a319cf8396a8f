"""What a call's new output arrays cost the host: touching the pages of a new array from 1 to 16
threads (with and without NumPy's huge-page advice), and a GPU's copy down into a new array
against one whose pages were touched first.

    PYTHONPATH=$PWD python3 benchmarks/host_pages.py --mib 256 --out $OUT/host_pages.json

A new NumPy array of that size is fresh memory from the kernel: its first write faults each page
in (and zeroes it). A GPU driver copying pageable memory down writes through a staging buffer,
so those faults land in the copy (benchmarks/multi_gpu_transfers.py: 3.9 against 10.4 GB/s at
256 MiB on an H200 host). Each figure is the median of --repeats timed rounds after one warm-up.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from imagecl.bench.wall import wall_median


def touch(array: np.ndarray, pool: ThreadPoolExecutor, threads: int) -> None:
    flat = array.reshape(-1)
    edges = np.linspace(0, flat.size, threads + 1).astype(int)
    list(pool.map(lambda k: flat[edges[k]:edges[k + 1]].fill(0), range(threads)))


def madvise_hugepage(enabled: bool) -> None:
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # NumPy 1
        from numpy.core.multiarray import _set_madvise_hugepage

    _set_madvise_hugepage(enabled)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", default="1,2,4,8,16")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    nbytes = args.mib << 20
    counts = [int(t) for t in args.threads.split(",")]
    pool = ThreadPoolExecutor(max(counts))
    rows = {}
    for advice in (True, False):
        madvise_hugepage(advice)
        for t in counts:
            rows[f"touch_new_{t}_threads{'' if advice else '_no_hugepage_advice'}_s"] = wall_median(
                lambda t=t: touch(np.empty(nbytes, np.uint8), pool, t), args.repeats)
    madvise_hugepage(True)
    try:
        import pyopencl as cl

        gpu = next(d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.GPU)
        context = cl.Context([gpu])
        queue = cl.CommandQueue(context)
        buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, nbytes)
        reused = np.empty(nbytes, np.uint8)
        touch(reused, pool, 1)
        rows["down_reused_s"] = wall_median(lambda: cl.enqueue_copy(queue, reused, buffer), args.repeats)
        rows["down_new_s"] = wall_median(lambda: cl.enqueue_copy(queue, np.empty(nbytes, np.uint8), buffer), args.repeats)
        for t in counts:
            def touched_then_down(t=t) -> None:
                fresh = np.empty(nbytes, np.uint8)
                touch(fresh, pool, t)
                cl.enqueue_copy(queue, fresh, buffer)
            rows[f"down_new_touched_by_{t}_threads_s"] = wall_median(touched_then_down, args.repeats)
    except StopIteration:
        pass
    pool.shutdown()
    for k, v in rows.items():
        print(f"{k:48s} {v * 1e3:8.2f} ms  {nbytes / v / 1e9:6.1f} GB/s")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "host": platform.node(),
                               "bytes": nbytes, "command": " ".join(sys.argv), "seconds": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
