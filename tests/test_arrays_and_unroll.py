"""Small read-only arrays in local and image memory, and partial unrolling of loops whose trip
count is data-dependent (the raycasting parameters of Table 1 in Falch & Elster 2017).

Every variant is checked against an independent NumPy/Python reference, each pass alone and
combined, with several work-group shapes and both coarsening layouts."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl.space import DeviceLimits
from test_paper_benchmarks import SHAPE_3D, raycasting_data, raycasting_reference

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# an NVIDIA H200 as its OpenCL driver reports it (local memory and work-group sizes from
# benchmarks/results/*H200*.json; image and constant limits as NVIDIA's driver reports them)
H200 = DeviceLimits(name="NVIDIA H200", max_work_group_size=1024, max_work_item_sizes=(1024, 1024, 64),
                    local_mem_size=48 * 1024, max_constant_buffer_size=64 * 1024, max_constant_args=9,
                    image_support=True, image2d_max=(32768, 32768), image3d_max=(16384, 16384, 16384))
SMALL = DeviceLimits(name="small device", max_work_group_size=256, max_work_item_sizes=(256, 256, 64),
                     local_mem_size=4 * 1024, max_constant_buffer_size=1024, max_constant_args=4,
                     image2d_max=(64, 64))


# ---- a program with while / for / do loops holding continue and break, int and uchar tables --------

LOOPS = """
#pragma imcl grid(a, o)
void loops(Image<int> a, Image<int> o, int ti[16], uchar tu[3][5], int m) {
    int v = a[idx][idy];
    int s = 0;
    int n = 0;
    while (n < 40) {
        n++;
        int k = (v + n) & 15;
        if (ti[k] % 3 == 0)
            continue;
        s += ti[k] + tu[k % 3][n % 5];
        if (s > 300 + (v & 63))
            break;
    }
    for (int i = 0; i < m; i++) {
        if (((v + i) & 3) == 1)
            continue;
        s += tu[i % 3][(v + i) % 5];
        if (s % 7 == 3)
            break;
    }
    int j = v & 7;
    do {
        j++;
        if (ti[j & 15] > 50)
            continue;
        s ^= ti[j & 15];
        int inner = 0;
        while (inner < j) {
            inner += 2;
            if (inner == 6)
                continue;
            s += inner;
            if (s > 5000)
                break;
        }
    } while (j < 12);
    o[idx][idy] = s * 1000 + n;
}
"""


def loops_reference(a, ti, tu, m):
    out = np.zeros_like(a)
    for y in range(a.shape[0]):
        for x in range(a.shape[1]):
            v = int(a[y, x])
            s = n = 0
            while n < 40:
                n += 1
                k = (v + n) & 15
                if ti[k] % 3 == 0:
                    continue
                s += int(ti[k]) + int(tu[k % 3][n % 5])
                if s > 300 + (v & 63):
                    break
            for i in range(m):
                if ((v + i) & 3) == 1:
                    continue
                s += int(tu[i % 3][(v + i) % 5])
                if s % 7 == 3:
                    break
            j = v & 7
            while True:
                j += 1
                if ti[j & 15] <= 50:
                    s ^= int(ti[j & 15])
                    inner = 0
                    while inner < j:
                        inner += 2
                        if inner == 6:
                            continue
                        s += inner
                        if s > 5000:
                            break
                if not j < 12:
                    break
            out[y, x] = s * 1000 + n
    return out


@pytest.fixture(scope="module")
def loops_case():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (11, 13)).astype(np.int32)
    ti = rng.integers(0, 101, 16).astype(np.int32)
    tu = rng.integers(0, 256, (3, 5)).astype(np.uint8)
    m = 9
    prog = imagecl.compile(LOOPS, "loops.icl")
    return prog, {"a": a, "ti": ti, "tu": tu, "m": m}, loops_reference(a, ti, tu, m)


def test_loops_reference_is_what_the_naive_variant_computes(loops_case):
    prog, args, ref = loops_case
    np.testing.assert_array_equal(prog(**args)["o"], ref)
    assert len(np.unique(ref)) > 20  # the breaks and continues are exercised differently per pixel


def test_loops_space_has_the_new_parameters(loops_case):
    prog, _, _ = loops_case
    space = prog.space_for_limits(H200)
    unroll = {p.name: p.values for p in space.parameters if p.kind == "unroll"}
    assert unroll == {f"unroll_loops_l{line}": [1, 2, 4, 8, 16] for line in (7, 16, 24, 30)}
    assert space.parameter("local_ti").values == [0, 1] and space.parameter("local_tu").values == [0, 1]
    assert space.parameter("image_ti").values == [0, 1] and space.parameter("image_tu").values == [0, 1]


@pytest.mark.parametrize("config", [
    {"local_ti": 1}, {"local_tu": 1}, {"image_ti": 1}, {"image_tu": 1},
    {"unroll_loops_l7": 2}, {"unroll_loops_l7": 16}, {"unroll_loops_l16": 4}, {"unroll_loops_l16": 16},
    {"unroll_loops_l24": 8}, {"unroll_loops_l30": 16},
    {"unroll_loops_l24": 4, "unroll_loops_l30": 4},  # nested: the inner loop unrolled in every copy
], ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_each_pass_alone_matches_the_reference(loops_case, config):
    prog, args, ref = loops_case
    np.testing.assert_array_equal(prog(**args, config=config)["o"], ref)


@pytest.mark.parametrize("shape", [
    {"wg_x": 1, "wg_y": 1},
    {"wg_x": 4, "wg_y": 2, "px_x": 2, "px_y": 1},
    {"wg_x": 2, "wg_y": 8, "px_x": 2, "px_y": 4, "interleaved": 1},
    {"wg_x": 16, "wg_y": 1, "px_y": 2},
], ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_all_passes_combined_with_every_layout(loops_case, shape):
    prog, args, ref = loops_case
    config = dict(shape, local_ti=1, local_tu=1, image_ti=1, image_tu=1, unroll_loops_l7=8,
                  unroll_loops_l16=2, unroll_loops_l24=4, unroll_loops_l30=2)
    np.testing.assert_array_equal(prog(**args, config=config)["o"], ref)
    constant = dict(shape, constant_ti=1, constant_tu=1, unroll_loops_l7=4)
    np.testing.assert_array_equal(prog(**args, config=constant)["o"], ref)


# ---- float, float2 and float4 tables ------------------------------------------------------------

FLOATS = """
#pragma imcl grid(a, o)
void floats(Image<float> a, Image<float4> o, float tf[32], float4 t4[8], float2 t2[4][4]) {
    float v = a[idx][idy];
    float4 acc = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
    int n = 0;
    while (acc.w < 2.0f) {
        int k = (int)(v * 31.0f);
        v = tf[k];
        n++;
        if (n > 50)
            break;
        if (k % 4 == 0)
            continue;
        acc += t4[k & 7];
        acc.x += t2[k & 3][n & 3].y;
    }
    o[idx][idy] = acc + (float4)((float)n, 0.0f, 0.0f, 0.0f);
}
"""


def floats_reference(a, tf, t4, t2):
    f32 = np.float32
    out = np.zeros(a.shape + (4,), np.float32)
    for y in range(a.shape[0]):
        for x in range(a.shape[1]):
            v = a[y, x]
            acc = np.zeros(4, np.float32)
            n = 0
            while acc[3] < f32(2.0):
                k = int(v * f32(31.0))
                v = tf[k]
                n += 1
                if n > 50:
                    break
                if k % 4 == 0:
                    continue
                acc = (acc + t4[k & 7]).astype(np.float32)
                acc[0] = acc[0] + t2[k & 3, n & 3, 1]
            out[y, x] = acc + np.array([n, 0, 0, 0], np.float32)
    return out


@pytest.fixture(scope="module")
def floats_case():
    rng = np.random.default_rng(4)
    a = rng.uniform(0, 1, (9, 14)).astype(np.float32)
    tf = rng.uniform(0, 1, 32).astype(np.float32)
    t4 = rng.uniform(0, 0.3, (8, 4)).astype(np.float32)
    t2 = rng.uniform(-1, 1, (4, 4, 2)).astype(np.float32)
    prog = imagecl.compile(FLOATS, "floats.icl")
    return prog, {"a": a, "tf": tf, "t4": t4, "t2": t2}, floats_reference(a, tf, t4, t2)


@pytest.mark.parametrize("config", [
    None, {"local_tf": 1, "local_t4": 1, "local_t2": 1}, {"image_tf": 1, "image_t4": 1},
    {"unroll_floats_l7": 16},
    {"wg_x": 2, "wg_y": 4, "px_x": 4, "interleaved": 1, "local_tf": 1, "image_tf": 1, "image_t4": 1,
     "local_t2": 1, "unroll_floats_l7": 4},
    {"wg_x": 8, "wg_y": 2, "constant_tf": 1, "constant_t4": 1, "local_t2": 1, "unroll_floats_l7": 8},
], ids=lambda c: "naive" if c is None else ",".join(f"{k}={v}" for k, v in c.items()))
def test_vector_tables_match_the_reference(floats_case, config):
    prog, args, ref = floats_case
    out = prog(**args, config=config)["o"]
    np.testing.assert_array_equal(out, ref)


def test_image_kinds_of_arrays(floats_case, loops_case):
    prog, _, _ = floats_case
    assert "image_t2" not in prog.space.names  # no portable two-channel image format (PoCL has no RG)
    src = prog.opencl_source({"image_t4": 1, "image_tf": 1})
    assert "image1d_t t4" in src and "read_imagef(img, i);" in src and "read_imagef(img, i).x" in src
    src = loops_case[0].opencl_source({"image_tu": 1, "image_ti": 1})
    assert "image2d_t tu" in src and "(uchar)read_imageui(img, (int2)(j, i)).x" in src
    assert "(int)read_imagei(img, i).x" in src


# ---- raycasting ------------------------------------------------------------------------------------


RAY_CONFIGS = [
    {"local_transfer": 1},
    {"image_transfer": 1},
    {"unroll_raycasting_l28": 2}, {"unroll_raycasting_l28": 16},
    {"local_transfer": 1, "image_transfer": 1},
    {"wg_x": 1, "wg_y": 1, "local_transfer": 1, "unroll_raycasting_l28": 8},
    {"wg_x": 8, "wg_y": 4, "px_x": 2, "px_y": 4, "interleaved": 1, "local_transfer": 1, "image_transfer": 1,
     "image_volume": 1, "unroll_raycasting_l28": 16},
    {"wg_x": 32, "wg_y": 2, "px_y": 2, "local_transfer": 1, "unroll_raycasting_l28": 4},
    {"wg_x": 4, "wg_y": 4, "constant_transfer": 1, "image_volume": 1, "unroll_raycasting_l28": 4},
]


@pytest.mark.parametrize("config", RAY_CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_raycasting_variants_match_numpy(config):
    prog = imagecl.load(EXAMPLES / "raycasting.icl")
    vol_shape, out_shape = (13,) + SHAPE_3D[1:], (29, 37)  # 13 samples: unroll 16 > the trip count
    volume, transfer = raycasting_data("variants", vol_shape)
    ref, steps = raycasting_reference(volume, transfer, out_shape)
    assert (steps < vol_shape[0]).any() and (steps == vol_shape[0]).any()
    out = prog(volume=volume, output=np.zeros(out_shape + (4,), np.uint8), transfer=transfer, config=config)
    np.testing.assert_array_equal(out["output"], ref)


def test_raycasting_space_is_the_papers():
    """Table 1: 8^4 work-group/coarsening values x interleaved x image(data) x image(transfer) x
    local(transfer) x constant(transfer) x 5 unroll factors = 655,360 configurations; and the
    driver's choice of work-group size (0) in each work-group axis: 9^2 x 8^2 x ... = 829,440."""
    prog = imagecl.load(EXAMPLES / "raycasting.icl")
    space = prog.space_for_limits(H200, (512, 512))
    assert space.size == 655_360 // 8 ** 2 * 9 ** 2 == 829_440
    assert space.parameter("unroll_raycasting_l28").values == [1, 2, 4, 8, 16]
    cols = space.enumerate()
    assert not ((cols["local_transfer"] == 1) & (cols["constant_transfer"] == 1)).any()
    assert not ((cols["image_transfer"] == 1) & (cols["constant_transfer"] == 1)).any()
    assert ((cols["local_transfer"] == 1) & (cols["image_transfer"] == 1)).any()
    # per work-group/coarsening point: 5 of the 8 placements of the transfer function, x 2 x 5
    powers = [2 ** i for i in range(8)]
    layouts = sum(1 for wx, wy, px, py, il in itertools.product(powers, powers, powers, powers, (0, 1))
                  if wx * wy <= 1024 and (il == 0 or px * py > 1))
    layouts += sum(1 for px, py, il in itertools.product(powers, powers, (0, 1)) if il == 0 or px * py > 1)
    assert space.count_valid() == len(cols["wg_x"]) == layouts * 5 * 2 * 5


