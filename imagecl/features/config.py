"""Problem sizes and configurations as fixed-length vectors of quantities every program shares.

A configuration of one program's space names that program's images, arrays and loops
(`image_input`, `local_filter`, `unroll_blur_l12`), so a model over one space's parameters
cannot score another's. `encode_config` maps a configuration of any program's space to the
fields of `CONFIG_FIELDS` instead: the work-group and coarsening shape, counts and fractions of
the program's images and arrays in each memory, summaries of the unroll factors, and, with the
problem size, what the launch looks like (work-items, work-groups, idle points, local memory).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import numpy as np

from ..errors import ConfigError
from ..passes.footprint import array_bytes
from ..space import AXES, Space
from ..space import tile_bytes as space_tile_bytes

# name -> what it means; the order is the vector's
CONFIG_FIELDS: dict[str, str] = {
    "wg_x": "work-group size in x (1 where the grid has no such axis)",
    "wg_y": "work-group size in y",
    "wg_z": "work-group size in z",
    "wg_total": "work-items per work-group",
    "px_x": "grid points per work-item in x",
    "px_y": "grid points per work-item in y",
    "px_z": "grid points per work-item in z",
    "px_total": "grid points per work-item",
    "interleaved": "1: a work-item's points are strided by the global size; 0: contiguous (blocked)",
    "image_images": "images read through image memory",
    "image_images_fraction": "the same over the images the program reads (0 when it reads none)",
    "local_images": "images staged in local-memory tiles",
    "local_images_fraction": "the same over the images the program reads",
    "image_arrays": "fixed-size arrays read through an image",
    "local_arrays": "fixed-size arrays copied into local memory",
    "constant_arrays": "arrays and pointers in constant memory",
    "constant_arrays_fraction": "the same over the read-only arrays and pointers",
    "interior": "1: the interior fast path (no boundary handling inside the image)",
    "vector_x": "in the interior fast path, 1: vector loads and stores along x around scalar code, 2: vector code",
    "unroll_loops": "loops with an unroll factor in the space",
    "unroll_log2_mean": "mean log2 of the unroll factors (0 without such loops)",
    "unroll_log2_max": "largest log2 of an unroll factor",
    "unroll_full_fraction": "constant-trip-count loops fully unrolled, over those the space can unroll",
    "dynamic_unroll_log2_mean": "mean log2 of the partial unroll factors of data-dependent loops",
    "own_tunables": "the program's own tunable parameters (#pragma imcl tunable)",
    "parameters": "parameters in the space",
    "points": "grid points of the problem",
    "work_items": "work-items launched",
    "work_groups": "work-groups launched",
    "idle_fraction": "launched point slots outside the grid (rounding up to whole work-groups)",
    "local_mem_bytes": "local memory per work-group (tiles and array copies)",
    "local_mem_fraction": "the same over the device's local memory",
}


def size_features(shape_xyz: tuple[int, ...]) -> dict[str, float]:
    """The problem size, x first: width, height, depth (1 in 2-D) and their log2."""
    dims = (list(shape_xyz) + [1, 1, 1])[:3]
    out: dict[str, float] = {"width": dims[0], "height": dims[1], "depth": dims[2],
                             "points": math.prod(dims)}
    out.update({f"log2_{k}": math.log2(v) for k, v in list(out.items())})
    return {k: float(v) for k, v in out.items()}


def size_names() -> list[str]:
    return list(size_features((1, 1)))


@dataclass
class ConfigEncoding:
    values: dict[str, float]

    @staticmethod
    def names() -> list[str]:
        return list(CONFIG_FIELDS)

    def to_vector(self) -> np.ndarray:
        return np.array([self.values[n] for n in CONFIG_FIELDS], dtype=np.float64)

    def to_dict(self) -> dict[str, float]:
        return dict(self.values)


def encode_config(program: Any, space: Space, config: Optional[Mapping[str, Any]],
                  shape_xyz: tuple[int, ...]) -> ConfigEncoding:
    """The configuration `config` of `program`'s space `space` (completed with the defaults and
    checked: a ConfigError says what is wrong) for a problem of `shape_xyz` grid points, x first."""
    full = space.complete(config)
    row = encode_columns(program, space, {k: np.array([v]) for k, v in full.items()}, shape_xyz)[0]
    return ConfigEncoding({k: float(v) for k, v in zip(CONFIG_FIELDS, row)})


def encode_columns(program: Any, space: Space, columns: Mapping[str, np.ndarray],
                   shape_xyz: tuple[int, ...]) -> np.ndarray:
    """`encode_config` for many configurations at once: `columns` holds one array of values per
    parameter of the space, as `Space.enumerate` and `Space.valid_mask` take them (valid
    configurations: they are not checked here); returns one row of CONFIG_FIELDS per
    configuration. A model scores a whole space of hundreds of thousands this way in a second."""
    info = program.info
    missing = [p.name for p in space.parameters if p.name not in columns]
    if missing:
        raise ConfigError(f"no values for the parameters {', '.join(missing)}")
    n = len(next(iter(columns.values()))) if columns else 1
    ones = np.ones(n, dtype=np.int64)
    col = {k: np.asarray(v, dtype=np.int64) for k, v in columns.items()}

    def get(name: str, default: int = 0) -> np.ndarray:
        return col[name] if name in col else default * ones

    read_images = [name for name, a in info.arrays.items() if a.kind == "image" and a.reads]
    read_only = [name for name, a in info.arrays.items() if a.kind != "image" and a.reads and not a.is_written]
    fixed_arrays = [name for name, a in info.arrays.items() if a.kind == "array"]

    def chosen(prefix: str, names: list[str]) -> np.ndarray:
        return sum((get(prefix + name) for name in names), 0 * ones)

    def fraction(count: np.ndarray, names: list[str]) -> np.ndarray:
        return count / len(names) if names else 0.0 * ones

    dims = info.grid_dims
    wg = [get(f"wg_{a}", 1) for a in AXES]  # 0: the driver's choice, a value of its own for the models
    px = [get(f"px_{a}", 1) for a in AXES]
    grid = tuple(info.grid_size) if info.grid_size else tuple(shape_xyz)
    # as codegen's launch_geometry: points per work-item rounded up, then to whole work-groups (the
    # driver's choice, unknown here, counted as groups of one: it rounds nothing up)
    sized = [np.maximum(w, 1) for w in wg]
    groups = [-(-(-(-g // p)) // w) for g, p, w in zip(grid, px, sized)]
    work_items = np.prod([k * w for k, w in zip(groups, sized[:dims])], axis=0)
    points = math.prod(grid)

    unroll = [p for p in space.parameters if p.kind == "unroll"]
    constant_trips = {}  # parameter -> trip count, per assignment of the tunables
    local_bytes = 0 * ones
    for key, analysis in program.analyses.items():
        mask = np.ones(n, dtype=bool)
        for name, value in key:
            mask &= get(name) == value
        for loop in analysis.loops:
            if loop.unrollable:
                constant_trips.setdefault(loop.parameter, 0 * ones)
                constant_trips[loop.parameter] = np.where(mask, loop.trip_count, constant_trips[loop.parameter])
        for name in read_images:
            if f"local_{name}" in col:
                tiles = space_tile_bytes(info, analysis, name, wg[:dims], px[:dims], get("interleaved"))
                local_bytes = local_bytes + np.where(mask & (col[f"local_{name}"] == 1), tiles, 0)
    for name in fixed_arrays:
        local_bytes = local_bytes + get(f"local_{name}") * (array_bytes(info.arrays[name]) or 0)
    logs = [np.log2(col[p.name]) for p in unroll]
    dynamic = [np.log2(col[p.name]) for p in unroll if p.name not in constant_trips]
    full_unrolls = [col[p] == trips for p, trips in constant_trips.items() if p in col]
    zero = 0.0 * ones

    values = {
        "wg_x": wg[0], "wg_y": wg[1], "wg_z": wg[2], "wg_total": wg[0] * wg[1] * wg[2],
        "px_x": px[0], "px_y": px[1], "px_z": px[2], "px_total": px[0] * px[1] * px[2],
        "interleaved": get("interleaved"),
        "image_images": chosen("image_", read_images),
        "image_images_fraction": fraction(chosen("image_", read_images), read_images),
        "local_images": chosen("local_", read_images),
        "local_images_fraction": fraction(chosen("local_", read_images), read_images),
        "image_arrays": chosen("image_", fixed_arrays),
        "local_arrays": chosen("local_", fixed_arrays),
        "constant_arrays": chosen("constant_", read_only),
        "constant_arrays_fraction": fraction(chosen("constant_", read_only), read_only),
        "interior": get("interior"),
        "vector_x": get("vector_x"),
        "unroll_loops": len(unroll) * ones,
        "unroll_log2_mean": sum(logs) / len(logs) if logs else zero,
        "unroll_log2_max": np.max(logs, axis=0) if logs else zero,
        "unroll_full_fraction": sum(full_unrolls) / len(full_unrolls) if full_unrolls else zero,
        "dynamic_unroll_log2_mean": sum(dynamic) / len(dynamic) if dynamic else zero,
        "own_tunables": sum(1 for p in space.parameters if p.kind == "tunable") * ones,
        "parameters": len(space.parameters) * ones,
        "points": points * ones,
        "work_items": work_items,
        "work_groups": np.prod(groups, axis=0) * ones,
        "idle_fraction": 1 - points / (work_items * np.prod(px[:dims], axis=0)),
        "local_mem_bytes": local_bytes,
        "local_mem_fraction": local_bytes / space.limits.local_mem_size if space.limits.local_mem_size else zero,
    }
    out = np.empty((n, len(CONFIG_FIELDS)), dtype=np.float64)
    for j, name in enumerate(CONFIG_FIELDS):
        out[:, j] = values[name]
    return out
