"""What one `prog(...)` call costs beyond its kernel, through the public API only.

Four ways to run the same variant (the one `prog(...)` picks at that size on that device) on one
image, each timed on the wall clock, median of `--repeats` after `--warmup` calls:

  numpy        prog(img, device=...)                    NumPy in, NumPy out (upload, download)
  device       prog(d_img, queue=q, returns="device")       device arrays in and out, then q.finish()
  raw_kernel   built.enqueue().wait()                   the kernel from prog.build(q, size=...),
                                                        its arguments set once
  kernel       profiling-event time of raw_kernel's launches (the kernel alone)

Prints one JSON object: the medians in milliseconds and each one's ratio to the kernel time.

    python benchmarks/call_overhead.py [--program examples/sobel.icl] [--size 1024x768] [--device D]
                                       [--config '{"px_x": 4}']
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import imagecl

ROOT = pathlib.Path(__file__).resolve().parent.parent


def wall(call, repeats: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--program", default=str(ROOT / "examples" / "sobel.icl"))
    parser.add_argument("--size", default="1024x768", help="width x height")
    parser.add_argument("--device", default=None, help="index or name fragment (default: imagecl's default)")
    parser.add_argument("--config", type=json.loads, default=None,
                        help="a configuration as JSON (default: the one prog(...) picks: tuned, else naive)")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))

    prog = imagecl.load(args.program)
    device = imagecl.select_device(args.device)
    context = cl.Context([device])
    queue = cl.CommandQueue(context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    img = np.random.default_rng(0).uniform(-1, 1, (height, width)).astype(np.float32)
    # a program of one input image, passed by position (sobel, box_blur, median, ...)
    config = args.config
    numpy_times = wall(lambda: prog(img, device=device, config=config), args.repeats, args.warmup)

    d_img = cla.to_device(queue, img)

    def device_call():
        prog(d_img, queue=queue, returns="device", config=config)
        queue.finish()

    device_times = wall(device_call, args.repeats, args.warmup)

    built = prog.build(queue, size=(width, height), config=config)
    outputs = prog(d_img, queue=queue, returns="device", config=config)  # arrays of the outputs' shapes and dtypes
    (input_name,) = [p for p in prog.parameters if p not in prog.outputs]
    built.set_args(**{input_name: d_img}, **outputs)
    events = []

    def raw_call():
        event = built.enqueue()
        event.wait()
        events.append(event)

    raw_times = wall(raw_call, args.repeats, args.warmup)
    kernel_times = [(e.profile.end - e.profile.start) * 1e-9 for e in events[args.warmup:]]

    kernel = statistics.median(kernel_times)
    result = {
        "program": pathlib.Path(args.program).name, "size": [width, height],
        "device": device.name.strip(), "driver": device.driver_version.strip(),
        "configuration": built.configuration, "repeats": args.repeats, "warmup": args.warmup,
        "median_ms": {}, "ratio_to_kernel": {},
    }
    for key, times in (("numpy", numpy_times), ("device", device_times), ("raw_kernel", raw_times),
                       ("kernel", kernel_times)):
        median = statistics.median(times)
        result["median_ms"][key] = round(median * 1e3, 4)
        result["ratio_to_kernel"][key] = round(median / kernel, 3)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
