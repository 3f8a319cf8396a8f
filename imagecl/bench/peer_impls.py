"""The peers of the comparison: SciPy, OpenCV, CuPy, PyTorch (Halide in peer_halide.py and
peer_halide_gpu.py, OpenCV's OpenCL path in peer_opencv_ocl.py).

A peer `prepare`s one workload on inputs already in memory (on the GPU for CuPy and PyTorch) and
returns a PeerRun: `time_once()` runs the operation once and returns its seconds (wall clock on
the CPU; CUDA events around the operation, synchronised, on the GPU) and `fetch()` returns the last
call's outputs as host arrays named like ours, for the check against our output. A peer that does
not offer a workload, or not with our boundary semantics, raises NotOffered with the reason.
"""
from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .peer_workloads import Workload


class NotOffered(Exception):
    """The peer has no operation with the workload's semantics (the message says why)."""


@dataclass
class PeerRun:
    time_once: Callable[[], float]  # one call, seconds
    fetch: Callable[[], dict[str, np.ndarray]]
    label: str = ""  # which schedule this is, when the peer has several (Halide)
    # the next-best schedules, fastest first: the harness takes the first whose output passes the check
    alternatives: list = field(default_factory=list)


class Peer:
    name = "peer"
    device = "cpu"  # cpu or nvidia: which --device run compares with it
    module = ""
    timing = "wall clock"

    def missing(self) -> Optional[str]:
        """None when the peer can run here, else why not (a package that is not installed...)."""
        try:
            importlib.import_module(self.module)
        except Exception as exc:  # noqa: BLE001 - any import failure means the peer is skipped
            return f"{self.module} is not installed ({type(exc).__name__}: {exc})"
        return None

    def version(self) -> str:
        top = self.module.split(".")[0]
        version = getattr(importlib.import_module(top), "__version__", None)
        if version is None:
            from importlib import metadata

            try:
                version = metadata.version(top)
            except metadata.PackageNotFoundError:
                version = "?"
        return str(version)

    def prepare(self, workload: Workload, args: dict) -> PeerRun:
        raise NotImplementedError


def _wall(call: Callable[[], None]) -> Callable[[], float]:
    def once() -> float:
        start = time.perf_counter()
        call()
        return time.perf_counter() - start
    return once


def harris_response(nd, dx, dy, k, window) -> tuple[Callable[[], None], dict]:
    """The Harris response from the gradients with an ndimage-like module (SciPy's or CuPy's):
    a call that computes it into the returned dict's "output"."""
    result: dict = {}

    def harris() -> None:
        xx = nd.correlate(dx * dx, window, mode="constant")
        yy = nd.correlate(dy * dy, window, mode="constant")
        xy = nd.correlate(dx * dy, window, mode="constant")
        result["output"] = xx * yy - xy * xy - k * (xx + yy) * (xx + yy)
    return harris, result


def cv2_harris(cv2, dx, dy, k: float, window: np.ndarray):
    """The Harris response with OpenCV's operations (NumPy arrays or UMats alike), zero outside."""
    border = cv2.BORDER_CONSTANT
    xx = cv2.filter2D(cv2.multiply(dx, dx), -1, window, borderType=border)
    yy = cv2.filter2D(cv2.multiply(dy, dy), -1, window, borderType=border)
    xy = cv2.filter2D(cv2.multiply(dx, dy), -1, window, borderType=border)
    trace = cv2.add(xx, yy)
    det = cv2.subtract(cv2.multiply(xx, yy), cv2.multiply(xy, xy))
    return cv2.addWeighted(det, 1.0, cv2.multiply(trace, trace), -k, 0.0)


def harris_window() -> np.ndarray:
    """A 3x3 correlation kernel whose ones cover {x, x+1} x {y, y+1} around its centre."""
    k = np.zeros((3, 3), np.float32)
    k[1:, 1:] = 1
    return k


def filter3d(args: dict) -> np.ndarray:
    """The 3-D convolution's flattened filter as NumPy's (z, y, x) weights (peer_workloads.py)."""
    return np.ascontiguousarray(np.asarray(args["filter"], np.float32).reshape(3, 3, 3))


SOBEL_X = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float32) / 8
SOBEL_Y = SOBEL_X.T.copy()


