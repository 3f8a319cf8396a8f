"""Types of expressions: C's conversions and promotions, operators, names and their lookup,
vector components."""
from __future__ import annotations

from typing import Optional

from ..errors import suggestion_suffix
from ..ir import nodes as ir
from ..ir import types as ty
from .program_info import GRID_INDICES
from .scopes import AnalyserBase, Scope

# the method that types each kind of expression (calls, subscripts and members: calls.py, access_classes.py)
_RULES = {ir.Name: "_name_value", ir.Unary: "_unary", ir.IncDec: "_inc_dec", ir.Assign: "_assign",
          ir.Ternary: "_ternary", ir.Cast: "_cast", ir.VectorLit: "_vector_literal", ir.Call: "_call",
          ir.Subscript: "_subscript", ir.Member: "_member", ir.Comma: "_comma"}


class ExpressionChecks(AnalyserBase):
    def _expr(self, e: ir.Expr, scope: Scope) -> ty.Type:
        t = self._type_of(e, scope)
        e.type = t
        return t

    def _type_of(self, e: ir.Expr, scope: Scope) -> ty.Type:
        if isinstance(e, ir.IntLit):
            return ty.UINT if e.unsigned else ty.INT
        if isinstance(e, ir.FloatLit):
            return ty.FLOAT
        if isinstance(e, ir.BoolLit):
            return ty.BOOL
        if isinstance(e, ir.Binary):
            return self._binary(e.op, e.left, e.right, e.pos, scope)
        rule = _RULES.get(type(e))
        if rule is None:  # pragma: no cover - the parser makes no other expressions
            raise self.error(f"unsupported expression {type(e).__name__}", e.pos)
        return getattr(self, rule)(e, scope)

    def _name_value(self, e: ir.Name, scope: Scope) -> ty.Type:
        sym = self._lookup(e, scope)
        if sym.kind in ("image", "array", "pointer", "private_array"):
            what = "image" if sym.kind == "image" else "array"
            hint = f"write {e.name}[idx][idy]" if sym.kind == "image" else None
            raise self.error(f"{what} '{e.name}' must be subscripted to be used as a value", e.pos, hint)
        return sym.type

    def _unary(self, e: ir.Unary, scope: Scope) -> ty.Type:
        t = self._expr(e.operand, scope)
        self._require_arithmetic(t, e.operand, e.op)
        if e.op == "!":
            if not isinstance(t, ty.ScalarType):
                raise self.error(f"invalid operand to '!' (have '{t}')", e.pos)
            return ty.INT
        if e.op == "~" and ty.element_scalar(t).is_float:
            raise self.error(f"invalid operand to '~' (have '{t}')", e.pos, "'~' needs an integer")
        return ty.promote(t) if isinstance(t, ty.ScalarType) else t

    def _inc_dec(self, e: ir.IncDec, scope: Scope) -> ty.Type:
        t = self._expr(e.target, scope)
        self._array_update(e)
        self._require_lvalue(e.target, scope, e.op)
        self._require_arithmetic(t, e.target, e.op)
        return t

    def _assign(self, e: ir.Assign, scope: Scope) -> ty.Type:
        target_t = self._expr(e.target, scope)
        self._array_update(e)
        self._require_lvalue(e.target, scope, e.op)
        if e.op == "=":
            value_t = self._expr(e.value, scope)
        else:
            value_t = self._binary(e.op[:-1], e.target, e.value, e.pos, scope, compound=True)
        if not ty.is_assignable(target_t, value_t):
            raise self.error(f"cannot assign a value of type '{value_t}' to '{target_t}'", e.pos,
                             vector_hint(target_t, value_t))
        return target_t

    def _ternary(self, e: ir.Ternary, scope: Scope) -> ty.Type:
        self._condition(e.cond, scope)
        a = self._expr(e.then, scope)
        b = self._expr(e.other, scope)
        self._require_arithmetic(a, e.then, "?:")
        self._require_arithmetic(b, e.other, "?:")
        result = ty.arithmetic_result(a, b)
        if result is None:
            raise self.error(f"incompatible operand types in '?:' ('{a}' and '{b}')", e.pos)
        return result

    def _cast(self, e: ir.Cast, scope: Scope) -> ty.Type:
        t = self._expr(e.operand, scope)
        self._require_arithmetic(t, e.operand, "cast")
        target = e.target_type
        if target == ty.VOID:
            raise self.error("cannot cast to void", e.pos)
        if isinstance(target, ty.VectorType) and isinstance(t, ty.VectorType):
            raise self.error(f"cannot cast '{t}' to '{target}'", e.pos,
                             f"OpenCL converts vectors with convert_{target}(...)")
        if isinstance(target, ty.ScalarType) and isinstance(t, ty.VectorType):
            raise self.error(f"cannot cast vector '{t}' to scalar '{target}'", e.pos,
                             "take a component, e.g. v.x")
        return target

    def _vector_literal(self, e: ir.VectorLit, scope: Scope) -> ty.Type:
        total = 0
        for el in e.elements:
            t = self._expr(el, scope)
            self._require_arithmetic(t, el, "vector literal")
            total += t.width if isinstance(t, ty.VectorType) else 1
        width = e.vector_type.width
        if total != width and total != 1:
            raise self.error(f"vector literal of type '{e.vector_type}' needs {width} components, "
                             f"got {total}", e.pos)
        return e.vector_type

    def _comma(self, e: ir.Comma, scope: Scope) -> ty.Type:
        t: ty.Type = ty.VOID
        for sub in e.exprs:
            t = self._expr(sub, scope)
        return t

    def _lookup(self, e: ir.Name, scope: Scope) -> ir.Symbol:
        sym = scope.lookup(e.name)
        if sym is None:
            if e.name in GRID_INDICES:
                if not self.is_kernel:
                    raise self.error(f"'{e.name}' is only defined in the kernel function", e.pos,
                                     "pass it to the helper function as an argument")
            hint_names = scope.visible_names()
            raise self.error(f"use of undeclared identifier '{e.name}'" + suggestion_suffix(e.name, hint_names), e.pos)
        if sym.kind == "grid_index" and e.name == "idz":
            self.uses_idz = True
            self.idz_pos = self.idz_pos or e.pos
        if sym.kind == "grid_index" and GRID_INDICES.index(e.name) >= self._grid_dims_known():
            raise self.error(f"'{e.name}' is only defined for 3-D grids; this grid is "
                             f"{self._grid_dims_known()}-D", e.pos)
        e.symbol = sym
        return sym

    def _grid_dims_known(self) -> int:
        if self.grid_dims:
            return self.grid_dims
        # a `grid` pragma: the dimensionality follows from the grid images' use; before the
        # first subscript of one of them, allow idz only if some grid image is 3-D already
        dims = [a.dims for a in self.arrays.values() if a.in_grid and a.dims]
        return dims[0] if dims else 3

    def _require_arithmetic(self, t: ty.Type, e: ir.Expr, op: str) -> None:
        if not ty.is_arithmetic(t):
            raise self.error(f"invalid operand of type '{t}' to '{op}'", e.pos)


    def _binary(self, op: str, left: ir.Expr, right: ir.Expr, pos: ir.Pos, scope: Scope,
                compound: bool = False) -> ty.Type:
        a = left.type if compound else self._expr(left, scope)
        b = self._expr(right, scope)
        for t, side in ((a, left), (b, right)):
            if not ty.is_arithmetic(t):
                raise self.error(f"invalid operand of type '{t}' to binary '{op}'", side.pos)
        if op in ("&&", "||"):
            if isinstance(a, ty.VectorType) or isinstance(b, ty.VectorType):
                raise self.error(f"invalid vector operands to '{op}'", pos)
            return ty.INT
        result = ty.arithmetic_result(a, b)
        if result is None:
            raise self.error(f"invalid operands to binary '{op}' (have '{a}' and '{b}')", pos,
                             "vector operands must have the same type")
        if op in ("%", "&", "|", "^", "<<", ">>") and ty.element_scalar(result).is_float:
            hint = "use fmod(x, y) for floating-point remainder" if op == "%" else f"'{op}' needs integer operands"
            raise self.error(f"invalid operands to binary '{op}' (have '{a}' and '{b}')", pos, hint)
        if op in ("<<", ">>"):
            return ty.promote(a) if isinstance(a, ty.ScalarType) else a
        if op in ("<", ">", "<=", ">=", "==", "!="):
            if isinstance(result, ty.VectorType):
                return ty.VectorType(ty.INT, result.width)
            return ty.INT
        return result


    def _member(self, e: ir.Member, scope: Scope) -> ty.Type:
        if isinstance(e.base, ir.Name):
            sym = scope.lookup(e.base.name)
            if sym is not None and sym.kind == "image":
                e.base.symbol = sym
                e.base.type = sym.type
                info = self.arrays[sym.name]
                if e.member not in ("width", "height", "depth"):
                    raise self.error(f"image '{sym.name}' has no member '{e.member}'"
                                     + suggestion_suffix(e.member, ("width", "height", "depth")), e.pos)
                if e.member == "depth" and info.dims == 2:
                    raise self.error(f"'{sym.name}.depth' is only defined for 3-D images", e.pos)
                if e.member == "depth":
                    self.depth_uses.setdefault(sym.name, e.pos)
                return ty.INT
        t = self._expr(e.base, scope)
        if e.member in ("width", "height", "depth"):
            raise self.error(f"'.{e.member}' is only defined for images, not '{t}'", e.pos)
        if not isinstance(t, ty.VectorType):
            raise self.error(f"member reference '.{e.member}' on a value of type '{t}', which is not a vector",
                             e.pos)
        comps = ty.COMPONENTS[: t.width]
        if not e.member or any(c not in comps for c in e.member) or len(e.member) > 4:
            raise self.error(f"invalid component '.{e.member}' of '{t}'", e.pos,
                             f"'{t}' has components " + ", ".join("." + c for c in comps))
        if len(e.member) == 1:
            return t.base
        if len(e.member) not in ty.VECTOR_WIDTHS:
            raise self.error(f"swizzle '.{e.member}' must have 1 to 4 components", e.pos)
        return ty.VectorType(t.base, len(e.member))



def vector_hint(target: ty.Type, value: ty.Type) -> Optional[str]:
    if isinstance(target, ty.ScalarType) and isinstance(value, ty.VectorType):
        return "take a component, e.g. v.x"
    if isinstance(target, ty.VectorType) and isinstance(value, ty.VectorType):
        return f"convert with convert_{target}(...)"
    return None
