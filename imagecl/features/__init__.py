"""Features of programs, devices, problem sizes and configurations, for models that carry
tuning knowledge from one program, device or size to another (`imagecl features`)."""
from __future__ import annotations

from typing import Any, Mapping, Optional

from ..errors import ArgumentError, ConfigError
from ..runtime.devices import select_device
from ..space import DeviceLimits
from .config import CONFIG_FIELDS, ConfigEncoding, encode_columns, encode_config, size_features, size_names
from .device import DeviceFeatures, device_features
from .program import BufferFeatures, ProgramFeatures, program_features

__all__ = ["CONFIG_FIELDS", "BufferFeatures", "ConfigEncoding", "DeviceFeatures", "ProgramFeatures",
           "collect", "device_features", "encode_columns", "encode_config", "features_of", "program_features",
           "size_features", "size_names"]


def features_of(program: Any, tunables: Optional[Mapping[str, int]] = None) -> ProgramFeatures:
    """The features of a compiled `imagecl.Program` with its tunables at `tunables` (default:
    each tunable's first value)."""
    values = {n: int(v[0]) for n, v in program.info.tunables.items()}
    for name, value in (tunables or {}).items():
        if name not in values:
            raise ConfigError(f"'{name}' is not a tunable of '{program.name}'")
        if value not in program.info.tunables[name]:
            raise ConfigError(f"tunable '{name}' must be one of {program.info.tunables[name]}, got {value!r}")
        values[name] = int(value)
    return program_features(program.info, program.analysis_for(values), program.space_for_limits(DeviceLimits()),
                            values)


def collect(program: Any, device: Any = None, shape_xyz: Optional[tuple[int, ...]] = None,
            config: Optional[Mapping[str, Any]] = None, measure: bool = True,
            with_device: bool = True) -> dict[str, Any]:
    """Everything `imagecl features` prints, as a JSON-ready dict: the program's features, the
    device's (`device`: index, name fragment or pyopencl Device), the problem size (x first; a
    program with a fixed `grid_size` has its own) and, with `config` (which needs the size), the
    configuration's encoding on that device."""
    fixed = tuple(program.info.grid_size) if program.info.grid_size else None
    if fixed is not None:  # grid_size(...): the program's size is its own
        if shape_xyz is not None and tuple(shape_xyz) != fixed:
            raise ArgumentError(f"'{program.name}' has a fixed grid of {'x'.join(map(str, fixed))} points "
                                f"(grid_size); give that size or none")
        shape_xyz = fixed
    if config is not None and shape_xyz is None:
        raise ArgumentError("a configuration is encoded for a problem size: give the size (--size) too")
    cl_device = select_device(device) if with_device or config is not None else None
    encoding, tunables = None, {}
    if config is not None:
        space = program.space_for_limits(DeviceLimits.of(cl_device), tuple(reversed(shape_xyz)))
        full = space.complete(config)  # a ConfigError says what is wrong with it
        tunables = {k: full[k] for k in program.info.tunables}
        encoding = encode_config(program, space, full, shape_xyz).to_dict()
    out: dict[str, Any] = {"program": features_of(program, tunables).to_dict()}
    if with_device:
        out["device"] = device_features(cl_device, measure=measure).to_dict()
    out["size"] = size_features(shape_xyz) if shape_xyz is not None else None
    if encoding is not None:
        out["config"] = encoding
    return out
