"""Passes over the kernel frame (ir/frame.py): each takes a frame and a choice and returns a new
frame; their composition (codegen/body.py) is the variant's __kernel body.

- `one_point_per_item`: the start, one grid point per work-item;
- `coarsen`: several grid points per work-item, blocked (contiguous) or interleaved (strided by
  the global size);
- `stage_local`: the work-group's copies into local memory (whole small arrays, image tiles
  with their halos) before the points run;
- `fast_path`: work-groups whose footprint lies inside the images run a second per-point
  function without boundary handling (a guarded copy of the loop nest);
- `vectorise_runs`: in that copy, runs of px_x points along x move as OpenCL vectors.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Optional

from ..ir.frame import ArrayCopy, Axis, KernelFrame, LocalTile, RegisterTile, StagedStore, VectorRuns


def one_point_per_item(extents: Iterable[str], point_call: str) -> KernelFrame:
    extents = tuple(extents)
    return KernelFrame(tuple(Axis(d) for d in range(len(extents))), extents, point_call)


def coarsen(frame: KernelFrame, px: Iterable[int], interleaved: bool) -> KernelFrame:
    """`px[d]` grid points per work-item along each axis: contiguous, or (`interleaved`) strided
    by the global size, so that each iteration's points form one block of the work-group."""
    px = tuple(int(p) for p in px)
    if len(px) != len(frame.axes) or min(px) < 1:
        raise ValueError(f"points per work-item {px} for a {len(frame.axes)}-D grid")
    axes = tuple(Axis(a.d, p, 1 if interleaved else p) for a, p in zip(frame.axes, px))
    return dataclasses.replace(frame, axes=axes, interleaved=bool(interleaved))


def stage_local(frame: KernelFrame, copies: Iterable[ArrayCopy], tiles: Iterable[LocalTile]) -> KernelFrame:
    """The work-group copies small arrays and image tiles into local memory first."""
    return dataclasses.replace(frame, array_copies=frame.array_copies + tuple(copies),
                               tiles=frame.tiles + tuple(tiles))


def fast_path(frame: KernelFrame, inside_call: str, conditions: Iterable[str],
              fill_conditions: Optional[Iterable[str]] = None) -> KernelFrame:
    """Work-groups for which every condition holds call `inside_call` at each point instead of
    the general per-point function; those for which every `fill_conditions` holds (default: the
    same conditions) fill their local-memory tiles without boundary handling."""
    conditions = tuple(dict.fromkeys(conditions))
    fill = conditions if fill_conditions is None else tuple(dict.fromkeys(fill_conditions))
    if not conditions or not fill:
        raise ValueError("the fast path needs its conditions")
    if not frame.tiles or set(fill) == set(conditions):
        fill = ()  # one test serves both
    return dataclasses.replace(frame, inside_call=inside_call, conditions=conditions, fill_conditions=fill)


def vectorise_runs(frame: KernelFrame, tiles: Iterable[RegisterTile], stores: Iterable[StagedStore],
                   explicit: bool = False, rows: int = 1) -> KernelFrame:
    """In the fast path, each work-item's px_x contiguous points along x run as one vector run:
    the per-point call for each point between register-tile loads and staged stores, or
    (`explicit`) one call of the lane function (codegen/lanes.py) for the whole run, which
    computes `rows` grid rows at once (the loop over the work-item's px_y rows steps by them)."""
    if frame.inside_call is None or frame.interleaved or frame.axes[0].px < 2:
        raise ValueError("vectorised runs need the fast path, the blocked layout and px_x > 1")
    if rows > 1 and (not explicit or len(frame.axes) < 2 or frame.axes[1].px % rows):
        raise ValueError("rows side by side need the lane function and a divisor of px_y")
    outer = tuple(dataclasses.replace(a, px=a.px // rows) if a.d == 1 else a for a in frame.coarse if a.d != 0)
    outer = tuple(a for a in outer if a.px > 1)
    return dataclasses.replace(frame, vector=VectorRuns(frame.axes[0].px, outer, tuple(tiles), tuple(stores),
                                                        bool(explicit), rows))
