"""The names of the tuning parameters the compiler creates itself, as patterns, read from the
table of choice families (imagecl/choices.py).

A program's own `tunable` may not take one of these names, or it would become a second
parameter of the same name. `build_space` mints every parameter through its family and checks
the name against these patterns, so a new kind of parameter is reserved as soon as it exists.
"""
from __future__ import annotations

import re

from .choices import GENERATED

# one pattern per family, as the space names them (`<...>` stands for the image, array, axis
# or loop the parameter belongs to)
GENERATED_PARAMETERS = tuple(f.pattern for f in GENERATED)

_PATTERN = re.compile("|".join(f.regex for f in GENERATED))


def generated_parameter(name: str) -> bool:
    """Is `name` in one of the families of names the compiler gives its own parameters?"""
    return _PATTERN.fullmatch(name) is not None
