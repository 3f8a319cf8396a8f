"""Unrolling: an IR-to-IR pass that repeats loop bodies, for a variant's unroll factors.

`unroll(info, analysis, {parameter: factor})` returns a new `ProgramInfo` whose functions have
the chosen loops unrolled; `info` is not changed (ir/rewrite.py shares what did not change).
Loops are named by their tuning parameter (passes/footprint.py: `unroll_<function>_l<line>`).

- A loop with a constant trip count (`LoopInfo`) becomes `factor` copies of its body, each a
  block that binds the loop variable to a constant offset, so indices into private arrays and
  tiles become constants. With factor = trip count the copies replace the loop; otherwise a
  counter loop `imcl_u<line>_<column>` steps over them.
- A loop with a data-dependent trip count (`DynamicLoop`) keeps its head and runs `factor`
  copies of its body per pass, with the loop's exit test (after the step, for a `for`)
  between them: each copy is one original iteration and the test between copies is the one
  the original loop performs before its next iteration, so it is equivalent for every trip
  count. A `break` in any copy leaves the loop, as before; a `continue` goes to the loop's own
  step and test and then to the first copy, which is the same body, so it starts the next
  iteration exactly as the original `continue` does.
"""
from __future__ import annotations

from typing import Mapping, Optional

from ..ir import nodes as ir
from ..ir import types as ty
from ..ir.rewrite import rewrite_functions
from .footprint import AccessAnalysis, DynamicLoop, LoopInfo
from .semantic import ProgramInfo


def unroll(info: ProgramInfo, analysis: AccessAnalysis, factors: Mapping[str, int]) -> ProgramInfo:
    """`info` with each loop named in `factors` unrolled by its factor (1: left alone).
    `analysis` is `info`'s access analysis, which knows the loops."""
    chosen: dict[int, tuple[object, int]] = {}
    static = {loop.parameter: loop for loop in analysis.loops if loop.unrollable}
    dynamic = {loop.parameter: loop for loop in analysis.dynamic_loops}
    for parameter, factor in factors.items():
        loop = dynamic.get(parameter) or static.get(parameter)
        if loop is None:
            raise ValueError(f"no loop is unrolled by the parameter '{parameter}'")
        if factor > 1:
            chosen[id(loop.node)] = (loop, int(factor))
    if not chosen:
        return info

    def replace(original: ir.Node, rebuilt: ir.Node) -> Optional[ir.Node]:
        found = chosen.get(id(original))
        if found is None:
            return None
        loop, factor = found
        if isinstance(loop, DynamicLoop):
            return _unrolled_dynamic(rebuilt, factor)
        return _unrolled(rebuilt, loop, factor)

    return rewrite_functions(info, replace)


def _int(value: int) -> ir.IntLit:
    lit = ir.IntLit(ir.NOWHERE, value)
    lit.type = ty.INT
    return lit


def _binary(op: str, left: ir.Expr, right: ir.Expr) -> ir.Binary:
    out = ir.Binary(ir.NOWHERE, op, left, right)
    out.type = ty.INT
    return out


def _body(loop: ir.Stmt) -> list[ir.Stmt]:
    return loop.body.body if isinstance(loop.body, ir.Block) else [loop.body]


def _unrolled(loop: ir.For, info: LoopInfo, factor: int) -> ir.Stmt:
    var = info.var
    note = ir.Comment(loop.pos, f"loop over '{var.name}' unrolled by {factor} (of {info.trip_count} iterations)")
    full = factor == info.trip_count
    counter = ir.Symbol(f"imcl_u{loop.pos.line}_{loop.pos.column}", ty.INT, "local", loop.pos)

    def counter_name() -> ir.Name:
        name = ir.Name(loop.pos, counter.name)
        name.type, name.symbol = ty.INT, counter
        return name

    copies: list[ir.Stmt] = []
    for k in range(factor):
        if full:
            value: ir.Expr = _int(info.start + k * info.step)
        else:
            offset: ir.Expr = _binary("+", counter_name(), _int(k)) if k else counter_name()
            if info.step != 1:
                value = _binary("+", _int(info.start), _binary("*", offset, _int(info.step)))
            elif info.start:
                value = _binary("+", _int(info.start), offset) if not k else \
                    _binary("+", _binary("+", _int(info.start), counter_name()), _int(k))
            else:
                value = offset
        binding = ir.VarDecl(loop.pos, var.name, var.type, value, is_const=True)
        binding.symbol = var
        copies.append(ir.Block(loop.pos, [binding] + _body(loop)))
    if full:
        return ir.Sequence(loop.pos, [note] + copies)
    init = ir.VarDecl(loop.pos, counter.name, ty.INT, _int(0))
    init.symbol = counter
    step = ir.Assign(loop.pos, "+=", counter_name(), _int(factor))
    step.type = ty.INT
    head = ir.For(loop.pos, init, _binary("<", counter_name(), _int(info.trip_count)), step,
                  ir.Block(loop.pos, copies))
    return ir.Sequence(loop.pos, [note, head])


def _unrolled_dynamic(loop: ir.Stmt, factor: int) -> ir.Stmt:
    between: list[ir.Stmt] = []
    if isinstance(loop, ir.For) and loop.step is not None:
        between.append(ir.ExprStmt(loop.pos, loop.step))
    if loop.cond is not None:
        between.append(ir.ExitUnless(loop.pos, loop.cond))
    body: list[ir.Stmt] = []
    for k in range(factor):
        if k:
            body.extend(between)
        body.append(ir.Block(loop.pos, _body(loop)))
    note = ir.Comment(loop.pos, f"unrolled by {factor}: the exit test runs between the copies (any trip count)")
    if isinstance(loop, ir.While):
        again: ir.Stmt = ir.While(loop.pos, loop.cond, ir.Block(loop.pos, body))
    elif isinstance(loop, ir.DoWhile):
        again = ir.DoWhile(loop.pos, ir.Block(loop.pos, body), loop.cond)
    else:
        again = ir.For(loop.pos, loop.init, loop.cond, loop.step, ir.Block(loop.pos, body))
    return ir.Sequence(loop.pos, [note, again])
