"""The naive variant: one work-item per grid point, global memory, boundary handling in functions."""
from __future__ import annotations

import functools
from dataclasses import dataclass

import jinja2

from .. import __version__
from ..ir import nodes as ir
from ..ir import types as ty
from ..ir.walk import walk
from ..passes.semantic import GRID_INDICES, ArrayInfo, ProgramInfo
from ..resources import resource_dir
from .emitter import AccessPlan, Emitter, names


@functools.lru_cache(maxsize=1)
def template_env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


@dataclass
class KernelArg:
    """One OpenCL kernel argument, in order: what the host passes and how."""

    name: str  # the argument's name in the generated code
    role: str  # 'buffer', 'extent', 'length', 'scalar'
    param: str  # the .icl parameter it comes from
    ctype: str  # OpenCL C type text
    axis: int = -1  # for 'extent': 0 width, 1 height, 2 depth


def kernel_args(info: ProgramInfo) -> list[KernelArg]:
    args: list[KernelArg] = []
    for p in info.params:
        array = info.arrays.get(p.name)
        if array is None:
            t = p.type
            ctype = "int" if t == ty.BOOL else t.c_name()  # bool cannot be a kernel argument
            args.append(KernelArg(p.name, "scalar", p.name, ctype))
            continue
        const = "" if array.is_written else "const "
        args.append(KernelArg(p.name, "buffer", p.name, f"__global {const}{array.element.c_name()}*"))
        n = names(array)
        if array.kind == "image":
            for axis in range(array.dims):
                args.append(KernelArg(n["whd"[axis]], "extent", p.name, "int", axis))
        elif array.kind == "pointer":
            args.append(KernelArg(n["len"], "length", p.name, "int"))
    return args


def grid_extents(info: ProgramInfo) -> list[str]:
    """OpenCL C expressions for the grid's extent per dimension."""
    if info.grid:
        first = info.arrays[info.grid[0]]
        return [names(first)["whd"[a]] for a in range(info.grid_dims)]
    return [str(s) for s in info.grid_size]


def uses_double(info: ProgramInfo) -> bool:
    for node in walk(info.unit.functions):
        t = getattr(node, "type", None) if isinstance(node, ir.Expr) else None
        for candidate in (t, getattr(node, "var_type", None), getattr(node, "return_type", None)):
            if candidate is not None and ty.DOUBLE.c_name() in candidate.c_name():
                return True
        if isinstance(node, ir.Param) and "double" in node.type.c_name():
            return True
    return False


def boundary_read_functions(info: ProgramInfo) -> list[dict]:
    out = []
    for array in info.arrays.values():
        if array.kind != "image" or not array.reads:
            continue
        coords = ["x", "y", "z"][: array.dims]
        extents = ["w", "h", "d"][: array.dims]
        linear = "(z * h + y) * w + x" if array.dims == 3 else "y * w + x"
        out.append({
            "name": array.name,
            "mode": array.boundary,
            "ctype": array.element.c_name(),
            "extent_params": ", ".join(f"const int {e}" for e in extents),
            "coord_params": ", ".join(f"int {c}" for c in coords),
            "outside": " || ".join(f"{c} < 0 || {c} >= {e}" for c, e in zip(coords, extents)),
            "axes": list(zip(coords, extents)),
            "linear": linear,
        })
    return out


def helper_text(emitter: Emitter, f: ir.Function) -> str:
    params = []
    for p in f.params:
        const = "const " if p.is_const else ""
        if isinstance(p.type, ty.ArrayType):
            params.append(f"{const}{p.type.element.c_name()} {p.name}" + "".join(f"[{n}]" for n in p.type.shape))
        else:
            params.append(f"{const}{p.type.c_name()} {p.name}")
    head = f"{f.return_type.c_name()} {f.name}({', '.join(params) or 'void'})"
    return "\n".join([head, "{"] + emitter.block_lines(f.body, 1) + ["}"])


def point_params(info: ProgramInfo, args: list[KernelArg]) -> list[str]:
    params = []
    for a in args:
        if a.role == "scalar" and info.kernel.params[[p.name for p in info.params].index(a.param)].type == ty.BOOL:
            params.append(f"const bool {a.name}")
        elif a.role == "buffer":
            params.append(f"{a.ctype} {a.name}")
        else:
            params.append(f"const {a.ctype} {a.name}")
    return params + [f"const int {g}" for g in GRID_INDICES[: info.grid_dims]]


def point_args(info: ProgramInfo, args: list[KernelArg]) -> list[str]:
    out = []
    for a in args:
        is_bool = a.role == "scalar" and next(p for p in info.params if p.name == a.param).type == ty.BOOL
        out.append(f"{a.name} != 0" if is_bool else a.name)
    return out + list(GRID_INDICES[: info.grid_dims])


def generate(info: ProgramInfo, plan: AccessPlan | None = None, tunable_values: dict[str, int] | None = None,
             variant: str = "naive", config_lines: list[str] | None = None) -> str:
    """OpenCL C source of the naive variant (or of another plan's variant with the same layout)."""
    plan = plan or AccessPlan(info)
    emitter = Emitter(info, plan)
    args = kernel_args(info)
    extents = grid_extents(info)
    tunables = dict(tunable_values or {})
    for name, values in info.tunables.items():
        tunables.setdefault(name, values[0])
    grid_vars = GRID_INDICES[: info.grid_dims]
    grid_text = (
        "one point per pixel of " + ", ".join(info.grid) if info.grid
        else "fixed size " + " x ".join(str(s) for s in info.grid_size)
    )
    context = {
        "version": __version__,
        "filename": info.filename,
        "kernel_name": info.kernel.name,
        "variant": variant,
        "grid_description": grid_text,
        "config_lines": config_lines or [],
        "uses_double": uses_double(info),
        "defines": sorted(tunables.items()),
        "boundary_modes": {a.boundary for a in info.arrays.values() if a.kind == "image" and a.reads},
        "boundary_reads": boundary_read_functions(info),
        "helpers": [helper_text(emitter, f) for f in info.helpers],
        "point_params": point_params(info, args),
        "point_indent": " " * len(f"void imcl_point_{info.kernel.name}("),
        "body": "\n".join(emitter.block_lines(info.kernel.body, 1)),
        "kernel_params": [f"{a.ctype} {a.name}" if a.role == "buffer" else f"const {a.ctype} {a.name}" for a in args],
        "kernel_indent": " " * len(f"__kernel void {info.kernel.name}("),
        "grid_axes": [{"var": v, "axis": i} for i, v in enumerate(grid_vars)],
        "grid_guard": " || ".join(f"{v} >= {e}" for v, e in zip(grid_vars, extents)),
        "point_args": point_args(info, args),
    }
    return template_env().get_template("kernel.cl.j2").render(**context)
