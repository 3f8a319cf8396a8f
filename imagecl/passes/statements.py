"""Semantic checks of functions and statements: parameters, declarations and initialisers,
control flow (break, continue, return), and conditions."""
from __future__ import annotations

from typing import Optional

from ..ir import nodes as ir
from ..ir import types as ty
from ..ir.consteval import const_int
from ..ir.walk import walk
from .program_info import GRID_INDICES
from .scopes import AnalyserBase, Scope, check_identifier
from .expressions import vector_hint


class StatementChecks(AnalyserBase):
    def _check_function(self, function: ir.Function, is_kernel: bool) -> None:
        self.current = function
        self.is_kernel = is_kernel
        scope = Scope(self.global_scope)
        if is_kernel:
            for i, name in enumerate(GRID_INDICES):
                scope.symbols[name] = ir.Symbol(name, ty.INT, "grid_index", is_const=True)
        seen = set()
        for p in function.params:
            if p.name in seen:
                raise self.error(f"redefinition of parameter '{p.name}'", p.pos)
            seen.add(p.name)
            if p.name in self.global_scope.symbols:
                raise self.error(f"parameter '{p.name}' has the name of a tunable", p.pos)
            if p.name in GRID_INDICES and is_kernel:
                raise self.error(f"parameter '{p.name}' hides the grid index '{p.name}'", p.pos)
            if not is_kernel and isinstance(p.type, (ty.ImageType, ty.PointerType)):
                raise self.error(
                    f"helper function '{function.name}' cannot take image or pointer parameter '{p.name}'",
                    p.pos, "read the pixels in the kernel and pass their values",
                )
            if p.type == ty.VOID:
                raise self.error(f"parameter '{p.name}' has type void", p.pos)
            check_identifier(self, p.name, p.pos)
            kind = {
                ty.ImageType: "image", ty.ArrayType: "array", ty.PointerType: "pointer",
            }.get(type(p.type), "scalar")
            if kind == "array" and not is_kernel:
                kind = "private_array"  # a helper's array parameter refers to the caller's private array
            const = p.is_const or (kind == "array" and is_kernel)
            p.symbol = ir.Symbol(p.name, p.type, kind, p.pos, is_const=const)
            scope.symbols[p.name] = p.symbol
        self.loop_depth = 0
        # C: the parameters and the body's outermost declarations share one scope
        self._block(function.body, scope, new_scope=False)
        if function.return_type != ty.VOID and not always_returns(function.body):
            raise self.error(
                f"control reaches the end of non-void function '{function.name}' without a return",
                ir.Pos(function.body.pos.end_line or function.pos.line, max(function.body.pos.end_column - 1, 1)),
            )

    # ---- statements -----------------------------------------------------------------------
    def _block(self, block: ir.Block, scope: Scope, new_scope: bool = True) -> None:
        inner = Scope(scope) if new_scope else scope
        for stmt in block.body:
            self._stmt(stmt, inner)

    def _stmt(self, stmt: ir.Stmt, scope: Scope) -> None:
        if isinstance(stmt, ir.Block):
            self._block(stmt, scope)
        elif isinstance(stmt, ir.VarDecl):
            self._decl(stmt, scope)
        elif isinstance(stmt, ir.DeclGroup):
            for d in stmt.decls:
                self._decl(d, scope)
        elif isinstance(stmt, ir.ExprStmt):
            self.statement_expr = stmt.expr
            self._expr(stmt.expr, scope)
        elif isinstance(stmt, ir.If):
            self._condition(stmt.cond, scope)
            self._stmt_scoped(stmt.then, scope)
            if stmt.other is not None:
                self._stmt_scoped(stmt.other, scope)
        elif isinstance(stmt, (ir.While, ir.DoWhile)):
            self._condition(stmt.cond, scope)
            self.loop_depth += 1
            self._stmt_scoped(stmt.body, scope)
            self.loop_depth -= 1
        elif isinstance(stmt, ir.For):
            inner = Scope(scope)
            if isinstance(stmt.init, ir.ExprStmt):
                self._expr(stmt.init.expr, inner)  # not a statement of its own (see _array_update)
            elif stmt.init is not None:
                self._stmt(stmt.init, inner)
            if stmt.cond is not None:
                self._condition(stmt.cond, inner)
            if stmt.step is not None:
                self._expr(stmt.step, inner)
            self.loop_depth += 1
            self._stmt_scoped(stmt.body, inner)
            self.loop_depth -= 1
        elif isinstance(stmt, ir.Break):
            if not self.loop_depth:
                raise self.error("'break' statement not in a loop", stmt.pos)
        elif isinstance(stmt, ir.Continue):
            if not self.loop_depth:
                raise self.error("'continue' statement not in a loop", stmt.pos)
        elif isinstance(stmt, ir.Return):
            self._return(stmt, scope)
        elif isinstance(stmt, ir.Empty):
            pass
        else:  # pragma: no cover - the parser makes no other statements
            raise self.error(f"unsupported statement {type(stmt).__name__}", stmt.pos)

    def _stmt_scoped(self, stmt: ir.Stmt, scope: Scope) -> None:
        if isinstance(stmt, (ir.VarDecl, ir.DeclGroup)):
            raise self.error("a declaration is not allowed here; put it in braces { }", stmt.pos)
        self._stmt(stmt, Scope(scope))

    def _return(self, stmt: ir.Return, scope: Scope) -> None:
        rtype = self.current.return_type
        if stmt.value is None:
            if rtype != ty.VOID:
                raise self.error(f"non-void function '{self.current.name}' must return a value", stmt.pos)
            return
        if rtype == ty.VOID:
            what = "the kernel" if self.is_kernel else f"void function '{self.current.name}'"
            raise self.error(
                f"{what} cannot return a value", stmt.value.pos,
                "'return;' ends the current grid point; outputs are written to images" if self.is_kernel else None,
            )
        vtype = self._expr(stmt.value, scope)
        if not ty.is_assignable(rtype, vtype):
            raise self.error(f"cannot return '{vtype}' from a function returning '{rtype}'", stmt.value.pos)

    def _decl(self, decl: ir.VarDecl, scope: Scope) -> None:
        if decl.name in scope.symbols:
            raise self.error(f"redefinition of '{decl.name}'", decl.pos)
        if decl.name in self.tunables:
            raise self.error(f"'{decl.name}' is a tunable and cannot be redeclared", decl.pos)
        check_identifier(self, decl.name, decl.pos)
        if decl.name in GRID_INDICES and self.is_kernel:
            raise self.error(f"'{decl.name}' is the grid index and cannot be redeclared", decl.pos)
        vtype = decl.var_type
        if vtype == ty.VOID or (isinstance(vtype, ty.ArrayType) and vtype.element == ty.VOID):
            raise self.error(f"variable '{decl.name}' declared void", decl.pos)
        if isinstance(vtype, ty.ArrayType):
            if decl.init is not None:
                if not isinstance(decl.init, list):
                    raise self.error(f"array '{decl.name}' must be initialised with a list in braces", decl.pos)
                self._array_init(decl, vtype, decl.init, scope)
            decl.symbol = ir.Symbol(decl.name, vtype, "private_array", decl.pos, is_const=decl.is_const)
            scope.symbols[decl.name] = decl.symbol
            return
        value = None
        if decl.init is not None and not isinstance(decl.init, list):
            for node in walk(decl.init):
                # C: the name is declared from its declarator on, so this reads the new, uninitialised variable
                if isinstance(node, ir.Name) and node.name == decl.name:
                    raise self.error(f"variable '{decl.name}' is used in its own initializer", node.pos,
                                     "in C the new variable hides any outer one from its declarator on; "
                                     "rename one of them")
        if decl.init is not None:
            if isinstance(decl.init, list):
                raise self.error(f"'{decl.name}' is not an array; it cannot be initialised with braces", decl.pos)
            itype = self._expr(decl.init, scope)
            if not ty.is_assignable(vtype, itype):
                raise self.error(f"cannot initialise '{vtype}' variable '{decl.name}' with a value of type '{itype}'",
                                 decl.init.pos, vector_hint(vtype, itype))
            value = const_int(decl.init) if decl.is_const and isinstance(vtype, ty.ScalarType) and vtype.is_integer else None
        elif decl.is_const:
            raise self.error(f"const variable '{decl.name}' must be initialised", decl.pos)
        decl.symbol = ir.Symbol(decl.name, vtype, "local", decl.pos, is_const=decl.is_const, value=value,
                                tunable_dependent=value is not None and _reads_tunables(decl.init))
        scope.symbols[decl.name] = decl.symbol

    def _array_init(self, decl: ir.VarDecl, vtype: ty.ArrayType, init: list, scope: Scope, depth: int = 0) -> None:
        if len(init) > vtype.shape[depth]:
            raise self.error(f"too many initialisers for array '{decl.name}'", decl.pos)
        for item in init:
            if depth + 1 < len(vtype.shape):
                if not isinstance(item, list):
                    raise self.error(f"expected a braced list for the rows of '{decl.name}'", decl.pos)
                self._array_init(decl, vtype, item, scope, depth + 1)
            else:
                if isinstance(item, list):
                    raise self.error(f"too many braces in the initialiser of '{decl.name}'", decl.pos)
                itype = self._expr(item, scope)
                if not ty.is_assignable(vtype.element, itype):
                    raise self.error(f"cannot initialise an element of '{decl.name}' with '{itype}'", item.pos)

    def _condition(self, cond: ir.Expr, scope: Scope) -> None:
        t = self._expr(cond, scope)
        if not isinstance(t, ty.ScalarType):
            raise self.error(f"condition must be a scalar, not '{t}'", cond.pos,
                             "compare components, e.g. v.x > 0, or use any()/all() style logic")


def always_returns(stmt: Optional[ir.Stmt]) -> bool:
    if isinstance(stmt, ir.Return):
        return True
    if isinstance(stmt, ir.Block):
        return any(always_returns(s) for s in stmt.body)
    if isinstance(stmt, ir.If):
        return stmt.other is not None and always_returns(stmt.then) and always_returns(stmt.other)
    return False


def _reads_tunables(expr: ir.Expr) -> bool:
    """Does a constant expression's value depend on a tunable (directly or through a `const` local)?"""
    return any(isinstance(n, ir.Name) and n.symbol is not None
               and (n.symbol.kind == "tunable" or n.symbol.tunable_dependent) for n in walk(expr))
