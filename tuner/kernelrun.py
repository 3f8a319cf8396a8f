"""Running a hand-written kernel's variants in the measurement worker (see target.py).

Arguments are uploaded once. Before every verified launch each output is *poisoned* with a
value that occurs nowhere in its reference (NaN, an infinity, or an integer the reference lacks;
two launches with two different values when no such value exists), so an element a variant
forgets to write can never pass; in-out arguments get their initial data back instead. Floats
match within `tolerance` of the reference's scale, integers exactly. Timing: profiling events of
the kernel alone, after a checked warm-up launch, median of the repeats (as session.py).
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ..errors import ConfigError, ExecutionError
from ..runtime.session import Timing, output_mismatch, reference_scale


def build_input(source: str, build_options: Sequence[str], defines: Sequence[str],
                config: Mapping[str, int]) -> tuple[str, tuple[str, ...]]:
    """The source and build options of a configuration: its parameters as -D NAME=value."""
    return source, tuple(build_options) + tuple(f"-D{n}={int(config[n])}" for n in defines)


def poison_values(reference: np.ndarray) -> list[Any]:
    """Fill values an unwritten element cannot pass with: one absent from `reference`, or two
    different ones (an element cannot equal both)."""
    flat = reference.ravel()
    dtype = reference.dtype
    if dtype.kind == "f":
        for v in (np.nan, np.inf, -np.inf):
            if not (np.isnan(flat).any() if np.isnan(v) else (flat == v).any()):
                return [dtype.type(v)]
        return [dtype.type(np.nan), dtype.type(0)]
    if dtype.kind == "b":
        return [np.bool_(False), np.bool_(True)]
    info = np.iinfo(dtype)
    present = np.unique(flat)
    for v in (info.max, info.min, info.max - 1, info.min + 1, 0x55, -0x56):
        if info.min <= v <= info.max and not np.isin(v, present, assume_unique=True):
            return [dtype.type(v)]
    if dtype.itemsize <= 2:
        absent = np.setdiff1d(np.arange(info.min, info.max + 1, dtype=np.int64), present.astype(np.int64))
        if len(absent):
            return [dtype.type(absent[0])]
    else:
        rng = np.random.default_rng(0)
        draws = rng.integers(info.min, info.max, size=1024, dtype=dtype, endpoint=True)
        absent = draws[~np.isin(draws, present)]
        if len(absent):
            return [dtype.type(absent[0])]
    return [dtype.type(info.min), dtype.type(info.max)]


class KernelRunner:
    """Builds, launches, times and verifies configurations of one hand-written kernel."""

    def __init__(self, setup: dict, device) -> None:
        import pyopencl as cl

        from ..runtime.devices import context_and_queue

        self.device = device
        self.context, self.queue = context_and_queue(device)
        self.source, self.kernel_name = setup["source"], setup["kernel_name"]
        self.build_options, self.defines = tuple(setup["build_options"]), tuple(setup["defines"])
        self.rules = setup["rules"]
        self.tolerance = float(setup["tolerance"])
        mf = cl.mem_flags
        self.args = setup["arguments"]
        self.buffers: dict[int, Any] = {}
        self.pristine: dict[int, Any] = {}
        for i, arg in enumerate(self.args):
            if arg["kind"] == "array":
                data = arg["data"]
                self.buffers[i] = cl.Buffer(self.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=data)
                if arg["role"] != "in":
                    self.pristine[i] = cl.Buffer(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=data)
        self.outputs = [i for i, a in enumerate(self.args) if a["kind"] == "array" and a["role"] == "out"]
        self.inouts = [i for i, a in enumerate(self.args) if a["kind"] == "array" and a["role"] == "inout"]
        self.reference = self._reference(setup.get("reference"))
        self.scales = {i: reference_scale(r) for i, r in self.reference.items()}
        # the poison values of each output; a second pass only where one value cannot do
        self.poisons = {i: poison_values(r) for i, r in self.reference.items()}

    # ---- the reference -------------------------------------------------------------------------
    def _reference(self, reference: Optional[dict]) -> dict[int, np.ndarray]:
        if not reference:
            return {}
        if "outputs" in reference:
            return {int(i): np.asarray(r) for i, r in reference["outputs"].items()}
        from ..runtime import launcher

        spec = reference["kernel"]
        built = launcher.build(self.device, spec["source"], spec["options"])
        kernel = self._kernel(built, spec["kernel_name"])
        self._restore(self.buffers)  # the reference sees every argument's initial data
        self._launch(kernel, tuple(spec["global"]), None if spec["local"] is None else tuple(spec["local"])).wait()
        written = [i for i, a in enumerate(self.args) if a["kind"] == "array" and a["role"] != "in"]
        return {i: self._download(i) for i in written}

    # ---- helpers ---------------------------------------------------------------------------------
    def _kernel(self, built, name: str):
        import pyopencl as cl

        from ..runtime import launcher

        try:
            kernel = launcher._kernel(built, name)
        except (AttributeError, cl.Error):
            raise ConfigError(f"the program has no kernel named '{name}'") from None
        values = [self.buffers[i] if a["kind"] == "array" else a["value"] for i, a in enumerate(self.args)]
        try:
            kernel.set_args(*values)
        except cl.Error as exc:
            raise ExecutionError(f"kernel '{name}' rejected its arguments (count or types): {exc}") from None
        return kernel

    def _launch(self, kernel, global_size, local_size):
        import pyopencl as cl

        try:
            return cl.enqueue_nd_range_kernel(self.queue, kernel, global_size, local_size)
        except cl.Error as exc:
            raise ExecutionError(f"launch failed (global {global_size}, local {local_size}): {exc}") from None

    def _restore(self, which) -> None:
        import pyopencl as cl

        for i in which:
            if i in self.pristine:
                cl.enqueue_copy(self.queue, self.buffers[i], self.pristine[i])

    def _download(self, i: int) -> np.ndarray:
        import pyopencl as cl

        out = np.empty_like(self.args[i]["data"])
        cl.enqueue_copy(self.queue, out, self.buffers[i])
        return out

    def build_input(self, config: Mapping[str, int]) -> tuple[str, tuple[str, ...]]:
        return build_input(self.source, self.build_options, self.defines, config)

    # ---- one configuration -----------------------------------------------------------------------
    def time(self, config: Mapping[str, int], repeats: int = 3, warmup: int = 1, read_outputs: bool = True,
             max_seconds: Optional[float] = None, verify: bool = False) -> Timing:
        import pyopencl as cl

        from ..runtime import launcher

        source, options = self.build_input(config)
        global_size, local_size = self.rules.sizes(config)
        built = launcher.build(self.device, source, options)
        kernel = self._kernel(built, self.kernel_name)
        if local_size is not None:
            limit = int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device))
            if int(np.prod(local_size)) > limit:
                raise ExecutionError(f"work-group size {local_size} exceeds this kernel's limit of {limit} "
                                     "work-items on this device (registers or local memory)")
        timing = Timing([])
        try:
            passes = max((len(self.poisons[i]) for i in self.outputs if i in self.poisons), default=1) if verify else 1
            for k in range(passes):
                for i in self.outputs:
                    values = self.poisons.get(i) if verify else None
                    if values:
                        cl.enqueue_fill_buffer(self.queue, self.buffers[i], values[min(k, len(values) - 1)], 0,
                                               self.args[i]["data"].nbytes)
                    else:
                        self._restore([i])
                self._restore(self.inouts)
                first = self._launch(kernel, global_size, local_size)
                first.wait()
                if verify:
                    for i, ref in self.reference.items():
                        problem = output_mismatch(self._download(i), ref, self.tolerance, self.scales[i])
                        if problem:
                            timing.problem = f"argument {i} {problem}"
                            return timing
            first_seconds = (first.profile.end - first.profile.start) * 1e-9
            if read_outputs and not verify:
                timing.outputs = {str(i): self._download(i) for i in self.outputs + self.inouts}
            for _ in range(max(0, warmup - 1)):
                self._restore(self.inouts)
                self._launch(kernel, global_size, local_size)
            if max_seconds is not None and first_seconds > max_seconds:
                self.queue.finish()
                timing.times = [first_seconds]  # a slow variant: its checked launch is its one measurement
                return timing
            events = []
            for _ in range(repeats):
                self._restore(self.inouts)
                events.append(self._launch(kernel, global_size, local_size))
            self.queue.finish()
            timing.times = [(e.profile.end - e.profile.start) * 1e-9 for e in events] or [first_seconds]
        except cl.Error as exc:
            raise ExecutionError(f"launch failed (global {global_size}, local {local_size}): {exc}") from None
        return timing
