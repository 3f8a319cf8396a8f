"""Generic traversal of the IR."""
from __future__ import annotations

import dataclasses
from typing import Iterator

from . import nodes as ir


def walk(node) -> Iterator[ir.Node]:
    """Every IR node below `node` (included), depth first, in source order."""
    if isinstance(node, list):
        for item in node:
            yield from walk(item)
        return
    if not isinstance(node, ir.Node):
        return
    yield node
    for f in dataclasses.fields(node):
        if f.name in ("symbol", "function", "type", "pos"):
            continue
        value = getattr(node, f.name)
        if isinstance(value, (ir.Node, list)):
            yield from walk(value)
