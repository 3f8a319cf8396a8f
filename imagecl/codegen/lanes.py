"""The interior fast path's body as explicit vector code: one run of N points along x per call.

With `vector_x` = 2 the fast path calls `imcl_point_<kernel>_lanes` once per run of N = px_x
contiguous points, starting at `imcl_x0`. Values that vary along x (passes/lanes.py) are
OpenCL vectors of N lanes; the rest stay scalars, so a filter tap is read once and broadcast
into all N outputs. An image read at `idx + c` (c the same for every lane) from global or local
memory is one `vloadN` of N neighbouring pixels (no alignment needed); any other read that
varies (image memory, boundary handling, an index computed from idx) gathers its N lanes
one by one. The pixel written at the grid point is one `vstoreN`. With px_x above 16 a call
computes px_x / 16 runs of 16 side by side: every statement that involves varying values is
printed once per run (unroll-and-jam; control flow is the same in every run, since it does not
depend on idx), so the runs' sums are independent chains that the CPU overlaps, and a tap
read once serves all of them. LLVM-based OpenCL compilers
for CPUs (PoCL) emit these as packed SIMD instructions, which their work-group vectoriser does
not manage for the scalar per-point code (see benchmarks/pocl_vectorisation.py).
"""
from __future__ import annotations

import re
from typing import Optional

from ..ir import builtins as bi
from ..ir import nodes as ir
from ..ir import types as ty
from ..ir.walk import walk
from ..passes import memory as placement
from ..passes.lanes import Lanes
from .emitter import _PRIMARY, _UNARY, _PREC, AccessPlan, Emitter, narrow_order_type

CONTIGUOUS = (placement.DIRECT, placement.BUFFER, placement.TILE)  # plain arrays: a vload reads N neighbours
RUN_START = "imcl_x0"


