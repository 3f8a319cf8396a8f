"""Running many variants of one program on one set of arguments, with data uploaded once.

A `Session` keeps the inputs on the device (buffers, and images on first use), restores the
written arrays before every launch, times launches with OpenCL profiling events, and checks
each variant's outputs against a reference (normally the naive variant's). What is timed:
the kernel's execution from its start to its end event (`CL_PROFILING_COMMAND_START..END`);
not timed: building, uploads, argument setting, the restore of written arrays, downloads.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

import numpy as np

from ..errors import BuildError, ExecutionError
from . import launcher
from .arguments import prepare
from .devices import context_and_queue, select_device


@dataclass
class Timing:
    times: list[float]  # seconds, one per timed launch
    outputs: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    @property
    def spread(self) -> float:
        """Relative spread: (max - min) / median."""
        return float((max(self.times) - min(self.times)) / self.median) if self.times else 0.0


class Session:
    def __init__(self, program, arguments: Mapping[str, Any], device: Any = None) -> None:
        import pyopencl as cl

        self.program = program
        self.device = select_device(device)
        self.context, self.queue = context_and_queue(self.device)
        self.prepared = prepare(program.info, dict(arguments))
        mf = cl.mem_flags
        self.buffers: dict[str, Any] = {}
        self.pristine: dict[str, Any] = {}
        for name, host in self.prepared.arrays.items():
            self.buffers[name] = cl.Buffer(self.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host)
            if program.info.arrays[name].is_written:
                self.pristine[name] = cl.Buffer(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)
        self.images: dict[str, Any] = {}

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return self.prepared.grid_shape

    def _memory(self, launch: "launcher.Launch") -> dict:
        memory = dict(self.buffers)
        for name, dims in launch.images.items():
            if name not in self.images:
                self.images[name] = launcher.make_image(self.context, self.prepared.arrays[name], dims)
            memory[name] = self.images[name]
        return memory

    def _restore(self) -> None:
        import pyopencl as cl

        for name, src in self.pristine.items():
            cl.enqueue_copy(self.queue, self.buffers[name], src)

    def max_work_group_size(self, built) -> int:
        import pyopencl as cl

        kernel = launcher._kernel(built, self.program.name)
        return int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device))

    def time(self, plan, repeats: int = 3, warmup: int = 1, read_outputs: bool = True,
             max_seconds: Optional[float] = None) -> Timing:
        """Build (cached) and launch `plan`; raises BuildError / ExecutionError on failure."""
        import pyopencl as cl

        source = self.program.source_of(plan)
        built = launcher.build(self.device, source)
        launch = self.program.launch_for(plan, self.prepared)
        if launch.local_size is not None:
            limit = self.max_work_group_size(built)
            if int(np.prod(launch.local_size)) > limit:
                raise ExecutionError(f"work-group size {launch.local_size} exceeds this kernel's limit of {limit} "
                                     "work-items on this device (registers or local memory)")
        kernel = launcher.bind(built, self.program.name, launch, self._memory(launch))
        times: list[float] = []
        elapsed = 0.0
        try:
            for i in range(warmup + repeats):
                self._restore()
                event = cl.enqueue_nd_range_kernel(self.queue, kernel, launch.global_size, launch.local_size)
                event.wait()
                seconds = (event.profile.end - event.profile.start) * 1e-9
                elapsed += seconds
                if i >= warmup:
                    times.append(seconds)
                if max_seconds is not None and elapsed > max_seconds:
                    if not times:  # a slow variant: its warm-up launch is its one measurement
                        times.append(seconds)
                    break
            outputs = {}
            if read_outputs:
                for name in self.prepared.outputs:
                    out = np.empty_like(self.prepared.arrays[name])
                    cl.enqueue_copy(self.queue, out, self.buffers[name])
                    outputs[name] = out
            self.queue.finish()
        except cl.Error as exc:
            raise ExecutionError(f"launch failed (global {launch.global_size}, local {launch.local_size}): {exc}") \
                from None
        return Timing(times, outputs)


def outputs_match(got: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], rtol: float = 1e-4) -> Optional[str]:
    """None if every output matches (integers exactly, floats within rtol of the data's scale);
    otherwise a short description of the first mismatch."""
    for name, ref in expected.items():
        out = got.get(name)
        if out is None or out.shape != ref.shape:
            return f"output '{name}' is missing or has the wrong shape"
        if ref.dtype.kind == "f":
            scale = max(1.0, float(np.abs(ref).max()))
            bad = ~np.isclose(out, ref, rtol=rtol, atol=rtol * scale)
        else:
            bad = out != ref
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            return f"output '{name}' differs at {where}: {out[where]} instead of {ref[where]} ({int(bad.sum())} values)"
    return None


__all__ = ["Session", "Timing", "outputs_match", "BuildError", "ExecutionError"]
