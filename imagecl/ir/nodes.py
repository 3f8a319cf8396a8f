"""The typed IR: plain dataclasses, each node with the source position it came from.

The parser builds these nodes; semantic analysis (passes/semantic.py) fills in `type` on
expressions and `symbol` on names, and later passes read them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

from .types import Type


@dataclass(frozen=True)
class Pos:
    line: int
    column: int
    end_line: int = 0
    end_column: int = 0

    def __deepcopy__(self, memo) -> "Pos":
        return self  # a value: copies of the IR share it (passes/specialise.py)


NOWHERE = Pos(0, 0)


@dataclass(eq=False)
class Node:
    pos: Pos


# ---- symbols ---------------------------------------------------------------------


@dataclass(eq=False)
class Symbol:
    """What a name refers to: a parameter, a local, a tunable, a grid index, a function."""

    name: str
    type: Type
    kind: str  # 'image', 'array', 'pointer', 'scalar', 'local', 'grid_index', 'tunable', 'const'
    pos: Pos = NOWHERE
    is_const: bool = False
    value: Optional[int] = None  # compile-time value (tunables and `const` locals with constant initialisers)
    tunable_dependent: bool = False  # a `const` local whose value is computed from a tunable


# ---- expressions -----------------------------------------------------------------


@dataclass(eq=False)
class Expr(Node):
    type: Optional[Type] = field(default=None, init=False)


@dataclass(eq=False)
class IntLit(Expr):
    value: int
    unsigned: bool = False


@dataclass(eq=False)
class FloatLit(Expr):
    value: float
    text: str


@dataclass(eq=False)
class BoolLit(Expr):
    value: bool


@dataclass(eq=False)
class Name(Expr):
    name: str
    symbol: Optional[Symbol] = field(default=None, init=False)


@dataclass(eq=False)
class Unary(Expr):
    op: str  # '-', '+', '!', '~'
    operand: Expr


@dataclass(eq=False)
class IncDec(Expr):
    op: str  # '++' or '--'
    prefix: bool
    target: Expr


@dataclass(eq=False)
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Assign(Expr):
    op: str  # '=', '+=', ...
    target: Expr
    value: Expr


@dataclass(eq=False)
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass(eq=False)
class Cast(Expr):
    target_type: Type
    operand: Expr


@dataclass(eq=False)
class VectorLit(Expr):
    vector_type: Type
    elements: list[Expr]


@dataclass(eq=False)
class Call(Expr):
    name: str
    args: list[Expr]
    function: Optional["Function"] = field(default=None, init=False)  # a helper, or None for built-ins


@dataclass(eq=False)
class Subscript(Expr):
    """`base[i][j]...`: an image access, a fixed-size or private array element, or a pointer element."""

    base: Name
    indices: list[Expr]
    # where the access goes, for a kernel parameter's elements (passes/memory.py); None: not placed
    memory: Optional[str] = field(default=None, init=False)


@dataclass(eq=False)
class Member(Expr):
    """`v.x` on a vector, or `img.width` / `.height` / `.depth` on an image."""

    base: Expr
    member: str


@dataclass(eq=False)
class Comma(Expr):
    exprs: list[Expr]


# ---- statements --------------------------------------------------------------------


@dataclass(eq=False)
class Stmt(Node):
    pass


@dataclass(eq=False)
class VarDecl(Stmt):
    name: str
    var_type: Type
    init: Union[Expr, list, None]  # an expression, or a nested list of expressions for arrays
    is_const: bool = False
    symbol: Optional[Symbol] = field(default=None, init=False)


@dataclass(eq=False)
class DeclGroup(Stmt):
    """`float a = 1, b;`: several declarations in one statement."""

    decls: list[VarDecl]


@dataclass(eq=False)
class ExprStmt(Stmt):
    expr: Expr


@dataclass(eq=False)
class Block(Stmt):
    body: list[Stmt]


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Optional[Stmt]


@dataclass(eq=False)
class While(Stmt):
    cond: Expr
    body: Stmt


@dataclass(eq=False)
class DoWhile(Stmt):
    body: Stmt
    cond: Expr


@dataclass(eq=False)
class For(Stmt):
    init: Optional[Stmt]
    cond: Optional[Expr]
    step: Optional[Expr]
    body: Stmt


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    value: Optional[Expr]


@dataclass(eq=False)
class Empty(Stmt):
    pass


# ---- statements that passes introduce (passes/unroll.py) ------------------------------


@dataclass(eq=False)
class Comment(Stmt):
    """A one-line comment in the generated code, saying what a pass did."""

    text: str


@dataclass(eq=False)
class Sequence(Stmt):
    """Statements that stand in the enclosing block, without braces of their own (a fully
    unrolled loop: its comment and copies)."""

    body: list[Stmt]


@dataclass(eq=False)
class ExitUnless(Stmt):
    """`if (!(cond)) break;`: the loop's exit test between the copies of a partially unrolled
    loop whose trip count is not known."""

    cond: Expr


# ---- top level ------------------------------------------------------------------------


@dataclass(eq=False)
class Param(Node):
    name: str
    type: Type
    is_const: bool = False
    symbol: Optional[Symbol] = field(default=None, init=False)


@dataclass(eq=False)
class Function(Node):
    name: str
    return_type: Type
    params: list[Param]
    body: Block


@dataclass(eq=False)
class Pragma(Node):
    name: str
    args: list  # list of PragmaArg
    text: str


@dataclass(eq=False)
class PragmaArg(Node):
    name: str
    values: list[str]  # 'a:constant' -> name 'a', values ['constant']; 'T: 1, 2' -> ['1', '2']


@dataclass(eq=False)
class TranslationUnit(Node):
    filename: str
    source: str
    functions: list[Function]
    pragmas: list[Pragma]
