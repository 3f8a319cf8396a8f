"""The type system: OpenCL C scalar and vector types, images and arrays."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# name -> (rank for the usual arithmetic conversions, NumPy dtype, is_integer, is_signed, bits)
_SCALARS: dict[str, tuple[int, str, bool, bool, int]] = {
    "bool": (0, "bool", True, False, 1),
    "char": (1, "int8", True, True, 8),
    "uchar": (1, "uint8", True, False, 8),
    "short": (2, "int16", True, True, 16),
    "ushort": (2, "uint16", True, False, 16),
    "int": (3, "int32", True, True, 32),
    "uint": (3, "uint32", True, False, 32),
    "float": (5, "float32", False, True, 32),
    "double": (6, "float64", False, True, 64),
}


class Type:
    """Base of every type; frozen dataclasses compare by value."""

    def c_name(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.c_name()

    def __deepcopy__(self, memo) -> "Type":
        return self  # a value: copies of the IR share it (passes/specialise.py)


@dataclass(frozen=True)
class VoidType(Type):
    def c_name(self) -> str:
        return "void"


@dataclass(frozen=True)
class ScalarType(Type):
    name: str

    def c_name(self) -> str:
        return self.name

    @property
    def rank(self) -> int:
        return _SCALARS[self.name][0]

    @property
    def dtype(self) -> np.dtype:
        # bool pixels and arguments travel as one byte, as in OpenCL's memory model
        return np.dtype("uint8") if self.name == "bool" else np.dtype(_SCALARS[self.name][1])

    @property
    def is_integer(self) -> bool:
        return _SCALARS[self.name][2]

    @property
    def is_float(self) -> bool:
        return not self.is_integer

    @property
    def is_signed(self) -> bool:
        return _SCALARS[self.name][3]

    @property
    def bits(self) -> int:
        return _SCALARS[self.name][4]


@dataclass(frozen=True)
class VectorType(Type):
    base: ScalarType
    width: int

    def c_name(self) -> str:
        return f"{self.base.name}{self.width}"

    @property
    def dtype(self) -> np.dtype:
        return self.base.dtype


@dataclass(frozen=True)
class ImageType(Type):
    pixel: Type  # ScalarType or VectorType

    def c_name(self) -> str:
        return f"Image<{self.pixel.c_name()}>"


@dataclass(frozen=True)
class ArrayType(Type):
    """A fixed-size array: a parameter `T a[N][M]` or a private array in the body."""

    element: Type
    shape: tuple[int, ...]

    def c_name(self) -> str:
        return self.element.c_name() + "".join(f"[{n}]" for n in self.shape)


@dataclass(frozen=True)
class PointerType(Type):
    """A 1-D array parameter of unknown length, `T* a`."""

    element: Type

    def c_name(self) -> str:
        return f"{self.element.c_name()}*"


VOID = VoidType()
BOOL = ScalarType("bool")
CHAR = ScalarType("char")
UCHAR = ScalarType("uchar")
SHORT = ScalarType("short")
USHORT = ScalarType("ushort")
INT = ScalarType("int")
UINT = ScalarType("uint")
FLOAT = ScalarType("float")
DOUBLE = ScalarType("double")

SCALAR_NAMES = tuple(_SCALARS)
VECTOR_BASES = {"float": FLOAT, "int": INT, "uchar": UCHAR}
VECTOR_WIDTHS = (2, 3, 4)
PIXEL_TYPES = tuple(ScalarType(n) for n in SCALAR_NAMES if n != "bool") + (
    VectorType(UCHAR, 4),
    VectorType(FLOAT, 4),
)
COMPONENTS = "xyzw"


def scalar_or_vector(name: str) -> Type:
    """The type named by a type keyword (`float`, `uint`, `float4`, `Pixel`...)."""
    if name == "void":
        return VOID
    if name == "Pixel":
        return FLOAT
    if name in _SCALARS:
        return ScalarType(name)
    base, width = name[:-1], int(name[-1])
    return VectorType(VECTOR_BASES[base], width)


def is_arithmetic(t: Type) -> bool:
    return isinstance(t, (ScalarType, VectorType))


def element_scalar(t: Type) -> ScalarType:
    return t.base if isinstance(t, VectorType) else t  # type: ignore[return-value]


def promote(t: ScalarType) -> ScalarType:
    """C integer promotion: small integer types become int."""
    if t.is_integer and t.rank < INT.rank:
        return INT
    return t


def arithmetic_result(a: Type, b: Type) -> Type | None:
    """The usual arithmetic conversions of C / OpenCL C, or None when the operands do not mix."""
    if isinstance(a, VectorType) or isinstance(b, VectorType):
        if isinstance(a, VectorType) and isinstance(b, VectorType):
            return a if a == b else None
        vec = a if isinstance(a, VectorType) else b
        return vec  # a scalar operand is converted to the vector's element type and broadcast
    assert isinstance(a, ScalarType) and isinstance(b, ScalarType)
    a, b = promote(a), promote(b)
    if a.rank != b.rank:
        return a if a.rank > b.rank else b
    if a.is_integer and (not a.is_signed or not b.is_signed):
        return UINT
    return a


def is_assignable(target: Type, value: Type) -> bool:
    """Implicit conversion on assignment / initialisation / argument passing."""
    if isinstance(target, ScalarType) and isinstance(value, ScalarType):
        return True
    if isinstance(target, VectorType):
        return value == target or isinstance(value, ScalarType)
    return target == value
