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


# ---- unrolling (passes/unroll.py) ---------------------------------------------------------------------

from imagecl.codegen.emitter import AccessPlan, Emitter  # noqa: E402
from imagecl.passes.unroll import unroll  # noqa: E402

LOOPS = """
    #pragma imcl grid(a)
    void f(Image<float> a, Image<float> o) {
        float s = 0.0f;
        for (int i = 1; i < 9; i += 2) {
            int k = 0;
            while (k < i && a[idx][idy] > (float)k)
                k++;
            s += (float)k;
        }
        o[idx][idy] = s;
    }"""


def _loops(info, kind) -> list:
    return [n for n in walk(info.kernel.body) if isinstance(n, kind)]


def _text(info) -> str:
    return "\n".join(Emitter(info, AccessPlan(info)).block_lines(info.kernel.body, 1))


def test_full_unroll_binds_the_variable_to_each_constant_and_leaves_the_input_alone():
    info = _info(LOOPS)
    analysis = analyse_accesses(info)
    assert [loop.parameter for loop in analysis.loops] == ["unroll_f_l5"]
    before = _text(info)
    out = unroll(info, analysis, {"unroll_f_l5": 4})
    assert not _loops(out, ir.For) and len(_loops(info, ir.For)) == 1
    seq = next(n for n in walk(out.kernel.body) if isinstance(n, ir.Sequence))
    assert isinstance(seq.body[0], ir.Comment) and "unrolled by 4 (of 4 iterations)" in seq.body[0].text
    copies = seq.body[1:]
    assert [c.body[0].init.value for c in copies] == [1, 3, 5, 7]
    # each copy's binding declares the loop's own variable, which the body's names refer to
    var = analysis.loops[0].var
    assert all(c.body[0].symbol is var and c.body[0].is_const for c in copies)
    assert _text(info) == before  # the input prints as it did
    assert out.arrays is info.arrays and out.kernel.params is info.kernel.params


def test_partial_unroll_steps_a_counter_over_the_copies():
    info = _info(LOOPS)
    out = unroll(info, analyse_accesses(info), {"unroll_f_l5": 2})
    loop = _loops(out, ir.For)[0]
    text = _text(out)
    assert "for (int imcl_u5_9 = 0; imcl_u5_9 < 4; imcl_u5_9 += 2)" in text
    assert "const int i = 1 + imcl_u5_9 * 2;" in text and "const int i = 1 + (imcl_u5_9 + 1) * 2;" in text
    assert len(loop.body.body) == 2 and all(isinstance(c, ir.Block) for c in loop.body.body)


def test_dynamic_unroll_puts_the_exit_test_between_the_copies():
    info = _info(LOOPS)
    analysis = analyse_accesses(info)
    assert [d.parameter for d in analysis.dynamic_loops] == ["unroll_f_l7"]
    out = unroll(info, analysis, {"unroll_f_l7": 3})
    loop = _loops(out, ir.While)[0]
    kinds = [type(s).__name__ for s in loop.body.body]
    assert kinds == ["Block", "ExitUnless", "Block", "ExitUnless", "Block"]
    assert loop.body.body[1].cond is loop.cond
    assert "if (!(k < i && a[(idy) * imcl_a_w + (idx)] > (float)k))\n" in _text(out)
    # nested: the static loop around it unrolled too, each copy with the unrolled while
    both = unroll(info, analysis, {"unroll_f_l5": 4, "unroll_f_l7": 2})
    assert len(_loops(both, ir.While)) == 4 and len(_loops(both, ir.ExitUnless)) == 4
    assert unroll(info, analysis, {"unroll_f_l5": 1, "unroll_f_l7": 1}) is info


def test_unroll_rejects_a_parameter_that_names_no_loop():
    info = _info(LOOPS)
    with pytest.raises(ValueError, match="unroll_f_l99"):
        unroll(info, analyse_accesses(info), {"unroll_f_l99": 2})


def test_the_interior_fast_path_unrolls_data_dependent_loops_too():
    """Its per-point copy once ignored the factors of `while` loops. Built on PoCL; SciPy's
    median filter (mirror boundary, as the example's) is the reference."""
    from pathlib import Path

    from scipy.ndimage import median_filter

    prog = imagecl.load(Path(__file__).resolve().parent.parent / "examples" / "median.icl")
    config = {"interior": 1, "unroll_median_l24": 4, "wg_x": 8, "wg_y": 4}
    source = prog.opencl_source(config)
    inside = source[source.index("void imcl_point_median_inside("):]
    inside = inside[:inside.index("\n}\n")]
    assert "// unrolled by 4: the exit test runs between the copies" in inside
    x = np.random.default_rng(0).integers(0, 256, (37, 70), dtype=np.uint8)
    out = prog(input=x, config=config)["output"]
    np.testing.assert_array_equal(out, median_filter(x, size=5, mode="mirror"))


