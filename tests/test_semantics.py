"""Semantic analysis, code generation and runtime behaviour, each against NumPy."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl.runtime import launcher
from imagecl.runtime.devices import select_device

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RNG = np.random.default_rng(7)


def rand(shape, dtype=np.float32):
    if np.dtype(dtype).kind == "f":
        return RNG.uniform(-2, 2, shape).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)


# ---- classification and analysis ----------------------------------------------------------------


def test_read_write_classification():
    prog = imagecl.compile("""
        #pragma imcl grid(a, b, acc)
        void f(Image<float> a, Image<float> b, Image<float> acc, float* lut, int* hist) {
            float v = a[idx][idy];
            b[idx][idy] = v * lut[0];
            acc[idx][idy] += v;
            hist[idx] = 1;
        }""")
    arrays = prog.info.arrays
    assert arrays["a"].access == "read-only"
    assert arrays["b"].access == "write-only"
    assert arrays["acc"].access == "read-write"
    assert arrays["lut"].access == "read-only"
    assert arrays["hist"].access == "write-only"
    assert prog.outputs == ["b", "acc", "hist"]
    assert arrays["a"].dims == 2 and prog.info.grid_dims == 2


def test_three_d_dimensionality_and_grid():
    prog = imagecl.compile("""
        #pragma imcl grid(v, out)
        void f(Image<uchar> v, Image<uchar> out) { out[idx][idy][idz] = v[idx][idy][idz] / 2; }""")
    assert prog.info.grid_dims == 3
    vol = rand((5, 4, 3), np.uint8)
    np.testing.assert_array_equal(prog(v=vol)["out"], vol // 2)


def test_computed_writes_are_listed_as_unchecked():
    prog = imagecl.compile("""
        #pragma imcl grid(a)
        void f(Image<int> a, int* hist) { hist[a[idx][idy] & 7] += 1; }""")
    assert any("hist" in note for note in prog.info.unchecked_races)


def test_transposed_write_is_not_a_race():
    prog = imagecl.compile("""
        #pragma imcl grid(a)
        void f(Image<int> a, Image<int> t) { t[idy][idx] = a[idx][idy]; }""")
    a = rand((5, 7), np.int32)
    t = np.zeros((7, 5), np.int32)
    np.testing.assert_array_equal(prog(a=a, t=t)["t"], a.T)


# ---- boundary conditions -----------------------------------------------------------------------------

_NUMPY_PAD = {"constant": "constant", "clamped": "edge", "mirror": "reflect", "wrap": "wrap"}


@pytest.mark.parametrize("mode", ["constant", "clamped", "mirror", "wrap"])
@pytest.mark.parametrize("shape", [(3, 4), (1, 5), (6, 1), (2, 2)])
def test_boundary_modes_with_far_offsets(mode, shape):
    """Offsets larger than the image: every mode must match NumPy's padding."""
    prog = _shift_program(mode)
    img = rand(shape, np.int32)
    dx, dy = 7, -5
    out = prog(a=img, o=np.zeros_like(img), dx=dx, dy=dy)["o"]
    pad = 12
    padded = np.pad(img, pad, mode=_NUMPY_PAD[mode])
    h, w = shape
    expected = padded[pad + dy: pad + dy + h, pad + dx: pad + dx + w]
    np.testing.assert_array_equal(out, expected)


_SHIFT_CACHE: dict[str, imagecl.Program] = {}


def _shift_program(mode: str) -> imagecl.Program:
    if mode not in _SHIFT_CACHE:
        _SHIFT_CACHE[mode] = imagecl.compile(f"""
            #pragma imcl grid(o)
            #pragma imcl boundary_cond(a:{mode})
            void shift(Image<int> a, Image<int> o, int dx, int dy) {{ o[idx][idy] = a[idx + dx][idy + dy]; }}""")
    return _SHIFT_CACHE[mode]


# ---- arguments ----------------------------------------------------------------------------------------

SCALE = imagecl.compile("""
    #pragma imcl grid(inp, out)
    void scale(Image<float> inp, Image<float> out, float k, int n, bool neg) {
        float v = inp[idx][idy] * k + n;
        out[idx][idy] = neg ? -v : v;
    }""")