class LaneEmitter(Emitter):
    """Prints the kernel body for N lanes; `lane` set: the scalar text of one lane. With `rows`
    above 1 (and `row_values`, passes/lanes.analyse_rows), a call computes that many grid rows
    from idy on, each with `runs` runs along x: every run of every row is one jammed copy."""

    def __init__(self, info, plan: AccessPlan, lanes: Lanes, n: int, runs: int = 1, rows: int = 1,
                 row_values: Optional[Lanes] = None) -> None:
        super().__init__(info, plan)
        if rows > 1 and row_values is None:
            raise ValueError("rows side by side need the analysis of what differs between rows")
        self.lanes = lanes
        self.rows_of = row_values
        self.n = n
        self.runs = runs
        self.rows = rows
        self.run = 0  # the copy being printed: of row run // runs, of run run % runs along x
        self.lane: Optional[int] = None

    @property
    def copies(self) -> int:
        return self.runs * self.rows

    @property
    def start(self) -> str:
        """The first point of the run being printed."""
        along_x = self.run % self.runs
        return RUN_START if along_x == 0 else f"({RUN_START} + {along_x * self.n})"

    def row_varies(self, e) -> bool:
        """Whether `e` differs between the rows of a call (always False with one row)."""
        return self.rows > 1 and self.rows_of.varies(e)

    def row_symbol(self, symbol) -> bool:
        return self.rows > 1 and self.rows_of.symbol_varies(symbol)

    def var(self, name: str) -> str:
        """A varying local's name in the run being printed (generated names start with imcl_)."""
        return self.c(name) if self.run == 0 else f"imcl_{self.run}_{self.c(name)}"

    def vector(self, t: ty.Type) -> str:
        return f"{t.c_name()}{self.n}"

    # ---- statements ---------------------------------------------------------------------
    def stmt(self, s: ir.Stmt, depth: int) -> list[str]:
        if self.copies == 1 or not self._per_run(s):
            return super().stmt(s, depth)
        if isinstance(s, ir.DeclGroup):  # its uniform declarations once, its varying ones per run
            return [line for d in s.decls for line in self.stmt(d, depth)]
        lines = []
        for run in range(self.copies):
            self.run = run
            lines += self._stmt(s, depth)  # not the printed-statement cache: the text depends on the run
        self.run = 0
        return lines

    def _per_run(self, s: ir.Stmt) -> bool:
        """A simple statement that declares, computes or stores varying values (along x, or
        between the rows of a call)."""
        if isinstance(s, ir.VarDecl):
            return self.lanes.symbol_varies(s.symbol) or self.row_symbol(s.symbol)
        if isinstance(s, ir.DeclGroup):
            return any(self.lanes.symbol_varies(d.symbol) or self.row_symbol(d.symbol) for d in s.decls)
        return isinstance(s, ir.ExprStmt) and any(self.lanes.varies(e) or self.row_varies(e)
                                                  for e in walk(s) if isinstance(e, ir.Expr))

    def decl(self, d: ir.VarDecl) -> str:
        along_x = self.lanes.symbol_varies(d.symbol)
        if not along_x and not self.row_symbol(d.symbol):
            return super().decl(d)
        # a vector where it varies along x, else a scalar of its own in each row
        const = "const " if d.is_const else ""
        text = f"{const}{self.vector(d.var_type) if along_x else d.var_type.c_name()} {self.var(d.name)}"
        if d.init is not None:
            text += " = " + (self.as_vector(d.init, d.var_type, 2) if along_x else self.assigned(d.init, d.var_type))
        return text

    def expr_stmt(self, e: ir.Expr, depth: int) -> list[str]:
        target = e.target if isinstance(e, ir.Assign) else None
        if isinstance(target, ir.Subscript) and target.base.symbol.kind == "image":
            # passes/lanes.py admits only `image[idx][...] = value` here
            array = self.info.arrays[target.base.name]
            lvalue = self.in_lane(0, lambda: self.write_target(array, target)[0])
            value = self.as_vector(e.value, target.type, 2)
            return [self.unit_indent * depth + f"vstore{self.n}({value}, 0, &{lvalue});"]
        return super().expr_stmt(e, depth)

    # ---- expressions --------------------------------------------------------------------
    def in_lane(self, lane: int, text):
        saved, self.lane = self.lane, lane
        try:
            return text()
        finally:
            self.lane = saved

    def as_vector(self, e: ir.Expr, t: ty.Type, min_prec: int) -> str:
        """`e` as a vector of N values of scalar type `t` (a uniform value is converted, and
        OpenCL C broadcasts it; a varying one of another type is converted per lane)."""
        if self.lane is not None or not self.lanes.varies(e):
            return self.convert(e, t, min_prec) if e.type != t else self.expr(e, min_prec)
        if e.type != t:
            return f"convert_{self.vector(t)}({self.expr(e, 2)})"
        return self.expr(e, min_prec)

    def _expr(self, e: ir.Expr) -> tuple[str, int]:
        if self.rows > 1 and isinstance(e, ir.Name) and not self.lanes.symbol_varies(e.symbol) \
                and self.row_symbol(e.symbol):
            row = self.run // self.runs
            if e.symbol.kind == "grid_index":  # idy
                return (self.c(e.name), _PRIMARY) if row == 0 else (f"({self.c(e.name)} + {row})", _PRIMARY)
            return self.var(e.name), _PRIMARY
        if self.lane is not None:
            if isinstance(e, ir.Name) and self.lanes.symbol_varies(e.symbol):
                if e.symbol.kind == "grid_index":
                    return f"({self.start} + {self.lane})", _PRIMARY
                return f"{self.var(e.name)}.s{self.lane:x}", _PRIMARY
            return super()._expr(e)
        if not self.lanes.varies(e):
            return super()._expr(e)
        t = e.type
        if isinstance(e, ir.Name):
            if e.symbol.kind == "grid_index":
                steps = ", ".join(str(i) for i in range(self.n))
                return f"({self.start} + (int{self.n})({steps}))", _PRIMARY
            return self.var(e.name), _PRIMARY
        if isinstance(e, ir.Unary):
            operand = self.as_vector(e.operand, t, _UNARY)
            sep = " " if operand[:1] in "+-" and e.op in "+-" else ""
            return f"{e.op}{sep}{operand}", _UNARY
        if isinstance(e, ir.Binary):
            prec = _PREC[e.op]
            if e.op in ("<<", ">>"):
                return f"{self.as_vector(e.left, t, prec)} {e.op} {self.as_vector(e.right, t, prec + 1)}", prec
            return f"{self.as_vector(e.left, t, prec)} {e.op} {self.as_vector(e.right, t, prec + 1)}", prec
        if isinstance(e, ir.Assign):
            target = self.lvalue(e.target)
            common = ty.arithmetic_result(e.target.type, e.value.type) if e.op != "=" else e.target.type
            if common == e.target.type or e.op in ("<<=", ">>="):
                return f"{target} {e.op} {self.as_vector(e.value, e.target.type, 2)}", 2
            # C computes `v op= x` in the operands' common type, then converts back to v's type
            op, prec = e.op[:-1], _PREC[e.op[:-1]]
            value = f"{self.as_vector(e.target, common, prec)} {op} {self.as_vector(e.value, common, prec + 1)}"
            return f"{target} = convert_{self.vector(e.target.type)}({value})", 2
        if isinstance(e, ir.Cast):
            if e.operand.type == e.target_type:
                return self._expr(e.operand)
            return f"convert_{self.vector(e.target_type)}({self.expr(e.operand, 2)})", _PRIMARY
        if isinstance(e, ir.Call):
            return self.lane_call(e), _PRIMARY
        if isinstance(e, ir.Subscript):
            return self.lane_read(e), _PRIMARY
        return super()._expr(e)  # IncDec: `v++` works on vectors as on scalars

    def lane_call(self, e: ir.Call) -> str:
        target = bi.convert_target(e.name)
        if target is not None:
            name = re.sub(r"^convert_([a-z]+)", lambda m: f"convert_{m.group(1)}{self.n}", e.name)
            return f"{name}({self.expr(e.args[0], 2)})"
        narrow = narrow_order_type(e)
        if narrow is not None:  # min/max in the arguments' narrow type, widened after (see emitter)
            args = [self.broadcast(a, narrow) for a in e.args]
            return f"convert_{self.vector(e.type)}({e.name}({', '.join(args)}))"
        builtin = bi.BUILTINS[e.name]
        name = e.name
        if builtin.kind == "abs":
            if ty.element_scalar(e.type).is_float:
                name = "fabs"
            return f"{name}({self.expr(e.args[0], 2)})"
        # every argument as a vector of the result's type: OpenCL's vector built-ins take no mixes
        args = [self.broadcast(a, e.type) for a in e.args]
        return f"{name}({', '.join(args)})"

    def broadcast(self, e: ir.Expr, t: ty.Type) -> str:
        if self.lanes.varies(e):
            return self.as_vector(e, t, 2)
        return f"({self.vector(t)})({self.convert(e, t, 2) if e.type != t else self.expr(e, 2)})"

    def lane_read(self, e: ir.Subscript) -> str:
        """A varying read: one vload of N neighbours, or N reads gathered into a vector."""
        if e.memory in CONTIGUOUS and self._unit_stride(e.indices[0]) \
                and not any(self.lanes.varies(i) for i in e.indices[1:]):
            first = self.in_lane(0, lambda: self.subscript_read(e))
            return f"vload{self.n}(0, &{first})"
        lanes = [self.in_lane(i, lambda: self.subscript_read(e)) for i in range(self.n)]
        return f"({self.vector(e.type)})({', '.join(lanes)})"

    def _unit_stride(self, x: ir.Expr) -> bool:
        """`idx + c` or `idx - c` (or `c + idx`) with c the same in every lane."""
        if isinstance(x, ir.Name):
            return x.symbol is not None and x.symbol.kind == "grid_index" and x.name == "idx"
        if isinstance(x, ir.Binary) and x.op == "+":
            return (self._unit_stride(x.left) and not self.lanes.varies(x.right)) or \
                (self._unit_stride(x.right) and not self.lanes.varies(x.left))
        if isinstance(x, ir.Binary) and x.op == "-":
            return self._unit_stride(x.left) and not self.lanes.varies(x.right)
        return False


