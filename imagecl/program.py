"""A compiled ImageCL program: the checked IR, its tuning space, its variants, and running them."""
from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from .codegen import lanes
from .codegen.variant import VariantPlan, generate, kernel_args, launch_geometry, local_images, tile_bytes_at_launch
from .errors import ArgumentError, ConfigError, ImageCLError
from .frontend.parser import parse
from .frontend.source import decode_source
from .passes.coverage import overwritten_images
from .passes.rounding import rounded_outputs
from .passes.footprint import AccessAnalysis
from .passes.semantic import ProgramInfo, analyse
from .runtime import interop, launcher
from .runtime.arguments import PreparedArgs, prepare
from .runtime.built import BuiltKernel
from .runtime.devices import select_device
from .passes.footprint import analyse_accesses
from .passes.specialise import assignments, specialise
from .runtime.memory import check_device, check_host, prepared_buffers
from .runtime.timing import check_work_group_limit
from .service.client import served_config
from .space import DeviceLimits, Space, build_space

_UNSET: Any = object()


class Program:
    """One `.icl` kernel, checked and ready to run on any OpenCL device.

    `prog(**arrays_and_scalars)` runs it and returns every written array as a NumPy array;
    `prog.space` is its tuning space on the default device; `prog(..., config=cfg)` runs a variant.
    """

    def __init__(self, info: ProgramInfo, pinned: Optional[Mapping[str, Any]] = None) -> None:
        self.info = info
        # a configuration loaded with the program (an exported `tune -o` folder): it replaces the registry
        self.pinned = dict(pinned) if pinned is not None else None
        self._warned_sizes: set = set()
        self.service: Optional[str] = None  # a tuning service's URL (imagecl.service.client), else $IMAGECL_SERVICE
        self._check_forced_local_memory()

    # ---- description ---------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.info.kernel.name

    @property
    def kernel_symbol(self) -> str:
        """The OpenCL kernel function's name (the kernel's name, renamed where it collides with
        a word of OpenCL C)."""
        return self.info.c_name(self.info.kernel.name)

    @property
    def filename(self) -> str:
        return self.info.filename

    @property
    def parameters(self) -> list[str]:
        return [p.name for p in self.info.params]

    @property
    def outputs(self) -> list[str]:
        return self.info.outputs

    def __repr__(self) -> str:
        return f"<imagecl.Program '{self.name}' from {self.filename}: outputs {', '.join(self.outputs)}>"

    # ---- analyses and the space ---------------------------------------------------------
    def specialised(self, tunables: Mapping[str, int]) -> ProgramInfo:
        """The IR with the tunables at `tunables` (passes/specialise.py), made once per assignment."""
        key = tuple(sorted((k, int(v)) for k, v in tunables.items()))
        cache = self.__dict__.setdefault("_specialised", {})
        if key not in cache:
            cache[key] = specialise(self.info, dict(key))
        return cache[key]

    @functools.cached_property
    def analyses(self) -> dict[tuple, AccessAnalysis]:
        """Access analyses per assignment of the tunables (footprints may depend on them), each
        of the IR specialised for it."""
        return {tuple(sorted(values.items())): analyse_accesses(self.specialised(values))
                for values in assignments(self.info)}

    @functools.cached_property
    def lane_bodies(self) -> list:
        """The tunables' assignments whose body can run as vector code, each with its lane analysis
        (codegen/lanes.lane_bodies), from the specialisations kept here: once per program, not
        once per device and size."""
        return lanes.lane_bodies(self.info, self.specialised)

    @property
    def lane_assignments(self) -> list[dict[str, int]]:
        return [values for values, _ in self.lane_bodies]

    @property
    def lane_value_count(self) -> int:
        """codegen/lanes.lane_values of those bodies."""
        return lanes.lane_values(self.lane_bodies)

    def analysis_for(self, tunables: Mapping[str, int]) -> AccessAnalysis:
        return self.analyses[tuple(sorted((k, int(v)) for k, v in tunables.items()))]

    @property
    def space(self) -> Space:
        """The tuning space on the default device."""
        return self.space_for()

    def space_for(self, device: Any = None, problem_shape: Optional[tuple[int, ...]] = None) -> Space:
        """The tuning space on `device` (index, name fragment or pyopencl Device); with a problem
        shape (NumPy order), size-dependent limits such as image sizes become constraints too."""
        return self.space_for_limits(DeviceLimits.of(select_device(device)), problem_shape)

    def space_for_limits(self, limits: DeviceLimits, problem_shape: Optional[tuple[int, ...]] = None) -> Space:
        if self.info.wavefront is not None:  # its data-parallel variants would race on the output
            raise ConfigError(f"'{self.name}' is a wavefront program: what is tuned is its split between the CPU "
                              "and GPUs (imagecl tune, prog(..., split=...); docs/wavefront.md), not variants")
        key = (limits, problem_shape)
        cache = self.__dict__.setdefault("_spaces", {})
        if key not in cache:
            cache[key] = build_space(self.info, limits, problem_shape, self.analyses, self.lane_assignments,
                                     self.lane_value_count)
        return cache[key]

    def _check_forced_local_memory(self) -> None:
        for name in self.info.placement["local_mem"]:
            if self.info.arrays[name].kind != "image":
                continue  # a fixed-size array is copied whole, whatever its indices
            for analysis in self.analyses.values():
                fp = analysis.footprints.get(name)
                if fp is None or not fp.bounded:
                    pos = next((a.pos for p in self.info.unit.pragmas if p.name == "local_mem"
                                for a in p.args if a.name == name), self.info.kernel.pos)
                    from .errors import CompileError

                    raise CompileError(
                        f"'{name}' cannot be placed in local memory: its reads are not at bounded offsets "
                        "from the grid point", pos.line, pos.column, self.info.filename, self.info.unit.source)

    # ---- variants ----------------------------------------------------------------------------
    def plan(self, config: Optional[Mapping[str, Any] | str] = None, device: Any = None) -> VariantPlan:
        """The variant a configuration selects (None or "naive": the naive variant)."""
        if config is None or is_naive(config):
            return VariantPlan.naive(self.info)
        space = self.space_for(device)
        return space.plan(space.complete(config))

    def opencl_source(self, config: Optional[Mapping[str, Any]] = None, device: Any = None,
                      size: Optional[tuple[int, ...]] = None) -> str:
        """The OpenCL C source of the variant selected by `config`. Without one, the variant that
        `prog(...)` runs: the configuration loaded with the program, else the one tuned on `device`
        for `size` (width, height[, depth]; the nearest tuned size if that one never was; without
        a size, the largest tuned one), else the naive variant."""
        if self.info.wavefront is not None:  # one source for every split: wavefront/kernels.py
            from .wavefront.kernels import wavefront_source

            return wavefront_source(self.info)
        shape = None if size is None else tuple(int(s) for s in reversed(tuple(size)))
        if is_naive(config):
            return self.source_of(VariantPlan.naive(self.info), [])
        if config is None:
            config = self.pinned
        if config is None:
            from . import tuned

            if tuned.has_records(self):  # else no device is needed to show the naive variant
                cl_device = select_device(device)
                config = self.tuned_config(cl_device, self.space_for_limits(DeviceLimits.of(cl_device), shape), size)
        if config is None:
            return self.source_of(VariantPlan.naive(self.info), [])
        space = self.space_for(device, shape)
        full = space.complete(config)
        lines = ["configuration: " + ", ".join(f"{k}={v}" for k, v in sorted(full.items()))]
        return self.source_of(space.plan(full), lines)

    def source_of(self, plan: VariantPlan, config_lines: Optional[list[str]] = None) -> str:
        """The source of `plan`; plans that differ only in launch-only choices share it (the
        work-group size is launch-only except with local-memory tiles: see VariantPlan.compiled_wg)."""
        key = self._source_key(plan, config_lines)
        cache = self.__dict__.setdefault("_sources", {})
        if key not in cache:
            tunables = dict(plan.tunables)
            memo = self.__dict__.setdefault("_generation_memo", {})
            cache[key] = generate(self.specialised(tunables), plan, config_lines, self.analysis_for(tunables), memo)
        return cache[key]

    @staticmethod
    def _source_key(plan: VariantPlan, config_lines: Optional[list[str]]) -> tuple:
        return dataclasses.replace(plan, wg=plan.compiled_wg), tuple(config_lines or ())

    def adopt_source(self, plan: VariantPlan, source: str) -> None:
        """Take `source` as `plan`'s: what another process (a builder, tuner/pipeline.py)
        generated from this program for a plan of the same source, not generated again here."""
        self.__dict__.setdefault("_sources", {})[self._source_key(plan, None)] = source

    # ---- running ----------------------------------------------------------------------------------
    def __call__(self, *image: Any, device: Any = None, config: Optional[Mapping[str, Any] | str] = None,
                 timeout: Optional[float] = None, queue: Any = None, returns: str = "numpy", cast: bool = False,
                 allocator: Any = None, devices: Any = None, shares: Any = None, split: Any = None,
                 **arguments: Any) -> dict[str, Any]:
        """Run once and return every written array: NumPy arrays, or with returns="device"
        pyopencl.array.Arrays on the run's queue (returned without waiting for the kernel).
        A program with one input array takes it positionally: `prog(img)`. Arrays may be NumPy or
        pyopencl.array.Array (used on the device in place, never copied to the host); the run
        goes to `queue` (a pyopencl.CommandQueue: its context and device), else the queue of
        the first device array, else the default device (or `device`). `cast=True` converts
        arrays of another dtype (astype) instead of refusing them. `config`: a configuration of the
        space; "naive" for the naive variant (the program as written, whatever is tuned); None: the
        loaded folder's or the tuned configuration, else the naive variant. Device outputs are
        allocated with `allocator` (a pyopencl allocator such as pyopencl.tools.MemoryPool), else
        with the first device array's, as pyopencl.array operations do. `devices=[...]` splits the
        grid across several devices at once, `shares=` their fractions (runtime/multidevice.py).
        A wavefront program (docs/wavefront.md) runs split between the CPU and GPUs: `split=`
        forces the split (imagecl/wavefront/split.py) and `device=` names the CPU device."""
        if devices is not None or shares is not None:
            from .runtime import multidevice

            return multidevice.call(self, self._with_positional(image, arguments), devices, shares, config,
                                    device=device, timeout=timeout, queue=queue, returns=returns, cast=cast,
                                    allocator=allocator)
        outputs, _ = self._run(self._with_positional(image, arguments), device, config, timeout, queue, returns, cast,
                               timed=False, allocator=allocator, split=split)
        return outputs

    def run(self, arguments: Mapping[str, Any], device: Any = None, config: Optional[Mapping[str, Any] | str] = None,
            timeout: Optional[float] = None, queue: Any = None, returns: str = "numpy",
            cast: bool = False, allocator: Any = None, split: Any = None) -> tuple[dict[str, Any], Optional[float]]:
        """Run once; returns the written arrays and the kernel's time in seconds (profiling events;
        None on a caller's queue made without profiling). With a `timeout` (seconds) the run goes to
        a child process that is stopped, with an ExecutionError, when the upload, kernel and
        download take longer (starting it and building the kernel are not counted); it takes and
        returns NumPy arrays only. Without one it runs here, and a kernel that never ends blocks
        the caller. The other options are __call__'s."""
        return self._run(dict(arguments), device, config, timeout, queue, returns, cast, timed=True,
                         allocator=allocator, split=split)

    def iterate(self, n: int, *image: Any, devices: Any = None, shares: Any = None, h: Optional[int] = None,
                config: Any = None, feed: Optional[Mapping[str, str]] = None, cast: bool = False,
                **arguments: Any) -> dict[str, np.ndarray]:
        """`n` steps of a program whose outputs feed its next step's inputs (conway, a heat step),
        the data kept on the devices: see runtime/multidevice.iterate."""
        from .runtime import multidevice

        return multidevice.iterate(self, n, self._with_positional(image, arguments), devices, shares, h, config,
                                   cast, feed)

    def _with_positional(self, image: tuple, arguments: dict[str, Any]) -> dict[str, Any]:
        if not image:
            return arguments
        inputs = [p.name for p in self.info.params if p.name in self.info.arrays and self.info.arrays[p.name].is_read]
        if len(image) > 1:
            raise ArgumentError(f"'{self.name}' takes at most one argument by position (its input image), got "
                                f"{len(image)}: pass the others by name ({', '.join(self.parameters)})")
        if len(inputs) != 1:
            raise ArgumentError(f"'{self.name}' reads {len(inputs)} arrays ({', '.join(inputs) or 'none'}): pass "
                                "them by name, e.g. " + (f"prog({inputs[0]}=...)" if inputs else "prog(name=...)"))
        if inputs[0] in arguments:
            raise ArgumentError(f"'{inputs[0]}' is given twice: by position and by name")
        return {inputs[0]: image[0], **arguments}

    def _run(self, arguments: Mapping[str, Any], device: Any, config: Optional[Mapping[str, Any] | str],
             timeout: Optional[float], queue: Any, returns: str, cast: bool, timed: bool,
             allocator: Any = None, split: Any = None) -> tuple[dict, Optional[float]]:
        returns = interop.check_returns(returns)
        if split is not None and self.info.wavefront is None:
            raise ArgumentError(f"split= is a wavefront program's partition between devices; '{self.name}' is "
                                "not one (several devices: devices=[...], shares=[...])")
        if self.info.wavefront is not None:  # anti-diagonals across devices: wavefront/api.py
            from .wavefront.api import run_program

            result = run_program(self, arguments, device, config, split, timeout=timeout, queue=queue,
                                 returns=returns, allocator=allocator, cast=cast)
            return {self.info.wavefront: result.output}, result.seconds
        if timeout is not None:
            from .runtime.isolated import check_timeout, run_isolated

            timeout = check_timeout(timeout)
            if (queue is not None or allocator is not None or returns != "numpy"
                    or any(interop.is_device_array(v) for v in arguments.values())):
                raise ArgumentError("a run with a timeout goes to another process, so it takes and returns NumPy "
                                    "arrays only (no queue=, allocator=, device arrays or returns='device')")
            cl_device = select_device(device)
            prepared = prepare(self.info, dict(arguments), cast=cast)
            check_device(prepared_buffers(self.info, prepared.arrays), cl_device)
            _, full = self._plan_for(cl_device, prepared.grid_shape, config)
            return run_isolated(self, prepared, cl_device, full, timeout)
        target = interop.resolve_target(device, queue, arguments, allocator, returns)
        prepared = prepare(self.info, dict(arguments), copy=False, cast=cast, device_ok=True)
        ready = self._ready_for(target, prepared, config)
        if returns == "numpy":  # the host receives the written arrays (what is free changes: checked each call)
            check_host(ready.output_buffers, "the outputs", copies=1)
        enqueued = interop.enqueue(target, self.kernel_symbol, ready.program, ready.launch, prepared,
                                   self.overwritten)
        return interop.finish(target, self.kernel_symbol, enqueued, returns, timed)

    @functools.cached_property
    def overwritten(self) -> frozenset[str]:
        """The written images every run overwrites whole (passes/coverage.py): a run neither
        zero-fills nor copies in their old contents."""
        return overwritten_images(self.info)

    @functools.cached_property
    def rounded_outputs(self) -> frozenset[str]:
        """The integer outputs that hold rounded floating-point results (passes/rounding.py):
        a variant's may be one apart from the reference's on a few elements."""
        return rounded_outputs(self.info)

    def _ready_for(self, target: "interop.Target", prepared: PreparedArgs,
                   config: Optional[Mapping[str, Any] | str]) -> "Ready":
        """The built program and launch for these arguments' shapes, dtypes and scalars on the
        target's context and device, with the device-memory checks done: kept per all of these
        and the configuration (the tuned one's record file included), so that a repeated call is a
        lookup. Not kept for a configuration that cannot be a key (complete() then says why)."""
        config_key = self._config_key(target.device, prepared.grid_shape, config)
        key = None
        if config_key is not None:
            key = (target.context.int_ptr, target.device.int_ptr, config_key, prepared.grid_shape,
                   tuple((n, a.shape, a.dtype) for n, a in prepared.arrays.items()),
                   _scalars_key(prepared.scalars))
            try:
                hash(key)
            except TypeError:
                key = None
        cache = self.__dict__.setdefault("_ready", {})
        ready = cache.get(key) if key is not None else None
        if ready is None:
            buffers = prepared_buffers(self.info, prepared.arrays)
            check_device(buffers, target.device)
            plan, _ = self._plan_for(target.device, prepared.grid_shape, config, config_key)
            program = launcher.build(target.device, self.source_of(plan), context=target.context)
            launch = self.launch_for(plan, prepared)
            # a work-group the device allows may still be too large for this kernel's registers: say
            # so instead of the driver's OUT_OF_RESOURCES
            launcher.check_launch(program, self.kernel_symbol, target.device, launch.local_size)
            ready = Ready(program, launch,
                          [b for b, n in zip(buffers, prepared.arrays) if n in prepared.outputs])
            if key is not None:
                if len(cache) > 256:
                    cache.clear()
                cache[key] = ready
        return ready

    def _config_key(self, cl_device: Any, grid_shape: tuple[int, ...],
                    config: Optional[Mapping[str, Any] | str]) -> Any:
        """What selects the variant of a run, as a key: the given (else pinned) configuration's
        items, else the tuned record's file stamp (a new tuning changes it). None when the
        configuration is not a mapping of plain values (complete() then says what is wrong)."""
        from . import tuned

        if is_naive(config):
            return ("naive",)
        if config is None:
            config = self.pinned
        if config is None:
            return ("tuned", cl_device.int_ptr, grid_shape, tuned.stamp(self, cl_device))
        try:
            key = ("given", cl_device.int_ptr, grid_shape, tuple(sorted(config.items())))
            hash(key)
        except (AttributeError, TypeError):
            return None
        return key

    def _plan_for(self, cl_device: Any, grid_shape: tuple[int, ...], config: Optional[Mapping[str, Any] | str],
                  config_key: Any = _UNSET) -> tuple[VariantPlan, Optional[dict]]:
        """The variant a run uses (the given configuration, else the pinned one, else the tuned
        one at this size, else the naive one) and its full configuration (None: naive). Cached:
        every call of prog(...) asks, and the answer changes only with the registry's file.
        `config_key`: _config_key's answer when the caller has it."""
        if is_naive(config):
            return VariantPlan.naive(self.info), None
        space = self.space_for_limits(DeviceLimits.of(cl_device), grid_shape)
        if config is None:
            config = self.pinned
        key = self._config_key(cl_device, grid_shape, config) if config_key is _UNSET else config_key
        cache = self.__dict__.setdefault("_plans", {})
        if key is not None and key in cache:
            return cache[key]
        full = self.tuned_config(cl_device, space, tuple(reversed(grid_shape))) if config is None else config
        if full is None and config is None:  # no local tuning: a tuning service's, if one is named
            full = served_config(self, cl_device, space, tuple(reversed(grid_shape)))
        if full is None:
            result: tuple[VariantPlan, Optional[dict]] = (VariantPlan.naive(self.info), None)
        else:
            full = space.complete(full)
            result = (space.plan(full), full)
        if key is not None:
            if len(cache) > 256:
                cache.clear()
            cache[key] = result
        return result

    def build(self, target: Any = None, size: Optional[tuple[int, ...]] = None,
              config: Optional[Mapping[str, Any]] = None) -> BuiltKernel:
        """The variant prog(...) would run (or `config`'s) built for `target` (a
        pyopencl.CommandQueue, else a device as `device=` takes it, on our queue of that device)
        at `size` (width, height[, depth]; not needed for a program with a fixed grid_size), for
        enqueueing it yourself: see BuiltKernel."""
        import pyopencl as cl

        if isinstance(target, cl.CommandQueue):
            run_target = interop.resolve_target(None, target, {})
        else:
            run_target = interop.resolve_target(target, None, {})
        if self.info.grid:
            if size is None:
                raise ArgumentError(f"'{self.name}' runs over its images' grid: build(..., size=(width, height"
                                    + (", depth" if self.info.grid_dims == 3 else "") + ")) needs the size")
            size = tuple(size)
            if len(size) != self.info.grid_dims or not all(isinstance(s, (int, np.integer)) and s > 0 for s in size):
                raise ArgumentError(f"size= needs {self.info.grid_dims} positive integers (width, height"
                                    + (", depth" if self.info.grid_dims == 3 else "") + f"), got {size!r}")
            grid_shape = tuple(int(s) for s in reversed(size))
        else:
            grid_shape = tuple(reversed(self.info.grid_size))
        plan, full = self._plan_for(run_target.device, grid_shape, config)
        source = self.source_of(plan)
        program = launcher.build(run_target.device, source, context=run_target.context)
        global_size, local_size = launch_geometry(self.info, self._launch_plan(plan), tuple(reversed(grid_shape)))
        kernel = cl.Kernel(program, self.kernel_symbol)
        check_work_group_limit(kernel, run_target.device, local_size)
        return BuiltKernel(program, kernel, self.kernel_symbol, global_size,
                           local_size, kernel_args(self.info, plan), tuple(reversed(grid_shape)), full, source,
                           run_target.queue, self, plan)

    def tuned_config(self, device: Any = None, space: Optional[Space] = None,
                     size: Optional[tuple[int, ...]] = None) -> Optional[dict]:
        """The configuration `imagecl tune` recorded for this program on `device` at `size` (width,
        height[, depth]), else at the nearest tuned size (with a one-time warning naming both), if
        it is valid here; else None (the naive variant). Without a size: the largest tuned one."""
        from . import tuned

        cl_device = select_device(device)
        found = tuned.lookup(self, cl_device, size)
        if found is None:
            return None
        try:
            config = (space or self.space_for(cl_device)).complete(found.configuration)
        except ConfigError:
            return None
        if size is not None and not found.exact and (tuple(found.size or ()), tuple(size)) not in self._warned_sizes:
            self._warned_sizes.add((tuple(found.size or ()), tuple(size)))
            import warnings

            warnings.warn(f"'{self.name}' was never tuned for {tuned.size_key(size)} on this device; using the "
                          f"configuration tuned for {tuned.size_key(found.size)}", UserWarning,
                          stacklevel=_caller_level())
        return config

    def _launch_plan(self, plan: VariantPlan) -> VariantPlan:
        """The plan as launched: one with local-memory tiles must name its work-group size."""
        if local_images(self.info, plan) and plan.wg is None:
            # the space's constraints and VariantPlan.naive never make such a plan
            raise ConfigError(f"'{self.name}': a variant with local-memory tiles needs a work-group size, "
                              "not the driver's choice")
        return plan

    def launch_for(self, plan: VariantPlan, prepared: PreparedArgs) -> "launcher.Launch":
        """Everything the host passes for one launch of `plan` on `prepared` arguments (the same
        for the same plan, array shapes and scalars: kept, as every prog(...) call asks)."""
        key = (plan, tuple((n, tuple(a.shape)) for n, a in prepared.arrays.items()),
               _scalars_key(prepared.scalars), prepared.grid_shape)
        cache = self.__dict__.setdefault("_launches", {})
        launch = cache.get(key)
        if launch is None:
            if len(cache) > 256:
                cache.clear()
            launch = cache[key] = self._new_launch(plan, prepared)
        return launch

    def _new_launch(self, plan: VariantPlan, prepared: PreparedArgs) -> "launcher.Launch":
        plan = self._launch_plan(plan)
        analysis = self.analysis_for(dict(plan.tunables))
        values: list = []
        for arg in kernel_args(self.info, plan):
            if arg.role in ("buffer", "image"):
                values.append((arg.role, arg.param))
            elif arg.role == "extent":
                shape = prepared.arrays[arg.param].shape
                dims = self.info.arrays[arg.param].dims
                values.append(np.int32(shape[dims - 1 - arg.axis]))
            elif arg.role == "length":
                values.append(np.int32(prepared.arrays[arg.param].shape[0]))
            elif arg.role == "tile":
                values.append(("local", tile_bytes_at_launch(self.info, plan, analysis, arg.param)))
            else:
                values.append(prepared.scalars[arg.param])
        grid_xyz = tuple(reversed(prepared.grid_shape))
        global_size, local_size = launch_geometry(self.info, plan, grid_xyz)
        images = {n: self.info.arrays[n].dims for n in plan.image_mem}
        return launcher.Launch(values, global_size, local_size, images)


