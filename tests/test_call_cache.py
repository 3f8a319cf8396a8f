"""What a repeated prog(...) call keeps (the built program and launch per argument shapes, dtypes,
scalars, context and configuration) and what it skips (zero-fill and copy-in of outputs the
kernel overwrites whole): each cache must miss when what it depends on changes, and the checks
that protect the caller must still run on a cache hit.

References are NumPy / SciPy on the host."""
from __future__ import annotations

import pathlib

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from scipy import ndimage

import imagecl
from imagecl import tuned
from imagecl.errors import ArgumentError
from imagecl.passes.coverage import overwritten_images

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
KX = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float64) / 8.0


def _program(body: str, grid: str = "input, output") -> imagecl.Program:
    return imagecl.compile(f"#pragma imcl grid({grid})\nvoid f(Image<float> input, Image<float> output){{ {body} }}",
                           "f.icl")


@pytest.fixture(scope="module")
def device():
    return imagecl.select_device(None)  # IMAGECL_DEVICE, else the first GPU, else the CPU


@pytest.fixture(scope="module")
def queue(device):
    return cl.CommandQueue(cl.Context([device]), device)




def sobel_dx(img):
    return ndimage.correlate(img.astype(np.float64), KX, mode="constant", cval=0.0)


# ---- which outputs are overwritten whole -------------------------------------------------------------------
@pytest.mark.parametrize("body, expected", [
    ("output[idx][idy] = input[idx][idy];", {"output"}),
    ("float v = input[idx][idy] * 2.0f; output[idx][idy] = v; if (idx == 0) return;", {"output"}),
    ("if (input[idx][idy] > 0.0f) output[idx][idy] = 1.0f;", set()),  # some pixels never written
    ("if (input[idx][idy] > 0.0f) { output[idx][idy] = 1.0f; } else { output[idx][idy] = 2.0f; }", set()),  # narrow
    ("if (idx == 0) return; output[idx][idy] = 1.0f;", set()),  # column 0 keeps its old value
    ("for (int i = 0; i < 1; i++) { output[idx][idy] = 1.0f; }", set()),  # inside a loop
    ("output[idx][idy] += 1.0f;", set()),  # reads the old value
    ("output[idx][idy] = 1.0f; output[idx][idy] = output[idx][idy] + 1.0f;", set()),  # reads it
    ("output[idx + 1][idy] = 1.0f;", set()),  # not the grid point
    ("output[idy][idx] = 1.0f;", set()),  # transposed
])
def test_overwritten_images(body, expected):
    assert overwritten_images(_program(body).info) == expected


def test_overwritten_needs_every_grid_axis():
    prog = _program("output[idx][idy][idz] = input[idx][idy][idz];")
    assert overwritten_images(prog.info) == {"output"}
    assert overwritten_images(_program("output[idx][idy][idz + 1] = input[idx][idy][idz];").info) == set()
    assert overwritten_images(_program("output[idx][idz][idy] = input[idx][idy][idz];").info) == set()


def test_one_component_of_a_vector_pixel_is_not_the_whole_pixel():
    source = ("#pragma imcl grid(input, output)\nvoid f(Image<float4> input, Image<float4> output){ "
              "output[idx][idy]%s = input[idx][idy]%s; }")
    assert overwritten_images(imagecl.compile(source % (".x", ".x")).info) == set()
    assert overwritten_images(imagecl.compile(source % ("", "")).info) == {"output"}


def test_an_output_outside_the_grid_is_never_overwritten_whole():
    # the grid is `input`'s shape: a larger `output` keeps its values outside it
    assert overwritten_images(_program("output[idx][idy] = 1.0f;", grid="input").info) == set()


def test_examples_whose_outputs_are_overwritten():
    sobel = imagecl.load(EXAMPLES / "sobel.icl")
    threshold = imagecl.load(EXAMPLES / "threshold.icl")  # writes in both branches of an if: kept conservative
    assert sobel.overwritten == {"dx", "dy"} and threshold.overwritten == set()


# ---- outputs the kernel may leave unwritten keep zeros or the caller's values -----------------------------
@pytest.fixture(scope="module")
def partial():
    return _program("if (input[idx][idy] > 0.0f) output[idx][idy] = input[idx][idy];")


@pytest.fixture(scope="module")
def signed():
    return np.random.default_rng(3).uniform(-1, 1, (19, 23)).astype(np.float32)


def test_partly_written_output_left_out_is_zero_elsewhere(partial, signed, queue):
    want = np.where(signed > 0, signed, 0)
    np.testing.assert_array_equal(partial(signed)["output"], want)
    np.testing.assert_array_equal(partial(cla.to_device(queue, signed), returns="device")["output"].get(), want)


