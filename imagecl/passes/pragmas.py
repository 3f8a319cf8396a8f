"""Semantic checks of the pragmas: the kernel's choice, its array parameters, tunables, the grid,
boundary conditions and memory placements; and the grid's dimensionality once the body is read."""
from __future__ import annotations

from typing import Optional

from ..errors import suggestion_suffix
from ..ir import builtins as bi
from ..ir import nodes as ir
from ..ir import types as ty
from ..parameters import GENERATED_PARAMETERS, generated_parameter
from .program_info import BOUNDARY_MODES, GRID_INDICES, ArrayInfo, ProgramInfo
from .scopes import AnalyserBase, check_identifier

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


class PragmaChecks(AnalyserBase):
    def _grid_dimensions(self, grid: list[str], pragmas: dict[str, list[ir.Pragma]]) -> None:
        """After the body is read: every image has a dimension, and the grid's images agree."""
        self._unsubscripted_images(grid)
        if self.idz_pos is not None and self.grid_dims != 3:
            # an `idz` met before any subscript told the grid's dimension
            raise self.error(f"'idz' is only defined for 3-D grids; this grid is {self.grid_dims}-D", self.idz_pos)
        for name in grid:
            info = self.arrays[name]
            if info.dims != self.grid_dims:
                raise self.error(
                    f"grid images must all have the same number of dimensions: '{grid[0]}' has "
                    f"{self.arrays[grid[0]].dims}, '{name}' has {info.dims}",
                    self._pragma_pos(pragmas["grid"], name),
                )

    def _unsubscripted_images(self, grid: list[str]) -> None:
        """Images that are never subscripted (unused parameters, or only `.width`/`.height`)
        have no dimension from their use: a grid image has the grid's, and the grid, when no
        grid image is subscripted, is 3-D if the kernel uses `idz` (or a grid image's `.depth`),
        else 2-D; any other such image is 3-D if its `.depth` is used, else 2-D."""
        if grid and not self.grid_dims:
            self.grid_dims = 3 if self.uses_idz or any(n in self.depth_uses for n in grid) else 2
        for info in self.arrays.values():
            if info.kind == "image" and not info.dims:
                info.dims = self.grid_dims if info.in_grid else (3 if info.name in self.depth_uses else 2)
        for name, pos in self.depth_uses.items():
            if self.arrays[name].dims == 2:
                raise self.error(f"'{name}.depth' is only defined for 3-D images", pos)

    def _pragmas_by_name(self) -> dict[str, list[ir.Pragma]]:
        out: dict[str, list[ir.Pragma]] = {}
        for p in self.unit.pragmas:
            out.setdefault(p.name, []).append(p)
        return out

    def _pragma_pos(self, pragmas: list[ir.Pragma], name: str) -> ir.Pos:
        for p in pragmas:
            for a in p.args:
                if a.name == name:
                    return a.pos
        return pragmas[0].pos

    def _select_kernel(self) -> ir.Function:
        functions = self.unit.functions
        seen: dict[str, ir.Function] = {}
        for f in functions:
            if f.name in seen:
                raise self.error(f"redefinition of function '{f.name}'", f.pos)
            if f.name in bi.BUILTINS:
                raise self.error(f"function '{f.name}' redefines an OpenCL built-in function", f.pos)
            check_identifier(self, f.name, f.pos)
            seen[f.name] = f
        chosen = [p for p in self.unit.pragmas if p.name == "kernel"]
        if chosen:
            pragma = chosen[-1]
            if len(pragma.args) != 1 or pragma.args[0].values:
                raise self.error("pragma 'kernel' takes one function name", pragma.pos)
            name = pragma.args[0].name
            if name not in seen:
                raise self.error(
                    f"pragma 'kernel' names unknown function '{name}'" + suggestion_suffix(name, seen),
                    pragma.args[0].pos,
                )
            kernel = seen[name]
        else:
            kernel = functions[-1]
        if kernel.return_type != ty.VOID:
            raise self.error(
                f"kernel function '{kernel.name}' must return void, not '{kernel.return_type}'",
                kernel.pos,
                "outputs are written to images: out[idx][idy] = value;",
            )
        return kernel

    # ---- parameters and pragmas ----------------------------------------------------
    def _collect_arrays(self, kernel: ir.Function) -> None:
        for p in kernel.params:
            t = p.type
            if isinstance(t, ty.ImageType):
                self.arrays[p.name] = ArrayInfo(p.name, p, "image", t.pixel, 0)
            elif isinstance(t, ty.ArrayType):
                self.arrays[p.name] = ArrayInfo(p.name, p, "array", t.element, len(t.shape), t.shape)
            elif isinstance(t, ty.PointerType):
                self.arrays[p.name] = ArrayInfo(p.name, p, "pointer", t.element, 1)
            elif t == ty.VOID:
                raise self.error(f"parameter '{p.name}' has type void", p.pos)
            elif isinstance(t, ty.ScalarType) and t.name == "double":
                pass

    def _declare_tunables(self, pragmas: list[ir.Pragma]) -> None:
        for pragma in pragmas:
            if not pragma.args:
                raise self.error("pragma 'tunable' needs 'NAME: value, value, ...'", pragma.pos)
            for arg in pragma.args:
                if generated_parameter(arg.name):
                    raise self.error(f"tunable '{arg.name}' has the name of a built-in tuning parameter", arg.pos,
                                     "the compiler's own parameters are named " + ", ".join(GENERATED_PARAMETERS))
                if any(f.name == arg.name for f in self.unit.functions):
                    raise self.error(f"tunable '{arg.name}' has the name of a function", arg.pos)
                if arg.name in self.tunables:
                    raise self.error(f"tunable '{arg.name}' is declared twice", arg.pos)
                check_identifier(self, arg.name, arg.pos)
                if arg.name in GRID_INDICES:
                    raise self.error(f"'{arg.name}' is a grid index and cannot be a tunable", arg.pos)
                values = []
                for v in arg.values:
                    try:
                        values.append(c_integer(v))
                    except ValueError:
                        raise self.error(
                            f"tunable '{arg.name}' values must be integers, not '{v}'", arg.pos
                        ) from None
                    if not INT_MIN <= values[-1] <= INT_MAX:
                        raise self.error(f"tunable '{arg.name}' value {v} does not fit in an int", arg.pos,
                                         f"a tunable is an int: {INT_MIN} to {INT_MAX}")
                if len(set(values)) != len(values):
                    raise self.error(f"tunable '{arg.name}' lists a value twice", arg.pos)
                self.tunables[arg.name] = values
                self.global_scope.symbols[arg.name] = ir.Symbol(
                    arg.name, ty.INT, "tunable", arg.pos, is_const=True, value=values[0]
                )

    def _image_arg(self, arg: ir.PragmaArg, pragma: str, kinds=("image",)) -> ArrayInfo:
        info = self.arrays.get(arg.name)
        if info is None and arg.name in self.kernel_param_names:
            raise self.error(f"pragma '{pragma}': '{arg.name}' is not an image", arg.pos)
        if info is None:
            params = [n for n in self.arrays]
            raise self.error(
                f"pragma '{pragma}' names unknown {'image' if kinds == ('image',) else 'array'} "
                f"'{arg.name}'" + suggestion_suffix(arg.name, params),
                arg.pos,
            )
        if info.kind not in kinds:
            what = "an image or a fixed-size array" if "array" in kinds else "an image"
            hint = "a pointer's length is only known at run time" if info.kind == "pointer" else None
            raise self.error(f"pragma '{pragma}': '{arg.name}' is not {what}", arg.pos, hint)
        return info

    def _grid(self, pragmas: dict[str, list[ir.Pragma]], kernel: ir.Function):
        grid: list[str] = []
        grid_size: Optional[tuple[int, ...]] = None
        for pragma in pragmas.get("grid", []):
            if not pragma.args:
                raise self.error("pragma 'grid' needs at least one image", pragma.pos)
            for arg in pragma.args:
                if arg.values:
                    raise self.error(f"unexpected ':' in pragma 'grid' after '{arg.name}'", arg.pos)
                self._image_arg(arg, "grid")
                if arg.name in grid:
                    raise self.error(f"image '{arg.name}' is named twice in pragma 'grid'", arg.pos)
                grid.append(arg.name)
                self.arrays[arg.name].in_grid = True
        for pragma in pragmas.get("grid_size", []):
            if not 2 <= len(pragma.args) <= 3:
                raise self.error("pragma 'grid_size' takes 2 or 3 sizes", pragma.pos)
            sizes = []
            for arg in pragma.args:
                try:
                    value = int(arg.name, 0)
                except ValueError:
                    value = self.tunables.get(arg.name, [None])[0] if arg.name in self.tunables else None
                    if value is None:
                        raise self.error(f"grid size '{arg.name}' is not an integer", arg.pos) from None
                if value <= 0:
                    raise self.error(f"grid size must be positive, not {value}", arg.pos)
                sizes.append(value)
            grid_size = tuple(sizes)
        if not grid and grid_size is None:
            raise self.error(
                f"kernel '{kernel.name}' has no iteration space",
                kernel.pos,
                "add '#pragma imcl grid(image, ...)' (one grid point per pixel) or "
                "'#pragma imcl grid_size(width, height)'",
            )
        if grid:
            grid_size = None  # `grid` wins when both are given
            self.grid_dims = 0  # set from the images' use
        else:
            self.grid_dims = len(grid_size)
        return grid, grid_size

    def _boundaries(self, pragmas: list[ir.Pragma]) -> None:
        seen = set()
        for pragma in pragmas:
            for arg in pragma.args:
                info = self._image_arg(arg, "boundary_cond")
                if len(arg.values) not in (1, 2):
                    raise self.error(
                        f"pragma 'boundary_cond' needs 'image:mode' for '{arg.name}'", arg.pos,
                        "modes: " + ", ".join(BOUNDARY_MODES),
                    )
                mode = arg.values[0]
                if mode not in BOUNDARY_MODES:
                    raise self.error(
                        f"unknown boundary condition '{mode}'" + suggestion_suffix(mode, BOUNDARY_MODES),
                        arg.pos, "modes: " + ", ".join(BOUNDARY_MODES),
                    )
                if arg.name in seen:
                    raise self.error(f"boundary condition of '{arg.name}' is given twice", arg.pos)
                seen.add(arg.name)
                info.boundary = mode
                if len(arg.values) == 2:
                    info.fill = self._fill_value(info, mode, arg.values[1], arg.pos)

    def _fill_value(self, info: ArrayInfo, mode: str, text: str, pos: ir.Pos) -> int | float:
        """The value `constant(...)` reads outside `info`, checked against its element type."""
        import math

        import numpy as np

        if mode != "constant":
            raise self.error(f"boundary condition '{mode}' takes no value (only 'constant(value)' does)", pos)
        base = ty.element_scalar(info.element)
        is_real = any(c in text for c in ".eE") and not text.lower().startswith(("0x", "-0x"))
        value: int | float = float(text.rstrip("fF")) if is_real else int(text, 0)
        if base.is_integer or base == ty.BOOL:
            if isinstance(value, float):
                if not value.is_integer():
                    raise self.error(f"the fill value {text} of '{info.name}' must be an integer: its pixels are "
                                     f"{info.element.c_name()}", pos)
                value = int(value)
            low, high = (0, 1) if base == ty.BOOL else (int(np.iinfo(base.dtype).min), int(np.iinfo(base.dtype).max))
            if not low <= value <= high:
                raise self.error(f"the fill value {text} of '{info.name}' is outside {info.element.c_name()}'s "
                                 f"range [{low}, {high}]", pos)
            return value
        value = float(value)
        if not math.isfinite(value) or (base == ty.FLOAT and abs(value) > float(np.finfo(np.float32).max)):
            raise self.error(f"the fill value {text} of '{info.name}' does not fit in {base.c_name()}", pos)
        return value

    def _placements(self, pragmas: dict[str, list[ir.Pragma]]) -> dict[str, set[str]]:
        placement: dict[str, set[str]] = {}
        for kind in ("image_mem", "local_mem", "constant_mem", "constant_mem_cand"):
            names: set[str] = set()
            for pragma in pragmas.get(kind, []):
                for arg in pragma.args:
                    # image and local memory hold images and fixed-size arrays (a pointer's length
                    # is only known at run time); constant memory holds anything read-only
                    kinds = ("image", "array") if kind in ("image_mem", "local_mem") else ("image", "array", "pointer")
                    self._image_arg(arg, kind, kinds)
                    names.add(arg.name)
            placement[kind] = names
        return placement

    def _check_placements(self, info: ProgramInfo, pragmas: dict[str, list[ir.Pragma]]) -> None:
        for kind in ("image_mem", "local_mem", "constant_mem"):
            for name in info.placement[kind]:
                array = info.arrays[name]
                pos = self._pragma_pos(pragmas[kind], name)
                if kind == "image_mem" and array.access == "read-write":
                    raise self.error(
                        f"'{name}' is both read and written and cannot be placed in image memory", pos
                    )
                if kind == "image_mem" and array.kind == "array":
                    check_array_image(self, array, pos)
                if kind == "image_mem" and array.is_written:
                    raise self.error(f"'{name}' is written by the kernel and cannot be placed in image memory",
                                     pos, "image memory is for read-only images and arrays")
                if kind == "constant_mem" and array.kind == "image":
                    raise self.error(f"image '{name}' cannot be placed in constant memory", pos,
                                     "constant memory holds small read-only arrays; read images "
                                     "through image_mem or local_mem")
                if kind in ("local_mem", "constant_mem") and array.is_written:
                    raise self.error(
                        f"'{name}' is written by the kernel and cannot be placed in "
                        f"{kind.replace('_mem', '')} memory", pos, f"{kind} is for read-only arrays",
                    )
        both = info.placement["constant_mem"] & (info.placement["image_mem"] | info.placement["local_mem"])
        for name in both:
            raise self.error(
                f"'{name}' cannot be placed in constant memory and in image/local memory at once",
                self._pragma_pos(pragmas["constant_mem"], name),
            )


