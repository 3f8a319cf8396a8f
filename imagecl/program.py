"""A compiled ImageCL program: the checked IR, its OpenCL variants, and running it."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from .codegen.naive import generate, kernel_args
from .errors import ConfigError, suggestion_suffix
from .frontend.parser import parse
from .passes.semantic import ProgramInfo, analyse
from .runtime import launcher
from .runtime.arguments import prepare
from .runtime.devices import select_device


class Program:
    """One `.icl` kernel, checked and ready to run on any OpenCL device.

    `prog(**arrays_and_scalars)` runs it and returns every written array as a NumPy array.
    """

    def __init__(self, info: ProgramInfo) -> None:
        self.info = info

    # ---- description ---------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.info.kernel.name

    @property
    def filename(self) -> str:
        return self.info.filename

    @property
    def parameters(self) -> list[str]:
        return [p.name for p in self.info.params]

    @property
    def outputs(self) -> list[str]:
        return self.info.outputs

    def __repr__(self) -> str:
        return f"<imagecl.Program '{self.name}' from {self.filename}: outputs {', '.join(self.outputs)}>"

    # ---- configurations ----------------------------------------------------------------
    def check_config(self, config: Optional[Mapping[str, Any]]) -> dict[str, int]:
        """Validate a configuration; returns the tunable values it selects."""
        if config is None:
            return {}
        if not isinstance(config, Mapping):
            raise ConfigError(f"a configuration is a dict of parameter values, not {type(config).__name__}")
        chosen: dict[str, int] = {}
        for key, value in config.items():
            if key not in self.info.tunables:
                raise ConfigError(f"'{key}' is not a tuning parameter of '{self.name}'"
                                  + suggestion_suffix(str(key), self.info.tunables))
            allowed = self.info.tunables[key]
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) not in allowed:
                raise ConfigError(f"tuning parameter '{key}' must be one of {allowed}, got {value!r}")
            chosen[key] = int(value)
        return chosen

    def opencl_source(self, config: Optional[Mapping[str, Any]] = None) -> str:
        """The OpenCL C source of the variant selected by `config` (None: the naive variant)."""
        tunables = self.check_config(config)
        lines = [f"{k} = {v}" for k, v in sorted(tunables.items())]
        return generate(self.info, tunable_values=tunables, config_lines=lines)

    # ---- running ----------------------------------------------------------------------
    def __call__(self, device: Any = None, config: Optional[Mapping[str, Any]] = None,
                 **arguments: Any) -> dict[str, np.ndarray]:
        outputs, _ = self.run(arguments, device=device, config=config)
        return outputs

    def run(self, arguments: Mapping[str, Any], device: Any = None,
            config: Optional[Mapping[str, Any]] = None) -> tuple[dict[str, np.ndarray], float]:
        """Run once; returns the written arrays and the kernel's time in seconds (profiling events)."""
        source = self.opencl_source(config)
        prepared = prepare(self.info, dict(arguments))
        cl_device = select_device(device)
        program = launcher.build(cl_device, source)
        values, buffers = self._kernel_values(prepared)
        global_size = tuple(reversed(prepared.grid_shape))
        return launcher.run_kernel(cl_device, program, self.name, values, global_size, None, prepared,
                                   buffers, prepared.outputs)

    def _kernel_values(self, prepared) -> tuple[list, list[str]]:
        values: list = []
        buffers: list[str] = []
        for arg in kernel_args(self.info):
            if arg.role == "buffer":
                values.append(("buffer", arg.name))
                buffers.append(arg.name)
            elif arg.role == "extent":
                shape = prepared.arrays[arg.param].shape
                dims = self.info.arrays[arg.param].dims
                values.append(np.int32(shape[dims - 1 - arg.axis]))
            elif arg.role == "length":
                values.append(np.int32(prepared.arrays[arg.param].shape[0]))
            else:
                values.append(prepared.scalars[arg.param])
        return values, buffers


def compile(source: str, filename: str = "<string>") -> Program:  # noqa: A001 - the API's name
    """Check an ImageCL program given as text; raises CompileError if it is not valid."""
    unit = parse(source, filename)
    return Program(analyse(unit))


def load(path: str | Path) -> Program:
    """Read and check a `.icl` file."""
    from .errors import ImageCLError

    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise ImageCLError(f"{p}: no such file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise ImageCLError(f"{p}: cannot read the program ({exc.__class__.__name__}: {exc})") from None
    return compile(text, str(path))
