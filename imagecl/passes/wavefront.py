"""Wavefront programs (`#pragma imcl wavefront(out)`, docs/wavefront.md): a grid point may read
the already computed points of its own output to the west, north and north-west, and nothing
else of it. The pragma's checks run before the grid is read (the pragma supplies the grid when
no `grid` pragma does); the access checks run with the race checks."""
from __future__ import annotations

from typing import Callable, Optional

from ..errors import CompileError
from ..ir import nodes as ir
from .program_info import ArrayInfo, ProgramInfo

# (x, y) offsets of the output that a point may read: west, north, north-west, and itself
# (its own value as written so far, or the initial value before its write)
WAVEFRONT_OFFSETS = frozenset({(-1, 0), (0, -1), (-1, -1), (0, 0)})
PRAGMA = "wavefront"


def wavefront_output(analyser, pragmas: dict[str, list[ir.Pragma]]) -> Optional[str]:
    """The image named by the wavefront pragma (None without one), checked as far as the
    parameters tell; without a `grid` or `grid_size` pragma it becomes the grid."""
    found = pragmas.get(PRAGMA, [])
    if not found:
        return None
    if len(found) > 1:
        raise analyser.error("pragma 'wavefront' is given twice", found[1].pos)
    pragma = found[0]
    if len(pragma.args) != 1 or pragma.args[0].values:
        raise analyser.error("pragma 'wavefront' takes one image: the output whose earlier points are read",
                             pragma.pos, "e.g. #pragma imcl wavefront(score)")
    arg = pragma.args[0]
    analyser._image_arg(arg, PRAGMA)
    if "grid_size" in pragmas:
        raise analyser.error("a wavefront program's grid is its output: drop pragma 'grid_size'",
                             pragmas["grid_size"][0].pos, f"the grid is one point per pixel of '{arg.name}'")
    grids = pragmas.get("grid", [])
    if not grids:
        pragmas["grid"] = [ir.Pragma(pragma.pos, "grid", [ir.PragmaArg(arg.pos, arg.name, [])], pragma.text)]
    elif not any(a.name == arg.name for p in grids for a in p.args):
        raise analyser.error(f"the wavefront output '{arg.name}' must be one of the grid's images", arg.pos,
                             "add it to pragma 'grid', or leave 'grid' out: the output is then the grid")
    return arg.name


def check_wavefront(info: ProgramInfo, error: Callable[..., CompileError], pragma_pos: ir.Pos) -> None:
    """The output is a 2-D image read at the wavefront offsets only, with a constant boundary
    (what rows and columns before the first read); it is the only array the program writes."""
    name = info.wavefront
    out = info.arrays[name]
    if info.grid_dims != 2:
        raise error(f"a wavefront grid is 2-D; '{name}' has {info.grid_dims} dimensions", pragma_pos)
    if not out.writes:
        raise error(f"the wavefront output '{name}' is never written", pragma_pos,
                    f"write {name}[idx][idy] = ...;")
    if out.boundary != "constant":
        raise error(f"the wavefront output '{name}' must have a constant boundary condition, not '{out.boundary}'",
                    pragma_pos, "reads before row 0 or column 0 return it: boundary_cond(" + name
                    + ":constant(value)); the other modes would read points not computed yet")
    for kind in ("image_mem", "local_mem"):
        if info.placement[kind]:
            raise error(f"pragma '{kind}' is not supported in a wavefront program", pragma_pos,
                        "a wavefront program runs its naive variant on every device")
    for array in info.arrays.values():
        if array is not out and array.writes:
            raise error(f"a wavefront program writes only its output '{name}', not '{array.name}'",
                        array.writes[0].pos)
    for w in out.writes:
        if _offsets(w) != (0, 0):
            raise error(f"the wavefront output '{name}' must be written at [idx][idy]", w.pos,
                        "each grid point writes its own pixel")
    for r in out.reads:
        offset = _offsets(r)
        if offset is None:
            raise error(f"'{name}' is read at a computed position; a wavefront point reads its output only at "
                        "fixed offsets", r.pos, _HINT.format(name=name))
        if offset not in WAVEFRONT_OFFSETS:
            raise error(f"'{name}' is read at offset ({offset[0]:+d}, {offset[1]:+d}), which the wavefront has not "
                        "computed yet or which is not a neighbour", r.pos, _HINT.format(name=name))


_HINT = "read {name}[idx-1][idy] (west), {name}[idx][idy-1] (north) or {name}[idx-1][idy-1] (north-west)"


def _offsets(node: ir.Subscript) -> Optional[tuple[int, int]]:
    """(dx, dy) of `out[idx+dx][idy+dy]`, or None for any other index form."""
    from .races import grid_offset

    forms = [grid_offset(i) for i in node.indices]
    if len(forms) != 2 or any(f is None for f in forms):
        return None
    if forms[0][0] != "idx" or forms[1][0] != "idy":
        return None
    return forms[0][1], forms[1][1]


def wavefront_hint(array: ArrayInfo, node: ir.Subscript) -> Optional[str]:
    """For a non-wavefront program reading its output at a wavefront offset: the pragma to add."""
    if array.kind == "image" and _offsets(node) in WAVEFRONT_OFFSETS:
        return (f"a dynamic-programming recurrence over '{array.name}' needs "
                f"'#pragma imcl wavefront({array.name})' (docs/wavefront.md)")
    return None
