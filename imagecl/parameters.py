"""The names of the tuning parameters the compiler creates itself (imagecl/space.py and the
unroll factors of imagecl/passes/footprint.py), as patterns.

A program's own `tunable` may not take one of these names, or it would become a second
parameter of the same name. `build_space` checks every parameter it mints against these
patterns, so a new kind of parameter cannot be added without extending them.
"""
from __future__ import annotations

import re

# one pattern per family, as the space names them (`<...>` stands for the image, array, axis
# or loop the parameter belongs to)
GENERATED_PARAMETERS = (
    "wg_<axis>", "px_<axis>", "interleaved", "interior", "vector_x",
    "image_<array>", "local_<array>", "constant_<array>", "unroll_<function>_l<line>",
)

_PATTERN = re.compile(
    "|".join(re.escape(p.split("<")[0]) + (r"\w+" if "<" in p else "") for p in GENERATED_PARAMETERS)
)


def generated_parameter(name: str) -> bool:
    """Is `name` in one of the families of names the compiler gives its own parameters?"""
    return _PATTERN.fullmatch(name) is not None
