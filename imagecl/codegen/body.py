"""The __kernel function's body of one variant, rendered by templates/kernel_body.cl.j2.

This module builds the variant's kernel frame (ir/frame.py) by composing the frame passes
(passes/frame.py) with what the plan and the analyses say: the coarsening, the work-group's
local-memory tiles and array copies, the interior test's conditions and the vectorised runs'
register tiles; the template lays the code out.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

from .. import templating
from ..ir import frame
from ..passes import frame as frame_passes
from ..passes.footprint import AccessAnalysis
from ..passes.semantic import ProgramInfo
from . import interior
from .emitter import names
from .interior import RegisterTile, local_images
from .lanes import LANES

AXES = "xyz"


def render_lines(template: str, **context) -> str:
    """A line template's text, without the blank lines between its macros or the last newline."""
    return templating.line_environment().get_template(template).render(**context).strip("\n")


def kernel_body(info: ProgramInfo, plan, analysis: AccessAnalysis, grid_extents: list[str], point_call: str,
                inside_call: Optional[str] = None, tiles: list[RegisterTile] = (), stores: list[str] = (),
                rows: int = 1) -> str:
    """The kernel's body: the general one, or (with `inside_call`, the fast path's per-point call)
    the one that tests whether the work-group lies inside the images (codegen/interior.py);
    `rows`: grid rows one call of the lane function computes (codegen/lanes.py)."""
    return render_lines("kernel_body.cl.j2", **kernel_frame(info, plan, analysis, grid_extents, point_call,
                                                             inside_call, tiles, stores, rows).template_context())


def kernel_frame(info: ProgramInfo, plan, analysis: AccessAnalysis, grid_extents: list[str], point_call: str,
                 inside_call: Optional[str] = None, tiles: list[RegisterTile] = (),
                 stores: list[str] = (), rows: int = 1) -> frame.KernelFrame:
    """The variant's kernel frame: the frame passes (passes/frame.py) composed as `plan` says."""
    out = frame_passes.one_point_per_item(grid_extents, point_call)
    out = frame_passes.coarsen(out, plan.px, plan.interleaved)
    if plan.banded:
        out = dataclasses.replace(out, banded=True)
    out = frame_passes.stage_local(out, array_copies(info, plan),
                                   [local_tile(info, plan, name, analysis) for name in local_images(info, plan)])
    if inside_call is not None:
        # with the interleaved layout the test is per iteration, and there are no vectorised runs
        shown = ([], []) if out.per_iteration else (tiles, stores)
        # the fast path reads an image staged in local memory from its tile, which the general
        # fill has already clamped: only the fill needs that image's halo inside the image
        staged = tuple(local_images(info, plan))
        out = frame_passes.fast_path(out, inside_call,
                                     interior.inside_conditions(info, plan, analysis, grid_extents, *shown, skip=staged),
                                     interior.inside_conditions(info, plan, analysis, grid_extents, [], []))
        if plan.vector_x and not out.per_iteration:
            out = frame_passes.vectorise_runs(out, register_tiles(info, plan, tiles), staged_stores(info, stores),
                                              explicit=plan.vector_x == LANES, rows=rows)
    return out


def local_array_name(name: str) -> str:
    return f"imcl_local_{name}"


def local_arrays(info: ProgramInfo, plan) -> list[str]:
    return sorted(n for n in plan.local_mem if info.arrays[n].kind == "array")


def array_copies(info: ProgramInfo, plan) -> list[frame.ArrayCopy]:
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
        out.append(frame.ArrayCopy(array.element.c_name(), local_array_name(name), math.prod(array.shape), lid,
                                   size, source))
    return out


def tile_extent_names(name: str, dims: int) -> list[str]:
    return [f"imcl_{name}_tw", f"imcl_{name}_th", f"imcl_{name}_td"][:dims]


def tile_origin_names(name: str, dims: int) -> list[str]:
    return [f"imcl_{name}_ox", f"imcl_{name}_oy", f"imcl_{name}_oz"][:dims]


def local_tile(info: ProgramInfo, plan, name: str, analysis: AccessAnalysis) -> frame.LocalTile:
    """One image's local-memory tile: its origin and extent (with halo) per axis, and the value
    each element is filled with (`inside_value`: the tile is known to lie inside the image)."""
    array = info.arrays[name]
    dims = array.dims
    footprint = analysis.footprints[name]
    origins, extents = tile_origin_names(name, dims), tile_extent_names(name, dims)
    axes = tuple(frame.TileAxis(d, origins[d], extents[d], footprint.halo_low[d],
                                footprint.halo_low[d] + footprint.halo_high[d]) for d in range(dims))
    coords = [f"{origins[d]} + imcl_t{AXES[d]}" for d in range(dims)]
    if dims == 3:
        index = f"(imcl_tz * {extents[1]} + imcl_ty) * {extents[0]} + imcl_tx"
    else:
        index = f"imcl_ty * {extents[0]} + imcl_tx"
    extent_args = ", ".join(names(array)["whd"[a]] for a in range(dims))
    reader = f"imcl_img_read_{name}" if name in plan.image_mem else f"imcl_read_{name}"
    return frame.LocalTile(name, axes, index, f"{reader}({info.c_name(name)}, {extent_args}, {', '.join(coords)})",
                           interior.direct_read(info, name in plan.image_mem, name, coords))


def register_tiles(info: ProgramInfo, plan, tiles: list[RegisterTile]) -> list[frame.RegisterTile]:
    """Each register tile's loads for a run of N = px_x points: aligned N-wide vector loads where
    a whole aligned run of the tile is needed, scalar loads for the rest."""
    n = plan.px[0]
    return [frame.RegisterTile(t.image, info.arrays[t.image].element.c_name(), t.size,
                               tuple(frame.RegisterLoad(**load) for load in interior.register_tile_loads(info, t, n)))
            for t in tiles]


def staged_stores(info: ProgramInfo, stores: list[str]) -> list[frame.StagedStore]:
    out = []
    for name in stores:
        array = info.arrays[name]
        w, h = names(array)["w"], names(array)["h"]
        out.append(frame.StagedStore(name, array.element.c_name(), info.c_name(name),
                                     f"idy * {w}" if array.dims == 2 else f"(idz * {h} + idy) * {w}"))
    return out
