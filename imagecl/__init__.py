"""imagecl: write an image filter once in ImageCL, run it fast on every OpenCL device."""
from __future__ import annotations

__version__ = "0.1.0"

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

__all__ = [
    "ArgumentError", "BuildError", "CompileError", "ConfigError", "DeviceError", "ExecutionError",
    "ImageCLError", "Program", "compile", "load", "list_devices", "select_device", "__version__",
]