# ---- memory placement and the fast path's accesses (passes/memory.py) -----------------------------

from imagecl.codegen.variant import VariantPlan  # noqa: E402
from imagecl.passes import memory  # noqa: E402

PLACES = """
    #pragma imcl grid(a, o)
    void f(Image<float> a, Image<float> b, Image<float> o, float* p, float w[3]) {
        float s = a[idx][idy] + a[idx + 1][idy - 1] + b[idx][idy] + w[1] + p[idx];
        o[idx][idy] = s;
        o[idx + 1][idy] = s;
        p[idy] = s;
    }"""


def _accesses(info) -> dict:
    """(name, read or write, source column of the subscript) -> placement"""
    writes = {id(n.target) for n in walk(info.kernel.body) if isinstance(n, (ir.Assign, ir.IncDec))}
    return {(n.base.name, "write" if id(n) in writes else "read", n.pos.line, n.pos.column): n.memory
            for n in walk(info.kernel.body) if isinstance(n, ir.Subscript)}


def _placed(config: dict):
    info = _info(PLACES)
    plan = VariantPlan.from_config(info, config)
    return info, plan, memory.place_memory(info, plan)


def test_place_memory_annotates_every_access_for_the_plan():
    info, _, naive = _placed({})
    places = sorted(_accesses(naive).items(), key=lambda item: item[0][2:])  # in source order
    assert [(k[0], k[1], v) for k, v in places] == [
        ("a", "read", "buffer"), ("a", "read", "boundary"), ("b", "read", "boundary"), ("w", "read", "buffer"),
        ("p", "read", "guarded"), ("o", "write", "buffer"), ("o", "write", "guarded"), ("p", "write", "guarded")]
    assert all(v is None for v in _accesses(info).values())  # the input is not annotated
    _, _, placed = _placed({"local_a": 1, "image_b": 1, "local_w": 1})
    by_name = {(k[0], k[1]): v for k, v in _accesses(placed).items()}
    assert by_name[("a", "read")] == "tile" and by_name[("b", "read")] == "image" and by_name[("w", "read")] == "local"
    _, _, image_w = _placed({"image_w": 1})
    assert {v for k, v in _accesses(image_w).items() if k[0] == "w"} == {"image"}


def test_interior_drops_boundary_handling_only_for_images_read_at_bounded_offsets():
    info, plan, placed = _placed({"image_b": 1})
    fast = memory.interior(placed, plan, ["a"])
    places = {(k[0], k[1], v) for k, v in _accesses(fast).items()}
    # a: at the grid point stays a plain buffer read; the neighbour read loses its boundary function
    assert ("a", "read", "buffer") in places and ("a", "read", "direct") in places
    assert ("b", "read", "image") in places  # not in `inside_images`: keeps its boundary handling
    fast_b = memory.interior(placed, plan, ["a", "b"])
    assert ("b", "read", "image_direct") in {(k[0], k[1], v) for k, v in _accesses(fast_b).items()}
    assert {v for k, v in _accesses(fast_b).items() if k[:2] == ("o", "write")} == {"buffer", "guarded"}


def test_vectorise_reads_register_tiles_and_stages_outputs():
    info, plan, placed = _placed({"image_b": 1})
    runs = memory.vectorise(memory.interior(placed, plan, ["a", "b"]), tiles=["a"], stores=["o"])
    places = _accesses(runs)
    # every read of `a`, at the grid point or not, comes from the register tile
    assert {v for k, v in places.items() if k[0] == "a"} == {"register"}
    assert {v for k, v in places.items() if k[:2] == ("o", "write")} == {"staged"}
    assert {v for k, v in places.items() if k[0] == "b"} == {"image_direct"}
    assert {v for k, v in _accesses(placed).items() if k[:2] == ("o", "write")} == {"buffer", "guarded"}


def test_a_tiled_image_keeps_its_tile_in_the_fast_path():
    info, plan, placed = _placed({"local_a": 1})
    fast = memory.interior(placed, plan, ["a"])
    assert {v for k, v in _accesses(fast).items() if k[0] == "a"} == {"tile"}


# ---- the kernel frame (passes/frame.py, ir/frame.py, templates/kernel_body.cl.j2) --------------------

from imagecl.codegen.body import render_lines  # noqa: E402
from imagecl.ir import frame as fr  # noqa: E402
from imagecl.passes import frame as frame_passes  # noqa: E402


