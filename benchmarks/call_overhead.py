"""What one `prog(...)` call costs beyond its kernel, through the public API.

Ways to run the same variant (the one `prog(...)` picks at that size on that device) on random
inputs of the right shapes (every array parameter by name; scalars 1 unless `--scalar`), each
timed on the wall clock, median of `--repeats` after `--warmup` calls:

  numpy        prog(**arrays, device=...)              NumPy in, NumPy out (upload, download)
  transfers    the same uploads and downloads alone    blocking copies between the NumPy arrays and
                                                       buffers allocated once: what `numpy` cannot avoid
  device       prog(**device_arrays, queue=q, returns="device"), then q.finish()
  device_pool  the same with allocator=pyopencl.tools.MemoryPool(...): outputs without allocating
  raw_kernel   built.enqueue().wait()                  the kernel from prog.build(q, size=...), its
                                                       arguments set once
  kernel       profiling-event time of raw_kernel's launches (the kernel alone)

Written images of the grid that the program does not read are left out (allocated by the call).
Prints one JSON object: the medians in milliseconds and each one's ratio to the kernel time;
with `--stages`, also where a device call spends its host time (the steps of Program._run, timed
one by one: median microseconds each).

    python benchmarks/call_overhead.py [--program examples/sobel.icl] [--size 1024x768] [--device D]
                                       [--config '{"px_x": 4}'] [--scalar k=0.04] [--stages]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import time
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as cl_tools

import imagecl
from imagecl.bench.wall import wall_times
from imagecl.runtime.synthetic import synthetic_arguments

ROOT = pathlib.Path(__file__).resolve().parent.parent


def arguments(prog: imagecl.Program, grid_shape: tuple[int, ...], scalars: dict[str, Any],
              device: Any) -> dict[str, Any]:
    """Random arrays for every array parameter (the written grid images that are not read left
    out, unless one of them is all that gives the grid its size) and the scalars, by name."""
    given = dict(scalars)
    rng = np.random.default_rng(1)
    for name, array in prog.info.arrays.items():
        if array.kind == "image" and array.dims > len(grid_shape):  # a volume sampled by a 2-D grid
            shape = (grid_shape[0],) * (array.dims - len(grid_shape)) + grid_shape
            given[name] = (rng.random(shape) if array.element.dtype.kind == "f"
                           else rng.integers(0, 256, shape)).astype(array.element.dtype)
    args, _ = synthetic_arguments(prog, grid_shape, given=given, device=device)
    left_out = [n for n, a in prog.info.arrays.items() if a.in_grid and a.is_written and not a.is_read]
    if prog.info.grid and set(prog.info.grid) <= set(left_out):
        left_out = [n for n in left_out if n != prog.info.grid[0]]
    for name in left_out:
        del args[name]
    return args


def stage_times(prog: imagecl.Program, device_args: dict[str, Any], queue: Any, config: Any,
                repeats: int) -> dict[str, float]:
    """Median microseconds of each step of a device call, as Program._run takes them."""
    from imagecl.runtime import interop
    from imagecl.runtime.arguments import prepare

    steps: dict[str, list[float]] = {k: [] for k in ("resolve_target", "prepare", "ready_lookup", "enqueue",
                                                      "finish", "queue_finish")}
    for _ in range(repeats):
        t0 = time.perf_counter()
        target = interop.resolve_target(None, queue, device_args)
        t1 = time.perf_counter()
        prepared = prepare(prog.info, dict(device_args), copy=False, device_ok=True)
        t2 = time.perf_counter()
        ready = prog._ready_for(target, prepared, config)
        t3 = time.perf_counter()
        enqueued = interop.enqueue(target, prog.kernel_symbol, ready.program, ready.launch, prepared, prog.overwritten)
        t4 = time.perf_counter()
        interop.finish(target, prog.kernel_symbol, enqueued, "device", False)
        t5 = time.perf_counter()
        queue.finish()
        t6 = time.perf_counter()
        for key, (a, b) in zip(steps, ((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5), (t5, t6))):
            steps[key].append(b - a)
    return {k: round(statistics.median(v) * 1e6, 1) for k, v in steps.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--program", default=str(ROOT / "examples" / "sobel.icl"))
    parser.add_argument("--size", default="1024x768", help="width x height[ x depth] (ignored with grid_size)")
    parser.add_argument("--device", default=None, help="index or name fragment (default: imagecl's default)")
    parser.add_argument("--config", type=json.loads, default=None,
                        help="a configuration as JSON (default: the one prog(...) picks: tuned, else naive)")
    parser.add_argument("--scalar", action="append", default=[], metavar="NAME=VALUE",
                        help="a scalar argument (default 1), repeatable")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--stages", action="store_true", help="also time each step of a device call")
    args = parser.parse_args()

    prog = imagecl.load(args.program)
    if prog.info.grid:
        grid_shape = tuple(int(v) for v in reversed(args.size.lower().split("x")))
    else:
        grid_shape = tuple(reversed(prog.info.grid_size))
    size = tuple(reversed(grid_shape))
    scalars = {}
    for item in args.scalar:
        name, _, value = item.partition("=")
        scalars[name] = float(value) if any(c in value for c in ".eE") else int(value)
    device = imagecl.select_device(args.device)
    context = cl.Context([device])
    queue = cl.CommandQueue(context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    config = args.config

    host_args = arguments(prog, grid_shape, scalars, device)
    numpy_times = wall_times(lambda: prog(**host_args, device=device, config=config), args.repeats, args.warmup)

    device_args = {n: cla.to_device(queue, v) if isinstance(v, np.ndarray) else v for n, v in host_args.items()}
    outputs = prog(**device_args, queue=queue, returns="device", config=config)  # the outputs' shapes and dtypes
    host_outputs = {n: a.get() for n, a in outputs.items()}
    uploads = [(np.ascontiguousarray(v), cl.Buffer(context, cl.mem_flags.READ_ONLY, v.nbytes))
               for n, v in host_args.items() if isinstance(v, np.ndarray)]
    downloads = [(host_outputs[n], a.data) for n, a in outputs.items()]

    def transfers():
        for host, buffer in uploads:
            cl.enqueue_copy(queue, buffer, host, is_blocking=False)
        for host, buffer in downloads:
            cl.enqueue_copy(queue, host, buffer, is_blocking=True)

    transfer_times = wall_times(transfers, args.repeats, args.warmup)

    def device_call():
        prog(**device_args, queue=queue, returns="device", config=config)
        queue.finish()

    device_times = wall_times(device_call, args.repeats, args.warmup)

    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))

    def pooled_call():
        prog(**device_args, queue=queue, returns="device", config=config, allocator=pool)
        queue.finish()

    try:
        pooled_call()
        pooled_times: list[float] = wall_times(pooled_call, args.repeats, args.warmup)
    except imagecl.ArgumentError:  # an imagecl without allocator= (to compare with an older one)
        pooled_times = []

    built = prog.build(queue, size=size if prog.info.grid else None, config=config)
    built.set_args(**{**device_args, **outputs})  # a written array that was passed: its output instead
    events = []

    def raw_call():
        event = built.enqueue()
        event.wait()
        events.append(event)

    raw_times = wall_times(raw_call, args.repeats, args.warmup)
    kernel_times = [(e.profile.end - e.profile.start) * 1e-9 for e in events[args.warmup:]]

    kernel = statistics.median(kernel_times)
    result: dict[str, Any] = {
        "program": pathlib.Path(args.program).name, "size": list(size),
        "device": device.name.strip(), "driver": device.driver_version.strip(),
        "configuration": built.configuration, "repeats": args.repeats, "warmup": args.warmup,
        "median_ms": {}, "ratio_to_kernel": {},
    }
    for key, times in (("numpy", numpy_times), ("transfers", transfer_times), ("device", device_times),
                       ("device_pool", pooled_times), ("raw_kernel", raw_times), ("kernel", kernel_times)):
        if not times:
            continue
        median = statistics.median(times)
        result["median_ms"][key] = round(median * 1e3, 4)
        result["ratio_to_kernel"][key] = round(median / kernel, 3)
    if args.stages:
        result["device_call_stages_us"] = stage_times(prog, device_args, queue, config, args.repeats)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
