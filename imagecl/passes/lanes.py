"""Which values of the kernel body vary along x: the analysis behind explicit vector code.

A run of N contiguous grid points along x (the interior fast path with `vector_x` = 2, see
codegen/lanes.py) executes the kernel body once with N lanes: every value that depends on
`idx` becomes an OpenCL vector (`floatN`, `intN`, ...), every other value (loop counters,
filter taps, `idy`, parameters) stays a scalar shared by the lanes. That is only the body's
meaning when control flow never depends on a lane, so `analyse` refuses (with the reason) a
body in which a branch, a loop's condition, a comparison, a `?:`, a call of a helper, a
private array or a write other than the pixel at the grid point depends on `idx`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..ir import builtins as bi
from ..ir import nodes as ir
from ..ir import types as ty
from ..ir.walk import walk
from .semantic import ProgramInfo

# built-ins that apply per element to vectors of the result's type (ir/builtins.py kinds)
ELEMENTWISE_KINDS = ("float", "generic", "int", "abs")
_COMPARISONS = ("==", "!=", "<", ">", "<=", ">=", "&&", "||")


class NotVectorisable(Exception):
    """The body cannot run as one vector of lanes; the message says why."""


@dataclass
class Lanes:
    """The kernel body's varying symbols and expressions (by identity: unrolled copies share nodes)."""

    info: ProgramInfo
    symbols: dict[int, ir.Symbol] = field(default_factory=dict)
    _memo: dict[int, bool] = field(default_factory=dict)

    def symbol_varies(self, symbol: Optional[ir.Symbol]) -> bool:
        return symbol is not None and id(symbol) in self.symbols

    def varies(self, e) -> bool:
        """Whether expression `e` differs between the lanes of a run."""
        if not isinstance(e, ir.Expr):
            return False
        key = id(e)
        if key not in self._memo:
            self._memo[key] = self._varies(e)
        return self._memo[key]

    def _varies(self, e: ir.Expr) -> bool:
        if isinstance(e, ir.Name):
            return self.symbol_varies(e.symbol)
        if isinstance(e, ir.Call) and e.function is not None:
            return any(self.varies(a) for a in e.args) or _uses_grid_index(e.function)
        return any(self.varies(c) for c in _children(e))


def _children(e: ir.Expr) -> list[ir.Expr]:
    if isinstance(e, ir.Unary):
        return [e.operand]
    if isinstance(e, ir.IncDec):
        return [e.target]
    if isinstance(e, (ir.Binary,)):
        return [e.left, e.right]
    if isinstance(e, ir.Assign):
        return [e.target, e.value]
    if isinstance(e, ir.Ternary):
        return [e.cond, e.then, e.other]
    if isinstance(e, ir.Cast):
        return [e.operand]
    if isinstance(e, ir.VectorLit):
        return list(e.elements)
    if isinstance(e, ir.Call):
        return list(e.args)
    if isinstance(e, ir.Subscript):
        return list(e.indices)  # an array's elements do not vary; which element is read may
    if isinstance(e, ir.Member):
        return [e.base]
    if isinstance(e, ir.Comma):
        return list(e.exprs)
    return []


def _uses_grid_index(function: ir.Function) -> bool:
    return any(isinstance(n, ir.Name) and n.symbol is not None and n.symbol.kind == "grid_index"
               for n in walk(function.body))


def _is_lane_type(t) -> bool:
    return isinstance(t, ty.ScalarType) and t != ty.BOOL


def _dependents(info: ProgramInfo, nodes: list, index: str) -> Lanes:
    """The symbols and expressions of the kernel body that depend on the grid index `index`."""
    lanes = Lanes(info)
    for n in nodes:
        if isinstance(n, ir.Name) and n.symbol is not None and n.symbol.kind == "grid_index" and n.name == index:
            lanes.symbols[id(n.symbol)] = n.symbol
    # a local assigned a varying value anywhere varies (flow-insensitive, to a fixed point)
    changed = True
    while changed:
        changed = False
        lanes._memo.clear()
        for n in nodes:
            target, value = None, None
            if isinstance(n, ir.VarDecl) and isinstance(n.init, ir.Expr):
                target, value = n.symbol, n.init
            elif isinstance(n, ir.Assign) and isinstance(n.target, ir.Name):
                target, value = n.target.symbol, n.value
            if target is not None and not lanes.symbol_varies(target) and lanes.varies(value):
                lanes.symbols[id(target)] = target
                changed = True
    lanes._memo.clear()
    return lanes


def analyse(info: ProgramInfo) -> Lanes:
    """The varying values of `info`'s kernel body, or NotVectorisable with the reason."""
    nodes = list(walk(info.kernel.body))
    lanes = _dependents(info, nodes, "idx")
    for symbol in lanes.symbols.values():
        if symbol.kind not in ("local", "grid_index") or not _is_lane_type(symbol.type):
            raise NotVectorisable(f"'{symbol.name}' depends on idx but is not a scalar local variable")
    written = {id(n.target) for n in nodes if isinstance(n, (ir.Assign, ir.IncDec))}
    for n in nodes:
        if id(n) in written and isinstance(n, ir.Subscript):
            continue  # a write's target: its assignment is checked (_write_refusal)
        reason = _refusal(info, lanes, n)
        if reason is not None:
            raise NotVectorisable(f"{reason} (line {n.pos.line})" if n.pos.line else reason)
    return lanes


