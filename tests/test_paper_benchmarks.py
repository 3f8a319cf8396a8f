"""Reference tests for the benchmark programs of Falch & Elster, "Machine learning-based
auto-tuning for enhanced performance portability of OpenCL applications" (Tables 1, 4, 5):
``examples/convolution9.icl``, ``stereo.icl``, ``raycasting.icl``, ``median_select.icl`` and
``bilateral.icl``.

Every program is compiled by ``imagecl`` and run on the default OpenCL device (PoCL on the CPU
in CI); its output is compared with an *independent* host reference (SciPy ``ndimage``,
OpenCV, or plain NumPy written from the program's header comment), never with code generated
by imagecl. Each application-specific tunable (``ALGORITHM``, ``PRECOMPUTE_SPATIAL``) is run
with every value, and each program also runs a few non-default tuning configurations
(work-group size, pixels per thread, image / local / constant memory, unrolling), which must
give the same output as the naive variant.

Host convention: a 2-D image is an array of shape (height, width) and ``img[x][y]`` in .icl is
``arr[y, x]``; 3-D is (depth, height, width) and ``img[x][y][z]`` is ``arr[z, y, x]``. Shapes
are small, odd and non-square (both orientations) so that a swapped width/height or an
off-by-one at the border shows up.

Tolerances:

* stereo and median_select are integer programs: bit-exact.
* raycasting composites in float32 and truncates to uchar4. Its products are written as
  statements of their own (never ``a * b + c`` in one expression), so OpenCL's default
  FP_CONTRACT cannot fuse them, and every operation is a single correctly rounded IEEE float32
  operation. The reference repeats exactly those float32 operations step by step in NumPy, so
  the output must match bit-exactly, including where a ray stops (acc.w > 0.99f).
* convolution9 is compared with a float64 reference within ``rtol=1e-5`` and
  ``atol=1e-5 * scale`` (scale = max |input| * sum |filter|): the device sums 81 float32
  products, may fuse multiply-adds and may sum in another order when it unrolls.
* bilateral computes float weights with ``exp`` and rounds the normalised sum to uchar. Against
  the float64 reference f, the output must be round(f) (= floor(f + 0.5)), except where f lies
  within 1e-3 of a rounding boundary (k + 0.5), where floor or ceil are both accepted (the float32
  result may fall on either side); such pixels must be rare. The two PRECOMPUTE_SPATIAL variants
  compute the weight with the same expression and must agree bit-exactly with each other.

Every distinct kernel source is loaded once per module through the ``program`` cache below.
"""

from __future__ import annotations

import pathlib

import cv2
import numpy as np
import pytest
from scipy import ndimage

import imagecl

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

RTOL = 1e-5
ATOL = 1e-5  # multiplied by the data scale of each test

# (height, width): odd, non-square, both orientations; plus a tiny one smaller than the windows.
SHAPES_2D = [(29, 37), (37, 29)]
TINY_2D = (3, 5)
SHAPE_3D = (9, 11, 13)  # (depth, height, width)

_PROGRAMS: dict = {}


def program(name: str) -> imagecl.Program:
    if name not in _PROGRAMS:
        _PROGRAMS[name] = imagecl.load(str(EXAMPLES / f"{name}.icl"))
    return _PROGRAMS[name]


def rng_for(*key) -> np.random.Generator:
    """A fixed-seed generator, different for every test / parameter combination."""
    seed = sum((i + 1) * ord(c) for i, c in enumerate("/".join(str(k) for k in key)))
    return np.random.default_rng(2016 + seed)


def assert_exact(got, ref, dtype):
    assert got.dtype == np.dtype(dtype), got.dtype
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_array_equal(got, ref.astype(dtype))


def assert_float_close(got, ref, scale=1.0):
    assert got.dtype == np.float32
    assert got.shape == ref.shape
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=RTOL, atol=ATOL * scale)


