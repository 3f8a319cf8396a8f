"""Halide on the NVIDIA GPU: the Anderson2021 autoscheduler's schedule and hand gpu_tile schedules.

The algorithms are peer_halide.py's (the CPU peer's, same boundary semantics). Each workload is
compiled for a JIT target with a GPU feature (`host-cuda`, else `host-opencl` on a GPU device)
once per schedule: Anderson2021 (the autoscheduler for GPUs, with the device's multiprocessor
count as its parallelism) and two hand schedules that tile the outputs' x and y over GPU blocks of
16x16 and 32x8 threads (3-D outputs: one z plane per block), everything else inlined. The fastest
schedule whose output passes the harness's check is reported, each one's time in the notes.

What is timed: the inputs are copied to the device once before any timing (`copy_to_device`),
the outputs stay allocated on the device between calls; one timing is `realize()` on those
buffers, repeated back to back so that it spans about 2 ms (at most 20 calls: Halide queues the
kernels without waiting, so the host's per-call cost hides behind them, as it is absent from our
profiling-event kernel times), then `device_sync()` of every output, by the wall clock divided by
the number of calls (Halide's runtime owns its CUDA context, so CUDA events of another library
cannot bracket its kernels); no host transfer is inside a timing. The outputs come back to the
host only for the check (`fetch`).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from .peer_halide import algorithm, fastest_first, load_plugins
from .peer_impls import NotOffered, Peer, PeerRun
from .peer_timing import BatchedTimer
from .peer_workloads import Workload

GPU_SCHEDULES = ("Anderson2021", "gpu_tile 16x16", "gpu_tile 32x8")
_TILES = {"gpu_tile 16x16": (16, 16), "gpu_tile 32x8": (32, 8)}


@dataclass
class Compiled:
    """One schedule of one workload, compiled: its pipeline, input and output buffers."""
    pipeline: object
    outputs: dict  # name -> NumPy array the output buffer wraps
    buffers: list  # the output hl.Buffers, in the pipeline's order
    inputs: dict  # name -> hl.Buffer (must outlive the pipeline's calls)


def gpu_target(hl) -> tuple[Optional[object], str]:
    """The JIT target with a GPU feature this host runs, or None and why not. OpenCL only on a GPU
    device (HL_OCL_DEVICE_TYPE), never PoCL's CPU device."""
    os.environ.setdefault("HL_OCL_DEVICE_TYPE", "gpu")  # lower case: the runtime compares so
    tried = []
    for feature in ("CUDA", "OpenCL"):
        target = hl.get_host_target().with_feature(getattr(hl.TargetFeature, feature))
        try:
            if hl.host_supports_target_device(target):
                capability = cuda_capability_feature(hl, compute_capability()) if feature == "CUDA" else None
                return (target.with_feature(capability) if capability is not None else target), ""
        except Exception as exc:  # noqa: BLE001 - a runtime that fails to load: the next one
            tried.append(f"{feature}: {type(exc).__name__}")
            continue
        tried.append(f"{feature}: no device")
    return None, "halide finds no GPU device for host-cuda or host-opencl (" + ", ".join(tried) + ")"


def compute_capability() -> Optional[int]:
    """The GPU's CUDA compute capability as major * 10 + minor (90 on an H100), from CuPy."""
    try:
        import cupy

        return int(cupy.cuda.Device(0).compute_capability)
    except Exception:  # noqa: BLE001 - no CuPy or no device: unknown
        return None


def cuda_capability_feature(hl, capability: Optional[int]):
    """The highest CUDACapabilityNN target feature this Halide knows that the device has (without
    one Halide emits PTX for its oldest capability, leaving newer instructions unused), or None."""
    if capability is None:
        return None
    known = sorted((int(name[len("CUDACapability"):]), name) for name in dir(hl.TargetFeature)
                   if name.startswith("CUDACapability") and name[len("CUDACapability"):].isdigit())
    usable = [name for number, name in known if number <= capability]
    return getattr(hl.TargetFeature, usable[-1]) if usable else None


def hand_schedule(hl, funcs: list, stages: list, tile: tuple[int, int], gpu: bool) -> None:
    """Tile every output's x, y over `tile` (GPU blocks and threads when `gpu`; on a CPU target,
    as a stand-in for checking the algorithm, parallel tiles); `stages` are computed per output
    point (per GPU thread), everything else stays inlined."""
    x, y, z = hl.Var("x"), hl.Var("y"), hl.Var("z")
    for _, func in funcs:
        xo, yo, xi, yi = hl.Var("xo"), hl.Var("yo"), hl.Var("xi"), hl.Var("yi")
        if gpu:
            func.gpu_tile(x, y, xo, yo, xi, yi, tile[0], tile[1])
            if func.dimensions() == 3:
                func.gpu_blocks(z)
        else:
            func.tile(x, y, xo, yo, xi, yi, tile[0], tile[1]).parallel(yo)
        for stage in stages:
            stage.compute_at(func, xi)


