"""Building OpenCL programs (cached per context and source) and launching kernels."""
from __future__ import annotations

import threading
import warnings
from typing import Optional, Sequence

import numpy as np

from ..errors import BuildError, ExecutionError
from .arguments import PreparedArgs
from .devices import context_and_queue

_BUILD_LOCK = threading.Lock()
_BUILT: dict[tuple, object] = {}


def build(device, source: str, options: Sequence[str] = ()):
    """The built pyopencl Program for `source` on `device`, built once per process."""
    import pyopencl as cl

    context, _ = context_and_queue(device)
    key = (id(context), source, tuple(options))
    with _BUILD_LOCK:
        program = _BUILT.get(key)
        if program is not None:
            return program
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # pyopencl warns on non-empty build logs
                program = cl.Program(context, source).build(options=list(options))
        except cl.Error as exc:
            log = _build_log(exc, device)
            raise BuildError(
                f"the OpenCL compiler of '{device.name.strip()}' rejected the generated kernel", log, source
            ) from None
        _BUILT[key] = program
        return program


def _build_log(exc, device) -> str:
    return str(exc)


_KERNELS: dict[tuple[int, str], object] = {}


def _kernel(program, name: str):
    """One kernel object per built program (pyopencl warns when it is fetched repeatedly)."""
    key = (id(program), name)
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = _KERNELS[key] = getattr(program, name)
    return kernel


def run_kernel(device, program, kernel_name: str, kernel_arg_values: list, global_size: tuple[int, ...],
               local_size: Optional[tuple[int, ...]], prepared: PreparedArgs, buffer_names: list[str],
               written: Sequence[str]) -> tuple[dict[str, np.ndarray], float]:
    """Upload the arrays, launch once, download the written arrays; returns (outputs, seconds)."""
    import pyopencl as cl

    context, queue = context_and_queue(device)
    mf = cl.mem_flags
    buffers = {}
    try:
        for name in buffer_names:
            host = prepared.arrays[name]
            buffers[name] = cl.Buffer(context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host)
        kernel = _kernel(program, kernel_name)
        values = [buffers[v[1]] if isinstance(v, tuple) and v[0] == "buffer" else v for v in kernel_arg_values]
        kernel.set_args(*values)
        event = cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size)
        event.wait()
        seconds = (event.profile.end - event.profile.start) * 1e-9
        outputs = {}
        for name in written:
            out = np.empty_like(prepared.arrays[name])
            cl.enqueue_copy(queue, out, buffers[name])
            outputs[name] = out
        queue.finish()
    except cl.Error as exc:
        raise ExecutionError(f"running kernel '{kernel_name}' failed on '{device.name.strip()}': {exc}") from None
    finally:
        for b in buffers.values():
            b.release()
    return outputs, seconds
