"""Semantic analysis: scopes, types and C conversions, image dimensionality, pragma validity,
read/write classification and data-race detection.

The result is a `ProgramInfo`: the typed IR plus what every later pass needs to know about
the kernel's arrays, scalars, grid and tunables.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..errors import CompileError, suggestion_suffix
from ..ir import builtins as bi
from ..ir import names
from ..ir import nodes as ir
from ..ir import types as ty
from ..ir.consteval import const_int
from ..ir.walk import walk
from ..parameters import GENERATED_PARAMETERS, generated_parameter

# mirror: d c b | a b c d (SciPy 'mirror'); reflect: c b a | a b c d (SciPy 'reflect')
BOUNDARY_MODES = ("constant", "clamped", "mirror", "wrap", "reflect")
GRID_INDICES = ("idx", "idy", "idz")
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


@dataclass(eq=False)
class ArrayInfo:
    """A kernel parameter that holds many values: an image, a fixed-size array or a pointer."""

    name: str
    param: ir.Param
    kind: str  # 'image', 'array' or 'pointer'
    element: ty.Type
    dims: int
    shape: Optional[tuple[int, ...]] = None  # fixed-size arrays only
    boundary: str = "constant"
    fill: int | float = 0  # what `constant` reads outside the image: boundary_cond(a:constant(2.5))
    in_grid: bool = False
    reads: list[ir.Subscript] = field(default_factory=list)
    writes: list[ir.Subscript] = field(default_factory=list)

    @property
    def is_read(self) -> bool:
        return bool(self.reads)

    @property
    def is_written(self) -> bool:
        return bool(self.writes)

    @property
    def access(self) -> str:
        if self.is_read and self.is_written:
            return "read-write"
        if self.is_written:
            return "write-only"
        return "read-only"


@dataclass(eq=False)
class ProgramInfo:
    unit: ir.TranslationUnit
    kernel: ir.Function
    helpers: list[ir.Function]
    arrays: dict[str, ArrayInfo]
    scalars: list[ir.Param]
    grid: list[str]  # images whose shape defines the grid (empty with grid_size)
    grid_size: Optional[tuple[int, ...]]
    grid_dims: int
    tunables: dict[str, list[int]]
    placement: dict[str, set[str]]  # pragma name ('image_mem', ...) -> forced array names
    unchecked_races: list[str] = field(default_factory=list)  # what could not be proven race-free
    tunable_symbols: dict[str, ir.Symbol] = field(default_factory=dict)
    c_names: dict[str, str] = field(default_factory=dict)  # user names renamed in the generated code

    def c_name(self, name: str) -> str:
        """The identifier of the user name `name` in the generated OpenCL C."""
        return self.c_names.get(name, name)

    @property
    def filename(self) -> str:
        return self.unit.filename

    @property
    def params(self) -> list[ir.Param]:
        return self.kernel.params

    @property
    def outputs(self) -> list[str]:
        return [a.name for a in self.arrays.values() if a.is_written]


class _Scope:
    def __init__(self, parent: Optional["_Scope"] = None) -> None:
        self.parent = parent
        self.symbols: dict[str, ir.Symbol] = {}

    def lookup(self, name: str) -> Optional[ir.Symbol]:
        scope: Optional[_Scope] = self
        while scope is not None:
            if name in scope.symbols:
                return scope.symbols[name]
            scope = scope.parent
        return None

    def visible_names(self) -> list[str]:
        names: list[str] = []
        scope: Optional[_Scope] = self
        while scope is not None:
            names.extend(scope.symbols)
            scope = scope.parent
        return names


def analyse(unit: ir.TranslationUnit) -> ProgramInfo:
    """Check a parsed program and return its typed IR with the facts later passes use."""
    return _Analyser(unit).run()


class _Analyser:
    def __init__(self, unit: ir.TranslationUnit) -> None:
        self.unit = unit
        self.arrays: dict[str, ArrayInfo] = {}
        self.functions: dict[str, ir.Function] = {}
        self.current: Optional[ir.Function] = None
        self.is_kernel = False
        self.loop_depth = 0
        self.grid_dims = 2
        self.tunables: dict[str, list[int]] = {}
        self.global_scope = _Scope()
        self.uses_idz = False
        self.idz_pos: Optional[ir.Pos] = None  # the first use of `idz`
        self.depth_uses: dict[str, ir.Pos] = {}  # image -> first `.depth` use
        self.statement_expr: Optional[ir.Expr] = None  # the expression of the current expression statement

    # ---- errors ---------------------------------------------------------------
    def error(self, message: str, pos: ir.Pos, hint: Optional[str] = None) -> CompileError:
        return CompileError(message, pos.line, pos.column, self.unit.filename, self.unit.source, hint)

    # ---- driver -----------------------------------------------------------------
    def run(self) -> ProgramInfo:
        unit = self.unit
        kernel = self._select_kernel()
        pragmas = self._pragmas_by_name()
        self._declare_tunables(pragmas.get("tunable", []))
        self.kernel_param_names = {p.name for p in kernel.params}
        self._collect_arrays(kernel)
        grid, grid_size = self._grid(pragmas, kernel)
        self._boundaries(pragmas.get("boundary_cond", []))
        placement = self._placements(pragmas)

        for function in unit.functions:
            if function is kernel:
                break
            self._check_function(function, is_kernel=False)
            self.functions[function.name] = function
        self._check_function(kernel, is_kernel=True)
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
        info = ProgramInfo(
            unit=unit,
            kernel=kernel,
            helpers=[f for f in unit.functions if f is not kernel and f.name in self.functions],
            arrays=self.arrays,
            scalars=[p for p in kernel.params if p.name not in self.arrays],
            grid=grid,
            grid_size=grid_size,
            grid_dims=self.grid_dims,
            tunables=self.tunables,
            placement=placement,
            tunable_symbols={n: self.global_scope.symbols[n] for n in self.tunables},
            c_names=names.c_names(_declared_names(unit), self.tunables),
        )
        self._check_placements(info, pragmas)
        _RaceChecker(self, info).run()
        return info

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
            _check_identifier(self, f.name, f.pos)
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
                _check_identifier(self, arg.name, arg.pos)
                if arg.name in GRID_INDICES:
                    raise self.error(f"'{arg.name}' is a grid index and cannot be a tunable", arg.pos)
                values = []
                for v in arg.values:
                    try:
                        values.append(_c_integer(v))
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
                    _check_array_image(self, array, pos)
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

    # ---- functions --------------------------------------------------------------------
    def _check_function(self, function: ir.Function, is_kernel: bool) -> None:
        self.current = function
        self.is_kernel = is_kernel
        scope = _Scope(self.global_scope)
        if is_kernel:
            for i, name in enumerate(GRID_INDICES):
                scope.symbols[name] = ir.Symbol(name, ty.INT, "grid_index", is_const=True)
        seen = set()
        for p in function.params:
            if p.name in seen:
                raise self.error(f"redefinition of parameter '{p.name}'", p.pos)
            seen.add(p.name)
            if p.name in self.global_scope.symbols:
                raise self.error(f"parameter '{p.name}' has the name of a tunable", p.pos)
            if p.name in GRID_INDICES and is_kernel:
                raise self.error(f"parameter '{p.name}' hides the grid index '{p.name}'", p.pos)
            if not is_kernel and isinstance(p.type, (ty.ImageType, ty.PointerType)):
                raise self.error(
                    f"helper function '{function.name}' cannot take image or pointer parameter '{p.name}'",
                    p.pos, "read the pixels in the kernel and pass their values",
                )
            if p.type == ty.VOID:
                raise self.error(f"parameter '{p.name}' has type void", p.pos)
            _check_identifier(self, p.name, p.pos)
            kind = {
                ty.ImageType: "image", ty.ArrayType: "array", ty.PointerType: "pointer",
            }.get(type(p.type), "scalar")
            if kind == "array" and not is_kernel:
                kind = "private_array"  # a helper's array parameter refers to the caller's private array
            const = p.is_const or (kind == "array" and is_kernel)
            p.symbol = ir.Symbol(p.name, p.type, kind, p.pos, is_const=const)
            scope.symbols[p.name] = p.symbol
        self.loop_depth = 0
        # C: the parameters and the body's outermost declarations share one scope
        self._block(function.body, scope, new_scope=False)
        if function.return_type != ty.VOID and not _always_returns(function.body):
            raise self.error(
                f"control reaches the end of non-void function '{function.name}' without a return",
                ir.Pos(function.body.pos.end_line or function.pos.line, max(function.body.pos.end_column - 1, 1)),
            )

    # ---- statements -----------------------------------------------------------------------
    def _block(self, block: ir.Block, scope: _Scope, new_scope: bool = True) -> None:
        inner = _Scope(scope) if new_scope else scope
        for stmt in block.body:
            self._stmt(stmt, inner)

    def _stmt(self, stmt: ir.Stmt, scope: _Scope) -> None:
        if isinstance(stmt, ir.Block):
            self._block(stmt, scope)
        elif isinstance(stmt, ir.VarDecl):
            self._decl(stmt, scope)
        elif isinstance(stmt, ir.DeclGroup):
            for d in stmt.decls:
                self._decl(d, scope)
        elif isinstance(stmt, ir.ExprStmt):
            self.statement_expr = stmt.expr
            self._expr(stmt.expr, scope)
        elif isinstance(stmt, ir.If):
            self._condition(stmt.cond, scope)
            self._stmt_scoped(stmt.then, scope)
            if stmt.other is not None:
                self._stmt_scoped(stmt.other, scope)
        elif isinstance(stmt, (ir.While, ir.DoWhile)):
            self._condition(stmt.cond, scope)
            self.loop_depth += 1
            self._stmt_scoped(stmt.body, scope)
            self.loop_depth -= 1
        elif isinstance(stmt, ir.For):
            inner = _Scope(scope)
            if isinstance(stmt.init, ir.ExprStmt):
                self._expr(stmt.init.expr, inner)  # not a statement of its own (see _array_update)
            elif stmt.init is not None:
                self._stmt(stmt.init, inner)
            if stmt.cond is not None:
                self._condition(stmt.cond, inner)
            if stmt.step is not None:
                self._expr(stmt.step, inner)
            self.loop_depth += 1
            self._stmt_scoped(stmt.body, inner)
            self.loop_depth -= 1
        elif isinstance(stmt, ir.Break):
            if not self.loop_depth:
                raise self.error("'break' statement not in a loop", stmt.pos)
        elif isinstance(stmt, ir.Continue):
            if not self.loop_depth:
                raise self.error("'continue' statement not in a loop", stmt.pos)
        elif isinstance(stmt, ir.Return):
            self._return(stmt, scope)
        elif isinstance(stmt, ir.Empty):
            pass
        else:  # pragma: no cover - the parser makes no other statements
            raise self.error(f"unsupported statement {type(stmt).__name__}", stmt.pos)

    def _stmt_scoped(self, stmt: ir.Stmt, scope: _Scope) -> None:
        if isinstance(stmt, (ir.VarDecl, ir.DeclGroup)):
            raise self.error("a declaration is not allowed here; put it in braces { }", stmt.pos)
        self._stmt(stmt, _Scope(scope))

    def _return(self, stmt: ir.Return, scope: _Scope) -> None:
        rtype = self.current.return_type
        if stmt.value is None:
            if rtype != ty.VOID:
                raise self.error(f"non-void function '{self.current.name}' must return a value", stmt.pos)
            return
        if rtype == ty.VOID:
            what = "the kernel" if self.is_kernel else f"void function '{self.current.name}'"
            raise self.error(
                f"{what} cannot return a value", stmt.value.pos,
                "'return;' ends the current grid point; outputs are written to images" if self.is_kernel else None,
            )
        vtype = self._expr(stmt.value, scope)
        if not ty.is_assignable(rtype, vtype):
            raise self.error(f"cannot return '{vtype}' from a function returning '{rtype}'", stmt.value.pos)

    def _decl(self, decl: ir.VarDecl, scope: _Scope) -> None:
        if decl.name in scope.symbols:
            raise self.error(f"redefinition of '{decl.name}'", decl.pos)
        if decl.name in self.tunables:
            raise self.error(f"'{decl.name}' is a tunable and cannot be redeclared", decl.pos)
        _check_identifier(self, decl.name, decl.pos)
        if decl.name in GRID_INDICES and self.is_kernel:
            raise self.error(f"'{decl.name}' is the grid index and cannot be redeclared", decl.pos)
        vtype = decl.var_type
        if vtype == ty.VOID or (isinstance(vtype, ty.ArrayType) and vtype.element == ty.VOID):
            raise self.error(f"variable '{decl.name}' declared void", decl.pos)
        if isinstance(vtype, ty.ArrayType):
            if decl.init is not None:
                if not isinstance(decl.init, list):
                    raise self.error(f"array '{decl.name}' must be initialised with a list in braces", decl.pos)
                self._array_init(decl, vtype, decl.init, scope)
            decl.symbol = ir.Symbol(decl.name, vtype, "private_array", decl.pos, is_const=decl.is_const)
            scope.symbols[decl.name] = decl.symbol
            return
        value = None
        if decl.init is not None and not isinstance(decl.init, list):
            for node in walk(decl.init):
                # C: the name is declared from its declarator on, so this reads the new, uninitialised variable
                if isinstance(node, ir.Name) and node.name == decl.name:
                    raise self.error(f"variable '{decl.name}' is used in its own initializer", node.pos,
                                     "in C the new variable hides any outer one from its declarator on; "
                                     "rename one of them")
        if decl.init is not None:
            if isinstance(decl.init, list):
                raise self.error(f"'{decl.name}' is not an array; it cannot be initialised with braces", decl.pos)
            itype = self._expr(decl.init, scope)
            if not ty.is_assignable(vtype, itype):
                raise self.error(f"cannot initialise '{vtype}' variable '{decl.name}' with a value of type '{itype}'",
                                 decl.init.pos, _vector_hint(vtype, itype))
            value = const_int(decl.init) if decl.is_const and isinstance(vtype, ty.ScalarType) and vtype.is_integer else None
        elif decl.is_const:
            raise self.error(f"const variable '{decl.name}' must be initialised", decl.pos)
        decl.symbol = ir.Symbol(decl.name, vtype, "local", decl.pos, is_const=decl.is_const, value=value,
                                tunable_dependent=value is not None and _reads_tunables(decl.init))
        scope.symbols[decl.name] = decl.symbol

    def _array_init(self, decl: ir.VarDecl, vtype: ty.ArrayType, init: list, scope: _Scope, depth: int = 0) -> None:
        if len(init) > vtype.shape[depth]:
            raise self.error(f"too many initialisers for array '{decl.name}'", decl.pos)
        for item in init:
            if depth + 1 < len(vtype.shape):
                if not isinstance(item, list):
                    raise self.error(f"expected a braced list for the rows of '{decl.name}'", decl.pos)
                self._array_init(decl, vtype, item, scope, depth + 1)
            else:
                if isinstance(item, list):
                    raise self.error(f"too many braces in the initialiser of '{decl.name}'", decl.pos)
                itype = self._expr(item, scope)
                if not ty.is_assignable(vtype.element, itype):
                    raise self.error(f"cannot initialise an element of '{decl.name}' with '{itype}'", item.pos)

    def _condition(self, cond: ir.Expr, scope: _Scope) -> None:
        t = self._expr(cond, scope)
        if not isinstance(t, ty.ScalarType):
            raise self.error(f"condition must be a scalar, not '{t}'", cond.pos,
                             "compare components, e.g. v.x > 0, or use any()/all() style logic")

    # ---- expressions ---------------------------------------------------------------------
    def _expr(self, e: ir.Expr, scope: _Scope) -> ty.Type:
        t = self._type_of(e, scope)
        e.type = t
        return t

    def _type_of(self, e: ir.Expr, scope: _Scope) -> ty.Type:
        if isinstance(e, ir.IntLit):
            return ty.UINT if e.unsigned else ty.INT
        if isinstance(e, ir.FloatLit):
            return ty.FLOAT
        if isinstance(e, ir.BoolLit):
            return ty.BOOL
        if isinstance(e, ir.Name):
            sym = self._lookup(e, scope)
            if sym.kind in ("image", "array", "pointer", "private_array"):
                what = "image" if sym.kind == "image" else "array"
                hint = f"write {e.name}[idx][idy]" if sym.kind == "image" else None
                raise self.error(f"{what} '{e.name}' must be subscripted to be used as a value", e.pos, hint)
            return sym.type
        if isinstance(e, ir.Unary):
            t = self._expr(e.operand, scope)
            self._require_arithmetic(t, e.operand, e.op)
            if e.op == "!":
                if not isinstance(t, ty.ScalarType):
                    raise self.error(f"invalid operand to '!' (have '{t}')", e.pos)
                return ty.INT
            if e.op == "~" and ty.element_scalar(t).is_float:
                raise self.error(f"invalid operand to '~' (have '{t}')", e.pos, "'~' needs an integer")
            return ty.promote(t) if isinstance(t, ty.ScalarType) else t
        if isinstance(e, ir.IncDec):
            t = self._expr(e.target, scope)
            self._array_update(e)
            self._require_lvalue(e.target, scope, e.op)
            self._require_arithmetic(t, e.target, e.op)
            return t
        if isinstance(e, ir.Binary):
            return self._binary(e.op, e.left, e.right, e.pos, scope)
        if isinstance(e, ir.Assign):
            target_t = self._expr(e.target, scope)
            self._array_update(e)
            self._require_lvalue(e.target, scope, e.op)
            if e.op == "=":
                value_t = self._expr(e.value, scope)
            else:
                value_t = self._binary(e.op[:-1], e.target, e.value, e.pos, scope, compound=True)
            if not ty.is_assignable(target_t, value_t):
                raise self.error(f"cannot assign a value of type '{value_t}' to '{target_t}'", e.pos,
                                 _vector_hint(target_t, value_t))
            return target_t
        if isinstance(e, ir.Ternary):
            self._condition(e.cond, scope)
            a = self._expr(e.then, scope)
            b = self._expr(e.other, scope)
            self._require_arithmetic(a, e.then, "?:")
            self._require_arithmetic(b, e.other, "?:")
            result = ty.arithmetic_result(a, b)
            if result is None:
                raise self.error(f"incompatible operand types in '?:' ('{a}' and '{b}')", e.pos)
            return result
        if isinstance(e, ir.Cast):
            t = self._expr(e.operand, scope)
            self._require_arithmetic(t, e.operand, "cast")
            target = e.target_type
            if target == ty.VOID:
                raise self.error("cannot cast to void", e.pos)
            if isinstance(target, ty.VectorType) and isinstance(t, ty.VectorType):
                raise self.error(f"cannot cast '{t}' to '{target}'", e.pos,
                                 f"OpenCL converts vectors with convert_{target}(...)")
            if isinstance(target, ty.ScalarType) and isinstance(t, ty.VectorType):
                raise self.error(f"cannot cast vector '{t}' to scalar '{target}'", e.pos,
                                 "take a component, e.g. v.x")
            return target
        if isinstance(e, ir.VectorLit):
            total = 0
            for el in e.elements:
                t = self._expr(el, scope)
                self._require_arithmetic(t, el, "vector literal")
                total += t.width if isinstance(t, ty.VectorType) else 1
            width = e.vector_type.width
            if total != width and total != 1:
                raise self.error(f"vector literal of type '{e.vector_type}' needs {width} components, "
                                 f"got {total}", e.pos)
            return e.vector_type
        if isinstance(e, ir.Call):
            return self._call(e, scope)
        if isinstance(e, ir.Subscript):
            return self._subscript(e, scope)
        if isinstance(e, ir.Member):
            return self._member(e, scope)
        if isinstance(e, ir.Comma):
            t: ty.Type = ty.VOID
            for sub in e.exprs:
                t = self._expr(sub, scope)
            return t
        raise self.error(f"unsupported expression {type(e).__name__}", e.pos)  # pragma: no cover

    def _lookup(self, e: ir.Name, scope: _Scope) -> ir.Symbol:
        sym = scope.lookup(e.name)
        if sym is None:
            if e.name in GRID_INDICES:
                if not self.is_kernel:
                    raise self.error(f"'{e.name}' is only defined in the kernel function", e.pos,
                                     "pass it to the helper function as an argument")
            hint_names = scope.visible_names()
            raise self.error(f"use of undeclared identifier '{e.name}'" + suggestion_suffix(e.name, hint_names), e.pos)
        if sym.kind == "grid_index" and e.name == "idz":
            self.uses_idz = True
            self.idz_pos = self.idz_pos or e.pos
        if sym.kind == "grid_index" and GRID_INDICES.index(e.name) >= self._grid_dims_known():
            raise self.error(f"'{e.name}' is only defined for 3-D grids; this grid is "
                             f"{self._grid_dims_known()}-D", e.pos)
        e.symbol = sym
        return sym

    def _grid_dims_known(self) -> int:
        if self.grid_dims:
            return self.grid_dims
        # a `grid` pragma: the dimensionality follows from the grid images' use; before the
        # first subscript of one of them, allow idz only if some grid image is 3-D already
        dims = [a.dims for a in self.arrays.values() if a.in_grid and a.dims]
        return dims[0] if dims else 3

    def _require_arithmetic(self, t: ty.Type, e: ir.Expr, op: str) -> None:
        if not ty.is_arithmetic(t):
            raise self.error(f"invalid operand of type '{t}' to '{op}'", e.pos)

    def _array_update(self, e: ir.Expr) -> None:
        """An image or pointer element is written through its boundary and grid guards, which
        the generated code can only wrap around a whole statement."""
        target = e.target
        if (isinstance(target, ir.Subscript) and target.base.symbol is not None
                and target.base.symbol.kind in ("image", "pointer") and e is not self.statement_expr):
            raise self.error("an image or pointer element can only be updated in a statement of its own",
                             target.pos, "make the update a statement of its own, then use the value")

    def _require_lvalue(self, target: ir.Expr, scope: _Scope, op: str) -> None:
        if isinstance(target, ir.Name):
            sym = target.symbol
            if sym.kind == "grid_index":
                raise self.error(f"cannot assign to the grid index '{target.name}'", target.pos)
            if sym.kind == "tunable":
                raise self.error(f"cannot assign to tunable '{target.name}'; it is a compile-time constant", target.pos)
            if sym.is_const:
                raise self.error(f"cannot assign to const variable '{target.name}'", target.pos)
            if sym.kind == "scalar" and self.is_kernel:
                # every grid point (and every point of a work-item) sees the argument as passed
                raise self.error(f"cannot assign to kernel parameter '{target.name}'", target.pos,
                                 "copy it into a local variable first")
            return
        if isinstance(target, ir.Subscript):
            sym = target.base.symbol
            if sym.kind == "array" and self.is_kernel:
                raise self.error(f"cannot assign to '{sym.name}': array parameters are read-only", target.pos,
                                 "use an Image or a pointer parameter for outputs")
            if sym.is_const:
                raise self.error(f"cannot assign to const '{sym.name}'", target.pos)
            info = self.arrays.get(sym.name) if sym.kind in ("image", "pointer") else None
            if info is not None:
                # move the access from reads to writes: `a[i] = v` does not read a[i]; `a[i] += v` does
                if target in info.reads and op == "=":
                    info.reads.remove(target)
                info.writes.append(target)
            return
        if isinstance(target, ir.Member) and isinstance(target.base.type, ty.VectorType):
            self._require_lvalue(target.base, scope, op)
            if len(set(target.member)) != len(target.member):
                raise self.error(f"cannot assign to swizzle '.{target.member}' with a repeated component", target.pos)
            return
        raise self.error(f"expression is not assignable (left of '{op}')", target.pos)

    def _binary(self, op: str, left: ir.Expr, right: ir.Expr, pos: ir.Pos, scope: _Scope,
                compound: bool = False) -> ty.Type:
        a = left.type if compound else self._expr(left, scope)
        b = self._expr(right, scope)
        for t, side in ((a, left), (b, right)):
            if not ty.is_arithmetic(t):
                raise self.error(f"invalid operand of type '{t}' to binary '{op}'", side.pos)
        if op in ("&&", "||"):
            if isinstance(a, ty.VectorType) or isinstance(b, ty.VectorType):
                raise self.error(f"invalid vector operands to '{op}'", pos)
            return ty.INT
        result = ty.arithmetic_result(a, b)
        if result is None:
            raise self.error(f"invalid operands to binary '{op}' (have '{a}' and '{b}')", pos,
                             "vector operands must have the same type")
        if op in ("%", "&", "|", "^", "<<", ">>") and ty.element_scalar(result).is_float:
            hint = "use fmod(x, y) for floating-point remainder" if op == "%" else f"'{op}' needs integer operands"
            raise self.error(f"invalid operands to binary '{op}' (have '{a}' and '{b}')", pos, hint)
        if op in ("<<", ">>"):
            return ty.promote(a) if isinstance(a, ty.ScalarType) else a
        if op in ("<", ">", "<=", ">=", "==", "!="):
            if isinstance(result, ty.VectorType):
                return ty.VectorType(ty.INT, result.width)
            return ty.INT
        return result

    def _call(self, e: ir.Call, scope: _Scope) -> ty.Type:
        shadowing = scope.lookup(e.name)
        if shadowing is not None or (e.name in GRID_INDICES and self.is_kernel):
            # C: a variable hides a function of the same name in its scope
            what = {"grid_index": "the grid index", "tunable": "a tunable"}.get(
                shadowing.kind if shadowing else "grid_index", "a variable")
            raise self.error(f"called object '{e.name}' is not a function", e.pos,
                             f"'{e.name}' is {what} here, which hides any function of that name")
        arg_types = [self._expr(a, scope) for a in e.args] if e.name not in self.functions else None
        if e.name in self.functions or (self.current is not None and e.name == self.current.name):
            if self.current is not None and e.name == self.current.name:
                raise self.error(f"function '{e.name}' calls itself; recursion is not supported in OpenCL", e.pos)
            return self._helper_call(e, self.functions[e.name], scope)
        later = [f.name for f in self.unit.functions]
        if e.name in later:
            raise self.error(f"function '{e.name}' is called before it is defined", e.pos,
                             "define helper functions above the functions that call them")
        conv = bi.convert_target(e.name)
        if conv is not None:
            self._arity(e, (1,))
            target, _ = conv
            src = arg_types[0]
            self._require_arithmetic(src, e.args[0], e.name)
            if isinstance(target, ty.VectorType) != isinstance(src, ty.VectorType) or (
                isinstance(src, ty.VectorType) and src.width != target.width
            ):
                raise self.error(f"'{e.name}' converts between types of the same width, not from '{src}'", e.pos)
            return target
        builtin = bi.BUILTINS.get(e.name)
        if builtin is None:
            candidates = list(bi.BUILTINS) + list(self.functions)
            raise self.error(f"call to undeclared function '{e.name}'" + suggestion_suffix(e.name, candidates), e.pos)
        self._arity(e, builtin.arity)
        for t, a in zip(arg_types, e.args):
            self._require_arithmetic(t, a, e.name)
        return self._builtin_type(e, builtin, arg_types)

    def _arity(self, e: ir.Call, arity: tuple[int, ...]) -> None:
        if len(e.args) not in arity:
            n = " or ".join(str(a) for a in arity)
            raise self.error(f"function '{e.name}' takes {n} argument{'s' if arity != (1,) else ''}, "
                             f"{len(e.args)} given", e.pos)

    def _builtin_type(self, e: ir.Call, builtin: bi.Builtin, types: list[ty.Type]) -> ty.Type:
        vectors = [t for t in types if isinstance(t, ty.VectorType)]
        if len({v for v in vectors}) > 1:
            raise self.error(f"arguments of '{e.name}' have different vector types", e.pos)
        vec = vectors[0] if vectors else None
        kind = builtin.kind
        if kind == "float":
            return ty.VectorType(ty.FLOAT, vec.width) if vec else (ty.DOUBLE if ty.DOUBLE in types else ty.FLOAT)
        if kind in ("generic", "int"):
            common = types[0]
            for t in types[1:]:
                common = ty.arithmetic_result(common, t)
            if kind == "int" and ty.element_scalar(common).is_float:
                raise self.error(f"'{e.name}' needs integer arguments", e.pos)
            return common
        if kind == "abs":
            t = types[0]
            el = ty.element_scalar(t)
            if el.is_float:
                return t
            unsigned = {"char": ty.UCHAR, "short": ty.USHORT, "int": ty.UINT, "bool": ty.UCHAR}.get(el.name, el)
            return ty.VectorType(unsigned, t.width) if isinstance(t, ty.VectorType) else unsigned
        if kind == "rel":
            return ty.VectorType(ty.INT, vec.width) if vec else ty.INT
        if kind in ("geom", "vecf"):
            if vec is None or vec.base != ty.FLOAT:
                if kind == "geom" and not vec and all(isinstance(t, ty.ScalarType) for t in types):
                    return ty.FLOAT
                raise self.error(f"'{e.name}' needs float vector arguments", e.pos)
            if e.name == "cross" and vec.width not in (3, 4):
                raise self.error("'cross' needs float3 or float4 arguments", e.pos)
            return ty.FLOAT if kind == "geom" else vec
        if kind == "select":
            result = ty.arithmetic_result(types[0], types[1])
            if result is None or ty.element_scalar(types[2]).is_float:
                raise self.error("select(a, b, c) needs a, b of one type and an integer c", e.pos)
            return result
        raise self.error(f"unsupported built-in '{e.name}'", e.pos)  # pragma: no cover

    def _helper_call(self, e: ir.Call, f: ir.Function, scope: _Scope) -> ty.Type:
        e.function = f
        if len(e.args) != len(f.params):
            raise self.error(f"function '{f.name}' takes {len(f.params)} argument"
                             f"{'s' if len(f.params) != 1 else ''}, {len(e.args)} given", e.pos)
        for arg, p in zip(e.args, f.params):
            if isinstance(p.type, ty.ArrayType):
                if not isinstance(arg, ir.Name):
                    raise self.error(f"argument '{p.name}' of '{f.name}' must be an array variable", arg.pos)
                sym = self._lookup(arg, scope)
                if sym.kind not in ("private_array", "array") or sym.type != p.type:
                    raise self.error(f"argument '{p.name}' of '{f.name}' must be an array of type "
                                     f"'{p.type}', not '{sym.type}'", arg.pos)
                if sym.kind == "array":
                    raise self.error(f"array parameter '{sym.name}' cannot be passed to a helper function",
                                     arg.pos, "copy it into a private array first")
                arg.type = sym.type
                continue
            t = self._expr(arg, scope)
            if not ty.is_assignable(p.type, t):
                raise self.error(f"argument '{p.name}' of '{f.name}' has type '{p.type}', "
                                 f"cannot pass '{t}'", arg.pos)
        return f.return_type

    def _subscript(self, e: ir.Subscript, scope: _Scope) -> ty.Type:
        sym = self._lookup(e.base, scope)
        for index in e.indices:
            t = self._expr(index, scope)
            if not (isinstance(t, ty.ScalarType) and t.is_integer):
                raise self.error(f"array subscript is not an integer (it is '{t}')", index.pos,
                                 "convert it with (int)")
        n = len(e.indices)
        if sym.kind == "image":
            info = self.arrays[sym.name]
            if n not in (2, 3):
                raise self.error(f"image '{sym.name}' needs 2 or 3 subscripts ([x][y] or [x][y][z]), got {n}",
                                 e.pos)
            if info.dims and info.dims != n:
                raise self.error(f"image '{sym.name}' is used with {n} subscripts here and {info.dims} elsewhere",
                                 e.pos, "every access of one image has the same number of subscripts")
            if not info.dims:
                info.dims = n
                if info.in_grid and not self.grid_dims:
                    self.grid_dims = n
            if info.in_grid and self.grid_dims and n != self.grid_dims:
                raise self.error(f"grid image '{sym.name}' has {n} dimensions but the grid has {self.grid_dims}",
                                 e.pos)
            info.reads.append(e)
            return info.element
        if sym.kind in ("array", "private_array"):
            shape = sym.type.shape
            if n != len(shape):
                raise self.error(f"array '{sym.name}' has {len(shape)} dimension{'s' if len(shape) > 1 else ''}, "
                                 f"got {n} subscripts", e.pos)
            for index, size in zip(e.indices, shape):
                value = const_int(index)
                if value is not None and not 0 <= value < size:
                    raise self.error(f"index {value} is out of bounds for '{sym.name}' (size {size})", index.pos)
            if sym.kind == "array":
                self.arrays[sym.name].reads.append(e)
            return sym.type.element
        if sym.kind == "pointer":
            if n != 1:
                raise self.error(f"pointer '{sym.name}' takes one subscript, got {n}", e.pos)
            if sym.name in self.arrays:
                self.arrays[sym.name].reads.append(e)
            return sym.type.element
        raise self.error(f"'{sym.name}' of type '{sym.type}' cannot be subscripted", e.pos)

    def _member(self, e: ir.Member, scope: _Scope) -> ty.Type:
        if isinstance(e.base, ir.Name):
            sym = scope.lookup(e.base.name)
            if sym is not None and sym.kind == "image":
                e.base.symbol = sym
                e.base.type = sym.type
                info = self.arrays[sym.name]
                if e.member not in ("width", "height", "depth"):
                    raise self.error(f"image '{sym.name}' has no member '{e.member}'"
                                     + suggestion_suffix(e.member, ("width", "height", "depth")), e.pos)
                if e.member == "depth" and info.dims == 2:
                    raise self.error(f"'{sym.name}.depth' is only defined for 3-D images", e.pos)
                if e.member == "depth":
                    self.depth_uses.setdefault(sym.name, e.pos)
                return ty.INT
        t = self._expr(e.base, scope)
        if e.member in ("width", "height", "depth"):
            raise self.error(f"'.{e.member}' is only defined for images, not '{t}'", e.pos)
        if not isinstance(t, ty.VectorType):
            raise self.error(f"member reference '.{e.member}' on a value of type '{t}', which is not a vector",
                             e.pos)
        comps = ty.COMPONENTS[: t.width]
        if not e.member or any(c not in comps for c in e.member) or len(e.member) > 4:
            raise self.error(f"invalid component '.{e.member}' of '{t}'", e.pos,
                             f"'{t}' has components " + ", ".join("." + c for c in comps))
        if len(e.member) == 1:
            return t.base
        if len(e.member) not in ty.VECTOR_WIDTHS:
            raise self.error(f"swizzle '.{e.member}' must have 1 to 4 components", e.pos)
        return ty.VectorType(t.base, len(e.member))


def _check_array_image(analyser: "_Analyser", array: ArrayInfo, pos: ir.Pos) -> None:
    """A fixed-size array forced into image memory must be read-only and fit one image pixel."""
    lanes = array.element.width if isinstance(array.element, ty.VectorType) else 1
    if array.is_written:
        raise analyser.error(f"'{array.name}' is written by the kernel and cannot be placed in image memory", pos)
    if (len(array.shape or ()) not in (1, 2) or lanes not in (1, 4)
            or ty.element_scalar(array.element) in (ty.DOUBLE, ty.BOOL)):
        raise analyser.error(f"'{array.name}' ({array.param.type.c_name()}) cannot be placed in image memory", pos,
                             "image memory holds 1-D and 2-D arrays of scalars or 4-element vectors "
                             "(not bool or double)")


def _reads_tunables(expr: ir.Expr) -> bool:
    """Does a constant expression's value depend on a tunable (directly or through a `const` local)?"""
    return any(isinstance(n, ir.Name) and n.symbol is not None
               and (n.symbol.kind == "tunable" or n.symbol.tunable_dependent) for n in walk(expr))


