"""Semantic analysis: scopes, types and C conversions, image dimensionality, pragma validity,
read/write classification and data-race detection.

The result is a `ProgramInfo`: the typed IR plus what every later pass needs to know about
the kernel's arrays, scalars, grid and tunables. One module a concern: pragmas.py (the kernel,
tunables, grid, boundaries, placements), statements.py, expressions.py (types and operators),
calls.py, access_classes.py (what is read and written), races.py; scopes.py holds the state
they share and program_info.py the result.
"""
from __future__ import annotations

from ..ir import names
from ..ir import nodes as ir
from .access_classes import AccessClasses
from .calls import CallChecks
from .expressions import ExpressionChecks
from .pragmas import PragmaChecks
from .program_info import BOUNDARY_MODES, GRID_INDICES, ArrayInfo, ProgramInfo
from .races import check_races, grid_offset
from .scopes import declared_names
from .statements import StatementChecks
from .wavefront import check_wavefront, wavefront_output


def analyse(unit: ir.TranslationUnit) -> ProgramInfo:
    """Check a parsed program and return its typed IR with the facts later passes use."""
    return _Analyser(unit).run()


class _Analyser(PragmaChecks, StatementChecks, ExpressionChecks, CallChecks, AccessClasses):
    def run(self) -> ProgramInfo:
        unit = self.unit
        kernel = self._select_kernel()
        pragmas = self._pragmas_by_name()
        self._declare_tunables(pragmas.get("tunable", []))
        self.kernel_param_names = {p.name for p in kernel.params}
        self._collect_arrays(kernel)
        wavefront = wavefront_output(self, pragmas)
        grid, grid_size = self._grid(pragmas, kernel)
        self._boundaries(pragmas.get("boundary_cond", []))
        placement = self._placements(pragmas)

        for function in unit.functions:
            if function is kernel:
                break
            self._check_function(function, is_kernel=False)
            self.functions[function.name] = function
        self._check_function(kernel, is_kernel=True)
        self._grid_dimensions(grid, pragmas)
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
            c_names=names.c_names(declared_names(unit), self.tunables),
            wavefront=wavefront,
        )
        self._check_placements(info, pragmas)
        if wavefront is not None:
            check_wavefront(info, self.error, pragmas["wavefront"][0].pos)
        check_races(info, self.error)
        return info


__all__ = ["analyse", "ProgramInfo", "ArrayInfo", "BOUNDARY_MODES", "GRID_INDICES", "grid_offset"]
