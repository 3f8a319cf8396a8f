"""Features of an OpenCL device: what it reports, plus a copy bandwidth and a peak arithmetic
rate measured once per device and cached.

The cache is one JSON file next to the build cache (`$IMAGECL_CACHE`, else
`$XDG_CACHE_HOME/imagecl` or `~/.cache/imagecl`), keyed by platform, device name, driver version
and compute units (a home folder shared by a 16- and a 32-core VM whose PoCL devices have one
name must not give one the other's rates); it is written atomically, and a damaged file or entry
is ignored and measured again.
"""
from __future__ import annotations

import json
import math
import os
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..errors import DeviceError
from ..runtime.devices import _kind, context_and_queue, device_key

CACHE_FILE = "device_features.json"
# bump when the measurement changes, so that numbers measured the old way are measured again
MEASUREMENT_VERSION = 1
VENDORS = ("nvidia", "amd", "intel", "arm", "apple")

_KERNELS = r"""
__kernel void copy(__global const float4 *src, __global float4 *dst) {
    size_t i = get_global_id(0);
    dst[i] = src[i];
}

/* CHAINS independent multiply-add chains per work-item, enough to hide the latency of one, of
   the device's preferred vector width VT (a CPU's SIMD lanes; 1 on GPUs, which run lanes as
   work-items) */
__kernel void madd(__global VT *out, float b, float c, int n) {
    VT a0 = (VT)((float)get_global_id(0) * 1e-7f);
    VT a1 = a0 + 0.1f, a2 = a0 + 0.2f, a3 = a0 + 0.3f, a4 = a0 + 0.4f, a5 = a0 + 0.5f,
          a6 = a0 + 0.6f, a7 = a0 + 0.7f;
    for (int i = 0; i < n; i++) {
        a0 = mad(a0, b, c); a1 = mad(a1, b, c); a2 = mad(a2, b, c); a3 = mad(a3, b, c);
        a4 = mad(a4, b, c); a5 = mad(a5, b, c); a6 = mad(a6, b, c); a7 = mad(a7, b, c);
    }
    out[get_global_id(0)] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
"""
CHAINS = 8


