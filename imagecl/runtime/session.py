"""Running many variants of one program on one set of arguments, with data uploaded once.

A `Session` keeps the inputs on the device (buffers, and images on first use), restores the
written arrays before every launch, times launches with OpenCL profiling events, and checks
each variant's outputs against a reference (normally the naive variant's) on the device
(verify.py says how, timing.py what is timed).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

import numpy as np

from ..errors import BuildError, ExecutionError
from . import launcher
from .arguments import prepare
from .devices import context_and_queue, select_device
from .memory import check_device, prepared_buffers
from .timing import Timing, check_work_group_limit, event_seconds, probe_global, time_launches
from .verify import Verifier, capture_reference, describe_mismatch, reference_scale


class Session:
    def __init__(self, program, arguments: Mapping[str, Any], device: Any = None) -> None:
        import pyopencl as cl

        self.program = program
        self.device = select_device(device)
        self.context, self.queue = context_and_queue(self.device)
        self.prepared = prepare(program.info, dict(arguments))
        check_device(prepared_buffers(program.info, self.prepared.arrays), self.device)
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
        self.verifier = Verifier(self.device)

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

    def _restore(self, only_read_write: bool = False, skip: frozenset = frozenset()) -> None:
        import pyopencl as cl

        for name, src in self.pristine.items():
            if (only_read_write and name not in self.read_write) or name in skip:
                continue
            cl.enqueue_copy(self.queue, self.buffers[name], src)

    def _poison(self) -> None:
        """Before an unverified checked launch: written-only float outputs become NaN, so that
        pixels the variant leaves unwritten show as such in its outputs; the rest get their
        initial data."""
        import pyopencl as cl

        for name, src in self.pristine.items():
            host = self.prepared.arrays[name]
            if name not in self.read_write and host.dtype.kind == "f":
                cl.enqueue_fill_buffer(self.queue, self.buffers[name], host.dtype.type(np.nan), 0, host.nbytes)
            else:
                cl.enqueue_copy(self.queue, self.buffers[name], src)

    def _kernel(self, plan):
        """The bound kernel of `plan` (built once per process) and its launch."""
        source = self.program.source_of(plan)
        built = launcher.build(self.device, source)
        launch = self.program.launch_for(plan, self.prepared)
        kernel = launcher._kernel(built, self.program.kernel_symbol)
        check_work_group_limit(kernel, self.device, launch.local_size)
        return launcher.bind(built, self.program.kernel_symbol, launch, self._memory(launch)), launch

    # ---- the reference ------------------------------------------------------------------------------
    def set_reference_from(self, plan, on_built: Optional[Callable[[], None]] = None) -> dict[str, np.ndarray]:
        """Make `plan`'s outputs (normally the naive variant's) the reference of every later
        verified launch, including where it leaves pixels unwritten (see runtime/verify.py).
        Returns its outputs (NaN, or the fill 0, where it writes nothing). `on_built` is called
        between building `plan` and running it."""
        import pyopencl as cl

        kernel, launch = self._kernel(plan)
        if on_built is not None:
            on_built()

        def run() -> None:
            self._restore(only_read_write=True)
            cl.enqueue_nd_range_kernel(self.queue, kernel, launch.global_size, launch.local_size).wait()

        outputs = {name: (self.buffers[name], self.prepared.arrays[name]) for name in self.pristine}
        try:
            references = capture_reference(self.queue, outputs, set(self.pristine) - self.read_write, run)
        except cl.Error as exc:
            raise ExecutionError(f"launch failed (global {launch.global_size}, local {launch.local_size}): {exc}") \
                from None
        self.verifier = Verifier(self.device)
        for name in self.prepared.outputs:
            host, unwritten = references[name]
            self.verifier.add(name, f"output '{name}'", self.buffers[name], host, unwritten,
                              poisoned=name not in self.read_write, rounded=name in self.program.rounded_outputs)
        return {name: references[name][0] for name in self.prepared.outputs}

    def set_reference(self, outputs: Mapping[str, np.ndarray]) -> None:
        """Outputs every later variant must reproduce, every pixel (see set_reference_from for a
        variant's outputs, where it may leave pixels unwritten)."""
        self.verifier = Verifier(self.device)
        for name, host in outputs.items():
            self.verifier.add(name, f"output '{name}'", self.buffers[name], np.asarray(host),
                              poisoned=name not in self.read_write, rounded=name in self.program.rounded_outputs)

    def download(self) -> dict[str, np.ndarray]:
        import pyopencl as cl

        outputs = {}
        for name in self.prepared.outputs:
            out = np.empty_like(self.prepared.arrays[name])
            cl.enqueue_copy(self.queue, out, self.buffers[name])
            outputs[name] = out
        return outputs

    # ---- timing -----------------------------------------------------------------------------------
    def prepare(self, plan) -> None:
        """Do ahead the host work of `plan`'s next time() that needs no device (its launch's
        arguments and geometry, kept by the program): run while another variant's launch is on
        the device, it is off the measurement's critical path."""
        self.program.launch_for(plan, self.prepared)

    def time(self, plan, repeats: int = 3, warmup: int = 1, read_outputs: bool = True,
             max_seconds: Optional[float] = None, verify: bool = False,
             stop_above: Optional[float] = None, probe: float = 0.0,
             meanwhile: Optional[Callable[[], None]] = None) -> Timing:
        """Build (cached) and launch `plan`: the first launch is checked (on the device against the
        reference when `verify`, else its outputs are read back), then `repeats` timed launches,
        unless the checked launch took over `stop_above` seconds (`Timing.censored`, no times).
        `probe` (a fraction): first a launch of that part of the work-groups (`Timing.probe`),
        which alone ends the measurement when it takes over `stop_above`, before any check.
        `meanwhile`: host work run once while the checked launch is on the device.
        Raises BuildError / ExecutionError on failure; a wrong output sets `Timing.problem`."""
        import pyopencl as cl

        kernel, launch = self._kernel(plan)
        timing = Timing([])

        def enqueue():
            return cl.enqueue_nd_range_kernel(self.queue, kernel, launch.global_size, launch.local_size)

        try:
            # a probe only where it leaves several waves of work-groups (else it is no shorter)
            partial = probe_global(launch.global_size, launch.local_size, probe,
                                   4 * self.device.max_compute_units) if probe else None
            if partial is not None:
                self._restore(only_read_write=True)
                # one work-group first: a kernel's first launch may include its compilation for
                # this work-group size (PoCL), which must not count as the probe's time
                # (not waited for: the queue is in order, and the probe's time is its own profile)
                cl.enqueue_nd_range_kernel(self.queue, kernel, tuple(launch.local_size), launch.local_size)
                event = cl.enqueue_nd_range_kernel(self.queue, kernel, partial, launch.local_size)
                event.wait()
                timing.probe = event_seconds(event)
                if stop_above is not None and timing.probe > stop_above:
                    timing.censored = True
                    return timing
            # the checked launch (also the warm-up)
            if verify:
                first, timing.problem = self.verifier.checked_launch(
                    lambda: self._restore(skip=frozenset(self.verifier.poisoned)), enqueue, meanwhile)
                if timing.problem:
                    return timing
            else:
                self._poison()
                first = enqueue()
                if meanwhile is not None:
                    meanwhile()
                first.wait()
                if read_outputs:
                    timing.outputs = self.download()
            timing.first = event_seconds(first)
            if stop_above is not None and timing.first > stop_above:
                timing.censored = True
                return timing
            timing.times = time_launches(self.queue, enqueue, lambda: self._restore(only_read_write=True),
                                         timing.first, repeats, warmup, max_seconds)
        except cl.Error as exc:
            raise ExecutionError(f"launch failed (global {launch.global_size}, local {launch.local_size}): {exc}") \
                from None
        return timing


def output_mismatch(out: np.ndarray, ref: np.ndarray, rtol: float, scale: float) -> Optional[str]:
    """None when `out` matches `ref` (floats within rtol * |ref| + rtol * scale, NaN matching NaN;
    integers exactly), else where and how it differs."""
    return describe_mismatch(out, ref, None, None, rtol, scale)


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