def check_array_image(analyser: "AnalyserBase", array: ArrayInfo, pos: ir.Pos) -> None:
    """A fixed-size array forced into image memory must be read-only and fit one image pixel."""
    lanes = array.element.width if isinstance(array.element, ty.VectorType) else 1
    if array.is_written:
        raise analyser.error(f"'{array.name}' is written by the kernel and cannot be placed in image memory", pos)
    if (len(array.shape or ()) not in (1, 2) or lanes not in (1, 4)
            or ty.element_scalar(array.element) in (ty.DOUBLE, ty.BOOL)):
        raise analyser.error(f"'{array.name}' ({array.param.type.c_name()}) cannot be placed in image memory", pos,
                             "image memory holds 1-D and 2-D arrays of scalars or 4-element vectors "
                             "(not bool or double)")


def c_integer(text: str) -> int:
    """A pragma's integer as C reads it: `010` is octal; ValueError if it is none, or has more
    digits than any int (so that a 5,000-digit value is not converted at all)."""
    digits = text.lstrip("-")
    if len(digits.lstrip("0xX")) > 11:
        return (1 << 40) * (-1 if text.startswith("-") else 1)  # out of range: reported by the caller
    if len(digits) > 1 and digits[0] == "0" and digits[1] not in "xX":
        return int(text, 8)
    return int(text, 0)
