"""Halide pipelines for the peer comparison, scheduled by Halide's own autoschedulers.

Each workload is written as a Halide algorithm with our boundary semantics (clamped =
BoundaryConditions.repeat_edge, constant 0 = constant_exterior), compiled once per autoscheduler
(the plugins the `halide` 21 wheel ships: Mullapudi2016, Adams2019 and Li2018 schedule for the
CPU; Anderson2021 only for GPU targets, peer_halide_gpu.py) with the problem size as its estimate
and the thread count as its parallelism, and JIT-compiled for the host. The fastest schedule
whose output passes the harness's check is the one reported, each scheduler's time kept in the
record's notes. The median is a bitwise radix selection (8 counting passes over the window),
exact for uchar; raycasting's data-dependent early
exit has no Halide form, so it is not offered.
"""
from __future__ import annotations

import os
import time
from typing import Callable, Optional

import numpy as np

from .peer_impls import NotOffered, Peer, PeerRun
from .peer_workloads import Workload

SCHEDULERS = ("Mullapudi2016", "Adams2019", "Li2018", "Anderson2021")
_PLUGINS = {"Mullapudi2016": "libautoschedule_mullapudi2016.so", "Adams2019": "libautoschedule_adams2019.so",
            "Li2018": "libautoschedule_li2018.so", "Anderson2021": "libautoschedule_anderson2021.so"}
GPU_ONLY = ("Anderson2021",)  # refuses a target without a GPU feature
_loaded: set[str] = set()


def load_plugins(hl) -> list[str]:
    lib = os.path.join(os.path.dirname(hl.__file__), "lib64")
    if not os.path.isdir(lib):
        lib = os.path.join(os.path.dirname(hl.__file__), "lib")
    names = []
    for name, plugin in _PLUGINS.items():
        if name not in _loaded:
            path = os.path.join(lib, plugin)
            if not os.path.exists(path):
                continue
            hl.load_plugin(path)
            _loaded.add(name)
        names.append(name)
    return names


