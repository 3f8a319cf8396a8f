"""Data races: writes that every grid point makes to one place, and reads of a written array at
another grid point's position, are errors; what cannot be proven either way is recorded."""
from __future__ import annotations

from typing import Callable, Optional

from ..errors import CompileError
from ..ir import nodes as ir
from ..ir.consteval import const_int
from .program_info import GRID_INDICES, ArrayInfo, ProgramInfo
from .wavefront import wavefront_hint


def grid_offset(expr: ir.Expr) -> Optional[tuple[Optional[str], int]]:
    """`idx + 2` -> ('idx', 2); `3` -> (None, 3); None if the index is not of that form."""
    value = const_int(expr)
    if value is not None:
        return None, value
    if isinstance(expr, ir.Name) and expr.symbol is not None and expr.symbol.kind == "grid_index":
        return expr.name, 0
    if isinstance(expr, ir.Binary) and expr.op in ("+", "-"):
        left, right = grid_offset(expr.left), grid_offset(expr.right)
        if left is None or right is None:
            return None
        if expr.op == "+" and (left[0] is None or right[0] is None):
            return left[0] or right[0], left[1] + right[1]
        if expr.op == "-" and right[0] is None:
            return left[0], left[1] - right[1]
    return None


def check_races(info: ProgramInfo, error: Callable[..., CompileError]) -> None:
    """Rejects what is provably a data race (raising `error(message, pos, hint)`); records in
    `info.unchecked_races` what cannot be proven either way."""
    grid_vars = GRID_INDICES[: info.grid_dims]
    fixed_single = info.grid_size is not None and all(s == 1 for s in info.grid_size)
    for array in info.arrays.values():
        if array.name == info.wavefront:
            continue  # its reads and writes are checked by passes/wavefront.py
        write_forms = _check_writes(info, array, grid_vars, fixed_single, error)
        if not array.writes or not array.reads:
            continue
        if array.kind == "pointer":
            info.unchecked_races.append(f"pointer '{array.name}' is read and written")
            continue
        _check_reads(info, array, write_forms, error)


Forms = list[Optional[tuple[Optional[str], int]]]


def _check_writes(info: ProgramInfo, array: ArrayInfo, grid_vars: tuple[str, ...], fixed_single: bool,
                  error: Callable[..., CompileError]) -> list[Forms]:
    """Every grid point must write its own element; returns each write's index forms."""
    write_forms = []
    for w in array.writes:
        forms = [grid_offset(i) for i in w.indices]
        write_forms.append(forms)
        if any(f is None for f in forms):
            info.unchecked_races.append(
                f"{info.filename}:{w.pos.line}: write to '{array.name}' at a computed position"
            )
            continue
        used = [f[0] for f in forms if f[0] is not None]
        if fixed_single:
            continue
        # each grid index exactly once is an injective map (a transpose too): no race
        if array.kind == "image" and (len(set(used)) != len(used) or set(used) != set(grid_vars)):
            missing = [v for v in grid_vars if v not in used]
            raise error(
                f"data race: every grid point writes '{array.name}' at a position that does not "
                f"depend on {', '.join(missing) or 'a distinct grid index per dimension'}",
                w.pos, f"write {array.name}[{']['.join(grid_vars)}] (plus constant offsets)",
            )
        if array.kind == "pointer" and not used:
            raise error(
                f"data race: every grid point writes '{array.name}' at the same constant index",
                w.pos,
            )
    return write_forms


def _check_reads(info: ProgramInfo, array: ArrayInfo, write_forms: list[Forms],
                 error: Callable[..., CompileError]) -> None:
    """A written array may be read only where the same grid point writes it."""
    for r in array.reads:
        forms = [grid_offset(i) for i in r.indices]
        if any(f is None for f in forms):
            info.unchecked_races.append(
                f"{info.filename}:{r.pos.line}: read of written '{array.name}' at a computed position"
            )
            continue
        for wf in write_forms:
            if any(f is None for f in wf):
                continue
            if forms != wf:
                raise error(
                    f"data race: '{array.name}' is written by the kernel and read here at another "
                    "position, which other grid points may be writing",
                    r.pos, wavefront_hint(array, r) or "read from a separate input image instead",
                )
