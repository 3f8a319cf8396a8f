"""Checking and marshalling the host's arguments (NumPy arrays, Python numbers).

dtype mapping (pixel / element type -> NumPy): bool -> uint8, char -> int8, uchar -> uint8,
short -> int16, ushort -> uint16, int -> int32, uint -> uint32, float -> float32,
double -> float64. Vector pixels (uchar4, float4) add a trailing axis of length 4.
A 2-D image is an array of shape (height, width); a 3-D image (depth, height, width).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..errors import ArgumentError
from ..ir import types as ty
from ..passes.semantic import ArrayInfo, ProgramInfo
from .memory import Buffer, array_bytes, check_host


@dataclass
class PreparedArgs:
    # every array parameter: contiguous copies owned by us; with prepare(copy=False) the caller's
    # arrays (NumPy or pyopencl.array.Array), and zero-stride views for the zero-filled ones
    arrays: dict[str, Any]
    scalars: dict[str, Any]  # NumPy scalars of the parameter's type
    grid_shape: tuple[int, ...]  # NumPy order: (height, width) or (depth, height, width)
    outputs: list[str]  # the written arrays, in parameter order
    zeros: frozenset = frozenset()  # written arrays the caller left out, allocated zero-filled


def expected_shape_text(array: ArrayInfo) -> str:
    if array.kind == "image":
        axes = ["height", "width"] if array.dims == 2 else ["depth", "height", "width"]
        if isinstance(array.element, ty.VectorType):
            axes.append(str(array.element.width))
        return "(" + ", ".join(axes) + ")"
    if array.kind == "array":
        return str(tuple(array.shape))
    return "(n,)"


def _element_dtype(array: ArrayInfo) -> np.dtype:
    return array.element.dtype


def _check_array(array: ArrayInfo, value: Any, cast: bool = False, device_ok: bool = False) -> Any:
    """`value` checked against the parameter (cast to its dtype when `cast`); device arrays
    (pyopencl.array.Array) pass when `device_ok`."""
    from .interop import check_device_layout, is_device_array

    name = array.name
    want = _element_dtype(array)
    on_device = is_device_array(value)
    if on_device and not device_ok:
        raise ArgumentError(f"parameter '{name}' is a pyopencl device array, which this call does not take: "
                            "pass it as NumPy (.get())")
    if cast and isinstance(value, (list, tuple)):
        value = np.asarray(value, dtype=want)
    if not isinstance(value, np.ndarray) and not on_device:
        if isinstance(value, (list, tuple)):
            raise ArgumentError(f"parameter '{name}' needs a NumPy array, not a {type(value).__name__} "
                                f"(use np.asarray(..., dtype=np.{_element_dtype(array)}))")
        raise ArgumentError(f"parameter '{name}' needs a NumPy array of shape {expected_shape_text(array)}, "
                            f"got {type(value).__name__}")
    if value.dtype != want:
        if cast:
            value = value.astype(want)
        else:
            declared = array.param.type.c_name()
            raise ArgumentError(
                f"parameter '{name}' ({declared}) needs dtype {want}, got {value.dtype} "
                f"(convert with arr.astype(np.{want.name}), or pass cast=True)"
            )
    if on_device:
        check_device_layout(name, value)
    vector = isinstance(array.element, ty.VectorType)
    if array.kind == "image":
        want_ndim = array.dims + (1 if vector else 0)
        if value.ndim != want_ndim:
            raise ArgumentError(
                f"parameter '{name}' is a {array.dims}-D image: expected an array of shape "
                f"{expected_shape_text(array)}, got {value.ndim} dimensions {value.shape}"
            )
        if vector and value.shape[-1] != array.element.width:
            raise ArgumentError(f"parameter '{name}' has {array.element} pixels: the last axis must have length "
                                f"{array.element.width}, got {value.shape[-1]}")
        if value.size == 0:
            raise ArgumentError(f"parameter '{name}' is an empty image {value.shape}")
        if any(s > 2**31 - 1 for s in value.shape) or value.size > 2**31 - 1:
            raise ArgumentError(f"parameter '{name}' is too large for 32-bit indexing {value.shape}")
    elif array.kind == "array":
        want_shape = tuple(array.shape) + ((array.element.width,) if vector else ())
        if value.shape != want_shape:
            raise ArgumentError(f"parameter '{name}' is declared {array.param.type.c_name()}: expected shape "
                                f"{want_shape}, got {value.shape}")
    else:
        if value.ndim != 1 + (1 if vector else 0):
            raise ArgumentError(f"parameter '{name}' is a pointer: expected a 1-D array, got shape {value.shape}")
        if value.shape[0] == 0:
            raise ArgumentError(f"parameter '{name}' is an empty array")
    return value


def _check_scalar(name: str, t: ty.Type, value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(t, ty.VectorType):
        raise ArgumentError(f"parameter '{name}' of vector type {t} is not supported as a kernel argument")
    assert isinstance(t, ty.ScalarType)
    if t == ty.BOOL:
        if not isinstance(value, (bool, numbers.Integral)) or value not in (0, 1):
            raise ArgumentError(f"parameter '{name}' is bool: pass True or False, got {value!r}")
        return np.int32(int(value))
    if isinstance(value, bool) or not isinstance(value, numbers.Number) or isinstance(value, complex):
        raise ArgumentError(f"parameter '{name}' is {t.c_name()}: pass a number, got {value!r}")
    if t.is_integer:
        if not isinstance(value, numbers.Integral):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise ArgumentError(f"parameter '{name}' is {t.c_name()}: pass an integer, got {value!r}")
        info = np.iinfo(t.dtype)
        if not info.min <= value <= info.max:
            raise ArgumentError(f"parameter '{name}' is {t.c_name()}: {value} is outside [{info.min}, {info.max}]")
        return t.dtype.type(value)
    return t.dtype.type(value)


def prepare(info: ProgramInfo, kwargs: dict[str, Any], copy: bool = True, cast: bool = False,
            device_ok: bool = False) -> PreparedArgs:
    """Check every argument against the kernel's parameters. `copy`: owned, contiguous copies,
    with the left-out outputs allocated; else the caller's arrays as given (what is uploaded is
    copied then anyway), zero-stride zero views for the left-out outputs. `cast`: arrays of
    another dtype are converted (astype) instead of refused. `device_ok`: pyopencl device arrays
    are accepted (with copy=False only)."""
    params = {p.name: p for p in info.params}
    unknown = [k for k in kwargs if k not in params]
    if unknown:
        from ..errors import suggestion_suffix

        k = unknown[0]
        raise ArgumentError(f"'{info.kernel.name}' has no parameter '{k}'" + suggestion_suffix(k, params)
                            + f" (parameters: {', '.join(params)})")
    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, Any] = {}
    for p in info.params:
        array = info.arrays.get(p.name)
        given = kwargs.get(p.name)
        if array is None:
            if p.name not in kwargs:
                raise ArgumentError(f"missing scalar argument '{p.name}' ({p.type.c_name()})")
            scalars[p.name] = _check_scalar(p.name, p.type, given)
            continue
        if p.name not in kwargs or given is None:
            if not array.is_written or (array.is_read and not array.in_grid):
                raise ArgumentError(f"missing argument '{p.name}' ({p.type.c_name()}, expected shape "
                                    f"{expected_shape_text(array)})")
            continue
        arrays[p.name] = _check_array(array, given, cast, device_ok)

    grid_shape = _grid_shape(info, arrays)
    zeros: dict[str, tuple[int, ...]] = {}
    for p in info.params:
        array = info.arrays.get(p.name)
        if array is None or p.name in arrays:
            continue
        if array.in_grid and array.is_written:  # allocated zero-filled (LANGUAGE.md)
            zeros[p.name] = grid_shape + ((array.element.width,) if isinstance(array.element, ty.VectorType) else ())
        else:
            raise ArgumentError(f"output '{p.name}' is not in the grid, so its shape is unknown: pass an array "
                                f"of shape {expected_shape_text(array)} for it")
    outputs = [p.name for p in info.params if p.name in info.arrays and info.arrays[p.name].is_written]
    if not copy:
        for name, shape in zeros.items():  # no memory: the device side is filled on the device
            arrays[name] = np.broadcast_to(np.zeros((), _element_dtype(info.arrays[name])), shape)
        return PreparedArgs(arrays, scalars, grid_shape, outputs, frozenset(zeros))
    # what is allocated here (owned copies, zero-filled outputs) must fit before it is
    check_host([Buffer(f"'{n}' {a.shape} {a.dtype}", int(a.nbytes)) for n, a in arrays.items()]
               + [Buffer(f"output '{n}' {shape} {_element_dtype(info.arrays[n])}",
                         array_bytes(shape, _element_dtype(info.arrays[n]))) for n, shape in zeros.items()],
               copies=1)
    arrays = {n: np.array(a, dtype=a.dtype, order="C", copy=True) for n, a in arrays.items()}
    for name, shape in zeros.items():
        arrays[name] = np.zeros(shape, dtype=_element_dtype(info.arrays[name]))
    return PreparedArgs(arrays, scalars, grid_shape, outputs, frozenset(zeros))


def _grid_shape(info: ProgramInfo, arrays: dict[str, np.ndarray]) -> tuple[int, ...]:
    if not info.grid:
        return tuple(reversed(info.grid_size))
    shape: Optional[tuple[int, ...]] = None
    first = None
    for name in info.grid:
        if name not in arrays:
            continue
        s = arrays[name].shape[: info.grid_dims]
        if shape is None:
            shape, first = s, name
        elif s != shape:
            raise ArgumentError(f"grid images must have the same shape: '{first}' is {shape}, '{name}' is {s}")
    if shape is None:
        raise ArgumentError("the grid's size is unknown: pass at least one of the grid images ("
                            + ", ".join(info.grid) + ")")
    return shape
