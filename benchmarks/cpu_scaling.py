"""Where a CPU kernel's time goes: one core against all cores, for ImageCL's vector code and OpenCV.

    python benchmarks/cpu_scaling.py [--workload conv9] [--size 4096] [--threads 1,16] \
        [--out benchmarks/results/cpu-scaling.json]

For one convolution workload of the peer harness (benchmarks/peers.py) this times, on the PoCL
CPU device, fixed configurations of the explicit vector code (`vector_x = 2`, the fast path,
taps unrolled) over a grid of work-group shapes, points per work-item, row blocks and input
staged in local memory or read directly, and
OpenCV's `filter2D` on the same input, at each thread count given: PoCL's threads are capped
with POCL_MAX_PTHREAD_COUNT (a child process per count, since PoCL reads it once) and
OpenCV's with `cv2.setNumThreads`. Each time is the median of 5 calls after a warm-up (ImageCL:
OpenCL profiling events; OpenCV: wall clock). One core against many separates the code a core
runs (instructions, loads, vector width) from how the work is spread over the cores (work-group
count, scheduling), which the peer table alone cannot tell apart. Configurations are fixed, not
tuned. At one thread only the grid's first `--one-thread-configs` configurations run (a 9x9
filter at 4096x4096 takes about a second a call there).

Beside them, a reference kernel written here (not generated): the same convolution over the
interior only (no boundary handling, no branch), `runs` float16 vectors along x and `rows`
output rows per work-item, every tap's vector load and multiply-add written out. It is the roof
of what PoCL makes of this code shape, so the gap between it and the generated variants is what
code generation loses (boundary path, control flow), and the gap between it and OpenCV what the
code shape itself loses.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from imagecl.bench.peers import cpu_name

ROOT = Path(__file__).resolve().parents[1]


def grid(n: int) -> list[dict]:
    """The vector-code configurations timed: vector width / runs, work-group shape, rows a
    work-item, and whether the input is staged in local memory; the first few (those timed at
    one thread too) are the ones expected to be the fastest and their direct-read twins."""
    unrolled = {f"unroll_convolution{n}_l7": n, f"unroll_convolution{n}_l8": n}
    base = {**unrolled, "interior": 1, "vector_x": 2}

    def config(px, wx, wy, py, local):
        return {**base, "px_x": px, "px_y": py, "wg_x": wx, "wg_y": wy, "local_input": local}

    first = [config(16, 1, 4, 4, 1), config(16, 1, 4, 4, 0), config(32, 1, 4, 2, 1), config(64, 1, 16, 1, 1),
             config(64, 1, 16, 1, 0), config(16, 1, 4, 1, 0)]
    rest = [config(px, wx, wy, py, local) for px, (wx, wy), py, local
            in itertools.product((16, 32, 64), ((1, 2), (1, 8), (2, 8), (4, 4)), (1, 2, 4), (1, 0))]
    return first + [c for c in rest if c not in first]


REFERENCE_SHAPES = ((1, 1), (2, 1), (4, 1), (1, 4), (2, 2))  # (float16 runs along x, rows) per work-item


def reference_source(n: int, runs: int, rows: int) -> str:
    """The reference kernel for an n x n convolution (the filter flipped, as the workload's)."""
    r = n // 2
    body = [f"float16 s{y}_{k} = 0.0f;" for y in range(rows) for k in range(runs)]
    for j in range(-r, r + 1):
        for i in range(-r, r + 1):
            body.append(f"{{ const float f = filter[{(j + r) * n + (i + r)}];")
            body += [f"  s{y}_{k} += vload16(0, input + (y + {y} - ({j})) * w + x0 + {16 * k} - ({i})) * f;"
                     for y in range(rows) for k in range(runs)]
            body.append("}")
    body += [f"vstore16(s{y}_{k}, 0, output + (y + {y}) * w + x0 + {16 * k});" for y in range(rows) for k in range(runs)]
    lines = "\n    ".join(body)
    return f"""__kernel void reference(__global const float* restrict input, __global float* restrict output,
                        __global const float* restrict filter, const int w)
{{
    const int x0 = get_global_id(0) * {16 * runs};
    const int y = get_global_id(1) * {rows};
    {lines}
}}"""


def time_reference(args: dict, n: int, runs: int, rows: int) -> float:
    """Milliseconds of the reference kernel over the interior (median of 5 after a warm-up)."""
    import numpy as np
    import pyopencl as cl

    from imagecl.runtime.devices import context_and_queue, select_device

    context, queue = context_and_queue(select_device("cpu"))
    src, h = args["input"], args["input"].shape[0]
    w = src.shape[1]
    mf = cl.mem_flags
    buffers = [cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=src),
               cl.Buffer(context, mf.READ_WRITE, src.nbytes),
               cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(args["filter"]))]
    kernel = cl.Program(context, reference_source(n, runs, rows)).build().reference
    kernel.set_args(*buffers, np.int32(w))
    r, step = n // 2, 16 * runs
    offset = (-(-r // step), -(-r // rows))  # work-items whose footprint starts inside
    size = ((w - r) // step - offset[0], (h - r) // rows - offset[1])
    times = []
    for _ in range(6):
        event = cl.enqueue_nd_range_kernel(queue, kernel, size, (1, 1), global_work_offset=offset)
        event.wait()
        times.append((event.profile.end - event.profile.start) * 1e-6)
    return float(np.median(times[1:]))


def _child(workload_key: str, size: int, threads: int, configs: list[dict]) -> dict:
    import numpy as np

    import imagecl
    from imagecl.bench.peer_workloads import all_workloads

    workload = next(w for w in all_workloads() if w.key == workload_key)
    args = workload.make((size, size), np.random.default_rng(0))
    prog = imagecl.compile(workload.source, filename=f"{workload_key}.icl")
    inputs = {k: v for k, v in args.items() if k not in workload.writes}
    rows = []
    for config in configs:
        started = time.perf_counter()
        prog.run(inputs, device="cpu", config=config)  # build + warm-up
        build = time.perf_counter() - started
        ms = [1000 * prog.run(inputs, device="cpu", config=config)[1] for _ in range(5)]
        rows.append({"config": config, "ms": round(float(np.median(ms)), 3),
                     "spread": round((max(ms) - min(ms)) / float(np.median(ms)), 3), "first_call_s": round(build, 2)})
        print(f"  {threads:3d} threads {json.dumps({k: v for k, v in config.items() if not k.startswith('unroll')})}"
              f" {rows[-1]['ms']:9.2f} ms", flush=True)
    reference = {}
    for runs, jammed in REFERENCE_SHAPES:
        key = f"{runs}x{jammed}"
        reference[key] = round(time_reference(args, int(workload_key[4:]), runs, jammed), 3)
        print(f"  {threads:3d} threads reference kernel, {runs} float16 run(s) x {jammed} row(s)"
              f" {reference[key]:9.2f} ms (interior only)", flush=True)
    opencv = None
    try:
        from imagecl.bench.peer_impls import OpenCVPeer

        run = OpenCVPeer(threads).prepare(workload, args)  # the peer harness's filter2D call
        run.time_once()  # warm-up
        times = [1000 * run.time_once() for _ in range(5)]
        opencv = round(float(np.median(times)), 3)
        print(f"  {threads:3d} threads OpenCV filter2D {opencv:9.2f} ms", flush=True)
    except ImportError:
        pass
    return {"threads": threads, "rows": rows, "reference_ms": reference, "opencv_ms": opencv}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="conv9", choices=["conv3", "conv9", "conv11"])
    parser.add_argument("--size", type=int, default=4096, help="image side (default 4096)")
    parser.add_argument("--threads", default="1,16", help="thread counts, comma-separated (default 1,16)")
    parser.add_argument("--one-thread-configs", type=int, default=6,
                        help="configurations timed at one thread (default 6: the grid's first)")
    parser.add_argument("--out", type=Path, help="write the results here (JSON)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    n = int(args.workload[4:])
    if args.child:
        threads, configs = json.loads(args.child)
        print(json.dumps(_child(args.workload, args.size, threads, configs)))
        return 0
    runs = []
    started = time.time()
    for threads in (int(t) for t in args.threads.split(",")):
        configs = grid(n)[: args.one_thread_configs] if threads == 1 else grid(n)
        env = {**os.environ, "POCL_MAX_PTHREAD_COUNT": str(threads)}
        done = subprocess.run([sys.executable, __file__, "--workload", args.workload, "--size", str(args.size),
                               "--child", json.dumps([threads, configs])], env=env, text=True,
                              stdout=subprocess.PIPE, cwd=ROOT)
        if done.returncode:
            print(f"the run with {threads} threads failed (exit {done.returncode})", file=sys.stderr)
            return 1
        lines = done.stdout.strip().splitlines()
        print("\n".join(lines[:-1]))
        runs.append(json.loads(lines[-1]))
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "workload": args.workload,
              "size": args.size, "host": platform.node(), "cpu": cpu_name(), "seconds": round(time.time() - started, 1),
              "runs": runs}
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
