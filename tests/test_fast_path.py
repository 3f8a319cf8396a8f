"""The interior fast path (`interior`) and vectorised runs along x (`vector_x`).

Variants with the passes on are compared with independent references (SciPy ndimage, NumPy
padding) in every boundary mode, at odd sizes that are not multiples of work-group x
coarsening, with blocked and interleaved layouts, local-memory tiles and image memory, in 2-D
and 3-D. Each configuration is checked to take both paths somewhere in the image (work-groups
inside and at the border), and for `vector_x` the image width allows aligned vectors, so a
broken fast path or a broken general path fails. Structural tests check that the passes show
in the source when on and leave no trace when off.
"""
from __future__ import annotations

import itertools
import pathlib
import re

import numpy as np
import pytest
from scipy import ndimage

import imagecl
from imagecl.codegen import interior

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
MODES = ("constant", "clamped", "mirror", "wrap")
SCIPY_MODE = {"constant": "constant", "clamped": "nearest", "mirror": "mirror", "wrap": "wrap"}
NUMPY_PAD = {"constant": "constant", "clamped": "edge", "mirror": "reflect", "wrap": "wrap"}
DEFAULT_MODE = {"sobel": "constant", "convolution": "mirror", "median": "mirror", "box_blur": "wrap",
                "harris": "constant", "bilateral3d": "clamped"}
# (height, width): odd width 37 (no vector path: widths must be multiples of the vector), and
# width 64 with odd height 29 (vector path taken in interior work-groups)
SHAPES_2D = [(29, 37), (29, 64)]
SHAPE_3D = (11, 9, 48)  # (depth, height, width)

# 2-D configurations: (name, config); every one takes both paths at the shapes above
CONFIGS_2D = {
    "plain": {"wg_x": 4, "wg_y": 2, "interior": 1},
    "blocked-local": {"wg_x": 4, "wg_y": 2, "px_x": 2, "px_y": 2, "interior": 1, "local_input": 1},
    "interleaved-local-image": {"wg_x": 2, "wg_y": 2, "px_x": 2, "px_y": 2, "interleaved": 1, "interior": 1,
                                "local_input": 1, "image_input": 1},
    "interleaved-image": {"wg_x": 2, "wg_y": 4, "px_x": 1, "px_y": 2, "interleaved": 1, "interior": 1,
                          "image_input": 1},
    "vector4": {"wg_x": 4, "wg_y": 2, "px_x": 4, "px_y": 2, "interior": 1, "vector_x": 1},
    "vector8-local": {"wg_x": 2, "wg_y": 2, "px_x": 8, "interior": 1, "vector_x": 1, "local_input": 1},
    "vector2-image": {"wg_x": 4, "wg_y": 4, "px_x": 2, "interior": 1, "vector_x": 1, "image_input": 1},
    "vector16": {"wg_x": 1, "wg_y": 4, "px_x": 16, "interior": 1, "vector_x": 1},
    # vector_x=2: the body as vector code (codegen/lanes.py), no alignment needed, so the odd
    # width 37 takes the fast path too; vloads from global and local memory (not image memory)
    "lanes4": {"wg_x": 4, "wg_y": 2, "px_x": 4, "px_y": 2, "interior": 1, "vector_x": 2},
    "lanes8-local": {"wg_x": 2, "wg_y": 2, "px_x": 8, "interior": 1, "vector_x": 2, "local_input": 1},
    "lanes2": {"wg_x": 4, "wg_y": 4, "px_x": 2, "interior": 1, "vector_x": 2},
    "lanes16": {"wg_x": 1, "wg_y": 4, "px_x": 16, "interior": 1, "vector_x": 2},
}
CONFIGS_3D = {
    "plain": {"wg_x": 4, "wg_y": 2, "wg_z": 2, "interior": 1},
    "interleaved-local": {"wg_x": 2, "wg_y": 2, "px_x": 2, "px_z": 2, "interleaved": 1, "interior": 1,
                          "local_input": 1},
    "vector4-image": {"wg_x": 2, "wg_y": 2, "px_x": 4, "interior": 1, "vector_x": 1, "image_input": 1},
    "vector8-local": {"wg_x": 2, "wg_y": 2, "px_x": 8, "px_y": 2, "interior": 1, "vector_x": 1,
                      "local_input": 1},
    "vector4": {"wg_x": 2, "wg_y": 2, "wg_z": 2, "px_x": 4, "px_z": 2, "interior": 1, "vector_x": 1},
    "lanes4": {"wg_x": 2, "wg_y": 2, "wg_z": 2, "px_x": 4, "px_z": 2, "interior": 1, "vector_x": 2},
    "lanes8-local": {"wg_x": 2, "wg_y": 2, "px_x": 8, "px_y": 2, "interior": 1, "vector_x": 2,
                     "local_input": 1},
    "lanes2": {"wg_x": 2, "wg_y": 2, "px_x": 2, "interior": 1, "vector_x": 2},
}

