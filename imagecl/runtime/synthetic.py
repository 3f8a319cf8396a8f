"""Random inputs of a given problem size, for measuring and tuning without the user's data.

Images get uniform random pixels (floats in [0, 1), integers over their type's range up to
255), fixed-size arrays random values of their shape, pointers one element per grid column
(at least 256, enough for a lookup table of bytes). Scalars need values from the user; a
missing one gets 1 (documented, and reported by the command line).

Each image has as many axes as it is declared with: on the axes the grid has, the grid's
extents; an image with more (a volume sampled by a 2-D grid) has EXTRA_EXTENT points on each
other axis, or the grid's smallest extent where that is less. A user who needs another size
passes the image itself (NAME=FILE).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..errors import ArgumentError
from ..ir import types as ty
from .memory import Buffer, array_bytes, check_device, check_host

# the host holds a generated array about three times at its peak: the random draw (float64 for
# a float image), the array, and its marshalled copy
_GENERATION_COPIES = 3
# points along an image's axes that the grid does not have (the depth of a volume that a 2-D
# grid samples): the paper's volume-rendering benchmark renders a 128^3 volume
EXTRA_EXTENT = 128


def _random(rng: np.random.Generator, shape: tuple, element: ty.Type) -> np.ndarray:
    dtype = element.dtype
    if isinstance(element, ty.VectorType):
        shape = shape + (element.width,)
    if dtype.kind == "f":
        return rng.random(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, 0), min(info.max, 255), shape, endpoint=True).astype(dtype)


def image_shape(dims: int, grid_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The NumPy shape of a generated image of `dims` axes for a grid of `grid_shape` (NumPy
    order): the grid's extents along x, y (and z) as far as the image has them, and along the
    axes the grid lacks EXTRA_EXTENT points, at most the grid's smallest extent."""
    grid_shape = tuple(grid_shape)
    if dims <= len(grid_shape):
        return grid_shape[len(grid_shape) - dims:]
    extra = min(EXTRA_EXTENT, min(grid_shape))
    return (extra,) * (dims - len(grid_shape)) + grid_shape


def _shapes(info, grid_shape: tuple[int, ...], given: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """The shape of every array to generate (those not `given`), without its vector axis."""
    shapes = {}
    for p in info.params:
        array = info.arrays.get(p.name)
        if p.name in given or array is None:
            continue
        if array.kind == "image":
            shapes[p.name] = image_shape(array.dims, grid_shape)
        elif array.kind == "array":
            shapes[p.name] = tuple(array.shape)
        else:
            shapes[p.name] = (max(256, grid_shape[-1]),)
    return shapes


def planned_buffers(info, grid_shape: tuple[int, ...], given: Mapping[str, Any]) -> list[Buffer]:
    """Every array the arguments will hold (generated or given), computed without allocating."""
    buffers = []
    for name, shape in _shapes(info, grid_shape, given).items():
        element = info.arrays[name].element
        full = shape + ((element.width,) if isinstance(element, ty.VectorType) else ())
        size = "x".join(str(s) for s in reversed(shape))
        buffers.append(Buffer(f"{info.arrays[name].kind} '{name}' ({size} {element})",
                              array_bytes(full, element.dtype)))
    for name, value in given.items():
        if isinstance(value, np.ndarray):
            buffers.append(Buffer(f"'{name}' {value.shape} {value.dtype}", int(value.nbytes)))
    return buffers


def synthetic_arguments(program, grid_shape: tuple[int, ...], given: Mapping[str, Any] | None = None,
                        seed: int = 0, device: Any = None) -> tuple[dict[str, Any], list[str]]:
    """(arguments, names of scalars that defaulted to 1) for a grid of `grid_shape` (NumPy order).
    Before anything is allocated the arrays are checked against the host's available memory
    and, given a `device` (a pyopencl Device), against its limits (a ResourceError if they do
    not fit)."""
    info = program.info
    given = dict(given or {})
    if len(grid_shape) != info.grid_dims:
        raise ArgumentError(f"the size has {len(grid_shape)} dimensions but the grid of '{program.name}' has "
                            f"{info.grid_dims}")
    buffers = planned_buffers(info, grid_shape, given)
    if device is not None:
        check_device(buffers, device)
    check_host(buffers, copies=_GENERATION_COPIES)
    rng = np.random.default_rng(seed)
    args: dict[str, Any] = {}
    defaulted = []
    shapes = _shapes(info, grid_shape, given)
    for p in info.params:
        if p.name in given:
            args[p.name] = given[p.name]
        elif p.name in shapes:
            args[p.name] = _random(rng, shapes[p.name], info.arrays[p.name].element)
        else:
            args[p.name] = 1
            defaulted.append(p.name)
    return args, defaulted
