"""Name scopes, the state that every part of semantic analysis shares (`AnalyserBase`), and the
rules for the names a program may declare."""
from __future__ import annotations

from typing import Optional

from ..errors import CompileError
from ..ir import names
from ..ir import nodes as ir
from ..ir.walk import walk
from .program_info import ArrayInfo


class Scope:
    def __init__(self, parent: Optional["Scope"] = None) -> None:
        self.parent = parent
        self.symbols: dict[str, ir.Symbol] = {}

    def lookup(self, name: str) -> Optional[ir.Symbol]:
        scope: Optional[Scope] = self
        while scope is not None:
            if name in scope.symbols:
                return scope.symbols[name]
            scope = scope.parent
        return None

    def visible_names(self) -> list[str]:
        names: list[str] = []
        scope: Optional[Scope] = self
        while scope is not None:
            names.extend(scope.symbols)
            scope = scope.parent
        return names


class AnalyserBase:
    """The state of one analysis. The checks live in mixins, one module a concern (pragmas,
    statements, expressions and types, calls, access classes); `semantic._Analyser` combines
    them, so that a check may call any other through `self`."""

    def __init__(self, unit: ir.TranslationUnit) -> None:
        self.unit = unit
        self.arrays: dict[str, ArrayInfo] = {}
        self.functions: dict[str, ir.Function] = {}
        self.current: Optional[ir.Function] = None
        self.is_kernel = False
        self.loop_depth = 0
        self.grid_dims = 2
        self.tunables: dict[str, list[int]] = {}
        self.global_scope = Scope()
        self.uses_idz = False
        self.idz_pos: Optional[ir.Pos] = None  # the first use of `idz`
        self.depth_uses: dict[str, ir.Pos] = {}  # image -> first `.depth` use
        self.kernel_param_names: set[str] = set()
        self.statement_expr: Optional[ir.Expr] = None  # the expression of the current expression statement

    def error(self, message: str, pos: ir.Pos, hint: Optional[str] = None) -> CompileError:
        return CompileError(message, pos.line, pos.column, self.unit.filename, self.unit.source, hint)


def check_identifier(analyser: "AnalyserBase", name: str, pos: ir.Pos) -> None:
    """C keywords and the language's type names cannot be names. Words that only OpenCL C
    predefines can: the generated code renames them (ir/names.py)."""
    why = names.reserved_word(name)
    if why is not None:
        raise analyser.error(f"{why} and cannot be used as a name", pos)


def declared_names(unit: ir.TranslationUnit) -> set[str]:
    """Every name the program declares: functions, parameters, variables."""
    out = set()
    for f in unit.functions:
        out.add(f.name)
        out.update(p.name for p in f.params)
        out.update(n.name for n in walk(f.body) if isinstance(n, ir.VarDecl))
    return out