# ---- space: limits and constraints ------------------------------------------------------------------


def test_array_local_memory_shares_the_limit_with_image_tiles():
    prog = imagecl.compile("""
        #pragma imcl grid(a, o)
        void f(Image<float> a, Image<float> o, float4 table[128]) {
            o[idx][idy] = a[idx - 1][idy] + a[idx + 1][idy] + table[idx & 127].x;
        }""")
    space = prog.space_for_limits(SMALL)  # 4 KiB of local memory; the table needs 2 KiB
    tile = {"wg_x": 16, "wg_y": 16, "local_a": 1}  # (16 + 2) * 16 * 4 = 1152 bytes
    assert space.complete(tile)["local_a"] == 1
    assert space.complete({**tile, "local_table": 1})["local_table"] == 1  # 1152 + 2048 fits
    big = {"wg_x": 16, "wg_y": 16, "px_y": 2, "local_a": 1}  # 2304 bytes: alone it fits
    assert space.complete(big)["local_a"] == 1
    with pytest.raises(imagecl.ConfigError, match="local-memory tiles.*and local-memory copies of 'table'"):
        space.complete({**big, "local_table": 1})  # 2304 + 2048 > 4096


def test_array_image_limits():
    prog = imagecl.compile("""
        #pragma imcl grid(o)
        void f(Image<float> o, float small[64], float wide[100], int grid2[8][70], double d[4], float3 t3[4],
               bool flags[4]) {
            o[idx][idy] = small[idx & 63] + wide[idy & 63] + (float)grid2[1][idx & 63] + (float)d[0]
                          + t3[0].x + (flags[idy & 3] ? 1.0f : 0.0f);
        }""")
    space = prog.space_for_limits(SMALL)  # images of at most 64 x 64
    assert space.parameter("image_small").values == [0, 1]
    assert space.parameter("image_wide").values == [0]  # 100 > 64 wide
    assert space.parameter("image_grid2").values == [0]  # 70 > 64 wide
    names = set(space.names)
    assert not {"image_d", "image_t3", "image_flags"} & names  # no image format holds them
    assert {"local_d", "local_t3", "local_flags"} <= names  # local memory holds any element
    no_images = prog.space_for_limits(DeviceLimits(name="no images", image_support=False))
    assert no_images.parameter("image_small").values == [0]


