"""Memory placement and the interior fast path's accesses: IR-to-IR passes that annotate every
access to a kernel parameter's elements with where it goes (`Subscript.memory`).

`place_memory(info, plan)` annotates for the variant's placement (image memory, local-memory
tiles and copies, the global buffers); `interior(...)` re-annotates a placed IR for the interior
fast path's copy of the body (codegen/interior.py), where reads at bounded offsets need no
boundary handling, and `vectorise(...)` that copy for runs of points along x (register tiles,
staged outputs). None changes its input; the printer (codegen/variant.py: PlacedAccess) writes
each access as its annotation says.
"""
from __future__ import annotations

import copy
from typing import Iterable, Optional

from ..ir import nodes as ir
from ..ir.rewrite import holds_subscript, rewrite_functions
from .semantic import ArrayInfo, ProgramInfo, grid_offset

# where an image read goes
BUFFER = "buffer"  # the global buffer, no boundary handling (a grid image at the grid point)
BOUNDARY = "boundary"  # the global buffer through the image's boundary-handling read function
TILE = "tile"  # the work-group's local-memory tile (with halo)
IMAGE = "image"  # image memory, through the read function that handles its boundary
DIRECT = "direct"  # known to be inside the image (fast path): the buffer, no boundary handling
IMAGE_DIRECT = "image_direct"  # known to be inside the image (fast path): image memory, no boundary handling
REGISTER = "register"  # the vectorised run's private register tile (fast path)
# where an image or pointer write goes
GUARDED = "guarded"  # written only where the index is inside (pointers: inside the length)
STAGED = "staged"  # the vectorised run's private staging array (fast path)
# BUFFER: at the grid point, unguarded
# where a read of a fixed-size array goes: BUFFER (global or constant memory), IMAGE, or
LOCAL = "local"  # the work-group's local-memory copy


def at_grid_point(array: ArrayInfo, node: ir.Subscript) -> bool:
    """A grid image accessed exactly at the current grid point needs no boundary handling."""
    if not array.in_grid:
        return False
    return all(grid_offset(index) == ("idx idy idz".split()[axis], 0) for axis, index in enumerate(node.indices))


def _parameter_array(info: ProgramInfo, node: ir.Node) -> Optional[ArrayInfo]:
    """The kernel parameter whose elements `node` accesses, or None (a private array, or any
    other expression)."""
    if not isinstance(node, ir.Subscript) or node.base.symbol is None:
        return None
    array = info.arrays.get(node.base.name)
    if array is None or array.param.symbol is not node.base.symbol:
        return None
    return array


def _annotated(node: ir.Subscript, memory: str) -> ir.Subscript:
    out = copy.copy(node)
    out.memory = memory
    return out


def _write_target(expr: ir.Node) -> Optional[ir.Subscript]:
    if isinstance(expr, (ir.Assign, ir.IncDec)) and isinstance(expr.target, ir.Subscript):
        return expr.target
    return None


def _annotate(info: ProgramInfo, read, write) -> ProgramInfo:
    """`info` with `read(array, subscript)` / `write(array, subscript)` (None: unchanged) as the
    annotation of each access to a parameter's elements, in every function."""

    def replace(original: ir.Node, rebuilt: ir.Node) -> Optional[ir.Node]:
        array = _parameter_array(info, rebuilt)
        if array is not None:
            memory = read(array, rebuilt)
            return None if memory is None else _annotated(rebuilt, memory)
        target = _write_target(rebuilt)
        array = _parameter_array(info, target) if target is not None else None
        if array is None or array.kind == "array":
            return None
        memory = write(array, target)
        if memory is None:
            return None
        out = copy.copy(rebuilt)
        out.target = _annotated(target, memory)
        return out

    return rewrite_functions(info, replace, holds_subscript)


def place_memory(info: ProgramInfo, plan) -> ProgramInfo:
    """Every access annotated for the variant `plan` (its image_mem and local_mem sets)."""

    def read(array: ArrayInfo, node: ir.Subscript) -> str:
        if array.kind == "pointer":
            return GUARDED
        if array.kind == "array":
            return LOCAL if array.name in plan.local_mem else IMAGE if array.name in plan.image_mem else BUFFER
        if array.name in plan.local_mem:
            return TILE
        if array.name in plan.image_mem:
            return IMAGE
        return BUFFER if at_grid_point(array, node) else BOUNDARY

    def write(array: ArrayInfo, node: ir.Subscript) -> str:
        if array.kind == "image" and at_grid_point(array, node):
            return BUFFER
        return GUARDED

    return _annotate(info, read, write)


def interior(info: ProgramInfo, plan, inside_images: Iterable[str]) -> ProgramInfo:
    """A placed IR re-annotated for the interior fast path's copy of the body: reads of
    `inside_images` (read at bounded offsets, in a work-group known to lie inside them) skip
    boundary handling. Images in local memory keep their tiles; reads at the grid point stay
    plain buffer reads."""
    inside_images = set(inside_images)

    def read(array: ArrayInfo, node: ir.Subscript) -> Optional[str]:
        if array.kind != "image" or array.name in plan.local_mem or array.name not in inside_images:
            return None
        if node.memory == BUFFER:
            return None
        return IMAGE_DIRECT if array.name in plan.image_mem else DIRECT

    return _annotate(info, read, lambda array, node: None)


def vectorise(info: ProgramInfo, tiles: Iterable[str], stores: Iterable[str]) -> ProgramInfo:
    """The fast path's IR for runs of points along x (codegen/interior.py): reads of the images
    in `tiles` come from the run's private register tiles, writes of `stores` go to its
    staging arrays (stored as one vector after the run)."""
    tiles, stores = set(tiles), set(stores)

    def read(array: ArrayInfo, node: ir.Subscript) -> Optional[str]:
        return REGISTER if array.kind == "image" and array.name in tiles else None

    def write(array: ArrayInfo, node: ir.Subscript) -> Optional[str]:
        return STAGED if array.name in stores else None

    return _annotate(info, read, write)
