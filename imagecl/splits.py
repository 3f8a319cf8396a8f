"""Where `imagecl tune --devices` records a tuned split (which devices take part, each one's share
of the grid, and for iterated programs the halo depth h), so that `prog(..., devices=[...])`
without `shares=` uses it.

Beside the program's per-device records in the tuned registry (imagecl/tuned.py):
`<program key>/splits/<hash of the devices' keys>.json`, one record per problem size. The device
list is ordered as given: shares follow it.
"""
from __future__ import annotations

import datetime
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from .outputs import write_atomic
from .tuned import program_key, read_record_file, registry_dir, size_key

FORMAT = 1


@dataclass
class Split:
    shares: list[float]
    h: Optional[int]
    seconds: Optional[float]
    size: Optional[list[int]]
    exact: bool = True


def _devices_key(devices: Sequence, legacy: bool = False) -> str:
    """The devices' keys; `legacy`: as records were written before keys had the device's size."""
    from .runtime.devices import device_key, legacy_device_key

    return json.dumps([(legacy_device_key if legacy else device_key)(d) for d in devices])


def _file(program, devices: Sequence, legacy: bool = False) -> Path:
    digest = hashlib.sha256(_devices_key(devices, legacy).encode()).hexdigest()[:16]
    return registry_dir() / program_key(program.info.unit) / "splits" / f"{digest}.json"


def _read(path: Path) -> Optional[dict]:
    return read_record_file(path, FORMAT)


def record(program, devices: Sequence, size: Sequence[int], shares: Sequence[float], h: Optional[int] = None,
           seconds: Optional[float] = None) -> Path:
    """Record the split of `program` over `devices` at `size` (width, height[, depth])."""
    path = _file(program, devices)
    data = _read(path) or {"format": FORMAT, "devices": json.loads(_devices_key(devices)), "records": {}}
    data["program"] = program.name
    data["records"][size_key(size)] = {
        "size": [int(s) for s in size], "shares": [float(s) for s in shares], "h": h, "seconds": seconds,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=1) + "\n")
    return path


def lookup(program, devices: Sequence, size: Sequence[int]) -> Optional[Split]:
    """The split recorded at `size`, else at the nearest recorded size (by pixel count); None.
    Devices with no record under their keys read the one written before keys had their sizes."""
    import math

    data = _read(_file(program, devices)) or _read(_file(program, devices, legacy=True))
    if data is None:
        return None
    entries = [e for e in data["records"].values() if isinstance(e, dict) and isinstance(e.get("shares"), list)
               and len(e["shares"]) == len(devices)]
    if not entries:
        return None
    want = [int(s) for s in size]
    for e in entries:
        if e.get("size") == want:
            return Split(e["shares"], e.get("h"), e.get("seconds"), e.get("size"), True)
    pixels = max(1, math.prod(want))
    best = min(entries, key=lambda e: abs(math.log(max(1, math.prod(e.get("size") or [1])) / pixels)))
    return Split(best["shares"], best.get("h"), best.get("seconds"), best.get("size"), False)
