"""Compile-time evaluation of integer expressions (tunables, `const` locals, literals)."""
from __future__ import annotations

from typing import Optional

from . import nodes as ir


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_OPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: _c_div(a, b) if b else None,
    "%": lambda a, b: a - _c_div(a, b) * b if b else None,
    "<<": lambda a, b: a << b if 0 <= b < 32 else None,
    ">>": lambda a, b: a >> b if 0 <= b < 32 else None,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<": lambda a, b: int(a < b),
    ">": lambda a, b: int(a > b),
    "<=": lambda a, b: int(a <= b),
    ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "&&": lambda a, b: int(bool(a) and bool(b)),
    "||": lambda a, b: int(bool(a) or bool(b)),
}


def const_int(expr: Optional[ir.Expr]) -> Optional[int]:
    """The value of an integer constant expression, or None when it is not one."""
    if expr is None:
        return None
    if isinstance(expr, ir.IntLit):
        return expr.value
    if isinstance(expr, ir.BoolLit):
        return int(expr.value)
    if isinstance(expr, ir.Name):
        sym = expr.symbol
        return sym.value if sym is not None and sym.is_const else None
    if isinstance(expr, ir.Unary):
        v = const_int(expr.operand)
        if v is None:
            return None
        return {"-": -v, "+": v, "!": int(not v), "~": ~v}[expr.op]
    if isinstance(expr, ir.Binary):
        a, b = const_int(expr.left), const_int(expr.right)
        if a is None or b is None:
            return None
        return _OPS[expr.op](a, b)
    if isinstance(expr, ir.Ternary):
        c = const_int(expr.cond)
        if c is None:
            return None
        return const_int(expr.then if c else expr.other)
    if isinstance(expr, ir.Cast):
        from .types import ScalarType

        if isinstance(expr.target_type, ScalarType) and expr.target_type.is_integer:
            return const_int(expr.operand)
    return None
