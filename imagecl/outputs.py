"""Writing the files a command produces: never over one of its inputs, never half a file, never
into a folder nobody asked for.

A file is written to a temporary file in its folder, flushed to disk and renamed over the
target (os.replace), so a reader or a crash sees the old file or the new one, never a mixture.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Iterable, Iterator, Optional, Union

from .errors import ImageCLError

PathLike = Union[str, "os.PathLike[str]"]


class OutputError(ImageCLError):
    """An output that would overwrite an input, or that cannot be written where it was asked for."""


def database_files(db: PathLike) -> list[Path]:
    """An SQLite database and the files SQLite keeps beside it: all of them are the database."""
    return [Path(db)] + [Path(f"{db}{suffix}") for suffix in ("-wal", "-shm", "-journal")]


def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):
        return os.path.abspath(a) == os.path.abspath(b)


def check_output(path: PathLike, inputs: Iterable[Optional[PathLike]] = (), what: str = "the output") -> Path:
    """`path` if writing it is allowed: its folder exists, it is not a folder, and it is none of
    `inputs` (their resolved paths, so a link or another spelling of an input is refused too)."""
    out = Path(path)
    for given in inputs:
        if given is not None and _same(out, Path(given)):
            raise OutputError(f"{out}: {what} would overwrite the input {given}; choose another name")
    try:
        if out.is_dir():
            raise OutputError(f"{out}: {what} is a folder; give a file name")
        if not out.parent.is_dir():
            raise OutputError(f"{out}: the folder {out.parent} does not exist; create it first")
    except OSError as exc:
        raise OutputError(f"{out}: cannot write ({exc.strerror or exc})") from None
    return out


def check_distinct(paths: Iterable[PathLike], what: str = "outputs") -> None:
    """Refuse two outputs that are one file: the second would silently replace the first."""
    seen: list[Path] = []
    for p in paths:
        for q in seen:
            if _same(Path(p), q):
                raise OutputError(f"{p}: two {what} would be written to the same file")
        seen.append(Path(p))


def output_folder(path: PathLike, inputs: Iterable[Optional[PathLike]] = (),
                  created: Optional[list[Path]] = None) -> Path:
    """The folder `path`, created if missing. Without `created`, only the folder itself is made
    (a missing parent is refused, so a mistyped path does not silently grow a tree of folders);
    with it, missing parents are made too and every folder made is appended, for the caller to
    report."""
    out = Path(path)
    for given in inputs:
        if given is not None and _same(out, Path(given)):
            raise OutputError(f"{out}: the output folder is the input {given}")
    try:
        if out.is_dir():
            return out
        missing = [out] + [p for p in out.parents if not p.exists()]
        for folder in missing:
            if folder.exists() and not folder.is_dir():
                raise OutputError(f"{folder}: exists and is not a folder")
        nearest = missing[-1].parent
        if not nearest.is_dir():
            raise OutputError(f"{out}: {nearest} exists and is not a folder")
        if len(missing) > 1 and created is None:
            raise OutputError(f"{out}: its parent folder {out.parent} does not exist; create it first")
        for folder in reversed(missing):
            folder.mkdir()
            if created is not None:
                created.append(folder)
    except OSError as exc:
        raise OutputError(f"{out}: cannot create the folder ({exc.strerror or exc})") from None
    return out


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_file(path: PathLike) -> Iterator[IO[bytes]]:
    """A binary file that becomes `path` when the block ends without an exception."""
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".imagecl-", suffix=".tmp", dir=str(target.parent))
    except OSError as exc:
        raise OutputError(f"{target}: cannot write ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _file_mode())  # as a plain open() would have made it, not mkstemp's 0600
        os.replace(tmp, target)
    except OSError as exc:
        _remove(tmp)
        raise OutputError(f"{target}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        _remove(tmp)
        raise


def _remove(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


def write_atomic(path: PathLike, data: Union[str, bytes]) -> Path:
    """Write `data` (text as UTF-8) to `path` atomically."""
    with atomic_file(path) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)


__all__ = ["OutputError", "atomic_file", "write_atomic", "check_output", "check_distinct", "output_folder",
           "database_files"]
