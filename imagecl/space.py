"""The tuning space of a program: parameters, their values, and constraints.

Parameters come from the analyses (passes/footprint.py) and the pragmas; the device's limits
become static constraints, so a configuration that cannot run is known before anything is
built. Constraints are vectorised over NumPy columns, so the valid configurations of a space of
millions are enumerated or sampled in well under a second.
"""
from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional

import numpy as np

from .errors import ConfigError, suggestion_suffix
from . import choices as ch
from .choices import Family
from .parameters import generated_parameter
from .ir import types as ty
from .passes.footprint import (DYNAMIC_UNROLL_FACTORS, AccessAnalysis, analyse_accesses, array_bytes,
                               image_compatible_array, small_read_only_array, tile_bytes as footprint_tile_bytes)
from .passes.semantic import ProgramInfo
from .passes.specialise import assignments, specialise
from .codegen import interior, lanes

if TYPE_CHECKING:
    from .codegen.variant import VariantPlan

AXES = "xyz"
MAX_CONSTANT_ARRAY_BYTES = 64 * 1024


@dataclass(frozen=True)
class DeviceLimits:
    """What a device allows; the defaults are OpenCL 1.2's guaranteed minimums, loosely."""

    name: str = "any device"
    max_work_group_size: int = 256
    max_work_item_sizes: tuple[int, ...] = (256, 256, 64)
    local_mem_size: int = 32 * 1024
    max_constant_buffer_size: int = 64 * 1024
    max_constant_args: int = 8
    image_support: bool = True
    image2d_max: tuple[int, int] = (8192, 8192)
    image3d_max: tuple[int, int, int] = (2048, 2048, 2048)
    # CL_DEVICE_VERSION and the driver's version ("OpenCL 3.0 PoCL HSTR: ... (driver 5.0+debian)"):
    # to leave out what a known compiler bug breaks
    version: str = ""

    @staticmethod
    def of(device) -> "DeviceLimits":
        return _limits_of(device)

    @staticmethod
    def query(device) -> "DeviceLimits":
        support = bool(device.image_support)
        return DeviceLimits(
            name=device.name.strip(),
            max_work_group_size=int(device.max_work_group_size),
            max_work_item_sizes=tuple(int(s) for s in device.max_work_item_sizes),
            local_mem_size=int(device.local_mem_size),
            max_constant_buffer_size=int(device.max_constant_buffer_size),
            max_constant_args=int(device.max_constant_args),
            image_support=support,
            image2d_max=(int(device.image2d_max_width), int(device.image2d_max_height)) if support else (0, 0),
            image3d_max=(int(device.image3d_max_width), int(device.image3d_max_height),
                         int(device.image3d_max_depth)) if support else (0, 0, 0),
            version=f"{str(device.version).strip()} (driver {str(device.driver_version).strip()})",
        )

    def pocl_major(self) -> Optional[int]:
        """PoCL's major version, when the device is PoCL's (its driver version, "5.0+debian")."""
        if "pocl" not in self.version.lower():
            return None
        found = re.search(r"\(driver (\d+)\.", self.version)
        return int(found.group(1)) if found else None


@functools.lru_cache(maxsize=None)
def _limits_of(device) -> DeviceLimits:
    return DeviceLimits.query(device)


@dataclass
class Parameter:
    name: str
    values: list[int]
    kind: str  # work_group, coarsening, layout, image_mem, local_mem, constant_mem, unroll, tunable
    description: str
    launch_only: bool = False  # changes only the launch, not the OpenCL source
    target: Optional[str] = None  # the image, array, axis or loop it applies to
    family: Optional[Family] = None  # how Space.plan decodes it (imagecl/choices.py); None: a user kernel's

    @staticmethod
    def of(family: Family, target: Optional[str], values: list[int], description: str) -> "Parameter":
        """A parameter of one of the compiler's families, named by it."""
        return Parameter(family.name(target), list(values), family.kind, description,
                         launch_only=family.launch_only, target=target, family=family)

    def to_json(self) -> dict:
        return {"name": self.name, "values": self.values, "kind": self.kind, "description": self.description,
                "launch_only": self.launch_only, "target": self.target}


@dataclass
class Constraint:
    description: str
    parameters: tuple[str, ...]
    check: Callable[[Mapping[str, np.ndarray]], np.ndarray]  # columns -> boolean mask


