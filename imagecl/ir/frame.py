"""The kernel frame: the part of a variant's __kernel function around the per-point calls.

The user's code becomes per-point functions (the IR of ir/nodes.py, after the variant passes);
the frame says which grid points each work-item runs and what the work-group prepares for them.
It is built by passes/frame.py, one function a decision (coarsening, local-memory staging, the
interior fast path, vectorised runs), and laid out by templates/kernel_body.cl.j2. Expression
fields hold OpenCL C text made from generated names only (`imcl_*`, the renamed user names).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

AXES = "xyz"
GRID_INDICES = ("idx", "idy", "idz")


@dataclass(frozen=True)
class Axis:
    """One axis of the grid, with the grid points each work-item runs along it."""

    d: int
    px: int = 1  # grid points per work-item
    span: int = 1  # points per work-item in one block of the work-group (1 when interleaved)

    @property
    def axis(self) -> str:
        return AXES[self.d]

    @property
    def index(self) -> str:
        return GRID_INDICES[self.d]


@dataclass(frozen=True)
class ArrayCopy:
    """A small read-only array copied whole into local memory by the work-group (strided)."""

    ctype: str
    local: str  # the local array's name
    count: int
    lid: str  # the work-item's linear index in the work-group
    size: str  # the work-group's size
    source: str  # the element `imcl_i` of the array


@dataclass(frozen=True)
class TileAxis:
    d: int
    origin: str  # the tile's first pixel along the axis
    extent: str  # the tile's extent along the axis
    low: int  # halo below the block
    halo: int  # halo below and above

    @property
    def axis(self) -> str:
        return AXES[self.d]


@dataclass(frozen=True)
class LocalTile:
    """An image's tile in local memory: the work-group's block of pixels with its halo."""

    name: str
    axes: tuple[TileAxis, ...]
    index: str  # the element of the tile at imcl_t<x, y, z>
    value: str  # the pixel it is filled with
    inside_value: str  # the same, known to lie inside the image (no boundary handling)


@dataclass(frozen=True)
class RegisterLoad:
    vector: bool  # an aligned N-wide vector load (else one element)
    at: str  # address
    index: int  # first element of the register tile


@dataclass(frozen=True)
class RegisterTile:
    image: str
    ctype: str
    size: int
    loads: tuple[RegisterLoad, ...]


@dataclass(frozen=True)
class StagedStore:
    image: str
    ctype: str
    buffer: str
    row: str  # the row's first element, in elements


@dataclass(frozen=True)
class VectorRuns:
    """Runs of `n` points along x in the fast path: register tiles in, staged outputs out."""

    n: int
    outer: tuple[Axis, ...]  # the other coarsened axes, outermost first
    tiles: tuple[RegisterTile, ...] = ()
    stores: tuple[StagedStore, ...] = ()
    explicit: bool = False  # one call of the fast path's lane function per run (codegen/lanes.py)
    rows: int = 1  # grid rows one such call computes (the outer y loop steps by them)


@dataclass(frozen=True)
class KernelFrame:
    """The __kernel function's body of one variant."""

    axes: tuple[Axis, ...]
    extents: tuple[str, ...]  # the grid's extent per axis
    point_call: str  # the general per-point function's call
    interleaved: bool = False  # a work-item's points strided by the global size (else contiguous)
    array_copies: tuple[ArrayCopy, ...] = ()
    tiles: tuple[LocalTile, ...] = ()
    inside_call: Optional[str] = None  # the fast path's per-point call (None: no fast path)
    conditions: tuple[str, ...] = field(default=())  # the fast path's test, on imcl_lo/hi<axis>
    # the tiles' unclamped fill's test where it differs from the fast path's (empty: the same)
    fill_conditions: tuple[str, ...] = field(default=())
    vector: Optional[VectorRuns] = None
    # the kernel runs over a band of the grid through a global work offset, which shifts
    # get_global_id but not get_group_id: a work-group's first point is get_global_id - get_local_id
    banded: bool = False

    @property
    def coarse(self) -> tuple[Axis, ...]:
        """Axes with more than one point per work-item, outermost (z) first."""
        return tuple(a for a in reversed(self.axes) if a.px > 1)

    @property
    def per_iteration(self) -> bool:
        """Interleaved coarsening: each iteration's points form one block of the work-group,
        so tiles are loaded, and the fast path tested, per iteration."""
        return self.interleaved and bool(self.coarse)

    @property
    def simple(self) -> bool:
        return not self.coarse and not self.tiles

    @property
    def px_text(self) -> str:
        return " x ".join(str(a.px) for a in self.axes)

    @property
    def outside(self) -> str:
        return " || ".join(f"{a.index} >= {e}" for a, e in zip(self.axes, self.extents))

    @property
    def inside_grid(self) -> str:
        return " && ".join(f"{a.index} < {e}" for a, e in zip(self.axes, self.extents))

    def template_context(self) -> dict:
        """What templates/kernel_body.cl.j2 reads."""
        names = ("axes", "coarse", "interleaved", "per_iteration", "simple", "px_text", "outside", "inside_grid",
                 "point_call", "inside_call", "array_copies", "tiles", "conditions", "fill_conditions", "vector",
                 "banded")
        return {name: getattr(self, name) for name in names}
