"""Explicit vector code for the interior fast path (`vector_x` = 2, passes/lanes.py and codegen/lanes.py).

Numbers: a program that uses every kind of value the lane printer handles (loads along x,
gathers through boundary handling, conversions in compound assignments, idx as a value,
built-ins with scalar arguments, a branch on a parameter, a declaration of a varying and a
uniform variable) against NumPy, at an odd width, for every vector width and for 2 and 4 runs
of 16 per call. Structure: what the source of a run looks like, which programs are refused
and why. Machine code: PoCL builds the vector variant of a convolution into packed SIMD
instructions (x86 CPUs through PoCL only).
"""
from __future__ import annotations

import platform
import shutil

import numpy as np
import pytest

import imagecl
from imagecl.bench import machine_code
from imagecl.bench.peer_workloads import convolution_source
from imagecl.passes.lanes import NotVectorisable, analyse, analyse_rows

MIX = """
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:clamped, table:clamped)
void blend(Image<float> input, Image<uchar> labels, Image<float> table, Image<float> output, float gain, int flag) {
    int acc = 0;
    float s = 0.0f, g = gain;
    for (int i = -1; i <= 1; i++) {
        s += fabs(input[idx + i][idy - 1]) * g;
        acc += input[i + idx][idy + 1];
    }
    if (flag > 0) {
        s = s + min(s, 0.5f);
    }
    s += (float)(idx % 3) + sqrt((float)labels[idx][idy]) + table[idx / 2][idy];
    output[idx][idy] = s + acc;
}
"""


