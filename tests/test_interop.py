"""pyopencl interop: device arrays in and out, a caller's context and queue, chained filters
without host round trips, the built kernel enqueued by hand; positional image and dtype cast.

References are SciPy / NumPy on the host (sobel: ndimage.correlate with a zero border; harris:
the window sums of test_examples.harris_reference, repeated here)."""
from __future__ import annotations

import pathlib

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from scipy import ndimage

import imagecl
from imagecl.errors import ArgumentError

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
SHAPE = (37, 53)  # (height, width): odd, non-square
KX = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float64) / 8.0


@pytest.fixture(scope="module")
def sobel():
    return imagecl.load(EXAMPLES / "sobel.icl")


@pytest.fixture(scope="module")
def harris():
    return imagecl.load(EXAMPLES / "harris.icl")


@pytest.fixture(scope="module")
def queue():
    device = imagecl.select_device(None)  # IMAGECL_DEVICE, else the first GPU, else the CPU
    context = cl.Context([device])
    return cl.CommandQueue(context, device)


@pytest.fixture(scope="module")
def img():
    return np.random.default_rng(20).uniform(-1, 1, SHAPE).astype(np.float32)


def sobel_reference(img):
    x = img.astype(np.float64)
    return (ndimage.correlate(x, KX, mode="constant", cval=0.0), ndimage.correlate(x, KX.T, mode="constant", cval=0.0))


def harris_reference(dx, dy, k):
    def window_sum(a):
        p = np.pad(a, ((0, 1), (0, 1)), mode="constant")
        return p[:-1, :-1] + p[:-1, 1:] + p[1:, :-1] + p[1:, 1:]

    dx, dy = dx.astype(np.float64), dy.astype(np.float64)
    xx, yy, xy = window_sum(dx * dx), window_sum(dy * dy), window_sum(dx * dy)
    return xx * yy - xy * xy - k * (xx + yy) ** 2


# ---- device arrays in and out --------------------------------------------------------------------------------
def test_device_array_in_device_array_out(sobel, queue, img):
    d = cla.to_device(queue, img)
    out = sobel(d, returns="device")
    assert isinstance(out["dx"], cla.Array) and out["dx"].queue == queue and out["dx"].context == queue.context
    ref_dx, ref_dy = sobel_reference(img)
    np.testing.assert_allclose(out["dx"].get(), ref_dx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["dy"].get(), ref_dy, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(d.get(), img)  # the input is not changed


def test_device_input_numpy_output(sobel, queue, img):
    out = sobel(input=cla.to_device(queue, img))
    assert isinstance(out["dx"], np.ndarray)
    np.testing.assert_allclose(out["dx"], sobel_reference(img)[0], rtol=1e-5, atol=1e-5)


def test_numpy_in_on_callers_queue(sobel, queue, img):
    out = sobel(img, queue=queue, returns="device")
    assert out["dy"].queue == queue
    np.testing.assert_allclose(out["dy"].get(), sobel_reference(img)[1], rtol=1e-5, atol=1e-5)


def test_chain_sobel_then_harris(sobel, harris, queue, img, monkeypatch):
    """sobel's device outputs go straight into harris: nothing crosses to the host in between."""
    d = cla.to_device(queue, img)
    transfers = []
    real_get, real_set, real_copy = cla.Array.get, cla.Array.set, cl.enqueue_copy
    monkeypatch.setattr(cla.Array, "get", lambda *a, **k: transfers.append("get") or real_get(*a, **k))
    monkeypatch.setattr(cla.Array, "set", lambda *a, **k: transfers.append("set") or real_set(*a, **k))

    def copy(q, dest, src, **kwargs):
        if isinstance(dest, np.ndarray) or isinstance(src, np.ndarray):
            transfers.append("enqueue_copy")
        return real_copy(q, dest, src, **kwargs)

    monkeypatch.setattr(cl, "enqueue_copy", copy)
    grads = sobel(d, returns="device")
    corners = harris(dx=grads["dx"], dy=grads["dy"], k=0.04, returns="device")["output"]
    assert transfers == []  # no host round trip between the stages
    ref_dx, ref_dy = sobel_reference(img)
    ref = harris_reference(ref_dx, ref_dy, 0.04)
    got = corners.get()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-6 * np.abs(ref).max())


