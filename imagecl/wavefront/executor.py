"""Running a wavefront program by anti-diagonals under a split (split.py): CPU tiles before the
band, the band on the GPUs (one strip of columns each, halo swaps through the host every `halo`
diagonals), CPU tiles after it. Data moves between devices through the host, so any mix of
devices, platforms and contexts works (the seed's host-mediated transfers).

Each device gets its own copy of every array, the output's initial values included, before the
clock starts. A hand-over then moves only the rectangle around what the next phase reads (a point
reads the two diagonals before its own): the first CPU phase's box to the host and the GPUs, the
band's rows back to the host, the box of the last CPU phase and the two diagonals before it to
the CPU, and that phase's box back. Every point such a rectangle holds besides those is either
correct on the sending device or still at its initial value on both sides, so no copy overwrites
a result with a stale value."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..errors import ArgumentError
from ..runtime import launcher
from ..runtime.arguments import PreparedArgs, prepare
from ..runtime.devices import context_and_queue
from ..runtime.memory import check_device, prepared_buffers
from .devices import Devices
from .kernels import CPU_TILES, DIAGONAL, GPU_TILES, wavefront_source
from .split import Phases, Split, check_for, diagonal_box, phases, strips

FAR_LEFT = -(1 << 30)  # a column window's base that never excludes a column


@dataclass
class Result:
    output: np.ndarray
    seconds: float  # wall-clock time of the transfers and launches (the program is built before)
    launches: int


class _Device:
    """One device's program, kernels and copies of the arrays."""

    def __init__(self, program, device, prepared: PreparedArgs, values: list) -> None:
        import pyopencl as cl

        self.device = device
        self.context, self.queue = context_and_queue(device)
        built = launcher.build(device, wavefront_source(program.info), context=self.context)
        self.kernels = {name: cl.Kernel(built, name) for name in (DIAGONAL, CPU_TILES, GPU_TILES)}
        mf = cl.mem_flags
        self.buffers = {name: cl.Buffer(self.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host)
                        for name, host in prepared.arrays.items()}
        args = [self.buffers[v[1]] if isinstance(v, tuple) else v for v in values]
        self.base = len(args)
        for kernel in self.kernels.values():
            for i, a in enumerate(args):
                kernel.set_arg(i, a)
        self.launches = 0
        self.group = diagonal_group(device)
        self.last = {name: [] for name in self.kernels}  # the ints each kernel holds: set only what changes

    def launch(self, name: str, window: tuple, extra: tuple, global_size: int, local_size=None) -> None:
        import pyopencl as cl

        kernel, last = self.kernels[name], self.last[name]
        values = window + extra
        for i, v in enumerate(values):
            if i >= len(last) or last[i] != v:
                kernel.set_arg(self.base + i, np.int32(v))
        self.last[name] = list(values)
        cl.enqueue_nd_range_kernel(self.queue, kernel, (global_size,), None if local_size is None else (local_size,))
        self.launches += 1


def diagonal_group(device) -> "int | None":
    """The work-group size of a diagonal's launch: a diagonal's length is often prime, and with the
    driver's choice a GPU would then run groups of one work-item; on a GPU, padded groups of 64
    instead (the kernel skips the work-items past the diagonal). None: the driver's choice."""
    import pyopencl as cl

    return min(64, device.max_work_group_size) if device.type & cl.device_type.GPU else None


def argument_values(program, prepared: PreparedArgs) -> list:
    """The program's own kernel arguments in order: ('buffer', name) for arrays, else numbers."""
    from ..codegen.variant import VariantPlan, kernel_args

    info = program.info
    values: list = []
    for arg in kernel_args(info, VariantPlan.naive(info)):
        if arg.role == "buffer":
            values.append(("buffer", arg.param))
        elif arg.role == "extent":
            shape = prepared.arrays[arg.param].shape
            values.append(np.int32(shape[info.arrays[arg.param].dims - 1 - arg.axis]))
        elif arg.role == "length":
            values.append(np.int32(prepared.arrays[arg.param].shape[0]))
        elif arg.role == "scalar":
            values.append(prepared.scalars[arg.param])
        else:  # passes/wavefront.py rejects the placements that make images and tiles
            raise ArgumentError(f"'{arg.param}': {arg.role} arguments are not supported in wavefront programs")
    return values


def run_wavefront(program, arguments: Mapping[str, Any], split: Split, devices: Devices,
                  cast: bool = False) -> Result:
    """Run `program` (a wavefront program) on `arguments` as `split` says; the output starts as the
    given output array (else zeros) and is returned as a new array."""
    info = program.info
    prepared = prepare(info, dict(arguments), cast=cast)
    for name in info.arrays:
        if name not in prepared.arrays:  # a left-out output: prepare(copy=True) allocated it
            raise ArgumentError(f"missing argument '{name}'")
    height, width = prepared.grid_shape
    check_for(split, width, height, len(devices.gpus))
    ph = phases(split, width, height)
    needed = [devices.cpu] if (ph.lo > 0 or ph.hi < ph.diagonals - 1) else []
    gpus = list(devices.gpus[: split.gpu_count]) if ph.on_gpu else []
    for device in {d.int_ptr: d for d in needed + gpus}.values():
        check_device(prepared_buffers(info, prepared.arrays), device)
    values = argument_values(program, prepared)
    host = prepared.arrays[info.wavefront]
    cpu = _Device(program, devices.cpu, prepared, values) if needed else None
    gpu_runs = [_Device(program, g, prepared, values) for g in gpus]
    start = time.perf_counter()
    _execute(split, ph, width, height, host, cpu, gpu_runs, info.wavefront)
    seconds = time.perf_counter() - start
    launches = (cpu.launches if cpu else 0) + sum(g.launches for g in gpu_runs)
    return Result(host, seconds, launches)