def test_partly_written_output_given_keeps_its_values_elsewhere(partial, signed, queue):
    given = np.full(signed.shape, 7.0, np.float32)
    want = np.where(signed > 0, signed, 7.0)
    np.testing.assert_array_equal(partial(input=signed, output=given)["output"], want)
    d_given = cla.to_device(queue, given)
    out = partial(input=cla.to_device(queue, signed), output=d_given, returns="device")["output"]
    np.testing.assert_array_equal(out.get(), want)
    np.testing.assert_array_equal(d_given.get(), given)  # the caller's array is not changed
    np.testing.assert_array_equal(given, 7.0)


def test_overwritten_output_given_is_computed_and_the_callers_array_kept(queue):
    prog = _program("output[idx][idy] = input[idx][idy] * 2.0f;")
    img = np.arange(6 * 5, dtype=np.float32).reshape(6, 5)
    d_given = cla.to_device(queue, np.full(img.shape, 7.0, np.float32))
    out = prog(input=cla.to_device(queue, img), output=d_given, returns="device")["output"]
    assert out.data.int_ptr != d_given.data.int_ptr
    np.testing.assert_array_equal(out.get(), img * 2)
    np.testing.assert_array_equal(d_given.get(), 7.0)


# ---- the per-call cache misses when what it depends on changes --------------------------------------------
def test_a_repeated_call_builds_nothing_and_a_new_shape_is_right(built_sources, queue):
    sobel = imagecl.load(EXAMPLES / "sobel.icl")  # a fresh Program: an empty cache
    rng = np.random.default_rng(1)
    small, large = (rng.uniform(-1, 1, s).astype(np.float32) for s in ((17, 29), (31, 13)))
    for _ in range(3):
        np.testing.assert_allclose(sobel(small, device=queue.device)["dx"], sobel_dx(small), atol=1e-5)
    assert len(built_sources) == 1  # kept after the first call
    # the extents are kernel arguments: a launch kept for the other shape would read the wrong pixels
    np.testing.assert_allclose(sobel(large, device=queue.device)["dx"], sobel_dx(large), atol=1e-5)
    assert len(built_sources) == 2
    np.testing.assert_allclose(sobel(small, device=queue.device)["dx"], sobel_dx(small), atol=1e-5)
    assert len(built_sources) == 2


def test_a_new_configuration_misses(built_sources, device):
    sobel = imagecl.load(EXAMPLES / "sobel.icl")
    img = np.random.default_rng(2).uniform(-1, 1, (20, 24)).astype(np.float32)
    for config in ({"px_x": 1}, {"px_x": 1}, {"px_x": 4, "image_input": 1}, {"px_x": 1}):
        np.testing.assert_allclose(sobel(img, device=device, config=config)["dx"], sobel_dx(img), atol=1e-5)
    assert len(built_sources) == 2 and built_sources[0] != built_sources[1]
    assert "image" in built_sources[1]


def test_a_new_tuning_misses(built_sources, device, tmp_path, monkeypatch):
    monkeypatch.setenv("IMAGECL_TUNED", str(tmp_path / "registry"))
    sobel = imagecl.load(EXAMPLES / "sobel.icl")
    img = np.random.default_rng(4).uniform(-1, 1, (20, 24)).astype(np.float32)
    sobel(img, device=device)
    sobel(img, device=device)
    assert len(built_sources) == 1
    config = sobel.space_for(device, img.shape).complete({"px_x": 2, "image_input": 1})
    tuned.record(sobel, device, config, img.shape, seconds=1e-6, naive_seconds=1e-5)
    np.testing.assert_allclose(sobel(img, device=device)["dx"], sobel_dx(img), atol=1e-5)
    assert len(built_sources) == 2 and built_sources[1] == sobel.source_of(sobel.plan(config, device))


def test_another_context_on_the_same_device_misses(device):
    sobel = imagecl.load(EXAMPLES / "sobel.icl")
    img = np.random.default_rng(5).uniform(-1, 1, (16, 18)).astype(np.float32)
    for _ in range(2):  # a kernel of one context cannot take another context's buffers
        q = cl.CommandQueue(cl.Context([device]), device)
        out = sobel(cla.to_device(q, img), returns="device")["dx"]
        assert out.context == q.context
        np.testing.assert_allclose(out.get(), sobel_dx(img), atol=1e-5)


def test_scalars_are_kept_by_their_bits(device):
    """0.0 == -0.0, but 1/0.0 and 1/-0.0 differ: a launch kept for one must not serve the other."""
    prog = imagecl.compile("#pragma imcl grid(input, output)\n"
                           "void f(Image<float> input, Image<float> output, float s){ output[idx][idy] = "
                           "input[idx][idy] + 1.0f / s; }", "f.icl")
    img = np.zeros((4, 5), np.float32)
    assert np.all(prog(img, s=0.0, device=device)["output"] == np.inf)
    assert np.all(prog(img, s=-0.0, device=device)["output"] == -np.inf)
    assert np.all(prog(img, s=2.0, device=device)["output"] == 0.5)


