"""The benchmark harnesses (peer comparison, tuner evaluation, ground truth), importable so that
the scripts in benchmarks/ and the tests use them through the installed package.

They read the examples of a source checkout and write into its benchmarks/results: the checkout
is `$IMAGECL_REPOSITORY` (the scripts in benchmarks/ set it to their own), else the nearest
folder upward from the current one that holds examples/ and benchmarks/.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import ImageCLError


def repository() -> Path:
    """The source checkout the benchmarks work in (see the module's docstring)."""
    given = os.environ.get("IMAGECL_REPOSITORY")
    if given:
        return Path(given)
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "examples").is_dir() and (folder / "benchmarks").is_dir():
            return folder
    raise ImageCLError("the benchmarks need a source checkout of imagecl: run them from one, or set "
                       "IMAGECL_REPOSITORY to its folder")


def use_repository(root: Path) -> None:
    """Make `root` the checkout for this process and the processes it starts (the scripts' own)."""
    os.environ.setdefault("IMAGECL_REPOSITORY", str(Path(root).resolve()))
