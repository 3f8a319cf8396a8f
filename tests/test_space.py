"""Analyses (footprints, loops), the parameter space, its constraints, and the variants' code."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl.passes.footprint import analyse_accesses
from imagecl.space import DeviceLimits, build_space

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LIMITS = DeviceLimits(name="test device", max_work_group_size=256, max_work_item_sizes=(256, 256, 64),
                      local_mem_size=16 * 1024, max_constant_buffer_size=1024, max_constant_args=4)


def footprints(source: str):
    return analyse_accesses(imagecl.compile(source).info).footprints


# ---- footprint analysis ------------------------------------------------------------------------------


def test_footprint_through_loops_and_constants():
    fp = footprints("""
        #pragma imcl grid(a, o)
        void f(Image<float> a, Image<float> o) {
            const int R = 2;
            float s = 0.0f;
            for (int j = -R; j <= R; j++)
                for (int i = 0; i < 3; i++) {
                    int x = idx + i - 1;
                    s += a[x][idy + j] + a[idx + 4][idy];
                }
            o[idx][idy] = s;
        }""")["a"]
    assert fp.bounded and fp.moves_with_grid_point and fp.reused
    assert fp.low == (-1, -2) and fp.high == (4, 2)
    assert fp.halo_low == (1, 2) and fp.halo_high == (4, 2)
    assert (4, 0) in fp.offsets and (-1, -2) in fp.offsets and (3, 0) not in fp.offsets


def test_footprint_with_scaled_loop_variable():
    fp = footprints("""
        #pragma imcl grid(l, o)
        void f(Image<int> l, Image<int> r, Image<int> o) {
            int best = 0;
            for (int d = 0; d < 8; d++)
                best += r[idx - 2 * d][idy] + l[idx][idy];
            o[idx][idy] = best;
        }""")
    assert fp["r"].low == (-14, 0) and fp["r"].high == (0, 0) and fp["r"].reused
    assert fp["l"].low == (0, 0) and fp["l"].high == (0, 0) and not fp["l"].reused


@pytest.mark.parametrize("index", ["a[idx * 2][idy]", "a[idy][idx]", "a[idx][idy + (int)a[idx][idy]]",
                                   "a[idx + k][idy]", "a[0][idy]"])
def test_unbounded_or_non_moving_footprints(index):
    fp = footprints(f"""
        #pragma imcl grid(o)
        void f(Image<float> a, Image<float> o, int k) {{ o[idx][idy] = {index}; }}""")["a"]
    assert not fp.bounded and not fp.reused


def test_loops_trip_counts_and_unrollability():
    info = imagecl.compile("""
        #pragma imcl grid(o)
        void f(Image<int> o, int n) {
            int s = 0;
            for (int i = 0; i < 9; i++) s += i;            // 9 iterations, unrollable
            for (int i = 10; i > 0; i -= 3) s += i;        // 10, 7, 4, 1
            for (int i = 0; i <= 4; i++) { if (s > 3) break; s++; }   // has a break
            for (int i = 0; i < 6; i++) { i += 0; s++; }    // assigns its variable
            for (int i = 0; i < n; i++) s++;               // bound not constant
            o[idx][idy] = s;
        }""").info
    loops = analyse_accesses(info).loops
    assert [(l.trip_count, l.unrollable) for l in loops] == [(9, True), (4, True), (5, False), (6, False)]
    assert list(loops[1].values) == [10, 7, 4, 1]


# ---- the space --------------------------------------------------------------------------------------------


def test_convolution_space_parameters():
    prog = imagecl.load(EXAMPLES / "convolution.icl")
    space = prog.space_for_limits(LIMITS)
    kinds = {p.name: p.kind for p in space.parameters}
    assert {"wg_x", "wg_y", "px_x", "px_y", "interleaved", "image_input", "local_input", "constant_filter"} <= set(kinds)
    unroll = [p for p in space.parameters if p.kind == "unroll"]
    assert len(unroll) == 2 and all(p.values == [1, 5] for p in unroll)
    assert space.launch_only == ["wg_x", "wg_y"]
    # the paper's 131,072 (Table 1: 8^4 x image, local, interleaved, unroll x 2 loops, constant
    # filter) times image and local memory for the filter, a small read-only array
    assert {"image_filter", "local_filter"} <= set(kinds)
    assert {"interior", "vector_x"} <= set(kinds)  # the fast-path passes (codegen/interior.py)
    # ... and interior, vector_x (0, 1 or 2: vector code, codegen/lanes.py); the work-group sizes
    # hold one more value, the driver's choice (0)
    assert space.parameter("vector_x").values == [0, 1, 2]
    assert space.size == 9 ** 2 * 8 ** 2 * 2 ** 4 * 2 * 2 * 2 * 2 * 2 * 3
    assert 0 < space.count_valid() < space.size


def test_space_without_reuse_has_no_local_memory():
    space = imagecl.load(EXAMPLES / "threshold.icl").space_for_limits(LIMITS)
    assert not [p for p in space.parameters if p.kind == "local_mem"]
    assert [p.name for p in space.parameters if p.kind == "image_mem"] == ["image_input"]


def test_unroll_factors_are_divisors_and_full():
    prog = imagecl.compile("""
        #pragma imcl grid(o)
        void f(Image<int> o) { int s = 0; for (int i = 0; i < 12; i++) s += i; o[idx][idy] = s; }""")
    unroll = [p for p in prog.space_for_limits(LIMITS).parameters if p.kind == "unroll"]
    assert unroll[0].values == [1, 2, 3, 4, 6, 12]


def test_local_tile_bytes_are_one_formula_for_the_space_and_the_launch():
    """The 5x5 convolution's input tile: (wg * span + 4) per axis, 4-byte floats, where span is
    px blocked and 1 interleaved; the same bytes for the constraint (arrays of configurations)
    and for the launch (one variant)."""
    from imagecl.codegen.variant import VariantPlan, tile_bytes_at_launch
    from imagecl.space import tile_bytes

    prog = imagecl.load(EXAMPLES / "convolution.icl")
    space = prog.space_for_limits(LIMITS)
    for interleaved, expected in ((0, (16 * 2 + 4) * (8 * 4 + 4) * 4), (1, (16 + 4) * (8 + 4) * 4)):
        config = space.complete({"wg_x": 16, "wg_y": 8, "px_x": 2, "px_y": 4, "interleaved": interleaved,
                                 "local_input": 1})
        plan = VariantPlan.from_config(prog.info, config)
        analysis = prog.analysis_for(dict(plan.tunables))
        assert tile_bytes_at_launch(prog.info, plan, analysis, "input") == expected
        columns = [np.array([16, 16]), np.array([8, 8])], [np.array([2, 2]), np.array([4, 4])]
        assert tile_bytes(prog.info, analysis, "input", *columns, np.array([interleaved] * 2)).tolist() == \
            [expected, expected]


def test_loops_on_one_line_are_told_apart_by_their_column():
    prog = imagecl.compile("""
        #pragma imcl grid(o)
        void f(Image<int> o, int n) {
            int s = 0; for (int i = 0; i < 4; i++) s += i; for (int j = 0; j < 6; j++) s += j;
            while (s < n) { s += 3; } for (int k = 0; k < 2; k++) s += k;
            for (int m = 0; m < 3; m++) s += m;
            o[idx][idy] = s;
        }""")
    names = sorted(p.name for p in prog.space_for_limits(LIMITS).parameters if p.kind == "unroll")
    line4 = [n for n in names if n.startswith("unroll_f_l4c")]
    line5 = [n for n in names if n.startswith("unroll_f_l5c")]
    assert len(line4) == 2 and len(line5) == 2 and len(set(names)) == len(names)  # while and for on line 5
    assert "unroll_f_l6" in names  # alone on its line: no column


def test_device_limits_become_constraints():
    space = imagecl.load(EXAMPLES / "convolution.icl").space_for_limits(LIMITS)
    cols = space.enumerate()
    wg = cols["wg_x"] * cols["wg_y"]
    assert wg.max() <= 256
    tile = (cols["wg_x"] * np.where(cols["interleaved"] == 1, 1, cols["px_x"]) + 4) * (
        cols["wg_y"] * np.where(cols["interleaved"] == 1, 1, cols["px_y"]) + 4) * 4
    assert (tile[cols["local_input"] == 1] <= 16 * 1024).all()
    assert ((cols["interleaved"] == 0) | (cols["px_x"] * cols["px_y"] > 1)).all()
    # the filter (100 bytes) fits the 1024-byte constant memory
    assert set(cols["constant_filter"].tolist()) == {0, 1}


def test_no_image_support_removes_image_memory():
    limits = DeviceLimits(name="no images", image_support=False)
    space = imagecl.load(EXAMPLES / "sobel.icl").space_for_limits(limits)
    assert space.parameter("image_input").values == [0]


def test_image_size_limit_depends_on_the_problem():
    limits = DeviceLimits(name="small images", image2d_max=(64, 64))
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    small = prog.space_for_limits(limits, (32, 48))
    large = prog.space_for_limits(limits, (32, 100))
    assert small.complete({"image_input": 1})["image_input"] == 1
    with pytest.raises(imagecl.ConfigError, match="exceed the device's image size"):
        large.complete({"image_input": 1})


def test_forced_placement_pragmas_fix_the_parameter():
    prog = imagecl.compile("""
        #pragma imcl grid(a, o)
        #pragma imcl image_mem(a)
        #pragma imcl local_mem(a)
        void f(Image<float> a, Image<float> o) { o[idx][idy] = a[idx - 1][idy] + a[idx + 1][idy]; }""")
    space = prog.space_for_limits(LIMITS)
    assert space.parameter("image_a").values == [1] and space.parameter("local_a").values == [1]
    x = np.random.default_rng(1).random((5, 7), dtype=np.float32)
    p = np.pad(x, ((0, 0), (1, 1)))
    np.testing.assert_allclose(prog(a=x)["o"], p[:, :-2] + p[:, 2:], rtol=1e-6)


def test_forced_local_memory_needs_a_bounded_footprint():
    with pytest.raises(imagecl.CompileError, match="cannot be placed in local memory"):
        imagecl.compile("""
            #pragma imcl grid(o)
            #pragma imcl local_mem(a)
            void f(Image<float> a, Image<float> o) { o[idx][idy] = a[idx * 2][idy]; }""")


def test_random_is_distinct_valid_and_seeded():
    space = imagecl.load(EXAMPLES / "convolution.icl").space_for_limits(LIMITS)
    first = space.random(300, seed=5)
    assert len(first) == 300
    assert len({json.dumps(c, sort_keys=True) for c in first}) == 300
    for c in first[:50]:
        assert space.complete(c) == c
    assert space.random(300, seed=5) == first
    assert space.random(300, seed=6) != first


def test_random_returns_everything_from_a_tiny_space():
    prog = imagecl.compile("""
        #pragma imcl grid_size(4, 4)
        #pragma imcl tunable(T: 1, 2)
        void f(Image<int> o) { o[idx][idy] = T; }""")
    limits = DeviceLimits(name="tiny", max_work_group_size=1, max_work_item_sizes=(1, 1, 1))
    space = prog.space_for_limits(limits)
    configs = space.random(10_000, seed=0)
    assert len(configs) == space.count_valid() == len({json.dumps(c, sort_keys=True) for c in configs})


def test_enumerating_millions():
    space = imagecl.load(EXAMPLES / "bilateral3d.icl").space_for_limits(LIMITS)
    assert space.size > 1_000_000
    cols = space.enumerate()
    assert len(cols["wg_x"]) == space.count_valid()
    assert (cols["wg_x"] * cols["wg_y"] * cols["wg_z"] <= 256).all()


@pytest.mark.parametrize("config, fragment", [
    ({"wg_xx": 4}, "'wg_xx' is not a tuning parameter; did you mean 'wg_x'?"),
    ({"px_x": 3}, "'px_x' must be one of [1, 2, 4"),
    ({"px_x": "4"}, "needs an integer"),
    ({"wg_x": 128, "wg_y": 128}, "wg_x=128, wg_y=128"),
    ({"wg_x": 16, "wg_y": 16, "px_x": 8, "px_y": 8, "local_input": 1}, "local-memory tiles"),
    ([1, 2], "a configuration is a dict"),
])
def test_malformed_configurations_name_the_parameter(config, fragment):
    space = imagecl.load(EXAMPLES / "convolution.icl").space_for_limits(LIMITS)
    with pytest.raises(imagecl.ConfigError) as info:
        space.complete(config)
    assert fragment in str(info.value)


# ---- the variants' code -----------------------------------------------------------------------------------


def test_launch_only_parameters_do_not_change_the_source():
    prog = imagecl.load(EXAMPLES / "convolution.icl")
    base = {"px_x": 2, "local_input": 0, "image_input": 1, "wg_x": 8, "wg_y": 8}
    a = prog.source_of(prog.plan(base))
    b = prog.source_of(prog.plan(dict(base, wg_x=16, wg_y=4)))
    assert a == b
    assert a != prog.source_of(prog.plan(dict(base, px_x=4)))
    # a local-memory tile is sized at launch too, up to 256 work-items; above, the work-group
    # size is compiled in (NVIDIA caps a kernel without it at 256)
    tiled = dict(base, local_input=1)
    assert prog.source_of(prog.plan(tiled)) == prog.source_of(prog.plan(dict(tiled, wg_x=16, wg_y=4)))
    assert prog.source_of(prog.plan(tiled)) != prog.source_of(prog.plan(dict(tiled, wg_x=32, wg_y=16)))


def test_full_unrolling_removes_the_loop():
    prog = imagecl.compile("""
        #pragma imcl grid(a, o)
        void f(Image<int> a, Image<int> o) {
            int s = 0;
            for (int i = 0; i < 4; i++) s += a[idx][idy] * i;
            o[idx][idy] = s;
        }""")
    param = next(p.name for p in prog.space.parameters if p.kind == "unroll")
    full = prog.opencl_source({param: 4})
    partial = prog.opencl_source({param: 2})
    assert "for (int i" not in full and full.count("const int i = ") == 4
    assert "+= 2)" in partial and partial.count("const int i = ") == 2
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    for cfg in ({param: 1}, {param: 2}, {param: 4}):
        np.testing.assert_array_equal(prog(a=x, config=cfg)["o"], x * 6)


def test_variant_source_names_its_configuration():
    src = imagecl.load(EXAMPLES / "sobel.icl").opencl_source({"px_x": 2, "image_input": 1})
    assert "configuration:" in src and "px_x=2" in src and "image2d_t input" in src
    assert "tuned variant" in src.splitlines()[0]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "imagecl", *args], capture_output=True, text=True)


def test_cli_space_and_compile_with_config(tmp_path):
    result = _cli("space", str(EXAMPLES / "convolution.icl"), "--json", "--random", "3", "--seed", "1")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["size"] > data["valid"] > 0
    names = {p["name"] for p in data["parameters"]}
    assert {"wg_x", "local_input"} <= names and len(data["random"]) == 3
    text = _cli("space", str(EXAMPLES / "sobel.icl"))
    assert text.returncode == 0 and "launch only" in text.stdout
    out = tmp_path / "v.cl"
    ok = _cli("compile", str(EXAMPLES / "sobel.icl"), "--config", json.dumps(data["random"][0] if False else
                                                                              {"px_y": 4, "local_input": 1}),
              "-o", str(out))
    assert ok.returncode == 0, ok.stderr
    # a tile needs a work-group size: without one given, the space's tile default (not the driver's choice)
    assert "__local" in out.read_text() and "wg_x=16, wg_y=16" in out.read_text()
    bad = _cli("compile", str(EXAMPLES / "sobel.icl"), "--config", '{"px_y": 5}')
    assert bad.returncode == 1 and "'px_y' must be one of" in bad.stderr and "Traceback" not in bad.stderr
    size_mismatch = _cli("space", str(EXAMPLES / "sobel.icl"), "--size", "10x10x10")
    assert size_mismatch.returncode == 1 and "dimensions" in size_mismatch.stderr


def test_pocl_5_spaces_leave_out_the_variants_its_compiler_aborts_on():
    """PoCL 5.0 asserts (Kernel.cc:129) on the interior fast path with a local tile in the
    interleaved layout; on it those variants are not in the space, elsewhere they are."""
    import dataclasses

    prog = imagecl.load(Path(__file__).resolve().parent.parent / "examples" / "sobel.icl")
    # what the GPU host's PoCL reports (the version is only in the driver's)
    pocl5 = dataclasses.replace(LIMITS, version="OpenCL 3.0 PoCL HSTR: cpu-x86_64-pc-linux-gnu-skylake-avx512 "
                                                "(driver 5.0+debian)")
    assert pocl5.pocl_major() == 5 and LIMITS.pocl_major() is None
    assert dataclasses.replace(LIMITS, version="OpenCL 3.0 CUDA (driver 580.159.04)").pocl_major() is None
    aborting = {"interior": 1, "interleaved": 1, "local_input": 1, "px_x": 4, "wg_x": 8, "wg_y": 1}
    for limits, allowed in ((pocl5, False), (dataclasses.replace(LIMITS, version="OpenCL 3.0 PoCL HSTR: pthread (driver 3.1+debian)"), True),
                            (LIMITS, True)):
        assert _valid(prog.space_for_limits(limits, (64, 64)), aborting) == allowed, limits.version
    space = prog.space_for_limits(pocl5, (64, 64))
    for change in ({"interior": 0}, {"interleaved": 0}, {"local_input": 0}):  # each alone is fine
        assert _valid(space, {**aborting, **change})


def _valid(space, config) -> bool:
    from imagecl.errors import ConfigError

    try:
        space.complete(config)
    except ConfigError:
        return False
    return True
