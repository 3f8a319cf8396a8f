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
    problem: Optional[str] = None  # set when a verified launch did not reproduce the reference

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    @property
    def spread(self) -> float:
        """Relative spread: (max - min) / median."""
        return float((max(self.times) - min(self.times)) / self.median) if self.times else 0.0


_COMPARE = """
__kernel void imcl_compare(__global const {t}* out, __global const {t}* ref, const int n, const float rtol,
                           const float atol, __global int* bad)
{{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    {check}
}}
"""
# NaN matches NaN: pixels that no variant writes keep the NaN they were poisoned with
_FLOAT_CHECK = ("const float a = out[i], b = ref[i];\n"
                "    if (!(isnan(a) && isnan(b)) && !(fabs(a - b) <= atol + rtol * fabs(b)))\n        atomic_inc(bad);")
_EXACT_CHECK = "if (out[i] != ref[i])\n        atomic_inc(bad);"
_SENTINEL = {"f": np.nan}  # floats: NaN, never equal to anything: an unwritten pixel cannot pass


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
        self.read_write = set()
        for name, host in self.prepared.arrays.items():
            self.buffers[name] = cl.Buffer(self.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host)
            array = program.info.arrays[name]
            if array.is_written:
                self.pristine[name] = cl.Buffer(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)
                if array.is_read:
                    self.read_write.add(name)
        self.images: dict[str, Any] = {}
        self.reference: dict[str, Any] = {}
        self.reference_host: dict[str, np.ndarray] = {}
        self.reference_scale: dict[str, float] = {}
        self._bad = cl.Buffer(self.context, mf.READ_WRITE, 4)

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

    def _restore(self, only_read_write: bool = False) -> None:
        import pyopencl as cl

        for name, src in self.pristine.items():
            if only_read_write and name not in self.read_write:
                continue
            cl.enqueue_copy(self.queue, self.buffers[name], src)

    def _poison(self) -> None:
        """Before a verified launch: written-only float outputs become NaN, so that a pixel a
        variant forgets to write cannot match the reference; the rest get their initial data."""
        import pyopencl as cl

        for name, src in self.pristine.items():
            host = self.prepared.arrays[name]
            if name not in self.read_write and host.dtype.kind == "f":
                cl.enqueue_fill_buffer(self.queue, self.buffers[name], host.dtype.type(np.nan), 0, host.nbytes)
            else:
                cl.enqueue_copy(self.queue, self.buffers[name], src)

    def max_work_group_size(self, built) -> int:
        import pyopencl as cl

        kernel = launcher._kernel(built, self.program.kernel_symbol)
        return int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device))

    # ---- the reference and on-device comparison -------------------------------------------------
    def set_reference(self, outputs: Mapping[str, np.ndarray]) -> None:
        """Outputs every later variant must reproduce (normally the naive variant's)."""
        import pyopencl as cl

        for name, host in outputs.items():
            self.reference_host[name] = host
            # the tolerance's scale, computed once: per variant it would cost a pass over the image
            self.reference_scale[name] = reference_scale(host)
            self.reference[name] = cl.Buffer(self.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                                             hostbuf=np.ascontiguousarray(host))

    def _compare_program(self, dtype: np.dtype):
        ctype = {"float32": "float", "float64": "double", "int8": "char", "uint8": "uchar", "int16": "short",
                 "uint16": "ushort", "int32": "int", "uint32": "uint"}[dtype.name]
        check = _FLOAT_CHECK.replace("float a", f"{ctype} a") if dtype.kind == "f" else _EXACT_CHECK
        source = _COMPARE.format(t=ctype, check=check)
        if ctype == "double":
            source = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" + source
        return launcher.build(self.device, source)

    def mismatches(self, rtol: float = 1e-4) -> dict[str, int]:
        """Per output, how many values differ from the reference (computed on the device)."""
        import pyopencl as cl

        counts = {}
        for name, ref in self.reference.items():
            host = self.reference_host[name]
            n = host.size
            scale = self.reference_scale[name]
            cl.enqueue_fill_buffer(self.queue, self._bad, np.int32(0), 0, 4)
            kernel = launcher._kernel(self._compare_program(host.dtype), "imcl_compare")
            kernel.set_args(self.buffers[name], ref, np.int32(n), np.float32(rtol), np.float32(rtol * scale), self._bad)
            cl.enqueue_nd_range_kernel(self.queue, kernel, (-(-n // 256) * 256,), (256,))
            bad = np.zeros(1, np.int32)
            cl.enqueue_copy(self.queue, bad, self._bad)
            counts[name] = int(bad[0])
        return counts

    def download(self) -> dict[str, np.ndarray]:
        import pyopencl as cl

        outputs = {}
        for name in self.prepared.outputs:
            out = np.empty_like(self.prepared.arrays[name])
            cl.enqueue_copy(self.queue, out, self.buffers[name])
            outputs[name] = out
        return outputs

    # ---- timing -----------------------------------------------------------------------------------
    def time(self, plan, repeats: int = 3, warmup: int = 1, read_outputs: bool = True,
             max_seconds: Optional[float] = None, verify: bool = False) -> Timing:
        """Build (cached) and launch `plan`: the first launch is checked (on the device against the
        reference when `verify`, else its outputs are read back), then `repeats` timed launches.
        Raises BuildError / ExecutionError on failure; a wrong output sets `Timing.problem`."""
        import pyopencl as cl

        source = self.program.source_of(plan)
        built = launcher.build(self.device, source)
        launch = self.program.launch_for(plan, self.prepared)
        if launch.local_size is not None:
            limit = self.max_work_group_size(built)
            if int(np.prod(launch.local_size)) > limit:
                raise ExecutionError(f"work-group size {launch.local_size} exceeds this kernel's limit of {limit} "
                                     "work-items on this device (registers or local memory)")
        kernel = launcher.bind(built, self.program.kernel_symbol, launch, self._memory(launch))
        timing = Timing([])
        try:
            # the checked launch (also the warm-up)
            self._poison()
            first = cl.enqueue_nd_range_kernel(self.queue, kernel, launch.global_size, launch.local_size)
            first.wait()
            first_seconds = (first.profile.end - first.profile.start) * 1e-9
            if verify:
                bad = self.mismatches()
                if any(bad.values()):
                    timing.problem = outputs_match(self.download(), self.reference_host) or f"mismatches: {bad}"
            elif read_outputs:
                timing.outputs = self.download()
            for _ in range(max(0, warmup - 1)):
                self._restore(only_read_write=True)
                cl.enqueue_nd_range_kernel(self.queue, kernel, launch.global_size, launch.local_size)
            if max_seconds is not None and first_seconds > max_seconds:
                timing.times = [first_seconds]  # a slow variant: its checked launch is its one measurement
                self.queue.finish()
                return timing
            events = []
            for _ in range(repeats):
                if self.read_write:
                    self._restore(only_read_write=True)
                events.append(cl.enqueue_nd_range_kernel(self.queue, kernel, launch.global_size, launch.local_size))
            self.queue.finish()
            timing.times = [(e.profile.end - e.profile.start) * 1e-9 for e in events] or [first_seconds]
        except cl.Error as exc:
            raise ExecutionError(f"launch failed (global {launch.global_size}, local {launch.local_size}): {exc}") \
                from None
        return timing


def reference_scale(ref: np.ndarray) -> float:
    """The scale of a float output's absolute tolerance (tolerance * scale): its largest finite
    magnitude, at least 1 (0 for integers, which compare exactly)."""
    if ref.dtype.kind != "f":
        return 0.0
    finite = ref[np.isfinite(ref)]
    return max(1.0, float(np.abs(finite).max())) if finite.size else 1.0


def output_mismatch(out: np.ndarray, ref: np.ndarray, rtol: float, scale: float) -> Optional[str]:
    """None when `out` matches `ref` (floats within rtol * |ref| + rtol * scale, NaN matching NaN;
    integers exactly), else where and how it differs."""
    if ref.dtype.kind == "f":
        bad = ~np.isclose(out, ref, rtol=rtol, atol=rtol * scale, equal_nan=True)
    else:
        bad = out != ref
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"differs at {where}: {out[where]} instead of {ref[where]} ({int(bad.sum())} of {bad.size} values)"


def outputs_match(got: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], rtol: float = 1e-4) -> Optional[str]:
    """None if every output matches (integers exactly, floats within rtol of the data's scale);
    otherwise a short description of the first mismatch."""
    for name, ref in expected.items():
        out = got.get(name)
        if out is None or out.shape != ref.shape:
            return f"output '{name}' is missing or has the wrong shape"
        problem = output_mismatch(out, ref, rtol, reference_scale(ref))
        if problem:
            return f"output '{name}' {problem}"
    return None


__all__ = ["Session", "Timing", "outputs_match", "output_mismatch", "reference_scale", "BuildError", "ExecutionError"]
