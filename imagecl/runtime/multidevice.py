"""One grid split into bands across several OpenCL devices at once, and iterated programs whose
output feeds their next step's input, with the data kept on the devices.

The grid is cut along its outermost axis (rows of a 2-D grid, z-slices of a 3-D one) into one band
per device. Every device holds full-size buffers, runs its own variant (the configuration
`prog(...)` would pick there) over its band only, through a global work offset, and only its band
of each output comes back. Of each input, a device receives the rows its band reads: the band
widened by the access analysis's footprint along the split axis (passes/footprint.py), mapped
through the image's boundary condition (a `wrap` image's first band reads the last rows), taken
from the whole image, so the result is a single-device run's. Where the footprint is not bounded
(data-dependent reads, an image of other dimensions, a fixed-size array) the whole array goes.

OpenCL's global offset shifts get_global_id but not get_group_id, which local-memory tiles and the
interior fast path use for their work-group's first grid point: each device's variant is generated
in banded form (VariantPlan.banded), which spells that point get_global_id - get_local_id, exact for
any offset.

Iterating (`iterate`): each device keeps ping-pong buffers; every `h` steps the bands exchange the
rows the next `h` steps read (through the host), and in between each device computes, redundantly,
the rows of its neighbours that its band's later steps need (the halo trade-off: fewer exchanges
for more computation). Step k of a round computes R_k, where R_last is the band and each earlier
R is the set of rows the next one reads; those rows (R_0 before the round) are what an exchange
provides.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, TypeVar

import numpy as np

from ..errors import ArgumentError, ExecutionError
from .devices import context_and_queue, select_device
from .host_pages import touch_pages
from .memory import Buffer, check_host

SHARE_TOLERANCE = 1e-6
T = TypeVar("T")


# ---- which programs split, and how ------------------------------------------------------------------


def check_splittable(info: Any) -> None:
    """ArgumentError unless every grid point writes only its own row of every written array, so
    that bands can be computed apart: written arrays are images of the grid, written at the grid
    index along the split axis."""
    from ..passes.races import grid_offset

    name = info.kernel.name
    if info.wavefront is not None:
        raise ArgumentError(f"'{name}' is a wavefront program: its split between devices is split=, not "
                            "devices=/shares=/iterate (docs/wavefront.md)")
    if not info.grid:
        raise ArgumentError(f"'{name}' runs over a fixed grid_size, not over its images: it cannot be split "
                            "across devices")
    axis_var = ("idx", "idy", "idz")[info.grid_dims - 1]
    for array in info.arrays.values():
        if not array.is_written:
            continue
        if array.kind != "image" or array.dims != info.grid_dims:
            raise ArgumentError(f"'{name}' writes '{array.name}', which is not an image of the grid's "
                                "dimensions: its writes cannot be split into bands across devices")
        for w in array.writes:
            form = grid_offset(w.indices[info.grid_dims - 1]) if len(w.indices) >= info.grid_dims else None
            if form != (axis_var, 0):
                raise ArgumentError(f"'{name}' writes '{array.name}' at line {w.pos.line} away from the grid "
                                    f"point's own {axis_var}: its writes cannot be split into bands across devices")


def resolve_devices(devices: Any) -> list:
    """The pyopencl Devices of `devices` (a list of indices, name fragments or Devices; a string is
    split at commas), each once."""
    if isinstance(devices, str):
        devices = [d for d in (s.strip() for s in devices.split(",")) if d]
    if not isinstance(devices, (list, tuple)) or not devices:
        raise ArgumentError("devices= takes a non-empty list of devices (indices, name fragments or "
                            f"pyopencl Devices), got {devices!r}")
    chosen = [select_device(d) for d in devices]
    for i, d in enumerate(chosen):
        if d in chosen[:i]:
            raise ArgumentError(f"devices= names '{d.name.strip()}' twice ({devices[chosen.index(d)]!r} and "
                                f"{devices[i]!r}); name devices by index where several have the same name "
                                "(imagecl devices lists them)")
    return chosen


def check_shares(shares: Any, count: int) -> list[float]:
    """Fractions of the grid per device: `count` non-negative numbers summing to 1."""
    try:
        values = [float(s) for s in shares]
    except (TypeError, ValueError):
        raise ArgumentError(f"shares= takes one fraction per device, got {shares!r}") from None
    if len(values) != count:
        raise ArgumentError(f"shares= has {len(values)} fractions for {count} devices")
    if any(not math.isfinite(v) or v < 0 for v in values):
        raise ArgumentError(f"shares= must be non-negative fractions, got {values}")
    if abs(sum(values) - 1.0) > SHARE_TOLERANCE:
        raise ArgumentError(f"shares= must sum to 1, got {values} (sum {sum(values):.6g})")
    return values


def split_rows(shares: Sequence[float], rows: int, granule: int = 1) -> list[tuple[int, int]]:
    """Bands [start, stop) of `rows` rows in proportion to `shares`, each boundary a multiple of
    `granule` (the last band ends at `rows`)."""
    bounds = [0]
    total = 0.0
    for s in shares[:-1]:
        total += s
        b = int(round(total * rows / granule)) * granule
        bounds.append(min(max(b, bounds[-1]), rows))
    bounds.append(rows)
    return list(zip(bounds[:-1], bounds[1:]))


def _boundary_rows(rows: np.ndarray, extent: int, mode: str) -> np.ndarray:
    """The rows a read at `rows` (any integers) touches under the image's boundary condition."""
    if mode == "clamped":
        return np.clip(rows, 0, extent - 1)
    if mode == "wrap":
        return np.mod(rows, extent)
    if mode == "mirror":
        if extent == 1:
            return np.zeros_like(rows)
        period = 2 * (extent - 1)
        r = np.mod(np.abs(rows), period)
        return np.where(r < extent, r, period - r)
    if mode == "reflect":
        period = 2 * extent
        r = np.mod(rows, period)
        return np.where(r < extent, r, period - 1 - r)
    return rows[(rows >= 0) & (rows < extent)]  # constant: outside reads the fill value, no row