def test_scalars_and_bool():
    x = rand((4, 6))
    np.testing.assert_allclose(SCALE(inp=x, k=2.0, n=3, neg=True)["out"], -(x * 2 + 3), rtol=1e-6)
    np.testing.assert_allclose(SCALE(inp=x, k=2, n=-1, neg=False)["out"], x * 2 - 1, rtol=1e-6)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"k": 1.0, "n": 1, "neg": False}, "missing argument 'inp'"),
    ({"inp": "IMG", "n": 1, "neg": False}, "missing scalar argument 'k'"),
    ({"inp": "IMG", "k": 1.0, "n": 1, "neg": False, "kk": 2}, "no parameter 'kk'; did you mean 'k'?"),
    ({"inp": "IMG64", "k": 1.0, "n": 1, "neg": False}, "needs dtype float32, got float64"),
    ({"inp": "IMG3D", "k": 1.0, "n": 1, "neg": False}, "is a 2-D image"),
    ({"inp": "IMG", "k": 1.0, "n": 1.5, "neg": False}, "pass an integer"),
    ({"inp": "IMG", "k": 1.0, "n": 2**40, "neg": False}, "outside"),
    ({"inp": "IMG", "k": "x", "n": 1, "neg": False}, "pass a number"),
    ({"inp": "IMG", "k": 1.0, "n": 1, "neg": 3}, "is bool"),
    ({"inp": "IMG", "out": "SMALL", "k": 1.0, "n": 1, "neg": False}, "grid images must have the same shape"),
    ({"inp": [[1.0]], "k": 1.0, "n": 1, "neg": False}, "needs a NumPy array"),
    ({"inp": "EMPTY", "k": 1.0, "n": 1, "neg": False}, "empty image"),
])
def test_argument_errors_name_the_parameter(kwargs, fragment):
    values = {
        "IMG": rand((4, 6)), "IMG64": rand((4, 6)).astype(np.float64), "IMG3D": rand((2, 4, 6)),
        "SMALL": rand((3, 6)), "EMPTY": np.zeros((0, 6), np.float32),
    }
    args = {k: values.get(v, v) if isinstance(v, str) else v for k, v in kwargs.items()}
    with pytest.raises(imagecl.ArgumentError) as info:
        SCALE(**args)
    assert fragment in str(info.value)


def test_callers_arrays_are_never_modified():
    prog = imagecl.compile("""
        #pragma imcl grid(img)
        void inc(Image<int> img) { img[idx][idy] += 5; }""")
    img = rand((3, 4), np.int32)
    before = img.copy()
    out = prog(img=img)["img"]
    np.testing.assert_array_equal(img, before)
    np.testing.assert_array_equal(out, before + 5)


def test_output_outside_grid_needs_an_array():
    prog = imagecl.compile("""
        #pragma imcl grid(a)
        void f(Image<int> a, Image<int> b) { b[idx][idy] = a[idx][idy]; }""")
    with pytest.raises(imagecl.ArgumentError, match="not in the grid"):
        prog(a=rand((3, 3), np.int32))


def test_non_contiguous_input_is_accepted():
    x = rand((8, 12))[::2, ::3]
    np.testing.assert_allclose(SCALE(inp=x, k=1.0, n=0, neg=False)["out"], x)


# ---- pointers, arrays, vectors, helpers ------------------------------------------------------------


def test_pointer_bounds_are_guarded():
    prog = imagecl.compile("""
        #pragma imcl grid(a)
        void f(Image<int> a, int* lut, int* dst) {
            a[idx][idy] = lut[idx];
            dst[idx + 10 * idy] = idx;
        }""")
    a = np.zeros((2, 5), np.int32)
    lut = np.array([10, 20, 30], np.int32)
    dst = np.full(8, -1, np.int32)
    out = prog(a=a, lut=lut, dst=dst)
    np.testing.assert_array_equal(out["a"], [[10, 20, 30, 0, 0]] * 2)
    np.testing.assert_array_equal(out["dst"], [0, 1, 2, 3, 4, -1, -1, -1])


