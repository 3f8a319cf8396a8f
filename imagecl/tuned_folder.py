"""`imagecl.load(folder)`: a folder written by `imagecl tune -o DIR` gives back its program, set to
run that folder's configuration."""
from __future__ import annotations

import json
from pathlib import Path

from .errors import ImageCLError


def load_folder(folder: Path):
    """The program a tuned folder was made from (found where `tune` read it, else next to the
    folder's files), with the folder's configuration pinned; it must still mean the same program."""
    from .program import Program, load
    from .tuned import program_key

    descriptions = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and isinstance(data.get("configuration"), dict) and isinstance(data.get("program"), str):
            descriptions.append((path, data))
    if len(descriptions) != 1:
        found = "no" if not descriptions else f"{len(descriptions)}"
        raise ImageCLError(f"{folder}: not a folder written by 'imagecl tune -o' ({found} tuned kernel descriptions "
                           "in it; expected one <kernel>.json)")
    path, data = descriptions[0]
    given = Path(data["program"])
    candidates = [given] if given.is_absolute() else [given, folder / given, folder / given.name]
    source = next((c for c in candidates if c.is_file()), None)
    if source is None:
        raise ImageCLError(f"{path}: the program it was tuned from, {data['program']}, is not found "
                           f"(looked at {', '.join(str(c) for c in candidates)})")
    program = load(source)
    expected = data.get("program_key")
    if isinstance(expected, str) and expected != program_key(program.info.unit):
        raise ImageCLError(f"{path}: {source} has changed since it was tuned (not only its comments); "
                           "tune it again")
    return Program(program.info, pinned=data["configuration"])
