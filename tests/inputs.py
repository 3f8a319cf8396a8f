"""Random, valid arguments for any example program (shared by the variant and space tests)."""
from __future__ import annotations

import numpy as np

from imagecl.ir import types as ty

# scalars that need values in a meaningful range
SCALARS = {
    "sigma_spatial": 1.5, "sigma_range": 0.3, "k": 0.04, "amount": 1.5,
    "xmin": -8192, "ymin": -4096, "step": 150, "maxiter": 40, "above": 200, "below": 10,
}


def random_array(rng: np.random.Generator, shape: tuple, element: ty.Type, program_name: str) -> np.ndarray:
    dtype = element.dtype
    if isinstance(element, ty.VectorType):
        shape = shape + (element.width,)
    if program_name == "conway":
        return rng.integers(0, 2, shape).astype(dtype)
    if dtype.kind == "f":
        return rng.uniform(0.0, 1.0, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -100), min(info.max, 255), shape, endpoint=True).astype(dtype)


def make_inputs(prog, shape: tuple, rng: np.random.Generator) -> dict:
    """Arguments for `prog` on a grid of `shape` (NumPy order); written-only grid images are
    passed too (as zeros) so that programs whose grid is an output get their size."""
    info = prog.info
    args = {}
    for p in info.params:
        array = info.arrays.get(p.name)
        if array is None:
            value = SCALARS.get(p.name, 3 if p.type.is_integer else 0.7)
            args[p.name] = value
        elif array.kind == "image":
            if array.dims == len(shape):
                image_shape = shape
            elif array.dims < len(shape):
                image_shape = shape[-array.dims:]
            else:  # a volume read by a 2-D grid (raycasting): add a depth
                image_shape = (9,) + shape
            if array.is_written and not array.is_read:
                element = array.element
                full = image_shape + ((element.width,) if isinstance(element, ty.VectorType) else ())
                args[p.name] = np.zeros(full, element.dtype)
            else:
                args[p.name] = random_array(rng, image_shape, array.element, prog.name)
        elif array.kind == "array":
            args[p.name] = random_array(rng, tuple(array.shape), array.element, prog.name)
        else:
            args[p.name] = random_array(rng, (max(shape) + 3,), array.element, prog.name)
    return args