_PROGRAMS: dict = {}


def program(name: str, mode: str) -> imagecl.Program:
    """Example `name` with every boundary_cond of its source set to `mode`."""
    key = (name, mode)
    if key not in _PROGRAMS:
        src = (EXAMPLES / f"{name}.icl").read_text()
        src = re.sub(r"(boundary_cond\([^)]*\))",
                     lambda m: re.sub(r":\w+", f":{mode}", m.group(1)), src)
        _PROGRAMS[key] = imagecl.compile(src, filename=f"{name}_{mode}.icl")
    return _PROGRAMS[key]


# ---- independent references --------------------------------------------------------------------------


def sobel_ref(a, mode):
    kx = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float64) / 8.0
    img = a["input"].astype(np.float64)
    return {"dx": ndimage.correlate(img, kx, mode=SCIPY_MODE[mode], cval=0.0),
            "dy": ndimage.correlate(img, kx.T, mode=SCIPY_MODE[mode], cval=0.0)}


def convolution_ref(a, mode):
    return {"output": ndimage.convolve(a["input"].astype(np.float64), a["filter"].astype(np.float64),
                                       mode=SCIPY_MODE[mode], cval=0.0)}


def median_ref(a, mode):
    return {"output": ndimage.median_filter(a["input"], size=5, mode=SCIPY_MODE[mode], cval=0)}


