"""The interior fast path and vectorised runs along x: what they apply to and the facts their
code needs (templates/kernel_body.cl.j2 lays that code out, through codegen/body.py).

Interior fast path (`interior`): a work-group first tests, once, whether every pixel it covers
(its block of grid points plus each image's halo, from passes/footprint.py) lies inside every
image it reads at bounded offsets, and inside the grid. If so it runs a copy of the body in
which those reads go straight to memory (no clamp/wrap/mirror/constant test) and grid points
need no guard; otherwise it runs the general body. The test depends only on the group's id,
so the whole work-group takes the same branch (its barriers stay legal) and no warp diverges.
With the interleaved layout a work-group's points in one coarsening iteration form one block,
so the test is made per iteration.

Vectorised runs (`vector_x`, blocked layout, px_x = N in 2..16, inside the fast path only):
the N contiguous points of a work-item along x are computed from a private register tile of
each image (its rows of the footprint, loaded with aligned N-wide vector loads where a whole
aligned run is needed and scalar loads at the edges), and outputs written only at the grid
point are staged in a private array and stored with one N-wide store. Vector loads and stores
are aligned: the fast path also requires each such image's width, and its buffer's address,
to be multiples of the vector size; otherwise the general body runs.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import nodes as ir
from ..ir import types as ty
from ..ir.walk import walk
from ..passes.footprint import AccessAnalysis, Footprint
from ..passes.semantic import GRID_INDICES, ArrayInfo, ProgramInfo
from .emitter import names

AXES = "xyz"
VECTOR_WIDTHS = (2, 4, 8, 16)  # OpenCL vector sizes a run of px_x points can move as
MAX_REGISTER_TILE = 256  # elements of one image's private tile; larger footprints read directly


# ---- what the passes apply to (also used to build the tuning space) ----------------------------------


def inside_images(info: ProgramInfo, analysis: AccessAnalysis) -> list[str]:
    """Images whose every read is at a bounded offset from the grid point: inside the fast path
    they need no boundary handling. Reads of other images keep it."""
    out = []
    for name, array in info.arrays.items():
        if array.kind != "image" or not array.reads or array.dims != info.grid_dims:
            continue
        fp = analysis.footprints.get(name)
        if fp is not None and fp.bounded:
            out.append(name)
    return out


def _scalar_element(array: ArrayInfo) -> bool:
    return isinstance(array.element, ty.ScalarType) and array.element != ty.BOOL


def vector_store_images(info: ProgramInfo) -> list[str]:
    """Grid images written only at the grid point, by top-level statements of a kernel without
    `return` and never read: every point of a run writes them exactly once, so a run's values
    can be staged privately and stored together."""
    kernel = info.kernel.body
    if any(isinstance(n, ir.Return) for n in walk(kernel)):
        return []
    top_level = {id(s.expr) for s in kernel.body if isinstance(s, ir.ExprStmt)}
    out = []
    for name, array in info.arrays.items():
        if array.kind != "image" or not array.in_grid or not array.writes or array.reads:
            continue
        if not _scalar_element(array):
            continue
        ok = True
        for node in walk(kernel):
            if isinstance(node, (ir.Assign, ir.IncDec)) and isinstance(node.target, ir.Subscript) \
                    and node.target.base.name == name:
                at_point = all(isinstance(i, ir.Name) and i.symbol is not None and i.symbol.kind == "grid_index"
                               and i.name == GRID_INDICES[axis] for axis, i in enumerate(node.target.indices))
                if not (isinstance(node, ir.Assign) and node.op == "=" and id(node) in top_level and at_point):
                    ok = False
        if ok:
            out.append(name)
    return out


@dataclass(frozen=True)
class RegisterTile:
    """The private copy of one image's footprint for a run of N points along x."""

    image: str
    low: tuple[int, ...]  # footprint offsets, x first
    high: tuple[int, ...]
    width: int  # N + footprint width in x - 1

    @property
    def rows(self) -> list[tuple[int, ...]]:
        """(dy[, dz]) offsets of the tile's rows, in storage order."""
        ys = range(self.low[1], self.high[1] + 1)
        if len(self.low) == 3:
            return [(dy, dz) for dz in range(self.low[2], self.high[2] + 1) for dy in ys]
        return [(dy,) for dy in ys]

    @property
    def size(self) -> int:
        # from the extents, not len(self.rows): a footprint 2^31 deep must not be listed to be refused
        rows = 1
        for lo, hi in zip(self.low[1:], self.high[1:]):
            rows *= hi - lo + 1
        return self.width * rows


def register_tiles(info: ProgramInfo, analysis: AccessAnalysis, local_mem, image_mem, n: int) -> list[RegisterTile]:
    out = []
    for name in inside_images(info, analysis):
        array = info.arrays[name]
        # a written image could change under a tile loaded before the run's points execute
        if name in local_mem or name in image_mem or not _scalar_element(array) or array.is_written:
            continue
        fp: Footprint = analysis.footprints[name]
        tile = RegisterTile(name, fp.low, fp.high, n + fp.high[0] - fp.low[0])
        if tile.size <= MAX_REGISTER_TILE:
            out.append(tile)
    return out