# Non-default tuning configurations run by every program (besides the naive variant): the
# compiler's own parameters, chosen where the program's space has them. Each is a partial
# configuration; missing parameters take their defaults. With ``tunable``, the configurations
# take that application-specific parameter's values in turn, so every value meets a tuned variant.
def tuned_configs(prog, tunable: str | None = None) -> list[dict]:
    space = prog.space
    names = set(space.names)
    wanted = [
        {"wg_x": 8, "wg_y": 4, "px_x": 2, "px_y": 1},
        {"wg_x": 4, "wg_y": 8, "px_x": 1, "px_y": 2, "interleaved": 1},
    ]
    mem = {n: 1 for n in names if n.startswith(("image_", "local_"))}
    # constant memory excludes image and local memory for the same array (a space constraint)
    mem.update({n: 1 for n in names if n.startswith("constant_")
                and not {"image_" + n[len("constant_"):], "local_" + n[len("constant_"):]} & names})
    unroll = {n: max(space.parameter(n).values) for n in names if n.startswith("unroll_")}
    wanted.append({"wg_x": 4, "wg_y": 4, **mem, **unroll})
    configs = []
    for n, cfg in enumerate(wanted):
        if "wg_z" in names:
            cfg["wg_z"] = 2
        if tunable is not None:
            values = space.parameter(tunable).values
            cfg[tunable] = values[n % len(values)]
        configs.append({k: v for k, v in cfg.items() if k in names})
    return configs


# ----------------------------------------------------------------------------------------
# convolution9: 9x9 convolution, clamped
# ----------------------------------------------------------------------------------------


def convolution9_reference(img, filt):
    ref = ndimage.convolve(img.astype(np.float64), filt.astype(np.float64), mode="nearest")
    # cross-check with OpenCV: convolution = correlation with the flipped filter
    p = cv2.copyMakeBorder(img.astype(np.float64), 4, 4, 4, 4, cv2.BORDER_REPLICATE)
    cv = cv2.filter2D(p, cv2.CV_64F, filt[::-1, ::-1].astype(np.float64), borderType=cv2.BORDER_CONSTANT)
    np.testing.assert_allclose(ref, cv[4:4 + img.shape[0], 4:4 + img.shape[1]], rtol=1e-9, atol=1e-9)
    return ref


@pytest.mark.parametrize("shape", SHAPES_2D + [TINY_2D])
def test_convolution9(shape):
    rng = rng_for("convolution9", shape)
    img = rng.uniform(-1, 1, shape).astype(np.float32)
    filt = rng.uniform(-1, 1, (9, 9)).astype(np.float32)  # asymmetric: a flip would show
    out = program("convolution9")(input=img, filter=filt)
    ref = convolution9_reference(img, filt)
    assert_float_close(out["output"], ref, scale=np.abs(img).max() * np.abs(filt).sum())


def test_convolution9_tuned():
    prog = program("convolution9")
    rng = rng_for("convolution9-tuned")
    img = rng.uniform(-1, 1, SHAPES_2D[0]).astype(np.float32)
    filt = rng.uniform(-1, 1, (9, 9)).astype(np.float32)
    ref = convolution9_reference(img, filt)
    for cfg in tuned_configs(prog):
        out = prog(input=img, filter=filt, config=cfg)
        assert_float_close(out["output"], ref, scale=np.abs(img).max() * np.abs(filt).sum())


# ----------------------------------------------------------------------------------------
# stereo: SAD block matching, 8 disparities, 5x5 window, clamped
# ----------------------------------------------------------------------------------------

DISPARITY, R = 8, 2


def stereo_reference(left, right):
    h, w = left.shape
    lp = np.pad(left.astype(np.int64), R, mode="edge")
    # right is read at x + i - d: columns down to -R - (DISPARITY - 1)
    rp = np.pad(right.astype(np.int64), ((R, R), (R + DISPARITY - 1, R)), mode="edge")
    costs = np.zeros((DISPARITY, h, w), np.int64)
    for d in range(DISPARITY):
        for j in range(-R, R + 1):
            for i in range(-R, R + 1):
                lv = lp[R + j:R + j + h, R + i:R + i + w]
                c0 = R + DISPARITY - 1 + i - d
                rv = rp[R + j:R + j + h, c0:c0 + w]
                costs[d] += np.abs(lv - rv)
    return np.argmin(costs, axis=0), costs  # argmin: the first (smallest) d on ties


def test_stereo_reference_scalar():
    """The vectorised reference equals a scalar transcription of the header comment."""
    rng = rng_for("stereo-ref")
    h, w = 5, 7
    left = rng.integers(0, 6, (h, w)).astype(np.int32)
    right = rng.integers(0, 6, (h, w)).astype(np.int32)
    ref, _ = stereo_reference(left, right)

    def px(a, x, y):
        return int(a[min(max(y, 0), h - 1), min(max(x, 0), w - 1)])

    for y in range(h):
        for x in range(w):
            best_cost, best_d = None, 0
            for d in range(DISPARITY):
                cost = sum(abs(px(left, x + i, y + j) - px(right, x + i - d, y + j))
                           for j in range(-R, R + 1) for i in range(-R, R + 1))
                if best_cost is None or cost < best_cost:
                    best_cost, best_d = cost, d
            assert ref[y, x] == best_d


