"""Bottom-up rewriting of the IR without changing it: the rewritten tree shares every subtree
that did not change, and each node on the path to a change is a shallow copy (which keeps the
fields that analysis filled in: `type`, `symbol`, `function`)."""
from __future__ import annotations

import copy
import dataclasses
from typing import Callable, Optional

from . import nodes as ir

_SKIPPED = ("symbol", "function", "type", "pos")


def rewrite(node: ir.Node, replace: Callable[[ir.Node, ir.Node], Optional[ir.Node]]) -> ir.Node:
    """`node` with `replace(original, rebuilt)` applied to every node below it, children first:
    `rebuilt` is the node with its children already rewritten (the node itself when none
    changed), and `replace` returns what stands in its place (None: `rebuilt`). `original` is
    the node of the input tree, by which analyses know it."""
    changes = {}
    for f in dataclasses.fields(node):
        if f.name in _SKIPPED:
            continue
        value = getattr(node, f.name)
        new = _rewrite_value(value, replace)
        if new is not value:
            changes[f.name] = new
    rebuilt = node
    if changes:
        rebuilt = copy.copy(node)
        for name, value in changes.items():
            setattr(rebuilt, name, value)
    out = replace(node, rebuilt)
    return rebuilt if out is None else out


def _rewrite_value(value, replace):
    if isinstance(value, ir.Node):
        return rewrite(value, replace)
    if isinstance(value, list):
        items = [_rewrite_value(v, replace) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    return value