def _frame(px=(1, 1), interleaved=False):
    start = frame_passes.one_point_per_item(["imcl_a_w", "imcl_a_h"], "point(idx, idy);")
    return frame_passes.coarsen(start, px, interleaved)


def _render(frame) -> str:
    return render_lines("kernel_body.cl.j2", **frame.template_context())


def test_one_point_per_item_guards_the_grid_and_calls_the_point():
    f = _frame()
    assert f.simple and not f.coarse and not f.per_iteration
    assert _render(f) == ("    const int idx = get_global_id(0);\n    const int idy = get_global_id(1);\n"
                          "    if (idx >= imcl_a_w || idy >= imcl_a_h)\n        return;\n    point(idx, idy);")


def test_coarsen_blocked_and_interleaved():
    blocked = _frame((4, 2))
    assert [(a.px, a.span) for a in blocked.axes] == [(4, 4), (2, 2)]
    assert [a.axis for a in blocked.coarse] == ["y", "x"]  # outermost first
    text = _render(blocked)
    assert text.index("imcl_ky < 2") < text.index("imcl_kx < 4")
    assert "const int idx = imcl_gx * 4 + imcl_kx;" in text and "// 4 x 2 grid points per work-item, contiguous" in text
    interleaved = _frame((4, 1), interleaved=True)
    assert [(a.px, a.span) for a in interleaved.axes] == [(4, 1), (1, 1)] and interleaved.per_iteration
    assert "const int idx = imcl_gx + imcl_kx * get_global_size(0);" in _render(interleaved)
    with pytest.raises(ValueError):
        frame_passes.coarsen(_frame(), (2,), False)
    with pytest.raises(ValueError):
        frame_passes.coarsen(_frame(), (0, 1), False)
    assert _frame().axes[0].px == 1  # passes return new frames


def test_stage_local_loads_each_tile_before_the_points_and_per_iteration_when_interleaved():
    tile = fr.LocalTile("a", (fr.TileAxis(0, "imcl_a_ox", "imcl_a_tw", 1, 2), fr.TileAxis(1, "imcl_a_oy", "imcl_a_th", 0, 0)),
                        "imcl_ty * imcl_a_tw + imcl_tx", "READ(a)", "DIRECT(a)")
    staged = frame_passes.stage_local(_frame((2, 1)), [], [tile])
    assert not staged.simple
    text = _render(staged)
    assert "const int imcl_a_ox = get_group_id(0) * get_local_size(0) * 2 - 1;" in text
    assert "const int imcl_a_tw = get_local_size(0) * 2 + 2;" in text
    assert text.index("imcl_tile_a[imcl_ty * imcl_a_tw + imcl_tx] = READ(a);") < text.index("for (int imcl_kx")
    per_iteration = _render(frame_passes.stage_local(_frame((2, 1), interleaved=True), [], [tile]))
    assert per_iteration.index("for (int imcl_kx") < per_iteration.index("= READ(a);")
    assert "barrier(CLK_LOCAL_MEM_FENCE);  // the tile is reloaded in the next iteration" in per_iteration


def test_fast_path_runs_the_inside_copy_where_the_test_holds():
    f = frame_passes.fast_path(_frame((2, 1)), "inside(idx, idy);", ["imcl_hix <= w", "imcl_hiy <= h", "imcl_hix <= w"])
    assert f.conditions == ("imcl_hix <= w", "imcl_hiy <= h")
    text = _render(f)
    assert "const bool imcl_inside = imcl_hix <= w\n        && imcl_hiy <= h;" in text
    assert text.index("if (imcl_inside)") < text.index("inside(idx, idy);") < text.index("else") < \
        text.index("point(idx, idy);")
    with pytest.raises(ValueError):
        frame_passes.fast_path(_frame(), "inside();", [])


def test_vectorise_runs_needs_the_blocked_fast_path():
    with pytest.raises(ValueError):
        frame_passes.vectorise_runs(_frame((4, 1)), [], [])
    interleaved = frame_passes.fast_path(_frame((4, 1), interleaved=True), "inside();", ["c"])
    with pytest.raises(ValueError):
        frame_passes.vectorise_runs(interleaved, [], [])
    fast = frame_passes.fast_path(_frame((4, 2)), "inside();", ["c"])
    store = fr.StagedStore("o", "float", "o", "idy * imcl_o_w")
    runs = frame_passes.vectorise_runs(fast, [], [store])
    assert runs.vector.n == 4 and [a.axis for a in runs.vector.outer] == ["y"]
    text = _render(runs)
    assert "*(__global float4*)(o + idy * imcl_o_w + imcl_x0) = vload4(0, imcl_st_o);" in text
    assert "runs of 4 along x in vectors" in text and fast.vector is None
