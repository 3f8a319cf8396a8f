"""Specialise tunables: an IR-to-IR pass that gives every `#pragma imcl tunable` its value.

`specialise(info, {name: value})` returns a new `ProgramInfo` whose tunables are compile-time
constants with those values; the analysed IR it starts from is never changed, so analyses and
code generation for different assignments can run side by side (or concurrently), and every
function that depends on an assignment says so by taking the specialised IR.

The analysed IR is a graph, not a tree: names point at shared symbols, calls at functions,
`ArrayInfo` at parameters and subscripts, analyses at loop nodes. The copy is one `deepcopy` of
the whole `ProgramInfo`, so that sharing is kept, with each tunable's symbol replaced (through
deepcopy's memo) by a new symbol holding its value. Types and positions are values and are
shared, not copied (ir/types.py, ir/nodes.py). A `const` local whose initialiser reads a
tunable (`const int r = RADIUS;`) takes its value for the assignment as well.
"""
from __future__ import annotations

import copy
import dataclasses
import itertools
import numbers
from typing import Mapping

from ..errors import ConfigError
from ..ir import nodes as ir
from ..ir import types as ty
from ..ir.consteval import const_int
from ..ir.rewrite import rewrite_functions
from ..ir.walk import walk
from .semantic import ProgramInfo


def assignment(info: ProgramInfo, values: Mapping[str, int]) -> dict[str, int]:
    """A full assignment of the tunables: `values`, and each other tunable's first value."""
    out = {name: allowed[0] for name, allowed in info.tunables.items()}
    for name, value in values.items():
        if name not in info.tunables:
            raise ConfigError(f"'{name}' is not a tunable of '{info.kernel.name}'")
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) not in info.tunables[name]:
            raise ConfigError(f"tunable '{name}' must be one of {info.tunables[name]}, got {value!r}")
        out[name] = int(value)
    return out


def assignments(info: ProgramInfo) -> list[dict[str, int]]:
    """Every assignment of the tunables (one empty assignment for a program without any)."""
    names = list(info.tunables)
    return [dict(zip(names, combo)) for combo in itertools.product(*(info.tunables[n] for n in names))]


def specialise(info: ProgramInfo, values: Mapping[str, int]) -> ProgramInfo:
    """A copy of `info` in which every tunable is the constant `values[name]` (default: its first
    value). Raises ConfigError for an unknown tunable or a value it does not list."""
    full = assignment(info, values)
    memo: dict[int, object] = {}
    for name, symbol in info.tunable_symbols.items():
        memo[id(symbol)] = dataclasses.replace(symbol, value=full[name], is_const=True)
    out = copy.deepcopy(info, memo)
    _evaluate_const_locals(out)
    return out


def _evaluate_const_locals(info: ProgramInfo) -> None:
    """The values of the copy's `const` integer locals that depend on tunables, in source order
    (a declaration comes before its uses, so an initialiser reads values already set). Only the
    copy's own, fresh symbols are written."""
    for node in walk(info.unit.functions):
        if not isinstance(node, ir.VarDecl) or node.symbol is None or not node.symbol.tunable_dependent:
            continue
        t = node.var_type
        if node.is_const and isinstance(t, ty.ScalarType) and t.is_integer and isinstance(node.init, ir.Expr):
            node.symbol.value = const_int(node.init)


def fold_decided_branches(info: ProgramInfo) -> ProgramInfo:
    """`info` with every `if` whose condition is a constant (after `specialise`: a test of a
    tunable, `if (ALGORITHM == 3)`) replaced by the arm it takes, or by nothing. The vector code
    (codegen/lanes.py) and its analyses (passes/lanes.py) look at this IR, so that an arm that
    cannot run as lanes refuses only the assignments that take it, not every one."""

    def replace(original: ir.Node, rebuilt: ir.Node):
        if isinstance(rebuilt, ir.If):
            value = const_int(rebuilt.cond)
            if value is not None:
                taken = rebuilt.then if value else rebuilt.other
                return taken if taken is not None else ir.Empty(rebuilt.pos)
        return None

    return rewrite_functions(info, replace)
