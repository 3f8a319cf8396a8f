"""OpenCL device discovery and selection (by index, by name fragment, or IMAGECL_DEVICE)."""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Optional, Union

from ..errors import DeviceError

DeviceSpec = Union[None, int, str, "object"]


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    platform: str
    name: str
    kind: str  # 'GPU', 'CPU', 'ACCELERATOR', ...
    driver: str
    compute_units: int
    global_memory: int
    local_memory: int
    max_work_group_size: int
    image_support: bool

    def describe(self) -> str:
        return (f"[{self.index}] {self.name} ({self.kind}, {self.platform}, driver {self.driver}, "
                f"{self.compute_units} compute units, {self.global_memory // 2**20} MiB)")


def _cl():
    try:
        import pyopencl as cl
    except ImportError as exc:  # pragma: no cover - pyopencl is a dependency
        raise DeviceError(f"pyopencl is not installed ({exc})") from None
    return cl


@functools.lru_cache(maxsize=1)
def _all_devices() -> tuple:
    cl = _cl()
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        raise DeviceError(
            "no OpenCL platform found; install an OpenCL driver (on Debian: apt-get install pocl-opencl-icd)"
            f" [{exc}]"
        ) from None
    devices = []
    for platform in platforms:
        try:
            devices.extend(platform.get_devices())
        except cl.Error:
            continue  # a platform with no usable device
    if not devices:
        raise DeviceError("no OpenCL device found; install an OpenCL driver (on Debian: pocl-opencl-icd)")
    return tuple(devices)


def _kind(device) -> str:
    cl = _cl()
    t = device.type
    for flag, name in ((cl.device_type.GPU, "GPU"), (cl.device_type.CPU, "CPU"),
                       (cl.device_type.ACCELERATOR, "ACCELERATOR")):
        if t & flag:
            return name
    return "OTHER"


def describe(device, index: int = -1) -> DeviceInfo:
    return DeviceInfo(
        index=index,
        platform=device.platform.name.strip(),
        name=device.name.strip(),
        kind=_kind(device),
        driver=device.driver_version.strip(),
        compute_units=device.max_compute_units,
        global_memory=device.global_mem_size,
        local_memory=device.local_mem_size,
        max_work_group_size=device.max_work_group_size,
        image_support=bool(device.image_support),
    )


def list_devices() -> list[DeviceInfo]:
    return [describe(d, i) for i, d in enumerate(_all_devices())]


def select_device(spec: DeviceSpec = None):
    """The pyopencl Device for `spec`: None (IMAGECL_DEVICE, else the first GPU, else the first
    device), an index into list_devices(), a case-insensitive name fragment, or a Device."""
    devices = _all_devices()
    if spec is None:
        spec = os.environ.get("IMAGECL_DEVICE") or None
        if spec is None:
            gpus = [d for d in devices if _kind(d) == "GPU"]
            return gpus[0] if gpus else devices[0]
    cl = _cl()
    if isinstance(spec, cl.Device):
        return spec
    if isinstance(spec, str) and spec.strip().lstrip("-").isdigit():
        spec = int(spec)
    if isinstance(spec, int) and not isinstance(spec, bool):
        if not 0 <= spec < len(devices):
            raise DeviceError(f"device index {spec} is out of range: there are {len(devices)} devices\n"
                              + _listing())
        return devices[spec]
    if isinstance(spec, str):
        matches = matching_devices(spec)
        if not matches:
            raise DeviceError(f"no OpenCL device matches '{spec}'\n" + _listing())
        return matches[0]
    raise DeviceError(f"a device is chosen by index or name fragment, not {type(spec).__name__}")


def matching_devices(fragment: str) -> list:
    """Every device whose platform and name contain `fragment` (case-insensitive), or whose kind
    ("GPU", "CPU", ...) it is, in list_devices() order."""
    wanted = fragment.strip().lower()
    return [d for d in _all_devices() if wanted in f"{d.platform.name} {d.name}".lower() or wanted == _kind(d).lower()]


def _listing() -> str:
    return "available devices:\n" + "\n".join("  " + d.describe() for d in list_devices())


@functools.lru_cache(maxsize=None)
def context_and_queue(device):
    """One context and one in-order profiling queue per device, shared by every program."""
    cl = _cl()
    context = cl.Context([device])
    queue = cl.CommandQueue(context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    return context, queue


def device_key(device) -> str:
    """A stable description of a device, its driver and its size, for caches and records: a name
    and a driver do not tell a device's size (PoCL names a 16- and a 32-core Xeon VM alike, a MIG
    slice is named as its whole GPU), and what was tuned or fitted for one is not the other's."""
    return f"{legacy_device_key(device)} | {int(device.max_compute_units)} compute units"


def legacy_device_key(device) -> str:
    """The key records were written under before keys had the size (platform, name, driver): read
    where a device has no record under its own key (tuned.py, splits.py), never written."""
    return f"{device.platform.name.strip()} | {device.name.strip()} | {device.driver_version.strip()}"


def preferred_device_name(device: Optional[object]) -> str:
    return device.name.strip() if device is not None else ""
