"""Compiling a variant's work-group function before it is timed, on CPU devices.

PoCL builds a program to LLVM bitcode at `clBuildProgram` and compiles the code that runs a
work-group (the loops over its work-items, vectorised) at the first launch with each work-group
size. For an unrolled filter that second compilation takes longer than the build: 1.5 s for a
bilateral variant on the 2-core EPYC, 5-14 s on the 16-core Xeon, where the kernel then runs in
0.7 s. A tuning run's builders (tuner/pipeline.py) therefore launch one work-group of each variant
they build, on zero-filled arguments of the run's shapes, before taking its binary: PoCL's binary
carries the compiled work-group function, and the measurement worker's first launch of that
binary finds it (measured: 1.53 s -> 0.01 s, another process and another PoCL cache directory).

What runs is one work-group at the grid's origin. Inputs are zero pages the host maps lazily
(`np.zeros`), so arrays of any size cost the pages one work-group touches. A variant whose
work-items stride over the whole grid (`interleaved`) would do all of the grid's work in one
work-group, so it is not warmed; nor is a launch without a work-group size, nor a program with a
loop whose trip count is not a compile-time constant (a `while` on the data may not end on
zeros, and a builder waits for its launch).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from . import launcher
from .arguments import prepare
from .devices import context_and_queue


def argument_shapes(prepared: Any) -> dict:
    """What `warm_launch` needs of a run's arguments (picklable): each array's shape and dtype, and
    the scalars."""
    return {"arrays": {n: (tuple(a.shape), np.dtype(a.dtype).str) for n, a in prepared.arrays.items()},
            "scalars": dict(prepared.scalars)}


def warm_launch(program: Any, plan: Any, shapes: Mapping[str, Any], device: Any, built: Any) -> bool:
    """Launch one work-group of `plan` (an `imagecl.Program`'s variant, built as the OpenCL
    program `built` for `device`) on zero-filled arguments of `shapes` (`argument_shapes`), and
    wait for it. False where the variant is not warmed (see the module's docstring)."""
    import pyopencl as cl

    if plan.interleaved or program.analysis_for(dict(plan.tunables)).dynamic_loops:
        return False
    zeros = {n: np.zeros(shape, np.dtype(dtype)) for n, (shape, dtype) in shapes["arrays"].items()}
    prepared = prepare(program.info, {**zeros, **shapes["scalars"]}, copy=False)
    launch = program.launch_for(plan, prepared)
    if launch.local_size is None:
        return False
    context, queue = context_and_queue(device)
    memory: dict = {}
    try:
        for value in launch.values:
            if isinstance(value, tuple) and value[0] == "buffer":
                # the host's zero pages, used in place: only what the work-group touches is mapped
                memory[value[1]] = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR,
                                             hostbuf=zeros[value[1]])
            elif isinstance(value, tuple) and value[0] == "image":
                memory[value[1]] = launcher.make_image(context, zeros[value[1]], launch.images[value[1]])
        kernel = launcher.bind_kernel(cl.Kernel(built, program.kernel_symbol), launch, memory)
        cl.enqueue_nd_range_kernel(queue, kernel, launch.local_size, launch.local_size).wait()
    finally:
        for m in memory.values():
            m.release()
    return True