def test_image_memory_from_a_device_array(sobel, queue, img, monkeypatch):
    """An image-memory variant fed a device array copies buffer -> image on the device."""
    made = []
    real = cl.create_image

    def create_image(*args, **kwargs):
        made.append("hostbuf" in kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(cl, "create_image", create_image)
    out = sobel(cla.to_device(queue, img), config={"image_input": 1}, returns="device")
    assert made == [False]  # one image, not filled from the host
    np.testing.assert_allclose(out["dx"].get(), sobel_reference(img)[0], rtol=1e-5, atol=1e-5)


def test_written_device_array_is_not_changed(sobel, queue, img):
    given = cla.to_device(queue, np.full(SHAPE, 7, np.float32))
    out = sobel(input=cla.to_device(queue, img), dx=given, returns="device")
    np.testing.assert_array_equal(given.get(), np.full(SHAPE, 7, np.float32))
    assert out["dx"] is not given
    np.testing.assert_allclose(out["dx"].get(), sobel_reference(img)[0], rtol=1e-5, atol=1e-5)


def test_run_reports_kernel_seconds_on_a_profiling_queue(sobel, queue, img):
    profiling = cl.CommandQueue(queue.context, queue.device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    _, seconds = sobel.run({"input": cla.to_device(profiling, img)})
    assert seconds is not None and seconds > 0
    _, seconds = sobel.run({"input": cla.to_device(queue, img)})
    assert seconds is None  # the caller's queue does not profile


# ---- mismatches get clear errors -----------------------------------------------------------------------
def test_array_from_another_context(sobel, queue, img):
    other = cl.CommandQueue(cl.Context([queue.device]), queue.device)
    with pytest.raises(ArgumentError, match="'input' belongs to another OpenCL context than the queue"):
        sobel(cla.to_device(other, img), queue=queue)
    with pytest.raises(ArgumentError, match="'dy' belongs to another OpenCL context than device array 'input'"):
        sobel(input=cla.to_device(queue, img), dy=cla.to_device(other, img))


def test_device_array_dtype_shape_and_layout(sobel, queue, img):
    with pytest.raises(ArgumentError, match=r"needs dtype float32, got float64.*cast=True"):
        sobel(cla.to_device(queue, img.astype(np.float64)))
    with pytest.raises(ArgumentError, match="grid images must have the same shape"):
        sobel(input=cla.to_device(queue, img), dx=cla.to_device(queue, img[:-1]))
    with pytest.raises(ArgumentError, match="view at an offset"):
        sobel(cla.to_device(queue, img)[1:])
    out = sobel(cla.to_device(queue, img.astype(np.float64)), cast=True)
    np.testing.assert_allclose(out["dx"], sobel_reference(img)[0], rtol=1e-5, atol=1e-5)


def test_bad_queue_out_and_timeout(sobel, queue, img):
    with pytest.raises(ArgumentError, match="queue= needs a pyopencl.CommandQueue"):
        sobel(img, queue=queue.context)
    with pytest.raises(ArgumentError, match="returns= is 'numpy'"):
        sobel(img, returns="gpu")
    with pytest.raises(ArgumentError, match="timeout goes to another process"):
        sobel(cla.to_device(queue, img), timeout=10)
    # device= naming the queue's own device is no conflict
    assert sobel(img, queue=queue, device=queue.device, returns="device")["dx"].queue == queue


# ---- the built kernel ------------------------------------------------------------------------------------------
def test_built_kernel_enqueued_by_hand(sobel, queue, img):
    built = sobel.build(queue, size=(SHAPE[1], SHAPE[0]))
    assert isinstance(built.program, cl.Program) and isinstance(built.kernel, cl.Kernel)
    assert built.kernel.function_name == sobel.kernel_symbol
    assert [a.param for a in built.arguments if a.role == "buffer"] == ["input", "dx", "dy"]
    assert built.global_size[0] >= SHAPE[1] and built.global_size[1] >= SHAPE[0]
    d = cla.to_device(queue, img)
    dx, dy = cla.zeros_like(d), cla.zeros_like(d)
    built(input=d, dx=dx, dy=dy).wait()
    ref_dx, ref_dy = sobel_reference(img)
    np.testing.assert_allclose(dx.get(), ref_dx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dy.get(), ref_dy, rtol=1e-5, atol=1e-5)
    # enqueued again with the same arguments, by pyopencl alone
    dx.fill(0)
    cl.enqueue_nd_range_kernel(queue, built.kernel, built.global_size, built.local_size).wait()
    np.testing.assert_allclose(dx.get(), ref_dx, rtol=1e-5, atol=1e-5)


def test_built_kernel_configuration_and_image_memory(sobel, queue, img):
    built = sobel.build(queue, size=(SHAPE[1], SHAPE[0]), config={"image_input": 1, "wg_x": 8, "wg_y": 4})
    assert built.configuration["image_input"] == 1 and built.local_size == (8, 4)
    assert [a.role for a in built.arguments if a.param == "input"][0] == "image"
    d = cla.to_device(queue, img)
    dx, dy = cla.zeros_like(d), cla.zeros_like(d)
    built(input=d, dx=dx, dy=dy).wait()
    np.testing.assert_allclose(dx.get(), sobel_reference(img)[0], rtol=1e-5, atol=1e-5)


def test_built_kernel_errors(sobel, queue, img):
    with pytest.raises(ArgumentError, match="needs the size"):
        sobel.build(queue)
    with pytest.raises(ArgumentError, match="2 positive integers"):
        sobel.build(queue, size=(10, 0))
    built = sobel.build(queue, size=(SHAPE[1], SHAPE[0]))
    d = cla.to_device(queue, img)
    with pytest.raises(ArgumentError, match="allocates nothing: pass a device array for 'dx', 'dy'"):
        built.set_args(input=d)
    with pytest.raises(ArgumentError, match="takes device arrays.*'input' is ndarray"):
        built.set_args(input=img, dx=cla.zeros_like(d), dy=cla.zeros_like(d))
    small = cla.to_device(queue, img[:-1].copy())
    with pytest.raises(ArgumentError, match="built for size 53x37, the arguments have size 53x36"):
        built.set_args(input=small, dx=cla.zeros_like(small), dy=cla.zeros_like(small))


# ---- positional image and cast ----------------------------------------------------------------------------------
def test_positional_image(sobel, harris, img):
    by_name = sobel(input=img)
    by_position = sobel(img)
    np.testing.assert_array_equal(by_position["dx"], by_name["dx"])
    with pytest.raises(ArgumentError, match="'harris' reads 2 arrays \\(dx, dy\\): pass them by name"):
        harris(img, k=0.04)
    with pytest.raises(ArgumentError, match="given twice"):
        sobel(img, input=img)
    with pytest.raises(ArgumentError, match="at most one argument by position"):
        sobel(img, img)


def test_cast_is_opt_in(sobel, img):
    wide = img.astype(np.float64)
    with pytest.raises(ArgumentError, match="needs dtype float32, got float64"):
        sobel(wide)
    out = sobel(wide, cast=True)
    np.testing.assert_array_equal(out["dx"], sobel(img)["dx"])
    out = sobel(img.tolist(), cast=True)  # a nested list too
    np.testing.assert_array_equal(out["dx"], sobel(img)["dx"])


def test_kernel_parameters_named_like_call_options():
    """`out` is a common parameter name and no call option; one named like an option (`queue`)
    is passed through run()'s dict."""
    prog = imagecl.compile("""
#pragma imcl grid(queue, out)
void f(Image<float> queue, Image<float> out) {
    out[idx][idy] = 2.0f * queue[idx][idy];
}
""", "f.icl")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(prog.run({"queue": x})[0]["out"], 2 * x)
    np.testing.assert_array_equal(prog(x)["out"], 2 * x)
    with pytest.raises(ArgumentError, match="queue= needs a pyopencl.CommandQueue, got ndarray"):
        prog(queue=x)


def test_built_kernel_on_a_named_device_uses_our_queue(sobel, img):
    name = imagecl.select_device(None).name.strip()  # the default device, by its name
    built = sobel.build(name, size=(SHAPE[1], SHAPE[0]))
    queue = built.queue
    assert queue.device == imagecl.select_device(name)
    d = cla.to_device(queue, img)
    dx, dy = cla.zeros_like(d), cla.zeros_like(d)
    event = built(input=d, dx=dx, dy=dy)
    event.wait()
    assert event.profile.end > event.profile.start  # our queue profiles
    np.testing.assert_allclose(dy.get(), sobel_reference(img)[1], rtol=1e-5, atol=1e-5)
    # prog() on that device runs in the same context: its device outputs feed the built kernel
    grads = sobel(d, returns="device")
    assert grads["dx"].context == queue.context


@pytest.mark.parametrize("how", ["numpy", "device", "built"])
def test_a_work_group_over_the_kernels_own_limit_is_a_clear_error(monkeypatch, queue, img, how):
    """A work-group the device allows can exceed what the built kernel allows (its registers: on
    an H100, stereo at 64x16 gets OUT_OF_RESOURCES from the driver). Every way of running a
    variant checks the kernel's own limit first and names it. PoCL allows every work-group its
    device does, so the kernel's limit is lowered here to 16 work-items."""
    from imagecl.runtime import timing

    real = timing.check_work_group_limit

    class Limited:  # the built kernel, with a lower limit than PoCL reports
        def __init__(self, kernel):
            self.kernel = kernel

        def get_work_group_info(self, what, device):
            return 16 if what == cl.kernel_work_group_info.WORK_GROUP_SIZE else self.kernel.get_work_group_info(
                what, device)

    checked = []

    def limited(kernel, device, local_size):
        checked.append(local_size)
        return real(Limited(kernel), device, local_size)

    for module in ("imagecl.program", "imagecl.runtime.launcher"):
        monkeypatch.setattr(f"{module}.check_work_group_limit", limited)
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    config = {"wg_x": 8, "wg_y": 4}
    with pytest.raises(imagecl.ExecutionError, match=r"work-group size \(8, 4\) exceeds this kernel's limit of 16"):
        if how == "numpy":
            prog(img, queue=queue, config=config)
        elif how == "device":
            prog(cla.to_device(queue, img), queue=queue, returns="device", config=config)
        else:
            prog.build(queue, size=img.shape[::-1], config=config)
    assert checked and tuple(checked[-1]) == (8, 4)
    # within the limit it runs, and equals the naive variant
    small = {"wg_x": 4, "wg_y": 4}
    tuned, naive = (prog(img, queue=queue, config=c) for c in (small, "naive"))
    assert tuned.keys() == naive.keys()
    for name in naive:
        np.testing.assert_array_equal(tuned[name], naive[name])
