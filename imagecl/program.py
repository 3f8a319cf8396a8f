"""A compiled ImageCL program: the checked IR, its tuning space, its variants, and running them."""
from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from .codegen.variant import VariantPlan, generate, kernel_args, launch_geometry, local_images, tile_bytes_at_launch
from .errors import ConfigError, ImageCLError
from .frontend.parser import parse
from .frontend.source import decode_source
from .passes.footprint import AccessAnalysis
from .passes.semantic import ProgramInfo, analyse
from .runtime import launcher
from .runtime.arguments import PreparedArgs, prepare
from .runtime.devices import select_device
from .runtime.memory import check_device, prepared_buffers
from .passes.footprint import analyse_accesses
from .passes.specialise import assignments, specialise
from .space import DeviceLimits, Space, build_space


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
        key = (limits, problem_shape)
        cache = self.__dict__.setdefault("_spaces", {})
        if key not in cache:
            cache[key] = build_space(self.info, limits, problem_shape, self.analyses)
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
    def plan(self, config: Optional[Mapping[str, Any]] = None, device: Any = None) -> VariantPlan:
        """The variant a configuration selects (None: the naive variant)."""
        if config is None:
            return VariantPlan.naive(self.info)
        full = self.space_for(device).complete(config)
        return VariantPlan.from_config(self.info, full)

    def opencl_source(self, config: Optional[Mapping[str, Any]] = None, device: Any = None,
                      size: Optional[tuple[int, ...]] = None) -> str:
        """The OpenCL C source of the variant selected by `config`. Without one, the variant that
        `prog(...)` runs: the configuration loaded with the program, else the one tuned on `device`
        for `size` (width, height[, depth]; the nearest tuned size if that one never was; without
        a size, the largest tuned one), else the naive variant."""
        shape = None if size is None else tuple(int(s) for s in reversed(tuple(size)))
        if config is None:
            config = self.pinned
        if config is None:
            from . import tuned

            if tuned.has_records(self):  # else no device is needed to show the naive variant
                cl_device = select_device(device)
                config = self.tuned_config(cl_device, self.space_for_limits(DeviceLimits.of(cl_device), shape), size)
        if config is None:
            return self.source_of(VariantPlan.naive(self.info), [])
        full = self.space_for(device, shape).complete(config)
        lines = ["configuration: " + ", ".join(f"{k}={v}" for k, v in sorted(full.items()))]
        return self.source_of(VariantPlan.from_config(self.info, full), lines)

    def source_of(self, plan: VariantPlan, config_lines: Optional[list[str]] = None) -> str:
        """The source of `plan`; plans that differ only in launch-only choices share it (the
        work-group size is launch-only except with local-memory tiles: see VariantPlan.compiled_wg)."""
        key = (dataclasses.replace(plan, wg=plan.compiled_wg), tuple(config_lines or ()))
        cache = self.__dict__.setdefault("_sources", {})
        if key not in cache:
            tunables = dict(plan.tunables)
            cache[key] = generate(self.specialised(tunables), plan, config_lines, self.analysis_for(tunables))
        return cache[key]

    # ---- running ----------------------------------------------------------------------------------
    def __call__(self, device: Any = None, config: Optional[Mapping[str, Any]] = None,
                 timeout: Optional[float] = None, **arguments: Any) -> dict[str, np.ndarray]:
        outputs, _ = self.run(arguments, device=device, config=config, timeout=timeout)
        return outputs

    def run(self, arguments: Mapping[str, Any], device: Any = None, config: Optional[Mapping[str, Any]] = None,
            timeout: Optional[float] = None) -> tuple[dict[str, np.ndarray], float]:
        """Run once; returns the written arrays and the kernel's time in seconds (profiling events).
        With a `timeout` (seconds) the run goes to a child process that is stopped, with an
        ExecutionError, when the upload, kernel and download take longer (starting it and
        building the kernel are not counted); without one it runs here, and a kernel that never
        ends blocks the caller."""
        if timeout is not None:
            from .runtime.isolated import check_timeout

            timeout = check_timeout(timeout)
        cl_device = select_device(device)
        prepared = prepare(self.info, dict(arguments))
        check_device(prepared_buffers(self.info, prepared.arrays), cl_device)
        space = self.space_for_limits(DeviceLimits.of(cl_device), prepared.grid_shape)
        if config is None:
            config = self.pinned
        if config is None:
            config = self.tuned_config(cl_device, space, tuple(reversed(prepared.grid_shape)))
        if config is None:
            plan = VariantPlan.naive(self.info)
        else:
            config = space.complete(config)
            plan = VariantPlan.from_config(self.info, config)
        if timeout is not None:
            from .runtime.isolated import run_isolated

            return run_isolated(self, prepared, cl_device, config, timeout)
        source = self.source_of(plan)
        program = launcher.build(cl_device, source)
        launch = self.launch_for(plan, prepared)
        return launcher.run_kernel(cl_device, program, self.kernel_symbol, launch, prepared)

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
                          f"configuration tuned for {tuned.size_key(found.size)}", UserWarning, stacklevel=4)
        return config

    def launch_for(self, plan: VariantPlan, prepared: PreparedArgs) -> "launcher.Launch":
        """Everything the host passes for one launch of `plan` on `prepared` arguments."""
        if local_images(self.info, plan) and plan.wg is None:
            plan = VariantPlan(**{**plan.__dict__, "wg": (16, 16) if self.info.grid_dims == 2 else (8, 8, 4)})
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


def compile(source: str, filename: str = "<string>") -> Program:  # noqa: A001 - the API's name
    """Check an ImageCL program given as text; raises CompileError if it is not valid."""
    unit = parse(source, filename)
    return Program(analyse(unit))


def load(path: str | Path) -> Program:
    """Read and check a `.icl` file; or, given a folder written by `imagecl tune -o DIR`, the
    program it was tuned from, which then runs that folder's configuration by default."""
    p = Path(path)
    if p.is_dir():
        from .tuned_folder import load_folder

        return load_folder(p)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise ImageCLError(f"{p}: no such file") from None
    except (IsADirectoryError, PermissionError) as exc:
        raise ImageCLError(f"{p}: cannot read the program ({exc.__class__.__name__}: {exc})") from None
    return compile(decode_source(data, str(path)), str(path))
