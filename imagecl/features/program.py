"""Features of a program for performance models, computed from the IR and its analyses.

Counts are per grid point: an operation inside a loop with a constant trip count counts once per
iteration (nested loops multiply), an operation in a loop whose trip count is not a compile-time
constant (`while`, `do`, a `for` with `break` or a run-time bound) counts once and the loop is
flagged, and both arms of an `if` or `?:` count (an upper bound: which arm runs depends on data).
Arithmetic inside subscripts (index arithmetic, which unrolling and addressing mostly fold away)
and the control of constant-trip-count loops (they are unrolled or cost a counter) are kept out of
the arithmetic counts; index arithmetic is counted apart as `index`. A vector operation counts
once per lane.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Optional

import numpy as np

from ..ir import nodes as ir
from ..ir import types as ty
from ..ir.consteval import const_int
from ..ir.walk import walk
from ..passes.footprint import AccessAnalysis, _flatten, _own_jumps, array_bytes, loop_pattern
from ..passes.semantic import BOUNDARY_MODES, ProgramInfo
from ..passes.specialise import specialise
from ..space import DeviceLimits, Space, build_space

# Operation kinds; the integer forms of add/mul/div are counted apart (address and fixed-point
# arithmetic run on other units than floating point on most devices).
OP_KINDS = ("add", "mul", "div", "int_add", "int_mul", "int_div", "transcendental", "compare", "logic",
            "bitwise", "select", "other", "index")

_TRANSCENDENTAL = frozenset(
    "sqrt rsqrt cbrt exp exp2 exp10 expm1 log log2 log10 log1p sin cos tan asin acos atan sinh cosh tanh "
    "asinh acosh atanh native_sqrt native_rsqrt native_exp native_log native_sin native_cos half_sqrt half_exp "
    "half_log erf erfc tgamma lgamma pow powr pown atan2 hypot native_powr".split())
_DIVISION = frozenset("fmod native_divide native_recip".split())
_ARITHMETIC = {"+": "add", "-": "add", "*": "mul", "/": "div", "%": "div"}
_COMPARE = frozenset(("<", ">", "<=", ">=", "==", "!="))
_LOGIC = frozenset(("&&", "||"))
_BITWISE = frozenset(("&", "|", "^", "<<", ">>"))
SPACE_KINDS = ("work_group", "coarsening", "layout", "image_mem", "local_mem", "constant_mem", "unroll",
               "fast_path", "tunable")


@dataclass
class BufferFeatures:
    """One image, fixed-size array or pointer parameter of the kernel."""

    name: str
    kind: str  # 'image', 'array' or 'pointer'
    element: str  # OpenCL type of one element ('float', 'uchar4', ...)
    element_bytes: int
    dims: int
    access: str  # 'read-only', 'write-only' or 'read-write'
    boundary: Optional[str]  # images only: constant, clamped, mirror, wrap
    in_grid: bool
    reads_per_point: int
    writes_per_point: int
    shape: Optional[list[int]] = None  # fixed-size arrays only
    bytes: Optional[int] = None  # fixed-size arrays only
    # images read at offsets from the grid point (None otherwise): the box of offsets, x first
    bounded: Optional[bool] = None
    footprint_low: Optional[list[int]] = None
    footprint_high: Optional[list[int]] = None
    halo_low: Optional[list[int]] = None
    halo_high: Optional[list[int]] = None
    footprint_points: Optional[int] = None  # distinct offsets read (the box's volume when not enumerated)
    reused: Optional[bool] = None  # neighbouring grid points read some of the same pixels


@dataclass
class LoopFeatures:
    function: str
    line: int
    keyword: str  # 'for', 'while', 'do'
    trip_count: Optional[int]  # None: not a compile-time constant (data-dependent or run-time bound)
    per_point: int  # how often the loop is entered per grid point (enclosing constant trip counts)


@dataclass
class PrivateArrayFeatures:
    function: str
    name: str
    element: str
    shape: list[int]
    bytes: int


@dataclass
class ProgramFeatures:
    name: str
    grid_dims: int
    buffers: list[BufferFeatures]
    scalars: int
    ops: dict[str, int]  # per grid point, by OP_KINDS
    branches: int  # `if` statements executed per grid point (both arms counted)
    loops: list[LoopFeatures]
    loop_iterations: int  # iterations of every loop per grid point (a data-dependent loop counts 1)
    private_arrays: list[PrivateArrayFeatures]
    tunables: dict[str, list[int]]
    space_parameters: dict[str, int]  # parameters of the tuning space by kind (SPACE_KINDS)
    space_size: int  # configurations before constraints (with OpenCL's minimum device limits)

    # ---- flat form -----------------------------------------------------------------------------------
    @staticmethod
    def names() -> list[str]:
        """The names of `to_vector`'s entries, the same for every program."""
        return list(_SUMMARY_NAMES)

    def summary(self) -> dict[str, float]:
        read_images = [b for b in self.buffers if b.kind == "image" and b.reads_per_point]
        images = [b for b in self.buffers if b.kind == "image"]
        others = [b for b in self.buffers if b.kind != "image"]
        bounded = [b for b in read_images if b.bounded]
        bytes_read = sum(b.reads_per_point * b.element_bytes for b in self.buffers)
        bytes_written = sum(b.writes_per_point * b.element_bytes for b in self.buffers)
        arithmetic = sum(v for k, v in self.ops.items() if k != "index")
        constant_trips = [lp.trip_count for lp in self.loops if lp.trip_count is not None]
        out: dict[str, float] = {
            "grid_dims": self.grid_dims,
            "images_read": len(read_images),
            "images_written": sum(1 for b in images if b.writes_per_point),
            "arrays": sum(1 for b in others if b.kind == "array"),
            "pointers": sum(1 for b in others if b.kind == "pointer"),
            "scalars": self.scalars,
            "image_reads_per_point": sum(b.reads_per_point for b in images),
            "image_writes_per_point": sum(b.writes_per_point for b in images),
            "array_reads_per_point": sum(b.reads_per_point for b in others),
            "array_writes_per_point": sum(b.writes_per_point for b in others),
            "bytes_read_per_point": bytes_read,
            "bytes_written_per_point": bytes_written,
            # each pixel of every image moved once: the traffic no cache or tile can avoid
            "compulsory_bytes_per_point": sum(b.element_bytes for b in images
                                              if b.reads_per_point or b.writes_per_point),
            "max_halo": max((h for b in bounded for h in (*b.halo_low, *b.halo_high)), default=0),
            "max_footprint_points": max((b.footprint_points for b in bounded), default=0),
            "footprint_points": sum(b.footprint_points for b in bounded),
            "unbounded_images": sum(1 for b in read_images if not b.bounded),
            "reused_images": sum(1 for b in read_images if b.reused),
            **{f"boundary_{m}": sum(1 for b in read_images if _feature_mode(b.boundary) == m)
               for m in BOUNDARY_MODES if m != "reflect"},
            "float_images": sum(1 for b in images if _is_float(b.element)),
            "max_element_bytes": max((b.element_bytes for b in images), default=0),
            **{f"ops_{k}": self.ops[k] for k in OP_KINDS},
            "ops_arithmetic": arithmetic,
            "arithmetic_intensity": arithmetic / max(bytes_read + bytes_written, 1),
            "branches": self.branches,
            "loops": len(self.loops),
            "data_dependent_loops": sum(1 for lp in self.loops if lp.trip_count is None),
            "max_trip_count": max(constant_trips, default=0),
            "loop_iterations": self.loop_iterations,
            "private_arrays": len(self.private_arrays),
            "private_array_bytes": sum(p.bytes for p in self.private_arrays),
            "fixed_array_bytes": sum(b.bytes or 0 for b in others),
            "tunables": len(self.tunables),
            **{f"space_{k}": self.space_parameters.get(k, 0) for k in SPACE_KINDS},
            "space_log2_size": math.log2(max(self.space_size, 1)),
        }
        return out

    def to_vector(self) -> np.ndarray:
        summary = self.summary()
        return np.array([float(summary[n]) for n in _SUMMARY_NAMES], dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["summary"] = self.summary()
        return data


def _is_float(element: str) -> bool:
    return element.startswith(("float", "double", "half"))


def _feature_mode(mode: Optional[str]) -> Optional[str]:
    # reflect counts as mirror (the same index arithmetic), so the feature columns stay those
    # that recorded data and trained models have
    return "mirror" if mode == "reflect" else mode


def program_features(info: ProgramInfo, analysis: AccessAnalysis, space: Optional[Space] = None,
                     tunables: Optional[Mapping[str, int]] = None) -> ProgramFeatures:
    """Features of the program `info` for one assignment of its tunables (`tunables`, default
    each one's first value) with that assignment's access analysis (footprints can depend on
    it) and, optionally, its tuning space (built with OpenCL's minimum device limits when not
    given, so the features do not depend on a device). A condition that the tunables decide
    (`if (ALGORITHM == 0)`) counts only the arm they take, as the compiler folds it."""
    specialised = specialise(info, tunables or {})
    counter = _Counter(specialised)
    counter.block(specialised.kernel.body, 1)
    if space is None:
        space = build_space(info, DeviceLimits())
    kinds: dict[str, int] = {}
    for p in space.parameters:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    loops = [counter.loops[id(n)] for n in counter.loop_order]
    return ProgramFeatures(
        name=info.kernel.name,
        grid_dims=info.grid_dims,
        buffers=[_buffer(info, analysis, name, counter) for name in info.arrays],
        scalars=len(info.scalars),
        ops=dict(counter.ops),
        branches=counter.branches,
        loops=loops,
        loop_iterations=counter.iterations,
        private_arrays=counter.private,
        tunables={k: list(v) for k, v in info.tunables.items()},
        space_parameters=kinds,
        space_size=space.size,
    )


def _buffer(info: ProgramInfo, analysis: AccessAnalysis, name: str, counter: "_Counter") -> BufferFeatures:
    array = info.arrays[name]
    lanes = array.element.width if isinstance(array.element, ty.VectorType) else 1
    out = BufferFeatures(
        name=name, kind=array.kind, element=array.element.c_name(),
        element_bytes=int(ty.element_scalar(array.element).dtype.itemsize) * lanes,
        dims=array.dims, access=array.access,
        boundary=array.boundary if array.kind == "image" else None, in_grid=array.in_grid,
        reads_per_point=counter.reads.get(name, 0), writes_per_point=counter.writes.get(name, 0),
        shape=list(array.shape) if array.shape else None, bytes=array_bytes(array))
    fp = analysis.footprints.get(name)
    if fp is not None:
        out.bounded = fp.bounded
        if fp.bounded:
            out.footprint_low, out.footprint_high = list(fp.low), list(fp.high)
            out.halo_low, out.halo_high = list(fp.halo_low), list(fp.halo_high)
            out.footprint_points = (len(fp.offsets) if fp.offsets is not None
                                    else math.prod(h - lo + 1 for lo, h in zip(fp.low, fp.high)))
            out.reused = fp.reused
        else:
            out.reused = False
    return out


def _lanes(t: Optional[ty.Type]) -> int:
    return t.width if isinstance(t, ty.VectorType) else 1


def _is_integer(t: Optional[ty.Type]) -> bool:
    return isinstance(t, (ty.ScalarType, ty.VectorType)) and ty.element_scalar(t).is_integer


class _Counter:
    """Walks the kernel (and, at each call, the helper called) with the number of times a
    statement runs per grid point."""

    def __init__(self, info: ProgramInfo) -> None:
        self.ops = {k: 0 for k in OP_KINDS}
        self.branches = 0
        self.iterations = 0
        self.reads: dict[str, int] = {}
        self.writes: dict[str, int] = {}
        self.loops: dict[int, LoopFeatures] = {}
        self.loop_order: list[ir.Node] = []
        self.private: list[PrivateArrayFeatures] = []
        self.private_seen: set[int] = set()
        self.function = info.kernel.name
        self.active: set[str] = set()  # helpers being walked (guards against recursion)
        self.read_ids = {id(s): n for n, a in info.arrays.items() for s in a.reads}
        self.write_ids = {id(s): n for n, a in info.arrays.items() for s in a.writes}

    # ---- statements ------------------------------------------------------------------------------
    def block(self, stmt: Optional[ir.Stmt], weight: int) -> None:
        if stmt is None:
            return
        if isinstance(stmt, ir.Block):
            for s in stmt.body:
                self.block(s, weight)
        elif isinstance(stmt, ir.VarDecl):
            self._decl(stmt, weight)
        elif isinstance(stmt, ir.DeclGroup):
            for d in stmt.decls:
                self._decl(d, weight)
        elif isinstance(stmt, ir.ExprStmt):
            self.expr(stmt.expr, weight)
        elif isinstance(stmt, ir.If):
            decided = const_int(stmt.cond)
            if decided is not None:  # constants and tunables: folded, one arm runs
                self.block(stmt.then if decided else stmt.other, weight)
                return
            self.branches += weight
            self.expr(stmt.cond, weight)
            self.block(stmt.then, weight)
            self.block(stmt.other, weight)
        elif isinstance(stmt, (ir.While, ir.DoWhile)):
            self._loop(stmt, None, weight)
            self.expr(stmt.cond, weight)
            self.block(stmt.body, weight)
        elif isinstance(stmt, ir.For):
            self._for(stmt, weight)
        elif isinstance(stmt, ir.Return) and stmt.value is not None:
            self.expr(stmt.value, weight)

    def _decl(self, decl: ir.VarDecl, weight: int) -> None:
        if isinstance(decl.var_type, ty.ArrayType) and id(decl) not in self.private_seen:
            self.private_seen.add(id(decl))
            element = decl.var_type.element
            size = math.prod(decl.var_type.shape) * int(ty.element_scalar(element).dtype.itemsize) * _lanes(element)
            self.private.append(PrivateArrayFeatures(self.function, decl.name, element.c_name(),
                                                     list(decl.var_type.shape), size))
        if isinstance(decl.init, list):
            for e in _flatten(decl.init):
                self.expr(e, weight)
        elif decl.init is not None:
            self.expr(decl.init, weight)

    def _loop(self, node: ir.Stmt, trip: Optional[int], weight: int) -> None:
        if id(node) not in self.loops:
            keyword = {ir.While: "while", ir.DoWhile: "do", ir.For: "for"}[type(node)]
            self.loops[id(node)] = LoopFeatures(self.function, node.pos.line, keyword, trip, 0)
            self.loop_order.append(node)
        self.loops[id(node)].per_point += weight
        self.iterations += weight * (trip if trip is not None else 1)

    def _for(self, stmt: ir.For, weight: int) -> None:
        trip = self._constant_trip(stmt)
        if trip is not None:
            # a constant trip count: the loop's control unrolls away
            self._loop(stmt, trip, weight)
            self.block(stmt.body, weight * trip)
            return
        self._loop(stmt, None, weight)
        self.block(stmt.init, weight)
        if stmt.cond is not None:
            self.expr(stmt.cond, weight)
        if stmt.step is not None:
            self.expr(stmt.step, weight)
        self.block(stmt.body, weight)

    def _constant_trip(self, stmt: ir.For) -> Optional[int]:
        """The loop's trip count when the compiler knows it: constant bounds (the tunables', at
        this assignment, included), no break or continue of its own, a counter the body does
        not assign. The tuning space asks more of a loop it unrolls (a bound no tunable
        changes, no counter passed to a helper); here the count only has to be exact."""
        pattern = loop_pattern(stmt, const_int)  # const_int sees the tunables' values in their scope
        if pattern is None or _own_jumps(stmt.body):
            return None
        var = pattern[0]
        for n in walk(stmt.body):
            target = n.target if isinstance(n, (ir.Assign, ir.IncDec)) else None
            while isinstance(target, ir.Member):
                target = target.base
            if isinstance(target, ir.Name) and target.symbol is var:
                return None
        return pattern[3]

    # ---- expressions -------------------------------------------------------------------------------
    def _count(self, kind: str, n: int, in_index: bool) -> None:
        self.ops["index" if in_index else kind] += n

    def _arith(self, op_kind: str, t: Optional[ty.Type], weight: int, in_index: bool) -> None:
        kind = f"int_{op_kind}" if _is_integer(t) and op_kind in ("add", "mul", "div") else op_kind
        self._count(kind, weight * _lanes(t), in_index)

    def expr(self, e: Optional[ir.Expr], weight: int, in_index: bool = False) -> None:
        if e is None:
            return
        if isinstance(e, ir.Binary):
            if const_int(e) is not None or all(isinstance(x, (ir.IntLit, ir.FloatLit)) for x in (e.left, e.right)):
                return  # folded by the compiler
            if e.op in _ARITHMETIC:
                self._arith(_ARITHMETIC[e.op], e.type, weight, in_index)
            elif e.op in _COMPARE:
                self._count("compare", weight * max(_lanes(e.left.type), _lanes(e.right.type)), in_index)
            elif e.op in _LOGIC:
                self._count("logic", weight, in_index)
            elif e.op in _BITWISE:
                self._count("bitwise", weight * _lanes(e.type), in_index)
            self.expr(e.left, weight, in_index)
            self.expr(e.right, weight, in_index)
        elif isinstance(e, ir.Unary):
            if e.op == "-" and not isinstance(e.operand, (ir.IntLit, ir.FloatLit)):  # -1.0f: a constant
                self._arith("add", e.type, weight, in_index)
            elif e.op == "!":
                self._count("logic", weight, in_index)
            elif e.op == "~":
                self._count("bitwise", weight * _lanes(e.type), in_index)
            self.expr(e.operand, weight, in_index)
        elif isinstance(e, ir.IncDec):
            self._arith("add", e.target.type, weight, in_index)
            self.expr(e.target, weight, in_index)
        elif isinstance(e, ir.Assign):
            op = e.op[:-1]
            if op in _ARITHMETIC:
                self._arith(_ARITHMETIC[op], e.target.type, weight, in_index)
            elif op in _BITWISE:
                self._count("bitwise", weight * _lanes(e.target.type), in_index)
            self.expr(e.target, weight, in_index)
            self.expr(e.value, weight, in_index)
        elif isinstance(e, ir.Ternary):
            decided = const_int(e.cond)
            if decided is not None:
                self.expr(e.then if decided else e.other, weight, in_index)
                return
            self._count("select", weight * _lanes(e.type), in_index)
            for part in (e.cond, e.then, e.other):
                self.expr(part, weight, in_index)
        elif isinstance(e, ir.Call):
            self._call(e, weight, in_index)
        elif isinstance(e, ir.Subscript):
            if id(e) in self.read_ids:
                self.reads[self.read_ids[id(e)]] = self.reads.get(self.read_ids[id(e)], 0) + weight
            if id(e) in self.write_ids:
                self.writes[self.write_ids[id(e)]] = self.writes.get(self.write_ids[id(e)], 0) + weight
            for index in e.indices:
                self.expr(index, weight, True)
        elif isinstance(e, ir.Member):
            self.expr(e.base, weight, in_index)
        elif isinstance(e, ir.Cast):
            self.expr(e.operand, weight, in_index)
        elif isinstance(e, ir.VectorLit):
            for part in e.elements:
                self.expr(part, weight, in_index)
        elif isinstance(e, ir.Comma):
            for part in e.exprs:
                self.expr(part, weight, in_index)

    def _call(self, e: ir.Call, weight: int, in_index: bool) -> None:
        for arg in e.args:
            self.expr(arg, weight, in_index)
        if e.function is not None:
            if e.function.name in self.active:
                return
            self.active.add(e.function.name)
            outer, self.function = self.function, e.function.name
            try:
                self._helper(e.function.body, weight, in_index)
            finally:
                self.function = outer
                self.active.discard(e.function.name)
            return
        lanes = _lanes(e.type) if e.type is not None else 1
        width = max((_lanes(a.type) for a in e.args), default=1)
        name = e.name
        if name in _TRANSCENDENTAL:
            self._count("transcendental", weight * lanes, in_index)
        elif name in _DIVISION:
            self._arith("div", e.type, weight, in_index)
        elif name in ("mad", "fma", "mad24"):
            self._arith("mul", e.type, weight, in_index)
            self._arith("add", e.type, weight, in_index)
        elif name == "mix":  # a + (b - a) * t
            self._arith("add", e.type, 2 * weight, in_index)
            self._arith("mul", e.type, weight, in_index)
        elif name in ("dot", "length", "fast_length", "distance", "normalize"):
            self._count("mul", weight * width, in_index)
            self._count("add", weight * (width - 1 + (width if name == "distance" else 0)), in_index)
            if name != "dot":
                self._count("transcendental", weight, in_index)
            if name == "normalize":
                self._count("div", weight * width, in_index)
        elif name == "cross":
            self._count("mul", weight * 6, in_index)
            self._count("add", weight * 3, in_index)
        elif name in ("mul24", "mul_hi"):
            self._arith("mul", e.type, weight, in_index)
        elif name == "select":
            self._count("select", weight * lanes, in_index)
        elif name in ("isnan", "isinf", "isfinite", "signbit"):
            self._count("compare", weight * width, in_index)
        else:  # min, max, clamp, abs, floor, conversions, ...: cheap single operations
            self._count("other", weight * lanes, in_index)

    def _helper(self, body: ir.Block, weight: int, in_index: bool) -> None:
        if not in_index:
            self.block(body, weight)
            return
        # a helper called inside a subscript: all its arithmetic is index arithmetic
        saved = dict(self.ops)
        self.block(body, weight)
        moved = sum(self.ops[k] - saved[k] for k in OP_KINDS if k != "index")
        self.ops = {k: (saved[k] if k != "index" else self.ops[k] + moved) for k in OP_KINDS}


def _summary_names() -> tuple[str, ...]:
    """`summary()`'s keys, from an empty program: one list, written once."""
    empty = ProgramFeatures("", 0, [], 0, {k: 0 for k in OP_KINDS}, 0, [], 0, [], {}, {}, 1)
    return tuple(empty.summary())


_SUMMARY_NAMES = _summary_names()