def compile_schedule(hl, workload: Workload, args: dict, schedule: str, target, parallelism: int) -> Compiled:
    """The workload's pipeline with `schedule` (an autoscheduler's name or a hand tile), JIT-compiled
    for `target`; raises what Halide raises."""
    inputs: dict = {}
    stages: list = []
    funcs = algorithm(hl, workload, args, inputs, stages)
    for name, func in funcs:
        func.set_estimates([(0, s) for s in reversed(args[name].shape)])
    pipeline = hl.Pipeline([func for _, func in funcs])
    if schedule in _TILES:
        hand_schedule(hl, funcs, stages, _TILES[schedule], gpu=target.has_gpu_feature())
    else:
        pipeline.apply_autoscheduler(target, hl.AutoschedulerParams(schedule, {"parallelism": str(parallelism)}))
    pipeline.compile_jit(target)
    outputs = {name: np.empty_like(args[name]) for name, _ in funcs}
    return Compiled(pipeline, outputs, [hl.Buffer(outputs[name]) for name, _ in funcs], inputs)


class DeviceRunner(BatchedTimer):
    """Timed calls of a compiled schedule on device-resident buffers (peer_timing.BatchedTimer):
    back-to-back realize() calls, then device_sync() of every output."""

    def __init__(self, compiled: Compiled, target) -> None:
        if target.has_gpu_feature():
            for buffer in compiled.inputs.values():
                buffer.copy_to_device(target)  # once, before any timing
        buffers = compiled.buffers if len(compiled.buffers) > 1 else compiled.buffers[0]

        def wait() -> None:
            for buffer in compiled.buffers:
                buffer.device_sync()
        super().__init__(lambda: compiled.pipeline.realize(buffers), wait)


def fetch(compiled: Compiled) -> dict[str, np.ndarray]:
    """The last call's outputs on the host (the buffers wrap these arrays)."""
    for buffer in compiled.buffers:
        buffer.copy_to_host()
    return {name: np.array(array, copy=True) for name, array in compiled.outputs.items()}


def _fetcher(compiled: Compiled) -> Callable[[], dict]:
    return lambda: fetch(compiled)


def multiprocessors(default: int = 128) -> int:
    """The GPU's multiprocessor count (Anderson2021's parallelism), from CuPy when it has a device."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"])
    except Exception:  # noqa: BLE001 - no CuPy or no device: the default
        return default


class HalideGPUPeer(Peer):
    name, module = "Halide GPU", "halide"
    device = "nvidia"
    timing = ("wall clock over 1 to 20 back-to-back realize() calls (about 2 ms) and device_sync(), divided by "
              "their number; inputs copied to the GPU before timing, outputs kept there (no host transfer timed)")

    def __init__(self, schedules: tuple[str, ...] = GPU_SCHEDULES, target=None, parallelism: Optional[int] = None):
        self.schedules = schedules
        self._target = target  # tests: a CPU target for the algorithm (hand schedules become CPU tiles)
        self.parallelism = parallelism
        self.notes: dict[str, dict] = {}

    def missing(self) -> Optional[str]:
        problem = super().missing()
        if problem:
            return problem
        if self._target is None:
            import halide as hl

            self._target, why = gpu_target(hl)
            if self._target is None:
                return f"not offered: {why}"
        return None

    def version(self) -> str:
        return f"{super().version()}, target {self._target}" if self._target is not None else super().version()

    def prepare(self, workload: Workload, args: dict) -> PeerRun:
        import halide as hl

        if self._target is None and self.missing():
            raise NotOffered(self.missing() or "no GPU target")
        target = self._target
        available = set(load_plugins(hl))
        parallelism = self.parallelism or multiprocessors()
        notes = self.notes.setdefault(workload.key, {})
        candidates = []
        for schedule in self.schedules:
            if schedule not in _TILES and schedule not in available:
                notes[schedule] = {"error": f"the halide package has no {schedule} plugin"}
                continue
            started = time.perf_counter()
            try:
                compiled = compile_schedule(hl, workload, args, schedule, target, parallelism)
                compile_seconds = time.perf_counter() - started
                runner = DeviceRunner(compiled, target)
                runner.once()  # the first call allocates the outputs on the device; not timed
                seconds = min(runner.once() for _ in range(2))
                runner.set_batch(seconds)
                once = runner.once
            except NotOffered:
                raise
            except Exception as exc:  # noqa: BLE001 - a schedule that fails is reported, not fatal
                notes[schedule] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                continue
            notes[schedule] = {"compile_seconds": compile_seconds, "seconds": seconds, "batch": runner.batch}
            candidates.append((seconds, schedule, once, compiled))
        if not candidates:
            raise NotOffered("every GPU schedule failed: " + "; ".join(f"{k}: {v.get('error')}"
                                                                       for k, v in notes.items()))
        return fastest_first([PeerRun(once, _fetcher(compiled), label=schedule)
                              for _, schedule, once, compiled in sorted(candidates, key=lambda c: c[0])])
