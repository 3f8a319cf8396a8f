"""Typed IR -> OpenCL C text for statements and expressions.

The emitter prints C with the fewest parentheses that keep the IR's meaning, converts
arguments where OpenCL C would reject what C accepts (see ir/builtins.py), and delegates every
image and array access to an `AccessPlan`, so that variants (local memory, image memory,
coarsening) change how memory is reached without touching the rest of the printer.
"""
from __future__ import annotations

from typing import Optional

from .. import escape
from ..errors import CompileError
from ..ir import builtins as bi
from ..ir import nodes as ir
from ..ir import types as ty
from ..passes.memory import at_grid_point
from ..passes.semantic import ArrayInfo, ProgramInfo

# C precedence, higher binds tighter
_PREC = {
    ",": 1, "=": 2, "?:": 3, "||": 4, "&&": 5, "|": 6, "^": 7, "&": 8,
    "==": 9, "!=": 9, "<": 10, ">": 10, "<=": 10, ">=": 10, "<<": 11, ">>": 11,
    "+": 12, "-": 12, "*": 13, "/": 13, "%": 13,
}
_UNARY = 14
_POSTFIX = 15
_PRIMARY = 16


def names(array: ArrayInfo) -> dict[str, str]:
    """The generated names that travel with an array parameter (extents, length)."""
    n = array.name
    return {"w": f"imcl_{n}_w", "h": f"imcl_{n}_h", "d": f"imcl_{n}_d", "len": f"imcl_{n}_len"}


class AccessPlan:
    """How the naive variant reaches memory: global buffers, boundary handling in functions."""

    def __init__(self, info: ProgramInfo) -> None:
        self.info = info

    def c(self, name: str) -> str:
        """The identifier of a user name in the generated code."""
        return self.info.c_name(name)

    def extent(self, array: ArrayInfo, axis: int) -> str:
        return names(array)["whd"[axis]]

    def linear(self, array: ArrayInfo, coords: list[str]) -> str:
        w, h = self.extent(array, 0), self.extent(array, 1)
        x, y = coords[0], coords[1]
        if len(coords) == 3:
            return f"(({coords[2]}) * {h} + ({y})) * {w} + ({x})"
        return f"({y}) * {w} + ({x})"

    def at_grid_point(self, array: ArrayInfo, node: ir.Subscript) -> bool:
        """A grid image accessed exactly at the current grid point needs no boundary handling."""
        return at_grid_point(array, node)

    def image_read(self, array: ArrayInfo, coords: list[str], node: ir.Subscript) -> str:
        if self.at_grid_point(array, node):
            return f"{self.c(array.name)}[{self.linear(array, coords)}]"
        extents = ", ".join(self.extent(array, a) for a in range(array.dims))
        return f"imcl_read_{array.name}({self.c(array.name)}, {extents}, {', '.join(coords)})"

    def image_write(self, array: ArrayInfo, coords: list[str], node: ir.Subscript) -> tuple[str, Optional[str]]:
        """The lvalue text of a pixel write and the guard condition it needs (None: none)."""
        target = f"{self.c(array.name)}[{self.linear(array, coords)}]"
        if self.at_grid_point(array, node):
            return target, None
        conds = [f"({c}) >= 0 && ({c}) < {self.extent(array, a)}" for a, c in enumerate(coords)]
        return target, " && ".join(conds)

    @staticmethod
    def flat_index(array: ArrayInfo, coords: list[str]) -> str:
        """Row-major index into a fixed-size array's flat storage."""
        flat = coords[0]
        for size, c in zip((array.shape or ())[1:], coords[1:]):
            flat = f"({flat}) * {size} + ({c})"
        return flat

    def array_read(self, array: ArrayInfo, coords: list[str], node: Optional[ir.Subscript] = None) -> str:
        return f"{self.c(array.name)}[{self.flat_index(array, coords)}]"

    def pointer_read(self, array: ArrayInfo, index: str) -> str:
        zero = _zero(array.element)
        return f"(((uint)({index}) < (uint){names(array)['len']}) ? {self.c(array.name)}[{index}] : {zero})"

    def pointer_write(self, array: ArrayInfo, index: str) -> tuple[str, Optional[str]]:
        return f"{self.c(array.name)}[{index}]", f"(uint)({index}) < (uint){names(array)['len']}"