@dataclass
class Space:
    parameters: list[Parameter]
    constraints: list[Constraint]
    limits: DeviceLimits
    defaults: dict[str, int] = field(default_factory=dict)
    # the work-group size a configuration with a local-memory tile gets when it names none (the
    # default is the driver's choice, which a tile cannot have)
    tile_defaults: dict[str, int] = field(default_factory=dict)
    tiles: tuple[str, ...] = ()  # the parameters that turn a local-memory tile of an image on
    # the unroll parameters of loops with a trip count known when the kernel is built, each with
    # the factor that unrolls its loop fully (a data-dependent loop's partial factors are not here)
    full_unroll: dict[str, int] = field(default_factory=dict)
    # each tile parameter's window: the points a grid point reads of its image (the box of its
    # footprint; 0 where the footprint is not bounded)
    tile_window: dict[str, int] = field(default_factory=dict)
    # where the space has vector code (vector_x = 2): the most values its body keeps as vectors
    # (codegen/lanes.lane_values); 0 without vector code
    lane_values: int = 0

    # ---- description -----------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [p.name for p in self.parameters]

    def parameter(self, name: str) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        raise ConfigError(f"'{name}' is not a tuning parameter" + suggestion_suffix(name, self.names))

    @property
    def size(self) -> int:
        """The number of configurations before constraints."""
        n = 1
        for p in self.parameters:
            n *= len(p.values)
        return n

    @property
    def launch_only(self) -> list[str]:
        return [p.name for p in self.parameters if p.launch_only]

    def to_json(self) -> dict:
        return {
            "device": self.limits.name,
            "size": self.size,
            "valid": self.count_valid(),
            "parameters": [p.to_json() for p in self.parameters],
            "constraints": [c.description for c in self.constraints],
            "default": self.defaults,
        }

    def describe(self) -> str:
        lines = [f"tuning space for {self.limits.name}: {self.size:,} configurations, "
                 f"{self.count_valid():,} valid"]
        width = max((len(p.name) for p in self.parameters), default=4)
        for p in self.parameters:
            tag = " (launch only)" if p.launch_only else ""
            lines.append(f"  {p.name:<{width}}  {', '.join(map(str, p.values))}  -- {p.description}{tag}")
        if self.constraints:
            lines.append("constraints:")
            lines.extend(f"  {c.description}" for c in self.constraints)
        return "\n".join(lines)

    def source_key(self, config: Mapping[str, int]) -> dict[str, int]:
        """The part of a configuration that decides its OpenCL source: all but the launch-only
        parameters, except that variants with local memory and a large work-group compile its
        size in (reqd_work_group_size; codegen's compiles_work_group)."""
        from .codegen.variant import compiles_work_group

        uses_local = any(config.get(p.name) for p in self.parameters if p.family is ch.LOCAL_MEM)
        wg = [config.get(p.name, ch.DRIVERS_CHOICE) for p in self.parameters if p.family is ch.WORK_GROUP]
        if uses_local and any(w != ch.DRIVERS_CHOICE for w in wg) and compiles_work_group(True, wg):
            return dict(config)
        launch_only = set(self.launch_only)  # once per call, not per key: a whole space calls this
        return {k: v for k, v in config.items() if k not in launch_only}

    def plan(self, config: Mapping[str, int]) -> "VariantPlan":
        """The variant a configuration of this space selects, decoded through each parameter's
        family (imagecl/choices.py); a parameter the configuration leaves out takes its default."""
        from .codegen.variant import VariantPlan

        value = {p.name: int(config.get(p.name, self.defaults.get(p.name, p.values[0]))) for p in self.parameters}
        by = {f: [p for p in self.parameters if p.family is f] for f in ch.FAMILIES}
        wg = tuple(value[p.name] for p in by[ch.WORK_GROUP])
        return VariantPlan(
            px=tuple(value[p.name] for p in by[ch.COARSENING]),
            interleaved=any(value[p.name] for p in by[ch.LAYOUT]),
            image_mem=frozenset(p.target for p in by[ch.IMAGE_MEM] if value[p.name]),
            local_mem=frozenset(p.target for p in by[ch.LOCAL_MEM] if value[p.name]),
            constant_mem=frozenset(p.target for p in by[ch.CONSTANT_MEM] if value[p.name]),
            unroll=tuple(sorted((p.target, value[p.name]) for p in by[ch.UNROLL] if value[p.name] > 1)),
            tunables=tuple(sorted((p.target, value[p.name]) for p in by[ch.TUNABLE])),
            wg=None if all(w == ch.DRIVERS_CHOICE for w in wg) else wg,
            interior=any(value[p.name] for p in by[ch.INTERIOR]),
            vector_x=max((int(value[p.name]) for p in by[ch.VECTOR_X]), default=0),
        )

    # ---- checking one configuration --------------------------------------------------------------
    def complete(self, config: Optional[Mapping[str, Any]]) -> dict[str, int]:
        """A full, valid configuration from a partial one. Missing parameters take their defaults,
        except the work-group size: where some axes are given, the others are 1; where none is
        and a local-memory tile is on, `tile_defaults` (the driver cannot choose it for a tile)."""
        if config is None:
            config = {}
        if not isinstance(config, Mapping):
            raise ConfigError(f"a configuration is a dict of parameter values, not {type(config).__name__}")
        full = dict(self.defaults)
        for key, value in config.items():
            param = self.parameter(str(key))
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                else:
                    raise ConfigError(f"tuning parameter '{key}' needs an integer, got {value!r}")
            if int(value) not in param.values:
                raise ConfigError(f"tuning parameter '{key}' must be one of {param.values}, got {value}")
            full[param.name] = int(value)
        wg = [p.name for p in self.parameters if p.family is ch.WORK_GROUP]
        named = [str(k) for k in config if str(k) in wg]
        if any(full[k] != ch.DRIVERS_CHOICE for k in named):
            # a work-group size given in some axes: the others are 1, not the driver's choice
            full.update({k: 1 for k in wg if k not in named and full[k] == ch.DRIVERS_CHOICE})
        elif any(full[t] for t in self.tiles) and not named:
            full.update(self.tile_defaults)
        columns = {k: np.array([v]) for k, v in full.items()}
        for c in self.constraints:
            if not bool(c.check(columns)[0]):
                shown = ", ".join(f"{p}={full[p]}" for p in c.parameters if p in full)
                raise ConfigError(f"configuration violates a constraint ({shown}): {c.description}")
        return full

    # ---- many configurations ------------------------------------------------------------------------
    def _decode(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        columns = {}
        rest = indices.astype(np.int64)
        for p in reversed(self.parameters):
            values = np.asarray(p.values, dtype=np.int64)
            columns[p.name] = values[rest % len(values)]
            rest = rest // len(values)
        return {p.name: columns[p.name] for p in self.parameters}

    def valid_mask(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        n = len(next(iter(columns.values()))) if columns else 1
        mask = np.ones(n, dtype=bool)
        for c in self.constraints:
            mask &= np.asarray(c.check(columns), dtype=bool)
        return mask

    def enumerate(self, chunk: int = 1 << 20) -> dict[str, np.ndarray]:
        """Every valid configuration, as columns (one NumPy array per parameter)."""
        parts: list[dict[str, np.ndarray]] = []
        for start in range(0, self.size, chunk):
            idx = np.arange(start, min(self.size, start + chunk), dtype=np.int64)
            cols = self._decode(idx)
            mask = self.valid_mask(cols)
            parts.append({k: v[mask] for k, v in cols.items()})
        if not parts:
            return {p.name: np.zeros(0, np.int64) for p in self.parameters}
        return {p.name: np.concatenate([part[p.name] for part in parts]) for p in self.parameters}

    def count_valid(self) -> int:
        total = 0
        chunk = 1 << 20
        for start in range(0, self.size, chunk):
            idx = np.arange(start, min(self.size, start + chunk), dtype=np.int64)
            total += int(self.valid_mask(self._decode(idx)).sum())
        return total

    def random(self, n: int, seed: Optional[int] = None) -> list[dict[str, int]]:
        """`n` distinct valid configurations drawn uniformly (all of them if fewer exist)."""
        if n <= 0:
            return []
        rng = np.random.default_rng(seed)
        chosen: dict[int, None] = {}
        attempts = 0
        while len(chosen) < n and attempts < 64:
            attempts += 1
            draw = rng.integers(0, self.size, size=max(4 * (n - len(chosen)), 1024), dtype=np.int64)
            draw = draw[self.valid_mask(self._decode(draw))]
            for i in draw.tolist():
                if i not in chosen:
                    chosen[i] = None
                    if len(chosen) == n:
                        break
        if len(chosen) < n:  # a sparse space: enumerate instead
            valid = self.enumerate()
            count = len(next(iter(valid.values()))) if valid else 0
            order = rng.permutation(count)[:n]
            return [{k: int(v[i]) for k, v in valid.items()} for i in order]
        cols = self._decode(np.fromiter(chosen, dtype=np.int64))
        return [{k: int(v[i]) for k, v in cols.items()} for i in range(len(chosen))]


# ---- building a program's space ------------------------------------------------------------------


def tile_work_group(dims: int, limits: Optional[DeviceLimits] = None) -> tuple[int, ...]:
    """The work-group size of a variant that must have local-memory tiles (a `local_mem`
    pragma) when nothing else chose one: its naive variant, and the space's default."""
    wg = [16, 16] if dims == 2 else [8, 8, 4][:dims] if dims == 3 else [64]
    if limits is not None:
        wg = [min(w, m) for w, m in zip(wg, limits.max_work_item_sizes)]
        while np.prod(wg) > limits.max_work_group_size:
            wg[wg.index(max(wg))] //= 2
    return tuple(wg)


def _pow2(limit: int) -> list[int]:
    return [v for v in (1, 2, 4, 8, 16, 32, 64, 128) if v <= limit]


def _divisor_factors(trip: int, max_partial: int = 16, max_full: int = 64) -> list[int]:
    factors = [d for d in range(1, min(trip, max_partial) + 1) if trip % d == 0]
    if trip <= max_full and trip not in factors:
        factors.append(trip)
    return factors


def analyses_per_tunables(info: ProgramInfo) -> dict[tuple, AccessAnalysis]:
    """The access analysis of each assignment of the tunables (footprints may depend on them),
    keyed by the sorted assignment; each runs on the IR specialised for it."""
    return {tuple(sorted(values.items())): analyse_accesses(specialise(info, values))
            for values in assignments(info)}


def local_candidates(info: ProgramInfo, analyses: Iterable[AccessAnalysis]) -> list[str]:
    """Read-only images whose reads are reused by neighbours with a bounded footprint (always)."""
    analyses = list(analyses)
    out = []
    for name, array in info.arrays.items():
        if array.kind != "image" or array.is_written or not array.reads:
            continue
        if all(a.footprints.get(name) is not None and a.footprints[name].reused for a in analyses):
            out.append(name)
        elif name in info.placement["local_mem"]:
            out.append(name)  # forced: checked when the variant is generated
    return out


def build_space(info: ProgramInfo, limits: DeviceLimits, problem_shape: Optional[tuple[int, ...]] = None,
                analyses: Optional[Mapping[tuple, AccessAnalysis]] = None,
                lane_assignments: Optional[list[dict[str, int]]] = None,
                lane_count: Optional[int] = None) -> Space:
    """The tuning space of `info` on a device with `limits` (and, if known, for a problem size);
    `analyses`: those of analyses_per_tunables(info), `lane_assignments`: codegen/lanes.
    vectorisable(info), and `lane_count`: codegen/lanes.lane_values of its bodies, when the caller
    has them already (none depends on the device)."""
    dims = info.grid_dims
    if analyses is None:
        analyses = analyses_per_tunables(info)
    any_analysis = next(iter(analyses.values()))
    params: list[Parameter] = []
    constraints: list[Constraint] = []
    defaults: dict[str, int] = {}
    axes = AXES[:dims]
    top = 32 if dims == 3 else 128

    for i, a in enumerate(axes):
        params.append(Parameter.of(ch.WORK_GROUP, a,
                                   [ch.DRIVERS_CHOICE] + _pow2(min(top, limits.max_work_item_sizes[i])),
                                   f"work-group size in {a}, 0: the driver chooses (compiled in when a "
                                   "local-memory tile is used)"))
        defaults[f"wg_{a}"] = ch.DRIVERS_CHOICE
    for a in axes:
        params.append(Parameter.of(ch.COARSENING, a, _pow2(top), f"grid points per work-item in {a}"))
        defaults[f"px_{a}"] = 1
    params.append(Parameter.of(ch.LAYOUT, None, [0, 1],
                               "0: a work-item's points are contiguous (blocked); 1: strided by the global size"))
    defaults["interleaved"] = 0

    image_params, local_params, constant_params = [], [], []
    for name, array in info.arrays.items():
        if array.kind == "image" and not array.is_written and array.reads and array.element != ty.DOUBLE:
            values = [1] if name in info.placement["image_mem"] else [0, 1]
            if not limits.image_support:
                values = [0]
            params.append(Parameter.of(ch.IMAGE_MEM, name, values, f"read '{name}' through image memory"))
            defaults[f"image_{name}"] = values[0]
            image_params.append(f"image_{name}")
    _array_image_parameters(info, limits, params, defaults)
    for name in local_candidates(info, analyses.values()):
        values = [1] if name in info.placement["local_mem"] else [0, 1]
        params.append(Parameter.of(ch.LOCAL_MEM, name, values, f"stage '{name}' in local memory (tile with halo)"))
        defaults[f"local_{name}"] = values[0]
        local_params.append(name)
    local_arrays = _array_local_parameters(info, params, defaults)
    for name, array in info.arrays.items():
        if array.is_written or not array.reads or array.kind == "image":
            continue
        size = array_bytes(array)
        candidate = name in info.placement["constant_mem_cand"] or (size is not None and size <= MAX_CONSTANT_ARRAY_BYTES)
        if array.kind == "pointer" and name not in info.placement["constant_mem_cand"] | info.placement["constant_mem"]:
            candidate = False
        if candidate or name in info.placement["constant_mem"]:
            values = [1] if name in info.placement["constant_mem"] else [0, 1]
            params.append(Parameter.of(ch.CONSTANT_MEM, name, values, f"place '{name}' in constant memory"))
            defaults[f"constant_{name}"] = values[0]
            constant_params.append((name, size))

    full_unroll = {}
    for loop in any_analysis.loops:
        if not loop.unrollable:
            continue
        factors = _divisor_factors(loop.trip_count)
        if len(factors) < 2:
            continue
        if loop.trip_count in factors:
            full_unroll[loop.parameter] = loop.trip_count
        params.append(Parameter.of(ch.UNROLL, loop.parameter, factors,
                                   f"unroll factor of the loop over '{loop.var.name}' at line {loop.node.pos.line} "
                                   f"({loop.trip_count} iterations) in '{loop.function}'"))
        defaults[loop.parameter] = 1

    _dynamic_unroll_parameters(any_analysis, params, defaults)
    fast_params, fast_constraints = fast_path_parameters(info, analyses.values(), lane_assignments)
    params.extend(fast_params)
    constraints.extend(fast_constraints)
    constraints.extend(_lanes_read_buffers(info, analyses.values(), fast_params, image_params))
    defaults.update({p.name: 0 for p in fast_params})

    minted = [p.name for p in params if p.family is None or not generated_parameter(p.name)]
    if minted:  # the checker rejects tunables named like these (imagecl/parameters.py)
        raise AssertionError(f"tuning parameters {minted} are outside imagecl.parameters.GENERATED_PARAMETERS")
    for name, values in info.tunables.items():
        params.append(Parameter.of(ch.TUNABLE, name, list(values), "application-specific (#pragma imcl tunable)"))
        defaults[name] = values[0]
    if any(n in info.placement["local_mem"] for n in local_params):  # a tile needs a known work-group size
        defaults.update({f"wg_{a}": w for a, w in zip(axes, tile_work_group(dims, limits))})

    # ---- static constraints from the device ----------------------------------------------------------
    tiles = tuple(f"local_{name}" for name in local_params)
    tile_window = {f"local_{name}": max(_window(a.footprints.get(name)) for a in analyses.values())
                   for name in local_params}
    if any(p.name == "interior" for p in fast_params) and tiles and (limits.pocl_major() or 0) >= 5:
        # PoCL 5.0's work-group compiler aborts the whole process on these kernels (Kernel.cc:129,
        # "region_entry_barrier != NULL"): the interleaved layout's loop of tile loads and barriers
        # around the interior test. Seen on the 16-core Xeon of the GPU host; PoCL 3.1 builds them.
        constraints.append(Constraint(
            "the interior fast path not with local-memory tiles in the interleaved layout on PoCL >= 5 "
            "(its compiler aborts on them)", ("interior", "interleaved") + tiles,
            lambda c, ls=tiles: (c["interior"] == 0) | (c["interleaved"] == 0)
            | (sum((c[p] for p in ls), np.zeros_like(c["interior"])) == 0)))
    wg = [f"wg_{a}" for a in axes]
    max_wg = limits.max_work_group_size
    constraints.append(Constraint(
        f"the work-group size {' * '.join(wg)} is at most {max_wg} (device maximum)", tuple(wg),
        lambda c, wg=wg, m=max_wg: np.prod([c[w] for w in wg], axis=0) <= m))
    if len(wg) > 1:
        constraints.append(Constraint(
            "the driver chooses the work-group size in every axis or in none (0 in all of "
            f"{', '.join(wg)} or in none)", tuple(wg),
            lambda c, wg=wg: np.all([c[w] == 0 for w in wg], axis=0) | np.all([c[w] != 0 for w in wg], axis=0)))
    if tiles:
        constraints.append(Constraint(
            "a local-memory tile needs a work-group size known when the kernel is built (not the driver's choice)",
            (wg[0],) + tiles,
            lambda c, w=wg[0], ls=tiles: (c[w] != 0) | (sum((c[p] for p in ls), np.zeros_like(c[w])) == 0)))
    px = [f"px_{a}" for a in axes]
    constraints.append(Constraint(
        "interleaved layout only with more than one point per work-item (otherwise it duplicates blocked)",
        tuple(px) + ("interleaved",),
        lambda c, px=px: (c["interleaved"] == 0) | (np.prod([c[p] for p in px], axis=0) > 1)))
    if local_params or local_arrays:
        constraints.append(_local_memory_constraint(info, analyses, local_params, axes, limits, local_arrays))
    constraints.extend(_exclusive_placements(params))
    if constant_params:
        total_known = [(f"constant_{n}", s) for n, s in constant_params if s is not None]
        cap, count_cap = limits.max_constant_buffer_size, limits.max_constant_args
        names = [f"constant_{n}" for n, _ in constant_params]
        constraints.append(Constraint(
            f"constant-memory arrays fit in {cap} bytes and {count_cap} arguments (device maxima)", tuple(names),
            lambda c, t=total_known, names=names, cap=cap, k=count_cap:
                (sum((c[n] * s for n, s in t), np.zeros_like(c[names[0]])) <= cap)
                & (sum((c[n] for n in names), np.zeros_like(c[names[0]])) <= k)))
    if image_params and problem_shape is not None:
        shape_xyz = tuple(reversed(problem_shape[:dims]))
        bound = limits.image2d_max if dims == 2 else limits.image3d_max
        fits = all(s <= b for s, b in zip(shape_xyz, bound))
        if not fits:
            constraints.append(Constraint(
                f"images of {'x'.join(map(str, shape_xyz))} pixels exceed the device's image size "
                f"{'x'.join(map(str, bound))}", tuple(image_params),
                lambda c, ps=image_params: sum((c[p] for p in ps), np.zeros_like(c[ps[0]])) == 0))
    if not any(p.name == "vector_x" and lanes.LANES in p.values for p in fast_params):
        lane_count = 0
    elif lane_count is None:
        lane_count = lanes.lane_values(lanes.lane_bodies(info))
    return Space(params, constraints, limits, defaults,
                 tile_defaults={f"wg_{a}": w for a, w in zip(axes, tile_work_group(dims, limits))}, tiles=tiles,
                 full_unroll=full_unroll, tile_window=tile_window, lane_values=lane_count)


def _window(footprint: Any) -> int:
    """The points of a bounded footprint's box; 0 for none or an unbounded one."""
    if footprint is None or not footprint.bounded:
        return 0
    return math.prod(hi - lo + 1 for lo, hi in zip(footprint.low, footprint.high))


def fast_path_parameters(info: ProgramInfo, analyses: Iterable[AccessAnalysis],
                         as_lanes: Optional[list[dict[str, int]]] = None) -> tuple[list[Parameter], list[Constraint]]:
    """`interior` (the interior fast path) where some image is read at bounded offsets, and
    `vector_x` (vector loads/stores of runs along x inside it) where some image can use them;
    see codegen/interior.py. `as_lanes`: lanes.vectorisable(info), if known."""
    analyses = list(analyses)
    if not info.grid or not any(interior.inside_images(info, a) for a in analyses):
        return [], []
    params = [Parameter.of(ch.INTERIOR, None, [0, 1],
                           "work-groups whose footprint lies inside the images skip boundary handling")]
    constraints: list[Constraint] = []
    if as_lanes is None:
        as_lanes = lanes.vectorisable(info)
    values = [0] + [1] * interior.vector_candidates(info, analyses) + [lanes.LANES] * bool(as_lanes)
    if len(values) > 1:
        what = "move runs of px_x points along x as vectors"
        if lanes.LANES in values:
            what += f" ({lanes.LANES}: the body as vector code, codegen/lanes.py)"
        params.append(Parameter.of(ch.VECTOR_X, None, values, "in the interior fast path, " + what))
        widths = list(interior.VECTOR_WIDTHS)
        jammed = list(lanes.JAMMED_WIDTHS)
        also = f" (for {lanes.LANES}: or {jammed})" if lanes.LANES in values else ""
        constraints.append(Constraint(
            f"vector_x only with the interior fast path, blocked layout and px_x in {widths}{also}",
            ("vector_x", "interior", "interleaved", "px_x"),
            lambda c, widths=widths, jammed=jammed: (c["vector_x"] == 0) | (
                (c["interior"] == 1) & (c["interleaved"] == 0)
                & (np.isin(c["px_x"], widths) | ((c["vector_x"] == lanes.LANES) & np.isin(c["px_x"], jammed))))))
    if as_lanes and len(as_lanes) < len(assignments(info)):
        constraints.append(_lanes_tunables(info, as_lanes))
    return params, constraints


def _lanes_tunables(info: ProgramInfo, as_lanes: list[dict[str, int]]) -> Constraint:
    """Vector code only with the tunables' values whose body can run as lanes (an ALGORITHM
    whose arm sorts a private array cannot; another's selection network of min and max can)."""
    names = tuple(info.tunables)
    allowed = sorted({tuple(a[n] for n in names) for a in as_lanes})
    shown = "; ".join(", ".join(f"{n}={v}" for n, v in zip(names, values)) for values in allowed)

    def check(c, names=names, allowed=allowed):
        ok = np.zeros_like(c["vector_x"], dtype=bool)
        for values in allowed:
            ok |= _assigned(c, zip(names, values), ok)
        return (c["vector_x"] != lanes.LANES) | ok

    return Constraint(f"vector_x={lanes.LANES} (vector code) only with {shown}", ("vector_x",) + names, check)


def _assigned(c: Mapping[str, np.ndarray], assignment: Iterable[tuple[str, int]], like: np.ndarray) -> np.ndarray:
    """Which configurations (columns `c`, each shaped `like`) give every named parameter its value."""
    mask = np.ones_like(like, dtype=bool)
    for name, value in assignment:
        mask &= c[name] == value
    return mask


def _lanes_read_buffers(info: ProgramInfo, analyses: Iterable[AccessAnalysis], fast_params: list[Parameter],
                        image_params: list[str]) -> list[Constraint]:
    """Vector code (vector_x=2) reads the fast path's images along x with vloadN from a buffer;
    through image memory it would gather its lanes one read at a time, the scalar code again."""
    if not any(p.name == ch.VECTOR_X.name() and lanes.LANES in p.values for p in fast_params):
        return []
    inside = {name for a in analyses for name in interior.inside_images(info, a)}
    gathered = tuple(p for p in image_params if p[len("image_"):] in inside)
    if not gathered:
        return []
    return [Constraint(f"vector_x={lanes.LANES} (vector code) reads {', '.join(n[6:] for n in gathered)} from "
                       "buffers, not image memory", ("vector_x",) + gathered,
                       lambda c, ps=gathered: (c["vector_x"] != lanes.LANES)
                       | (sum((c[p] for p in ps), np.zeros_like(c["vector_x"])) == 0))]


def tile_bytes(info: ProgramInfo, analysis: AccessAnalysis, name: str, wg: list, px: list, interleaved) -> Any:
    """Local-memory tile bytes of image `name` for configurations given as arrays."""
    span = [np.where(interleaved == 1, 1, p) for p in px]  # as VariantPlan.span
    return footprint_tile_bytes(info.arrays[name], analysis.footprints[name], wg, span)


def _local_memory_constraint(info, analyses, local_params, axes, limits, local_arrays=()) -> Constraint:
    """Image tiles and whole small arrays in local memory share the device's local memory."""
    cap = limits.local_mem_size
    tunables = list(info.tunables)

    def check(c):
        wg = [c[f"wg_{a}"] for a in axes]
        px = [c[f"px_{a}"] for a in axes]
        total = np.zeros_like(wg[0])
        for name, size in local_arrays:
            total = total + c[f"local_{name}"] * size
        for key, analysis in analyses.items():
            mask = _assigned(c, key, wg[0])
            for name in local_params:
                total = total + np.where(mask & (c[f"local_{name}"] == 1),
                                         tile_bytes(info, analysis, name, wg, px, c["interleaved"]), 0)
        return total <= cap

    names = tuple(f"wg_{a}" for a in axes) + tuple(f"px_{a}" for a in axes) + ("interleaved",) + tuple(
        f"local_{n}" for n in local_params) + tuple(f"local_{n}" for n, _ in local_arrays) + tuple(tunables)
    what = "local-memory tiles (work-group x points per item + halo)" if local_params else ""
    if local_arrays:
        what += (" and " if what else "") + "local-memory copies of " + ", ".join(
            f"'{n}' ({size} bytes)" for n, size in local_arrays)
    return Constraint(f"{what} fit in {cap} bytes (device maximum)", names, check)


# ---- small read-only arrays, data-dependent loops ------------------------------------------------------


def _array_image_parameters(info: ProgramInfo, limits: DeviceLimits, params: list, defaults: dict) -> None:
    """image_<array>: a fixed-size read-only array read through a 1-D or 2-D image. Its size is
    known at compile time, so the device's image support and maximum sizes decide the values."""
    for name, array in info.arrays.items():
        if not image_compatible_array(array):
            continue
        extent = tuple(reversed(array.shape))  # (width[, height])
        bound = limits.image2d_max[: len(extent)]  # a 1-D image is as wide as a 2-D one may be
        fits = limits.image_support and all(e <= b for e, b in zip(extent, bound))
        values = ([1] if name in info.placement["image_mem"] else [0, 1]) if fits else [0]
        params.append(Parameter.of(ch.IMAGE_MEM, name, values, f"read '{name}' through a {len(extent)}-D image"))
        defaults[f"image_{name}"] = values[0]


def _array_local_parameters(info: ProgramInfo, params: list, defaults: dict) -> list[tuple[str, int]]:
    """local_<array>: the work-group copies a small read-only array into local memory once."""
    out = []
    for name, array in info.arrays.items():
        if not small_read_only_array(array) and not (name in info.placement["local_mem"] and array.kind == "array"):
            continue
        values = [1] if name in info.placement["local_mem"] else [0, 1]
        params.append(Parameter.of(ch.LOCAL_MEM, name, values, f"copy '{name}' into local memory once per work-group"))
        defaults[f"local_{name}"] = values[0]
        out.append((name, array_bytes(array)))
    return out


def _exclusive_placements(params: list) -> list[Constraint]:
    """An array lives in constant memory or in image/local memory, never both at once."""
    names = {p.name for p in params}
    out = []
    for p in params:
        if p.kind != "constant_mem":
            continue
        for other in ("local", "image"):
            pair = f"{other}_{p.target}"
            if pair in names:
                out.append(Constraint(f"'{p.target}' is not in constant memory and {other} memory at once",
                                      (p.name, pair), lambda c, a=p.name, b=pair: (c[a] == 0) | (c[b] == 0)))
    return out


def _dynamic_unroll_parameters(analysis: AccessAnalysis, params: list, defaults: dict) -> None:
    for loop in analysis.dynamic_loops:
        params.append(Parameter.of(ch.UNROLL, loop.parameter, list(DYNAMIC_UNROLL_FACTORS),
                                f"partial unroll factor of the {loop.keyword} loop at line {loop.node.pos.line} "
                                   f"in '{loop.function}' (data-dependent trip count; exit test between copies)"))
        defaults[loop.parameter] = 1


def space_json(space: Space) -> str:
    return json.dumps(space.to_json(), indent=2)