def test_checks_still_run_on_a_cache_hit(queue):
    sobel = imagecl.load(EXAMPLES / "sobel.icl")
    img = np.random.default_rng(6).uniform(-1, 1, (12, 14)).astype(np.float32)
    d = cla.to_device(queue, img)
    sobel(d, returns="device")
    with pytest.raises(ArgumentError, match="dtype float32"):
        sobel(img.astype(np.float64), queue=queue)
    with pytest.raises(ArgumentError, match="another OpenCL context"):
        other = cl.CommandQueue(cl.Context([queue.device]), queue.device)
        sobel(d, queue=other)
    with pytest.raises(ArgumentError, match="same shape"):
        sobel(input=d, dx=cla.zeros(queue, (12, 13), np.float32))
    with pytest.raises(ArgumentError, match="C-contiguous"):
        sobel(cla.to_device(queue, np.asfortranarray(img)), queue=queue)


# ---- where outputs are allocated -----------------------------------------------------------------------------
def test_outputs_come_from_the_given_allocator_else_the_inputs(queue):
    import pyopencl.tools as cl_tools

    sobel = imagecl.load(EXAMPLES / "sobel.icl")
    img = np.random.default_rng(7).uniform(-1, 1, (18, 21)).astype(np.float32)
    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    out = sobel(cla.to_device(queue, img), returns="device", allocator=pool)
    assert pool.active_blocks == 2 and out["dx"].allocator is pool
    np.testing.assert_allclose(out["dx"].get(), sobel_dx(img), atol=1e-5)
    del out
    assert pool.active_blocks == 0  # back in the pool
    d_img = cla.to_device(queue, img, allocator=pool)  # as pyopencl.array operations do: the operand's
    out = sobel(d_img, returns="device")
    assert pool.active_blocks == 3
    np.testing.assert_allclose(out["dx"].get(), sobel_dx(img), atol=1e-5)
    plain = sobel(cla.to_device(queue, img), returns="device")["dx"]
    assert plain.allocator is None and pool.active_blocks == 3


def test_a_wrong_allocator_is_refused(queue):
    import pyopencl.tools as cl_tools

    sobel = imagecl.load(EXAMPLES / "sobel.icl")
    img = np.zeros((8, 9), np.float32)
    with pytest.raises(ArgumentError, match="needs a pyopencl allocator"):
        sobel(cla.to_device(queue, img), returns="device", allocator="pool")
    other = cl.CommandQueue(cl.Context([queue.device]), queue.device)
    with pytest.raises(ArgumentError, match="another OpenCL context"):
        sobel(cla.to_device(queue, img), returns="device",
              allocator=cl_tools.MemoryPool(cl_tools.ImmediateAllocator(other)))
    with pytest.raises(ArgumentError, match="allocator="):
        sobel(img, timeout=10, allocator=cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue)))


def test_numpy_calls_reuse_pooled_memory_without_stale_values(device):
    """NumPy calls on our queue take their outputs from a pool: a block left by one call must
    not show in the next, neither where a kernel writes every pixel nor where it writes some."""
    partial = _program("if (input[idx][idy] > 0.0f) output[idx][idy] = input[idx][idy];")
    full = _program("output[idx][idy] = input[idx][idy] * 3.0f;")
    rng = np.random.default_rng(8)
    for _ in range(3):
        a, b = (rng.uniform(-1, 1, (13, 11)).astype(np.float32) for _ in range(2))
        np.testing.assert_array_equal(full(a, device=device)["output"], a * 3)
        np.testing.assert_array_equal(partial(b, device=device)["output"], np.where(b > 0, b, 0))


def test_naive_is_kept_and_stays_naive_after_a_tuning(built_sources, device, tmp_path, monkeypatch):
    monkeypatch.setenv("IMAGECL_TUNED", str(tmp_path / "registry"))
    sobel = imagecl.load(EXAMPLES / "sobel.icl")
    img = np.random.default_rng(9).uniform(-1, 1, (20, 24)).astype(np.float32)
    naive_source = sobel.source_of(sobel.plan("naive"))
    sobel(img, device=device, config="naive")
    config = sobel.space_for(device, img.shape).complete({"px_x": 2, "image_input": 1})
    tuned.record(sobel, device, config, img.shape, seconds=1e-6, naive_seconds=1e-5)
    np.testing.assert_allclose(sobel(img, device=device, config="naive")["dx"], sobel_dx(img), atol=1e-5)
    assert built_sources == [naive_source]
    with pytest.raises(imagecl.ConfigError, match="naive"):
        sobel(img, device=device, config="fast")
