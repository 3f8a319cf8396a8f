"""OpenCV's OpenCL path (the transparent API: cv2.UMat) on the NVIDIA GPU, a peer of peers.py.

The inputs are uploaded to UMats and the outputs preallocated as UMats before any timing; one
timing is the OpenCV function on those UMats, repeated back to back so that it spans about 2 ms
(at most 20 calls; OpenCV queues its kernels without waiting), then `cv2.ocl.finish()`, by the wall
clock divided by the number of calls (peer_timing.BatchedTimer). OpenCV picks its OpenCL device from OPENCV_OPENCL_DEVICE
(set here to NVIDIA's GPU unless the caller set it); the device it picked is part of the version
string in the report, and a device that is not the wanted vendor's means the peer is not offered.
Operations OpenCV has no OpenCL kernel for (it would silently run its CPU code on mapped UMats)
are not offered: medianBlur above 5x5, anything 3-D.
"""
from __future__ import annotations

import os
from typing import Callable, Optional

import numpy as np

from .peer_impls import NotOffered, Peer, PeerRun, cv2_harris, harris_window
from .peer_timing import BatchedTimer
from .peer_workloads import Workload

OCL_MEDIAN_SIZES = (3, 5)  # OpenCV's ocl_medianFilter: kernels for 3x3 and 5x5 only


class OpenCVOCLPeer(Peer):
    name, module = "OpenCV OpenCL (UMat)", "cv2"
    device = "nvidia"
    timing = ("wall clock over 1 to 20 back-to-back calls (about 2 ms) and cv2.ocl.finish(), divided by their "
              "number; UMat inputs and outputs already on the device")

    def __init__(self, vendor: Optional[str] = "NVIDIA", use_opencl: bool = True) -> None:
        """`vendor`: the OpenCL device's vendor it must run on (None: any, or the CPU fallback when
        `use_opencl` is False: the tests' check of the calls without a GPU)."""
        self.vendor = vendor
        self.use_opencl = use_opencl
        self.device_name = None
        if vendor and use_opencl:
            # read when OpenCV first creates its OpenCL context, which nothing before this peer does
            os.environ.setdefault("OPENCV_OPENCL_DEVICE", f"{vendor}:GPU:")

    def missing(self) -> Optional[str]:
        problem = super().missing()
        if problem:
            return problem
        import cv2

        cv2.ocl.setUseOpenCL(self.use_opencl)
        if not self.use_opencl:
            return None
        if not cv2.ocl.haveOpenCL() or not cv2.ocl.useOpenCL():
            return "not offered: OpenCV finds no usable OpenCL device (cv2.ocl.useOpenCL() is False)"
        device = cv2.ocl.Device.getDefault()
        self.device_name = f"{device.name()} ({device.vendorName()}, {device.version()})"
        if self.vendor and self.vendor.lower() not in (device.vendorName() + device.name()).lower():
            return f"not offered: OpenCV's OpenCL device is {self.device_name}, not the {self.vendor} GPU"
        return None

    def version(self) -> str:
        return super().version() + (f", OpenCL device {self.device_name}" if self.device_name else "")

    def prepare(self, workload: Workload, args: dict) -> PeerRun:
        import cv2

        cv2.ocl.setUseOpenCL(self.use_opencl)

        def up(array: np.ndarray):
            return cv2.UMat(np.ascontiguousarray(array))

        def like(array: np.ndarray):
            return cv2.UMat(array.shape[0], array.shape[1], _cv_type(cv2, array.dtype))

        def timed(call: Callable[[], None]) -> Callable[[], float]:
            return BatchedTimer(call, cv2.ocl.finish).calibrated().once

        f = workload.family
        if f == "convolution":
            src, out = up(args["input"]), like(args["input"])
            kernel = np.ascontiguousarray(args["filter"][::-1, ::-1])  # filter2D correlates
            return PeerRun(timed(lambda: cv2.filter2D(src, -1, kernel, dst=out, borderType=cv2.BORDER_REPLICATE)),
                           lambda: {"output": out.get()})
        if f == "sobel":
            src, dx, dy = up(args["input"]), like(args["input"]), like(args["input"])

            def sobel() -> None:
                cv2.Sobel(src, cv2.CV_32F, 1, 0, dst=dx, ksize=3, scale=0.125, borderType=cv2.BORDER_CONSTANT)
                cv2.Sobel(src, cv2.CV_32F, 0, 1, dst=dy, ksize=3, scale=0.125, borderType=cv2.BORDER_CONSTANT)
            return PeerRun(timed(sobel), lambda: {"dx": dx.get(), "dy": dy.get()})
        if f == "harris":
            dx, dy, k, window = up(args["dx"]), up(args["dy"]), float(args["k"]), harris_window()
            result: dict = {}

            def harris() -> None:
                result["output"] = cv2_harris(cv2, dx, dy, k, window)
            return PeerRun(timed(harris), lambda: {"output": result["output"].get()})
        if f == "median":
            size = 2 * workload.radius + 1
            if size not in OCL_MEDIAN_SIZES:
                sizes = " and ".join(map(str, OCL_MEDIAN_SIZES))
                raise NotOffered(f"OpenCV's OpenCL medianBlur has kernels for {sizes} only; {size}x{size} would run "
                                 "its CPU code")
            src, out = up(args["input"]), like(args["input"])
            return PeerRun(timed(lambda: cv2.medianBlur(src, size, dst=out)), lambda: {"output": out.get()})
        raise NotOffered(f"no OpenCL {workload.family} operation in OpenCV" + (" (2-D only)" if f in (
            "bilateral", "convolution3d") else ""))


def _cv_type(cv2, dtype: np.dtype) -> int:
    return {np.dtype(np.float32): cv2.CV_32F, np.dtype(np.uint8): cv2.CV_8U}[np.dtype(dtype)]
