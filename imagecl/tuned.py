"""Where tuned configurations are recorded, so that `imagecl.load()` (and `prog(...)` without a
config) picks them up.

The registry is a folder (`$IMAGECL_TUNED`, else `~/.cache/imagecl/tuned`) with one JSON file per
program and device: `<program key>/<device key hash>.json`. The program key hashes the program's
meaning (its tokens and pragmas, not its comments or layout); the device key names the platform,
device, driver and compute units (runtime/devices.device_key: one name and driver come in several
sizes). A file written under the key of before, without the size, is read where the device has
none under its own. Inside, one record per problem size, so tunes at different sizes coexist.
Files of the older layout (keyed by the source text, one configuration per device, no "format")
are ignored: they are never read, listed or changed.
"""
from __future__ import annotations

import datetime
import functools
import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from .outputs import write_atomic

FORMAT = 2


def registry_dir() -> Path:
    return Path(_registry_base())


def _registry_base() -> str:
    return os.environ.get("IMAGECL_TUNED") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "imagecl", "tuned")


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def program_key(unit) -> str:
    """A hash of what a parsed program means: its token stream (comments and whitespace dropped)
    and its pragmas (names and arguments), so that editing a comment keeps its tunings."""
    return _meaning_hash(unit.source, unit.filename)


@functools.lru_cache(maxsize=256)  # every prog(...) call looks its tuning up: lex each source once
def _meaning_hash(source: str, filename: str) -> str:
    from .frontend.parser import _parser
    from .frontend.pragmas import split_pragmas

    stripped, pragmas = split_pragmas(source, filename)
    tokens = [[t.type, str(t)] for t in _parser().lex(stripped)]
    marks = [[p.name, [[a.name, list(a.values)] for a in p.args]] for p in pragmas]
    return _hash(json.dumps([tokens, marks]))


def size_key(size: Optional[tuple[int, ...]]) -> str:
    """'512x384' for a (width, height) size; 'any' for programs of a fixed grid."""
    return "any" if not size else "x".join(str(int(s)) for s in size)


def _pixels(size: list) -> int:
    return max(1, math.prod(int(s) for s in size)) if size else 1


@dataclass
class Record:
    program_key: str
    program: str  # the kernel's name
    filename: str
    device: str  # platform | device | driver | compute units (without them: written before keys had them)
    size: Optional[list[int]]  # width, height[, depth]; None: a fixed grid
    configuration: dict
    seconds: Optional[float]
    naive_seconds: Optional[float]
    date: str
    path: Path

    def as_json(self) -> dict:
        return {"program_key": self.program_key, "program": self.program, "filename": self.filename,
                "device": self.device, "size": self.size, "configuration": self.configuration,
                "seconds": self.seconds, "naive_seconds": self.naive_seconds, "date": self.date,
                "file": str(self.path)}


def _file(key: str, device_key: str) -> Path:
    return registry_dir() / key / f"{_hash(device_key)}.json"


def read_record_file(path: Path, format: int = FORMAT) -> Optional[dict]:
    """A registry file's content, or None where it is missing, unreadable or of another format
    (a file of another imagecl version is ignored, never changed)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("format") != format or not isinstance(data.get("records"), dict):
        return None
    return data


_read = read_record_file


@dataclass
class Outcome:
    kept: bool  # False: a faster record of that size was there and stays
    path: Path
    previous_seconds: Optional[float] = None


def record(program, device, config: dict, problem_shape: Optional[tuple] = None,
           seconds: Optional[float] = None, naive_seconds: Optional[float] = None) -> Outcome:
    """Record `config` for `program` on `device` at `problem_shape` (NumPy order), unless a record
    at that size is already at least as fast (both were timed on the same device, driver and size)."""
    from .runtime.devices import device_key

    key = program_key(program.info.unit)
    dkey = device_key(device)
    path = _file(key, dkey)
    data = _read(path) or {"format": FORMAT, "program_key": key, "device": dkey, "records": {}}
    data["program"], data["filename"] = program.name, program.filename
    size = None if problem_shape is None else [int(s) for s in reversed(problem_shape)]
    skey = size_key(size)
    old = data["records"].get(skey)
    old_seconds = old.get("seconds") if isinstance(old, dict) else None
    if isinstance(old_seconds, (int, float)) and (seconds is None or old_seconds <= seconds):
        return Outcome(False, path, old_seconds)
    data["records"][skey] = {"size": size, "configuration": dict(config), "seconds": seconds,
                             "naive_seconds": naive_seconds,
                             "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=1) + "\n")
    return Outcome(True, path, old_seconds)


def has_records(program) -> bool:
    """Whether any device has a record of `program` (cheap: no device is opened)."""
    folder = registry_dir() / program_key(program.info.unit)
    return folder.is_dir() and any(folder.glob("*.json"))


@functools.lru_cache(maxsize=64)  # a device's description is fixed for the process
def _device_keys_of(device) -> tuple[str, str]:
    """The device's key, then the key its records had before keys had the size (read, not written)."""
    from .runtime.devices import device_key, legacy_device_key

    return device_key(device), legacy_device_key(device)