def test_forced_array_placements():
    prog = imagecl.compile("""
        #pragma imcl grid(o)
        #pragma imcl local_mem(t)
        #pragma imcl image_mem(u)
        void f(Image<int> o, int t[4], uchar4 u[4]) { o[idx][idy] = t[idx & 3] + (int)u[idy & 3].z; }""")
    space = prog.space_for_limits(H200)
    assert space.parameter("local_t").values == [1] and space.parameter("image_u").values == [1]
    t = np.array([5, 6, 7, 8], np.int32)
    u = np.arange(16, dtype=np.uint8).reshape(4, 4)
    out = prog(o=np.zeros((6, 5), np.int32), t=t, u=u)["o"]
    y, x = np.mgrid[0:6, 0:5]
    np.testing.assert_array_equal(out, t[x & 3] + u[y & 3, 2])


@pytest.mark.parametrize("source, fragment", [
    ("#pragma imcl image_mem(t)\nvoid f(Image<float> o, float3 t[4]) { o[idx][idy] = t[0].x; }",
     "cannot be placed in image memory"),
    ("#pragma imcl local_mem(p)\nvoid f(Image<float> o, float* p) { o[idx][idy] = p[0]; }",
     "'p' is not an image or a fixed-size array"),
])
def test_impossible_array_placements_are_errors(source, fragment):
    with pytest.raises(imagecl.CompileError, match=fragment):
        imagecl.compile("#pragma imcl grid(o)\n" + source)


