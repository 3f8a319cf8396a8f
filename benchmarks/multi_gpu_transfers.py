"""Do transfers to several GPUs overlap? Host-to-device and device-to-host copies of one image, split
in halves between two GPUs, enqueued from one host thread or from one thread per GPU, from
pageable NumPy memory or from pinned (ALLOC_HOST_PTR, mapped) host memory; and copied down into a
new array (as a call's outputs are), with and without the host touching its pages first.

    PYTHONPATH=$PWD python3 benchmarks/multi_gpu_transfers.py --out $OUT/multi_gpu_transfers.json

What it decides: runtime/multidevice.run drives each device from its own host thread, because a GPU
driver may stage a non-blocking copy of pageable memory before the enqueue returns, which from one
thread puts the devices' copies one after the other. Each figure is the median of --repeats timed
rounds after a warm-up (wall seconds of the whole up-and-down round, waited); bandwidth counts the
bytes moved both ways.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Optional

import numpy as np

from imagecl.bench.wall import wall_median


def gpus() -> list:
    import pyopencl as cl

    return [d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.GPU]


class Side:
    """One GPU: its context, an in-order queue, a device buffer, and a pinned host buffer."""

    def __init__(self, device, nbytes: int) -> None:
        import pyopencl as cl

        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context)
        self.buffer = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, nbytes)
        self.pinned = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, nbytes)
        self.view, _ = cl.enqueue_map_buffer(self.queue, self.pinned, cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                             (nbytes,), np.uint8)

    def round(self, up: np.ndarray, down: np.ndarray) -> None:
        """`up` to the device and the device's bytes back into `down`, non-blocking, then waited."""
        import pyopencl as cl

        events = [cl.enqueue_copy(self.queue, self.buffer, up, is_blocking=False),
                  cl.enqueue_copy(self.queue, down, self.buffer, is_blocking=False)]
        for e in events:
            e.wait()


def touched_round(side: Side, up: np.ndarray, down: Optional[np.ndarray] = None) -> None:
    """`up` to the device, and back into a new array (or `down`, a part of one) whose pages the host
    touches while the copy up runs."""
    import pyopencl as cl

    event = cl.enqueue_copy(side.queue, side.buffer, up, is_blocking=False)
    down = np.empty_like(up) if down is None else down
    down.fill(0)
    cl.enqueue_copy(side.queue, down, side.buffer, is_blocking=False).wait()
    event.wait()


def fresh_halves(pool: ThreadPoolExecutor, sides: list, up: np.ndarray, touch: bool) -> None:
    """One new array for the whole image, each half copied down into by its GPU's thread."""
    down = np.empty_like(up)
    half = up.nbytes // 2
    parts = [(up[i * half:(i + 1) * half], down[i * half:(i + 1) * half]) for i in range(2)]
    work = (lambda i: touched_round(sides[i], *parts[i])) if touch else (lambda i: sides[i].round(*parts[i]))
    list(pool.map(work, range(2)))


def transparent_huge_pages() -> str:
    try:
        return Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().strip()
    except OSError:
        return "unknown"


def measure(nbytes: int, repeats: int) -> dict:
    devices = gpus()
    half = nbytes // 2
    sides = [Side(d, half if len(devices) > 1 else nbytes) for d in devices[:2]]
    one = Side(devices[0], nbytes)
    host_up = np.random.default_rng(0).integers(0, 255, nbytes, dtype=np.uint8)
    host_down = np.empty_like(host_up)
    halves = [(host_up[i * half:(i + 1) * half], host_down[i * half:(i + 1) * half]) for i in range(2)]
    found = {"bytes": nbytes, "one_gpu_pageable_s": wall_median(lambda: one.round(host_up, host_down), repeats)}

    def pinned_round(side: Side, up: np.ndarray, down: np.ndarray) -> None:
        n = up.nbytes
        np.copyto(side.view[:n], up)  # the host's copy into pinned memory counts
        side.round(side.view[:n], side.view[:n])
        np.copyto(down, side.view[:n])

    found["one_gpu_pinned_s"] = wall_median(lambda: pinned_round(one, host_up, host_down), repeats)
    # a call returns its outputs in new arrays: the copy down then writes pages never touched,
    # and the kernel maps each one in as the copy reaches it (the rounds above reuse theirs)
    found["one_gpu_fresh_down_s"] = wall_median(lambda: one.round(host_up, np.empty_like(host_up)), repeats)
    found["one_gpu_fresh_down_touched_during_up_s"] = wall_median(lambda: touched_round(one, host_up), repeats)
    if len(sides) == 2:
        def one_thread() -> None:
            import pyopencl as cl

            events = []
            for side, (up, down) in zip(sides, halves):
                events += [cl.enqueue_copy(side.queue, side.buffer, up, is_blocking=False),
                           cl.enqueue_copy(side.queue, down, side.buffer, is_blocking=False)]
            for e in events:
                e.wait()

        pool = ThreadPoolExecutor(2)
        found["two_gpus_one_thread_pageable_s"] = wall_median(one_thread, repeats)
        found["two_gpus_two_threads_pageable_s"] = wall_median(
            lambda: list(pool.map(lambda i: sides[i].round(*halves[i]), range(2))), repeats)
        found["two_gpus_two_threads_pinned_s"] = wall_median(
            lambda: list(pool.map(lambda i: pinned_round(sides[i], *halves[i]), range(2))), repeats)
        found["two_gpus_two_threads_fresh_down_s"] = wall_median(lambda: fresh_halves(pool, sides, host_up, False), repeats)
        found["two_gpus_two_threads_fresh_down_touched_during_up_s"] = wall_median(
            lambda: fresh_halves(pool, sides, host_up, True), repeats)
        pool.shutdown()
    found["gb_per_s"] = {k[:-2]: 2 * nbytes / v / 1e9 for k, v in found.items() if k.endswith("_s")}
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", default="64,256", help="image sizes in MiB, comma-separated")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if not gpus():
        print("no GPU: nothing to measure")
        return 1
    rows = [measure(int(m) << 20, args.repeats) for m in args.mib.split(",")]
    for r in rows:
        print(f"{r['bytes'] >> 20} MiB: " + ", ".join(f"{k} {v:.1f} GB/s" for k, v in r["gb_per_s"].items()))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "host": platform.node(),
                               "gpus": [d.name.strip() for d in gpus()], "command": " ".join(sys.argv),
                               "transparent_huge_pages": transparent_huge_pages(),
                               "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
