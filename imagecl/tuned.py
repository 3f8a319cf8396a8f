"""Where tuned configurations are recorded, per program and device, so that `imagecl.load()`
(and `prog(...)` without a config) picks them up.

The registry is a folder (`$IMAGECL_TUNED`, else `~/.cache/imagecl/tuned`) with one JSON file per
program source and device: `<source hash>/<device and driver hash>.json`.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Optional


def registry_dir() -> Path:
    base = os.environ.get("IMAGECL_TUNED") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "imagecl", "tuned")
    return Path(base)


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def entry_path(source: str, device) -> Path:
    from .runtime.devices import device_key

    return registry_dir() / _hash(source) / f"{_hash(device_key(device))}.json"


def record(source: str, device, config: dict, problem_shape: Optional[tuple] = None,
           seconds: Optional[float] = None) -> Path:
    from .runtime.devices import device_key

    path = entry_path(source, device)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"device": device_key(device), "configuration": config, "seconds": seconds,
            "problem_size": None if problem_shape is None else list(reversed(problem_shape))}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)
    return path


def lookup(source: str, device) -> Optional[dict[str, Any]]:
    try:
        data = json.loads(entry_path(source, device).read_text())
    except (OSError, ValueError):
        return None
    config = data.get("configuration")
    return config if isinstance(config, dict) else None
