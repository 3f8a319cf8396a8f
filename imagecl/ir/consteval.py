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


def _wrap(value: int, t) -> int:
    """`value` converted to integer type `t` as C does (modulo 2^bits, then signed)."""
    from .types import ScalarType

    if not isinstance(t, ScalarType) or not t.is_integer:
        return value
    if t.name == "bool":
        return int(bool(value))
    bits = t.bits
    value &= (1 << bits) - 1
    if t.is_signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def const_int(expr: Optional[ir.Expr]) -> Optional[int]:
    """The value of an integer constant expression (with C's conversions), or None."""
    value = _const_int(expr)
    if value is None or expr is None:
        return value
    return _wrap(value, expr.type)


def _const_int(expr: Optional[ir.Expr]) -> Optional[int]:
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
        from .types import ScalarType, arithmetic_result, promote

        lt, rt = expr.left.type, expr.right.type
        if isinstance(lt, ScalarType) and isinstance(rt, ScalarType):
            if expr.op in ("<<", ">>"):
                a = _wrap(a, promote(lt))
            elif expr.op not in ("&&", "||"):
                # the usual arithmetic conversions: -1 < 0u compares 4294967295 with 0
                common = arithmetic_result(lt, rt)
                a, b = _wrap(a, common), _wrap(b, common)
        return _OPS[expr.op](a, b)
    if isinstance(expr, ir.Ternary):
        c = const_int(expr.cond)
        if c is None:
            return None
        return const_int(expr.then if c else expr.other)
    if isinstance(expr, ir.Cast):
        from .types import ScalarType

        if isinstance(expr.target_type, ScalarType) and expr.target_type.is_integer:
            operand = expr.operand
            if isinstance(operand, ir.FloatLit):
                value = int(operand.value)  # truncation toward zero
                if expr.target_type.name != "bool" and not -(1 << 63) < value < 1 << 63:
                    return None
                return _wrap(value, expr.target_type)
            inner = const_int(operand)
            return None if inner is None else _wrap(inner, expr.target_type)
    return None


def type_literals(expr: Optional[ir.Expr]) -> None:
    """Give an expression that has not been through semantic analysis the C types of its
    literal parts, so that `const_int` applies C's conversions: the parser folds array sizes
    such as `m[(1 ? 165 : 2147483648u) + 4294967135u]` (unsigned, so 4) before any typing.
    Nodes that already have a type, and names (which have none yet), are left alone."""
    from . import types as ty

    if expr is None or expr.type is not None:
        return
    if isinstance(expr, ir.IntLit):
        expr.type = ty.UINT if expr.unsigned else ty.INT
    elif isinstance(expr, ir.BoolLit):
        expr.type = ty.BOOL
    elif isinstance(expr, ir.FloatLit):
        expr.type = ty.FLOAT
    elif isinstance(expr, ir.Unary):
        type_literals(expr.operand)
        t = expr.operand.type
        if isinstance(t, ty.ScalarType):
            expr.type = ty.INT if expr.op == "!" else ty.promote(t)
    elif isinstance(expr, ir.Binary):
        type_literals(expr.left)
        type_literals(expr.right)
        a, b = expr.left.type, expr.right.type
        if isinstance(a, ty.ScalarType) and isinstance(b, ty.ScalarType):
            if expr.op in ("<", ">", "<=", ">=", "==", "!=", "&&", "||"):
                expr.type = ty.INT
            elif expr.op in ("<<", ">>"):
                expr.type = ty.promote(a)
            else:
                expr.type = ty.arithmetic_result(a, b)
    elif isinstance(expr, ir.Ternary):
        for part in (expr.cond, expr.then, expr.other):
            type_literals(part)
        a, b = expr.then.type, expr.other.type
        if isinstance(a, ty.ScalarType) and isinstance(b, ty.ScalarType):
            expr.type = ty.arithmetic_result(a, b)
    elif isinstance(expr, ir.Cast):
        type_literals(expr.operand)
        expr.type = expr.target_type