def test_constant_trip_count_loops_keep_their_divisor_factors():
    prog = imagecl.compile("""
        #pragma imcl grid(o)
        void f(Image<int> o, int n) {
            int s = 0;
            for (int i = 0; i < 6; i++) s += i;                          // constant: divisors
            for (int i = 0; i < 6; i++) { if (s > n) break; s++; }       // break: data-dependent
            for (int i = 0; i < 1; i++) s++;                             // one iteration: nothing to tune
            o[idx][idy] = s;
        }""")
    unroll = {p.name: p.values for p in prog.space_for_limits(H200).parameters if p.kind == "unroll"}
    assert unroll == {"unroll_f_l5": [1, 2, 3, 6], "unroll_f_l6": [1, 2, 4, 8, 16]}
    for cfg in ({}, {"unroll_f_l5": 3, "unroll_f_l6": 4}, {"unroll_f_l6": 16}):
        for n in (0, 17, 19, 40):
            out = prog(o=np.zeros((2, 3), np.int32), n=n, config=cfg)["o"]
            s = 15
            for _ in range(6):
                if s > n:
                    break
                s += 1
            assert (out == s + 1).all(), (cfg, n)


def test_unrolled_source_tests_the_exit_between_copies():
    prog = imagecl.load(EXAMPLES / "raycasting.icl")
    src = prog.opencl_source({"unroll_raycasting_l28": 4})
    assert src.count("if (!(z < imcl_volume_d))") == 3 and src.count("float s = ") == 4
    for_loop = imagecl.compile("""
        #pragma imcl grid(o)
        void f(Image<int> o, int n) { int s = 0; for (int i = 0; i < n; i += 2) { s += i; } o[idx][idy] = s; }""")
    src = for_loop.opencl_source({"unroll_f_l3": 2})
    assert src.count("i += 2;") == 1 and "if (!(i < n))" in src


