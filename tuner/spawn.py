"""Starting helper processes without re-running the user's script.

The engine's workers and builders are 'spawn' processes: by default Python re-imports the main
module in each of them, so a plain script that calls `tune()` at its top level (no
`if __name__ == "__main__":` guard) would run again in every child and fail there. The children
need nothing from the main module (their code lives in this package and their setup is plain
data), so while one is started the main module is made to look like an interactive session's.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Iterator

_MISSING = object()


@contextlib.contextmanager
def main_module_hidden() -> Iterator[None]:
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved_file = main.__dict__.get("__file__", _MISSING)
    saved_spec = main.__dict__.get("__spec__", _MISSING)
    try:
        if saved_file is not _MISSING:
            del main.__file__
        if saved_spec is not _MISSING:
            main.__spec__ = None
        yield
    finally:
        if saved_file is not _MISSING:
            main.__file__ = saved_file
        if saved_spec is not _MISSING:
            main.__spec__ = saved_spec
