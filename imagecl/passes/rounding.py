"""Which integer outputs hold rounded floating-point results, whose last unit may differ between
variants that are all correct.

OpenCL lets `exp`, `pow`, `sqrt` and their kin be a few ulp from the exact value, and lets a
compiler contract `a * b + c` into one rounding. Two variants of one program may therefore take
different, equally valid paths to a float (a vector `exp` beside a scalar one, a tap order), and
where the result is converted to an integer and sits next to a rounding boundary, the integers
are one apart. The verifier allows that on a few elements of such outputs (runtime/verify.py).

The test is at the level of the program: an integer output qualifies when the kernel or a helper
computes anything in floating point. It does not trace which values reach which output; a
program with no floating-point expression at all (median, Conway, integer convolutions) keeps
the exact check.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir import types as ty
from ..ir.walk import walk
from .semantic import ProgramInfo


def rounded_outputs(info: ProgramInfo) -> frozenset[str]:
    """The written integer arrays of a program that computes in floating point."""
    if not computes_in_floating_point(info):
        return frozenset()
    return frozenset(name for name, a in info.arrays.items()
                     if a.is_written and _integer(a.element))


def computes_in_floating_point(info: ProgramInfo) -> bool:
    """Some expression of the kernel or of a helper has a floating-point (or vector of float) type."""
    for function in [info.kernel, *info.helpers]:
        for node in walk(function.body):
            if isinstance(node, ir.Expr) and node.type is not None and _floating(node.type):
                return True
    return False


def _floating(t: ty.Type) -> bool:
    return ty.is_arithmetic(t) and ty.element_scalar(t).is_float


def _integer(t: ty.Type) -> bool:
    return ty.is_arithmetic(t) and ty.element_scalar(t).is_integer and ty.element_scalar(t).name != "bool"
