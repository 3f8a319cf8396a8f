"""Every variant computes what the naive variant computes.

For each example, hypothesis draws configurations from the program's tuning space on the test
device; each variant's output must equal the naive variant's: bit-identical for integer
programs, within rtol 1e-5 (scaled to the output's magnitude) for floating point, where FMA
contraction and unrolling may change the last bits. The default run draws a few variants per
example; `pytest -m slow` draws hundreds.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import imagecl
from inputs import make_inputs

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.icl"))
SHAPE_2D = (29, 37)
SHAPE_3D = (7, 9, 11)
_PROGRAMS: dict = {}
_NAIVE: dict = {}


def program(path: Path) -> imagecl.Program:
    if path not in _PROGRAMS:
        _PROGRAMS[path] = imagecl.load(path)
    return _PROGRAMS[path]


def naive_case(path: Path):
    """Fixed inputs and the naive variant's outputs, computed once per example."""
    if path not in _NAIVE:
        prog = program(path)
        shape = SHAPE_3D if prog.info.grid_dims == 3 else SHAPE_2D
        args = make_inputs(prog, shape, np.random.default_rng(abs(hash(path.name)) % 2**32))
        _NAIVE[path] = (args, prog(**args))
    return _NAIVE[path]


def assert_same(got: dict, expected: dict, config: dict) -> None:
    assert got.keys() == expected.keys()
    for name, ref in expected.items():
        out = got[name]
        assert out.shape == ref.shape and out.dtype == ref.dtype
        if ref.dtype.kind == "f":
            scale = max(1.0, float(np.abs(ref).max()))
            np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * scale, err_msg=f"{name} with {config}")
        else:
            np.testing.assert_array_equal(out, ref, err_msg=f"{name} with {config}")


def check_random_variant(path: Path, seed: int) -> None:
    prog = program(path)
    args, expected = naive_case(path)
    shape = next(iter(expected.values())).shape
    space = prog.space_for(problem_shape=shape[: prog.info.grid_dims])
    config = space.random(1, seed=seed)[0]
    assert_same(prog(**args, config=config), expected, config)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**31 - 1))
def test_random_variants_match_naive(path, seed):
    check_random_variant(path, seed)


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**31 - 1))
def test_hundreds_of_variants_match_naive(path, seed):
    check_random_variant(path, seed)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_extreme_variants_match_naive(path):
    """Corners of the space: everything on, everything off, large coarsening, both layouts."""
    prog = program(path)
    args, expected = naive_case(path)
    shape = next(iter(expected.values())).shape[: prog.info.grid_dims]
    space = prog.space_for(problem_shape=shape)
    everything = {p.name: max(p.values) if p.kind not in ("work_group", "coarsening") else p.values[0]
                  for p in space.parameters}
    axes = "xyz"[: prog.info.grid_dims]
    configs = []
    for interleaved in (0, 1):
        for wg, px in (((8,) * len(axes), (4,) * len(axes)), ((1,) * len(axes), (2,) * len(axes))):
            cfg = dict(everything, interleaved=interleaved)
            for a, w, p in zip(axes, wg, px):
                cfg[f"wg_{a}"], cfg[f"px_{a}"] = w, p
            configs.append(cfg)
    configs.append({p.name: p.values[0] for p in space.parameters})
    for cfg in configs:
        try:
            full = space.complete(cfg)
        except imagecl.ConfigError:
            continue  # e.g. local memory too small on this device for that corner
        assert_same(prog(**args, config=full), expected, full)
