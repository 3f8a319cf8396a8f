"""Access analysis: affine image indices, footprints and halos, constant-trip-count loops,
loops with data-dependent trip counts, and small read-only arrays.

An image read `in[idx + i - 1][idy + 2]` inside `for (int i = 0; i < 3; i++)` has, per
dimension, an affine index: the grid index of that dimension with coefficient 1 plus an offset
that ranges over [-1, 1] and [2, 2]. Its footprint (the box of offsets) gives the halo that a
local-memory tile needs, and tells whether neighbouring grid points reuse each other's reads.
"""
from __future__ import annotations

import math

import itertools
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..ir import nodes as ir
from ..ir import types as ty
from ..ir.consteval import const_int
from ..ir.walk import walk
from .semantic import GRID_INDICES, ArrayInfo, ProgramInfo

MAX_ENUMERATED_OFFSETS = 4096  # beyond this a footprint is kept as a box only
# A loop variable that spans more values than this makes the indices that use it "unknown":
# no local-memory tile or halo could hold such a footprint, and a loop with a huge nominal
# bound that `break` ends early must not make the analysis enumerate (or allocate) anything.
MAX_LOOP_SPAN = 4096
MAX_UNROLL_TRIP = 2**31 - 1  # the unrolled loop's counter is an int


@dataclass(frozen=True)
class Affine:
    """sum(coeffs[v] * v) + const over grid indices and loop variables."""

    coeffs: tuple[tuple[str, int], ...]
    const: int

    @staticmethod
    def constant(value: int) -> "Affine":
        return Affine((), value)

    @staticmethod
    def var(name: str) -> "Affine":
        return Affine(((name, 1),), 0)

    def coeff(self, name: str) -> int:
        return dict(self.coeffs).get(name, 0)

    def combine(self, other: "Affine", sign: int) -> "Affine":
        c = dict(self.coeffs)
        for k, v in other.coeffs:
            c[k] = c.get(k, 0) + sign * v
        return Affine(tuple(sorted((k, v) for k, v in c.items() if v)), self.const + sign * other.const)

    def scale(self, factor: int) -> "Affine":
        return Affine(tuple((k, v * factor) for k, v in self.coeffs if v * factor), self.const * factor)


def unroll_parameter(function: str, node: ir.Stmt, clash: bool) -> str:
    """The tuning parameter of a loop's unroll factor: named by its function and line, and by
    its column too where another loop starts on the same line."""
    return f"unroll_{function}_l{node.pos.line}" + (f"c{node.pos.column}" if clash else "")


@dataclass
class LoopInfo:
    """A `for` loop whose variable runs over constants: a candidate for unrolling."""

    node: ir.For
    var: ir.Symbol
    start: int
    step: int
    trip_count: int
    function: str
    unrollable: bool  # no break/continue of its own, variable not assigned in the body
    clash: bool = False  # another loop starts on the same line of the same function

    @property
    def values(self) -> range:
        return range(self.start, self.start + self.step * self.trip_count, self.step)

    @property
    def value_range(self) -> tuple[int, int]:
        """(smallest, largest) value of the variable in the body, from the end points only
        (the range may be huge); (start, start) for a loop that never runs."""
        last = self.start + self.step * max(self.trip_count - 1, 0)
        return min(self.start, last), max(self.start, last)

    @property
    def parameter(self) -> str:
        return unroll_parameter(self.function, self.node, self.clash)


DYNAMIC_UNROLL_FACTORS = [1, 2, 4, 8, 16]  # the paper's factors for the ray traversal loop
MAX_SMALL_ARRAY_BYTES = 64 * 1024  # fixed-size arrays up to this size may go to local or image memory


@dataclass
class DynamicLoop:
    """A loop whose trip count is not a compile-time constant (`while`, `do`, a `for` with a
    `break`, a non-constant bound or an assigned variable): unrolled partially with the exit
    test between the copies, which is correct for any trip count."""

    node: ir.Stmt  # While, DoWhile or For
    function: str
    clash: bool = False  # another loop starts on the same line of the same function

    @property
    def parameter(self) -> str:
        return unroll_parameter(self.function, self.node, self.clash)

    @property
    def keyword(self) -> str:
        return {ir.While: "while", ir.DoWhile: "do", ir.For: "for"}[type(self.node)]


