"""Which parameters the first sample of a search balances before all others (its code shape).

On a CPU device the variants that matter most differ in the shape of the code PoCL gets, not
in the work-group shape: explicit vector code (`vector_x = 2`) is 7x faster than the scalar
fast path for convolution 9x9 on a 16-core Xeon, and PoCL vectorises neither the scalar body
nor work-items (BENCHMARKS.md, "CPU vector code"). Such variants are valid in few
configurations (the interior fast path, blocked layout and a vector width of px_x together:
about 8% of convolution 9x9's space), and a sample that spreads every parameter's values alike
gives `vector_x` one vote among fourteen, so at the budgets a CPU affords (a build and launches
of up to a second per measurement: 4-12 configurations a minute) it often measures no vector
code at all, or only with a width that hides its worth. A design led by the code shape takes
each `vector_x` value in turn, each time with the least covered `px_x` for it, and spreads
the other parameters' values within that (sampling._spread_sample).

With so few measurements a run also starts from what was measured fastest before, when nothing
better is known (no seeds from the store or a knowledge model): CPU_SEEDS, the vector-code
shapes that the fixed-configuration study (benchmarks/cpu_scaling.py) found fastest on the
16-core Xeon for convolutions 3x3 and 9x9 at 4096x4096, several times faster than what 15-60 s
runs ended on (BENCHMARKS.md, issue 23). A seed names a few parameters; the others are drawn
from the valid configurations that agree with it (ml._seed_rows).

On a GPU the work-group shape and the memory spaces matter as much, and vector code is one
option among many, so the plain spread stays the default there.
"""
from __future__ import annotations

from typing import Optional

from ..problem import Problem

# balanced in this order: each level's cells (joint values) before the next level's and before
# every other parameter
CODE_SHAPE = (("vector_x",), ("vector_x", "px_x"))


# measured first by a CPU search that has no other seeds (see the module's docstring): conv9's
# fastest (32 points along x in rows of 4, work-groups of 1x2) and conv3's (64 along x, 1x8)
CPU_SEEDS = ({"interior": 1, "vector_x": 2, "px_x": 32, "px_y": 4, "wg_x": 1, "wg_y": 2},
             {"interior": 1, "vector_x": 2, "px_x": 64, "px_y": 1, "wg_x": 1, "wg_y": 8})


def code_shape_seeds(problem: Problem) -> list[dict[str, int]]:
    """CPU_SEEDS restricted to `problem`'s parameters, where its space has vector code (none
    otherwise: without it these shapes mean nothing)."""
    names = problem.names
    if "vector_x" not in names or 2 not in problem.parameters[names.index("vector_x")].values:
        return []
    return [{k: v for k, v in seed.items() if k in names} for seed in CPU_SEEDS]


def code_shape_levels(problem: Problem, code_shape: Optional[bool] = None) -> list[tuple[int, ...]]:
    """The code-shape levels the first sample balances, as column indices of `problem`: none
    unless `code_shape` is True, or None (the default) and the problem is measured on a CPU
    device (its `device_kind`); levels whose parameters the problem lacks, or whose parameters
    have one value only, are left out."""
    if code_shape is None:
        code_shape = str(getattr(problem, "device_kind", "") or "").upper() == "CPU"
    if not code_shape:
        return []
    names = problem.names
    levels = []
    for level in CODE_SHAPE:
        if all(n in names for n in level):
            columns = tuple(names.index(n) for n in level)
            if any(len(problem.parameters[c].values) > 1 for c in columns):
                levels.append(columns)
    return levels


def device_kind(device) -> Optional[str]:
    """"CPU", "GPU", ... for an OpenCL device; None for anything else (a cluster's measurer has
    devices of its own, a replay none)."""
    if device is None or not hasattr(device, "type"):
        return None
    from ...runtime.devices import _kind

    try:
        return _kind(device)
    except Exception:  # noqa: BLE001 - not an OpenCL device after all: no device-specific design
        return None