@pytest.mark.parametrize("config", [
    {"local_t": 1, "wg_x": 2, "wg_y": 2, "wg_z": 2},
    {"local_t": 1, "image_t": 1, "wg_x": 1, "wg_y": 4, "wg_z": 2, "px_z": 2, "interleaved": 1},
    {"local_t": 1, "wg_x": 4, "wg_y": 1, "wg_z": 1, "px_x": 2},
], ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_local_array_copy_in_a_3d_grid(config):
    """Every work-item of a 3-D work-group takes part in the copy (linear id over x, y, z)."""
    prog = imagecl.compile("""
        #pragma imcl grid(v, o)
        void f(Image<int> v, Image<int> o, int t[37]) { o[idx][idy][idz] = t[v[idx][idy][idz]]; }""")
    rng = np.random.default_rng(8)
    v = rng.integers(0, 37, (5, 6, 7)).astype(np.int32)
    t = rng.integers(-1000, 1000, 37).astype(np.int32)
    np.testing.assert_array_equal(prog(v=v, t=t, config=config)["o"], t[v])


# Names that are OpenCL C words are renamed in the generated code (ir/names.py); every pass that
# writes a parameter's name into the source must use the renamed one.
RENAMED_NAMES_SOURCE = """\
#pragma imcl grid(global, out)
#pragma imcl boundary_cond(global:mirror)
void conv(Image<float> global, Image<float> out, float local[3][3]) {
    float sum = 0.0f;
    for (int i = -1; i < 2; i++) {
        for (int j = -1; j < 2; j++) {
            sum += global[idx + i][idy + j] * local[i + 1][j + 1];
        }
    }
    out[idx][idy] = sum;
}
"""


@pytest.mark.parametrize("config", [
    {"local_local": 1, "image_local": 1, "interior": 1, "wg_x": 4, "wg_y": 2},
    {"local_local": 1, "local_global": 1, "interior": 1, "px_x": 4, "vector_x": 0, "wg_x": 2, "wg_y": 2},
    {"image_local": 1, "image_global": 1, "interior": 1, "px_x": 2, "interleaved": 1, "wg_x": 4, "wg_y": 4},
    {"constant_local": 1, "interior": 1, "vector_x": 1, "px_x": 4, "wg_x": 4, "wg_y": 2},
], ids=["local+image array", "local tile+array", "images", "vector"])
def test_passes_use_the_renamed_names(config):
    from scipy import ndimage
    prog = imagecl.compile(RENAMED_NAMES_SOURCE, filename="renamed.icl")
    rng = np.random.default_rng(3)
    image = rng.random((29, 64), dtype=np.float32)
    weights = rng.random((3, 3), dtype=np.float32)
    # out(x, y) = sum_ij in(x+i, y+j) * w[i+1][j+1]: a correlation with w indexed [x][y]
    expected = ndimage.correlate(image, weights.T, mode="mirror")
    got = prog(**{"global": image, "local": weights}, config=config)["out"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
