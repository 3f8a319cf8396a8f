"""The device's copy bandwidth, the yardstick of memory-bound kernels in every benchmark here.

Two measurements, each counting bytes read plus bytes written: a STREAM-like float4 copy kernel
(best of several launches and work-group sizes) and the driver's buffer-to-buffer copy. On a GPU
they agree; PoCL's buffer copy is far below what its memory system delivers to a kernel.
"""
from __future__ import annotations

import numpy as np

from imagecl.runtime.devices import context_and_queue

_COPY = """
__kernel void stream_copy(__global const float4* restrict a, __global float4* restrict b) {
    const size_t i = get_global_id(0);
    b[i] = a[i];
}
"""


def copy_bandwidth(device, nbytes: int, repeats: int = 5) -> dict:
    """{"bytes_per_second" (copy kernel), "buffer_copy_bytes_per_second", "work_group" (the
    kernel's best local size, None: the driver's choice), "buffer_bytes"} for buffers of about
    `nbytes` (rounded down to whole float4s)."""
    import pyopencl as cl

    context, queue = context_and_queue(device)
    n = nbytes // 16
    a = cl.Buffer(context, cl.mem_flags.READ_WRITE, n * 16)
    b = cl.Buffer(context, cl.mem_flags.READ_WRITE, n * 16)
    cl.enqueue_fill_buffer(queue, a, np.float32(1), 0, n * 16).wait()
    kernel = cl.Program(context, _COPY).build().stream_copy
    kernel.set_args(a, b)

    def seconds(event) -> float:
        event.wait()
        return (event.profile.end - event.profile.start) * 1e-9

    best, best_local = float("inf"), None
    for local in (None, 64, 128, 256, 1024):
        if local is not None and (local > device.max_work_group_size or n % local):
            continue
        kernel_local = None if local is None else (local,)
        cl.enqueue_nd_range_kernel(queue, kernel, (n,), kernel_local).wait()  # warm-up
        for _ in range(repeats):
            t = seconds(cl.enqueue_nd_range_kernel(queue, kernel, (n,), kernel_local))
            if t < best:
                best, best_local = t, local
    cl.enqueue_copy(queue, b, a).wait()  # warm-up
    best_copy = min(seconds(cl.enqueue_copy(queue, b, a)) for _ in range(repeats))
    a.release()
    b.release()
    return {"bytes_per_second": 2 * n * 16 / best, "buffer_copy_bytes_per_second": 2 * n * 16 / best_copy,
            "work_group": best_local, "buffer_bytes": n * 16}