@dataclass
class DeviceFeatures:
    key: str  # platform | name | driver | compute units: what the measurements are cached under
    name: str
    vendor: str
    platform: str
    driver: str
    version: str
    type: str  # 'GPU', 'CPU', 'ACCELERATOR', 'OTHER'
    compute_units: int
    max_clock_mhz: int
    global_mem_bytes: int
    global_mem_cache_bytes: int
    max_mem_alloc_bytes: int
    local_mem_bytes: int
    local_mem_dedicated: bool  # CL_LOCAL: on-chip local memory (not emulated in global memory)
    max_constant_buffer_bytes: int
    max_work_group_size: int
    max_work_item_sizes: list[int]
    image_support: bool
    preferred_vector_widths: dict[str, int]  # char, short, int, long, float, double
    copy_bandwidth_gbs: Optional[float] = None  # GB/s read + written by a copy kernel; None: not measured
    peak_gflops: Optional[float] = None  # GFLOP/s of independent float multiply-adds (2 per mad)

    @staticmethod
    def names() -> list[str]:
        """The names of `to_vector`'s entries, the same for every device."""
        return list(_NAMES)

    def summary(self) -> dict[str, float]:
        vendor = self.vendor.lower()
        known = [v for v in VENDORS if v in vendor or v in self.name.lower()]
        out = {
            "is_gpu": float(self.type == "GPU"),
            "is_cpu": float(self.type == "CPU"),
            "is_accelerator": float(self.type == "ACCELERATOR"),
            **{f"vendor_{v}": float(v in known) for v in VENDORS},
            "vendor_other": float(not known),
            "is_pocl": float("pocl" in f"{self.version} {self.driver}".lower()
                             or "portable computing language" in self.platform.lower()),
            "compute_units": self.compute_units,
            "max_clock_mhz": self.max_clock_mhz,
            "global_mem_gib": self.global_mem_bytes / 2**30,
            "global_mem_cache_kib": self.global_mem_cache_bytes / 2**10,
            "local_mem_kib": self.local_mem_bytes / 2**10,
            "local_mem_dedicated": float(self.local_mem_dedicated),
            "max_constant_buffer_kib": self.max_constant_buffer_bytes / 2**10,
            "max_work_group_size": self.max_work_group_size,
            **{f"max_work_item_size_{a}": float(s) for a, s in zip("xyz", (self.max_work_item_sizes + [1, 1, 1])[:3])},
            "image_support": float(self.image_support),
            **{f"preferred_vector_width_{t}": self.preferred_vector_widths.get(t, 0) for t in _VECTOR_TYPES},
            "copy_bandwidth_gbs": math.nan if self.copy_bandwidth_gbs is None else self.copy_bandwidth_gbs,
            "peak_gflops": math.nan if self.peak_gflops is None else self.peak_gflops,
        }
        return {k: float(v) for k, v in out.items()}

    def to_vector(self) -> np.ndarray:
        """The summary as numbers in `names()` order; NaN where nothing was measured."""
        summary = self.summary()
        return np.array([summary[n] for n in _NAMES], dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["summary"] = {k: (None if math.isnan(v) else v) for k, v in self.summary().items()}
        return data


_VECTOR_TYPES = ("char", "short", "int", "long", "float", "double")


def query(device) -> DeviceFeatures:
    """What `device` (a pyopencl Device) reports about itself."""
    import pyopencl as cl

    def info(name: str, default: Any = 0) -> Any:
        try:
            return getattr(device, name)
        except (cl.Error, AttributeError):  # a query the driver does not answer
            return default

    return DeviceFeatures(
        key=device_key(device),
        name=device.name.strip(),
        vendor=str(info("vendor", "")).strip(),
        platform=device.platform.name.strip(),
        driver=device.driver_version.strip(),
        version=str(info("version", "")).strip(),
        type=_kind(device),
        compute_units=int(info("max_compute_units")),
        max_clock_mhz=int(info("max_clock_frequency")),
        global_mem_bytes=int(info("global_mem_size")),
        global_mem_cache_bytes=int(info("global_mem_cache_size")),
        max_mem_alloc_bytes=int(info("max_mem_alloc_size")),
        local_mem_bytes=int(info("local_mem_size")),
        local_mem_dedicated=info("local_mem_type", None) == cl.device_local_mem_type.LOCAL,
        max_constant_buffer_bytes=int(info("max_constant_buffer_size")),
        max_work_group_size=int(info("max_work_group_size")),
        max_work_item_sizes=[int(s) for s in info("max_work_item_sizes", [])],
        image_support=bool(info("image_support", False)),
        preferred_vector_widths={t: int(info(f"preferred_vector_width_{t}")) for t in _VECTOR_TYPES},
    )


def device_features(device, measure: bool = True, cache_dir: Optional[Path] = None) -> DeviceFeatures:
    """The features of `device` (a pyopencl Device). With `measure`, the copy bandwidth and peak
    arithmetic rate come from the cache, or are measured (about a second on PoCL) and cached."""
    features = query(device)
    if not measure:
        return features
    path = Path(cache_dir) if cache_dir is not None else default_cache_path()
    cached = _read_cache(path).get(features.key)
    if cached is None:
        cached = measure_device(device)
        _write_entry(path, features.key, cached)
    features.copy_bandwidth_gbs = cached["copy_bandwidth_gbs"]
    features.peak_gflops = cached["peak_gflops"]
    return features


def default_cache_path() -> Path:
    from ..tuner.buildcache import default_cache_dir

    return default_cache_dir().parent / CACHE_FILE


def _valid_entry(entry: Any) -> bool:
    if not isinstance(entry, dict) or entry.get("version") != MEASUREMENT_VERSION:
        return False
    values = [entry.get("copy_bandwidth_gbs"), entry.get("peak_gflops")]
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
               for v in values)


