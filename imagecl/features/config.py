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

from ..codegen.variant import VariantPlan, launch_geometry, tile_bytes_at_launch
from ..passes.footprint import array_bytes
from ..space import AXES, Space

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
    "vector_x": "1: vector loads and stores along x in the interior fast path",
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
    info = program.info
    full = space.complete(config)
    plan = VariantPlan.from_config(info, full)
    params = {p.name: p for p in space.parameters}
    read_images = [n for n, a in info.arrays.items() if a.kind == "image" and a.reads]
    read_only = [n for n, a in info.arrays.items() if a.kind != "image" and a.reads and not a.is_written]
    fixed_arrays = {n for n, a in info.arrays.items() if a.kind == "array"}

    def chosen(prefix: str, names) -> int:
        return sum(1 for n in names if full.get(f"{prefix}{n}", 0))

    unroll = [p for p in space.parameters if p.kind == "unroll"]
    analysis = program.analysis_for(dict(plan.tunables))
    constant_loops = {loop.parameter: loop.trip_count for loop in analysis.loops if loop.unrollable}
    dynamic = [p for p in unroll if p.name not in constant_loops]
    logs = [math.log2(full[p.name]) for p in unroll]
    full_unrolls = [full[p.name] == constant_loops[p.name] for p in unroll if p.name in constant_loops]

    dims = info.grid_dims
    grid = tuple(info.grid_size) if info.grid_size else tuple(shape_xyz)
    global_size, local_size = launch_geometry(info, plan, grid)
    work_items = math.prod(global_size)
    local_size = local_size or (1,) * dims
    work_groups = math.prod(g // w for g, w in zip(global_size, local_size))
    local_bytes = sum(tile_bytes_at_launch(info, plan, analysis, n) for n in plan.local_mem
                      if info.arrays[n].kind == "image")
    local_bytes += sum(array_bytes(info.arrays[n]) or 0 for n in plan.local_mem if n in fixed_arrays)

    wg = [full.get(f"wg_{a}", 1) for a in AXES]
    px = [full.get(f"px_{a}", 1) for a in AXES]
    points = math.prod(grid)
    values: dict[str, float] = {
        "wg_x": wg[0], "wg_y": wg[1], "wg_z": wg[2], "wg_total": math.prod(wg),
        "px_x": px[0], "px_y": px[1], "px_z": px[2], "px_total": math.prod(px),
        "interleaved": full.get("interleaved", 0),
        "image_images": chosen("image_", read_images),
        "image_images_fraction": chosen("image_", read_images) / len(read_images) if read_images else 0,
        "local_images": chosen("local_", read_images),
        "local_images_fraction": chosen("local_", read_images) / len(read_images) if read_images else 0,
        "image_arrays": chosen("image_", fixed_arrays),
        "local_arrays": chosen("local_", fixed_arrays),
        "constant_arrays": chosen("constant_", read_only),
        "constant_arrays_fraction": chosen("constant_", read_only) / len(read_only) if read_only else 0,
        "interior": full.get("interior", 0),
        "vector_x": full.get("vector_x", 0),
        "unroll_loops": len(unroll),
        "unroll_log2_mean": sum(logs) / len(logs) if logs else 0,
        "unroll_log2_max": max(logs, default=0),
        "unroll_full_fraction": sum(full_unrolls) / len(full_unrolls) if full_unrolls else 0,
        "dynamic_unroll_log2_mean": (sum(math.log2(full[p.name]) for p in dynamic) / len(dynamic)
                                     if dynamic else 0),
        "own_tunables": sum(1 for p in params.values() if p.kind == "tunable"),
        "parameters": len(params),
        "points": points,
        "work_items": work_items,
        "work_groups": work_groups,
        "idle_fraction": 1 - points / (work_items * math.prod(px[:dims])),
        "local_mem_bytes": local_bytes,
        "local_mem_fraction": local_bytes / space.limits.local_mem_size if space.limits.local_mem_size else 0,
    }
    return ConfigEncoding({k: float(values[k]) for k in CONFIG_FIELDS})
