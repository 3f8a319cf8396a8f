"""SciPy's `reflect` boundary mode and a fill value for `constant`, against scipy.ndimage on PoCL,
in the naive variant and in tuned ones (image memory with its samplers, local-memory tiles, the
interior fast path, coarsening), and in the exported C wrapper.

    imagecl             scipy.ndimage
    reflect             mode='reflect'   (d c b a | a b c d | d c b a)
    mirror              mode='mirror'    (d c b | a b c d | c b a)
    constant(v)         mode='constant', cval=v

Host convention: `a[idx + i][idy + j]` is `arr[y + j, x + i]`, so a weight w(i, j) is the
correlation kernel's K[j + 2, i + 2].
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

import imagecl
from imagecl.errors import CompileError

SHAPE = (23, 37)  # (height, width): odd, non-square, several 4x4 work-groups inside

ONE = """
#pragma imcl grid(a, o)
#pragma imcl boundary_cond(a:{mode})
void blur(Image<float> a, Image<float> o) {{
    float s = 0.0f;
    for (int i = -2; i <= 2; i++)
        for (int j = -2; j <= 2; j++)
            s += ((i + 2) * 5 + (j + 2) + 1) * a[idx + i][idy + j];
    o[idx][idy] = s;
}}
"""

# two images with different boundary modes: in image memory together they share one sampler and
# both boundary conditions are computed on the indices
TWO = """
#pragma imcl grid(a, b, o)
#pragma imcl boundary_cond(a:reflect, b:constant(2.5))
void two(Image<float> a, Image<float> b, Image<float> o) {
    float s = 0.0f;
    for (int i = -2; i <= 2; i++)
        for (int j = -1; j <= 1; j++)
            s += ((i + 2) * 3 + (j + 1) + 1) * a[idx + i][idy + j] - (i + 3) * b[idx + j][idy + i];
    o[idx][idy] = s;
}
"""

WEIGHTS = np.array([[(i + 2) * 5 + (j + 2) + 1 for i in range(-2, 3)] for j in range(-2, 3)], np.float64)

CONFIGS = [
    None,  # the naive variant
    {"image_a": 1},
    {"local_a": 1, "wg_x": 4, "wg_y": 2},
    {"interior": 1, "wg_x": 4, "wg_y": 4},
    {"interior": 1, "px_x": 2, "vector_x": 1, "wg_x": 2, "wg_y": 4},
    {"image_a": 1, "local_a": 1, "wg_x": 4, "wg_y": 4, "px_y": 2},
    {"image_a": 1, "interior": 1, "px_x": 2, "px_y": 2, "interleaved": 1, "wg_x": 2, "wg_y": 2},
    {"local_a": 1, "interior": 1, "wg_x": 8, "wg_y": 2, "unroll_blur_l6": 5, "unroll_blur_l7": 5},
]


@pytest.fixture(scope="module")
def img():
    return np.random.default_rng(7).uniform(-1, 1, SHAPE).astype(np.float32)


def close(got, ref):
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.abs(WEIGHTS).sum())


@pytest.mark.parametrize("mode, scipy_kwargs", [
    ("reflect", {"mode": "reflect"}),
    ("constant(2.5)", {"mode": "constant", "cval": 2.5}),
    ("constant(-0.75f)", {"mode": "constant", "cval": -0.75}),
    ("mirror", {"mode": "mirror"}),  # unchanged: a check that reflect is not mirror
])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "naive" if c is None else "-".join(f"{k}{v}" for k, v in c.items()))
def test_against_scipy(mode, scipy_kwargs, config, img):
    prog = imagecl.compile(ONE.format(mode=mode), f"blur_{mode}.icl")
    ref = ndimage.correlate(img.astype(np.float64), WEIGHTS, **scipy_kwargs)
    close(prog(img, config=config)["o"], ref)


@pytest.mark.parametrize("shape", [(1, 6), (2, 1), (3, 4)])
def test_reflect_on_images_smaller_than_the_footprint(shape):
    """Reads that fall more than one image width outside reflect again (period 2n)."""
    img = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 1
    prog = imagecl.compile(ONE.format(mode="reflect"), "blur.icl")
    ref = ndimage.correlate(img.astype(np.float64), WEIGHTS, mode="reflect")
    for config in (None, {"image_a": 1}, {"local_a": 1, "wg_x": 2, "wg_y": 2}):
        close(prog(img, config=config)["o"], ref)


@pytest.mark.parametrize("config", [None, {"image_a": 1, "image_b": 1}, {"image_b": 1},
                                    {"image_a": 1, "image_b": 1, "local_a": 1, "local_b": 1, "wg_x": 4, "wg_y": 4},
                                    {"image_a": 1, "image_b": 1, "interior": 1, "wg_x": 4, "wg_y": 4}])
def test_two_images_two_modes(config, img):
    b = np.random.default_rng(8).uniform(-1, 1, SHAPE).astype(np.float32)
    prog = imagecl.compile(TWO, "two.icl")
    wa = np.array([[(i + 2) * 3 + (j + 1) + 1 for i in range(-2, 3)] for j in range(-1, 2)], np.float64)
    # b[idx + j][idy + i] is b_arr[y + i, x + j]: its kernel is indexed [i + 2, j + 1]
    wb = np.array([[i + 3 for j in range(-1, 2)] for i in range(-2, 3)], np.float64)
    ref = (ndimage.correlate(img.astype(np.float64), wa, mode="reflect")
           - ndimage.correlate(b.astype(np.float64), wb, mode="constant", cval=2.5))
    got = prog(a=img, b=b, config=config)["o"]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)


def test_integer_fill_is_exact():
    src = """