# ---- CPU ------------------------------------------------------------------------------------------------
class SciPyPeer(Peer):
    name, module = "SciPy ndimage", "scipy.ndimage"
    timing = "wall clock, 1 thread (ndimage has no threads)"

    def version(self) -> str:
        import scipy
        return scipy.__version__

    def prepare(self, workload: Workload, args: dict) -> PeerRun:
        from scipy import ndimage as nd

        f = workload.family
        if f == "convolution":
            src, weights, out = args["input"], args["filter"], np.empty_like(args["input"])
            return PeerRun(_wall(lambda: nd.convolve(src, weights, output=out, mode="nearest")),
                           lambda: {"output": out})
        if f == "sobel":
            src, dx, dy = args["input"], np.empty_like(args["input"]), np.empty_like(args["input"])

            def sobel():
                nd.correlate(src, SOBEL_X, output=dx, mode="constant")
                nd.correlate(src, SOBEL_Y, output=dy, mode="constant")
            return PeerRun(_wall(sobel), lambda: {"dx": dx, "dy": dy})
        if f == "harris":
            harris, result = harris_response(nd, args["dx"], args["dy"], np.float32(args["k"]), harris_window())
            return PeerRun(_wall(harris), lambda: result)
        if f == "median":
            src, out, size = args["input"], np.empty_like(args["input"]), 2 * workload.radius + 1
            return PeerRun(_wall(lambda: nd.median_filter(src, size=size, output=out, mode="nearest")),
                           lambda: {"output": out})
        if f == "convolution3d":
            src, weights, out = args["input"], filter3d(args), np.empty_like(args["input"])
            return PeerRun(_wall(lambda: nd.convolve(src, weights, output=out, mode="nearest")),
                           lambda: {"output": out})
        raise NotOffered(f"ndimage has no {workload.family} operation")


class OpenCVPeer(Peer):
    name, module = "OpenCV", "cv2"

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.timing = f"wall clock, {threads} threads"

    def prepare(self, workload: Workload, args: dict) -> PeerRun:
        import cv2

        cv2.setNumThreads(self.threads)
        f = workload.family
        if f == "convolution":
            # filter2D correlates: flip the filter for a convolution (odd size, centred anchor)
            src, kernel = args["input"], np.ascontiguousarray(args["filter"][::-1, ::-1])
            out = np.empty_like(src)
            return PeerRun(_wall(lambda: cv2.filter2D(src, -1, kernel, dst=out, borderType=cv2.BORDER_REPLICATE)),
                           lambda: {"output": out})
        if f == "sobel":
            src, dx, dy = args["input"], np.empty_like(args["input"]), np.empty_like(args["input"])

            def sobel():
                cv2.Sobel(src, cv2.CV_32F, 1, 0, dst=dx, ksize=3, scale=0.125, borderType=cv2.BORDER_CONSTANT)
                cv2.Sobel(src, cv2.CV_32F, 0, 1, dst=dy, ksize=3, scale=0.125, borderType=cv2.BORDER_CONSTANT)
            return PeerRun(_wall(sobel), lambda: {"dx": dx, "dy": dy})
        if f == "harris":
            # cv2.cornerHarris computes its own Sobel gradients and a box window: not this
            # workload; the same computation from OpenCV's primitives instead
            dx, dy, k, window = args["dx"], args["dy"], float(args["k"]), harris_window()
            result = {}

            def harris():
                result["output"] = cv2_harris(cv2, dx, dy, k, window)
            return PeerRun(_wall(harris), lambda: result)
        if f == "median":
            src, size, out = args["input"], 2 * workload.radius + 1, np.empty_like(args["input"])
            return PeerRun(_wall(lambda: cv2.medianBlur(src, size, dst=out)), lambda: {"output": out})
        if f == "stereo":
            raise NotOffered("StereoBM adds a prefilter, texture and uniqueness checks and sub-pixel output: "
                             "not the plain SAD block matching")
        if f == "bilateral":
            raise NotOffered("bilateralFilter is 2-D only")
        if f == "convolution3d":
            raise NotOffered("filter2D is 2-D only")
        raise NotOffered(f"no {workload.family} operation")


# ---- NVIDIA GPU ------------------------------------------------------------------------------------------
class CuPyPeer(Peer):
    name, module = "cupyx.scipy.ndimage", "cupy"
    device = "nvidia"
    timing = "CUDA events around the call"

    def version(self) -> str:
        import cupy
        return cupy.__version__

    def prepare(self, workload: Workload, args: dict) -> PeerRun:
        import cupy as cp
        from cupyx.scipy import ndimage as nd

        def timed(call):
            start, end = cp.cuda.Event(), cp.cuda.Event()

            def once() -> float:
                start.record()
                call()
                end.record()
                end.synchronize()
                return cp.cuda.get_elapsed_time(start, end) * 1e-3
            return once

        f = workload.family
        if f == "convolution":
            src, weights = cp.asarray(args["input"]), cp.asarray(args["filter"])
            out = cp.empty_like(src)
            return PeerRun(timed(lambda: nd.convolve(src, weights, output=out, mode="nearest")),
                           lambda: {"output": cp.asnumpy(out)})
        if f == "sobel":
            src = cp.asarray(args["input"])
            dx, dy = cp.empty_like(src), cp.empty_like(src)
            kx, ky = cp.asarray(SOBEL_X), cp.asarray(SOBEL_Y)

            def sobel():
                nd.correlate(src, kx, output=dx, mode="constant")
                nd.correlate(src, ky, output=dy, mode="constant")
            return PeerRun(timed(sobel), lambda: {"dx": cp.asnumpy(dx), "dy": cp.asnumpy(dy)})
        if f == "harris":
            harris, result = harris_response(nd, cp.asarray(args["dx"]), cp.asarray(args["dy"]), np.float32(args["k"]),
                                             cp.asarray(harris_window()))
            return PeerRun(timed(harris), lambda: {"output": cp.asnumpy(result["output"])})
        if f == "median":
            src, size = cp.asarray(args["input"]), 2 * workload.radius + 1
            out = cp.empty_like(src)
            return PeerRun(timed(lambda: nd.median_filter(src, size=size, output=out, mode="nearest")),
                           lambda: {"output": cp.asnumpy(out)})
        if f == "convolution3d":
            src, weights = cp.asarray(args["input"]), cp.asarray(filter3d(args))
            out = cp.empty_like(src)
            return PeerRun(timed(lambda: nd.convolve(src, weights, output=out, mode="nearest")),
                           lambda: {"output": cp.asnumpy(out)})
        raise NotOffered(f"cupyx.scipy.ndimage has no {workload.family} operation")


