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
runs ended on (BENCHMARKS.md, issue 23). The study fixed the rest of the code too: every loop
unrolled fully, every array read from a plain buffer (no image, constant or local-memory copy).
A seed that named only its shape left those to chance, and the peer runs measured the right
shape with loops rolled up and the filter in image or local memory, 2-3x slower than the
study's. So a seed names its shape and, where the program's space says which parameters those
are (a live problem's `space`), the plain code around it; any other parameter is drawn from
the valid configurations that agree with the seed (ml._seed_rows).

On a GPU the work-group shape and the memory spaces matter as much, and vector code is one
option among many, so the plain spread stays the default there.
"""
from __future__ import annotations

from typing import Any, Optional

from ..problem import Problem

# balanced in this order: each level's cells (joint values) before the next level's and before
# every other parameter
CODE_SHAPE = (("vector_x",), ("vector_x", "px_x"))


# measured first by a CPU search that has no other seeds (see the module's docstring), fastest
# first: conv9's and conv3's fastest (32 points along x in rows of 4, work-groups of 1x2, direct
# reads), conv9's next (the same rows from a local-memory tile, work-groups of 4x4) and conv3's
# next (64 along x, 1x8). "tiles" is the value of every parameter that stages an image in local
# memory.
CPU_SEEDS = ({"interior": 1, "vector_x": 2, "px_x": 32, "px_y": 4, "wg_x": 1, "wg_y": 2, "tiles": 0},
             {"interior": 1, "vector_x": 2, "px_x": 32, "px_y": 4, "wg_x": 4, "wg_y": 4, "tiles": 1},
             {"interior": 1, "vector_x": 2, "px_x": 64, "px_y": 1, "wg_x": 1, "wg_y": 8, "tiles": 0})

# a 2-D program that reads a window this wide (7x7) or wider starts from the first seed's shape
# with the window staged in local memory: on the 16-core Xeon, median 7x7 (1536^2) took 6.2-7.1 ms
# staged against 9.1-13.1 ms with the same shape reading directly, and at that window a 15 s run
# builds and measures its first seed only; the float convolutions 9x9 and 11x11 neither gained nor
# lost much by it (BENCHMARKS.md, issue 23)
WIDE_WINDOW = 49

# a 2-D program whose vector code keeps more values than this at once (codegen/lanes.lane_values:
# a median's selection network, 116 for 5x5 and 322 for 7x7, against 2-9 for the convolutions,
# sobel and harris) starts from one run of 16 points in one row a call: the seeds' 2-8 runs and
# rows side by side multiply values that already spill the 32 vector registers. On the 2-core
# EPYC, median 7x7 took 6.8 ms that way (staged) against 15.4 ms at best with the seeds' shapes,
# median 5x5 3.1 ms (direct) against 4.1 ms; convolution 9x9, one chain of multiply-adds a call,
# 66 ms against 31.6 (BENCHMARKS.md, issue 23). Staged where the window is wide, as above.
MANY_LANE_VALUES = 32
ONE_RUN_SEED = {"interior": 1, "vector_x": 2, "px_x": 16, "px_y": 1, "wg_x": 1, "wg_y": 8}

# the same for a 3-D grid, where every seed stages its input in local memory: the fast path runs
# only where a work-group's block and its halo lie inside the images, unless the input is staged
# (then only the tile's fill needs the halo), and at 128^3 a block 32 wide with direct reads
# leaves more than half the work-groups to the scalar path at the border: on the 2-core EPYC,
# 18-27 ms against 2.6-4.4 ms for conv3d 128^3 and 116 ms against 11-13 ms for bilateral 64^3
# with the same shapes (BENCHMARKS.md, issue 23). Fastest there first; 8 planes a work-item.
# The tiles assume a CPU's local memory (PoCL: 1-2 MiB; the second seed's is about 170 KB):
# where a device has less, sampling._seed_rows takes the valid configuration nearest the seed.
CPU_SEEDS_3D = ({"interior": 1, "vector_x": 2, "px_x": 32, "px_y": 2, "px_z": 8, "wg_x": 2, "wg_y": 4, "wg_z": 1,
                 "tiles": 1},
                {"interior": 1, "vector_x": 2, "px_x": 32, "px_y": 4, "px_z": 8, "wg_x": 4, "wg_y": 4, "wg_z": 2,
                 "tiles": 1},
                {"interior": 1, "vector_x": 2, "px_x": 16, "px_y": 4, "px_z": 8, "wg_x": 4, "wg_y": 4, "wg_z": 1,
                 "tiles": 1})


def code_shape_seeds(problem: Problem) -> list[dict[str, int]]:
    """CPU_SEEDS (CPU_SEEDS_3D for a 3-D grid) as configurations of `problem`, where its space
    has vector code (none otherwise: without it these shapes mean nothing): each seed's shape,
    and where `problem` has an imagecl space, loops unrolled fully and arrays read from plain
    buffers (`plain_code`)."""
    names = problem.names
    if "vector_x" not in names or 2 not in problem.parameters[names.index("vector_x")].values:
        return []
    space = getattr(problem, "space", None)
    seeds = []
    for seed in CPU_SEEDS_3D if "px_z" in names else cpu_seeds_2d(space):  # px_z: the space of a 3-D grid
        shape = {k: v for k, v in seed.items() if k != "tiles"}
        code = plain_code(space, seed["tiles"]) if space is not None else {}
        seeds.append({k: v for k, v in {**code, **shape}.items() if k in names})
    return seeds


def cpu_seeds_2d(space: Any) -> tuple[dict[str, int], ...]:
    """CPU_SEEDS, led by the first seed's shape staged in local memory where the program reads a
    window of WIDE_WINDOW points or more of an image it may stage, and before that by one run of
    16 points a call (ONE_RUN_SEED, staged where the window is wide) where its vector code keeps
    more than MANY_LANE_VALUES values."""
    windows = getattr(space, "tile_window", None) or {}
    wide = max(windows.values(), default=0) >= WIDE_WINDOW
    seeds = ((dict(CPU_SEEDS[0], tiles=1),) if wide else ()) + CPU_SEEDS
    if (getattr(space, "lane_values", 0) or 0) > MANY_LANE_VALUES:
        seeds = (dict(ONE_RUN_SEED, tiles=int(wide)),) + seeds
    return seeds


def plain_code(space: Any, tiles: int) -> dict[str, int]:
    """The values of an imagecl space's code-shape parameters in the code the CPU study timed:
    every loop with a known trip count unrolled fully, points blocked, every array read from a
    plain buffer (image, constant and local-memory copies at the space's default, which is
    "off" unless the program's pragmas place the array there), images staged in local memory
    as `tiles` says where the space allows it."""
    from ... import choices as ch

    values: dict[str, int] = dict(space.full_unroll)
    tile_names = set(space.tiles)
    for p in space.parameters:
        if p.name in tile_names:
            values[p.name] = tiles if tiles in p.values else p.values[0]
        elif p.family in (ch.IMAGE_MEM, ch.CONSTANT_MEM, ch.LOCAL_MEM, ch.LAYOUT):
            values[p.name] = space.defaults.get(p.name, p.values[0])
    return values


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