@dataclass
class Footprint:
    """What one image's reads cover, relative to the grid point."""

    image: str
    bounded: bool  # every read is grid index + a bounded offset, per dimension
    low: tuple[int, ...] = ()  # smallest offset per dimension (x, y[, z])
    high: tuple[int, ...] = ()  # largest offset per dimension
    offsets: Optional[frozenset] = None  # the exact set, when small enough to enumerate
    reads: int = 0

    @property
    def halo_low(self) -> tuple[int, ...]:
        return tuple(max(0, -lo) for lo in self.low)

    @property
    def halo_high(self) -> tuple[int, ...]:
        return tuple(max(0, hi) for hi in self.high)

    @property
    def moves_with_grid_point(self) -> bool:
        return self.bounded

    @property
    def reused(self) -> bool:
        """Neighbouring grid points read some of the same pixels (a box wider than one pixel)."""
        return self.bounded and any(hi > lo for lo, hi in zip(self.low, self.high))


@dataclass
class AccessAnalysis:
    footprints: dict[str, Footprint] = field(default_factory=dict)
    loops: list[LoopInfo] = field(default_factory=list)
    dynamic_loops: list[DynamicLoop] = field(default_factory=list)

    def loop_by_node(self, node: ir.For) -> Optional[LoopInfo]:
        for loop in self.loops:
            if loop.node is node:
                return loop
        return None


def analyse_accesses(info: ProgramInfo) -> AccessAnalysis:
    """Footprints of every image read in the kernel, and the constant-trip-count loops."""
    result = AccessAnalysis()
    for function in info.helpers + [info.kernel]:
        result.loops.extend(_loops(function))
        result.dynamic_loops.extend(_dynamic_loops(function, result.loops))
    seen: dict[tuple, list] = {}
    for loop in result.loops:
        seen.setdefault((loop.function, loop.node.pos.line), []).append(loop)
    for dyn in result.dynamic_loops:
        if not any(loop.node is dyn.node for loop in result.loops):
            seen.setdefault((dyn.function, dyn.node.pos.line), []).append(dyn)
    for group in seen.values():
        if len(group) > 1:
            for loop in group:
                loop.clash = True
    for dyn in result.dynamic_loops:  # a for loop in both lists takes the name the other list gave it
        same = next((loop for loop in result.loops if loop.node is dyn.node), None)
        if same is not None:
            dyn.clash = same.clash
    _Footprinter(info, result).run()
    return result


# ---- loops ----------------------------------------------------------------------------------------


def _assigned_symbols(node) -> set[int]:
    out = set()
    for n in walk(node):
        target = None
        if isinstance(n, (ir.Assign, ir.IncDec)):
            target = n.target
        while isinstance(target, ir.Member):
            target = target.base
        if isinstance(target, ir.Name) and target.symbol is not None:
            out.add(id(target.symbol))
        if isinstance(n, ir.Call) and n.function is not None:
            for a in n.args:  # an array passed to a helper may be modified there
                if isinstance(a, ir.Name) and a.symbol is not None:
                    out.add(id(a.symbol))
    return out


def _own_jumps(stmt: ir.Stmt) -> bool:
    """Does `stmt` contain a break/continue that belongs to the enclosing loop?"""
    if isinstance(stmt, (ir.Break, ir.Continue)):
        return True
    if isinstance(stmt, (ir.For, ir.While, ir.DoWhile)):
        return False
    if isinstance(stmt, ir.Block):
        return any(_own_jumps(s) for s in stmt.body)
    if isinstance(stmt, ir.If):
        return _own_jumps(stmt.then) or (stmt.other is not None and _own_jumps(stmt.other))
    return False


