"""The synthetic stencils the knowledge models train on (imagecl.bench.synthetic_stencils): each
program computes what its choices say (sums, running maxima, the middle of its window, a second
output), checked against a NumPy reference written from the choices alone, and its program
tunable never changes the output (LANGUAGE.md)."""
from __future__ import annotations

import numpy as np
import pytest

import imagecl
from imagecl.bench.synthetic_stencils import (KNOWLEDGE_SETS, StencilChoice, choices, generate,
                                              knowledge_programs, render)

NUMPY_PAD = {"constant": "constant", "clamped": "edge", "wrap": "wrap", "mirror": "reflect"}
SHAPE = (13, 17)  # (height, width): wider than the largest footprint (radius 4) on both axes


def numpy_stencil(c: StencilChoice, images: list[np.ndarray], weights: np.ndarray) -> dict[str, np.ndarray]:
    """The outputs of choice `c` in NumPy (float64); `weights[j + r, i + r]` weighs tap (i, j)."""
    r = c.radius
    acc = np.full(SHAPE, -1.0e30 if c.per_tap == "minmax" else 0.0)
    window = []
    padded = [np.pad(img.astype(np.float64), r, mode=NUMPY_PAD[c.boundary]) for img in images]
    height, width = SHAPE
    for i, j in c.taps():
        for img in padded:
            value = img[r + j:r + j + height, r + i:r + i + width]  # img[x + i][y + j] is arr[y + j, x + i]
            if c.per_tap == "exp":
                value = np.exp(-value * value)
            elif c.per_tap == "sqrt":
                value = np.sqrt(value + 1.0)
            if c.divide:
                value = value / (value + 2.0)
            term = weights[j + r, i + r] * value
            if c.reduce == "rank":
                window.append(term)
            else:
                acc = np.maximum(acc, term) if c.per_tap == "minmax" else acc + term
    if c.reduce == "rank":
        acc = np.sort(np.stack(window), axis=0)[len(window) // 2]
    values = {"output": acc, "output2": acc * acc}
    names = ["output", "output2"][:c.outputs]
    if c.pixel == "uchar":
        return {n: np.clip(values[n], 0.0, 255.0) for n in names}
    return {n: values[n] for n in names}


def _arguments(c: StencilChoice, rng: np.random.Generator) -> tuple[dict, list[np.ndarray], np.ndarray]:
    width = 2 * c.radius + 1
    if c.pixel == "uchar":
        images = [rng.integers(0, 256, SHAPE, dtype=np.uint8) for _ in range(c.inputs)]
    else:
        images = [rng.uniform(-0.5, 2.0, SHAPE).astype(np.float32) for _ in range(c.inputs)]
    arguments = {f"in{k}": img for k, img in enumerate(images)}
    if c.weights == "array":
        weights = rng.uniform(0.0, 1.0, (width, width)).astype(np.float32)  # not symmetric: catches a transpose
        arguments["filter"] = weights
    else:
        j, i = np.mgrid[-c.radius:c.radius + 1, -c.radius:c.radius + 1]
        weights = 1.0 / (1.0 + (i * i + j * j))
    return arguments, images, weights.astype(np.float64)


# the knowledge data's programs (seeds 17 and 18), and more with the tunable and every boundary
CHOICES = choices(16, 17) + choices(24, 18, rich=True) + [c for c in choices(60, 3) if c.tunable][:8] + [
    # a rank reduction over a loop nest with a condition (the window's position counted at run time)
    StencilChoice(inputs=2, pixel="float", shape="cross", radius=2, weights="array", per_tap="exp", divide=False,
                  unrolled=False, boundary="mirror", tunable=True, reduce="rank", outputs=2)]


@pytest.mark.parametrize("choice", CHOICES, ids=lambda c: c.name(0, 0))
def test_every_tunable_value_computes_the_numpy_stencil(choice):
    prog = imagecl.compile(render(choice, "stencil"))
    arguments, images, weights = _arguments(choice, np.random.default_rng(7))
    expected = numpy_stencil(choice, images, weights)
    values = (0, 1) if choice.tunable else (None,)
    runs = []
    for value in values:
        outputs = prog(**arguments, config="naive" if value is None else {"WEIGHTS": value})
        assert sorted(outputs) == sorted(expected)
        for name, reference in expected.items():
            out = outputs[name]
            if choice.pixel == "uchar":
                # float sums truncated to uchar: one step of difference where a sum rounds across an integer
                assert np.abs(out.astype(np.int32) - np.floor(reference)).max() <= 1, name
            else:
                np.testing.assert_allclose(out, reference, rtol=2e-5, atol=2e-5 * np.abs(reference).max(),
                                           err_msg=name)
        runs.append(outputs)
    if choice.tunable:
        assert "WEIGHTS" in prog.space_for().names
        for name in expected:  # the same floats either way
            np.testing.assert_array_equal(runs[0][name], runs[1][name])


def test_rich_draws_leave_the_first_set_unchanged_and_add_both_new_choices():
    rich = choices(24, 18, rich=True)
    assert {c.reduce for c in rich} == {"fold", "rank"} and {c.outputs for c in rich} == {1, 2}
    assert all(c.radius <= 2 and c.per_tap != "minmax" for c in rich if c.reduce == "rank")
    assert {c.reduce for c in choices(40, 17)} == {"fold"} and {c.outputs for c in choices(40, 17)} == {1}


def test_the_knowledge_programs_are_what_the_generator_makes():
    # benchmarks/results/knowledge/programs holds the sources the knowledge data measured
    from pathlib import Path

    folder = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "knowledge" / "programs"
    programs = knowledge_programs()
    for name, source in programs:
        assert (folder / f"{name}.icl").read_text() == source, name
    assert sum("tunable" in s for _, s in generate(16, 17)) == 6
    assert sorted(p.name for p in folder.glob("syn*.icl")) == sorted(f"{name}.icl" for name, _ in programs)
    assert len(programs) == 16 + 24
    # the sets kept apart: their sources beside their store; one source was drawn twice
    # (syn18_001 and syn20_002) and is kept once, under its first name
    apart = folder.parent.parent / "knowledge-replication" / "xeon-syn19" / "programs"
    more = knowledge_programs(KNOWLEDGE_SETS + ((24, 19, False), (24, 20, True)))[len(programs):]
    assert len(more) == 24 + 24 - 1
    assert "syn20_002_box1_1xfloat_plain_rank_div_unrolled_wrap_2out" not in dict(more)
    assert sorted(p.name for p in apart.glob("*.icl")) == sorted(f"{name}.icl" for name, _ in more)
    for name, source in more:
        assert (apart / f"{name}.icl").read_text() == source, name
