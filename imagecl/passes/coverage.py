"""Which written images the kernel provably writes at every pixel, whatever their old contents.

A run allocates each written array before the kernel: zero-filled when the caller left it out,
else holding the caller's values. Neither is needed for an image that every grid point
overwrites whole without reading it first: its old contents can never show. The test is
deliberately narrow (a conservative "no" costs one fill or copy, a wrong "yes" shows garbage):

- the image belongs to the grid (its shape is the grid's) and is never read;
- a statement directly in the kernel's body (not inside an `if` or a loop) is
  `image[idx][idy] = value;` (`[idz]` too in 3-D), the grid point itself, with a plain `=`;
- no `return` comes before that statement (anywhere in the statements before it).
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.walk import walk
from .semantic import GRID_INDICES, ProgramInfo


def overwritten_images(info: ProgramInfo) -> frozenset[str]:
    """The written images whose old contents a run never shows (see the module's docstring)."""
    if not info.grid:
        return frozenset()
    candidates = {name for name, a in info.arrays.items()
                  if a.kind == "image" and a.in_grid and a.is_written and not a.is_read}
    found: set[str] = set()
    for stmt in info.kernel.body.body:
        name = _whole_pixel_write(stmt, info.grid_dims)
        if name in candidates:
            found.add(name)
        if any(isinstance(n, ir.Return) for n in walk(stmt)):
            break  # what follows may be skipped at some grid points
    return frozenset(found)


def _whole_pixel_write(stmt: ir.Stmt, dims: int) -> str | None:
    """The image that `stmt` writes at the grid point, if it is `image[idx][idy] = value;`."""
    if not isinstance(stmt, ir.ExprStmt):
        return None
    expr = stmt.expr
    if not (isinstance(expr, ir.Assign) and expr.op == "=" and isinstance(expr.target, ir.Subscript)):
        return None
    target = expr.target
    if target.base.symbol is None or target.base.symbol.kind != "image" or len(target.indices) != dims:
        return None
    for index, want in zip(target.indices, GRID_INDICES):
        if not (isinstance(index, ir.Name) and index.name == want and index.symbol is not None
                and index.symbol.kind == "grid_index"):
            return None
    return target.base.name