def _fixed(expr: Optional[ir.Expr]) -> Optional[int]:
    """An integer constant that does not depend on tunables (so it is the same in every variant)."""
    if expr is None:
        return None
    for n in walk(expr):
        if isinstance(n, ir.Name) and n.symbol is not None and (n.symbol.kind == "tunable"
                                                                or n.symbol.tunable_dependent):
            return None
    return const_int(expr)


def loop_pattern(loop: ir.For, evaluate: Callable[[Optional[ir.Expr]], Optional[int]] = _fixed,
                 ) -> Optional[tuple[ir.Symbol, int, int, int]]:
    """(variable, start, step, trip count) of `for (int i = a; i < b; i += s)` and its variants;
    `evaluate` gives the bounds' values (by default only constants that no tunable changes)."""
    init = loop.init
    if isinstance(init, ir.VarDecl) and isinstance(init.var_type, ty.ScalarType) and init.var_type.is_integer:
        var, start = init.symbol, evaluate(init.init)
    elif (isinstance(init, ir.ExprStmt) and isinstance(init.expr, ir.Assign) and init.expr.op == "="
          and isinstance(init.expr.target, ir.Name)):
        var, start = init.expr.target.symbol, evaluate(init.expr.value)
    else:
        return None
    if var is None or start is None:
        return None
    step_expr = loop.step
    if isinstance(step_expr, ir.IncDec) and isinstance(step_expr.target, ir.Name) and step_expr.target.symbol is var:
        step = 1 if step_expr.op == "++" else -1
    elif (isinstance(step_expr, ir.Assign) and step_expr.op in ("+=", "-=") and isinstance(step_expr.target, ir.Name)
          and step_expr.target.symbol is var):
        s = evaluate(step_expr.value)
        if not s:
            return None
        step = s if step_expr.op == "+=" else -s
    else:
        return None
    cond = loop.cond
    if not (isinstance(cond, ir.Binary) and isinstance(cond.left, ir.Name) and cond.left.symbol is var):
        return None
    bound = evaluate(cond.right)
    if bound is None:
        return None
    op = cond.op
    if op == "<" and step > 0:
        count = max(0, -(-(bound - start) // step))
    elif op == "<=" and step > 0:
        count = max(0, (bound - start) // step + 1)
    elif op == ">" and step < 0:
        count = max(0, -(-(start - bound) // -step))
    elif op == ">=" and step < 0:
        count = max(0, (start - bound) // -step + 1)
    elif op == "!=" and step in (1, -1):
        count = max(0, (bound - start) * step)
    else:
        return None
    return var, start, step, count


def _loops(function: ir.Function) -> list[LoopInfo]:
    out = []
    for node in walk(function.body):
        if not isinstance(node, ir.For):
            continue
        pattern = loop_pattern(node)
        if pattern is None:
            continue
        var, start, step, count = pattern
        unrollable = (id(var) not in _assigned_symbols(node.body) and not _own_jumps(node.body)
                      and isinstance(node.init, ir.VarDecl) and 2 <= count <= MAX_UNROLL_TRIP)
        out.append(LoopInfo(node, var, start, step, count, function.name, unrollable))
    return out


def _dynamic_loops(function: ir.Function, constant: list[LoopInfo]) -> list[DynamicLoop]:
    """Every loop of `function` that is not unrolled as a constant-trip-count loop."""
    by_node = {id(loop.node): loop for loop in constant if loop.function == function.name}
    out = []
    for node in walk(function.body):
        if not isinstance(node, (ir.While, ir.DoWhile, ir.For)):
            continue
        known = by_node.get(id(node))
        if known is not None and (known.unrollable or known.trip_count < 2):
            continue  # a constant trip count: the divisor factors of build_space apply
        out.append(DynamicLoop(node, function.name))
    return out


# ---- small read-only arrays ------------------------------------------------------------------------


def array_bytes(array: ArrayInfo) -> Optional[int]:
    """Bytes of a fixed-size array parameter (None for images and pointers)."""
    if array.kind != "array" or not array.shape:
        return None
    lanes = array.element.width if isinstance(array.element, ty.VectorType) else 1
    return math.prod(array.shape) * array.element.dtype.itemsize * lanes


def tile_bytes(array: ArrayInfo, footprint: Footprint, wg, span):
    """Bytes of the local-memory tile of image `array`: the grid points one work-group covers
    (`wg[d] * span[d]` along dimension d) plus the reads' halo, per dimension of the image.
    `wg` and `span` may hold NumPy arrays (one entry per configuration), as the tuning space's
    local-memory constraint passes them, or plain integers for one launch."""
    lanes = array.element.width if isinstance(array.element, ty.VectorType) else 1
    size = array.element.dtype.itemsize * lanes
    for d in range(array.dims):
        size = size * (wg[d] * span[d] + footprint.halo_low[d] + footprint.halo_high[d])
    return size


def small_read_only_array(array: ArrayInfo) -> bool:
    """A fixed-size array the kernel only reads, small enough to copy per work-group."""
    size = array_bytes(array)
    return size is not None and not array.is_written and bool(array.reads) and size <= MAX_SMALL_ARRAY_BYTES


def image_compatible_array(array: ArrayInfo) -> bool:
    """A read-only fixed-size array that an OpenCL image can hold: 1 or 2 dimensions, and an
    element that is one image pixel: R or RGBA channels (the formats every device supports;
    PoCL has no RG, so 2- and 3-element vectors stay out) of an 8/16/32-bit integer or float
    (bool has no portable image format and double none at all)."""
    if array.kind != "array" or array.is_written or not array.reads or len(array.shape or ()) not in (1, 2):
        return False
    element = array.element
    lanes = element.width if isinstance(element, ty.VectorType) else 1
    return lanes in (1, 4) and ty.element_scalar(element).name not in ("double", "bool")


# ---- footprints ---------------------------------------------------------------------------------------


class _Footprinter:
    def __init__(self, info: ProgramInfo, result: AccessAnalysis) -> None:
        self.info = info
        self.result = result
        self.ranges: dict[str, tuple[int, int]] = {}  # loop variable name -> (min, max)
        self.env: dict[int, Affine] = {}  # symbol id -> affine value
        self.assigned = _assigned_symbols(info.kernel.body)
        self.per_image: dict[str, list[Optional[list[Affine]]]] = {}

    def run(self) -> None:
        self._stmt(self.info.kernel.body)
        grid = GRID_INDICES[: self.info.grid_dims]
        for name, array in self.info.arrays.items():
            if array.kind != "image" or not array.reads:
                continue
            reads = self.per_image.get(name, [])
            fp = Footprint(name, bounded=bool(reads), reads=len(reads))
            boxes = []
            for indices in reads:
                box = self._box(indices, grid, array.dims) if indices is not None else None
                if box is None:
                    fp.bounded = False
                    break
                boxes.append(box)
            if fp.bounded:
                fp.low = tuple(min(b[d][0] for b in boxes) for d in range(array.dims))
                fp.high = tuple(max(b[d][1] for b in boxes) for d in range(array.dims))
                fp.offsets = self._enumerate(reads, array.dims)
            self.result.footprints[name] = fp

    def _box(self, indices: list[Affine], grid: tuple[str, ...], dims: int):
        if dims != len(grid):
            return None
        box = []
        for d, a in enumerate(indices):
            lo = hi = a.const
            for var, coeff in a.coeffs:
                if var in GRID_INDICES:
                    if var != grid[d] or coeff != 1:
                        return None
                    continue
                vlo, vhi = self.ranges[var]
                lo += min(coeff * vlo, coeff * vhi)
                hi += max(coeff * vlo, coeff * vhi)
            if a.coeff(grid[d]) != 1:
                return None
            box.append((lo, hi))
        return box

    def _enumerate(self, reads: list[list[Affine]], dims: int) -> Optional[frozenset]:
        offsets = set()
        for indices in reads:
            loop_vars = sorted({v for a in indices for v, _ in a.coeffs if v not in GRID_INDICES})
            spaces = [range(self.ranges[v][0], self.ranges[v][1] + 1) for v in loop_vars]
            total = 1
            for s in spaces:
                total *= len(s)
            if total * len(reads) > MAX_ENUMERATED_OFFSETS:
                return None
            for values in itertools.product(*spaces):
                point = dict(zip(loop_vars, values))
                offsets.add(tuple(a.const + sum(c * point[v] for v, c in a.coeffs if v not in GRID_INDICES)
                                  for a in indices))
        return frozenset(offsets)

    # statements: track loop variables and single-assignment locals
    def _stmt(self, s: Optional[ir.Stmt]) -> None:
        if s is None:
            return
        if isinstance(s, ir.Block):
            for x in s.body:
                self._stmt(x)
        elif isinstance(s, ir.VarDecl):
            if s.init is not None and not isinstance(s.init, list):
                self._expr(s.init)
                value = self._affine(s.init)
                if value is not None and id(s.symbol) not in self.assigned:
                    self.env[id(s.symbol)] = value
            elif isinstance(s.init, list):
                for e in _flatten(s.init):
                    self._expr(e)
        elif isinstance(s, ir.DeclGroup):
            for d in s.decls:
                self._stmt(d)
        elif isinstance(s, ir.ExprStmt):
            self._expr(s.expr)
        elif isinstance(s, ir.If):
            self._expr(s.cond)
            self._stmt(s.then)
            self._stmt(s.other)
        elif isinstance(s, (ir.While, ir.DoWhile)):
            self._expr(s.cond)
            self._stmt(s.body)
        elif isinstance(s, ir.For):
            loop = self.result.loop_by_node(s)
            lo, hi = loop.value_range if loop is not None else (0, 0)
            if loop is not None and id(loop.var) not in _assigned_symbols(s.body) and hi - lo <= MAX_LOOP_SPAN:
                name = f"loop{len(self.ranges)}_{loop.var.name}"
                self.ranges[name] = (lo, hi)
                self.env[id(loop.var)] = Affine.var(name)
            else:
                self._stmt(s.init)
            if s.cond is not None:
                self._expr(s.cond)
            if s.step is not None:
                self._expr(s.step)
            self._stmt(s.body)
        elif isinstance(s, ir.Return) and s.value is not None:
            self._expr(s.value)

    def _expr(self, e: ir.Expr) -> None:
        for n in walk(e):
            if isinstance(n, ir.Subscript) and n.base.symbol is not None and n.base.symbol.kind == "image":
                array = self.info.arrays[n.base.name]
                if n in array.reads:
                    indices = [self._affine(i) for i in n.indices]
                    self.per_image.setdefault(n.base.name, []).append(
                        None if any(a is None for a in indices) else indices)

    def _affine(self, e: ir.Expr) -> Optional[Affine]:
        if isinstance(e, ir.Name) and e.symbol is not None:
            sym = e.symbol
            if sym.kind == "grid_index":
                return Affine.var(sym.name)
            if id(sym) in self.env:
                return self.env[id(sym)]
        value = const_int(e)
        if value is not None:
            return Affine.constant(value)
        if isinstance(e, ir.Binary) and e.op in ("+", "-", "*"):
            a, b = self._affine(e.left), self._affine(e.right)
            if a is None or b is None:
                return None
            if e.op == "+":
                return a.combine(b, 1)
            if e.op == "-":
                return a.combine(b, -1)
            if not a.coeffs:
                return b.scale(a.const)
            if not b.coeffs:
                return a.scale(b.const)
            return None
        if isinstance(e, ir.Unary) and e.op in ("-", "+"):
            a = self._affine(e.operand)
            return None if a is None else (a.scale(-1) if e.op == "-" else a)
        if isinstance(e, ir.Cast) and isinstance(e.target_type, ty.ScalarType) and e.target_type.is_integer:
            operand = e.operand
            if isinstance(operand.type, ty.ScalarType) and operand.type.is_integer:
                return self._affine(operand)
        return None


def _flatten(items):
    for item in items:
        if isinstance(item, list):
            yield from _flatten(item)
        else:
            yield item