def test_fixed_size_array_parameter_shape_is_checked():
    prog = imagecl.load(EXAMPLES / "convolution.icl")
    info = prog.info
    name = next(n for n, a in info.arrays.items() if a.kind == "array")
    shape = info.arrays[name].shape
    img = rand((9, 11))
    wrong = np.ones(tuple(s + 1 for s in shape), np.float32)
    kwargs = {p: img for p in info.grid if not info.arrays[p].is_written}
    with pytest.raises(imagecl.ArgumentError, match=re.escape(f"expected shape {tuple(shape)}")):
        prog(**kwargs, **{name: wrong})


def test_vector_pixels():
    prog = imagecl.compile("""
        #pragma imcl grid(rgba, grey)
        void g(Image<uchar4> rgba, Image<float4> grey) {
            uchar4 p = rgba[idx][idy];
            float4 f = convert_float4(p) * 0.5f;
            grey[idx][idy] = (float4)(f.x + f.y, f.z, f.w, 1);
        }""")
    rgba = rand((3, 5, 4), np.uint8).astype(np.uint8)
    rgba = np.abs(rgba.astype(np.int32) % 256).astype(np.uint8)
    out = prog(rgba=rgba)["grey"]
    f = rgba.astype(np.float32) * 0.5
    expected = np.stack([f[..., 0] + f[..., 1], f[..., 2], f[..., 3], np.ones(f.shape[:2], np.float32)], -1)
    np.testing.assert_allclose(out, expected)


def test_helper_sorts_private_array_by_reference():
    prog = imagecl.compile("""
        void sort3(int v[3]) {
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 2 - i; j++)
                    if (v[j] > v[j + 1]) { int t = v[j]; v[j] = v[j + 1]; v[j + 1] = t; }
        }
        #pragma imcl grid(a, o)
        #pragma imcl boundary_cond(a:clamped)
        void med(Image<int> a, Image<int> o) {
            int w[3] = {a[idx - 1][idy], a[idx][idy], a[idx + 1][idy]};
            sort3(w);
            o[idx][idy] = w[1];
        }""")
    a = rand((4, 9), np.int32)
    p = np.pad(a, ((0, 0), (1, 1)), mode="edge")
    expected = np.median(np.stack([p[:, :-2], p[:, 1:-1], p[:, 2:]]), axis=0).astype(np.int32)
    np.testing.assert_array_equal(prog(a=a)["o"], expected)


def test_grid_size_pragma():
    prog = imagecl.compile("""
        #pragma imcl grid_size(5, 3)
        void ramp(Image<int> out) { out[idx][idy] = idx + 10 * idy; }""")
    out = prog(out=np.full((4, 6), -1, np.int32))["out"]
    expected = np.full((4, 6), -1, np.int32)
    yy, xx = np.mgrid[0:3, 0:5]
    expected[:3, :5] = xx + 10 * yy
    np.testing.assert_array_equal(out, expected)


def test_tunable_values_select_the_variant():
    prog = imagecl.compile("""
        #pragma imcl tunable(MODE: 0, 1, 2)
        #pragma imcl grid(a, o)
        void t(Image<int> a, Image<int> o) { o[idx][idy] = MODE == 0 ? a[idx][idy] : a[idx][idy] * MODE * 10; }""")
    a = rand((3, 4), np.int32)
    np.testing.assert_array_equal(prog(a=a)["o"], a)
    np.testing.assert_array_equal(prog(a=a, config={"MODE": 2})["o"], a * 20)
    with pytest.raises(imagecl.ConfigError, match="'MOD' is not a tuning parameter.*did you mean 'MODE'"):
        prog(a=a, config={"MOD": 1})
    with pytest.raises(imagecl.ConfigError, match="'MODE' must be one of"):
        prog(a=a, config={"MODE": 3})


def test_math_conversions_follow_c():
    prog = imagecl.compile("""
        #pragma imcl grid(a, o)
        void m(Image<int> a, Image<float> o) {
            int v = a[idx][idy];
            o[idx][idy] = sqrt(abs(v)) + min(v, 0.5f) + max(v / 3, -2) + fabs(-1.5f) + abs(-2.5f);
        }""")
    a = rand((3, 5), np.int32)
    v = a.astype(np.int64)
    div = np.trunc(v / 3).astype(np.int64)
    expected = np.sqrt(np.abs(v)) + np.minimum(v, 0.5) + np.maximum(div, -2) + 1.5 + 2.5
    np.testing.assert_allclose(prog(a=a)["o"], expected.astype(np.float32), rtol=1e-6)


