"""Locating the grammar and templates, installed (package data) or in a source checkout."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent


def resource_dir(kind: str) -> Path:
    """The folder of `kind` ('grammar' or 'templates').

    An installed wheel carries them as the packages imagecl.grammar / imagecl.templates; a source
    checkout (PYTHONPATH=repo) has them beside the imagecl/ folder.
    """
    try:
        path = Path(str(resources.files(f"imagecl.{kind}")))
        if path.is_dir():
            return path
    except ModuleNotFoundError:
        pass
    path = _CHECKOUT / kind
    if not path.is_dir():
        raise FileNotFoundError(f"imagecl is installed without its {kind}/ folder ({path})")
    return path
