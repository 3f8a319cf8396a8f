"""The Jinja2 environments that render templates/: the OpenCL kernel, its __kernel body, the C
host wrapper and header. Both are built here with the same settings and every escaping filter
of imagecl/escape.py, so any template can escape user text in any place whichever module renders
it (tests/test_injection.py checks that every field in a comment or string literal is filtered).
Each environment is made once and keeps its compiled templates."""
from __future__ import annotations

import functools

import jinja2

from . import escape
from .resources import resource_dir

# the filters for user text: `comment` inside C/OpenCL comments, `c_string` for a C string
# literal, `c_identifier` for a name that must be a C identifier as it stands
FILTERS = {"comment": escape.comment, "c_string": escape.c_string, "c_identifier": escape.c_identifier}


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """Templates whose text is laid out as written: kernel.cl.j2, host_wrapper.{h,c}.j2."""
    return _environment(keep_trailing_newline=True)


@functools.lru_cache(maxsize=1)
def line_environment() -> jinja2.Environment:
    """Templates written one output line per template line (kernel_body.cl.j2): a line that holds
    only a tag vanishes."""
    return _environment(trim_blocks=True, lstrip_blocks=True)


def _environment(**layout: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # C, not HTML: the filters above escape for each place
        auto_reload=False,  # installed templates do not change under a running process
        **layout,
    )
    env.filters.update(FILTERS)
    return env
