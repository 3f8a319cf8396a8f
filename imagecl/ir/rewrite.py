"""Bottom-up rewriting of the IR without changing it: the rewritten tree shares every subtree
that did not change, and each node on the path to a change is a shallow copy (which keeps the
fields that analysis filled in: `type`, `symbol`, `function`)."""
from __future__ import annotations

import copy
import dataclasses
import functools
from typing import Callable, Optional, TypeVar

from . import nodes as ir

_SKIPPED = ("symbol", "function", "type", "pos")


def rewrite(node: ir.Node, replace: Callable[[ir.Node, ir.Node], Optional[ir.Node]]) -> ir.Node:
    """`node` with `replace(original, rebuilt)` applied to every node below it, children first:
    `rebuilt` is the node with its children already rewritten (the node itself when none
    changed), and `replace` returns what stands in its place (None: `rebuilt`). `original` is
    the node of the input tree, by which analyses know it."""
    changes = {}
    for name in _children(type(node)):
        value = getattr(node, name)
        if isinstance(value, (ir.Node, list)):
            new = _rewrite_value(value, replace)
            if new is not value:
                changes[name] = new
    rebuilt = node
    if changes:
        rebuilt = copy.copy(node)
        for name, value in changes.items():
            setattr(rebuilt, name, value)
    out = replace(node, rebuilt)
    return rebuilt if out is None else out


@functools.lru_cache(maxsize=None)
def _children(cls: type) -> tuple[str, ...]:
    """The fields of a node class that may hold child nodes."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.name not in _SKIPPED)


def _rewrite_value(value, replace):
    if isinstance(value, ir.Node):
        return rewrite(value, replace)
    if isinstance(value, list):
        items = [_rewrite_value(v, replace) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    return value


Program = TypeVar("Program")


def rewrite_functions(info: Program, replace: Callable[[ir.Node, ir.Node], Optional[ir.Node]]) -> Program:
    """A checked program (passes.semantic.ProgramInfo) with every function rewritten by
    `replace`; its unit, kernel and helpers are the rewritten functions, all else is shared."""
    functions = [rewrite(f, replace) for f in info.unit.functions]
    if all(new is old for new, old in zip(functions, info.unit.functions)):
        return info
    by_old = {id(old): new for old, new in zip(info.unit.functions, functions)}
    unit = dataclasses.replace(info.unit, functions=functions)
    return dataclasses.replace(info, unit=unit, kernel=by_old[id(info.kernel)],
                               helpers=[by_old[id(f)] for f in info.helpers])
