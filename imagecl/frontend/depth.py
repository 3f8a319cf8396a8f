"""Limits on how deeply a program nests, checked on the parse tree before anything recursive
walks it.

Two measures, each with a located error beyond its limit:
- nesting: the brackets the generated C needs (blocks, loop and `if` bodies, calls, subscripts,
  casts, and operators that need parentheses). OpenCL compilers stop at 256 levels of brackets
  (clang's -fbracket-depth), and the generated code wraps the body in a few levels and may
  double an expression's; 64 levels keeps every variant below that.
- depth: nodes of the tree on one path, which bounds the recursion of the compiler's passes.
  A chain of operators (`a + b + c + ...`, a written-out 19x19 filter) needs no brackets but
  one level per operator, so this limit is far above any written-out filter.
"""
from __future__ import annotations

import sys
from typing import Callable, Optional

from lark import Token, Tree

MAX_NESTING = 64
MAX_DEPTH = 2000
# Every pass recurses once or a few times per tree level; Python's default limit of 1000
# would stop at a few hundred levels. Python 3.11+ does not use the C stack for these calls.
RECURSION_LIMIT = 8 * MAX_DEPTH + 2000

# statements whose body becomes a braced block, and expressions that are brackets in C
_BRACKETS = {"block", "if_stmt", "while_stmt", "do_stmt", "for_stmt", "call", "subscript", "cast", "init_list"}
# operator precedence by token type (higher binds tighter), as the emitter parenthesises
_PREC = {"OROR": 1, "ANDAND": 2, "BAR": 3, "CARET": 4, "AMP": 5, "EQ_OP": 6, "REL_OP": 7,
         "SHIFT_OP": 8, "ADD_OP": 9, "MUL_OP": 10}
_OPERATORS = {"binary", "ternary", "assignment", "prefix", "postfix_op", "unary_op", "comma", "member"}


def raise_recursion_limit() -> None:
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


def _binary_prec(tree: Tree) -> Optional[int]:
    if tree.data != "binary" or len(tree.children) != 3 or not isinstance(tree.children[1], Token):
        return None
    return _PREC.get(tree.children[1].type)


def _child_cost(parent: Tree, index: int, child: Tree) -> int:
    """Levels of brackets that `child` adds below `parent`."""
    if child.data == "if_stmt" and parent.data == "if_stmt" and index == 4:
        return 0  # `else if`: the generated code keeps the chain flat
    if child.data in _BRACKETS:
        return 1
    if child.data not in _OPERATORS or parent.data not in _OPERATORS:
        return 0  # an operand of a statement, a call or a subscript needs no parentheses of its own
    outer, inner = _binary_prec(parent), _binary_prec(child)
    if outer is not None and inner is not None:
        # a left operand of the same or tighter precedence, a right one of tighter, needs none
        return 0 if (inner > outer or (inner == outer and index == 0)) else 1
    return 1


def check_depth(tree: Tree, error: Callable[[str, int, int, str], Exception]) -> None:
    """Raise error(message, line, column, hint) where `tree` nests beyond the limits."""
    stack = [(tree, 0, 1)]
    while stack:
        node, nesting, depth = stack.pop()
        if depth > MAX_DEPTH or nesting > MAX_NESTING:
            meta = node.meta
            line, col = getattr(meta, "line", 1), getattr(meta, "column", 1)
            if depth > MAX_DEPTH:
                raise error(f"program nested too deeply: more than {MAX_DEPTH} levels of statements "
                            "and operators", line, col, "split long expressions into several statements")
            raise error(f"statements or expressions nested too deeply: more than {MAX_NESTING} levels "
                        "of blocks, loops, calls, subscripts and parentheses", line, col,
                        "OpenCL compilers accept at most 256 levels of brackets in the generated code")
        for index, child in enumerate(node.children):
            if isinstance(child, Tree):
                cost = _child_cost(node, index, child) if node.data != "start" else 0
                stack.append((child, nesting + cost, depth + 1))