def _refusal(info: ProgramInfo, lanes: Lanes, n: ir.Node) -> Optional[str]:
    """Why node `n` keeps the body from running as lanes, or None."""
    if isinstance(n, ir.Return):
        return "the body returns early"
    if isinstance(n, (ir.If, ir.While, ir.DoWhile, ir.ExitUnless)) and lanes.varies(n.cond):
        return "a branch or loop condition depends on idx"
    if isinstance(n, ir.For) and lanes.varies(n.cond):
        return "a loop condition depends on idx"
    if isinstance(n, ir.For) and n.init is not None \
            and any(lanes.varies(e) for e in walk(n.init) if isinstance(e, ir.Expr)):
        return "a loop's initialisation depends on idx"
    if isinstance(n, ir.VarDecl) and isinstance(n.var_type, ty.ArrayType) and isinstance(n.init, list):
        if any(lanes.varies(x) for x in walk(n.init) if isinstance(x, ir.Expr)):
            return "a private array holds values that depend on idx"
    if not isinstance(n, ir.Expr) or not lanes.varies(n):
        if isinstance(n, (ir.Assign, ir.IncDec)) and isinstance(n.target, ir.Subscript):
            return _write_refusal(info, lanes, n)
        return None
    if not _is_lane_type(n.type) and not isinstance(n, ir.Assign):
        return f"a value of type {n.type} depends on idx"
    if isinstance(n, ir.Binary) and n.op in _COMPARISONS:
        return f"'{n.op}' compares values that depend on idx"
    if isinstance(n, ir.Unary) and n.op == "!":
        return "'!' of a value that depends on idx"
    if isinstance(n, ir.Ternary):
        return "'?:' on values that depend on idx"
    if isinstance(n, ir.Comma):
        return "a comma expression depends on idx"
    if isinstance(n, ir.Member):
        return "a member of a value that depends on idx"
    if isinstance(n, ir.VectorLit):
        return "a vector literal depends on idx"
    if isinstance(n, ir.Call):
        if n.function is not None:
            return f"a call of '{n.name}' depends on idx"
        if bi.convert_target(n.name) is None and bi.BUILTINS[n.name].kind not in ELEMENTWISE_KINDS:
            return f"'{n.name}' of a value that depends on idx"
    if isinstance(n, (ir.Assign, ir.IncDec)):
        if isinstance(n.target, ir.Subscript):
            return _write_refusal(info, lanes, n)
    if isinstance(n, ir.Subscript):
        array = info.arrays.get(n.base.name)
        if array is not None and array.param.symbol is n.base.symbol and array.is_written:
            return f"'{n.base.name}' is read at a point that depends on idx and written"
    return None


def _write_refusal(info: ProgramInfo, lanes: Lanes, n) -> Optional[str]:
    target: ir.Subscript = n.target
    array = info.arrays.get(target.base.name)
    if array is None or array.param.symbol is not target.base.symbol or array.kind != "image":
        return f"'{target.base.name}' is written inside the body"
    if not isinstance(n, ir.Assign) or n.op != "=":
        return f"'{target.base.name}' is updated in place ('{getattr(n, 'op', '')}')"
    if array.reads:
        return f"'{target.base.name}' is both read and written"
    x = target.indices[0]
    at_point = (isinstance(x, ir.Name) and x.symbol is not None and x.symbol.kind == "grid_index"
                and x.name == "idx" and not any(lanes.varies(i) for i in target.indices[1:]))
    if not at_point or not array.in_grid or not _is_lane_type(target.type):
        return f"'{target.base.name}' is written elsewhere than at the grid point"
    return None


def analyse_rows(info: ProgramInfo) -> Optional[Lanes]:
    """The values of the kernel body that differ between grid rows (depend on `idy`), when one
    call can compute several rows side by side (codegen/lanes.py prints each statement that
    involves them once per row, with idy + r): None when the body's control flow depends on the
    row (a branch, a loop's condition or start), when a helper function it calls reads a grid
    index itself, or when a private array holds row-dependent values. A 1-D grid has no rows."""
    if info.grid_dims < 2:
        return None
    nodes = list(walk(info.kernel.body))
    rows = _dependents(info, nodes, "idy")
    for n in nodes:
        if isinstance(n, ir.Return):
            return None
        if isinstance(n, (ir.If, ir.While, ir.DoWhile, ir.ExitUnless, ir.For)) and rows.varies(n.cond):
            return None
        if isinstance(n, ir.For) and n.init is not None \
                and any(rows.varies(e) for e in walk(n.init) if isinstance(e, ir.Expr)):
            return None
        if isinstance(n, ir.Call) and n.function is not None and _uses_grid_index(n.function):
            return None
        if isinstance(n, ir.VarDecl) and isinstance(n.var_type, ty.ArrayType) and isinstance(n.init, list) \
                and any(rows.varies(x) for x in walk(n.init) if isinstance(x, ir.Expr)):
            return None
    for symbol in rows.symbols.values():
        if symbol.kind not in ("local", "grid_index") or isinstance(symbol.type, ty.ArrayType):
            return None
    return rows