def _read_cache(path: Path) -> dict[str, dict]:
    """The cache's valid entries; a missing, unreadable or damaged file holds none."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if _valid_entry(v)}


def _write_entry(path: Path, key: str, entry: dict) -> None:
    """Adds `entry` under `key`, atomically: a reader sees the old file or the new one. A cache
    that cannot be written costs a measurement next time, nothing else."""
    data = _read_cache(path)
    data[key] = entry
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass


def measure_device(device, repeats: int = 5) -> dict[str, Any]:
    """Copy bandwidth and peak multiply-add rate of `device`: the median of `repeats` timed
    launches each, sized to a few milliseconds to a few tens of milliseconds per launch."""
    import pyopencl as cl

    context, queue = context_and_queue(device)
    try:
        program = cl.Program(context, _KERNELS).build(options=["-cl-mad-enable", f"-DVT={_vector_type(device)}"])
    except cl.Error as exc:
        raise DeviceError(f"cannot build the measurement kernels on {device.name.strip()}: {exc}") from None
    try:
        bandwidth = _bandwidth(device, context, queue, program, repeats)
        peak = _peak(device, context, queue, program, repeats)
    except cl.Error as exc:  # out of resources on a small device, say
        raise DeviceError(f"measuring {device.name.strip()} failed ({exc}); --no-measure (measure=False) "
                          "leaves the measurements out") from None
    return {
        "version": MEASUREMENT_VERSION,
        "copy_bandwidth_gbs": bandwidth,
        "peak_gflops": peak,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _lanes(device) -> int:
    width = int(device.preferred_vector_width_float or 1)
    return width if width in (1, 2, 4, 8, 16) else 1


def _vector_type(device) -> str:
    return "float" if _lanes(device) == 1 else f"float{_lanes(device)}"


def _timed(queue, launch) -> float:
    event = launch()
    event.wait()
    return (event.profile.end - event.profile.start) * 1e-9


def _bandwidth(device, context, queue, program, repeats: int) -> float:
    import pyopencl as cl

    size = (64 if _kind(device) == "GPU" else 16) * 2**20
    size = min(size, int(device.max_mem_alloc_size) // 2) // 16 * 16
    src = cl.Buffer(context, cl.mem_flags.READ_ONLY, size)
    dst = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, size)
    try:
        cl.enqueue_fill_buffer(queue, src, np.float32(1), 0, size).wait()
        kernel = cl.Kernel(program, "copy")
        kernel.set_args(src, dst)
        launch = lambda: cl.enqueue_nd_range_kernel(queue, kernel, (size // 16,), None)  # noqa: E731
        _timed(queue, launch)  # the first launch pays for page faults and lazy allocation
        seconds = statistics.median(_timed(queue, launch) for _ in range(repeats))
    finally:
        src.release()
        dst.release()
    return 2 * size / seconds / 1e9


def _peak(device, context, queue, program, repeats: int) -> float:
    import pyopencl as cl

    items = int(device.max_compute_units) * (4096 if _kind(device) == "GPU" else 1024)
    lanes = _lanes(device)
    out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, items * 4 * lanes)
    try:
        kernel = cl.Kernel(program, "madd")
        n = 16
        while True:  # grow the loop until one launch takes long enough to time well
            kernel.set_args(out, np.float32(0.999), np.float32(1e-3), np.int32(n))
            launch = lambda: cl.enqueue_nd_range_kernel(queue, kernel, (items,), None)  # noqa: E731
            seconds = _timed(queue, launch)
            if seconds > 5e-3 or n >= 1 << 20:
                break
            n *= 4
        seconds = statistics.median(_timed(queue, launch) for _ in range(repeats))
    finally:
        out.release()
    return 2 * CHAINS * lanes * n * items / seconds / 1e9


def _names() -> tuple[str, ...]:
    blank = DeviceFeatures("", "", "", "", "", "", "", 0, 0, 0, 0, 0, 0, False, 0, 0, [], False, {})
    return tuple(blank.summary())


_NAMES = _names()
