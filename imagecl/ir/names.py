"""User identifiers in the generated OpenCL C.

The language is C: apart from C's keywords, any identifier is a valid name, including words
that OpenCL C predefines (`kernel`, `local`, `M_PI`, `INT_MAX`, `vec_step`, `sin`, `read_imagef`,
`float8`, ...) and would reject or misread. Drivers also predefine macros of their own
(`cl_khr_fp64`, `CL_VERSION_2_0`, `POCL_DEVICE_ADDRESS_BITS`, `__OPENCL_VERSION__`, `FP_FAST_FMA`,
`__NV_CL_C_VERSION`, ...) that no list can hold, so whole families of names are renamed by
pattern (`VENDOR_PATTERN`). Such a user name is renamed in the generated code to
`imcl_v_<name>_`. Every name the code generator introduces itself starts with `imcl_` and
never has that form, so the renamed names cannot collide with generated names, nor with each
other (the mapping is injective), nor with other user names (a user name that starts with
`imcl_` is itself renamed, so no user name appears in the output with that prefix).
"""
from __future__ import annotations

import re
from typing import Iterable, Optional

from .opencl_predefined import PREDEFINED

# C keywords that are not words of the language: rejected as names, as a C compiler would.
C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline "
    "int long register restrict return short signed sizeof static struct switch typedef union unsigned "
    "void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn "
    "_Static_assert _Thread_local".split()
)

_VECTOR_BASES = "char uchar short ushort int uint long ulong float double half bool quad".split()
_WIDTHS = ("2", "3", "4", "8", "16")

# Keywords and reserved type names of the OpenCL C specification (6.1, 6.2.6, 6.16), which
# no header declares.
OPENCL_KEYWORDS = frozenset(
    "kernel global local constant private generic read_only write_only read_write uniform pipe "
    "vec_step complex imaginary bool char uchar short ushort int uint long ulong float double half quad "
    "size_t ptrdiff_t intptr_t uintptr_t void printf "
    "image1d_t image1d_array_t image1d_buffer_t image2d_t image2d_array_t image2d_depth_t "
    "image2d_array_depth_t image2d_msaa_t image2d_array_msaa_t image2d_msaa_depth_t "
    "image2d_array_msaa_depth_t image3d_t sampler_t event_t queue_t clk_event_t reserve_id_t "
    "ndrange_t cl_mem_fence_flags memory_order memory_scope kernel_enqueue_flags_t clk_profiling_info "
    "atomic_int atomic_uint atomic_long atomic_ulong atomic_float atomic_double atomic_half "
    "atomic_intptr_t atomic_uintptr_t atomic_size_t atomic_ptrdiff_t atomic_flag true false".split()
) | {b + w for b in _VECTOR_BASES for w in _WIDTHS} | {
    f"{b}{n}x{m}" for b in ("float", "double", "half") for n in _WIDTHS for m in _WIDTHS
}

# `main` cannot name a kernel in OpenCL C; `defined` cannot be a macro.
OPENCL_RESERVED = PREDEFINED | OPENCL_KEYWORDS | {"main", "defined"}

# Names in the families that OpenCL drivers predefine macros in: extension macros (`cl_khr_*`,
# `cl_amd_*`, `cl_nv_*`, `cl_APPLE_*`), version and feature macros (`CL_VERSION_*`,
# `__OPENCL_*`, `__opencl_c_*`), driver macros (`POCL_*`, `CLANG_*`, `__NV_*`, `__AMD__`,
# `__GPU__`, `__ENDIAN_LITTLE__`), `FP_FAST_FMA*`, and everything that C reserves (a leading
# underscore).
VENDOR_PATTERN = re.compile(r"_|cl_|CL_|POCL_|pocl_|CLANG_|FP_FAST_|NVIDIA|AMD|INTEL|APPLE|imcl_")

# Identifiers of the fixed parts of the generated code (the boundary functions' parameters
# and locals). A user variable never meets them, but a tunable becomes a `#define` that would
# rewrite them, and so would a tunable named like a vector component (`.x`, `.s0`, `.lo`).
TEMPLATE_LOCALS = frozenset("img x y z w h d n r period i j".split())
_COMPONENT = re.compile(r"[xyzw]{1,4}|[sS][0-9a-fA-F]{1,16}|lo|hi|even|odd")

RENAMED_PREFIX = "imcl_v_"


# Words of the language itself that C programmers read as type names or keywords (`half` is
# parsed as a type, to say that it is not supported).
LANGUAGE_WORDS = frozenset(
    "bool uchar ushort uint half Image Pixel true false".split()
) | {f"{b}{w}" for b in ("float", "int", "uchar") for w in ("2", "3", "4")}


def reserved_word(name: str) -> Optional[str]:
    """Why `name` cannot be a user name (None: it can)."""
    if name in C_KEYWORDS:
        return f"'{name}' is a C keyword"
    if name in ("true", "false"):
        return f"'{name}' is a keyword"
    if name in LANGUAGE_WORDS:
        return f"'{name}' is a type name"
    return None


def needs_renaming(name: str, macro: bool = False) -> bool:
    """Would `name` collide with OpenCL C or with the generated code? (`macro`: it is emitted
    as a `#define`, which also rewrites the generated code's own words.)"""
    if name in OPENCL_RESERVED or VENDOR_PATTERN.match(name):
        return True
    return macro and (name in TEMPLATE_LOCALS or _COMPONENT.fullmatch(name) is not None)


def renamed(name: str) -> str:
    return f"{RENAMED_PREFIX}{name}_"


def c_names(names: Iterable[str], macros: Iterable[str] = ()) -> dict[str, str]:
    """The renamed user names: name -> its identifier in the generated code (others keep theirs)."""
    out = {n: renamed(n) for n in names if needs_renaming(n)}
    out.update({n: renamed(n) for n in macros if needs_renaming(n, macro=True)})
    return out