@dataclass(frozen=True)
class Reach:
    """What one array's reads need along the split axis, from the grid point's row."""

    low: int  # rows before the grid point's
    high: int  # rows after
    mode: str  # the boundary condition
    whole: bool  # unbounded: the whole array


def reaches(program: Any) -> dict[str, Reach]:
    """Per read array, its reach along the split axis over every assignment of the tunables
    (kept with the program: every split run asks)."""
    cached = program.__dict__.get("_reaches")
    if cached is None:
        cached = program.__dict__["_reaches"] = _reaches(program)
    return dict(cached)


def _reaches(program: Any) -> dict[str, Reach]:
    info = program.info
    axis = info.grid_dims - 1
    found: dict[str, Reach] = {}
    for name, array in info.arrays.items():
        if not array.is_read:
            continue
        fps = [a.footprints.get(name) for a in program.analyses.values()]
        bounded = (array.kind == "image" and array.dims == info.grid_dims and bool(fps)
                   and all(fp is not None and fp.bounded for fp in fps))
        if array.kind == "image" and array.is_written and not fps[0]:
            bounded = True  # read only where written (races.py): the grid point's row
        if not bounded:
            found[name] = Reach(0, 0, array.boundary, True)
            continue
        low = max((fp.halo_low[axis] for fp in fps if fp is not None and fp.low), default=0)
        high = max((fp.halo_high[axis] for fp in fps if fp is not None and fp.high), default=0)
        found[name] = Reach(low, high, array.boundary, False)
    return found


def needed_rows(rows: np.ndarray, reach: Reach, extent: int) -> np.ndarray:
    """The sorted rows of an array of `extent` rows that computing grid rows `rows` reads."""
    if reach.whole:
        return np.arange(extent)
    if rows.size == 0:
        return rows
    if int(rows[-1]) - int(rows[0]) + 1 == rows.size:
        # one run [a, b) widens to one run of reads: computed as such, since an iterated program
        # asks once per step and the host's time here is time the devices wait
        a, b = int(rows[0]) - reach.low, int(rows[-1]) + 1 + reach.high
        if reach.mode == "clamped":
            return np.arange(min(max(a, 0), extent - 1), min(max(b - 1, 0), extent - 1) + 1)
        if reach.mode == "constant" or (a >= 0 and b <= extent):
            return np.arange(max(a, 0), max(min(b, extent), max(a, 0)))
        return np.unique(_boundary_rows(np.arange(a, b), extent, reach.mode))
    return _needed_rows_general(rows, reach, extent)


def _needed_rows_general(rows: np.ndarray, reach: Reach, extent: int) -> np.ndarray:
    offsets = np.arange(-reach.low, reach.high + 1)
    touched = (rows[:, None] + offsets[None, :]).ravel()
    return np.unique(_boundary_rows(touched, extent, reach.mode))