def _c_integer(text: str) -> int:
    """A pragma's integer as C reads it: `010` is octal; ValueError if it is none, or has more
    digits than any int (so that a 5,000-digit value is not converted at all)."""
    digits = text.lstrip("-")
    if len(digits.lstrip("0xX")) > 11:
        return (1 << 40) * (-1 if text.startswith("-") else 1)  # out of range: reported by the caller
    if len(digits) > 1 and digits[0] == "0" and digits[1] not in "xX":
        return int(text, 8)
    return int(text, 0)


def _check_identifier(analyser: "_Analyser", name: str, pos: ir.Pos) -> None:
    """C keywords and the language's type names cannot be names. Words that only OpenCL C
    predefines can: the generated code renames them (ir/names.py)."""
    why = names.reserved_word(name)
    if why is not None:
        raise analyser.error(f"{why} and cannot be used as a name", pos)


def _declared_names(unit: ir.TranslationUnit) -> set[str]:
    """Every name the program declares: functions, parameters, variables."""
    out = set()
    for f in unit.functions:
        out.add(f.name)
        out.update(p.name for p in f.params)
        out.update(n.name for n in walk(f.body) if isinstance(n, ir.VarDecl))
    return out


def _vector_hint(target: ty.Type, value: ty.Type) -> Optional[str]:
    if isinstance(target, ty.ScalarType) and isinstance(value, ty.VectorType):
        return "take a component, e.g. v.x"
    if isinstance(target, ty.VectorType) and isinstance(value, ty.VectorType):
        return f"convert with convert_{target}(...)"
    return None


