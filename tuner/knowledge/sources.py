"""Where tuning knowledge comes from: results stores, the features of their devices and the
sources of their programs.

A store holds measurements keyed by a program's hash and a device's name, but neither the
program nor the device's features, which the models need. A knowledge folder keeps the three
together (benchmarks/results/knowledge is one):

- results stores: `*.db` and `*.db.gz` (SQLite, as `imagecl measure` and `imagecl tune` write);
- device features: `features*.json`, each what `imagecl features FILE` printed on that device;
- program sources: `programs/*.icl` and `*.icl`, matched to the records by their source's hash.

A store given by its file name takes the sidecars of its folder. Records whose program or device
is not known are left out (counted, not an error).
"""
from __future__ import annotations

import gzip
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Union

from imagecl.errors import ArgumentError
from imagecl.features import DeviceFeatures

from ..store import Record, Store, StoreError, text_hash
from .dataset import Devices, device_from_json, device_of

STORE_SUFFIXES = (".db", ".db.gz")


class KnowledgeError(ArgumentError):
    """A knowledge source that cannot be read: a missing path, a file that is no results store,
    a features file that is not `imagecl features` output."""


@dataclass
class Knowledge:
    """Records with the programs (by program_hash) and device features (by device name, or name
    and compute units: `device_of`) they need."""

    records: list[Record] = field(default_factory=list)
    programs: dict[str, Any] = field(default_factory=dict)
    devices: dict[Union[str, tuple[str, int]], DeviceFeatures] = field(default_factory=dict)
    synthetic: set[str] = field(default_factory=set)  # hashes of programs from files named syn*
    stores: list[str] = field(default_factory=list)

    def usable(self) -> list[Record]:
        """The records whose program and device are known."""
        return [r for r in self.records
                if r.program_hash in self.programs and device_of(r, self.devices) is not None]

    def add(self, other: "Knowledge") -> None:
        self.records += other.records
        self.programs.update(other.programs)
        self.devices.update(other.devices)
        self.synthetic |= other.synthetic
        self.stores += other.stores


def _is_store(path: Path) -> bool:
    return path.is_file() and any(path.name.endswith(s) for s in STORE_SUFFIXES)


def read_records(path: Path) -> list[Record]:
    """Every record of the store at `path` (a .db.gz is read from a decompressed copy)."""
    try:
        if path.name.endswith(".gz"):
            with tempfile.TemporaryDirectory(prefix="imagecl-knowledge-") as tmp:
                plain = Path(tmp) / path.name[:-3]
                with gzip.open(path) as src, open(plain, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                with Store(plain, readonly=True) as store:
                    return list(store.records())
        with Store(path, readonly=True) as store:
            return list(store.records())
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise KnowledgeError(f"{path}: cannot read it as a results store ({exc})") from None
    except StoreError as exc:
        raise KnowledgeError(str(exc)) from None


def read_device_features(path: Path) -> DeviceFeatures:
    """The device of an `imagecl features` JSON file (text before the JSON, a warning pyopencl
    printed, is skipped)."""
    try:
        text = path.read_text()
        data = json.loads(text[text.index("{"):])
        device = data["device"]
        if not isinstance(device, dict) or not isinstance(device.get("name"), str):
            raise ValueError("no device object with a name")
        return device_from_json(device)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise KnowledgeError(f"{path}: not the output of 'imagecl features' with a device ({exc})") from None


def compile_programs(paths: Iterable[Path], wanted: Optional[set[str]] = None) -> tuple[dict[str, Any], set[str]]:
    """Programs of the .icl files at `paths` by source hash (only those in `wanted`, where given:
    files whose hash no record names are not compiled); and the hashes of those named syn*.
    A file that does not compile is skipped: it cannot be what a record measured."""
    import imagecl
    from imagecl.errors import ImageCLError

    programs, synthetic = {}, set()
    for path in paths:
        try:
            source = path.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        h = text_hash(source)
        if h in programs or (wanted is not None and h not in wanted):
            continue
        try:
            programs[h] = imagecl.compile(source, filename=str(path))
        except ImageCLError:
            continue
        if path.name.startswith("syn"):
            synthetic.add(h)
    return programs, synthetic


def _sidecars(folder: Path) -> tuple[list[Path], list[Path]]:
    features = sorted(folder.glob("features*.json"))
    programs = sorted(folder.glob("*.icl")) + sorted((folder / "programs").glob("*.icl"))
    return features, programs


def check_sources(paths: Iterable[Union[str, Path]]) -> None:
    """Raises KnowledgeError for a path that cannot be a knowledge source (before any work is
    done; `load_source` reads them)."""
    for path in map(Path, paths):
        if not path.exists():
            raise KnowledgeError(f"{path}: no such file or folder")
        if not path.is_dir() and not _is_store(path):
            raise KnowledgeError(f"{path}: a knowledge source is a results store (*.db, *.db.gz) or a folder of them")


def load_source(path: Union[str, Path]) -> Knowledge:
    """The knowledge of a folder (every store in it) or of one store file (with its folder's
    features and programs)."""
    path = Path(path)
    if path.is_dir():
        stores = sorted(p for p in path.iterdir() if _is_store(p))
        folder = path
        if not stores:
            raise KnowledgeError(f"{path}: no results store (*.db, *.db.gz) in this folder")
    elif _is_store(path):
        stores, folder = [path], path.parent
    elif path.exists():
        raise KnowledgeError(f"{path}: a knowledge source is a results store (*.db, *.db.gz) or a folder of them")
    else:
        raise KnowledgeError(f"{path}: no such file or folder")
    out = Knowledge(stores=[str(s) for s in stores])
    for store in stores:
        out.records += read_records(store)
    features, sources = _sidecars(folder)
    for f in features:
        device = read_device_features(f)
        out.devices[device.name] = device
    out.programs, out.synthetic = compile_programs(sources, {r.program_hash for r in out.records})
    return out


def gather(sources: Iterable[Union[str, Path]], local: Optional[Store] = None,
           programs: Mapping[str, Any] = {}, devices: Devices = {},
           program_files: Iterable[Path] = ()) -> Knowledge:
    """Knowledge from the `sources` (folders or store files, `load_source`), the records of
    the `local` store, and the given programs (by hash), devices (`device_of`) and .icl files
    (those whose hash some record names)."""
    out = Knowledge()
    for source in sources:
        out.add(load_source(source))
    if local is not None:
        out.records += list(local.records())
        out.stores.append(local.name or "local store")
    out.programs.update(programs)
    out.devices.update(devices)
    wanted = {r.program_hash for r in out.records} - set(out.programs)
    more, synthetic = compile_programs(program_files, wanted)
    out.programs.update(more)
    out.synthetic |= synthetic
    return out