class TorchPeer(Peer):
    name, module = "PyTorch conv2d", "torch"
    device = "nvidia"
    timing = "torch.cuda.Event around the call"

    def missing(self) -> Optional[str]:
        problem = super().missing()
        if problem:
            return problem
        import torch
        if not torch.cuda.is_available():
            return f"torch {torch.__version__} has no CUDA device here"
        return None

    def prepare(self, workload: Workload, args: dict) -> PeerRun:
        import torch
        import torch.nn.functional as F

        torch.backends.cudnn.benchmark = True  # let cuDNN pick its fastest algorithm (first calls)
        torch.backends.cudnn.allow_tf32 = False  # full float32, as ours: TF32 would fail the check

        def timed(call):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

            def once() -> float:
                start.record()
                with torch.no_grad():
                    call()
                end.record()
                end.synchronize()
                return start.elapsed_time(end) * 1e-3
            return once

        def gpu(a):
            return torch.from_numpy(np.ascontiguousarray(a)).cuda()

        f = workload.family
        result = {}
        if f == "convolution":
            r = workload.radius
            src = gpu(args["input"])[None, None]
            # conv2d correlates: flip the filter for a convolution
            weight = gpu(np.ascontiguousarray(args["filter"][::-1, ::-1]))[None, None]

            def conv():
                result["output"] = F.conv2d(F.pad(src, (r, r, r, r), mode="replicate"), weight)
            return PeerRun(timed(conv), lambda: {"output": result["output"][0, 0].cpu().numpy()})
        if f == "sobel":
            src = gpu(args["input"])[None, None]
            weight = gpu(np.stack([SOBEL_X, SOBEL_Y]))[:, None]

            def sobel():
                result["d"] = F.conv2d(src, weight, padding=1)
            return PeerRun(timed(sobel), lambda: {"dx": result["d"][0, 0].cpu().numpy(),
                                                  "dy": result["d"][0, 1].cpu().numpy()})
        if f == "harris":
            dx, dy, k = gpu(args["dx"]), gpu(args["dy"]), float(args["k"])
            ones = torch.ones((3, 1, 2, 2), device="cuda")

            def harris():
                products = torch.stack([dx * dx, dy * dy, dx * dy])[None]
                s = F.conv2d(F.pad(products, (0, 1, 0, 1)), ones, groups=3)[0]
                xx, yy, xy = s[0], s[1], s[2]
                result["output"] = xx * yy - xy * xy - k * (xx + yy) * (xx + yy)
            return PeerRun(timed(harris), lambda: {"output": result["output"].cpu().numpy()})
        if f == "convolution3d":
            src = gpu(args["input"])[None, None]
            weight = gpu(np.ascontiguousarray(filter3d(args)[::-1, ::-1, ::-1]))[None, None]

            def conv3d():
                result["output"] = F.conv3d(F.pad(src, (1, 1, 1, 1, 1, 1), mode="replicate"), weight)
            return PeerRun(timed(conv3d), lambda: {"output": result["output"][0, 0].cpu().numpy()})
        raise NotOffered(f"torch has no {workload.family} operation")


def peers_for(device: str, threads: int, halide_schedulers: tuple[str, ...] = ()) -> list[Peer]:
    """The peers a --device run compares with."""
    if device == "nvidia":
        from .peer_halide_gpu import HalideGPUPeer
        from .peer_opencv_ocl import OpenCVOCLPeer

        return [CuPyPeer(), TorchPeer(), OpenCVOCLPeer(), HalideGPUPeer()]
    from .peer_halide import SCHEDULERS, HalidePeer

    return [SciPyPeer(), OpenCVPeer(threads), HalidePeer(threads, tuple(halide_schedulers) or SCHEDULERS)]