def _always_returns(stmt: Optional[ir.Stmt]) -> bool:
    if isinstance(stmt, ir.Return):
        return True
    if isinstance(stmt, ir.Block):
        return any(_always_returns(s) for s in stmt.body)
    if isinstance(stmt, ir.If):
        return stmt.other is not None and _always_returns(stmt.then) and _always_returns(stmt.other)
    return False


# ---- data races ------------------------------------------------------------------------------


def grid_offset(expr: ir.Expr) -> Optional[tuple[Optional[str], int]]:
    """`idx + 2` -> ('idx', 2); `3` -> (None, 3); None if the index is not of that form."""
    value = const_int(expr)
    if value is not None:
        return None, value
    if isinstance(expr, ir.Name) and expr.symbol is not None and expr.symbol.kind == "grid_index":
        return expr.name, 0
    if isinstance(expr, ir.Binary) and expr.op in ("+", "-"):
        left, right = grid_offset(expr.left), grid_offset(expr.right)
        if left is None or right is None:
            return None
        if expr.op == "+" and (left[0] is None or right[0] is None):
            return left[0] or right[0], left[1] + right[1]
        if expr.op == "-" and right[0] is None:
            return left[0], left[1] - right[1]
    return None


class _RaceChecker:
    """Rejects what is provably a data race; records what cannot be proven either way."""

    def __init__(self, analyser: _Analyser, info: ProgramInfo) -> None:
        self.a = analyser
        self.info = info

    def run(self) -> None:
        grid_vars = GRID_INDICES[: self.info.grid_dims]
        fixed_single = self.info.grid_size is not None and all(s == 1 for s in self.info.grid_size)
        for array in self.info.arrays.values():
            write_forms = []
            for w in array.writes:
                forms = [grid_offset(i) for i in w.indices]
                write_forms.append(forms)
                if any(f is None for f in forms):
                    self.info.unchecked_races.append(
                        f"{self.info.filename}:{w.pos.line}: write to '{array.name}' at a computed position"
                    )
                    continue
                used = [f[0] for f in forms if f[0] is not None]
                if fixed_single:
                    continue
                # each grid index exactly once is an injective map (a transpose too): no race
                if array.kind == "image" and (len(set(used)) != len(used) or set(used) != set(grid_vars)):
                    missing = [v for v in grid_vars if v not in used]
                    raise self.a.error(
                        f"data race: every grid point writes '{array.name}' at a position that does not "
                        f"depend on {', '.join(missing) or 'a distinct grid index per dimension'}",
                        w.pos, f"write {array.name}[{']['.join(grid_vars)}] (plus constant offsets)",
                    )
                if array.kind == "pointer" and not used:
                    raise self.a.error(
                        f"data race: every grid point writes '{array.name}' at the same constant index",
                        w.pos,
                    )
            if not array.writes or not array.reads:
                continue
            if array.kind == "pointer":
                self.info.unchecked_races.append(f"pointer '{array.name}' is read and written")
                continue
            for r in array.reads:
                forms = [grid_offset(i) for i in r.indices]
                if any(f is None for f in forms):
                    self.info.unchecked_races.append(
                        f"{self.info.filename}:{r.pos.line}: read of written '{array.name}' at a computed position"
                    )
                    continue
                for wf in write_forms:
                    if any(f is None for f in wf):
                        continue
                    if forms != wf:
                        raise self.a.error(
                            f"data race: '{array.name}' is written by the kernel and read here at another "
                            "position, which other grid points may be writing",
                            r.pos, "read from a separate input image instead",
                        )