LANES = 2  # the value of `vector_x` that selects this code
WIDEST = 16  # OpenCL's widest vector: px_x = 32 or 64 is 2 or 4 runs of 16
JAMMED_WIDTHS = (32, 64)


MAX_ROWS = 4  # grid rows one call computes side by side
MAX_COPIES = 8  # runs along x times rows: jammed copies of the body in one call


def runs_of(px_x: int) -> tuple[int, int]:
    """(vector width, runs per call) for px_x points per work-item."""
    n = min(px_x, WIDEST)
    return n, px_x // n


def rows_of(px_x: int, px_y: int, jammable: bool) -> int:
    """Grid rows one call computes side by side (a divisor of px_y): as many as MAX_ROWS and
    MAX_COPIES allow, so that rows share the loads of the image rows their footprints share and
    their sums are independent chains; 1 where the body cannot (passes/lanes.analyse_rows)."""
    if not jammable:
        return 1
    rows = 1
    while rows * 2 <= min(px_y, MAX_ROWS) and px_y % (rows * 2) == 0 and runs_of(px_x)[1] * rows * 2 <= MAX_COPIES:
        rows *= 2
    return rows


def lane_signature(params: list[str], values: list[str]) -> tuple[list[str], list[str]]:
    """The per-point function's parameters and arguments for a run: the run's start, not idx."""
    params = [f"const int {RUN_START}" if p == "const int idx" else p for p in params]
    values = [RUN_START if v == "idx" else v for v in values]
    return params, values