def box_blur_ref(a, mode):
    s = ndimage.correlate(a["input"].astype(np.int64), np.ones((5, 5), np.int64), mode=SCIPY_MODE[mode], cval=0)
    return {"output": (s + 12) // 25}


def harris_ref(a, mode):
    def window_sum(x):
        p = np.pad(x, ((0, 1), (0, 1)), mode=NUMPY_PAD[mode])
        return p[:-1, :-1] + p[:-1, 1:] + p[1:, :-1] + p[1:, 1:]

    dx, dy, k = a["dx"].astype(np.float64), a["dy"].astype(np.float64), np.float32(a["k"])
    xx, yy, xy = window_sum(dx * dx), window_sum(dy * dy), window_sum(dx * dy)
    return {"output": xx * yy - xy * xy - k * (xx + yy) ** 2}


def bilateral3d_ref(a, mode):
    vol = a["input"].astype(np.float64)
    d, h, w = vol.shape
    p = np.pad(vol, 1, mode=NUMPY_PAD[mode])
    gs = -0.5 / a["sigma_spatial"] ** 2
    gr = -0.5 / a["sigma_range"] ** 2
    num, den = np.zeros_like(vol), np.zeros_like(vol)
    for k, j, i in itertools.product((-1, 0, 1), repeat=3):
        nb = p[1 + k:1 + k + d, 1 + j:1 + j + h, 1 + i:1 + i + w]
        wgt = np.exp((i * i + j * j + k * k) * gs + (nb - vol) ** 2 * gr)
        num += wgt * nb
        den += wgt
    return {"output": num / den}


REFERENCES = {"sobel": sobel_ref, "convolution": convolution_ref, "median": median_ref,
              "box_blur": box_blur_ref, "harris": harris_ref, "bilateral3d": bilateral3d_ref}


def inputs(name: str, shape: tuple) -> dict:
    rng = np.random.default_rng(sum(map(ord, name)) + shape[-1])
    if name in ("median", "box_blur"):
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        img[:, :3] = 255  # bright border columns make the boundary mode visible
        return {"input": img}
    if name == "harris":
        return {"dx": rng.uniform(-1, 1, shape).astype(np.float32),
                "dy": rng.uniform(-1, 1, shape).astype(np.float32), "k": 0.04}
    if name == "bilateral3d":
        vol = rng.uniform(0, 1, shape).astype(np.float32)
        vol[:, :, shape[-1] // 2:] += 4.0  # a step edge
        return {"input": vol, "sigma_spatial": 1.2, "sigma_range": 0.3}
    args = {"input": rng.uniform(-1, 1, shape).astype(np.float32)}
    if name == "convolution":
        args["filter"] = rng.uniform(-1, 1, (5, 5)).astype(np.float32)
    return args


def assert_matches(got: dict, ref: dict, what: str) -> None:
    for key, expected in ref.items():
        out = got[key]
        assert out.shape == expected.shape, what
        if out.dtype.kind == "f":
            scale = max(1.0, float(np.abs(expected).max()))
            np.testing.assert_allclose(out.astype(np.float64), expected, rtol=1e-5, atol=2e-5 * scale,
                                       err_msg=f"{key}: {what}")
        else:
            np.testing.assert_array_equal(out, expected.astype(out.dtype), err_msg=f"{key}: {what}")


# ---- which path each work-group takes (an independent transcription of the test) -----------------------


def path_counts(prog: imagecl.Program, config: dict, shape: tuple) -> tuple[int, int]:
    """(work-group blocks that take the fast path, blocks that take the general one). An image
    staged in local memory is read from its tile, which the fill has clamped: its halo does not
    keep a block in the grid off the fast path."""
    dims = len(shape)
    extent = tuple(reversed(shape))  # x first
    analysis = prog.analysis_for({})
    images = [n for n in interior.inside_images(prog.info, analysis) if not config.get(f"local_{n}")]
    low = [max([analysis.footprints[n].halo_low[d] for n in images], default=0) for d in range(dims)]
    high = [max([analysis.footprints[n].halo_high[d] for n in images], default=0) for d in range(dims)]
    axes = "xyz"[:dims]
    wg = [config.get(f"wg_{a}", 1) for a in axes]
    px = [config.get(f"px_{a}", 1) for a in axes]
    interleaved = config.get("interleaved", 0)
    groups = [-(-(-(-n // p)) // w) for n, p, w in zip(extent, px, wg)]
    span = [1 if interleaved else p for p in px]
    glob = [g * w for g, w in zip(groups, wg)]
    inside = other = 0
    for g in itertools.product(*(range(n) for n in groups)):
        for k in itertools.product(*(range(p) if interleaved else [0] for p in px)):
            ok = True
            for d in range(dims):
                lo = g[d] * wg[d] * span[d] + k[d] * glob[d]
                hi = lo + wg[d] * span[d]
                ok &= lo >= low[d] and hi + high[d] <= extent[d]
            if config.get("vector_x") == 1:  # aligned vector loads and stores
                ok &= extent[0] % px[0] == 0
            inside += ok
            other += not ok
    return inside, other


# the median's body branches on pixel values: no vector code (vector_x=2) for it
CASES_2D = [(name, cfg) for name in ("sobel", "convolution", "median", "box_blur", "harris") for cfg in CONFIGS_2D
            if not (name == "median" and cfg.startswith("lanes"))]


def check(name: str, mode: str, config: dict, shape: tuple) -> None:
    prog = program(name, mode)
    space = prog.space_for(problem_shape=shape)
    if name == "harris":  # its images are dx and dy
        config = {k.replace("_input", "_dx"): v for k, v in config.items()}
    full = space.complete(config)
    inside, other = path_counts(prog, full, shape)
    if full.get("vector_x") == 1 and shape[-1] % full["px_x"]:
        assert inside == 0  # widths that are not multiples of the vector size take the general path
    else:
        assert inside > 0 and other > 0, f"{config} at {shape} does not exercise both paths"
    args = inputs(name, shape)
    assert_matches(prog(**args, config=full), REFERENCES[name](args, mode), f"{name} {mode} {full} {shape}")


@pytest.mark.parametrize("shape", SHAPES_2D, ids=lambda s: f"{s[1]}x{s[0]}")
@pytest.mark.parametrize("name,config", CASES_2D, ids=[f"{n}-{c}" for n, c in CASES_2D])
def test_fast_path_2d_default_mode(name, config, shape):
    check(name, DEFAULT_MODE[name], CONFIGS_2D[config], shape)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["sobel", "convolution", "median", "box_blur", "harris"])
def test_fast_path_2d_every_mode(name, mode):
    for config in ("blocked-local", "vector4") + (("lanes4", "lanes8-local") if name != "median" else ()):
        check(name, mode, CONFIGS_2D[config], (29, 64))


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name,config", CASES_2D, ids=[f"{n}-{c}" for n, c in CASES_2D])
def test_fast_path_2d_all_modes_all_configs(name, config, mode):
    for shape in SHAPES_2D:
        check(name, mode, CONFIGS_2D[config], shape)


@pytest.mark.parametrize("config", list(CONFIGS_3D))
def test_fast_path_3d(config):
    check("bilateral3d", "clamped", CONFIGS_3D[config], SHAPE_3D)


@pytest.mark.parametrize("mode", ["constant", "mirror", "wrap"])
def test_fast_path_3d_every_mode(mode):
    check("bilateral3d", mode, CONFIGS_3D["vector8-local"], SHAPE_3D)
    check("bilateral3d", mode, CONFIGS_3D["lanes4"], SHAPE_3D)


# ---- structure of the generated source --------------------------------------------------------------


def source(name: str, config: dict) -> str:
    return program(name, DEFAULT_MODE[name]).opencl_source(config)


def _function(text: str, name: str) -> str:
    start = text.index(f"void {name}(")
    return text[start:text.index("\n}\n", start)]


@pytest.mark.parametrize("name", ["sobel", "convolution", "median", "box_blur", "bilateral3d"])
def test_fast_path_source_has_no_boundary_handling(name):
    text = source(name, {"interior": 1})
    assert "imcl_inside" in text
    body = _function(text, f"imcl_point_{name}_inside")
    assert "imcl_read_" not in body and "imcl_mirror" not in body and "imcl_wrap" not in body
    assert "_inside(" in _function(text, name)  # the kernel calls it
    general = _function(text, f"imcl_point_{name}")
    assert "imcl_read_input" in general  # the general path keeps boundary handling


@pytest.mark.parametrize("mode", MODES)
def test_border_blocks_read_their_tile_on_the_fast_path(mode):
    """With the input staged in local memory, only the tile's fill tests the input's halo: a
    block at the image's border that lies in the grid computes on the fast path (the vector code
    here) from the tile the general fill has boundary-handled, and still matches SciPy."""
    config = {"wg_x": 2, "wg_y": 2, "px_x": 8, "interior": 1, "vector_x": 2, "local_input": 1}
    prog = program("convolution", mode)
    text = prog.opencl_source(config)
    fill = re.search(r"const bool imcl_fill_inside = (.*?);", text, re.S).group(1)
    fast = re.search(r"const bool imcl_inside = (.*?);", text, re.S).group(1)
    assert "imcl_lox >= 2" in fill and "imcl_lox >=" not in fast and "imcl_input_w" in fast
    assert "if (imcl_fill_inside)" in text
    shape = (32, 64)  # every block in the grid: all of them on the fast path, the border ones too
    full = prog.space_for(problem_shape=shape).complete(config)
    assert path_counts(prog, full, shape) == (4 * 16, 0)  # blocks of 16 x 2
    args = inputs("convolution", shape)
    assert_matches(prog(**args, config=full), convolution_ref(args, mode), f"{mode} {full} {shape}")
    without = {k: v for k, v in config.items() if k != "local_input"}  # direct reads: halos count
    assert path_counts(prog, prog.space_for(problem_shape=shape).complete(without), shape) == (2 * 14, 4 * 16 - 2 * 14)


def test_vector_source_uses_aligned_vectors():
    text = source("sobel", {"interior": 1, "vector_x": 1, "px_x": 4})
    assert "*(__global const float4*)" in text and "*(__global float4*)(dx" in text
    assert "*(__global float4*)(dy" in text and "#pragma unroll" in text
    assert "imcl_input_w % 4 == 0" in text and "((ulong)input & 15) == 0" in text
    body = _function(text, "imcl_point_sobel_inside")
    assert "imcl_reg_input[" in body and "input[" not in body.replace("imcl_reg_input[", "")
    text8 = source("median", {"interior": 1, "vector_x": 1, "px_x": 8})
    assert "*(__global const uchar8*)" in text8 and "*(__global uchar8*)(output" in text8


@pytest.mark.parametrize("name", ["sobel", "convolution", "median", "box_blur", "harris", "bilateral3d"])
def test_passes_off_leave_no_trace(name):
    """With interior=0 the source is the one the compiler generated before the passes existed:
    no second path, no vectors, no test."""
    prog = program(name, DEFAULT_MODE[name])
    for text in (prog.opencl_source({}), source(name, {"interior": 0}),
                 source(name, {"interior": 0, "px_x": 4, "local_dx" if name == "harris" else "local_input": 1})):
        for marker in ("imcl_inside", "_inside(", "vload", "vstore", "#pragma unroll", "imcl_reg_", "imcl_st_"):
            assert marker not in text, (name, marker)


def test_space_offers_and_constrains_the_passes():
    space = program("sobel", "constant").space_for(problem_shape=(64, 64))
    assert space.parameter("interior").values == [0, 1]
    assert space.parameter("vector_x").values == [0, 1, 2]
    space.complete({"vector_x": 2, "interior": 1, "px_x": 64})  # vector code: also 2 or 4 runs of 16
    with pytest.raises(imagecl.ConfigError):
        space.complete({"vector_x": 1, "interior": 1, "px_x": 64})
    median = program("median", "mirror").space_for(problem_shape=(64, 64))
    assert median.parameter("vector_x").values == [0, 1]  # its body branches on pixel values
    for bad in ({"vector_x": 1, "px_x": 4}, {"vector_x": 1, "interior": 1, "px_x": 1},
                {"vector_x": 2, "px_x": 4}, {"vector_x": 2, "interior": 1, "px_x": 128},
                {"vector_x": 2, "interior": 1, "px_x": 4, "image_input": 1},
                {"vector_x": 1, "interior": 1, "px_x": 32},
                {"vector_x": 1, "interior": 1, "px_x": 4, "interleaved": 1}):
        with pytest.raises(imagecl.ConfigError):
            space.complete(bad)
    # a program without bounded stencil reads has neither parameter
    mandel = imagecl.load(str(EXAMPLES / "mandelbrot.icl")).space_for()
    assert "interior" not in mandel.names and "vector_x" not in mandel.names


# ---- the work-group size compiled in with local-memory tiles ----------------------------------------------


def test_local_memory_variants_fix_only_large_work_group_sizes():
    prog = program("sobel", "constant")
    space = prog.space_for(problem_shape=(29, 37))
    # up to 256 work-items the tile is sized and walked at launch: one source for every size
    local = {"wg_x": 8, "wg_y": 4, "px_x": 2, "local_input": 1}
    text = prog.opencl_source(local)
    assert "reqd_work_group_size" not in text
    assert prog.opencl_source(dict(local, wg_x=16)).split("\n", 3)[3] == text.split("\n", 3)[3]
    assert space.source_key(space.complete(local)) == space.source_key(space.complete(dict(local, wg_x=16)))
    assert "wg_x" not in space.source_key(space.complete(local))
    # above 256 the compiler is told the size (NVIDIA would otherwise cap the kernel at 256)
    large = dict(local, wg_x=32, wg_y=16)
    assert "__attribute__((reqd_work_group_size(32, 16, 1)))\n__kernel void sobel(" in prog.opencl_source(large)
    assert prog.opencl_source(dict(large, wg_x=64, wg_y=8)) != prog.opencl_source(large)
    assert "wg_x" in space.source_key(space.complete(large))
    plain = {"wg_x": 32, "wg_y": 16, "px_x": 2}
    assert "reqd_work_group_size" not in prog.opencl_source(plain)
    assert "wg_x" not in space.source_key(space.complete(plain))
    # 3-D: all three sizes; the variant runs (a wrong size would fail to launch)
    check("bilateral3d", "clamped", {"wg_x": 4, "wg_y": 2, "wg_z": 2, "local_input": 1, "interior": 1}, SHAPE_3D)
    assert "reqd_work_group_size(8, 8, 8)" in program("bilateral3d", "clamped").opencl_source(
        {"wg_x": 8, "wg_y": 8, "wg_z": 8, "local_input": 1})


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["box_blur", "sobel"])
def test_launch_time_tiles_match_the_reference_at_every_work_group_shape(name, mode):
    """One tile source, launched at work-group shapes of 8 to 256 work-items, in every boundary
    mode: the reference's result (box_blur's integers exactly), the same bits at every shape."""
    prog = program(name, mode)
    shape = (29, 37)
    space = prog.space_for(problem_shape=shape)
    args = inputs(name, shape)
    ref = REFERENCES[name](args, mode)
    outputs, bodies = [], set()
    for wg in ((4, 2), (8, 8), (2, 32), (16, 16), (64, 4)):
        config = space.complete({"wg_x": wg[0], "wg_y": wg[1], "px_x": 2, "px_y": 2, "local_input": 1})
        bodies.add(prog.opencl_source(config).split("\n", 3)[3])  # past the configuration comment
        got = prog(**args, config=config)
        assert_matches(got, ref, f"{name} {mode} {config}")
        if name == "box_blur":
            assert np.array_equal(got["output"], ref["output"])
        outputs.append(got)
    assert len(bodies) == 1
    assert all(np.array_equal(o[k], outputs[0][k]) for o in outputs[1:] for k in ref)


def test_paper_space_sources_collapse():
    """Table 1's 131,072 configurations of convolution9.icl (95,224 valid on the H200's limits)
    come from 8,528 sources: one per tile variant of at most 256 work-items, not one per
    work-group shape (41,376 while every local-memory variant compiled its size in)."""
    from imagecl.bench.paper_space import H200, paper_space
    from imagecl.tuner.validate import plan_measurements

    prog = imagecl.load(EXAMPLES / "convolution9.icl")
    plan = plan_measurements(prog.space_for_limits(H200, (4096, 4096)), paper_space(prog), set())
    assert sum(len(g) for g in plan.groups.values()) == 95_224
    assert len(plan.groups) == 8_528


# ---- random variants with the passes on, at sizes where both paths run ------------------------------------

RANDOM_SHAPES = {2: (45, 96), 3: (11, 9, 48)}
RANDOM_EXAMPLES = ["sobel", "convolution", "median", "box_blur", "harris", "bilateral3d"]
_NAIVE: dict = {}


def fast_path_config(space, dims: int, seed: int) -> dict:
    """A random configuration with interior on (and vector_x when it applies), with work-groups
    and coarsening small enough that some work-groups lie inside the image."""
    rng = np.random.default_rng(seed)
    config = space.random(1, seed=seed)[0]
    axes = "xyz"[:dims]
    for a in axes:
        config[f"wg_{a}"] = int(rng.choice([1, 2, 4] if dims == 2 else [1, 2]))
        config[f"px_{a}"] = int(rng.choice([1, 2, 4] if dims == 2 else [1, 2]))
    config["px_x"] = int(rng.choice([1, 2, 4, 8]))
    config["interior"] = 1
    config["vector_x"] = int(rng.choice(space.parameter("vector_x").values)) if "vector_x" in space.names else 0
    if config["vector_x"]:
        config["interleaved"] = 0
        config["px_x"] = max(2, config["px_x"])
    if config["vector_x"] == 2:  # vector code reads its images from buffers
        config.update({name: 0 for name in space.names if name.startswith("image_")})
    if all(config[f"px_{a}"] == 1 for a in axes):
        config["interleaved"] = 0
    return space.complete(config)


def check_random(name: str, seed: int) -> None:
    from inputs import make_inputs

    prog = program(name, DEFAULT_MODE[name])
    dims = prog.info.grid_dims
    shape = RANDOM_SHAPES[dims]
    if name not in _NAIVE:
        args = make_inputs(prog, shape, np.random.default_rng(7))
        _NAIVE[name] = (args, prog(**args, config="naive"))  # not a tuned variant the registry may hold
    args, expected = _NAIVE[name]
    config = fast_path_config(prog.space_for(problem_shape=shape), dims, seed)
    inside, _ = path_counts(prog, config, shape)
    assert inside > 0, config
    got = prog(**args, config=config)
    for key, ref in expected.items():
        if ref.dtype.kind == "f":
            scale = max(1.0, float(np.abs(ref).max()))
            np.testing.assert_allclose(got[key], ref, rtol=1e-5, atol=1e-5 * scale, err_msg=f"{key} with {config}")
        else:
            np.testing.assert_array_equal(got[key], ref, err_msg=f"{key} with {config}")


@pytest.mark.parametrize("name", RANDOM_EXAMPLES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_fast_path_variants_match_naive(name, seed):
    check_random(name, seed)


@pytest.mark.slow
@pytest.mark.parametrize("name", RANDOM_EXAMPLES)
def test_many_random_fast_path_variants_match_naive(name):
    for seed in range(100, 160):
        check_random(name, seed)