def _execute(split: Split, ph: Phases, width: int, height: int, host: np.ndarray, cpu: "_Device | None",
             gpus: list[_Device], out: str) -> None:
    import pyopencl as cl

    last = ph.diagonals - 1
    if not ph.on_gpu:
        _cpu_tiles(cpu, split.cpu_tile, 0, last, width, height)
        cl.enqueue_copy(cpu.queue, host, cpu.buffers[out])
        return
    item = host.dtype.itemsize * (host.shape[2] if host.ndim == 3 else 1)
    if ph.lo > 0:  # (with lo == 0 the GPUs start from the initial values they hold)
        _cpu_tiles(cpu, split.cpu_tile, 0, ph.lo - 1, width, height)
        first = diagonal_box(0, ph.lo - 1, width, height)
        _box_copy(cpu, host, out, first, width, item, to_device=False)
        for g in gpus:
            _box_copy(g, host, out, first, width, item, to_device=True)
    _gpu_band(split, ph, width, height, host, gpus, out, item)
    if ph.hi < last:
        _box_copy(cpu, host, out, diagonal_box(ph.hi - 1, last, width, height), width, item, to_device=True)
        _cpu_tiles(cpu, split.cpu_tile, ph.hi + 1, last, width, height)
        _box_copy(cpu, host, out, diagonal_box(ph.hi + 1, last, width, height), width, item, to_device=False)


def _cpu_tiles(cpu: _Device, tile: int, dlo: int, dhi: int, width: int, height: int) -> None:
    """Diagonals [dlo, dhi] in tiles of side `tile`, one launch per diagonal of tiles."""
    tiles_x, tiles_y = -(-width // tile), -(-height // tile)
    window = (width, height, dlo, dhi, FAR_LEFT, width)
    first = max(0, -(-(dlo - 2 * tile + 2) // tile))
    for t in range(first, min(dhi // tile, tiles_x + tiles_y - 2) + 1):
        tx0, tx1 = max(0, t - (tiles_y - 1)), min(tiles_x - 1, t)
        if tx1 >= tx0:
            cpu.launch(CPU_TILES, window, (t, tx0, tile), tx1 - tx0 + 1, 1)


def _gpu_band(split: Split, ph: Phases, width: int, height: int, host: np.ndarray, gpus: list[_Device],
              out: str, item: int) -> None:
    k = len(gpus)
    cols = strips(width, k)
    step = split.halo if k > 1 else ph.hi - ph.lo + 1
    for d0 in range(ph.lo, ph.hi + 1, step):
        d1 = min(ph.hi, d0 + step - 1)
        for j, (g, (c0, c1)) in enumerate(zip(gpus, cols)):
            cbase = c0 - split.halo + 1 if j > 0 else FAR_LEFT
            _gpu_diagonals(g, split.gpu_tile, d0, d1, cbase, c1, width, height)
        for g in gpus:
            g.queue.flush()
        if d1 < ph.hi:
            for j in range(k - 1):
                c = cols[j + 1][0]
                y0, y1 = max(0, d0 - (c - 1)), min(height - 1, d1 - (c - split.halo))
                halo = (c - split.halo, c, y0, y1 + 1)
                _box_copy(gpus[j], host, out, halo, width, item, to_device=False)
                _box_copy(gpus[j + 1], host, out, halo, width, item, to_device=True)
    for g, (c0, c1) in zip(gpus, cols):
        y0, y1 = max(0, ph.lo - (c1 - 1)), min(height - 1, ph.hi - c0)
        _box_copy(g, host, out, (c0, c1, y0, y1 + 1), width, item, to_device=False)
    for g in gpus:
        g.queue.finish()


def _box_copy(dev: _Device, host: np.ndarray, out: str, box: tuple[int, int, int, int], width: int, item: int,
              to_device: bool) -> None:
    """Columns [x0, x1) of rows [y0, y1) of the output between the host and `dev` (blocking)."""
    import pyopencl as cl

    x0, x1, y0, y1 = box
    if x1 <= x0 or y1 <= y0:
        return
    origin, region, pitches = (x0 * item, y0, 0), ((x1 - x0) * item, y1 - y0, 1), (width * item, 0)
    dst, src = (dev.buffers[out], host) if to_device else (host, dev.buffers[out])
    cl.enqueue_copy(dev.queue, dst, src, buffer_origin=origin, host_origin=origin, region=region,
                    buffer_pitches=pitches, host_pitches=pitches, is_blocking=True)


def _gpu_diagonals(g: _Device, tile: int, dlo: int, dhi: int, cbase: int, c1: int, width: int, height: int) -> None:
    window = (width, height, dlo, dhi, cbase, c1)
    if tile == 1:
        for d in range(dlo, dhi + 1):
            x0 = max(0, d - (height - 1), cbase + (d - dlo))
            x1 = min(width - 1, d, c1 - 1)
            if x1 >= x0:
                count = x1 - x0 + 1
                if g.group:
                    count = -(-count // g.group) * g.group
                g.launch(DIAGONAL, (width, height, d, d, cbase + (d - dlo), c1), (x0,), count, g.group)
        return
    tiles_x, tiles_y = -(-width // tile), -(-height // tile)
    tx_lo, tx_hi = max(0, min(c1 - 1, max(0, cbase)) // tile), (c1 - 1) // tile
    first = max(0, -(-(dlo - 2 * tile + 2) // tile))
    for t in range(first, min(dhi // tile, tiles_x + tiles_y - 2) + 1):
        tx0, tx1 = max(tx_lo, t - (tiles_y - 1)), min(tx_hi, t)
        if tx1 >= tx0:
            g.launch(GPU_TILES, window, (t, tx0, tile), (tx1 - tx0 + 1) * tile, tile)