MAX_ASSIGNMENTS = 64  # assignments of the tunables checked one by one; beyond, the body as a whole


def lane_bodies(info, specialised=None) -> list[tuple[dict[str, int], Lanes]]:
    """Each assignment of the program's tunables whose kernel body can run as lanes, with the lane
    analysis of that body: the body specialised for the assignment (by `specialised(values)`
    where the caller keeps them, else passes/specialise.specialise), with the branches the
    tunables decide folded (passes/lanes.py says why not). [({}, ...)] for a program without
    tunables that can; [] where none can. Beyond MAX_ASSIGNMENTS, every assignment with the
    unspecialised body's analysis, or none, as that body can run as lanes or not."""
    from ..passes.lanes import NotVectorisable, analyse
    from ..passes.specialise import assignments, fold_decided_branches, specialise

    every = assignments(info)
    if len(every) > MAX_ASSIGNMENTS:
        try:
            whole = analyse(info)
        except NotVectorisable:
            return []
        return [(values, whole) for values in every]
    found = []
    for values in every:
        try:
            found.append((values, analyse(fold_decided_branches(specialised(values) if specialised
                                                                else specialise(info, values)))))
        except NotVectorisable:
            continue
    return found


def vectorisable(info, specialised=None) -> list[dict[str, int]]:
    """The assignments of lane_bodies: those whose kernel body can run as lanes."""
    return [values for values, _ in lane_bodies(info, specialised)]


def lane_values(bodies: list[tuple[dict[str, int], Lanes]]) -> int:
    """The most values that vary along x (passes/lanes: one vector each in the lane code) that one
    of `bodies` (lane_bodies) declares: how many vector registers a run of one row wants at once,
    at most. 0 for none."""
    return max((len(analysis.symbols) for _, analysis in bodies), default=0)