def runs(rows: np.ndarray) -> list[tuple[int, int]]:
    """Sorted distinct rows as [start, stop) runs."""
    if rows.size == 0:
        return []
    if int(rows[-1]) - int(rows[0]) + 1 == rows.size:
        return [(int(rows[0]), int(rows[-1]) + 1)]
    breaks = np.flatnonzero(np.diff(rows) != 1)
    starts = np.concatenate(([rows[0]], rows[breaks + 1]))
    stops = np.concatenate((rows[breaks], [rows[-1]])) + 1
    return [(int(a), int(b)) for a, b in zip(starts, stops)]


# ---- one device's part ------------------------------------------------------------------------------


def union_rows(sets: Sequence[np.ndarray]) -> np.ndarray:
    """The sorted rows of any of `sets` (a mask: np.unique of their concatenation sorts
    steps x rows indices, which an iterated round of many steps felt)."""
    sets = [s for s in sets if len(s)]
    if not sets:
        return np.arange(0)
    mask = np.zeros(max(int(s.max()) for s in sets) + 1, dtype=bool)
    for s in sets:
        mask[s] = True
    return np.flatnonzero(mask)


@dataclass
class Part:
    """One device, its variant for the whole grid built in banded form, and its band."""

    device: Any
    context: Any
    queue: Any
    plan: Any
    program: Any  # the built pyopencl.Program
    launch: Any  # launcher.Launch for the whole grid
    config: Optional[dict]
    band: tuple[int, int] = (0, 0)
    memory: dict = field(default_factory=dict)

    @property
    def split_dim(self) -> int:
        return len(self.launch.global_size) - 1

    def range_launch(self, start: int, stop: int) -> tuple[tuple, Optional[tuple], tuple]:
        """(global size, local size, global offset) computing rows [start, stop) of the grid (and
        possibly a few more, whose values are never used)."""
        d = self.split_dim
        px = self.plan.px[d]
        if self.plan.interleaved or px == 1:
            first, offset = start, start
        else:  # a work-item's points start at a multiple of its count
            first = start - start % px
            offset = first // px
        items = -(-(stop - first) // px)
        local = self.launch.local_size
        if local is not None:
            items = -(-items // local[d]) * local[d]
        global_size = tuple(self.launch.global_size[:d]) + (items,)
        return global_size, local, (0,) * d + (offset,)


def _parts(program: Any, prepared: Any, devices: list, configs: list) -> list[Part]:
    from . import launcher
    from .memory import check_device, prepared_buffers

    parts = []
    buffers = prepared_buffers(program.info, prepared.arrays)
    for device, config in zip(devices, configs):
        check_device(buffers, device)  # every device holds full-size arrays
        context, queue = context_and_queue(device)
        plan, full = program._plan_for(device, prepared.grid_shape, config)
        built = launcher.build(device, program.source_of(dataclasses.replace(plan, banded=True)), context=context)
        launch = program.launch_for(plan, prepared)
        launcher.check_launch(built, program.kernel_symbol, device, launch.local_size)
        parts.append(Part(device, context, queue, plan, built, launch, full))
    return parts


def _configs(config: Any, count: int) -> list:
    if isinstance(config, (list, tuple)):
        if len(config) != count:
            raise ArgumentError(f"config= has {len(config)} configurations for {count} devices")
        return list(config)
    return [config] * count


def _rows_of(array: np.ndarray, a: int, b: int) -> np.ndarray:
    return np.ascontiguousarray(array[a:b])


class _Transfers:
    """Non-blocking copies between host arrays and one device's memory, kept alive until waited."""

    def __init__(self) -> None:
        self.events: list = []
        self.keep: list = []

    def upload(self, part: Part, memory: Any, host: np.ndarray, a: int, b: int, image_dims: int = 0) -> None:
        import pyopencl as cl

        chunk = _rows_of(host, a, b)
        self.keep.append(chunk)
        if image_dims:
            origin = (0,) * (image_dims - 1) + (a,)
            region = tuple(reversed(host.shape[:image_dims][1:])) + (b - a,)
            self.events.append(cl.enqueue_copy(part.queue, memory, chunk, origin=origin, region=region,
                                               is_blocking=False))
        else:
            row = host[0].nbytes if host.ndim else host.nbytes
            self.events.append(cl.enqueue_copy(part.queue, memory, chunk, dst_offset=a * row, is_blocking=False))

    def download(self, part: Part, memory: Any, host: np.ndarray, a: int, b: int) -> None:
        import pyopencl as cl

        view = host[a:b]
        row = host[0].nbytes
        self.events.append(cl.enqueue_copy(part.queue, view, memory, src_offset=a * row, is_blocking=False))

    def wait(self) -> None:
        for event in self.events:  # one by one: clWaitForEvents takes events of one context only
            event.wait()
        self.events, self.keep = [], []


def _allocate(part: Part, prepared: Any) -> None:
    """The part's device memory: images made, buffers from its context's pool (a split run's
    buffers are whole-size on every device, so a repeated run finds them there)."""
    import pyopencl as cl

    from .interop import memory_pool
    from .launcher import image_format

    mf = cl.mem_flags
    pool = memory_pool(part.context, part.queue)
    for value in part.launch.values:
        if not (isinstance(value, tuple) and value[0] in ("buffer", "image")):
            continue
        role, name = value
        if name in part.memory:
            continue
        host = prepared.arrays[name]
        if role == "image":
            dims = part.launch.images[name]

            def image() -> Any:
                return cl.Image(part.context, mf.READ_ONLY, image_format(host.dtype, host.shape, dims),
                                shape=tuple(reversed(host.shape[:dims])))

            try:
                part.memory[name] = image()
            except (cl.MemoryError, cl.RuntimeError):  # the pool's idle blocks may hold what it needs
                pool.free_held()
                part.memory[name] = image()
        else:
            part.memory[name] = pool.allocate(max(int(host.nbytes), 1))


def _enqueue(program: Any, part: Part, memory: Mapping[str, Any], row_runs: list[tuple[int, int]],
             wait_for: Optional[list] = None) -> list:
    """Launch the part's kernel over each run of rows; returns the events."""
    import pyopencl as cl

    from .launcher import bind

    kernel = bind(part.program, program.kernel_symbol, part.launch, memory)
    events = []
    for a, b in row_runs:
        global_size, local, offset = part.range_launch(a, b)
        try:
            events.append(cl.enqueue_nd_range_kernel(part.queue, kernel, global_size, local,
                                                     global_work_offset=offset, wait_for=wait_for))
        except cl.Error as exc:
            raise ExecutionError(f"running kernel '{program.kernel_symbol}' failed on '{part.device.name.strip()}' "
                                 f"(rows {a}..{b}, global {global_size}, local {local}): {exc}") from None
    return events


# ---- one run across devices ---------------------------------------------------------------------------


@dataclass
class SplitRun:
    """What a run across devices did: each device's band and configuration, and per device the
    seconds its kernel and its transfers took (profiling events; 0 for a device with no rows)."""

    devices: list
    bands: list[tuple[int, int]]
    configs: list
    kernel_seconds: list = field(default_factory=list)
    transfer_seconds: list = field(default_factory=list)
    # per device, host clock, seconds from the run's start: when its thread began, when its
    # uploads, kernel and downloads were all enqueued, and when they were done ((0, 0, 0) for a
    # device with no rows). Device clocks differ, so only these compare devices: a device whose
    # enqueueing ends late waited for another's copies (a driver staging pageable memory, the GIL)
    host_times: list = field(default_factory=list)


def _gpu_type() -> int:
    import pyopencl as cl

    return cl.device_type.GPU


def _started_together(active: list) -> tuple[list, Optional[threading.Barrier]]:
    """The GPUs among `active` (part, band) pairs, when more than one, and the barrier that
    releases their threads at once (see run); CPU devices start freely."""
    together = [(p, band) for p, band in active if p.device.type & _gpu_type()]
    if len(together) < 2:
        return [], None
    return together, threading.Barrier(len(together), timeout=120)


def _event_seconds(events: list) -> float:
    total = 0.0
    for e in events:
        try:
            total += (e.profile.end - e.profile.start) * 1e-9
        except Exception:  # noqa: BLE001 - a queue without profiling: no time
            return 0.0
    return total


def each_device(work: Callable[..., T], items: Sequence[tuple]) -> list[T]:
    """`work(*item)` for every item (one per device), each on its own host thread, in order; the
    first failure is raised once all have ended. One item runs on the calling thread."""
    if len(items) <= 1:
        return [work(*item) for item in items]
    with ThreadPoolExecutor(len(items), thread_name_prefix="imagecl-device") as pool:
        futures = [pool.submit(work, *item) for item in items]
        wait(futures)
    return [f.result() for f in futures]


@contextlib.contextmanager
def _driver_errors(what: str, parts: list[Part]):
    """A driver's error named as an ExecutionError of `what`; the parts' device memory released
    however the run ends."""
    try:
        yield
    except ExecutionError:
        raise
    except Exception as exc:
        import pyopencl as cl

        if isinstance(exc, cl.Error):
            raise ExecutionError(f"{what} failed: {exc}") from None
        raise
    finally:
        for part in parts:
            for m in part.memory.values():
                m.release()
            part.memory = {}


def run(program: Any, arguments: Mapping[str, Any], devices: Any, shares: Optional[Sequence[float]] = None,
        config: Any = None, cast: bool = False) -> tuple[dict[str, np.ndarray], SplitRun]:
    """Run `program` once over a grid split across `devices` (see the module's docstring): its
    written arrays, as NumPy arrays, and what ran where. `shares`: each device's fraction of the
    grid's rows (default: the split `imagecl tune --devices` recorded for these devices and this
    size, else equal shares). `config`: one configuration (or "naive") for every device, or a
    list with one per device; None: each device's tuned one."""
    from .arguments import prepare

    check_splittable(program.info)
    chosen = resolve_devices(devices)
    prepared = prepare(program.info, dict(arguments), copy=False, cast=cast)  # uploads wait before returning
    shares = _shares_for(program, chosen, prepared.grid_shape, shares)
    parts = _parts(program, prepared, chosen, _configs(config, len(chosen)))
    rows = prepared.grid_shape[0]
    granule = math.lcm(*[p.plan.px[p.split_dim] for p in parts if not p.plan.interleaved] or [1])
    bands = split_rows(shares, rows, granule)
    reach = reaches(program)
    overwritten = program.overwritten
    check_host([Buffer(f"output '{n}' {prepared.arrays[n].shape} {prepared.arrays[n].dtype}",
                       int(prepared.arrays[n].nbytes)) for n in prepared.outputs], "the outputs", copies=1)
    # new C-ordered arrays (the bands come back as rows, whatever the order of an output passed in);
    # an output the kernel may leave unwritten somewhere (rows past the grid included) keeps its values there
    results = {n: np.empty(prepared.arrays[n].shape, prepared.arrays[n].dtype) if n in overwritten
               else np.array(prepared.arrays[n], order="C", copy=True) for n in prepared.outputs}
    active = [(p, band) for p, band in zip(parts, bands) if band[1] > band[0]]

    def uploads(part: Part, band: tuple[int, int]) -> list[tuple[str, int, int]]:
        """The (array, first row, end row) runs `part` receives for `band`."""
        band_rows = np.arange(*band)
        out = []
        for name, host in prepared.arrays.items():
            if name not in part.memory:
                continue
            own = band_rows[band_rows < host.shape[0]] if host.ndim else band_rows
            if name in reach:
                wanted = needed_rows(band_rows, reach[name], host.shape[0] if host.ndim else 1)
                if name in prepared.outputs and name not in overwritten:
                    wanted = np.union1d(wanted, own)
            elif name in prepared.outputs and name not in overwritten:
                wanted = own
            else:
                continue
            if host.ndim == 0 or (reach.get(name) is not None and reach[name].whole):
                wanted = np.arange(host.shape[0]) if host.ndim else np.arange(1)
            out += [(name, a, b) for a, b in runs(wanted)]
        return out

    def ready(part: Part, band: tuple[int, int]) -> list[tuple[str, int, int]]:
        part.band = band
        _allocate(part, prepared)
        return uploads(part, band)

    # GPUs start enqueueing together: their memory and upload plans are made here, on the calling
    # thread, and their threads released at once. The host's memory serves the GPUs' pageable
    # copies unevenly, the first to enqueue ahead (measured on two H200s: the GPU whose thread
    # started 0.4 ms earlier finished 2-5 ms earlier, in 5 of 6 timelines); started together,
    # no GPU is ahead by its place in the list, a lean the system model cannot express. CPU
    # devices (PoCL) plan on their own threads and start freely: with three PoCL devices started
    # together, PoCL 3.1 aborts on an assertion (pocl_release_dlhandle_cache).
    together, gate = _started_together(active)
    plans: dict[int, list] = {}  # made below, where a driver's error is reported
    start = 0.0

    def drive(part: Part, band: tuple[int, int]) -> tuple[list, list, tuple[float, float, float]]:
        """One device's whole run (uploads, kernel, downloads: its queue is in order), waited."""
        import pyopencl as cl

        plan = plans.get(id(part))
        if plan is None:
            plan = ready(part, band)
        else:
            gate.wait()
        began = time.perf_counter() - start
        transfers = _Transfers()
        for name, a, b in plan:
            transfers.upload(part, part.memory[name], prepared.arrays[name], a, b, part.launch.images.get(name, 0))
        kernel_events = _enqueue(program, part, part.memory, [band])
        # while the device uploads and computes, the pages its band of each new output comes back
        # to; a GPU's queue flushed first (measured on GPUs only: with three PoCL CPU devices an
        # early flush here met a PoCL 3.1 assertion in a full test run)
        touch_pages([results[n][band[0]:band[1]] for n in prepared.outputs if n in overwritten],
                    before=part.queue.flush if part.device.type & cl.device_type.GPU else None)
        for name in prepared.outputs:  # an output not of the grid's shape: the band's rows it has
            stop = min(band[1], results[name].shape[0])
            if stop > band[0]:
                transfers.download(part, part.memory[name], results[name], band[0], stop)
        part.queue.flush()
        enqueued = time.perf_counter() - start
        moved = list(transfers.events)
        transfers.wait()
        return kernel_events, moved, (began, enqueued, time.perf_counter() - start)

    with _driver_errors(f"running '{program.name}' across devices", parts):
        start = time.perf_counter()
        plans.update({id(p): ready(p, band) for p, band in together})
        # each device from its own host thread: a GPU driver may stage a copy of pageable host memory
        # before its enqueue returns, which from one thread would put the devices' transfers in turn
        done = each_device(drive, active)
        events = {id(part): got for (part, _), got in zip(active, done)}
        idle = ([], [], (0.0, 0.0, 0.0))
        kernel_seconds = [_event_seconds(events.get(id(p), idle)[0]) for p in parts]
        transfer_seconds = [_event_seconds(events.get(id(p), idle)[1]) for p in parts]
        host_times = [events.get(id(p), idle)[2] for p in parts]
    return results, SplitRun(chosen, bands, [p.config for p in parts], kernel_seconds, transfer_seconds, host_times)


def call(program: Any, arguments: Mapping[str, Any], devices: Any, shares: Any, config: Any, device: Any = None,
         timeout: Any = None, queue: Any = None, returns: str = "numpy", cast: bool = False,
         allocator: Any = None) -> dict[str, np.ndarray]:
    """prog(..., devices=[...]): the options a run on one device takes and a split one cannot are
    refused by name."""
    if devices is None:
        raise ArgumentError("shares= splits a run across devices: pass devices=[...] too")
    given = [name for name, value in (("device", device), ("timeout", timeout), ("queue", queue),
                                       ("allocator", allocator)) if value is not None]
    if returns != "numpy":
        given.append("returns")
    if given:
        raise ArgumentError(f"a run across devices takes NumPy arrays and returns them: {', '.join(given)}= "
                            "cannot be combined with devices=")
    for name, value in arguments.items():
        if not isinstance(value, (np.ndarray, np.generic, int, float, list, tuple)):
            if type(value).__module__.startswith("pyopencl"):
                raise ArgumentError(f"'{name}' is a device array: a run across devices takes NumPy arrays")
    outputs, _ = run(program, arguments, devices, shares, config, cast)
    return outputs


def _shares_for(program: Any, devices: list, grid_shape: tuple, shares: Optional[Sequence[float]]) -> list[float]:
    if shares is not None:
        return check_shares(shares, len(devices))
    from .. import splits

    found = splits.lookup(program, devices, tuple(reversed(grid_shape)))
    if found is not None:
        try:
            return check_shares(found.shares, len(devices))
        except ArgumentError:
            pass  # a damaged record: as if none
    return [1.0 / len(devices)] * len(devices)


# ---- iterating ----------------------------------------------------------------------------------------


def feed_pairs(info: Any, feed: Optional[Mapping[str, str]]) -> dict[str, str]:
    """Written image -> the read image it becomes at the next step. Default: the one written
    image and the one read grid image of its element type."""
    name = info.kernel.name
    written = [a for a in info.arrays.values() if a.is_written]
    if feed is None:
        read = [a for a in info.arrays.values() if a.is_read and not a.is_written and a.kind == "image"
                and a.in_grid]
        same = [a for a in read if written and a.element == written[0].element]
        if len(written) != 1 or len(same) != 1:
            raise ArgumentError(f"'{name}' does not say which output feeds which input at the next step: pass "
                                "feed={'output': 'input'}")
        return {written[0].name: same[0].name}
    if not isinstance(feed, Mapping):
        raise ArgumentError(f"feed= maps each output to the input it becomes, got {feed!r}")
    for out, inp in feed.items():
        a, b = info.arrays.get(out), info.arrays.get(inp)
        if a is None or not a.is_written:
            raise ArgumentError(f"feed= names '{out}', which '{name}' does not write")
        if b is None or not b.is_read or b.is_written or b.kind != "image" or not b.in_grid:
            raise ArgumentError(f"feed= names '{inp}', which is not an input image of '{name}''s grid")
        if a.element != b.element:
            raise ArgumentError(f"feed= maps '{out}' ({a.element}) to '{inp}' ({b.element}): their types differ")
    missing = [a.name for a in written if a.name not in feed]
    if missing:
        raise ArgumentError(f"feed= does not say what becomes of output '{missing[0]}'")
    if len(set(feed.values())) != len(feed):
        raise ArgumentError("feed= maps two outputs to one input")
    return dict(feed)


def round_rows(band: tuple[int, int], steps: int, reach: Mapping[str, Reach], fed: Sequence[str],
               rows: int) -> list[np.ndarray]:
    """[R_0, R_1, ..., R_steps]: the rows each step of a round computes (R_steps: the band), and
    R_0, the rows of the fed inputs the round reads."""
    sets = [np.arange(*band)]
    for _ in range(steps):
        need = [needed_rows(sets[0], reach[n], rows) for n in fed]
        sets.insert(0, (need[0] if len(need) == 1 else np.unique(np.concatenate(need))) if need else sets[0])
    return sets


def iterate(program: Any, n: int, arguments: Mapping[str, Any], devices: Any = None,
            shares: Optional[Sequence[float]] = None, h: Optional[int] = None, config: Any = None,
            cast: bool = False, feed: Optional[Mapping[str, str]] = None) -> dict[str, np.ndarray]:
    """`n` steps of a program whose outputs are its next step's inputs (`feed`: output -> input;
    found when there is one of each), equal to n single-device calls, each given the previous
    call's outputs. The state stays on the devices; bands exchange rows every `h` steps (default:
    the tuned split's, else 1). Returns the last step's outputs (the inputs given for n == 0)."""
    from .arguments import prepare

    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ArgumentError(f"iterate() takes a number of steps n >= 0, got {n!r}")
    check_splittable(program.info)
    pairs = feed_pairs(program.info, feed)
    for out in pairs:
        if arguments.get(out) is not None:
            raise ArgumentError(f"'{out}' is computed at every step: leave it out of iterate()'s arguments")
    chosen = resolve_devices([None] if devices is None else devices)
    prepared = prepare(program.info, dict(arguments), copy=False, cast=cast)  # uploads wait before returning
    for out, inp in pairs.items():
        if prepared.arrays[out].shape != prepared.arrays[inp].shape:
            raise ArgumentError(f"'{out}' {prepared.arrays[out].shape} cannot feed '{inp}' "
                                f"{prepared.arrays[inp].shape}: their shapes differ")
    if n == 0:
        return {out: prepared.arrays[inp].copy() for out, inp in pairs.items()}
    shares = _shares_for(program, chosen, prepared.grid_shape, shares)
    if h is None:
        from .. import splits

        found = splits.lookup(program, chosen, tuple(reversed(prepared.grid_shape)))
        h = found.h if found is not None and found.h else 1
    if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or h < 1:
        raise ArgumentError(f"h= is the number of steps between halo exchanges, an integer >= 1, got {h!r}")
    h = int(h)
    parts = _parts(program, prepared, chosen, _configs(config, len(chosen)))
    rows = prepared.grid_shape[0]
    bands = split_rows(shares, rows, 1)
    reach = reaches(program)
    fed = list(pairs.values())
    zeroed = [o for o in pairs if o not in program.overwritten]
    active = [(p, b) for p, b in zip(parts, bands) if b[1] > b[0]]
    if len(active) == 1:
        h = int(n)  # one device: nothing to exchange, so one round
    # the host's copy of the state, which the exchanges and the last downloads write (the first
    # round reads the caller's arrays); new memory, its pages touched while the first round runs
    state = {inp: np.empty_like(prepared.arrays[inp], order="C") for inp in fed}
    static = [name for name in prepared.arrays if name not in pairs and name not in fed]
    with _driver_errors(f"iterating '{program.name}' across devices", parts):
        return _iterate(program, n, h, active, prepared, pairs, reach, fed, zeroed, state, static, rows)


def _iterate(program: Any, n: int, h: int, active: list, prepared: Any, pairs: dict, reach: dict,
             fed: list, zeroed: list, state: dict, static: list, rows: int) -> dict[str, np.ndarray]:
    import pyopencl as cl

    from .interop import memory_pool

    sides: dict[int, tuple[dict, dict]] = {}
    plans = {}
    # as in run: the GPUs' memory and plans made here, their threads released at once (at the
    # first uploads and at the last downloads, the two transfers of whole bands)
    together, gate = _started_together(active)
    ids_together = {id(p) for p, _ in together}

    def ready(part: Part, band: tuple[int, int]) -> None:
        """A device's memory and its rounds' rows."""
        part.band = band
        _allocate(part, prepared)
        # the two sides of each fed input's ping-pong pair (kept in part.memory to be released)
        for side in "ab":
            for inp in fed:
                part.memory[f"\0{side}:{inp}"] = memory_pool(part.context, part.queue).allocate(
                    max(int(state[inp].nbytes), 1))
        sides[id(part)] = tuple({inp: part.memory[f"\0{side}:{inp}"] for inp in fed} for side in "ab")
        for steps in {min(h, n), n % h or h}:
            sets = round_rows(band, steps, reach, fed, rows)
            # each step's runs of rows, once per call (not per step: the host's time between kernels)
            plans[(id(part), steps)] = sets
            plans[(id(part), steps, "runs")] = [runs(r) for r in sets]

    def start(part: Part, band: tuple[int, int]) -> None:
        """What a device's first round reads, uploaded and waited."""
        if id(part) in ids_together:
            gate.wait()
        else:
            ready(part, band)
        transfers = _Transfers()
        every = union_rows(plans[(id(part), min(h, n))][1:])
        for name in static:  # read at every step: what any step reads, once
            if name not in part.memory:
                continue
            host = prepared.arrays[name]
            wanted = needed_rows(every, reach[name], host.shape[0]) if name in reach and host.ndim else None
            if wanted is None or (name in reach and reach[name].whole):
                wanted = np.arange(host.shape[0] if host.ndim else 1)
            for a, b in runs(wanted):
                transfers.upload(part, part.memory[name], host, a, b, part.launch.images.get(name, 0))
        for inp in fed:  # the first round's rows of the state, from the caller's arrays
            for a, b in runs(plans[(id(part), min(h, n))][0]):
                transfers.upload(part, sides[id(part)][0][inp], prepared.arrays[inp], a, b)
        transfers.wait()

    def finish(part: Part, band: tuple[int, int]) -> None:
        if id(part) in ids_together:
            gate.wait()
        downloads = _Transfers()
        for inp in fed:
            downloads.download(part, current[id(part)][inp], state[inp], *band)
        downloads.wait()

    # the first uploads and the last downloads move whole bands: each device from its own host
    # thread (run's reason); an exchange in between moves a few rows, and the thread hand-over would
    # cost more than it saves
    for part, band in together:
        ready(part, band)
    each_device(start, active)
    # current: input name -> memory holding the state; the outputs are written into the other side
    current = {id(p): sides[id(p)][0] for p, _ in active}
    other = {id(p): sides[id(p)][1] for p, _ in active}
    transfers = _Transfers()
    done = 0
    while done < n:
        steps = min(h, n - done)
        if done:  # the exchange: every device gets the rows of the fed inputs its round reads
            for part, band in active:
                wanted = np.setdiff1d(plans[(id(part), steps)][0], np.arange(*band), assume_unique=True)
                for inp in fed:
                    for a, b in runs(wanted):
                        transfers.upload(part, current[id(part)][inp], state[inp], a, b)
            transfers.wait()
        # step by step across the devices, not device by device: the last device's kernels
        # would otherwise wait on the host for the others' whole round to be enqueued
        for k in range(1, steps + 1):
            for part, _ in active:
                memory = dict(part.memory)
                for out, inp in pairs.items():
                    if inp in part.launch.images:  # read through image memory: the state copied in
                        host = state[inp]
                        dims = part.launch.images[inp]
                        cl.enqueue_copy(part.queue, part.memory[inp], current[id(part)][inp], offset=0,
                                        origin=(0,) * dims, region=tuple(reversed(host.shape[:dims])))
                    else:
                        memory[inp] = current[id(part)][inp]
                    memory[out] = other[id(part)][inp]
                    if out in zeroed:
                        cl.enqueue_fill_buffer(part.queue, memory[out], np.uint8(0), 0, state[inp].nbytes)
                _enqueue(program, part, memory, plans[(id(part), steps, "runs")][k])
                current[id(part)], other[id(part)] = other[id(part)], current[id(part)]
                if k == 1 or k == steps:
                    part.queue.flush()
        if not done:
            touch_pages(list(state.values()))
        done += steps
        if done < n:  # the rows the others' next rounds read come back to the host
            downloads = _Transfers()
            nxt = min(h, n - done)
            for part, band in active:
                wanted = np.unique(np.concatenate([plans[(id(q), nxt)][0] for q, _ in active if q is not part]
                                                  or [np.arange(0)]))
                wanted = np.intersect1d(wanted, np.arange(*band), assume_unique=True)
                for inp in fed:
                    for a, b in runs(wanted):
                        downloads.download(part, current[id(part)][inp], state[inp], a, b)
            downloads.wait()
    each_device(finish, active)
    return {out: state[inp] for out, inp in pairs.items()}
