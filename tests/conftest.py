"""Test-wide settings: tuned configurations and build caches of the user are not consulted."""
from __future__ import annotations

import os
import tempfile

_scratch = tempfile.mkdtemp(prefix="imagecl-tests-")
os.environ["IMAGECL_TUNED"] = os.path.join(_scratch, "tuned")
os.environ.setdefault("IMAGECL_CACHE", os.path.join(_scratch, "cache"))