def _zero(t: ty.Type) -> str:
    return f"({t.c_name()})(0)"


class Emitter:
    def __init__(self, info: ProgramInfo, plan: AccessPlan, indent: str = "    ") -> None:
        self.info = info
        self.plan = plan
        self.unit_indent = indent
        # (id of a statement, depth) -> (the statement, its lines, never changed once made):
        # unrolled copies share their statements, and a statement's text depends on nothing else.
        # Holding the statement keeps its id its own.
        self._printed: dict[tuple[int, int], tuple[ir.Stmt, list[str]]] = {}

    def c(self, name: str) -> str:
        """The identifier of a user name in the generated code."""
        return self.info.c_name(name)

    def error(self, message: str, pos: ir.Pos) -> CompileError:
        unit = self.info.unit
        return CompileError(message, pos.line, pos.column, unit.filename, unit.source)

    # ---- statements ---------------------------------------------------------------------
    def block_lines(self, block: ir.Block, depth: int) -> list[str]:
        lines: list[str] = []
        for stmt in block.body:
            lines.extend(self.stmt(stmt, depth))
        return lines

    def stmt(self, s: ir.Stmt, depth: int) -> list[str]:
        key = (id(s), depth)
        printed = self._printed.get(key)
        if printed is None:
            printed = self._printed[key] = (s, self._stmt(s, depth))
        return printed[1]

    def _stmt(self, s: ir.Stmt, depth: int) -> list[str]:
        pad = self.unit_indent * depth
        if isinstance(s, ir.Block):
            return [pad + "{"] + self.block_lines(s, depth + 1) + [pad + "}"]
        if isinstance(s, ir.VarDecl):
            return [pad + self.decl(s) + ";"]
        if isinstance(s, ir.DeclGroup):
            return [pad + self.decl(d) + ";" for d in s.decls]
        if isinstance(s, ir.ExprStmt):
            return self.expr_stmt(s.expr, depth)
        if isinstance(s, ir.If):
            lines = [pad + f"if ({self.expr(s.cond)})"] + self.body(s.then, depth)
            other = s.other
            while isinstance(other, ir.If):
                lines += [pad + f"else if ({self.expr(other.cond)})"] + self.body(other.then, depth)
                other = other.other
            if other is not None:
                lines += [pad + "else"] + self.body(other, depth)
            return lines
        if isinstance(s, ir.While):
            return [pad + f"while ({self.expr(s.cond)})"] + self.body(s.body, depth)
        if isinstance(s, ir.DoWhile):
            lines = [pad + "do"] + self.body(s.body, depth)
            return lines + [pad + f"while ({self.expr(s.cond)});"]
        if isinstance(s, ir.For):
            return [pad + self.for_head(s)] + self.body(s.body, depth)
        if isinstance(s, ir.Break):
            return [pad + "break;"]
        if isinstance(s, ir.Continue):
            return [pad + "continue;"]
        if isinstance(s, ir.Return):
            return [pad + self.return_text(s)]
        if isinstance(s, ir.Empty):
            return [pad + ";"]
        if isinstance(s, ir.Sequence):
            return [line for stmt in s.body for line in self.stmt(stmt, depth)]
        if isinstance(s, ir.Comment):
            return [pad + "// " + escape.comment(s.text)]
        if isinstance(s, ir.ExitUnless):
            return [pad + f"if (!({self.expr(s.cond)}))", pad + self.unit_indent + "break;"]
        raise self.error(f"cannot generate code for {type(s).__name__}", s.pos)  # pragma: no cover

    def for_head(self, s: ir.For) -> str:
        init = ""
        if isinstance(s.init, ir.VarDecl):
            init = self.decl(s.init)
        elif isinstance(s.init, ir.DeclGroup):
            init = self.decl_group_inline(s.init)
        elif isinstance(s.init, ir.ExprStmt):
            init = self.expr(s.init.expr)
        cond = self.expr(s.cond) if s.cond is not None else ""
        step = self.expr(s.step) if s.step is not None else ""
        return f"for ({init}; {cond}; {step})"

    def return_text(self, s: ir.Return) -> str:
        return "return;" if s.value is None else f"return {self.expr(s.value)};"

    def body(self, s: ir.Stmt, depth: int) -> list[str]:
        if isinstance(s, ir.Block):
            return self.stmt(s, depth)
        return [self.unit_indent * depth + "{"] + self.stmt(s, depth + 1) + [self.unit_indent * depth + "}"]

    def decl(self, d: ir.VarDecl) -> str:
        const = "const " if d.is_const else ""
        t = d.var_type
        if isinstance(t, ty.ArrayType):
            text = f"{const}{t.element.c_name()} {self.c(d.name)}" + "".join(f"[{n}]" for n in t.shape)
            if d.init is not None:
                text += " = " + self.init_list(d.init)
            return text
        text = f"{const}{t.c_name()} {self.c(d.name)}"
        if d.init is not None:
            text += " = " + self.assigned(d.init, t)
        return text

    def decl_group_inline(self, g: ir.DeclGroup) -> str:
        first = self.decl(g.decls[0])
        rest = [self.decl(d).split(" ", 1 + int(d.is_const))[-1] for d in g.decls[1:]]
        return ", ".join([first] + rest)

    def init_list(self, items) -> str:
        if isinstance(items, list):
            return "{" + ", ".join(self.init_list(i) for i in items) + "}"
        return self.expr(items, 2)

    def expr_stmt(self, e: ir.Expr, depth: int) -> list[str]:
        pad = self.unit_indent * depth
        target = e.target if isinstance(e, (ir.Assign, ir.IncDec)) else None
        if isinstance(target, ir.Subscript) and target.base.symbol.kind in ("image", "pointer"):
            array = self.info.arrays[target.base.name]
            lvalue, guard = self.write_target(array, target)
            if isinstance(e, ir.Assign):
                text = f"{lvalue} {e.op} {self.assigned(e.value, target.type)};"
            else:
                text = f"{e.op}{lvalue};"
            if guard is None:
                return [pad + text]
            return [pad + f"if ({guard})", pad + "{", pad + self.unit_indent + text, pad + "}"]
        return [pad + self.expr(e) + ";"]

    def write_target(self, array: ArrayInfo, node: ir.Subscript) -> tuple[str, Optional[str]]:
        coords = [self.expr(i, 2) for i in node.indices]
        if array.kind == "image":
            return self.plan.image_write(array, coords, node)
        return self.plan.pointer_write(array, coords[0])

    # ---- expressions --------------------------------------------------------------------
    def expr(self, e: ir.Expr, min_prec: int = 0) -> str:
        text, prec = self._expr(e)
        return f"({text})" if prec < min_prec else text

    def _expr(self, e: ir.Expr) -> tuple[str, int]:
        if isinstance(e, ir.IntLit):
            if e.value == -2147483648:
                return "(-2147483647 - 1)", _PRIMARY
            text = (hex(e.value) if e.value > 0x7FFFFFFF else str(e.value)) + ("u" if e.unsigned else "")
            return text, (_UNARY if e.value < 0 else _PRIMARY)
        if isinstance(e, ir.FloatLit):
            return _float_text(e.value), (_UNARY if e.value < 0 else _PRIMARY)
        if isinstance(e, ir.BoolLit):
            return ("true" if e.value else "false"), _PRIMARY
        if isinstance(e, ir.Name):
            return self.c(e.name), _PRIMARY
        if isinstance(e, ir.Unary):
            operand = self.expr(e.operand, _UNARY)
            # keep '- -x' from becoming the '--' operator
            sep = " " if operand[:1] in "+-" and e.op in "+-" else ""
            return f"{e.op}{sep}{operand}", _UNARY
        if isinstance(e, ir.IncDec):
            target = self.lvalue(e.target)
            return (f"{e.op}{target}", _UNARY) if e.prefix else (f"{target}{e.op}", _POSTFIX)
        if isinstance(e, ir.Binary):
            prec = _PREC[e.op]
            common = ty.arithmetic_result(e.left.type, e.right.type)
            if isinstance(common, ty.VectorType) and e.op not in ("<<", ">>", "&&", "||"):
                # OpenCL C only widens a scalar operand of lower rank; convert it explicitly
                left = self.convert(e.left, common, prec)
                right = self.convert(e.right, common, prec + 1)
            else:
                left = self.expr(e.left, prec)
                right = self.expr(e.right, prec + 1)
            return f"{left} {e.op} {right}", prec
        if isinstance(e, ir.Assign):
            if isinstance(e.target, ir.Subscript) and e.target.base.symbol.kind in ("image", "pointer"):
                raise self.error(
                    "an assignment to an image or pointer element must be a statement of its own", e.pos
                )
            return f"{self.lvalue(e.target)} {e.op} {self.assigned(e.value, e.target.type)}", 2
        if isinstance(e, ir.Ternary):
            cond = self.expr(e.cond, 4)
            if isinstance(e.cond.type, ty.ScalarType) and e.cond.type.is_float:
                cond = f"({self.expr(e.cond, 9)} != 0)"  # OpenCL C wants an integer condition for ?:
            a = self.convert(e.then, e.type, 3)
            b = self.convert(e.other, e.type, 3)
            return f"{cond} ? {a} : {b}", 3
        if isinstance(e, ir.Cast):
            return f"({e.target_type.c_name()}){self.expr(e.operand, _UNARY)}", _UNARY
        if isinstance(e, ir.VectorLit):
            elements = ", ".join(self.expr(el, 2) for el in e.elements)
            return f"({e.vector_type.c_name()})({elements})", _PRIMARY
        if isinstance(e, ir.Call):
            return self.call(e), _POSTFIX
        if isinstance(e, ir.Subscript):
            return self.subscript_read(e), _POSTFIX
        if isinstance(e, ir.Member):
            base = e.base
            if isinstance(base, ir.Name) and base.symbol is not None and base.symbol.kind == "image":
                array = self.info.arrays[base.name]
                axis = ("width", "height", "depth").index(e.member)
                return self.plan.extent(array, axis), _PRIMARY
            return f"{self.expr(base, _POSTFIX)}.{e.member}", _POSTFIX
        if isinstance(e, ir.Comma):
            return ", ".join(self.expr(x, 2) for x in e.exprs), 1
        raise self.error(f"cannot generate code for {type(e).__name__}", e.pos)  # pragma: no cover

    def lvalue(self, e: ir.Expr) -> str:
        if isinstance(e, ir.Subscript) and e.base.symbol.kind in ("image", "pointer"):
            raise self.error("an image or pointer element can only be updated in a statement of its own", e.pos)
        return self.expr(e, _POSTFIX)

    def subscript_read(self, e: ir.Subscript) -> str:
        sym = e.base.symbol
        coords = [self.expr(i, 2) for i in e.indices]
        if sym.kind == "image":
            return self.plan.image_read(self.info.arrays[sym.name], coords, e)
        if sym.kind == "array" and sym.name in self.info.arrays and self.info.arrays[sym.name].param.symbol is sym:
            return self.plan.array_read(self.info.arrays[sym.name], coords, e)
        if sym.kind == "pointer":
            return self.plan.pointer_read(self.info.arrays[sym.name], coords[0])
        return self.c(e.base.name) + "".join(f"[{c}]" for c in coords)

    def assigned(self, e: ir.Expr, target: Optional[ty.Type]) -> str:
        """The value of an assignment: C converts implicitly, except scalars into vectors."""
        if isinstance(target, ty.VectorType) and isinstance(e.type, ty.ScalarType):
            return self.convert(e, target, 2)
        return self.expr(e, 2)

    def convert(self, e: ir.Expr, target: Optional[ty.Type], min_prec: int) -> str:
        """`e` as a value of `target` where OpenCL C would not convert implicitly the way C does."""
        if target is None or e.type == target:
            return self.expr(e, min_prec)
        if isinstance(target, ty.VectorType) and isinstance(e.type, ty.ScalarType):
            if e.type != target.base:
                return f"({target.base.c_name()}){self.expr(e, _UNARY)}"
            return self.expr(e, min_prec)
        if isinstance(target, ty.ScalarType) and isinstance(e.type, ty.ScalarType):
            return f"({target.c_name()}){self.expr(e, _UNARY)}"
        return self.expr(e, min_prec)

    def call(self, e: ir.Call) -> str:
        narrow = narrow_order_type(e)
        if narrow is not None:
            args = ", ".join(self.convert(a, narrow, 2) for a in e.args)
            return f"(({e.type.c_name()}){e.name}({args}))"
        if e.function is not None:
            args = []
            for a, p in zip(e.args, e.function.params):
                args.append(self.expr(a, 2) if isinstance(p.type, ty.ArrayType) else self.convert(a, p.type, 2))
            return f"{self.c(e.name)}({', '.join(args)})"
        if bi.convert_target(e.name) is not None:
            return f"{e.name}({self.expr(e.args[0], 2)})"
        builtin = bi.BUILTINS[e.name]
        name = e.name
        kind = builtin.kind
        if kind == "abs" and ty.element_scalar(e.type).is_float:
            name = "fabs"  # OpenCL's abs() is integer-only; C programmers mean fabs on floats
        if kind == "abs":
            return f"{name}({self.expr(e.args[0], 2)})"
        if kind in ("float", "generic", "int", "rel", "geom", "vecf"):
            element = e.type if kind in ("float", "generic", "int", "vecf") else None
            if kind == "float" and element is not None:
                element = e.type
            args = []
            for a in e.args:
                want = element
                if kind in ("rel", "geom"):
                    want = ty.FLOAT if isinstance(a.type, ty.ScalarType) and a.type.is_integer else None
                if isinstance(want, ty.VectorType) and isinstance(a.type, ty.ScalarType):
                    want = want.base
                args.append(self.convert(a, want, 2))
            return f"{name}({', '.join(args)})"
        if kind == "select":
            a = self.convert(e.args[0], e.type, 2)
            b = self.convert(e.args[1], e.type, 2)
            return f"select({a}, {b}, {self.expr(e.args[2], 2)})"
        return f"{name}({', '.join(self.expr(a, 2) for a in e.args)})"  # pragma: no cover


def narrow_order_type(e: ir.Call) -> Optional[ty.ScalarType]:
    """For min(a, b) or max(a, b) whose arguments share one integer type narrower than int (the
    call's type is that type promoted, as C promotes it): that type, in which the call is emitted
    and its result widened. Widening keeps the order, so the value is the same, and the call
    needs a quarter (chars) or half (shorts) of the registers of an int's (a median's selection
    network of uchars on a CPU spilled its 512-bit int registers to the stack); else None."""
    if e.function is not None or e.name not in ("min", "max"):
        return None
    types = {a.type for a in e.args}
    if len(types) != 1:
        return None
    t = types.pop()
    if not isinstance(t, ty.ScalarType) or not t.is_integer or t.name == "bool" or t.rank >= ty.INT.rank:
        return None
    return t if e.type == ty.promote(t) else None


def _float_text(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return {"nan": "NAN", "inf": "INFINITY", "-inf": "(-INFINITY)"}[repr(value)]
    text = repr(float(value))
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"
