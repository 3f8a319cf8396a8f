"""OpenCL C for one variant of a program: the naive one, or any point of its tuning space.

A `VariantPlan` says what the configuration chose; the passes (passes/unroll.py,
passes/memory.py) rewrite the specialised IR for it and `PlacedAccess` prints each image and
array access where the placement put it; `generate` lays the
program out through the Jinja2 template `kernel.cl.j2` (the kernel's own body through
`kernel_body.cl.j2`, see body.py), and `launch_geometry` gives the global and local sizes that
go with it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, TypeVar

from .. import __version__, templating
from ..ir import nodes as ir
from ..ir import types as ty
from ..ir.walk import walk
from ..passes.footprint import AccessAnalysis, analyse_accesses, tile_bytes
from ..passes.semantic import GRID_INDICES, ArrayInfo, ProgramInfo
from ..passes import memory as placement
from ..passes.memory import place_memory
from ..passes.lanes import analyse as analyse_lanes
from ..passes.lanes import analyse_rows
from ..passes.specialise import fold_decided_branches
from ..passes.unroll import unroll
from . import interior
from .lanes import LANES, LaneEmitter, lane_signature, rows_of, runs_of
from .interior import local_images
from .body import kernel_body, local_array_name, local_arrays, tile_extent_names, tile_origin_names
from .emitter import AccessPlan, Emitter, names

AXES = "xyz"
T = TypeVar("T")


# work-groups of more work-items than this are compiled into a local-memory variant's source
COMPILED_WG_ABOVE = 256


def compiles_work_group(local_mem: bool, wg) -> bool:
    """Whether a variant's source fixes its work-group size `wg` (reqd_work_group_size). Tiles
    and local copies are sized and walked at launch time (__local kernel arguments,
    get_local_size), so the size is needed only where the compiler budgets registers by it:
    without it NVIDIA's compiler assumes a work-group of at most 256 work-items for many
    local-memory kernels and refuses larger ones. Fixing it only above that keeps every size up
    to 256 one source (the paper's space: 41,376 sources become far fewer, benchmarks/exhaustive.py)."""
    if not local_mem:
        return False
    total = 1
    for w in wg:
        total *= max(int(w), 1)
    return total > COMPILED_WG_ABOVE


@dataclass(frozen=True)
class VariantPlan:
    """The choices of one configuration, in the terms code generation needs."""

    px: tuple[int, ...]
    interleaved: bool = False
    image_mem: frozenset = frozenset()
    local_mem: frozenset = frozenset()
    constant_mem: frozenset = frozenset()
    unroll: tuple = ()  # (loop parameter name, factor)
    tunables: tuple = ()  # (name, value)
    wg: Optional[tuple[int, ...]] = None  # None: the driver chooses (the naive variant)
    interior: bool = False  # work-groups inside the image run a copy without boundary handling
    vector_x: int = 0  # in that copy, runs along x: 1 vector loads/stores around scalar code, 2 vector code (LANES)
    banded: bool = False  # built to run over a band of the grid through a global work offset (runtime/multidevice.py)

    @staticmethod
    def naive(info: ProgramInfo) -> "VariantPlan":
        """The program as written: one point per work-item, the memories its pragmas force, the
        first value of each tunable, and the driver's choice of work-group size, except where a
        forced local-memory tile needs one known when the kernel is built."""
        from ..space import tile_work_group

        plan = VariantPlan(px=(1,) * info.grid_dims,
                           image_mem=frozenset(info.placement["image_mem"]),
                           local_mem=frozenset(info.placement["local_mem"]),
                           constant_mem=frozenset(info.placement["constant_mem"]),
                           tunables=tuple(sorted((n, v[0]) for n, v in info.tunables.items())))
        if local_images(info, plan):
            plan = dataclasses.replace(plan, wg=tile_work_group(info.grid_dims))
        return plan

    @staticmethod
    def from_config(info: ProgramInfo, config: Mapping[str, int], space=None) -> "VariantPlan":
        """The plan of a configuration of `space` (imagecl.space.Space.plan); without a space,
        of the program's space on a device of OpenCL's minimum limits, which names and decodes
        the same parameters."""
        if space is None:
            from ..space import DeviceLimits, build_space

            space = build_space(info, DeviceLimits())
        return space.plan(config)

    @property
    def is_coarsened(self) -> bool:
        return any(p > 1 for p in self.px)

    @property
    def compiled_wg(self) -> Optional[tuple[int, ...]]:
        """The work-group size the source fixes (reqd_work_group_size), or None: see
        compiles_work_group."""
        return self.wg if self.wg is not None and compiles_work_group(bool(self.local_mem), self.wg) else None

    def span(self, axis: int) -> int:
        """Grid points one work-group covers per work-item along `axis` in one tile."""
        return 1 if self.interleaved else self.px[axis]


# ---- memory accesses ------------------------------------------------------------------------------------


class PlacedAccess(AccessPlan):
    """Accesses written as passes/memory.py placed them: local-memory tiles and copies, image
    memory, the global buffers with or without boundary handling, and in the interior fast
    path the run's register tiles (`tiles`) and staging arrays."""

    def __init__(self, info: ProgramInfo, tiles: list = ()) -> None:
        super().__init__(info)
        self.tiles = {t.image: t for t in tiles}

    def image_read(self, array: ArrayInfo, coords: list[str], node: ir.Subscript) -> str:
        memory = node.memory
        if memory == placement.TILE:
            return f"imcl_tile_{array.name}[{tile_index(array, coords)}]"
        if memory == placement.IMAGE:
            extents = ", ".join(self.extent(array, a) for a in range(array.dims))
            return f"imcl_img_read_{array.name}({self.c(array.name)}, {extents}, {', '.join(coords)})"
        if memory == placement.REGISTER:
            return f"imcl_reg_{array.name}[{interior.register_tile_index(self.tiles[array.name], coords)}]"
        if memory in (placement.DIRECT, placement.IMAGE_DIRECT):
            return interior.direct_read(self.info, memory == placement.IMAGE_DIRECT, array.name, coords)
        if memory == placement.BUFFER:
            return f"{self.c(array.name)}[{self.linear(array, coords)}]"
        if memory == placement.BOUNDARY:
            extents = ", ".join(self.extent(array, a) for a in range(array.dims))
            return f"imcl_read_{array.name}({self.c(array.name)}, {extents}, {', '.join(coords)})"
        return super().image_read(array, coords, node)

    def image_write(self, array: ArrayInfo, coords: list[str], node: ir.Subscript) -> tuple[str, Optional[str]]:
        if node.memory == placement.STAGED:
            return f"imcl_st_{array.name}[({coords[0]}) - imcl_x0]", None
        if node.memory == placement.BUFFER:
            return f"{self.c(array.name)}[{self.linear(array, coords)}]", None
        return super().image_write(array, coords, node)

    def array_read(self, array: ArrayInfo, coords: list[str], node: Optional[ir.Subscript] = None) -> str:
        memory = node.memory if node is not None else None
        if memory == placement.LOCAL:
            return f"{local_array_name(array.name)}[{self.flat_index(array, coords)}]"
        if memory == placement.IMAGE:
            # an array `a[N][M]` is an image M wide and N high: a[i][j] is pixel (j, i)
            return f"imcl_aimg_read_{array.name}({self.c(array.name)}, {', '.join(reversed(coords))})"
        return super().array_read(array, coords, node)


def tile_index(array: ArrayInfo, coords: list[str]) -> str:
    n = array.name
    x = f"({coords[0]}) - imcl_{n}_ox"
    y = f"({coords[1]}) - imcl_{n}_oy"
    if array.dims == 3:
        return f"((({coords[2]}) - imcl_{n}_oz) * imcl_{n}_th + {y}) * imcl_{n}_tw + {x}"
    return f"({y}) * imcl_{n}_tw + {x}"


# ---- kernel arguments -------------------------------------------------------------------------------------


@dataclass
class KernelArg:
    """One OpenCL kernel argument, in order: what the host passes and how."""

    name: str  # the argument's name in the generated code
    role: str  # 'buffer', 'image', 'extent', 'length', 'scalar', 'tile'
    param: str  # the .icl parameter it comes from
    ctype: str  # OpenCL C type text
    axis: int = -1  # for 'extent': 0 width, 1 height, 2 depth


def kernel_args(info: ProgramInfo, plan: VariantPlan) -> list[KernelArg]:
    args: list[KernelArg] = []
    for p in info.params:
        array = info.arrays.get(p.name)
        if array is None:
            ctype = "int" if p.type == ty.BOOL else p.type.c_name()  # bool cannot be a kernel argument
            args.append(KernelArg(info.c_name(p.name), "scalar", p.name, ctype))
            continue
        element = array.element.c_name()
        cname = info.c_name(p.name)
        if array.kind == "image" and p.name in plan.image_mem:
            args.append(KernelArg(cname, "image", p.name, f"__read_only image{array.dims}d_t"))
        elif array.kind == "array" and p.name in plan.image_mem:
            args.append(KernelArg(cname, "image", p.name, f"__read_only image{len(array.shape)}d_t"))
        elif p.name in plan.constant_mem:
            args.append(KernelArg(cname, "buffer", p.name, f"__constant {element}*"))
        else:
            const = "" if array.is_written else "const "
            args.append(KernelArg(cname, "buffer", p.name, f"__global {const}{element}*"))
        n = names(array)
        if array.kind == "image":
            for axis in range(array.dims):
                args.append(KernelArg(n["whd"[axis]], "extent", p.name, "int", axis))
        elif array.kind == "pointer":
            args.append(KernelArg(n["len"], "length", p.name, "int"))
    for name in local_images(info, plan):
        element = info.arrays[name].element.c_name()
        args.append(KernelArg(f"imcl_tile_{name}", "tile", name, f"__local {element}*"))
    return args


# ---- the program text ------------------------------------------------------------------------------------------


def grid_extents(info: ProgramInfo) -> list[str]:
    if info.grid:
        first = info.arrays[info.grid[0]]
        return [names(first)["whd"[a]] for a in range(info.grid_dims)]
    return [str(s) for s in info.grid_size]


def uses_double(info: ProgramInfo) -> bool:
    for node in walk(info.unit.functions):
        candidates = [getattr(node, "type", None) if isinstance(node, ir.Expr) else None,
                      getattr(node, "var_type", None), getattr(node, "return_type", None)]
        if isinstance(node, ir.Param):
            candidates.append(node.type)
        if any(c is not None and "double" in c.c_name() for c in candidates):
            return True
    return False


# mirror, wrap and reflect are computed on the indices (the samplers' repeat modes need
# normalised coordinates); a constant other than 0 is tested before the CLAMP sampler's read
_SAMPLER_ADDRESS = {"constant": "CLK_ADDRESS_CLAMP", "clamped": "CLK_ADDRESS_CLAMP_TO_EDGE",
                    "mirror": "CLK_ADDRESS_NONE", "wrap": "CLK_ADDRESS_NONE", "reflect": "CLK_ADDRESS_NONE"}


def fill_literal(array: ArrayInfo) -> str:
    """The C text of what `constant` reads outside `array` ("0" unless a fill value is given)."""
    if not array.fill:
        return "0"
    if isinstance(array.fill, int):
        return str(array.fill)
    base = ty.element_scalar(array.element)
    text = repr(float(array.fill))
    if "e" not in text and "." not in text:
        text += ".0"
    return text if base == ty.DOUBLE else text + "f"
SHARED_SAMPLER = "imcl_sampler"


def _image_read_call(array: ArrayInfo, sampler: Optional[str], coord: str) -> str:
    """read_image{f,i,ui} of one pixel as the array's element type (without a sampler: the
    sampler-less read at integer coordinates)."""
    el = array.element
    base = ty.element_scalar(el)
    kind = "f" if base.is_float else ("i" if base.is_signed else "ui")
    call = f"read_image{kind}(img, {sampler}, {coord})" if sampler else f"read_image{kind}(img, {coord})"
    if isinstance(el, ty.VectorType):
        return call if base.is_float else f"convert_{el.c_name()}({call})"
    return f"({el.c_name()}){call}.x"


def image_samplers(info: ProgramInfo, plan: VariantPlan) -> dict[str, tuple[str, str, bool]]:
    """image -> (sampler name, address mode, boundary handled by explicit index arithmetic).

    Each image in image memory gets the sampler whose addressing mode implements its boundary
    condition, when all of them agree on one. When they need different addressing modes, every
    image uses one shared CLK_ADDRESS_NONE sampler and the boundary conditions are computed on
    the indices instead: PoCL (reproduced with plain pyopencl) crashes when reads of two images
    with different samplers are merged, e.g. in a ternary `i > 0 ? c[x][y] : a[x][y]`.
    """
    read = [a for a in info.arrays.values() if a.kind == "image" and a.reads and a.name in plan.image_mem]
    if len({_SAMPLER_ADDRESS[a.boundary] for a in read}) <= 1:
        return {a.name: (f"imcl_sampler_{a.name}", _SAMPLER_ADDRESS[a.boundary], False) for a in read}
    return {a.name: (SHARED_SAMPLER, "CLK_ADDRESS_NONE", True) for a in read}


def read_functions(info: ProgramInfo, plan: VariantPlan) -> tuple[list[dict], list[dict], list[dict]]:
    """Boundary-handling read functions for global buffers and for images in image memory,
    and the samplers the latter use."""
    buffers, images, samplers = [], [], {}
    chosen = image_samplers(info, plan)
    for array in info.arrays.values():
        if array.kind != "image" or not array.reads:
            continue
        coords = ["x", "y", "z"][: array.dims]
        extents = ["w", "h", "d"][: array.dims]
        common = {
            "name": array.name,
            "mode": array.boundary,
            "ctype": array.element.c_name(),
            "extent_params": ", ".join(f"const int {e}" for e in extents),
            "coord_params": ", ".join(f"int {c}" for c in coords),
            "outside": " || ".join(f"{c} < 0 || {c} >= {e}" for c, e in zip(coords, extents)),
            "axes": list(zip(coords, extents)),
            "fill": fill_literal(array),
        }
        if array.name in plan.image_mem:
            sampler, address, explicit = chosen[array.name]
            samplers[sampler] = {"name": sampler, "address": address}
            explicit = explicit or common["fill"] != "0"  # the CLAMP sampler's border is 0
            coord = "(int2)(x, y)" if array.dims == 2 else "(int4)(x, y, z, 0)"
            images.append({**common, "dims": array.dims, "explicit": explicit,
                           "read": _image_read_call(array, sampler, coord), "inside": plan.interior})
        else:
            linear = "(z * h + y) * w + x" if array.dims == 3 else "y * w + x"
            buffers.append({**common, "linear": linear})
    return buffers, images, list(samplers.values())


def array_image_reads(info: ProgramInfo, plan: VariantPlan) -> list[dict]:
    """Read functions of fixed-size arrays in image memory (sampler-less reads at integer
    coordinates: every index of the naive variant is in range, so no boundary mode applies)."""
    out = []
    for name in sorted(plan.image_mem):
        array = info.arrays[name]
        if array.kind != "array":
            continue
        dims = len(array.shape)
        value = _image_read_call(array, None, "i" if dims == 1 else "(int2)(j, i)")
        out.append({"name": name, "dims": dims, "ctype": array.element.c_name(),
                    "coord_params": "int i" if dims == 1 else "int j, int i", "value": value})
    return out


def local_array_point_params(info: ProgramInfo, plan: VariantPlan) -> tuple[list[str], list[str]]:
    params, values = [], []
    for name in local_arrays(info, plan):
        array = info.arrays[name]
        params.append(f"__local const {array.element.c_name()}* {local_array_name(name)}")
        values.append(local_array_name(name))
    return params, values


def helper_text(emitter: Emitter, f: ir.Function) -> str:
    params = []
    for p in f.params:
        const = "const " if p.is_const else ""
        if isinstance(p.type, ty.ArrayType):
            params.append(f"{const}{p.type.element.c_name()} {emitter.c(p.name)}"
                          + "".join(f"[{n}]" for n in p.type.shape))
        else:
            params.append(f"{const}{p.type.c_name()} {emitter.c(p.name)}")
    head = f"{f.return_type.c_name()} {emitter.c(f.name)}({', '.join(params) or 'void'})"
    return "\n".join([head, "{"] + emitter.block_lines(f.body, 1) + ["}"])


def _is_bool_scalar(info: ProgramInfo, arg: KernelArg) -> bool:
    return arg.role == "scalar" and next(p for p in info.params if p.name == arg.param).type == ty.BOOL


def point_signature(info: ProgramInfo, args: list[KernelArg]) -> tuple[list[str], list[str]]:
    """Parameters of the per-point function, and the arguments the kernel passes to it."""
    params, values = [], []
    for a in args:
        if a.role == "tile":
            array = info.arrays[a.param]
            params.append(f"__local const {array.element.c_name()}* {a.name}")
            values.append(a.name)
            for extra in tile_origin_names(array.name, array.dims) + tile_extent_names(array.name, array.dims)[:-1]:
                params.append(f"const int {extra}")
                values.append(extra)
            continue
        if _is_bool_scalar(info, a):
            params.append(f"const bool {a.name}")
            values.append(f"{a.name} != 0")
        elif a.role in ("buffer", "image"):
            params.append(f"{a.ctype} {a.name}")
            values.append(a.name)
        else:
            params.append(f"const {a.ctype} {a.name}")
            values.append(a.name)
    grid = list(GRID_INDICES[: info.grid_dims])
    return params + [f"const int {g}" for g in grid], values + grid


def generate(info: ProgramInfo, plan: Optional[VariantPlan] = None, config_lines: Optional[list[str]] = None,
             analysis: Optional[AccessAnalysis] = None, memo: Optional[dict] = None) -> str:
    """OpenCL C source of the variant `plan` (default: the naive variant).

    `memo` (a dict the caller keeps for one program, e.g. Program.source_of's) holds the passes'
    results and their printed text between calls, keyed by the few plan fields each depends on:
    many configurations share them, and the passes and the printer are most of the cost."""
    plan = plan or VariantPlan.naive(info)
    if analysis is None:
        analysis = analyse_accesses(info)
    memo = {} if memo is None else memo
    placed, helpers, body = _placed(info, plan, analysis, memo)
    args = kernel_args(info, plan)
    point_params, point_values = point_signature(info, args)
    extra_params, extra_values = local_array_point_params(info, plan)
    point_params, point_values = point_params[:-info.grid_dims] + extra_params + point_params[-info.grid_dims:], \
        point_values[:-info.grid_dims] + extra_values + point_values[-info.grid_dims:]
    point_call = f"imcl_point_{info.kernel.name}({', '.join(point_values)});"
    buffers, images, samplers = read_functions(info, plan)
    is_naive = plan == VariantPlan.naive(info)
    grid_text = ("one point per pixel of " + ", ".join(info.grid) if info.grid
                 else "fixed size " + " x ".join(str(s) for s in info.grid_size))
    context = {
        "version": __version__,
        "filename": info.filename,
        "kernel_name": info.kernel.name,
        "kernel_symbol": info.c_name(info.kernel.name),
        "variant": "naive" if is_naive and not config_lines else "tuned",
        "grid_description": grid_text,
        "config_lines": config_lines or [],
        "uses_double": _memoised(memo, ("uses_double", plan.tunables), lambda: uses_double(info)),
        "defines": [(info.c_name(n), v) for n, v in plan.tunables],
        "boundary_modes": {a.boundary for a in info.arrays.values() if a.kind == "image" and a.reads},
        "boundary_reads": buffers,
        "image_reads": images,
        "array_image_reads": array_image_reads(info, plan),
        "samplers": samplers,
        "helpers": helpers,
        "point_params": point_params,
        "point_indent": " " * len(f"void imcl_point_{info.kernel.name}("),
        "body": body,
        "kernel_params": [f"{a.ctype} {a.name}" if a.role in ("buffer", "image", "tile") else f"const {a.ctype} {a.name}"
                          for a in args],
        "kernel_indent": " " * len(f"__kernel void {info.c_name(info.kernel.name)}("),
        "kernel_attribute": _work_group_attribute(plan),
        "kernel_body": "" if plan.interior else kernel_body(info, plan, analysis, grid_extents(info), point_call),
        "inside_points": [],
    }
    if plan.interior:
        _add_fast_path(info, placed, plan, analysis, point_params, point_values, point_call, context, memo)
    return templating.environment().get_template("kernel.cl.j2").render(**context)


def _memoised(memo: dict, key: tuple, compute: Callable[[], T]) -> T:
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def _factors(plan: VariantPlan) -> tuple:
    return tuple((name, f) for name, f in plan.unroll if f > 1)  # a factor of 1 leaves its loop alone


def _placed(info: ProgramInfo, plan: VariantPlan, analysis: AccessAnalysis,
            memo: dict) -> tuple[ProgramInfo, list[str], str]:
    """The variant's passes over the (specialised) IR, unrolling then memory placement, and the
    printed helpers and per-point body. They depend on the tunables, the unroll factors and the
    image- and local-memory sets only."""
    factors = _factors(plan)

    def compute() -> tuple[ProgramInfo, list[str], str]:
        unrolled = _memoised(memo, ("unrolled", plan.tunables, factors), lambda: unroll(info, analysis, dict(factors)))
        placed = place_memory(unrolled, plan)
        emitter = Emitter(placed, PlacedAccess(placed))
        return (placed, [helper_text(emitter, f) for f in placed.helpers],
                "\n".join(emitter.block_lines(placed.kernel.body, 1)))

    return _memoised(memo, ("placed", plan.tunables, factors, plan.image_mem, plan.local_mem), compute)


def _work_group_attribute(plan: VariantPlan) -> str:
    if plan.compiled_wg is None:
        return ""
    sizes = list(plan.compiled_wg) + [1] * (3 - len(plan.compiled_wg))
    return f"__attribute__((reqd_work_group_size({', '.join(map(str, sizes))})))"


def _add_fast_path(info: ProgramInfo, placed: ProgramInfo, plan: VariantPlan, analysis: AccessAnalysis,
                   point_params: list[str], point_values: list[str], point_call: str, context: dict,
                   memo: dict) -> None:
    """The interior fast path (see interior.py): its per-point function, printed from the placed
    IR re-placed by passes/memory.py (interior, then vectorise), and the kernel body that
    chooses between it and the general one."""
    tiles, stores = [], []
    params, values = list(point_params), list(point_values)
    name = f"imcl_point_{info.kernel.name}_inside"
    note = ""
    n = plan.px[0] if plan.vector_x else 0
    explicit = plan.vector_x == LANES
    rows = 1
    if explicit:
        name = f"imcl_point_{info.kernel.name}_lanes"
        params, values = lane_signature(params, values)
        width, runs = runs_of(n)
        if info.grid_dims > 1:  # the analysis once per program (and tunables), not once per variant
            jammable = _memoised(memo, ("rows", plan.tunables),
                                 lambda: analyse_rows(fold_decided_branches(info)) is not None)
            rows = rows_of(n, plan.px[1], jammable)
        note = f"; one call computes {n} points along x, as {runs} vector(s) of {width} lanes"
        if rows > 1:
            note += f", in each of {rows} rows from idy on"
    elif plan.vector_x:
        tiles = interior.register_tiles(info, analysis, plan.local_mem, plan.image_mem, n)
        stores = interior.vector_store_images(info)
        for tile in tiles:
            params.append(f"__private const {info.arrays[tile.image].element.c_name()}* imcl_reg_{tile.image}")
            values.append(f"imcl_reg_{tile.image}")
        for image in stores:
            params.append(f"__private {info.arrays[image].element.c_name()}* imcl_st_{image}")
            values.append(f"imcl_st_{image}")
        params.append("const int imcl_x0")
        values.append("imcl_x0")
        note = f"; runs of {n} points along x read register tiles and stage their outputs"

    def fast_body() -> str:
        fast = placement.interior(placed, plan, interior.inside_images(info, analysis))
        if explicit:  # only the arms the tunables take: the others need not run as lanes
            fast = fold_decided_branches(fast)
            emitter = LaneEmitter(fast, PlacedAccess(fast), analyse_lanes(fast), *runs_of(n), rows=rows,
                                  row_values=analyse_rows(fast) if rows > 1 else None)
            return "\n".join(emitter.block_lines(fast.kernel.body, 1))
        if plan.vector_x:
            fast = placement.vectorise(fast, [t.image for t in tiles], stores)
        return "\n".join(Emitter(fast, PlacedAccess(fast, tiles)).block_lines(fast.kernel.body, 1))

    # the re-placement reads the placed IR's key and, vectorised, the run's length (the register tiles)
    key = ("inside", plan.tunables, _factors(plan), plan.image_mem, plan.local_mem, n, explicit, rows)
    context["inside_points"] = [{
        "name": name, "note": note, "params": params, "indent": " " * len(f"void {name}("),
        "body": _memoised(memo, key, fast_body),
    }]
    inside_call = f"{name}({', '.join(values)});"
    context["kernel_body"] = kernel_body(info, plan, analysis, grid_extents(info), point_call, inside_call,
                                         tiles, stores, rows)


# ---- launching ------------------------------------------------------------------------------------------------


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def launch_geometry(info: ProgramInfo, plan: VariantPlan, grid_xyz: tuple[int, ...]):
    """(global size, local size or None) for a grid of `grid_xyz` points (x first)."""
    per_item = [-(-n // p) for n, p in zip(grid_xyz, plan.px)]
    if plan.wg is None:
        return tuple(per_item), None
    return tuple(_round_up(n, w) for n, w in zip(per_item, plan.wg)), tuple(plan.wg)


def tile_bytes_at_launch(info: ProgramInfo, plan: VariantPlan, analysis: AccessAnalysis, name: str) -> int:
    """Bytes of image `name`'s local-memory tile in this variant (the space's constraint uses
    the same formula, `passes.footprint.tile_bytes`)."""
    span = [plan.span(d) for d in range(len(plan.wg))]
    return int(tile_bytes(info.arrays[name], analysis.footprints[name], plan.wg, span))
