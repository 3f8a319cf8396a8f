"""Bottom-up rewriting of the IR without changing it: the rewritten tree shares every subtree
that did not change, and each node on the path to a change is a shallow copy (which keeps the
fields that analysis filled in: `type`, `symbol`, `function`)."""
from __future__ import annotations

import copy
import dataclasses
import functools
import weakref
from typing import Callable, Optional, TypeVar

from . import nodes as ir

_SKIPPED = ("symbol", "function", "type", "pos")

Replace = Callable[[ir.Node, ir.Node], Optional[ir.Node]]
Descend = Optional[Callable[[ir.Node], bool]]


def rewrite(node: ir.Node, replace: Replace, descend: Descend = None) -> ir.Node:
    """`node` with `replace(original, rebuilt)` applied to every node below it, children first:
    `rebuilt` is the node with its children already rewritten (the node itself when none
    changed), and `replace` returns what stands in its place (None: `rebuilt`). `original` is
    the node of the input tree, by which analyses know it. With `descend`, a subtree whose root
    it rejects is kept as it is, unvisited (a pass that changes only some kinds of nodes skips
    the subtrees that hold none).

    A node that appears more than once (unrolled copies share their statements) is rewritten
    once: `replace` sees a node, not where it stands, so each appearance gets the same result."""
    return _Rewriter(replace, descend).node(node)


@functools.lru_cache(maxsize=None)
def _children(cls: type) -> tuple[str, ...]:
    """The fields of a node class that may hold child nodes."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.name not in _SKIPPED)


class _Rewriter:
    def __init__(self, replace: Replace, descend: Descend) -> None:
        self.replace = replace
        self.descend = descend
        self.done: dict[int, ir.Node] = {}  # id of an input node (alive while the input is) -> its result

    def node(self, node: ir.Node) -> ir.Node:
        done = self.done.get(id(node))
        if done is not None:
            return done
        changes = {}
        for name in _children(type(node)):
            value = getattr(node, name)
            if isinstance(value, (ir.Node, list)):
                new = self.value(value)
                if new is not value:
                    changes[name] = new
        rebuilt = node
        if changes:
            rebuilt = copy.copy(node)
            for name, value in changes.items():
                setattr(rebuilt, name, value)
        out = self.replace(node, rebuilt)
        result = rebuilt if out is None else out
        self.done[id(node)] = result
        return result

    def value(self, value):
        if isinstance(value, ir.Node):
            return self.node(value) if self.descend is None or self.descend(value) else value
        if isinstance(value, list):
            items = [self.value(v) for v in value]
            return value if all(a is b for a, b in zip(items, value)) else items
        return value


Program = TypeVar("Program")


def rewrite_functions(info: Program, replace: Replace, descend: Descend = None) -> Program:
    """A checked program (passes.semantic.ProgramInfo) with every function rewritten by
    `replace` (and `descend`, as `rewrite` says); its unit, kernel and helpers are the
    rewritten functions, all else is shared."""
    rewriter = _Rewriter(replace, descend)
    functions = [rewriter.node(f) for f in info.unit.functions]
    if all(new is old for new, old in zip(functions, info.unit.functions)):
        return info
    by_old = {id(old): new for old, new in zip(info.unit.functions, functions)}
    unit = dataclasses.replace(info.unit, functions=functions)
    return dataclasses.replace(info, unit=unit, kernel=by_old[id(info.kernel)],
                               helpers=[by_old[id(f)] for f in info.helpers])


_SUBSCRIPTS: "weakref.WeakKeyDictionary[ir.Node, bool]" = weakref.WeakKeyDictionary()


def holds_subscript(node: ir.Node) -> bool:
    """Whether any node of the subtree at `node` is a Subscript: the `descend` of passes that
    change only element accesses. Remembered per node (weakly), so the subtrees that rewritten
    trees share are looked at once; a rewrite never changes a node in place, so it stays true."""
    known = _SUBSCRIPTS.get(node)
    if known is not None:
        return known
    # children first, iteratively (a program may nest thousands of levels deep)
    stack: list[tuple[ir.Node, bool]] = [(node, False)]
    while stack:
        item, expanded = stack.pop()
        if item in _SUBSCRIPTS:
            continue
        kids = _child_nodes(item)
        if not expanded:
            stack.append((item, True))
            stack.extend((k, False) for k in kids if k not in _SUBSCRIPTS)
            continue
        _SUBSCRIPTS[item] = isinstance(item, ir.Subscript) or any(_SUBSCRIPTS[k] for k in kids)
    return _SUBSCRIPTS[node]


def _child_nodes(node: ir.Node) -> list[ir.Node]:
    out: list[ir.Node] = []
    pending = [getattr(node, name) for name in _children(type(node))]
    while pending:
        value = pending.pop()
        if isinstance(value, ir.Node):
            out.append(value)
        elif isinstance(value, list):  # nested: an array initialiser's rows
            pending.extend(value)
    return out
