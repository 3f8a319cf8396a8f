"""The typed table of choices (imagecl/choices.py): every parameter has a family that names and
decodes it; the driver's choice of work-group size is a value of the space and the default; the
naive variant can be asked for by name."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl import choices
from imagecl.codegen.variant import VariantPlan, launch_geometry
from imagecl.errors import CompileError, ConfigError
from imagecl.parameters import GENERATED_PARAMETERS, generated_parameter
from imagecl.space import DeviceLimits, tile_work_group

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.icl"))
LIMITS = DeviceLimits(name="test device", max_work_group_size=256, max_work_item_sizes=(256, 256, 64),
                      local_mem_size=48 * 1024)

FORCED_TILE = """
#pragma imcl grid(a, o)
#pragma imcl local_mem(a)
void blur(Image<float> a, Image<float> o) {
    o[idx][idy] = (a[idx - 1][idy] + a[idx][idy] + a[idx + 1][idy]) / 3.0f;
}
"""


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_parameter_has_a_family_that_names_it(path):
    prog = imagecl.load(path)
    space = prog.space_for_limits(LIMITS)
    for p in space.parameters:
        assert p.family in choices.FAMILIES, p.name
        assert p.kind == p.family.kind and p.launch_only == p.family.launch_only
        assert p.name == p.family.name(p.target)
        assert generated_parameter(p.name) == (p.family is not choices.TUNABLE)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_default_configuration_is_the_naive_variant(path):
    """The speed-up `imagecl tune` reports is over the default configuration: it must be the
    program as written, with the driver choosing the work-group size."""
    prog = imagecl.load(path)
    space = prog.space_for_limits(LIMITS)
    default = space.complete(space.defaults)
    assert all(default[f"wg_{a}"] == choices.DRIVERS_CHOICE for a in "xyz"[: prog.info.grid_dims])
    assert space.plan(default) == VariantPlan.naive(prog.info)


def test_plan_decodes_each_family():
    prog = imagecl.load(next(p for p in EXAMPLES if p.stem == "convolution"))
    space = prog.space_for_limits(LIMITS)
    unroll = [p.name for p in space.parameters if p.family is choices.UNROLL]
    config = space.complete({"wg_x": 8, "wg_y": 4, "px_x": 2, "px_y": 1, "interleaved": 1, "local_input": 1,
                             "constant_filter": 1, unroll[0]: 5})
    plan = space.plan(config)
    assert plan == VariantPlan(px=(2, 1), interleaved=True, local_mem=frozenset({"input"}),
                               constant_mem=frozenset({"filter"}), unroll=((unroll[0], 5),), wg=(8, 4))
    assert VariantPlan.from_config(prog.info, config) == plan  # the same table without a space at hand


def test_drivers_choice_is_launch_only_and_leaves_the_local_size_to_the_driver():
    prog = imagecl.load(next(p for p in EXAMPLES if p.stem == "sobel"))
    space = prog.space_for_limits(LIMITS)
    driver = space.complete({"wg_x": 0, "wg_y": 0, "px_x": 2})
    fixed = space.complete({"wg_x": 1, "wg_y": 1, "px_x": 2})
    assert space.plan(driver).wg is None and space.plan(fixed).wg == (1, 1)
    assert prog.source_of(space.plan(driver)) == prog.source_of(space.plan(fixed))
    assert launch_geometry(prog.info, space.plan(driver), (10, 7)) == ((5, 7), None)
    with pytest.raises(ConfigError, match="driver chooses the work-group size in every axis or in none"):
        space.complete({"wg_x": 0, "wg_y": 4})
    with pytest.raises(ConfigError, match="not the driver's choice"):
        space.complete({"wg_x": 0, "wg_y": 0, "local_input": 1})
    # a work-group size given in one axis: the others are 1, as before the driver's choice existed
    assert space.complete({"wg_x": 8})["wg_y"] == 1 and space.complete({"wg_x": 0})["wg_y"] == 0
    # a tile asked for without a work-group size gets a fixed one, shown in the configuration
    tiled = space.complete({"local_input": 1})
    assert (tiled["wg_x"], tiled["wg_y"]) == tile_work_group(2, LIMITS) != (0, 0)


def test_forced_tile_default_and_naive_variant_have_a_known_work_group():
    prog = imagecl.compile(FORCED_TILE)
    space = prog.space_for_limits(LIMITS)
    naive = VariantPlan.naive(prog.info)
    assert naive.wg == tile_work_group(2) and naive.compiled_wg is None  # 256 work-items: sized at launch
    assert space.plan(space.complete(space.defaults)) == naive
    a = np.random.default_rng(1).random((9, 13), dtype=np.float32)
    got = prog(a=a, o=np.zeros_like(a), config="naive")["o"]
    padded = np.pad(a, ((0, 0), (1, 1)))  # the default boundary: constant 0
    np.testing.assert_allclose(got, (padded[:, :-2] + padded[:, 1:-1] + padded[:, 2:]) / 3, rtol=1e-6)
    # a plan with a tile and no work-group size is refused, not launched at a size made up here
    from imagecl.runtime.arguments import prepare

    with pytest.raises(ConfigError, match="needs a work-group size"):
        prog.launch_for(dataclasses.replace(naive, wg=None), prepare(prog.info, {"a": a, "o": a.copy()}))


def test_naive_by_name_ignores_the_registry(monkeypatch):
    prog = imagecl.load(next(p for p in EXAMPLES if p.stem == "threshold"))
    tuned = {"px_x": 2, "wg_x": 4, "wg_y": 4}
    seen = []

    def lookup(self, device=None, space=None, size=None):
        seen.append(size)
        return space.complete(tuned)

    monkeypatch.setattr(type(prog), "tuned_config", lookup)
    image = np.arange(35, dtype=np.uint8).reshape(5, 7)
    args = {"input": image, "output": image.copy(), "thresholds": np.full(7, 9, np.uint8), "above": 1, "below": 0}
    prog.run(args)
    assert seen  # without a configuration, the registry is asked
    seen.clear()
    prog.run(args, config="naive")
    assert not seen
    assert prog.plan("naive") == VariantPlan.naive(prog.info)
    assert "configuration:" not in prog.opencl_source("naive")
    with pytest.raises(ConfigError, match="\"naive\", not 'fast'"):
        prog.plan("fast")


@pytest.mark.parametrize("name", ["interior", "vector_x", "wg_x", "px_q", "image_a", "local_b", "constant_c",
                                  "unroll_f_l3", "interleaved"])
def test_a_tunable_may_not_take_a_generated_name(name):
    assert any(name.startswith(p.split("<")[0]) for p in GENERATED_PARAMETERS)
    with pytest.raises(CompileError, match="name of a built-in tuning parameter") as err:
        imagecl.compile(f"#pragma imcl tunable({name}: 0, 1)\n#pragma imcl grid(a)\n"
                        "void f(Image<float> a) { a[idx][idy] = 1.0f; }")
    assert err.value.line == 1


def test_the_drivers_choice_keeps_the_work_group_sizes_on_a_log_scale():
    from imagecl.tuner.encoding import Encoder
    from imagecl.tuner.problem import Parameter

    encoded = Encoder([Parameter("wg_x", [0, 1, 2, 4, 8])]).encode(np.array([[0], [1], [2], [4], [8]]))[:, 0]
    np.testing.assert_allclose(encoded, [0, 0.25, 0.5, 0.75, 1])