def mix_reference(a: dict) -> np.ndarray:
    """The program above in NumPy, float32 in the same order (inputs are exact in float32)."""
    inp = np.pad(a["input"], 1, mode="edge")
    h, w = a["input"].shape
    gain = np.float32(a["gain"])
    s = np.zeros((h, w), np.float32)
    acc = np.zeros((h, w), np.int64)
    for i in (-1, 0, 1):
        s = s + np.abs(inp[0:h, 1 + i:1 + i + w]) * gain
        acc = np.trunc(acc.astype(np.float32) + inp[2:h + 2, 1 + i:1 + i + w]).astype(np.int64)
    if a["flag"] > 0:
        s = s + np.minimum(s, np.float32(0.5))
    x = np.arange(w)
    table = a["table"][:, np.minimum(x // 2, w - 1)]
    s = s + ((x % 3).astype(np.float32) + np.sqrt(a["labels"].astype(np.float32)) + table)
    return s + acc.astype(np.float32)


@pytest.fixture(scope="module")
def mix_program():
    return imagecl.compile(MIX, filename="mix.icl")


@pytest.mark.parametrize("n", [2, 4, 8, 16, 32, 64])  # 32, 64: runs of 16 side by side
def test_lane_code_matches_numpy(mix_program, n):
    rng = np.random.default_rng(n)
    shape = (13, 211)  # 211: no multiple of any vector width
    args = {"input": rng.integers(-40, 40, shape).astype(np.float32) / 4,  # quarters: exact sums
            "labels": rng.integers(0, 256, shape, dtype=np.uint8),
            "table": rng.integers(-8, 8, shape).astype(np.float32), "gain": 0.5, "flag": 1}
    space = mix_program.space_for(problem_shape=shape)
    assert 2 in space.parameter("vector_x").values
    config = space.complete({"interior": 1, "vector_x": 2, "px_x": n, "px_y": 2, "wg_x": 1, "wg_y": 2})
    got = mix_program(**args, config=config)["output"]
    np.testing.assert_allclose(got, mix_reference(args), rtol=1e-6, atol=1e-5)
    off = mix_program(**dict(args, flag=0), config=config)["output"]
    np.testing.assert_allclose(off, mix_reference(dict(args, flag=0)), rtol=1e-6, atol=1e-5)


def test_lane_source_has_vector_loads_gathers_and_one_call(mix_program):
    text = mix_program.opencl_source({"interior": 1, "vector_x": 2, "px_x": 4, "wg_x": 4, "wg_y": 1})
    lanes = text[text.index("void imcl_point_blend_lanes("):text.index("__kernel")]
    assert "float4 s = 0.0f;" in lanes and "int4 acc = 0;" in lanes
    assert "vload4(0, &input[" in lanes and "vload4(0, &labels[" in lanes  # contiguous along x
    assert lanes.count("imcl_read_table(") == 4  # one boundary-handled read per lane, gathered
    assert "acc = convert_int4(convert_float4(acc) + vload4(" in lanes  # C's int += float
    assert "(imcl_x0 + (int4)(0, 1, 2, 3)) % 3" in lanes  # idx as a value
    assert "if (flag > 0)" in lanes  # a branch on a parameter stays scalar
    assert "vstore4(" in lanes and "&output[" in lanes
    kernel = text[text.index("__kernel"):]
    assert kernel.count("imcl_point_blend_lanes(") == 1 and "imcl_kx" not in kernel.split("if (imcl_inside)")[1] \
        .split("else")[0]  # one call per run, no per-point loop
    assert "% 4 == 0" not in kernel and "& 15) == 0" not in kernel  # vload/vstore need no alignment


def test_wide_runs_are_jammed_runs_of_16(mix_program):
    text = mix_program.opencl_source({"interior": 1, "vector_x": 2, "px_x": 64, "wg_x": 1, "wg_y": 1})
    lanes = text[text.index("void imcl_point_blend_lanes("):text.index("__kernel")]
    for run in (1, 2, 3):  # each run's own accumulators, next to the first run's statement
        assert f"float16 imcl_{run}_s = 0.0f;" in lanes and f"(imcl_x0 + {16 * run})" in lanes
    assert lanes.count("float g = gain;") == 1 and lanes.count("if (flag > 0)") == 1  # uniform: once
    assert "imcl_x0 = imcl_gx * 64;" in text


ROWS = """
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:clamped)
void rows(Image<float> input, Image<float> output, float gain) {
    float wy = (float)(idy % 5) * gain;
    int r = idy;
    r = r * 2 + 1;
    float s = 0.0f;
    for (int j = -1; j <= 1; j++)
        s += input[idx][idy + j] * wy + input[idx + 1][idy - j];
    output[idx][idy] = s + (float)r;
}
"""


def rows_reference(a: dict) -> np.ndarray:
    inp = np.pad(a["input"], 1, mode="edge")
    h, w = a["input"].shape
    y = np.arange(h)[:, None]
    wy = (y % 5).astype(np.float32) * np.float32(a["gain"])
    s = np.zeros((h, w), np.float32)
    for j in (-1, 0, 1):
        s = s + inp[1 + j:1 + j + h, 1:1 + w] * wy + inp[1 - j:1 - j + h, 2:2 + w]
    return s + (2 * y + 1).astype(np.float32)


@pytest.mark.parametrize("px_x,px_y,rows", [(8, 2, 2), (16, 4, 4), (16, 8, 4), (32, 4, 4), (64, 4, 2)])
def test_rows_side_by_side_match_numpy(px_x, px_y, rows):
    """One call of the lane function computes `rows` grid rows (at most 4, and at most 8 jammed
    copies with the runs along x): values that depend on idy get a copy per row, the loop over the
    work-item's rows steps by them, and the numbers are NumPy's."""
    prog = imagecl.compile(ROWS, filename="rows.icl")
    assert analyse_rows(prog.info) is not None
    config = {"interior": 1, "vector_x": 2, "px_x": px_x, "px_y": px_y, "wg_x": 1, "wg_y": 2}
    text = prog.opencl_source(config)
    lanes = text[text.index("void imcl_point_rows_lanes("):text.index("__kernel")]
    assert f"in each of {rows} rows from idy on" in text
    for row in range(1, rows):
        assert f"(idy + {row})" in lanes and f"imcl_{row * (px_x // min(px_x, 16))}_wy" in lanes
    step = f"idy = imcl_gy * {px_y} + imcl_ky * {rows};" if px_y > rows else f"idy = imcl_gy * {px_y};"
    assert step in text
    rng = np.random.default_rng(px_x + px_y)
    shape = (37, 211)
    args = {"input": rng.integers(-40, 40, shape).astype(np.float32) / 4, "gain": 0.5}
    space = prog.space_for(problem_shape=shape)
    got = prog(**args, config=space.complete(config))["output"]
    np.testing.assert_allclose(got, rows_reference(args), rtol=1e-6, atol=1e-5)


def test_row_dependent_control_flow_keeps_one_row_a_call():
    source = ROWS.replace("    float s = 0.0f;\n", "    float s = 0.0f;\n    if (idy % 2 == 0) s = 1.0f;\n")
    prog = imagecl.compile(source, filename="rows_branch.icl")
    assert analyse(prog.info) is not None and analyse_rows(prog.info) is None
    config = {"interior": 1, "vector_x": 2, "px_x": 16, "px_y": 4, "wg_x": 1, "wg_y": 2}
    text = prog.opencl_source(config)
    assert "rows from idy on" not in text and "imcl_ky < 4" in text
    rng = np.random.default_rng(7)
    shape = (37, 211)
    args = {"input": rng.integers(-40, 40, shape).astype(np.float32) / 4, "gain": 0.5}
    want = rows_reference(args) + (np.arange(shape[0])[:, None] % 2 == 0)
    got = prog(**args, config=prog.space_for(problem_shape=shape).complete(config))["output"]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("source,reason", [
    ("void f(Image<float> a, Image<float> b) { if (a[idx][idy] > 0.0f) b[idx][idy] = 1.0f; }", "condition"),
    ("void f(Image<float> a, Image<float> b) { b[idx][idy] = a[idx][idy] > 0.0f ? 1.0f : 0.0f; }", r"\?:"),
    ("void f(Image<float> a, Image<float> b) { float w[2]; w[0] = a[idx][idy]; b[idx][idy] = w[0]; }",
     "written inside the body"),
    ("void f(Image<float> a, Image<float> b) { b[idx][idy] = a[idx][idy]; b[idx][idy] += 1.0f; }", "read and written"),
    ("void f(Image<float> a, Image<float> b) { if (idy > 3) return; b[idx][idy] = a[idx][idy]; }", "returns"),
])
def test_bodies_that_branch_per_lane_are_refused(source, reason):
    prog = imagecl.compile("#pragma imcl grid(a, b)\n" + source, filename="f.icl")
    with pytest.raises(NotVectorisable, match=reason):
        analyse(prog.info)
    values = prog.space_for(problem_shape=(16, 16)).parameter("vector_x").values if \
        "vector_x" in prog.space_for(problem_shape=(16, 16)).names else []
    assert 2 not in values


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64") or shutil.which("objdump") is None,
                    reason="counts x86 instructions with objdump")
def test_pocl_builds_the_lane_code_into_packed_instructions():
    """The scalar fast path of a 9x9 convolution is all scalar float arithmetic in PoCL's object
    (its work-group vectoriser gives up); the lane code is packed, one instruction per tap."""
    source = convolution_source(4)
    unrolled = {"unroll_convolution9_l7": 9, "unroll_convolution9_l8": 9, "wg_x": 4, "wg_y": 1, "interior": 1}
    scalar = machine_code.pocl_instruction_mix(source, unrolled, shape=(32, 64))
    vector = machine_code.pocl_instruction_mix(source, {**unrolled, "vector_x": 2, "px_x": 8}, shape=(32, 64))
    assert scalar.packed == 0 and scalar.scalar >= 81
    assert vector.packed >= 81  # 81 taps, each one packed multiply-add (or multiply and add) for 8 lanes


# a tunable chooses between an arm that cannot run as lanes (a private array) and one that can
CHOICE = """
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:clamped)
#pragma imcl tunable(ALGORITHM: 0, 1)
void pick(Image<float> input, Image<float> output) {
    float result = 0.0f;
    if (ALGORITHM == 0) {
        float w[3];
        for (int i = -1; i <= 1; i++) { w[i + 1] = input[idx + i][idy]; }
        result = w[0] + w[1] + w[2];
    } else {
        result = input[idx - 1][idy] + input[idx][idy] + input[idx + 1][idy];
    }
    output[idx][idy] = result;
}
"""


def test_a_tunable_whose_arm_can_run_as_lanes_gets_vector_code_for_that_value_only():
    prog = imagecl.compile(CHOICE, filename="pick.icl")
    with pytest.raises(NotVectorisable, match="'w' is written inside the body"):
        analyse(prog.info)  # the body as a whole: both arms
    shape = (21, 83)
    space = prog.space_for(problem_shape=shape)
    assert 2 in space.parameter("vector_x").values
    sample = space.random(400, seed=3)
    vector = [c for c in sample if c["vector_x"] == 2]
    assert vector and {c["ALGORITHM"] for c in vector} == {1}
    assert {c["ALGORITHM"] for c in sample} == {0, 1}
    with pytest.raises(imagecl.ConfigError, match="ALGORITHM=1"):
        space.complete({"ALGORITHM": 0, "interior": 1, "vector_x": 2, "px_x": 16})
    config = space.complete({"ALGORITHM": 1, "interior": 1, "vector_x": 2, "px_x": 16, "wg_x": 1, "wg_y": 2})
    text = prog.opencl_source(config)
    lanes_function = text[text.index("void imcl_point_pick_lanes"):text.index("__kernel void pick")]
    assert "float16" in lanes_function and " w[" not in lanes_function  # the arm not taken is left out
    rng = np.random.default_rng(5)
    image = rng.random(shape, dtype=np.float32)
    padded = np.pad(image, ((0, 0), (1, 1)), mode="edge")
    want = padded[:, :-2] + padded[:, 1:-1] + padded[:, 2:]
    np.testing.assert_allclose(prog(input=image, config=config)["output"], want, rtol=1e-6)


def test_the_median_selection_network_runs_as_lanes_and_matches_scipy():
    """Peer workload median (ALGORITHM 3, min and max only) as vector code, against SciPy."""
    from scipy import ndimage

    from imagecl.bench.peer_workloads import median_source

    rng = np.random.default_rng(11)
    for radius, px in ((1, 32), (2, 16)):
        prog = imagecl.compile(median_source(radius), filename="median.icl")
        image = rng.integers(0, 256, (29, 101), dtype=np.uint8)
        space = prog.space_for(problem_shape=image.shape)
        assert {c["ALGORITHM"] for c in space.random(300, seed=1) if c["vector_x"] == 2} == {3}
        config = space.complete({"ALGORITHM": 3, "interior": 1, "vector_x": 2, "px_x": px, "px_y": 2,
                                 "wg_x": 1, "wg_y": 2})
        assert "uchar16" in prog.opencl_source(config)
        want = ndimage.median_filter(image, size=2 * radius + 1, mode="nearest")
        np.testing.assert_array_equal(prog(input=image, config=config)["output"], want)


NARROW = """
#pragma imcl grid(a, out)
#pragma imcl boundary_cond(a:clamped, b:clamped)
void narrow(Image<{t}> a, Image<{t}> b, Image<int> out) {{
    {t} lo = min(a[idx][idy], b[idx + 1][idy]);
    {t} hi = max(a[idx - 1][idy], b[idx][idy]);
    int mixed = max(a[idx][idy], 3);
    out[idx][idy] = (lo * 7 - hi) * 1000 + mixed + min(a[idx][idy], b[idx][idy]) - 1;
}}
"""


@pytest.mark.parametrize("t,dtype", [("uchar", np.uint8), ("char", np.int8), ("short", np.int16),
                                     ("ushort", np.uint16)])
def test_min_and_max_of_a_narrow_type_run_in_that_type(t, dtype):
    """min/max whose arguments share an integer type narrower than int are emitted in that type
    and widened (a quarter of the registers: the median's selection network), in scalar and in
    vector code, with C's values: those of the promoted call (negative chars, the int a mixed
    call promotes to, arithmetic on the result as int). Against NumPy, at an odd width."""
    prog = imagecl.compile(NARROW.format(t=t), filename="narrow.icl")
    info = np.iinfo(dtype)
    rng = np.random.default_rng(5)
    shape = (7, 53)
    a = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    b = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    a[0, :4], b[0, :4] = [info.min, info.max, 0, -1 if info.min < 0 else 1], [info.max, info.min, 0, 1]
    wide_a, wide_b = a.astype(np.int64), b.astype(np.int64)
    pad = lambda x: np.pad(x, ((0, 0), (1, 1)), mode="edge")  # noqa: E731 - clamped along x
    lo = np.minimum(wide_a, pad(wide_b)[:, 2:])
    hi = np.maximum(pad(wide_a)[:, :-2], wide_b)
    want = ((lo * 7 - hi) * 1000 + np.maximum(wide_a, 3) + np.minimum(wide_a, wide_b) - 1).astype(np.int32)
    space = prog.space_for(problem_shape=shape)
    for config in ("naive", space.complete({"interior": 1, "vector_x": 2, "px_x": 16, "px_y": 1, "wg_x": 1,
                                            "wg_y": 1})):
        text = prog.opencl_source(None if config == "naive" else config)
        assert f"((int)min(" in text or "convert_int16(min(" in text, text
        np.testing.assert_array_equal(prog(a=a, b=b, config=config)["out"], want, err_msg=str(config))
    vector = prog.opencl_source(space.complete({"interior": 1, "vector_x": 2, "px_x": 16, "px_y": 1, "wg_x": 1,
                                                "wg_y": 1}))
    lanes = vector[vector.index("void imcl_point_narrow_lanes("):vector.index("__kernel")]
    # the narrow calls take the loaded vectors as they are; the mixed one stays in int
    assert lanes.count(f"convert_int16(min(vload16(") == 2 and lanes.count("convert_int16(max(vload16(") == 1
    assert "max(convert_int16(vload16(" in lanes and f"convert_int16(min(convert_" not in lanes
