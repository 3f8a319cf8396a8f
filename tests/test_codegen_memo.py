"""Code generation reuses what many configurations share (codegen/variant.py's memo, the rewrite's
shared nodes, the emitter's printed statements) without changing a byte of any source."""
from __future__ import annotations

from pathlib import Path

import pytest

import imagecl
from imagecl.codegen.variant import generate
from imagecl.ir import nodes as ir
from imagecl.ir import types as ty
from imagecl.ir.rewrite import holds_subscript, rewrite
from imagecl.space import DeviceLimits

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CPU_LIKE = DeviceLimits(name="cpu-like", max_work_group_size=4096, max_work_item_sizes=(4096, 4096, 4096),
                        local_mem_size=256 * 1024, image_support=False, image2d_max=(0, 0), image3d_max=(0, 0, 0))


@pytest.mark.parametrize("example, limits", [("unsharp", DeviceLimits()), ("median_select", CPU_LIKE),
                                             ("bilateral3d", DeviceLimits())])
def test_a_shared_memo_gives_every_configuration_the_source_generated_alone(example, limits):
    """One memo across many configurations (as Program.source_of keeps it) gives each the same
    text as a fresh generation: a memo key that missed a field the passes read would hand one
    configuration another's placement, unrolling or fast path."""
    prog = imagecl.load(EXAMPLES / f"{example}.icl")
    space = prog.space_for_limits(limits)
    memo: dict = {}
    plans = [space.plan(space.complete(c)) for c in space.random(40, seed=3)]
    assert len({(p.unroll, p.image_mem, p.local_mem, p.interior, p.vector_x, p.tunables) for p in plans}) > 10
    for plan in plans:
        info, analysis = prog.specialised(dict(plan.tunables)), prog.analysis_for(dict(plan.tunables))
        assert generate(info, plan, ["x"], analysis, memo) == generate(info, plan, ["x"], analysis)
    # the same plans again (only the comment differs): every part now comes from the memo
    filled = dict(memo)
    for plan in plans:
        info, analysis = prog.specialised(dict(plan.tunables)), prog.analysis_for(dict(plan.tunables))
        assert generate(info, plan, ["y"], analysis, memo) == generate(info, plan, ["y"], analysis)
    assert memo.keys() == filled.keys() and all(memo[k] is filled[k] for k in memo)


def _name(text: str) -> ir.Name:
    out = ir.Name(ir.NOWHERE, text)
    out.type = ty.INT
    return out


def test_rewrite_rewrites_a_shared_node_once_and_keeps_sharing():
    shared = ir.ExprStmt(ir.NOWHERE, _name("a"))
    block = ir.Block(ir.NOWHERE, [shared, ir.Block(ir.NOWHERE, [shared])])
    seen = []

    def replace(original, rebuilt):
        if isinstance(original, ir.Name):
            seen.append(original)
            return _name("b")
        return None

    out = rewrite(block, replace)
    assert len(seen) == 1
    assert out.body[0] is out.body[1].body[0] and out.body[0] is not shared
    assert out.body[0].expr.name == "b" and shared.expr.name == "a"


def test_rewrite_does_not_visit_subtrees_that_descend_rejects():
    sub = ir.Subscript(ir.NOWHERE, _name("img"), [_name("i")])
    plain = ir.ExprStmt(ir.NOWHERE, _name("c"))
    block = ir.Block(ir.NOWHERE, [plain, ir.ExprStmt(ir.NOWHERE, sub)])
    visited = []
    out = rewrite(block, lambda original, rebuilt: visited.append(original), holds_subscript)
    assert out is block
    assert plain not in visited and plain.expr not in visited and sub in visited
    assert holds_subscript(block) and not holds_subscript(plain)


def test_holds_subscript_sees_array_initialisers_and_deep_nesting():
    init = ir.VarDecl(ir.NOWHERE, "t", ty.INT, [[_name("a")], [ir.Subscript(ir.NOWHERE, _name("b"), [_name("i")])]])
    assert holds_subscript(init)
    deep: ir.Stmt = ir.ExprStmt(ir.NOWHERE, ir.Subscript(ir.NOWHERE, _name("b"), [_name("i")]))
    for _ in range(5000):  # deeper than Python's recursion limit
        deep = ir.Block(ir.NOWHERE, [deep])
    assert holds_subscript(deep)
