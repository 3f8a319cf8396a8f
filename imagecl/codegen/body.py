"""The __kernel function's body of one variant, rendered by templates/kernel_body.cl.j2.

This module only gathers what the template needs from the plan and the analyses: the axes with
their coarsening, the work-group's local-memory tiles and array copies, the interior test's
conditions and the vectorised runs' register tiles; the template lays the code out.
"""
from __future__ import annotations

import functools
import math
from typing import Optional

import jinja2

from .. import escape
from ..passes.footprint import AccessAnalysis
from ..passes.semantic import GRID_INDICES, ProgramInfo
from ..resources import resource_dir
from . import interior
from .emitter import names
from .interior import RegisterTile, local_images

AXES = "xyz"


@functools.lru_cache(maxsize=1)
def line_template_env() -> jinja2.Environment:
    """Templates written one output line per template line: a line that holds only a tag vanishes."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["comment"] = escape.comment
    return env


def render_lines(template: str, **context) -> str:
    """A line template's text, without the blank lines between its macros or the last newline."""
    return line_template_env().get_template(template).render(**context).strip("\n")


def kernel_body(info: ProgramInfo, plan, analysis: AccessAnalysis, grid_extents: list[str], point_call: str,
                inside_call: Optional[str] = None, tiles: list[RegisterTile] = (), stores: list[str] = ()) -> str:
    """The kernel's body: the general one, or (with `inside_call`, the fast path's per-point call)
    the one that tests whether the work-group lies inside the images (codegen/interior.py)."""
    dims = info.grid_dims
    grid = GRID_INDICES[:dims]
    axes = [{"d": d, "axis": AXES[d], "index": grid[d], "px": plan.px[d], "span": plan.span(d)} for d in range(dims)]
    coarse = [axes[d] for d in reversed(range(dims)) if plan.px[d] > 1]
    local = local_images(info, plan)
    per_iteration = plan.interleaved and plan.is_coarsened
    context = {
        "axes": axes,
        "coarse": coarse,
        "interleaved": plan.interleaved,
        "per_iteration": per_iteration,
        "simple": not plan.is_coarsened and not local,
        "px_text": " x ".join(str(p) for p in plan.px),
        "outside": " || ".join(f"{v} >= {e}" for v, e in zip(grid, grid_extents)),
        "inside_grid": " && ".join(f"{v} < {e}" for v, e in zip(grid, grid_extents)),
        "point_call": point_call,
        "inside_call": inside_call,
        "array_copies": array_copies(info, plan),
        "tiles": [local_tile(info, plan, name, analysis) for name in local],
        "conditions": [],
        "vector": None,
    }
    if inside_call is not None:
        # with the interleaved layout the test is per iteration, and there are no vectorised runs
        shown = ([], []) if per_iteration else (tiles, stores)
        context["conditions"] = interior.inside_conditions(info, plan, analysis, grid_extents, *shown)
        if plan.vector_x and not per_iteration:
            context["vector"] = vector_runs(info, plan, [a for a in coarse if a["d"] != 0], tiles, stores)
    return render_lines("kernel_body.cl.j2", **context)


def local_array_name(name: str) -> str:
    return f"imcl_local_{name}"


def local_arrays(info: ProgramInfo, plan) -> list[str]:
    return sorted(n for n in plan.local_mem if info.arrays[n].kind == "array")


def array_copies(info: ProgramInfo, plan) -> list[dict]:
    """The work-group's copy of each small array into local memory: every work-item copies a
    strided share, then one barrier. It runs before any work-item can return."""
    lid = "get_local_id(0)"
    size = "get_local_size(0)"
    for d in range(1, info.grid_dims):
        lid = f"{lid} + get_local_id({d}) * {size}" if d == 1 else f"{lid} + get_local_id({d}) * ({size})"
        size = f"{size} * get_local_size({d})"
    out = []
    for name in local_arrays(info, plan):
        array = info.arrays[name]
        if name in plan.image_mem:
            coords = "imcl_i" if len(array.shape) == 1 else f"imcl_i % {array.shape[1]}, imcl_i / {array.shape[1]}"
            source = f"imcl_aimg_read_{name}({info.c_name(name)}, {coords})"
        else:
            source = f"{info.c_name(name)}[imcl_i]"
        out.append({"ctype": array.element.c_name(), "local": local_array_name(name),
                    "count": math.prod(array.shape), "lid": lid, "size": size, "source": source})
    return out


def tile_extent_names(name: str, dims: int) -> list[str]:
    return [f"imcl_{name}_tw", f"imcl_{name}_th", f"imcl_{name}_td"][:dims]


def tile_origin_names(name: str, dims: int) -> list[str]:
    return [f"imcl_{name}_ox", f"imcl_{name}_oy", f"imcl_{name}_oz"][:dims]


def local_tile(info: ProgramInfo, plan, name: str, analysis: AccessAnalysis) -> dict:
    """One image's local-memory tile: its origin and extent (with halo) per axis, and the value
    each element is filled with (`inside_value`: the tile is known to lie inside the image)."""
    array = info.arrays[name]
    dims = array.dims
    footprint = analysis.footprints[name]
    origins, extents = tile_origin_names(name, dims), tile_extent_names(name, dims)
    axes = [{"d": d, "axis": AXES[d], "origin": origins[d], "extent": extents[d], "low": footprint.halo_low[d],
             "halo": footprint.halo_low[d] + footprint.halo_high[d]} for d in range(dims)]
    coords = [f"{origins[d]} + imcl_t{AXES[d]}" for d in range(dims)]
    if dims == 3:
        index = f"(imcl_tz * {extents[1]} + imcl_ty) * {extents[0]} + imcl_tx"
    else:
        index = f"imcl_ty * {extents[0]} + imcl_tx"
    extent_args = ", ".join(names(array)["whd"[a]] for a in range(dims))
    reader = f"imcl_img_read_{name}" if name in plan.image_mem else f"imcl_read_{name}"
    return {"name": name, "axes": axes, "index": index,
            "value": f"{reader}({info.c_name(name)}, {extent_args}, {', '.join(coords)})",
            "inside_value": interior.direct_read(info, name in plan.image_mem, name, coords)}


def vector_runs(info: ProgramInfo, plan, outer: list[dict], tiles: list[RegisterTile], stores: list[str]) -> dict:
    """The fast path's runs of N = px_x points along x: each register tile's loads (aligned
    N-wide vector loads where a whole aligned run of the tile is needed, scalar loads for the
    rest) and each staged output's row."""
    n = plan.px[0]
    out_tiles = [{"image": t.image, "ctype": info.arrays[t.image].element.c_name(), "size": t.size,
                  "loads": interior.register_tile_loads(info, t, n)} for t in tiles]
    out_stores = []
    for name in stores:
        array = info.arrays[name]
        w, h = names(array)["w"], names(array)["h"]
        out_stores.append({"image": name, "ctype": array.element.c_name(), "buffer": info.c_name(name),
                           "row": f"idy * {w}" if array.dims == 2 else f"(idz * {h} + idy) * {w}"})
    return {"n": n, "outer": outer, "tiles": out_tiles, "stores": out_stores}