def algorithm(hl, workload: Workload, args: dict, inputs: dict, stages: Optional[list] = None):
    """The output Funcs of the workload (not scheduled) and the input ImageParams set to `args`.
    `stages` gets the intermediate Funcs that a hand schedule must not inline (the median's bit
    steps: inlined, each references the previous one twice, 2^8 copies)."""
    x, y, z = hl.Var("x"), hl.Var("y"), hl.Var("z")
    f = workload.family

    def image(name, type_, dims):
        param = hl.ImageParam(type_, dims, name)
        inputs[name] = hl.Buffer(args[name])  # wraps the array (x is its last axis), no copy
        param.set(inputs[name])
        shape = args[name].shape
        param.set_estimates([(0, s) for s in reversed(shape)])
        return param

    if f == "convolution":
        r, n = workload.radius, 2 * workload.radius + 1
        src = hl.BoundaryConditions.repeat_edge(image("input", hl.Float(32), 2))
        weights = image("filter", hl.Float(32), 2)
        rd = hl.RDom([(-r, n), (-r, n)])
        out = hl.Func("output")
        out[x, y] = hl.sum(src[x - rd.x, y - rd.y] * weights[rd.x + r, rd.y + r])
        weights.set_estimates([(0, n), (0, n)])
        return [("output", out)]
    if f == "convolution3d":
        src = hl.BoundaryConditions.repeat_edge(image("input", hl.Float(32), 3))
        weights = image("filter", hl.Float(32), 1)
        weights.set_estimates([(0, 27)])
        rd = hl.RDom([(-1, 3), (-1, 3), (-1, 3)])
        out = hl.Func("output")
        out[x, y, z] = hl.sum(src[x - rd.x, y - rd.y, z - rd.z] * weights[(rd.z + 1) * 9 + (rd.y + 1) * 3 + rd.x + 1])
        return [("output", out)]
    if f == "sobel":
        src = hl.BoundaryConditions.constant_exterior(image("input", hl.Float(32), 2), 0.0)
        dx, dy = hl.Func("dx"), hl.Func("dy")
        dx[x, y] = ((src[x + 1, y - 1] - src[x - 1, y - 1]) + 2 * (src[x + 1, y] - src[x - 1, y])
                    + (src[x + 1, y + 1] - src[x - 1, y + 1])) / 8.0
        dy[x, y] = ((src[x - 1, y + 1] - src[x - 1, y - 1]) + 2 * (src[x, y + 1] - src[x, y - 1])
                    + (src[x + 1, y + 1] - src[x + 1, y - 1])) / 8.0
        return [("dx", dx), ("dy", dy)]
    if f == "harris":
        gx = hl.BoundaryConditions.constant_exterior(image("dx", hl.Float(32), 2), 0.0)
        gy = hl.BoundaryConditions.constant_exterior(image("dy", hl.Float(32), 2), 0.0)
        k = hl.Param(hl.Float(32), "k", float(args["k"]))
        k.set_estimate(float(args["k"]))
        xx, yy, xy, out = hl.Func("xx"), hl.Func("yy"), hl.Func("xy"), hl.Func("output")
        xx[x, y] = gx[x, y] * gx[x, y] + gx[x + 1, y] * gx[x + 1, y] + gx[x, y + 1] * gx[x, y + 1] \
            + gx[x + 1, y + 1] * gx[x + 1, y + 1]
        yy[x, y] = gy[x, y] * gy[x, y] + gy[x + 1, y] * gy[x + 1, y] + gy[x, y + 1] * gy[x, y + 1] \
            + gy[x + 1, y + 1] * gy[x + 1, y + 1]
        xy[x, y] = gx[x, y] * gy[x, y] + gx[x + 1, y] * gy[x + 1, y] + gx[x, y + 1] * gy[x, y + 1] \
            + gx[x + 1, y + 1] * gy[x + 1, y + 1]
        out[x, y] = xx[x, y] * yy[x, y] - xy[x, y] * xy[x, y] - k * (xx[x, y] + yy[x, y]) * (xx[x, y] + yy[x, y])
        return [("output", out)]
    if f == "median":
        r, n = workload.radius, 2 * workload.radius + 1
        src = hl.BoundaryConditions.repeat_edge(image("input", hl.UInt(8), 2))
        rd = hl.RDom([(-r, n), (-r, n)])
        # the median is the largest m with #(v < m) <= n*n // 2; built bit by bit from the top
        current = hl.Func("m8")
        current[x, y] = hl.u16(0)
        for bit in range(7, -1, -1):
            candidate = current[x, y] | (1 << bit)
            below = hl.sum(hl.select(hl.u16(src[x + rd.x, y + rd.y]) < candidate, 1, 0))
            step = hl.Func(f"m{bit}")
            step[x, y] = hl.select(below <= (n * n) // 2, candidate, current[x, y])
            if stages is not None:
                stages.append(step)
            current = step
        out = hl.Func("output")
        out[x, y] = hl.u8(current[x, y])
        return [("output", out)]
    if f == "bilateral":
        src = hl.BoundaryConditions.repeat_edge(image("input", hl.UInt(8), 3))
        # as ours: float32 constants
        gs = hl.f32(-0.5 / (float(args["sigma_spatial"]) ** 2))
        gr = hl.f32(-0.5 / (float(args["sigma_range"]) ** 2))
        rd = hl.RDom([(-2, 5), (-2, 5), (-2, 5)])
        c = hl.i32(src[x, y, z])
        v = hl.i32(src[x + rd.x, y + rd.y, z + rd.z])
        w = hl.exp(hl.f32(rd.x * rd.x + rd.y * rd.y + rd.z * rd.z) * gs) * hl.exp(hl.f32((v - c) * (v - c)) * gr)
        sums = hl.Func("sums")
        sums[x, y, z] = (hl.f32(0), hl.f32(0))
        sums[x, y, z] = (sums[x, y, z][0] + w * hl.f32(v), sums[x, y, z][1] + w)
        out = hl.Func("output")
        out[x, y, z] = hl.saturating_cast(hl.UInt(8), sums[x, y, z][0] / sums[x, y, z][1] + 0.5)
        return [("output", out)]
    if f == "stereo":
        left = hl.BoundaryConditions.repeat_edge(image("left", hl.Int(32), 2))
        right = hl.BoundaryConditions.repeat_edge(image("right", hl.Int(32), 2))
        d = hl.Var("d")
        rd = hl.RDom([(-2, 5), (-2, 5)])
        cost = hl.Func("cost")
        cost[x, y, d] = hl.sum(hl.i32(hl.abs(left[x + rd.x, y + rd.y] - right[x + rd.x - d, y + rd.y])))
        rdisp = hl.RDom([(0, 8)])
        out = hl.Func("disparity")
        out[x, y] = hl.argmin(rdisp, cost[x, y, rdisp.x])[0]  # the first (smallest d) on ties
        return [("disparity", out)]
    raise NotOffered("raycasting's early ray termination (a data-dependent loop exit) has no Halide form"
                     if f == "raycasting" else f"no Halide pipeline for {f}")


class HalidePeer(Peer):
    name, module = "Halide (autoscheduled)", "halide"

    def __init__(self, threads: int, schedulers: tuple[str, ...] = SCHEDULERS) -> None:
        self.threads = threads
        self.schedulers = schedulers
        self.timing = f"wall clock, {threads} threads"
        # the runtime's thread pool reads this when it starts (the first realize in the process)
        os.environ["HL_NUM_THREADS"] = str(threads)
        self.notes: dict[str, dict] = {}  # workload -> per-scheduler times, compile seconds

    def prepare(self, workload: Workload, args: dict) -> PeerRun:
        import halide as hl

        available = [s for s in load_plugins(hl) if s in self.schedulers]
        if not available:
            raise NotOffered("the halide package has none of the autoscheduler plugins "
                             + ", ".join(self.schedulers))
        target = hl.get_host_target()
        candidates = []
        notes = self.notes.setdefault(workload.key, {})
        for scheduler in available:
            inputs: dict = {}
            if scheduler in GPU_ONLY:
                notes[scheduler] = {"error": f"not offered: {scheduler} schedules GPU targets only"}
                continue
            funcs = algorithm(hl, workload, args, inputs)
            outputs = {name: np.empty_like(args[name]) for name, _ in funcs}
            for name, func in funcs:
                func.set_estimates([(0, s) for s in reversed(args[name].shape)])
            pipeline = hl.Pipeline([func for _, func in funcs])
            params = {"parallelism": str(self.threads)}
            started = time.perf_counter()
            try:
                pipeline.apply_autoscheduler(target, hl.AutoschedulerParams(scheduler, params))
                pipeline.compile_jit(target)
            except Exception as exc:  # noqa: BLE001 - an autoscheduler that fails is reported, not fatal
                notes[scheduler] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                continue
            buffers = [hl.Buffer(outputs[name]) for name, _ in funcs]
            run = _runner(pipeline, buffers, inputs)
            run()  # the first call starts the thread pool; not timed
            seconds = min(_seconds(run) for _ in range(2))
            notes[scheduler] = {"compile_seconds": time.perf_counter() - started - seconds, "seconds": seconds}
            candidates.append((seconds, scheduler, run, outputs))
        if not candidates:
            raise NotOffered("every autoscheduler failed: " + "; ".join(f"{k}: {v.get('error')}"
                                                                       for k, v in notes.items()))
        return fastest_first([PeerRun(_timer(run), _copies(outputs), label=scheduler)
                              for _, scheduler, run, outputs in sorted(candidates, key=lambda c: c[0])])


def fastest_first(runs: list[PeerRun]) -> PeerRun:
    """The fastest schedule's run, the others as its alternatives (the harness takes the first
    whose output passes its check)."""
    runs[0].alternatives = runs[1:]
    return runs[0]


def _timer(run: Callable[[], None]) -> Callable[[], float]:
    return lambda: _seconds(run)


def _copies(outputs: dict) -> Callable[[], dict]:
    return lambda: dict(outputs)


def _runner(pipeline, buffers, inputs) -> Callable[[], None]:
    keep = (inputs,)  # the wrapped input arrays must outlive the pipeline's calls

    def run() -> None:
        assert keep
        pipeline.realize(buffers if len(buffers) > 1 else buffers[0])
    return run


def _seconds(run: Callable[[], None]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start
