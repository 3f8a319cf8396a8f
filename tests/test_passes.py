"""IR-to-IR passes (imagecl/passes/specialise.py), tested on the IR alone: no OpenCL is built
except where a test says so."""
from __future__ import annotations

import numpy as np
import pytest

import imagecl
from imagecl.errors import ConfigError
from imagecl.ir import nodes as ir
from imagecl.ir.consteval import const_int
from imagecl.ir.walk import walk
from imagecl.passes.footprint import analyse_accesses
from imagecl.passes.specialise import assignments, specialise

SHIFT = """
    #pragma imcl grid(a)
    #pragma imcl tunable(R: 1, 3)
    #pragma imcl tunable(MODE: 0, 1)
    float twice(float v) { return 2.0f * v; }
    void f(Image<float> a, Image<float> o) {
        const int r = R + 1;
        const int s = r * 2;
        o[idx][idy] = twice(a[idx + R][idy]) + (float)s;
    }"""

# a loop bound that a tunable decides through a `const` local
LOCAL_BOUND = """
    #pragma imcl grid(a)
    #pragma imcl tunable(R: 2, 4)
    void f(Image<float> a, Image<float> o) {
        const int r = R;
        float s = 0.0f;
        for (int i = 0; i < r; i++)
            s += a[idx + i][idy];
        o[idx][idy] = s;
    }"""


def _info(source: str):
    return imagecl.compile(source).info


def _names(info, name: str) -> list[ir.Name]:
    return [n for n in walk(info.unit.functions) if isinstance(n, ir.Name) and n.name == name]


def _decl(info, name: str) -> ir.VarDecl:
    return next(n for n in walk(info.unit.functions) if isinstance(n, ir.VarDecl) and n.name == name)


def test_specialise_gives_tunables_their_values_without_touching_the_input():
    info = _info(SHIFT)
    three = specialise(info, {"R": 3})
    one = specialise(info, {"R": 1, "MODE": 1})
    # each copy's names read its own constants; the analysed IR keeps its first values
    assert {const_int(n) for n in _names(three, "R")} == {3}
    assert {const_int(n) for n in _names(one, "R")} == {1}
    assert info.tunable_symbols["R"].value == 1 and info.tunable_symbols["MODE"].value == 0
    assert three.tunable_symbols["R"].value == 3 and three.tunable_symbols["MODE"].value == 0
    assert one.tunable_symbols["MODE"].value == 1
    # the copy is a new graph: no statement, name or symbol is shared with the input
    originals = {id(n) for n in walk(info.unit.functions)}
    assert not originals & {id(n) for n in walk(three.unit.functions)}
    assert all(n.symbol is not info.tunable_symbols["R"] for n in _names(three, "R"))


def test_specialise_evaluates_const_locals_that_read_tunables():
    info = _info(SHIFT)
    assert _decl(info, "r").symbol.tunable_dependent and _decl(info, "s").symbol.tunable_dependent
    three = specialise(info, {"R": 3})
    assert _decl(three, "r").symbol.value == 4 and _decl(three, "s").symbol.value == 8
    assert _decl(info, "r").symbol.value == 2 and _decl(info, "s").symbol.value == 4


def test_specialise_keeps_the_graph_consistent():
    info = _info(SHIFT)
    copy = specialise(info, {"R": 3})
    body_nodes = {id(n) for n in walk(copy.kernel.body)}
    # the arrays' accesses are the copy's own subscripts, the parameters its own
    assert {id(s) for s in copy.arrays["a"].reads} <= body_nodes
    assert copy.arrays["a"].param is copy.kernel.params[0]
    assert copy.kernel is copy.unit.functions[-1] and copy.helpers[0] is copy.unit.functions[0]
    call = next(n for n in walk(copy.kernel.body) if isinstance(n, ir.Call))
    assert call.function is copy.helpers[0]
    # a name's symbol is the one its declaration made
    r = _decl(copy, "r").symbol
    assert all(n.symbol is r for n in _names(copy, "r"))
    # types and positions are values, shared rather than copied
    assert copy.kernel.params[0].type is info.kernel.params[0].type
    assert copy.kernel.pos is info.kernel.pos


def test_analyses_of_two_assignments_side_by_side():
    info = _info(SHIFT)
    copies = [specialise(info, values) for values in assignments(info)]
    assert len(copies) == 4
    highs = sorted(analyse_accesses(c).footprints["a"].high for c in copies)
    assert highs == [(1, 0), (1, 0), (3, 0), (3, 0)]
    # the unspecialised analysis still sees the first values
    assert analyse_accesses(info).footprints["a"].high == (1, 0)


def test_specialise_rejects_unknown_tunables_and_values():
    info = _info(SHIFT)
    with pytest.raises(ConfigError, match="'Q' is not a tunable"):
        specialise(info, {"Q": 1})
    with pytest.raises(ConfigError, match=r"must be one of \[1, 3\], got 2"):
        specialise(info, {"R": 2})
    with pytest.raises(ConfigError, match="must be one of"):
        specialise(info, {"R": True})
    with pytest.raises(ConfigError, match="must be one of"):
        specialise(info, {"R": "3"})


def test_a_loop_bound_from_a_tunable_through_a_const_local_is_not_a_constant_trip_count():
    info = _info(LOCAL_BOUND)
    for values in assignments(info):
        analysis = analyse_accesses(specialise(info, values))
        assert not analysis.loops  # the trip count differs between assignments
        assert [d.parameter for d in analysis.dynamic_loops] == ["unroll_f_l7"]


def test_a_loop_bound_from_a_tunable_through_a_const_local_runs_every_iteration():
    """Once unrolled by 2 as if it had 2 iterations in every variant (the first value's): R = 4
    summed only two pixels. Builds and runs on PoCL; NumPy is the reference."""
    prog = imagecl.compile(LOCAL_BOUND)
    a = np.random.default_rng(3).random((6, 9), dtype=np.float32)
    for config in ({"R": 4, "unroll_f_l7": 2}, {"R": 2, "unroll_f_l7": 4}):
        out = prog(a=a, o=np.zeros_like(a), config=config)["o"]
        padded = np.pad(a, ((0, 0), (0, 4)))  # constant boundary: zeros outside
        expected = sum(padded[:, i:i + a.shape[1]] for i in range(config["R"]))
        np.testing.assert_allclose(out, expected, rtol=1e-6)
