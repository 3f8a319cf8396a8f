"""Which OpenCL devices play the CPU and the GPUs of a wavefront split.

By default the CPU is the first CPU device and the GPUs are every GPU device; on a machine
without a GPU (CI, PoCL only) the devices other than the CPU stand in for GPUs, so that
`POCL_DEVICES="pthread pthread"` gives one CPU and one "GPU"; with a single device it plays both.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from ..runtime.devices import _all_devices, _kind, matching_devices, select_device


@dataclass(frozen=True)
class Devices:
    cpu: Any  # pyopencl.Device
    gpus: tuple  # pyopencl.Devices, in order of use

    def describe(self) -> str:
        gpus = ", ".join(g.name.strip() for g in self.gpus) or "none"
        return f"CPU {self.cpu.name.strip()}; GPUs {gpus}"


def wavefront_devices(cpu: Any = None, gpus: Optional[Sequence[Any]] = None) -> Devices:
    """`cpu` and `gpus` as select_device takes them (index, name fragment or Device); a name
    fragment in `gpus` takes every device it matches (e.g. "nvidia": all NVIDIA GPUs)."""
    devices = _all_devices()
    if cpu is None:
        cpus = [d for d in devices if _kind(d) == "CPU"]
        cpu_device = cpus[0] if cpus else devices[0]
    else:
        cpu_device = select_device(cpu)
    if gpus is None:
        chosen = [d for d in devices if _kind(d) == "GPU"]
        if not chosen:
            chosen = [d for d in devices if d.int_ptr != cpu_device.int_ptr] or [cpu_device]
    else:
        chosen = []
        for spec in gpus:
            if isinstance(spec, str) and not spec.strip().isdigit():
                chosen.extend(matching_devices(spec) or [select_device(spec)])  # select_device says what is missing
            else:
                chosen.append(select_device(spec))
    return Devices(cpu_device, tuple(chosen))
