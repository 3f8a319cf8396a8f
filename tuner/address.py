"""Where a results store lives, from the `--db` text: a file (a path or `sqlite:///path`) or a
PostgreSQL server (`postgresql://` or `postgres://`). Dependency-free, so that the CLI's output
checks can ask it without opening anything."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Union

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
POSTGRES_SCHEMES = ("postgresql", "postgres")


class AddressError(ValueError):
    """A `--db` text that names no store this imagecl can open."""


def is_postgres(address: Union[str, Path]) -> bool:
    match = _SCHEME.match(str(address)) if isinstance(address, str) else None
    return bool(match) and match.group(1).lower() in POSTGRES_SCHEMES


def sqlite_path(address: Union[str, Path]) -> Path:
    """The file of an SQLite store: the path itself, or what follows `sqlite:///` (so
    `sqlite:///rel.db` is relative and `sqlite:////tmp/a.db` absolute, as in SQLAlchemy)."""
    if not isinstance(address, str):
        return Path(address)
    match = _SCHEME.match(address)
    if not match:
        return Path(address)
    if match.group(1).lower() == "sqlite" and address[match.end():].startswith("/"):
        rest = address[match.end() + 1:]
        if rest:
            return Path(rest)
    raise AddressError(f"{mask(address)}: not a database address imagecl knows (a file path, sqlite:///PATH, "
                       "or postgresql://USER@HOST:PORT/DBNAME)")


def store_location(address: Union[str, Path]) -> Union[str, Path]:
    """The URL of a PostgreSQL store, or the Path of an SQLite one (AddressError for neither)."""
    return str(address) if is_postgres(address) else sqlite_path(address)


def mask(address: Union[str, Path]) -> str:
    """`address` fit to print: a password in a URL (`user:secret@`, `password=secret`) is hidden."""
    text = str(address)
    if not _SCHEME.match(text):
        return text
    text = re.sub(r"(://[^/@]*?:)[^/@]*@", r"\1***@", text)
    return re.sub(r"(?i)(password=)[^&]*", r"\1***", text)
