"""The C host wrapper of a tuned kernel: a header and an implementation that build and run it with
the system's OpenCL. The C lives in templates/host_wrapper.h.j2 and host_wrapper.c.j2; this
module works out what they print: the wrapper's parameters, its memory objects, the kernel's
arguments in order and the arrays it downloads.

User text reaches the C only through the templates' filters (imagecl/escape.py, installed in the
environment of imagecl/templating.py that renders the kernel too): `comment` in
comments, `c_string` for string literals, `c_identifier` for names inside them;
tests/test_injection.py checks that every such place in the templates has its filter.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from . import __version__, escape, templating
from .codegen.variant import VariantPlan, kernel_args, tile_bytes_at_launch
from .ir import types as ty
from .ir.names import renamed

_C_TYPES = {"bool": "cl_int", "char": "cl_char", "uchar": "cl_uchar", "short": "cl_short", "ushort": "cl_ushort",
            "int": "cl_int", "uint": "cl_uint", "float": "cl_float", "double": "cl_double"}
_CHANNEL_TYPES = {"float": "CL_FLOAT", "uchar": "CL_UNSIGNED_INT8", "char": "CL_SIGNED_INT8",
                  "ushort": "CL_UNSIGNED_INT16", "short": "CL_SIGNED_INT16", "uint": "CL_UNSIGNED_INT32",
                  "int": "CL_SIGNED_INT32"}
_EXTENTS = ("width", "height", "depth")


@dataclass
class Param:
    """One parameter of the wrapper's run function."""

    ctype: str
    name: str


@dataclass
class MemObject:
    """The buffer or image that holds one array on the device."""

    index: int  # in the wrapper's imcl_mem[]
    name: str  # the .icl name (for comments)
    host: str  # the wrapper's parameter with the data
    kind: str  # "buffer", "image" or "array_image" (a fixed-size array in image memory)
    bytes: str = ""  # buffers: the size in bytes, a C expression
    channels: str = ""  # images: CL_R or CL_RGBA
    channel_type: str = ""
    image_type: str = ""
    extents: list[tuple[str, str]] = field(default_factory=list)  # images: (cl_image_desc field, C value)


@dataclass
class KernelArgument:
    """How the wrapper sets one kernel argument: a memory object, a value, or local memory."""

    kind: str  # "mem", "value" or "local"
    mem: int = 0
    ctype: str = ""
    value: str = ""
    bytes: int = 0


@dataclass
class Download:
    """An array the kernel writes, read back into the caller's array after the launch."""

    mem: int
    host: str
    bytes: str


def render(program, plan: VariantPlan, source: str, config: Mapping[str, int], device_name: str) -> tuple[str, str]:
    """(header, implementation) of the wrapper of `plan`'s variant, whose OpenCL is `source`."""
    info = program.info
    name = escape.c_identifier(program.name, "the kernel's name")
    host, derived = _host_names(info)
    mems = _mem_objects(info, plan, host, derived)
    index = {m.name: m.index for m in mems}
    context = {
        "version": __version__,
        "origin": program.filename,
        "name": name,
        "prefix": f"imcl_{name}",
        "guard": f"IMCL_{name.upper()}_H",
        "device_name": device_name,
        "configuration": json.dumps(dict(config), sort_keys=True),
        "params": _run_params(info, host, derived),
        "source_lines": _literal_lines(source),
        "kernel_symbol": program.kernel_symbol,
        "mem_count": max(1, len(info.arrays)),
        "mems": mems,
        "arguments": _arguments(program, plan, host, derived, index),
        "dims": info.grid_dims,
        "grid": _grid(info, derived),
        "per_item": ", ".join(map(str, plan.px)),
        "local": ", ".join(map(str, plan.wg)) if plan.wg else None,
        "downloads": [Download(index[n], host[n], _bytes(a, derived)) for n, a in info.arrays.items() if a.is_written],
    }
    env = templating.environment()
    return (env.get_template("host_wrapper.h.j2").render(**context),
            env.get_template("host_wrapper.c.j2").render(**context))


def _host_names(info) -> tuple[dict[str, str], Callable[[str, str], str]]:
    """C identifiers of the wrapper's parameters: the .icl names, renamed where they would meet a
    word of OpenCL/C (as in the kernel) or of the OpenCL host API (cl*, CL_*, memset); the
    extents `<name>_width` etc. get the `imcl_` prefix where they would meet another name. The
    wrapper's own locals all start with `imcl_`, which no user name keeps."""
    hn = {}
    for p in info.params:
        c = info.c_name(p.name)
        if re.match(r"cl[A-Z_]|CL_", c) or c in ("memset", "malloc", "free", "fprintf", "stderr"):
            c = renamed(p.name)
        hn[p.name] = c
    taken = set(hn.values())

    def derived(name: str, what: str) -> str:
        plain = f"{hn[name]}_{what}"
        return plain if plain not in taken else f"imcl_{name}_{what}"

    return hn, derived


