"""Types of calls: helper functions (arity, argument types, array arguments, no recursion),
OpenCL built-ins and conversions."""
from __future__ import annotations

from ..errors import suggestion_suffix
from ..ir import builtins as bi
from ..ir import nodes as ir
from ..ir import types as ty
from .program_info import GRID_INDICES
from .scopes import AnalyserBase, Scope


class CallChecks(AnalyserBase):
    def _call(self, e: ir.Call, scope: Scope) -> ty.Type:
        shadowing = scope.lookup(e.name)
        if shadowing is not None or (e.name in GRID_INDICES and self.is_kernel):
            # C: a variable hides a function of the same name in its scope
            what = {"grid_index": "the grid index", "tunable": "a tunable"}.get(
                shadowing.kind if shadowing else "grid_index", "a variable")
            raise self.error(f"called object '{e.name}' is not a function", e.pos,
                             f"'{e.name}' is {what} here, which hides any function of that name")
        arg_types = [self._expr(a, scope) for a in e.args] if e.name not in self.functions else None
        if e.name in self.functions or (self.current is not None and e.name == self.current.name):
            if self.current is not None and e.name == self.current.name:
                raise self.error(f"function '{e.name}' calls itself; recursion is not supported in OpenCL", e.pos)
            return self._helper_call(e, self.functions[e.name], scope)
        later = [f.name for f in self.unit.functions]
        if e.name in later:
            raise self.error(f"function '{e.name}' is called before it is defined", e.pos,
                             "define helper functions above the functions that call them")
        conv = bi.convert_target(e.name)
        if conv is not None:
            self._arity(e, (1,))
            target, _ = conv
            src = arg_types[0]
            self._require_arithmetic(src, e.args[0], e.name)
            if isinstance(target, ty.VectorType) != isinstance(src, ty.VectorType) or (
                isinstance(src, ty.VectorType) and src.width != target.width
            ):
                raise self.error(f"'{e.name}' converts between types of the same width, not from '{src}'", e.pos)
            return target
        builtin = bi.BUILTINS.get(e.name)
        if builtin is None:
            candidates = list(bi.BUILTINS) + list(self.functions)
            raise self.error(f"call to undeclared function '{e.name}'" + suggestion_suffix(e.name, candidates), e.pos)
        self._arity(e, builtin.arity)
        for t, a in zip(arg_types, e.args):
            self._require_arithmetic(t, a, e.name)
        return self._builtin_type(e, builtin, arg_types)

    def _arity(self, e: ir.Call, arity: tuple[int, ...]) -> None:
        if len(e.args) not in arity:
            n = " or ".join(str(a) for a in arity)
            raise self.error(f"function '{e.name}' takes {n} argument{'s' if arity != (1,) else ''}, "
                             f"{len(e.args)} given", e.pos)

    def _builtin_type(self, e: ir.Call, builtin: bi.Builtin, types: list[ty.Type]) -> ty.Type:
        vectors = [t for t in types if isinstance(t, ty.VectorType)]
        if len({v for v in vectors}) > 1:
            raise self.error(f"arguments of '{e.name}' have different vector types", e.pos)
        vec = vectors[0] if vectors else None
        kind = builtin.kind
        if kind == "float":
            return ty.VectorType(ty.FLOAT, vec.width) if vec else (ty.DOUBLE if ty.DOUBLE in types else ty.FLOAT)
        if kind in ("generic", "int"):
            common = types[0]
            for t in types[1:]:
                common = ty.arithmetic_result(common, t)
            if kind == "int" and ty.element_scalar(common).is_float:
                raise self.error(f"'{e.name}' needs integer arguments", e.pos)
            return common
        if kind == "abs":
            t = types[0]
            el = ty.element_scalar(t)
            if el.is_float:
                return t
            unsigned = {"char": ty.UCHAR, "short": ty.USHORT, "int": ty.UINT, "bool": ty.UCHAR}.get(el.name, el)
            return ty.VectorType(unsigned, t.width) if isinstance(t, ty.VectorType) else unsigned
        if kind == "rel":
            return ty.VectorType(ty.INT, vec.width) if vec else ty.INT
        if kind in ("geom", "vecf"):
            if vec is None or vec.base != ty.FLOAT:
                if kind == "geom" and not vec and all(isinstance(t, ty.ScalarType) for t in types):
                    return ty.FLOAT
                raise self.error(f"'{e.name}' needs float vector arguments", e.pos)
            if e.name == "cross" and vec.width not in (3, 4):
                raise self.error("'cross' needs float3 or float4 arguments", e.pos)
            return ty.FLOAT if kind == "geom" else vec
        if kind == "select":
            result = ty.arithmetic_result(types[0], types[1])
            if result is None or ty.element_scalar(types[2]).is_float:
                raise self.error("select(a, b, c) needs a, b of one type and an integer c", e.pos)
            return result
        raise self.error(f"unsupported built-in '{e.name}'", e.pos)  # pragma: no cover

    def _helper_call(self, e: ir.Call, f: ir.Function, scope: Scope) -> ty.Type:
        e.function = f
        if len(e.args) != len(f.params):
            raise self.error(f"function '{f.name}' takes {len(f.params)} argument"
                             f"{'s' if len(f.params) != 1 else ''}, {len(e.args)} given", e.pos)
        for arg, p in zip(e.args, f.params):
            if isinstance(p.type, ty.ArrayType):
                if not isinstance(arg, ir.Name):
                    raise self.error(f"argument '{p.name}' of '{f.name}' must be an array variable", arg.pos)
                sym = self._lookup(arg, scope)
                if sym.kind not in ("private_array", "array") or sym.type != p.type:
                    raise self.error(f"argument '{p.name}' of '{f.name}' must be an array of type "
                                     f"'{p.type}', not '{sym.type}'", arg.pos)
                if sym.kind == "array":
                    raise self.error(f"array parameter '{sym.name}' cannot be passed to a helper function",
                                     arg.pos, "copy it into a private array first")
                arg.type = sym.type
                continue
            t = self._expr(arg, scope)
            if not ty.is_assignable(p.type, t):
                raise self.error(f"argument '{p.name}' of '{f.name}' has type '{p.type}', "
                                 f"cannot pass '{t}'", arg.pos)
        return f.return_type