def stamp(program, device) -> tuple:
    """What changes whenever the record lookup() would read for `program` on `device` changes
    (its path, and its file's modification time, size and inode): a key for caching lookups."""
    base, key = _registry_base(), program_key(program.info.unit)
    paths = [_record_path(base, key, dkey) for dkey in _device_keys_of(device)]
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        return (path, st.st_mtime_ns, st.st_size, st.st_ino)
    return (paths[0], None)


@functools.lru_cache(maxsize=256)  # stamp() runs at every prog(...) call: no pathlib, no hashing there
def _record_path(base: str, key: str, device_key: str) -> str:
    return str(Path(base) / key / f"{_hash(device_key)}.json")


@dataclass
class Found:
    configuration: dict
    size: Optional[list[int]]  # the recorded size used
    exact: bool


def lookup(program, device, size: Optional[tuple[int, ...]] = None) -> Optional[Found]:
    """The record for `size` (width, height[, depth]); else the nearest recorded size (by the ratio
    of pixel counts, on a log scale); with no size, the largest recorded one. None: nothing recorded.
    A device with no record under its key reads the one written before keys had its size."""
    data = None
    for dkey in _device_keys_of(device):
        data = _read(_file(program_key(program.info.unit), dkey))
        if data is not None:
            break
    if data is None:
        return None
    entries = [e for e in data["records"].values()
               if isinstance(e, dict) and isinstance(e.get("configuration"), dict)]
    if not entries:
        return None
    if size is None:
        best = max(entries, key=lambda e: _pixels(e.get("size") or []))
        return Found(best["configuration"], best.get("size"), False)
    size = [int(s) for s in size]
    for e in entries:
        if e.get("size") == size or (e.get("size") is None and not size):
            return Found(e["configuration"], e.get("size"), True)
    want = math.log(_pixels(size))
    best = min(entries, key=lambda e: (abs(math.log(_pixels(e.get("size") or [])) - want),
                                       -_pixels(e.get("size") or [])))
    return Found(best["configuration"], best.get("size"), False)


def records() -> Iterator[Record]:
    """Every record in the registry, in a stable order."""
    root = registry_dir()
    if not root.is_dir():
        return
    for path in sorted(root.glob("*/*.json")):
        data = _read(path)
        if data is None:
            continue
        for skey in sorted(data["records"]):
            e = data["records"][skey]
            if not isinstance(e, dict):
                continue
            yield Record(str(data.get("program_key", path.parent.name)), str(data.get("program", "?")),
                         str(data.get("filename", "?")), str(data.get("device", "?")), e.get("size"),
                         e.get("configuration") or {}, e.get("seconds"), e.get("naive_seconds"),
                         str(e.get("date", "")), path)


def remove(program: str, device: Optional[str] = None, size: Optional[list[int]] = None) -> list[Record]:
    """Remove the records of `program` (a kernel name or a program key, or its prefix), optionally
    only on devices whose description contains `device` and only at `size`. Returns what went."""
    gone: list[Record] = []
    by_file: dict[Path, list[Record]] = {}
    for r in records():
        if program not in (r.program, r.filename) and not r.program_key.startswith(program):
            continue
        if device is not None and device.lower() not in r.device.lower():
            continue
        if size is not None and r.size != size:
            continue
        by_file.setdefault(r.path, []).append(r)
    root = registry_dir().resolve()
    for path, doomed in by_file.items():
        if root not in path.resolve().parents:
            continue  # never change a file outside the registry (a link out of it, say)
        data = _read(path)
        if data is None:
            continue
        for r in doomed:
            data["records"].pop(size_key(r.size), None)
            gone.append(r)
        if data["records"]:
            write_atomic(path, json.dumps(data, indent=1) + "\n")
        else:
            path.unlink()
            try:
                path.parent.rmdir()
            except OSError:
                pass  # other devices' files remain there
    return gone


__all__ = ["registry_dir", "program_key", "record", "lookup", "stamp", "records", "remove", "Record", "Found", "Outcome"]
