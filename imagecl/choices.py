"""The kinds of choice a program's tuning space is made of: one typed table.

Every tuning parameter the compiler creates belongs to one `Family`: how it is named, what it
applies to (an axis of the grid, an image or array, a loop, the whole program), and whether it
changes the OpenCL source or only the launch. `imagecl/space.py:build_space` mints every name
through its family, `Space.plan` decodes a configuration through the families of its
parameters (never by a name's prefix), and the checker's rule that a program's own `tunable`
may not take a generated name (imagecl/parameters.py) reads the same table.

This module imports nothing of the compiler, so the checker can use it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

# what a family's parameters apply to
AXIS, IMAGE_OR_ARRAY, LOOP, PROGRAM, USER = "axis", "image_or_array", "loop", "program", "user"

# the work-group value that leaves the work-group size to the OpenCL driver (local_size NULL)
DRIVERS_CHOICE = 0


@dataclass(frozen=True)
class Family:
    """One kind of tuning parameter."""

    key: str  # what VariantPlan field it sets (see imagecl/space.py:Space.plan)
    pattern: Optional[str]  # its names, `<...>` standing for the target; None: the user names it
    applies_to: str  # AXIS, IMAGE_OR_ARRAY, LOOP, PROGRAM or USER
    kind: str  # the group shown to users and in JSON (work_group, coarsening, ...)
    launch_only: bool = False  # changes only the launch, not the OpenCL source

    def name(self, target: Optional[str] = None) -> str:
        """The parameter's name for `target` (an axis letter, an image or array, a loop's parameter)."""
        if self.pattern is None or "<" not in self.pattern:
            if self.pattern is None and target is None:
                raise ValueError(f"a {self.key} parameter needs a name")
            return self.pattern or str(target)
        if self.applies_to == LOOP:
            return str(target)  # a loop's parameter name is minted by passes/footprint.py, already in the pattern
        return self.pattern.split("<")[0] + str(target)

    @property
    def regex(self) -> Optional[str]:
        if self.pattern is None:
            return None
        return re.escape(self.pattern.split("<")[0]) + (r"\w+" if "<" in self.pattern else "")


WORK_GROUP = Family("wg", "wg_<axis>", AXIS, "work_group", launch_only=True)
COARSENING = Family("px", "px_<axis>", AXIS, "coarsening")
LAYOUT = Family("interleaved", "interleaved", PROGRAM, "layout")
INTERIOR = Family("interior", "interior", PROGRAM, "fast_path")
VECTOR_X = Family("vector_x", "vector_x", PROGRAM, "fast_path")
IMAGE_MEM = Family("image_mem", "image_<array>", IMAGE_OR_ARRAY, "image_mem")
LOCAL_MEM = Family("local_mem", "local_<array>", IMAGE_OR_ARRAY, "local_mem")
CONSTANT_MEM = Family("constant_mem", "constant_<array>", IMAGE_OR_ARRAY, "constant_mem")
UNROLL = Family("unroll", "unroll_<function>_l<line>", LOOP, "unroll")
TUNABLE = Family("tunables", None, USER, "tunable")

FAMILIES: tuple[Family, ...] = (WORK_GROUP, COARSENING, LAYOUT, INTERIOR, VECTOR_X, IMAGE_MEM, LOCAL_MEM,
                                CONSTANT_MEM, UNROLL, TUNABLE)
GENERATED: tuple[Family, ...] = tuple(f for f in FAMILIES if f.pattern is not None)

__all__ = ["Family", "FAMILIES", "GENERATED", "DRIVERS_CHOICE", "WORK_GROUP", "COARSENING", "LAYOUT", "INTERIOR",
           "VECTOR_X", "IMAGE_MEM", "LOCAL_MEM", "CONSTANT_MEM", "UNROLL", "TUNABLE"]
