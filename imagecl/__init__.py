"""imagecl: write an image filter once in ImageCL, run it fast on every OpenCL device."""
from __future__ import annotations

__version__ = "0.1.0"

import os as _os

# Installed, tuner/ is the subpackage imagecl.tuner; in a source checkout (PYTHONPATH=repo) it
# sits beside this folder, so let the package look there too.
_checkout = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(_os.path.dirname(__file__), "tuner")) and _os.path.isfile(
        _os.path.join(_checkout, "tuner", "__init__.py")):
    __path__.append(_checkout)  # type: ignore[name-defined]

from .errors import (  # noqa: E402
    ArgumentError,
    BuildError,
    CompileError,
    ConfigError,
    DeviceError,
    ExecutionError,
    ImageCLError,
)
from .program import Program, compile, load  # noqa: E402
from .runtime.devices import list_devices, select_device  # noqa: E402



def __getattr__(name: str):
    # the hand-written-kernel tuner, imported on first use (it is not needed to run .icl programs)
    if name in ("TunableKernel", "Output", "InOut"):
        from .tuner import kernel

        return getattr(kernel, name)
    raise AttributeError(f"module 'imagecl' has no attribute '{name}'")


__all__ = [
    "TunableKernel", "Output", "InOut",
    "ArgumentError", "BuildError", "CompileError", "ConfigError", "DeviceError", "ExecutionError",
    "ImageCLError", "Program", "compile", "load", "list_devices", "select_device", "__version__",
]
