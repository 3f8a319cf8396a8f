"""Generic traversal of the IR."""
from __future__ import annotations

import dataclasses
from typing import Iterator

from . import nodes as ir


def walk(node) -> Iterator[ir.Node]:
    """Every IR node below `node` (included), depth first, in source order. Iterative: a
    program may nest thousands of levels deep (frontend/depth.py)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
            continue
        if not isinstance(item, ir.Node):
            continue
        yield item
        children = []
        for f in dataclasses.fields(item):
            if f.name in ("symbol", "function", "type", "pos"):
                continue
            value = getattr(item, f.name)
            if isinstance(value, (ir.Node, list)):
                children.append(value)
        stack.extend(reversed(children))
