"""Running a hand-written kernel's variants in the measurement worker (see target.py).

Arguments are uploaded once. Verification is runtime/verify.py's, as for `.icl` variants: each
Output is poisoned before a verified launch with a value its reference never holds (two launches
with two values when there is none), so an element a variant forgets to write can never pass;
InOut arguments get their initial data back instead; the comparison runs on the device. A
reference kernel runs twice to find the elements it leaves unwritten: a variant must leave those
unwritten too. Timing: runtime/timing.py's loop, as session.py's.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from ..errors import ConfigError, ExecutionError
from ..runtime.timing import Timing, check_work_group_limit, event_seconds, time_launches
from ..runtime.verify import Verifier, capture_reference, poison_values


def build_input(source: str, build_options: Sequence[str], defines: Sequence[str],
                config: Mapping[str, int]) -> tuple[str, tuple[str, ...]]:
    """The source and build options of a configuration: its parameters as -D NAME=value."""
    return source, tuple(build_options) + tuple(f"-D{n}={int(config[n])}" for n in defines)


class KernelRunner:
    """Builds, launches, times and verifies configurations of one hand-written kernel."""

    def __init__(self, setup: dict, device, on_built: Optional[Callable[[], None]] = None) -> None:
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
        self.verifier = Verifier(device, self.tolerance)
        self._on_built = on_built
        for i, (ref, unwritten) in self._reference(setup.get("reference")).items():
            self.verifier.add(i, f"argument {i}", self.buffers[i], ref, unwritten, poisoned=i in self.outputs)

    # ---- the reference -------------------------------------------------------------------------
    def _reference(self, reference: Optional[dict]) -> dict[int, tuple[np.ndarray, Optional[np.ndarray]]]:
        """Each checked argument's reference, and where it is unwritten (None: nowhere)."""
        if not reference:
            return {}
        if "outputs" in reference:
            return {int(i): (np.asarray(r), None) for i, r in reference["outputs"].items()}
        from ..runtime import launcher

        spec = reference["kernel"]
        built = launcher.build(self.device, spec["source"], spec["options"])
        kernel = self._kernel(built, spec["kernel_name"])
        local = None if spec["local"] is None else tuple(spec["local"])
        if self._on_built is not None:
            self._on_built()

        def run() -> None:
            self._restore(self.inouts)  # the reference sees every input's initial data
            self._launch(kernel, tuple(spec["global"]), local).wait()

        written = {i: (self.buffers[i], self.args[i]["data"]) for i in self.outputs + self.inouts}
        return capture_reference(self.queue, written, set(self.outputs), run)

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
             max_seconds: Optional[float] = None, verify: bool = False,
             stop_above: Optional[float] = None, probe: float = 0.0,
             meanwhile: Optional[Callable[[], None]] = None) -> Timing:
        # `probe` is not used: a hand-written kernel may rely on its whole grid (a cut one could
        # index past its buffers), so it is censored on its checked launch only
        import pyopencl as cl

        from ..runtime import launcher

        source, options = self.build_input(config)
        global_size, local_size = self.rules.sizes(config)
        built = launcher.build(self.device, source, options)
        kernel = self._kernel(built, self.kernel_name)
        check_work_group_limit(kernel, self.device, local_size)
        timing = Timing([])

        def enqueue():
            return self._launch(kernel, global_size, local_size)

        try:
            if verify:
                poisoned = self.verifier.poisoned
                first, timing.problem = self.verifier.checked_launch(
                    lambda: self._restore([i for i in self.outputs + self.inouts if i not in poisoned]), enqueue,
                    meanwhile)
                if timing.problem:
                    return timing
            else:
                self._restore(self.outputs + self.inouts)
                first = enqueue()
                if meanwhile is not None:
                    meanwhile()
                first.wait()
                if read_outputs:
                    timing.outputs = {str(i): self._download(i) for i in self.outputs + self.inouts}
            timing.first = event_seconds(first)
            if stop_above is not None and timing.first > stop_above:  # see Session.time
                timing.censored = True
                return timing
            timing.times = time_launches(self.queue, enqueue, lambda: self._restore(self.inouts),
                                         timing.first, repeats, warmup, max_seconds)
        except cl.Error as exc:
            raise ExecutionError(f"launch failed (global {global_size}, local {local_size}): {exc}") from None
        return timing


__all__ = ["KernelRunner", "build_input", "poison_values"]
