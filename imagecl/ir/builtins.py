"""Signatures of the OpenCL C built-in functions the language offers.

Each entry gives the number of arguments and a rule for argument and result types. Where
OpenCL C would reject a call that C accepts (`sqrt(int)`, `min(int, float)`), the arguments
are converted the way C would (documented in docs/language-notes.md), so the call means what a
C programmer expects.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from . import types as ty

# kind: 'float'   - every argument converted to float (or kept as float vector); result = that type
#       'generic' - integer or float, arguments brought to their common type (C conversions)
#       'int'     - integer only, common type
#       'abs'     - integer abs returns the unsigned type (OpenCL); float abs means fabs
#       'rel'     - float arguments, int result (isnan, isinf, signbit)
#       'geom'    - float vectors, float result (dot, length, distance)
#       'vecf'    - float vectors, same-type result (normalize, cross)
#       'select'  - select(a, b, c): type of a/b


@dataclass(frozen=True)
class Builtin:
    name: str
    arity: tuple[int, ...]
    kind: str


_FLOAT1 = (
    "sqrt rsqrt cbrt exp exp2 exp10 expm1 log log2 log10 log1p sin cos tan asin acos atan "
    "sinh cosh tanh asinh acosh atanh floor ceil round trunc rint fabs sign degrees radians "
    "native_sqrt native_rsqrt native_exp native_log native_sin native_cos native_recip "
    "half_sqrt half_exp half_log erf erfc tgamma lgamma"
).split()
_FLOAT2 = "pow powr pown atan2 fmin fmax hypot fmod copysign fdim step native_divide native_powr maxmag minmag".split()
_FLOAT3 = "mad fma mix smoothstep".split()
_INT2 = "mul24 add_sat sub_sat hadd rhadd abs_diff rotate mul_hi".split()
_INT1 = "popcount clz".split()

BUILTINS: dict[str, Builtin] = {}
for _n in _FLOAT1:
    BUILTINS[_n] = Builtin(_n, (1,), "float")
for _n in _FLOAT2:
    BUILTINS[_n] = Builtin(_n, (2,), "float")
for _n in _FLOAT3:
    BUILTINS[_n] = Builtin(_n, (3,), "float")
for _n in _INT1:
    BUILTINS[_n] = Builtin(_n, (1,), "int")
for _n in _INT2:
    BUILTINS[_n] = Builtin(_n, (2,), "int")
BUILTINS["mad24"] = Builtin("mad24", (3,), "int")
BUILTINS["min"] = Builtin("min", (2,), "generic")
BUILTINS["max"] = Builtin("max", (2,), "generic")
BUILTINS["clamp"] = Builtin("clamp", (3,), "generic")
BUILTINS["abs"] = Builtin("abs", (1,), "abs")
BUILTINS["isnan"] = Builtin("isnan", (1,), "rel")
BUILTINS["isinf"] = Builtin("isinf", (1,), "rel")
BUILTINS["isfinite"] = Builtin("isfinite", (1,), "rel")
BUILTINS["signbit"] = Builtin("signbit", (1,), "rel")
BUILTINS["dot"] = Builtin("dot", (2,), "geom")
BUILTINS["distance"] = Builtin("distance", (2,), "geom")
BUILTINS["length"] = Builtin("length", (1,), "geom")
BUILTINS["fast_length"] = Builtin("fast_length", (1,), "geom")
BUILTINS["normalize"] = Builtin("normalize", (1,), "vecf")
BUILTINS["cross"] = Builtin("cross", (2,), "vecf")
BUILTINS["select"] = Builtin("select", (3,), "select")

# convert_T, convert_T_sat, convert_T_rte...: explicit conversions with OpenCL's rounding modes
CONVERT_ROUNDING = ("", "_rte", "_rtz", "_rtp", "_rtn")


def convert_target(name: str) -> Optional[tuple[ty.Type, bool]]:
    """For `convert_uchar4_sat_rte` return (uchar4, saturate=True); None if not a convert_ name."""
    if not name.startswith("convert_"):
        return None
    rest = name[len("convert_"):]
    for rounding in CONVERT_ROUNDING:
        if rounding and rest.endswith(rounding):
            rest = rest[: -len(rounding)]
            break
    saturate = rest.endswith("_sat")
    if saturate:
        rest = rest[: -len("_sat")]
    names = set(ty.SCALAR_NAMES) | {f"{b}{w}" for b in ty.VECTOR_BASES for w in ty.VECTOR_WIDTHS}
    if rest not in names or rest == "bool":
        return None
    return ty.scalar_or_vector(rest), saturate


def all_names() -> list[str]:
    return sorted(BUILTINS)