# ---- code generation -------------------------------------------------------------------------------------


def test_generated_code_is_readable():
    src = imagecl.load(EXAMPLES / "sobel.icl").opencl_source()
    assert src.startswith("// Generated by imagecl")
    assert "sobel.icl" in src.splitlines()[0]
    assert "__kernel void sobel(" in src
    body = [line for line in src.splitlines() if line.startswith("    ")]
    assert body, "the body is indented"
    assert "\t" not in src


def test_build_errors_carry_the_log():
    device = select_device()
    with pytest.raises(imagecl.BuildError) as info:
        launcher.build(device, "__kernel void broken(__global float* a) { a[0] = undefined_thing; }")
    assert "undefined_thing" in info.value.log


# ---- devices ---------------------------------------------------------------------------------------------------


def test_device_selection():
    devices = imagecl.list_devices()
    assert devices
    first = devices[0]
    assert select_device(0).name.strip() == first.name
    assert select_device(first.name[:6].lower()).name.strip() == first.name
    with pytest.raises(imagecl.DeviceError, match="out of range"):
        select_device(len(devices) + 3)
    with pytest.raises(imagecl.DeviceError, match="no OpenCL device matches"):
        select_device("no-such-device-xyz")


def test_device_from_environment(monkeypatch):
    monkeypatch.setenv("IMAGECL_DEVICE", "0")
    assert select_device(None) is select_device(0)
    x = rand((3, 3))
    np.testing.assert_allclose(SCALE(inp=x, k=1.0, n=0, neg=False)["out"], x)


# ---- command line ------------------------------------------------------------------------------------------------


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "imagecl", *args], capture_output=True, text=True, cwd=cwd)


def test_cli_run_with_image_files_matches_the_api(tmp_path):
    from PIL import Image

    png = tmp_path / "in.png"
    pixels = RNG.integers(0, 256, (13, 17), dtype=np.uint8)
    Image.fromarray(pixels).save(png)
    result = _cli("run", str(EXAMPLES / "sobel.icl"), f"input={png}", "-o", f"dx={tmp_path / 'dx.npy'}",
                  "-o", f"dy={tmp_path / 'dy.tif'}")
    assert result.returncode == 0, result.stderr
    expected = imagecl.load(EXAMPLES / "sobel.icl")(input=pixels.astype(np.float32) / 255)
    np.testing.assert_allclose(np.load(tmp_path / "dx.npy"), expected["dx"], rtol=1e-6)
    np.testing.assert_allclose(np.array(Image.open(tmp_path / "dy.tif")), expected["dy"], rtol=1e-6)