@dataclasses.dataclass
class Ready:
    """What a run of given argument shapes needs besides the arrays themselves."""

    program: Any  # the built pyopencl.Program
    launch: "launcher.Launch"
    output_buffers: list  # the written arrays, as memory.check_host takes them


def _scalars_key(scalars: Mapping[str, Any]) -> tuple:
    """Scalar arguments as a key by their bits: -0.0 and 0.0 compare equal but are passed apart."""
    return tuple((n, v.dtype, v.tobytes()) for n, v in scalars.items())


def _caller_level() -> int:
    """The warnings stacklevel of the first frame outside this package, seen from the function
    that calls this one: a warning then points at the user's line, however deep the call."""
    import os
    import sys

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


NAIVE = "naive"


def is_naive(config: Any) -> bool:
    """Does `config` ask for the naive variant (the string "naive")? Any other string is an error."""
    if isinstance(config, str):
        if config != NAIVE:
            raise ConfigError(f"a configuration is a dict of parameter values or \"{NAIVE}\", not {config!r}")
        return True
    return False


def compile(source: str, filename: str = "<string>") -> Program:  # noqa: A001 - the API's name
    """Check an ImageCL program given as text; raises CompileError if it is not valid."""
    unit = parse(source, filename)
    return Program(analyse(unit))


def load(path: str | Path, service: Optional[str] = None) -> Program:
    """Read and check a `.icl` file; or, given a folder written by `imagecl tune -o DIR`, the
    program it was tuned from, which then runs that folder's configuration by default.
    `service`: a tuning service's URL (`imagecl serve`; default $IMAGECL_SERVICE) that a program
    with no local tuning asks for its configuration (docs/service.md)."""
    p = Path(path)
    if p.is_dir():
        from .tuned_folder import load_folder

        return load_folder(p)
    program = _load_file(p, path)
    program.service = service
    return program


def _load_file(p: Path, path: str | Path) -> Program:
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise ImageCLError(f"{p}: no such file") from None
    except (IsADirectoryError, PermissionError) as exc:
        raise ImageCLError(f"{p}: cannot read the program ({exc.__class__.__name__}: {exc})") from None
    return compile(decode_source(data, str(path)), str(path))