def local_images(info: ProgramInfo, plan) -> list[str]:
    """Images staged as tiles in local memory (arrays in `plan.local_mem` are copied whole)."""
    return sorted(n for n in plan.local_mem if info.arrays[n].kind == "image")


def vector_candidates(info: ProgramInfo, analyses) -> bool:
    """Whether `vector_x` can change anything for this program (in some variant)."""
    if vector_store_images(info):
        return True
    return any(register_tiles(info, a, (), (), 2) for a in analyses)


# ---- the fast path's condition -----------------------------------------------------------------------


def inside_conditions(info: ProgramInfo, plan, analysis: AccessAnalysis, grid_extents: list[str],
                      tiles: list[RegisterTile], stores: list[str], skip: tuple[str, ...] = ()) -> list[str]:
    """The conditions, on the block's bounds `imcl_lo<a>` and `imcl_hi<a>` (one past it), under
    which the work-group's footprint is inside every image but those in `skip` (templates/
    kernel_body.cl.j2 declares the bounds and joins the conditions into `imcl_inside`)."""
    dims = info.grid_dims
    conds = [f"imcl_hi{AXES[d]} <= {grid_extents[d]}" for d in range(dims)]
    for name in inside_images(info, analysis):
        if name in skip:
            continue
        array = info.arrays[name]
        fp = analysis.footprints[name]
        for d in range(dims):
            low, high = fp.halo_low[d], fp.halo_high[d]
            extent = names(array)["whd"[d]]
            if low:
                conds.append(f"imcl_lo{AXES[d]} >= {low}")
            conds.append(f"imcl_hi{AXES[d]}" + (f" + {high}" if high else "") + f" <= {extent}")
    if plan.vector_x:
        n = plan.px[0]
        for name in [t.image for t in tiles] + stores:
            array = info.arrays[name]
            size = n * array.element.dtype.itemsize
            conds.append(f"{names(array)['w']} % {n} == 0")
            conds.append(f"((ulong){info.c_name(name)} & {size - 1}) == 0")  # aligned N-wide accesses
    return list(dict.fromkeys(conds))


# ---- the fast path's body -------------------------------------------------------------------------------


def direct_read(info: ProgramInfo, in_image_memory: bool, name: str, coords: list[str]) -> str:
    """A read known to be inside the image: no boundary handling."""
    array = info.arrays[name]
    c = info.c_name(name)
    if in_image_memory:
        return f"imcl_img_read_{name}_in({c}, {', '.join(coords)})"
    w = names(array)["w"]
    if array.dims == 3:
        return f"{c}[(({coords[2]}) * {names(array)['h']} + ({coords[1]})) * {w} + ({coords[0]})]"
    return f"{c}[({coords[1]}) * {w} + ({coords[0]})]"


def register_tile_index(tile: RegisterTile, coords: list[str]) -> str:
    x = _offset(f"({coords[0]}) - imcl_x0", -tile.low[0])
    y = _offset(f"({coords[1]}) - idy", -tile.low[1])
    if len(tile.low) == 3:
        rows_y = tile.high[1] - tile.low[1] + 1
        z = _offset(f"({coords[2]}) - idz", -tile.low[2])
        return f"(({z}) * {rows_y} + {y}) * {tile.width} + {x}"
    return f"({y}) * {tile.width} + {x}"


def _offset(name: str, offset: int) -> str:
    return f"{name} + {offset}" if offset > 0 else f"{name} - {-offset}" if offset < 0 else name


def register_tile_loads(info: ProgramInfo, tile: RegisterTile, n: int) -> list[dict]:
    """The loads that fill `imcl_reg_<image>` for the run starting at imcl_x0, in order: an
    aligned vector load (`vector`) where a whole aligned N-wide run of the tile is needed, a
    scalar load for the rest; `at` is the address, `index` the first element of the tile."""
    array = info.arrays[tile.image]
    w, h = names(array)["w"], names(array)["h"]
    loads = []
    for r, row in enumerate(tile.rows):
        y = _offset("idy", row[0])
        base = f"({y}) * {w}"
        if len(row) == 2:
            z = _offset("idz", row[1])
            base = f"(({z}) * {h} + ({y})) * {w}"
        c = 0
        while c < tile.width:
            offset = tile.low[0] + c  # from imcl_x0, which is a multiple of n
            at = _offset(f"{info.c_name(tile.image)} + {base} + imcl_x0", offset)
            vector = offset % n == 0 and c + n <= tile.width
            loads.append({"vector": vector, "at": at, "index": r * tile.width + c})
            c += n if vector else 1
    return loads
