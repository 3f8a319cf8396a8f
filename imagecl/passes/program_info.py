"""What semantic analysis knows about a checked program (`ProgramInfo`) and each of its arrays
(`ArrayInfo`): the record every later pass reads."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..ir import nodes as ir
from ..ir import types as ty

# mirror: d c b | a b c d (SciPy 'mirror'); reflect: c b a | a b c d (SciPy 'reflect')
BOUNDARY_MODES = ("constant", "clamped", "mirror", "wrap", "reflect")
GRID_INDICES = ("idx", "idy", "idz")


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
    wavefront: Optional[str] = None  # the output of a wavefront program (passes/wavefront.py)

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