#pragma imcl grid(a, o)
#pragma imcl boundary_cond(a:constant(-7))
void shift(Image<int> a, Image<int> o) {
    o[idx][idy] = a[idx - 1][idy] + 2 * a[idx][idy + 2];
}
"""
    img = np.random.default_rng(9).integers(-100, 100, SHAPE).astype(np.int32)
    ref = (ndimage.correlate(img, np.array([[1, 0, 0]]), mode="constant", cval=-7)
           + 2 * ndimage.correlate(img, np.array([[0], [0], [0], [0], [1]]), mode="constant", cval=-7))
    prog = imagecl.compile(src, "shift.icl")
    for config in (None, {"image_a": 1}, {"local_a": 1, "wg_x": 4, "wg_y": 4}):
        np.testing.assert_array_equal(prog(img, config=config)["o"], ref)


def test_generated_code_reads_the_fill_and_reflects():
    prog = imagecl.compile(TWO, "two.icl")
    naive = prog.opencl_source()
    assert "return (float)(2.5f);" in naive and "imcl_reflect(x, w)" in naive
    image = prog.opencl_source(config={"image_b": 1})
    # b alone in image memory: the CLAMP sampler would read 0 outside, so the fill is tested first
    assert "CLK_ADDRESS_CLAMP " in image and "return (float)(2.5f);" in image.split("imcl_img_read_b")[1]
    plain = imagecl.compile(ONE.format(mode="constant"), "blur.icl").opencl_source(config={"image_a": 1})
    assert "return (float)(0)" not in plain  # a zero fill keeps the sampler's border


@pytest.mark.parametrize("pragma, message", [
    ("a:constant(2.5)", None),
    ("a:reflect(1)", "boundary condition 'reflect' takes no value"),
    ("a:constant(x)", r"expected one number and '\)' after 'constant\('"),
    ("a:constant(1, 2)", r"expected one number and '\)' after 'constant\('"),
    ("a:constant:2.5", "expected ',' between pragma arguments, not ':'"),
    ("a:reflec", "unknown boundary condition 'reflec'.*did you mean 'reflect'"),
])
def test_pragma_errors_are_located(pragma, message):
    src = ONE.format(mode="x").replace("a:x", pragma)
    if message is None:
        imagecl.compile(src, "blur.icl")
        return
    with pytest.raises(CompileError, match=message) as info:
        imagecl.compile(src, "blur.icl")
    assert str(info.value).startswith("blur.icl:3:")


def test_integer_images_take_integer_fills():
    src = ONE.format(mode="x").replace("Image<float> a", "Image<uchar> a")
    with pytest.raises(CompileError, match=r"the fill value 2.5 of 'a' must be an integer: its pixels are uchar"):
        imagecl.compile(src.replace("a:x", "a:constant(2.5)"), "blur.icl")
    with pytest.raises(CompileError, match=r"the fill value 256 of 'a' is outside uchar's range \[0, 255\]"):
        imagecl.compile(src.replace("a:x", "a:constant(256)"), "blur.icl")
    imagecl.compile(src.replace("a:x", "a:constant(255)"), "blur.icl")


def test_real_numbers_and_mode_arguments_stay_out_of_other_pragmas():
    base = ONE.format(mode="reflect")
    for extra, message in (("tunable(N: 1.5)", "expected a value after ':' in pragma 'tunable'"),
                           ("tunable(N: 1(2))", r"unexpected '\(' in pragma 'tunable'")):
        src = base.replace("#pragma imcl grid(a, o)", "#pragma imcl grid(a, o)\n#pragma imcl " + extra)
        with pytest.raises(CompileError, match=message):
            imagecl.compile(src, "blur.icl")


def test_exported_c_wrapper_reflects_and_fills(tmp_path, img):
    from test_export import build_and_run

    prog = imagecl.compile(TWO, "two.icl")
    b = np.random.default_rng(8).uniform(-1, 1, SHAPE).astype(np.float32)
    h, w = SHAPE
    img.tofile(tmp_path / "a.bin")
    b.tofile(tmp_path / "b.bin")
    config = {"image_a": 1, "image_b": 1, "local_a": 1, "wg_x": 4, "wg_y": 4}
    body = f"""float* a = (float*)slurp("a.bin", &size);
