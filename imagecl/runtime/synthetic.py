"""Random inputs of a given problem size, for measuring and tuning without the user's data.

Images get uniform random pixels (floats in [0, 1), integers over their type's range up to
255), fixed-size arrays random values of their shape, pointers one element per grid column
(at least 256, enough for a lookup table of bytes). Scalars need values from the user; a
missing one gets 1 (documented, and reported by the command line).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..errors import ArgumentError
from ..ir import types as ty


def _random(rng: np.random.Generator, shape: tuple, element: ty.Type) -> np.ndarray:
    dtype = element.dtype
    if isinstance(element, ty.VectorType):
        shape = shape + (element.width,)
    if dtype.kind == "f":
        return rng.random(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, 0), min(info.max, 255), shape, endpoint=True).astype(dtype)


def synthetic_arguments(program, grid_shape: tuple[int, ...], given: Mapping[str, Any] | None = None,
                        seed: int = 0) -> tuple[dict[str, Any], list[str]]:
    """(arguments, names of scalars that defaulted to 1) for a grid of `grid_shape` (NumPy order)."""
    info = program.info
    given = dict(given or {})
    if len(grid_shape) != info.grid_dims:
        raise ArgumentError(f"the size has {len(grid_shape)} dimensions but the grid of '{program.name}' has "
                            f"{info.grid_dims}")
    rng = np.random.default_rng(seed)
    args: dict[str, Any] = {}
    defaulted = []
    for p in info.params:
        if p.name in given:
            args[p.name] = given[p.name]
            continue
        array = info.arrays.get(p.name)
        if array is None:
            args[p.name] = 1
            defaulted.append(p.name)
        elif array.kind == "image":
            shape = grid_shape if array.dims == len(grid_shape) else grid_shape[-array.dims:]
            args[p.name] = _random(rng, shape, array.element)
        elif array.kind == "array":
            args[p.name] = _random(rng, tuple(array.shape), array.element)
        else:
            args[p.name] = _random(rng, (max(256, grid_shape[-1]),), array.element)
    return args, defaulted