def _run_params(info, host, derived) -> list[Param]:
    """The run function's parameters: every array with its extents, then scalars, in parameter order."""
    params: list[Param] = []
    for p in info.params:
        array = info.arrays.get(p.name)
        if array is None:
            params.append(Param(_C_TYPES[p.type.c_name()] if isinstance(p.type, ty.ScalarType) else "cl_float",
                                host[p.name]))
            continue
        const = "" if array.is_written else "const "
        params.append(Param(f"{const}{_C_TYPES[ty.element_scalar(array.element).name]}*", host[p.name]))
        if array.kind == "image":
            params += [Param("int", derived(p.name, e)) for e in _EXTENTS[: array.dims]]
        elif array.kind == "pointer":
            params.append(Param("size_t", derived(p.name, "length")))
    return params


def _lanes(array) -> int:
    return array.element.width if isinstance(array.element, ty.VectorType) else 1


def _bytes(array, derived) -> str:
    """The size of `array`'s data in bytes, a C expression over the wrapper's parameters."""
    if array.kind == "image":
        count = " * ".join([f"(size_t){derived(array.name, e)}" for e in _EXTENTS[: array.dims]]
                           + [str(_lanes(array))])
    elif array.kind == "array":
        count = str(int(np.prod(array.shape)) * _lanes(array))
    else:
        count = f"{derived(array.name, 'length')} * {_lanes(array)}"
    return f"({count}) * sizeof({_C_TYPES[ty.element_scalar(array.element).name]})"


def _mem_objects(info, plan: VariantPlan, host, derived) -> list[MemObject]:
    mems = []
    for i, (n, array) in enumerate(info.arrays.items()):
        if n not in plan.image_mem:
            mems.append(MemObject(i, n, host[n], "buffer", bytes=_bytes(array, derived)))
            continue
        image = MemObject(i, n, host[n], "image", channels="CL_RGBA" if isinstance(array.element, ty.VectorType)
                          else "CL_R", channel_type=_CHANNEL_TYPES[ty.element_scalar(array.element).name])
        if array.kind == "array":  # a 1-D image, or a 2-D one M wide and N high for a[N][M]
            image.kind = "array_image"
            image.channels = "CL_RGBA" if _lanes(array) == 4 else "CL_R"
            image.image_type = "CL_MEM_OBJECT_IMAGE1D" if len(array.shape) == 1 else "CL_MEM_OBJECT_IMAGE2D"
            image.extents = [("width", str(array.shape[-1]))]
            if len(array.shape) == 2:
                image.extents.append(("height", str(array.shape[0])))
        else:
            image.image_type = "CL_MEM_OBJECT_IMAGE3D" if array.dims == 3 else "CL_MEM_OBJECT_IMAGE2D"
            image.extents = [(e, f"(size_t){derived(n, e)}") for e in _EXTENTS[: array.dims]]
        mems.append(image)
    return mems


def _arguments(program, plan: VariantPlan, host, derived, index: dict[str, int]) -> list[KernelArgument]:
    info = program.info
    scalar_types = {p.name: p.type for p in info.params}
    out = []
    for a in kernel_args(info, plan):
        if a.role in ("buffer", "image"):
            out.append(KernelArgument("mem", mem=index[a.param]))
        elif a.role == "extent":
            out.append(KernelArgument("value", ctype="cl_int", value=derived(a.param, _EXTENTS[a.axis])))
        elif a.role == "length":
            out.append(KernelArgument("value", ctype="cl_int", value=f"(cl_int){derived(a.param, 'length')}"))
        elif a.role == "tile":  # the local-memory tile, sized as the runtime sizes it
            analysis = program.analysis_for(dict(plan.tunables))
            out.append(KernelArgument("local", bytes=tile_bytes_at_launch(info, plan, analysis, a.param)))
        else:
            ctype = _C_TYPES[scalar_types[a.param].c_name()]
            out.append(KernelArgument("value", ctype=ctype, value=f"({ctype}){host[a.param]}"))
    return out


def _grid(info, derived) -> str:
    if info.grid:
        return ", ".join(f"(size_t){derived(info.grid[0], e)}" for e in _EXTENTS[: info.grid_dims])
    return ", ".join(str(s) for s in info.grid_size)


def _literal_lines(text: str) -> list[str]:
    """`text` cut after each newline, so that the embedded source is one string literal a line."""
    lines = text.split("\n")
    return [line + ("\n" if i < len(lines) - 1 else "") for i, line in enumerate(lines)]


__all__ = ["render"]