float* b = (float*)slurp("b.bin", &size);
float* o = (float*)calloc({h * w}, sizeof(float));
err = imcl_two_run(&k, a, {w}, {h}, b, {w}, {h}, o, {w}, {h});"""
    save = f"""FILE* f = fopen("o.bin", "wb"); fwrite(o, sizeof(float), {h * w}, f); fclose(f);"""
    build_and_run(tmp_path, prog, config, body, save)
    expected = prog(a=img, b=b, config=config)["o"]
    np.testing.assert_allclose(np.fromfile(tmp_path / "o.bin", np.float32).reshape(h, w), expected, rtol=1e-6,
                               atol=1e-6)


def test_reflect_in_3d_and_fill_in_vector_pixels():
    vol = np.random.default_rng(10).uniform(-1, 1, (5, 6, 7)).astype(np.float32)  # (depth, height, width)
    src3 = """
#pragma imcl grid(a, o)
#pragma imcl boundary_cond(a:reflect)
void f(Image<float> a, Image<float> o) {
    o[idx][idy][idz] = a[idx - 2][idy][idz] + 3.0f * a[idx][idy + 1][idz - 3];
}
"""
    k1, k2 = np.zeros((7, 7, 7)), np.zeros((7, 7, 7))
    k1[3, 3, 1] = 1.0  # arr[z, y, x - 2]
    k2[0, 4, 3] = 3.0  # arr[z - 3, y + 1, x]
    ref = ndimage.correlate(vol.astype(np.float64), k1 + k2, mode="reflect")
    prog = imagecl.compile(src3, "f3.icl")
    for config in (None, {"image_a": 1}, {"local_a": 1, "wg_x": 4, "wg_y": 2, "wg_z": 2}):
        np.testing.assert_allclose(prog(vol, config=config)["o"], ref, rtol=1e-5, atol=1e-5)

    rgba = np.random.default_rng(11).uniform(0, 1, (6, 9, 4)).astype(np.float32)
    src4 = """
#pragma imcl grid(a, o)
#pragma imcl boundary_cond(a:constant(0.5))
void g(Image<float4> a, Image<float4> o) {
    o[idx][idy] = a[idx + 1][idy] - a[idx][idy - 2];
}
"""
    padded = np.pad(rgba.astype(np.float64), ((2, 2), (2, 2), (0, 0)), constant_values=0.5)
    ref4 = padded[2:-2, 3:-1] - padded[0:-4, 2:-2]
    prog4 = imagecl.compile(src4, "g.icl")
    for config in (None, {"image_a": 1}, {"local_a": 1, "wg_x": 4, "wg_y": 2}):
        np.testing.assert_allclose(prog4(rgba, config=config)["o"], ref4, rtol=1e-6, atol=1e-6)