@pytest.mark.parametrize("shape", SHAPES_2D)
def test_stereo_shifted_scene(shape):
    """right is left shifted by a per-row-band disparity plus noise: the matcher finds it."""
    h, w = shape
    rng = rng_for("stereo-shift", shape)
    left = rng.integers(-1000, 1000, shape).astype(np.int32)
    right = np.empty_like(left)
    true_d = np.zeros(shape, np.int64)
    for y in range(h):
        d = (y // 8) % DISPARITY  # bands of 8 rows with disparities 0, 1, 2, ...
        # right[x - d] = left[x]  <=>  right[x] = left[x + d]
        right[y] = np.concatenate([left[y, d:], rng.integers(-1000, 1000, d)])
        true_d[y] = d
    right = (right + rng.integers(-3, 4, shape)).astype(np.int32)
    out = program("stereo")(left=left, right=right)
    ref, _ = stereo_reference(left, right)
    assert_exact(out["disparity"], ref, np.int32)
    # where the window stays inside one band and inside both images, the true disparity wins
    inner = np.zeros(shape, bool)
    for y in range(h):
        if R <= y % 8 < 8 - R and y < h - R:
            inner[y, R + DISPARITY - 1:w - R] = True
    assert inner.any()
    np.testing.assert_array_equal(ref[inner], true_d[inner])


@pytest.mark.parametrize("shape", SHAPES_2D + [TINY_2D])
def test_stereo_random_with_ties(shape):
    """Small value range: many equal costs, so the first-minimum tie rule matters."""
    rng = rng_for("stereo-ties", shape)
    left = rng.integers(0, 3, shape).astype(np.int32)
    right = rng.integers(0, 3, shape).astype(np.int32)
    out = program("stereo")(left=left, right=right)
    ref, costs = stereo_reference(left, right)
    ties = (costs == costs.min(axis=0)).sum(axis=0) > 1
    assert ties.any()
    assert_exact(out["disparity"], ref, np.int32)


def test_stereo_tuned():
    prog = program("stereo")
    rng = rng_for("stereo-tuned")
    shape = SHAPES_2D[1]
    left = rng.integers(-50, 50, shape).astype(np.int32)
    right = np.roll(left, -3, axis=1) + rng.integers(-2, 3, shape).astype(np.int32)
    ref, _ = stereo_reference(left, right)
    for cfg in tuned_configs(prog):
        out = prog(left=left, right=right, config=cfg)
        assert_exact(out["disparity"], ref, np.int32)


# ----------------------------------------------------------------------------------------
# raycasting: front-to-back compositing along z with early termination
# ----------------------------------------------------------------------------------------


def raycasting_reference(volume, transfer, out_shape):
    """float32 step by step, the operations of the header comment in the same order."""
    f32 = np.float32
    depth, vh, vw = volume.shape
    h, w = out_shape
    vx = (np.arange(w) * vw) // w  # non-negative: floor == C truncation
    vy = (np.arange(h) * vh) // h
    acc = np.zeros((h, w, 4), np.float32)
    active = np.ones((h, w), bool)
    steps = np.zeros((h, w), np.int64)
    for z in range(depth):
        s = volume[z][vy[:, None], vx[None, :]]
        ti = (s * f32(127.0)).astype(np.int32)  # s >= 0: truncation
        c = transfer[ti]
        t = ((f32(1.0) - acc[..., 3]) * c[..., 3]).astype(np.float32)
        contrib = (t[..., None] * c[..., :3]).astype(np.float32)
        new_xyz = (acc[..., :3] + contrib).astype(np.float32)
        new_w = (acc[..., 3] + t).astype(np.float32)
        acc[..., :3] = np.where(active[..., None], new_xyz, acc[..., :3])
        acc[..., 3] = np.where(active, new_w, acc[..., 3])
        steps += active
        active &= ~(acc[..., 3] > f32(0.99))
    scaled = (acc * f32(255.0)).astype(np.float32)
    return np.clip(np.trunc(scaled), 0, 255).astype(np.uint8), steps


def raycasting_data(key, vol_shape):
    rng = rng_for("raycasting", key)
    depth, vh, vw = vol_shape
    volume = rng.uniform(0, 1, vol_shape).astype(np.float32) ** 2  # mostly low values
    # a dense blob in one corner, so some rays stop early and others go all the way
    volume[depth // 3:, : vh // 2, : vw // 2] = rng.uniform(0.8, 1.0, (depth - depth // 3, vh // 2, vw // 2))
    volume = volume.astype(np.float32)
    volume[0, 0, -1] = 1.0  # the top transfer entry (index 127)
    transfer = rng.uniform(0, 1, (128, 4)).astype(np.float32)
    ramp = np.linspace(0, 1, 128, dtype=np.float32)
    transfer[:, 3] = (0.6 * ramp ** 2 + rng.uniform(0, 0.05, 128)).astype(np.float32)
    return volume, transfer


def test_raycasting_reference_scalar():
    """The vectorised reference equals a scalar float32 transcription of the header comment."""
    f32 = np.float32
    volume, transfer = raycasting_data("ref", (7, 5, 6))
    h, w = 4, 9
    ref, _ = raycasting_reference(volume, transfer, (h, w))
    for y in range(h):
        for x in range(w):
            vx, vy = x * 6 // w, y * 5 // h
            acc = [f32(0)] * 4
            for z in range(7):
                c = transfer[int(volume[z, vy, vx] * f32(127.0))]
                t = (f32(1) - acc[3]) * c[3]
                acc = [acc[0] + t * c[0], acc[1] + t * c[1], acc[2] + t * c[2], acc[3] + t]
                if acc[3] > f32(0.99):
                    break
            expect = [min(max(int(a * f32(255)), 0), 255) for a in acc]
            assert list(ref[y, x]) == expect


@pytest.mark.parametrize("vol_shape,out_shape", [
    (SHAPE_3D, (29, 37)),    # output larger than the volume: rays repeat columns
    ((13, 37, 29), (11, 9)),  # output smaller than the volume: rays skip columns
])
def test_raycasting(vol_shape, out_shape):
    volume, transfer = raycasting_data(vol_shape, vol_shape)
    garbage = np.full(out_shape + (4,), 77, np.uint8)  # defines the grid; overwritten
    out = program("raycasting")(volume=volume, output=garbage, transfer=transfer)
    ref, steps = raycasting_reference(volume, transfer, out_shape)
    assert (steps < vol_shape[0]).any() and (steps == vol_shape[0]).any()  # both kinds of ray
    assert_exact(out["output"], ref, np.uint8)


def test_raycasting_tuned():
    prog = program("raycasting")
    vol_shape, out_shape = SHAPE_3D, (29, 37)
    volume, transfer = raycasting_data("tuned", vol_shape)
    ref, _ = raycasting_reference(volume, transfer, out_shape)
    for cfg in tuned_configs(prog):
        out = prog(volume=volume, output=np.zeros(out_shape + (4,), np.uint8), transfer=transfer, config=cfg)
        assert_exact(out["output"], ref, np.uint8)


# ----------------------------------------------------------------------------------------
# median_select: 5x5 median, mirror, ALGORITHM 0 (sort) / 1 (histogram)
# ----------------------------------------------------------------------------------------


def median_reference(img):
    h, w = img.shape
    p = np.pad(img, 2, mode="reflect")  # numpy 'reflect' == imagecl 'mirror'
    stack = np.stack([p[2 + j:2 + j + h, 2 + i:2 + i + w] for j in range(-2, 3) for i in range(-2, 3)])
    ref = np.sort(stack, axis=0)[12]
    np.testing.assert_array_equal(ref, ndimage.median_filter(img, size=5, mode="mirror"))
    return ref


@pytest.mark.parametrize("algorithm", [0, 1])
@pytest.mark.parametrize("shape", SHAPES_2D + [TINY_2D])
@pytest.mark.parametrize("values", ["full", "few"])
def test_median_select(algorithm, shape, values):
    rng = rng_for("median_select", shape, values)
    if values == "full":  # the extremes 0 and 255 included
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        img.flat[:2] = (0, 255)
    else:  # many equal values: ties in the sort, tall histogram bins
        img = rng.choice(np.array([0, 1, 254, 255], np.uint8), shape)
    out = program("median_select")(input=img, config={"ALGORITHM": algorithm})
    assert_exact(out["output"], median_reference(img), np.uint8)


def test_median_select_tuned():
    prog = program("median_select")
    rng = rng_for("median_select-tuned")
    img = rng.integers(0, 256, SHAPES_2D[0], dtype=np.uint8)
    ref = median_reference(img)
    for cfg in tuned_configs(prog, "ALGORITHM"):
        out = prog(input=img, config=cfg)
        assert_exact(out["output"], ref, np.uint8)


# ----------------------------------------------------------------------------------------
# bilateral: 5x5x5 bilateral filter of a uchar volume, clamped, PRECOMPUTE_SPATIAL 0 / 1
# ----------------------------------------------------------------------------------------

SIGMA_S, SIGMA_R = 1.5, 20.0


def bilateral_reference(vol, sigma_s, sigma_r):
    """float64 value before rounding."""
    d, h, w = vol.shape
    v64 = vol.astype(np.float64)
    p = np.pad(v64, 2, mode="edge")
    num = np.zeros_like(v64)
    den = np.zeros_like(v64)
    for k in range(-2, 3):
        for j in range(-2, 3):
            for i in range(-2, 3):
                nb = p[2 + k:2 + k + d, 2 + j:2 + j + h, 2 + i:2 + i + w]
                wgt = np.exp(-(i * i + j * j + k * k) / (2 * sigma_s ** 2) - (nb - v64) ** 2 / (2 * sigma_r ** 2))
                num += wgt * nb
                den += wgt
    return num / den


def test_bilateral_reference_large_sigma_range():
    """With a huge range sigma the bilateral filter is a Gaussian filter (scipy, 'nearest')."""
    rng = rng_for("bilateral-ref")
    vol = rng.integers(0, 256, (5, 6, 7)).astype(np.uint8)
    ref = bilateral_reference(vol, 1.5, 1e9)
    g = np.exp(-np.arange(-2, 3) ** 2 / (2 * 1.5 ** 2))
    kern = g[:, None, None] * g[None, :, None] * g[None, None, :]
    gauss = ndimage.correlate(vol.astype(np.float64), kern / kern.sum(), mode="nearest")
    np.testing.assert_allclose(ref, gauss, rtol=1e-12, atol=1e-12)


def assert_rounded(got, f, eps=1e-3):
    """got == round-half-up(f), where f is not within eps of a rounding boundary."""
    assert got.dtype == np.uint8 and got.shape == f.shape
    lo = np.floor(f + 0.5 - eps)
    hi = np.floor(f + 0.5 + eps)
    g = got.astype(np.float64)
    bad = ~((g == lo) | (g == hi))
    assert not bad.any(), f"{bad.sum()} voxels differ, e.g. got {g[bad][:5]} for {f[bad][:5]}"
    assert (lo != hi).mean() < 0.01  # ambiguous voxels are rare


def bilateral_volume(key, shape):
    rng = rng_for("bilateral", key)
    vol = rng.normal(80, 15, shape)
    vol[:, :, shape[2] // 2:] += 100  # a step edge along x, which the filter preserves
    vol.flat[:2] = (0, 255)
    return np.clip(np.rint(vol), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("shape", [SHAPE_3D, (11, 3, 5)])
def test_bilateral(shape):
    vol = bilateral_volume(shape, shape)
    prog = program("bilateral")
    f = bilateral_reference(vol, SIGMA_S, SIGMA_R)
    outs = {}
    for pre in (0, 1):
        outs[pre] = prog(input=vol, sigma_spatial=SIGMA_S, sigma_range=SIGMA_R,
                         config={"PRECOMPUTE_SPATIAL": pre})["output"]
        assert_rounded(outs[pre], f)
    np.testing.assert_array_equal(outs[0], outs[1])
    # the step edge survives (a Gaussian of this width would blur it)
    c = shape[2] // 2
    assert outs[0][:, :, c].mean() - outs[0][:, :, c - 1].mean() > 80


def test_bilateral_tuned():
    prog = program("bilateral")
    vol = bilateral_volume("tuned", SHAPE_3D)
    f = bilateral_reference(vol, SIGMA_S, SIGMA_R)
    naive = prog(input=vol, sigma_spatial=SIGMA_S, sigma_range=SIGMA_R, config="naive")["output"]
    assert_rounded(naive, f)
    for cfg in tuned_configs(prog, "PRECOMPUTE_SPATIAL"):
        out = prog(input=vol, sigma_spatial=SIGMA_S, sigma_range=SIGMA_R, config=cfg)["output"]
        assert_rounded(out, f)


def test_space_sizes():
    """Each program exposes its application-specific tunable in its tuning space."""
    assert program("median_select").space.parameter("ALGORITHM").values == [0, 1]
    assert program("bilateral").space.parameter("PRECOMPUTE_SPATIAL").values == [0, 1]
    for name in ("convolution9", "stereo", "raycasting", "median_select", "bilateral"):
        assert program(name).space.size > 1
