"""Kernel signatures read from OpenCL C source, for static checks of the host's arguments.

Only what a regular expression can read reliably: the kernels' names and, per parameter,
whether it is a __global/__constant pointer, its const-ness and its element type. A type the
checks do not know (a macro, a typedef) is not checked rather than guessed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_KERNEL = re.compile(r"(?:__kernel|\bkernel)\s+(?:__attribute__\s*\(\(.*?\)\)\s*)?void\s+(\w+)\s*\(", re.S)

C_TYPES = {"char": "int8", "uchar": "uint8", "unsigned char": "uint8", "short": "int16", "ushort": "uint16",
           "unsigned short": "uint16", "int": "int32", "uint": "uint32", "unsigned int": "uint32",
           "unsigned": "uint32", "long": "int64", "ulong": "uint64", "unsigned long": "uint64",
           "half": "float16", "float": "float32", "double": "float64", "bool": "bool"}
_VECTOR = re.compile(r"^([a-z]+?)(2|3|4|8|16)$")


@dataclass
class KernelParam:
    text: str
    pointer: bool
    const: bool
    address: Optional[str]  # global, constant, local, or None (a value)
    element: Optional[str]  # the NumPy dtype name of the element / value type, None if unknown


def _param(text: str) -> KernelParam:
    t = " ".join(text.replace("*", " * ").split())
    words = t.split()
    pointer = "*" in words
    address = next((a.strip("_") for a in words if a.strip("_") in ("global", "constant", "local", "private")), None)
    const = "const" in words[: words.index("*")] if pointer else False
    keep = [w for w in words if w.strip("_") not in ("global", "constant", "local", "private", "const", "restrict",
                                                      "volatile", "read_only", "write_only", "read_write")]
    if pointer:
        keep = keep[: keep.index("*")]
    else:
        keep = keep[:-1]  # the parameter's name
    base = " ".join(keep)
    vector = _VECTOR.match(base)
    # a vector value (float4 by value) has no NumPy scalar to check against
    element = None if vector and not pointer else C_TYPES.get(vector.group(1) if vector else base)
    return KernelParam(text.strip(), pointer, const, address, element)


def kernel_signatures(source: str) -> dict[str, list[KernelParam]]:
    """{kernel name: its parameters} for every kernel the source defines plainly."""
    text = _COMMENTS.sub(" ", source)
    out: dict[str, list[KernelParam]] = {}
    for m in _KERNEL.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        inner = text[m.end(): i - 1].strip()
        if not inner or inner == "void":
            out[m.group(1)] = []
            continue
        try:
            out[m.group(1)] = [_param(p) for p in inner.split(",")]
        except (ValueError, IndexError):
            continue  # a form we do not read: no static checks for this kernel
    return out
