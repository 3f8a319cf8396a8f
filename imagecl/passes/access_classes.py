"""Which array elements a kernel reads and which it writes (an `ArrayInfo`'s reads and writes),
recorded as subscripts and assignments are checked, with the rules for what may be assigned."""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir import types as ty
from ..ir.consteval import const_int
from .scopes import AnalyserBase, Scope


class AccessClasses(AnalyserBase):
    def _array_update(self, e: ir.Expr) -> None:
        """An image or pointer element is written through its boundary and grid guards, which
        the generated code can only wrap around a whole statement."""
        target = e.target
        if (isinstance(target, ir.Subscript) and target.base.symbol is not None
                and target.base.symbol.kind in ("image", "pointer") and e is not self.statement_expr):
            raise self.error("an image or pointer element can only be updated in a statement of its own",
                             target.pos, "make the update a statement of its own, then use the value")

    def _require_lvalue(self, target: ir.Expr, scope: Scope, op: str) -> None:
        if isinstance(target, ir.Name):
            sym = target.symbol
            if sym.kind == "grid_index":
                raise self.error(f"cannot assign to the grid index '{target.name}'", target.pos)
            if sym.kind == "tunable":
                raise self.error(f"cannot assign to tunable '{target.name}'; it is a compile-time constant", target.pos)
            if sym.is_const:
                raise self.error(f"cannot assign to const variable '{target.name}'", target.pos)
            if sym.kind == "scalar" and self.is_kernel:
                # every grid point (and every point of a work-item) sees the argument as passed
                raise self.error(f"cannot assign to kernel parameter '{target.name}'", target.pos,
                                 "copy it into a local variable first")
            return
        if isinstance(target, ir.Subscript):
            sym = target.base.symbol
            if sym.kind == "array" and self.is_kernel:
                raise self.error(f"cannot assign to '{sym.name}': array parameters are read-only", target.pos,
                                 "use an Image or a pointer parameter for outputs")
            if sym.is_const:
                raise self.error(f"cannot assign to const '{sym.name}'", target.pos)
            info = self.arrays.get(sym.name) if sym.kind in ("image", "pointer") else None
            if info is not None:
                # move the access from reads to writes: `a[i] = v` does not read a[i]; `a[i] += v` does
                if target in info.reads and op == "=":
                    info.reads.remove(target)
                info.writes.append(target)
            return
        if isinstance(target, ir.Member) and isinstance(target.base.type, ty.VectorType):
            self._require_lvalue(target.base, scope, op)
            if len(set(target.member)) != len(target.member):
                raise self.error(f"cannot assign to swizzle '.{target.member}' with a repeated component", target.pos)
            return
        raise self.error(f"expression is not assignable (left of '{op}')", target.pos)


    def _subscript(self, e: ir.Subscript, scope: Scope) -> ty.Type:
        sym = self._lookup(e.base, scope)
        for index in e.indices:
            t = self._expr(index, scope)
            if not (isinstance(t, ty.ScalarType) and t.is_integer):
                raise self.error(f"array subscript is not an integer (it is '{t}')", index.pos,
                                 "convert it with (int)")
        n = len(e.indices)
        if sym.kind == "image":
            info = self.arrays[sym.name]
            if n not in (2, 3):
                raise self.error(f"image '{sym.name}' needs 2 or 3 subscripts ([x][y] or [x][y][z]), got {n}",
                                 e.pos)
            if info.dims and info.dims != n:
                raise self.error(f"image '{sym.name}' is used with {n} subscripts here and {info.dims} elsewhere",
                                 e.pos, "every access of one image has the same number of subscripts")
            if not info.dims:
                info.dims = n
                if info.in_grid and not self.grid_dims:
                    self.grid_dims = n
            if info.in_grid and self.grid_dims and n != self.grid_dims:
                raise self.error(f"grid image '{sym.name}' has {n} dimensions but the grid has {self.grid_dims}",
                                 e.pos)
            info.reads.append(e)
            return info.element
        if sym.kind in ("array", "private_array"):
            shape = sym.type.shape
            if n != len(shape):
                raise self.error(f"array '{sym.name}' has {len(shape)} dimension{'s' if len(shape) > 1 else ''}, "
                                 f"got {n} subscripts", e.pos)
            for index, size in zip(e.indices, shape):
                value = const_int(index)
                if value is not None and not 0 <= value < size:
                    raise self.error(f"index {value} is out of bounds for '{sym.name}' (size {size})", index.pos)
            if sym.kind == "array":
                self.arrays[sym.name].reads.append(e)
            return sym.type.element
        if sym.kind == "pointer":
            if n != 1:
                raise self.error(f"pointer '{sym.name}' takes one subscript, got {n}", e.pos)
            if sym.name in self.arrays:
                self.arrays[sym.name].reads.append(e)
            return sym.type.element
        raise self.error(f"'{sym.name}' of type '{sym.type}' cannot be subscripted", e.pos)