def test_python_m_and_console_script_agree(tmp_path):
    by_module = _cli("compile", str(EXAMPLES / "sobel.icl"))
    assert by_module.returncode == 0
    script = shutil.which("imagecl", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.fail("the imagecl console script is not installed next to this Python")
    by_script = subprocess.run([script, "compile", str(EXAMPLES / "sobel.icl")], capture_output=True, text=True)
    assert by_script.returncode == 0
    assert by_module.stdout == by_script.stdout


def test_cli_compile_writes_file_and_check_reports(tmp_path):
    out = tmp_path / "k.cl"
    assert _cli("compile", str(EXAMPLES / "median.icl"), "-o", str(out)).returncode == 0
    assert "__kernel void" in out.read_text()
    check = _cli("check", str(EXAMPLES / "median.icl"))
    assert check.returncode == 0 and "ok" in check.stdout


def test_hexadecimal_float_literals():
    """C99 hex floats: float type, exact value (also in integer constant expressions)."""
    literals = ["0x1p2f", "0x1.8p-3", "0X.8P1", "0xA.Cp+4", "-0x1.fffffep127f", "0x1p-149f", "0x1.000002p0"]
    lines = [f"    v[{i}] = {lit};" for i, lit in enumerate(literals)]
    src = ("#pragma imcl grid_size(8, 1)\n"
           "void hexf(float* o, int* n) {\n"
           f"    float v[(int)0x1p3f - (int)0x1.8p1 + {len(literals) - 5}];\n"  # 8 - 3 + 2 = 7 elements
           + "\n".join(lines) + "\n"
           "    v[idx % 7] = v[idx % 7] + (0x1p0 - 1.0f);\n"
           "    o[idx] = idx < 7 ? v[idx] : 0x1p4f * 2;\n"
           "    n[idx] = (int)0x1.8p4 + idx;\n"
           "}\n")
    prog = imagecl.compile(src, filename="hexf.icl")
    out = prog(o=np.zeros(8, np.float32), n=np.zeros(8, np.int32))
    expected = np.array([float.fromhex(t.rstrip("fF")) for t in literals] + [32.0], dtype=np.float32)
    np.testing.assert_array_equal(out["o"], expected)
    np.testing.assert_array_equal(out["n"], 24 + np.arange(8))
    decl = prog.info.kernel.body.body[0]
    assert decl.var_type.shape == (7,)


def test_unsubscripted_images_are_allowed():
    """An image that is never subscripted has no dimension from its use: a grid image takes
    the grid's, the grid is 3-D only if idz (or a grid image's .depth) is used, and any other
    such image is 2-D unless its .depth is used."""
    unused = imagecl.compile("#pragma imcl grid(o)\nvoid f(Image<float> a, Image<float> o, float k) {\n"
                             "    o[idx][idy] = k;\n}\n", filename="unused.icl")
    assert unused.info.arrays["a"].dims == 2
    out = unused(a=rand((3, 5)), o=np.zeros((4, 6), np.float32), k=2.5)["o"]
    np.testing.assert_array_equal(out, np.full((4, 6), 2.5, np.float32))
    with pytest.raises(imagecl.ArgumentError, match="'a'"):
        unused(a=rand((2, 3, 5)), o=np.zeros((4, 6), np.float32), k=2.5)

    sizes = imagecl.compile("#pragma imcl grid(g, o)\nvoid f(Image<int> g, Image<float> a, Image<float> v,"
                            " Image<int> o) {\n    o[idx][idy] = g.width + 10 * a.width + 100 * a.height"
                            " + 1000 * v.depth + idx;\n}\n", filename="sizes.icl")
    dims = {n: sizes.info.arrays[n].dims for n in ("g", "a", "v")}
    assert dims == {"g": 2, "a": 2, "v": 3}
    out = sizes(g=np.zeros((4, 6), np.int32), a=rand((3, 5)), v=rand((7, 2, 2)))["o"]
    np.testing.assert_array_equal(out, 6 + 50 + 300 + 7000 + np.arange(6)[None, :] + np.zeros((4, 1), np.int32))

    volume = imagecl.compile("#pragma imcl grid(a)\nvoid f(Image<float> a, int* p) {\n"
                             "    p[idx + a.width * (idy + a.height * idz)] = idz;\n}\n", filename="vol.icl")
    assert volume.info.grid_dims == 3
    out = volume(a=rand((2, 3, 4)), p=np.full(24, -1, np.int32))["p"]
    np.testing.assert_array_equal(out, np.repeat(np.arange(2), 12))


OPENCL_WORDS_PROGRAM = """#pragma imcl grid(kernel, out)
#pragma imcl boundary_cond(kernel:wrap)
#pragma imcl tunable(x: 1, 2)
#pragma imcl tunable(s0: 3)
float sinpi(float vec_step) {
    return vec_step * 2.0f;
}
float imcl_helper(float M_PI) {
    return M_PI + 1.0f;
}
void global(Image<float> kernel, Image<float> out, float local, int INT_MAX, float read_imagef[3]) {
    float FLT_MAX = 1.0f;
    int pipe = 2, image2d_array_t = 3, NAN = x, CLK_LOCAL_MEM_FENCE = s0;
    float4 half4 = (float4)(1.0f, 2.0f, 3.0f, 4.0f);
    float constant = half4.x + half4.w;
    float private[2];
    private[0] = 1.0f;
    private[1] = 2.0f;
    int __reserved = 1, _Under = 2, imcl_v_M_PI_ = 3, imcl_tile_kernel = 4, get_global_id = 5, M_PI = 6;
    float dot = 0.0f;
    for (int read_only = 0; read_only < 3; read_only++)
        dot += read_imagef[read_only];
    out[idx][idy] = sinpi(kernel[idx + 1][idy]) + kernel[idx][idy - 1] + imcl_helper(FLT_MAX) + local * INT_MAX
                    + pipe + image2d_array_t + NAN + CLK_LOCAL_MEM_FENCE + constant + private[1] + __reserved
                    + _Under + imcl_v_M_PI_ + imcl_tile_kernel + get_global_id + M_PI + dot + sqrt(4.0f);
}
"""


def test_opencl_words_are_valid_names():
    """OpenCL C keywords, macros, types and built-in function names, names starting with '_'
    or 'imcl_' are ordinary C names: renamed in the generated code, in every variant, without
    colliding with each other or with the generated code's names."""
    prog = imagecl.compile(OPENCL_WORDS_PROGRAM, filename="words.icl")
    kernel = RNG.random((6, 7)).astype(np.float32)
    weights = np.array([1, 2, 4], np.float32)
    right = np.roll(kernel, -1, axis=1)  # kernel[idx + 1][idy], wrapped
    up = np.roll(kernel, 1, axis=0)      # kernel[idx][idy - 1], wrapped
    space = prog.space_for(problem_shape=(7, 6))
    names = {p.name for p in space.parameters}
    assert {"image_kernel", "local_kernel", "x", "s0"} <= names
    unroll = next(n for n in names if n.startswith("unroll_"))
    configs = [{}, {"x": 2, "image_kernel": 1, unroll: 3},
               {"local_kernel": 1, "px_x": 2, "wg_x": 2, "wg_y": 2, "interleaved": 1, unroll: 3}]
    for config in configs:
        x = config.get("x", 1)
        expected = (2 * right + up + 2 + 0.5 * 4 + 2 + 3 + x + 3 + (1 + 4) + 2 + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 2)
        out = prog(kernel=kernel, local=0.5, INT_MAX=4, read_imagef=weights, config=config)["out"]
        np.testing.assert_allclose(out, expected, rtol=1e-6, err_msg=str(config))
    source = prog.opencl_source(configs[2])
    assert "__kernel void imcl_v_global_(" in source and "#define imcl_v_x_ 1" in source
    assert "imcl_v_M_PI_ = 6" in source and "imcl_v_imcl_v_M_PI__ = 3" in source


def test_renamed_names_cannot_collide():
    from imagecl.ir import names

    users = ["M_PI", "imcl_v_M_PI_", "imcl_v_M_PI__", "kernel", "x", "a", "imcl_a_w", "__x", "_X", "sin"]
    mapping = {u: names.c_names(users).get(u, u) for u in users}
    assert len(set(mapping.values())) == len(users)
    assert mapping["x"] == "x" and mapping["a"] == "a"                     # ordinary names keep theirs
    assert names.c_names([], ["x", "s0", "lo", "img", "K"]) == {n: f"imcl_v_{n}_" for n in ("x", "s0", "lo", "img")}
    for user, c in mapping.items():                                        # no user name survives with the
        assert not c.startswith("imcl_") or c.startswith("imcl_v_") and c.endswith("_")  # generated prefix


def test_array_sizes_follow_c_conversions():
    """Array sizes are folded before semantic analysis; they still follow C's conversions
    (a size of 4294967300 would be a 4 GB private array that crashes the OpenCL driver)."""
    prog = imagecl.compile("#pragma imcl grid_size(4, 1)\nvoid f(int* o) {\n"
                           "    uchar m[+(1 ? 165 : 2147483648u) + 4294967135u];\n"
                           "    int n[-1 + 3u][(char)260];\n"
                           "    for (int i = 0; i < 4; i++) m[i] = i * 10;\n"
                           "    n[1][3] = 7;\n"
                           "    o[idx] = m[idx] + n[1][3];\n}\n", filename="sizes.icl")
    decls = [s for s in prog.info.kernel.body.body if hasattr(s, "var_type")]
    assert [d.var_type.shape for d in decls] == [(4,), (2, 4)]
    np.testing.assert_array_equal(prog(o=np.zeros(4, np.int32))["o"], np.arange(4) * 10 + 7)
