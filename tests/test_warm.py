"""A CPU variant's work-group function compiled by the builders (imagecl/runtime/warm.py,
tuner/pipeline.py), so that the measurement worker's first launch does not compile it.

The mechanism is PoCL's: its binary of a program carries the work-group functions compiled for
it, so a warmed binary is larger than a plain one, and a process that loads it (with an empty
PoCL cache of its own) launches without compiling. The tests check the binary and the outputs,
not the time it saves (BENCHMARKS.md has that).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid

import numpy as np
import pytest

import imagecl
from imagecl.runtime.arguments import prepare
from imagecl.runtime.devices import context_and_queue, select_device
from imagecl.runtime.warm import argument_shapes, warm_launch
from imagecl.tuner.buildcache import BuildCache, _build_in_child, build_key
from imagecl.tuner.pipeline import _build_job, _warmer, job_source
from imagecl.tuner.target import ProgramTarget

BLUR = """
#pragma imcl grid(a, o)
void blur(Image<float> a, Image<float> o) {
    float s = 0.0f;
    for (int j = -2; j <= 2; j++)
        for (int i = -2; i <= 2; i++)
            s += a[idx + i][idy + j] * (float)(3 + i * j);
    o[idx][idy] = s;
}
"""
CONFIG = {"wg_x": 8, "wg_y": 4, "px_x": 4, "px_y": 2, "unroll_blur_l4": 5, "unroll_blur_l5": 5}
SHAPE = (96, 128)


def _scipy_blur(a: np.ndarray) -> np.ndarray:
    from scipy import ndimage

    weights = np.array([[3 + i * j for i in range(-2, 3)] for j in range(-2, 3)], np.float64)
    return ndimage.correlate(a.astype(np.float64), weights, mode="constant")


@pytest.fixture(scope="module")
def blur():
    program = imagecl.compile(BLUR, "<blur>")
    device = select_device("cpu")
    config = _config(program)
    a = np.random.default_rng(5).random(SHAPE, dtype=np.float32)
    return program, device, program.plan(config, device), a


def _config(program) -> dict:
    return {**program.space.defaults, **{k: v for k, v in CONFIG.items() if k in program.space.names}}


def _binary(program, device, plan, shapes=None) -> bytes:
    """A build of `plan`, warmed with `shapes` (None: not warmed). Its source gets a constant of its
    own, so PoCL's cache of earlier builds (a process reads POCL_CACHE_DIR once, and PoCL hashes
    the preprocessed source) cannot serve it."""
    source = f"__constant uint imcl_test_nonce = {uuid.uuid4().int % 2**32}u;\n" + program.source_of(plan)
    index = _device_index(device)
    after = None if shapes is None else (lambda built: warm_launch(program, plan, shapes, device, built))
    binary, log = _build_in_child(index, source, (), after)
    assert binary is not None, log
    return binary


def _device_index(device) -> int:
    from imagecl.runtime.devices import _all_devices

    return list(_all_devices()).index(device)


def test_a_warmed_binary_carries_the_work_group_function(blur):
    program, device, plan, a = blur
    plain = _binary(program, device, plan)
    warmed = _binary(program, device, plan, argument_shapes(prepare(program.info, {"a": a})))
    assert len(warmed) > len(plain) + 4096  # the compiled work-group function (about 14 kB here)


def test_a_warmed_binary_loaded_elsewhere_computes_the_filter(blur, tmp_path):
    """The binary in a fresh process with an empty PoCL cache: the right result (SciPy)."""
    program, device, plan, a = blur
    binary = _binary(program, device, plan, argument_shapes(prepare(program.info, {"a": a})))
    (tmp_path / "binary").write_bytes(binary)
    np.save(tmp_path / "a.npy", a)
    script = textwrap.dedent(f"""
        import numpy as np, imagecl
        from imagecl.runtime import launcher
        from imagecl.runtime.devices import select_device
        program = imagecl.compile({BLUR!r}, "<blur>")
        device = select_device("cpu")
        config = {_config(imagecl.compile(BLUR, "<blur>"))!r}
        source = program.source_of(program.plan(config, device))
        assert launcher.preload(device, source, open({str(tmp_path / 'binary')!r}, "rb").read())
        out = program(a=np.load({str(tmp_path / 'a.npy')!r}), config=config, device=device)["o"]
        np.save({str(tmp_path / 'o.npy')!r}, out)
    """)
    env = {**os.environ, "POCL_CACHE_DIR": str(tmp_path / "fresh")}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=tmp_path, timeout=300)
    np.testing.assert_allclose(np.load(tmp_path / "o.npy"), _scipy_blur(a), rtol=1e-4, atol=1e-3)


def test_what_is_not_warmed(blur):
    program, device, plan, a = blur
    shapes = argument_shapes(prepare(program.info, {"a": a}))
    built = _built(program, device, plan)
    assert warm_launch(program, plan, shapes, device, built)
    # work-items striding over the whole grid: one work-group would do all of its work
    interleaved = program.plan({**_config(program), "interleaved": 1}, device)
    assert interleaved.interleaved
    assert not warm_launch(program, interleaved, shapes, device, _built(program, device, interleaved))
    # a loop the data decides: on zero pages it may never end, and the builder would wait for it
    looping = imagecl.compile(BLUR.replace("float s = 0.0f;", "float s = 0.0f;\n    while (s < a[idx][idy]) s += 1.0f;"),
                              "<looping>")
    plan_l = looping.plan({**looping.space.defaults, "wg_x": 8, "wg_y": 4}, device)
    assert not warm_launch(looping, plan_l, shapes, device, _built(looping, device, plan_l))
    job = {"kind": "icl", "program": BLUR, "filename": "<blur>", "config": _config(program), "arguments": shapes}
    variant = job_source(job, device)[2]
    assert _warmer(job, device, variant) is not None
    assert _warmer({**job, "arguments": None}, device, variant) is None  # a job made without the shapes
    hand_written = {"kind": "source", "source": "", "options": []}
    assert _warmer(hand_written, device, job_source(hand_written, device)[2]) is None  # no program to plan

    class Gpu:
        import pyopencl as cl
        type = cl.device_type.GPU
    assert _warmer(job, Gpu(), variant) is None  # a GPU's binary is complete, and its launches are timed


def _built(program, device, plan):
    import pyopencl as cl

    context, _ = context_and_queue(device)
    return cl.Program(context, program.source_of(plan)).build()


def test_the_builders_warm_what_a_cpu_tuning_run_announces(blur, tmp_path):
    """A ProgramTarget's job carries the arguments' shapes, and the builder's cached binary is the
    warmed one."""
    _, device, _, a = blur
    # a program of this test's own, which no earlier build in PoCL's cache has compiled
    program = imagecl.compile(BLUR.replace("3 + i * j", f"{uuid.uuid4().int % 1000 + 4} + i * j"), "<blur>")
    plan = program.plan(_config(program), device)
    target = ProgramTarget(program, {"a": a}, device)
    job = target.build_job(_config(program))
    assert job["arguments"] == {"arrays": {"a": (SHAPE, "<f4"), "o": (SHAPE, "<f4")}, "scalars": {}}
    index = _device_index(device)
    ident = (index, device.name.strip(), device.driver_version.strip())
    done = _build_job(ident, str(tmp_path / "cache"), "n", job, str(tmp_path / "mark-%d"))
    assert done.status == "built"
    key = build_key(program.source_of(plan), (), ident[1], ident[2])
    cached = BuildCache(tmp_path / "cache").get(key)
    assert len(cached) > len(_binary(program, device, plan)) + 4096
