"""Building OpenCL programs (cached per context and source) and launching kernels."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from ..errors import BuildError, ExecutionError
from . import buildlog
from .arguments import PreparedArgs
from .devices import context_and_queue
from .timing import check_work_group_limit

_BUILD_LOCK = threading.Lock()
_BUILT: dict[tuple, object] = {}


def _key(context, device, source: str, options: Sequence[str]) -> tuple:
    # the context's handle, not id(): a cached program retains its context, so the handle stays
    # unique, while a caller's Context object may be collected and its id() reused
    return (context.int_ptr, device.int_ptr, source, tuple(options))


def build(device, source: str, options: Sequence[str] = (), context=None):
    """The built pyopencl Program for `source` on `device` (in `context`, else our shared one),
    built once per process."""
    import pyopencl as cl

    if context is None:
        context, _ = context_and_queue(device)
    key = _key(context, device, source, options)
    with _BUILD_LOCK:
        program = _BUILT.get(key)
        if program is not None:
            return program
        try:
            # the compiler's warnings stay out of the output (shown with IMAGECL_BUILD_LOG=1)
            program, said = buildlog.captured(
                lambda: cl.Program(context, source).build(options=list(options), devices=[device]))
        except cl.Error as exc:
            log = _build_log(exc, device)
            extra = buildlog.chatter(exc)
            raise BuildError(
                f"the OpenCL compiler of '{device.name.strip()}' rejected the kernel",
                log + (f"\n{extra}" if extra and extra not in log else ""), source
            ) from None
        buildlog.show(program_log(program, device) or said, f"a kernel on '{device.name.strip()}'")
        _BUILT[key] = program
        return program


def is_built(device, source: str, options: Sequence[str] = ()) -> bool:
    """Whether this process holds `source` built (or preloaded) for `device`."""
    context, _ = context_and_queue(device)
    return _key(context, device, source, options) in _BUILT


def preload(device, source: str, binary: bytes, options: Sequence[str] = ()) -> bool:
    """Register a cached binary for `source`, so that build() need not compile it again.
    Returns False (and registers nothing) when the driver rejects the binary."""
    import pyopencl as cl

    context, _ = context_and_queue(device)
    key = _key(context, device, source, options)
    with _BUILD_LOCK:
        if key in _BUILT:
            return True
        try:
            program, _ = buildlog.captured(lambda: cl.Program(context, [device], [binary]).build(options=list(options)))
        except cl.Error:
            return False
        _BUILT[key] = program
        return True


def forget(device, source: str, options: Sequence[str] = ()) -> None:
    """Drop this process's built program of `source` (and its kernel objects): a measurement of
    tens of thousands of sources would otherwise keep every one of them alive."""
    context, _ = context_and_queue(device)
    with _BUILD_LOCK:
        program = _BUILT.pop(_key(context, device, source, options), None)
        if program is not None:
            for key in [k for k in _KERNELS if k[0] == id(program)]:
                del _KERNELS[key]  # keyed by id(): a later program could reuse it


def binary_of(device, source: str, options: Sequence[str] = ()) -> Optional[bytes]:
    """The binary of `source` if this process has built it (for the on-disk build cache)."""
    import pyopencl as cl

    context, _ = context_and_queue(device)
    program = _BUILT.get(_key(context, device, source, options))
    if program is None:
        return None
    try:
        return bytes(program.get_info(cl.program_info.BINARIES)[0])
    except cl.Error:
        return None


def _build_log(exc, device) -> str:
    return str(exc)


def program_log(program, device) -> str:
    """The build log of a built program on `device` ("" when the driver kept none)."""
    import pyopencl as cl

    try:
        return str(program.get_build_info(device, cl.program_build_info.LOG) or "").strip()
    except cl.Error:
        return ""


_KERNELS: dict[tuple[int, str], object] = {}


def _kernel(program, name: str):
    """One kernel object per built program (pyopencl warns when it is fetched repeatedly)."""
    key = (id(program), name)
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = _KERNELS[key] = getattr(program, name)
    return kernel


def check_launch(program, kernel_name: str, device, local_size) -> None:
    """ExecutionError when `local_size` is over what the built kernel allows on `device` (its
    registers can lower the device's limit): once per built program and launch, not per call."""
    check_work_group_limit(_kernel(program, kernel_name), device, local_size)


@dataclass
class Launch:
    """One launch: kernel argument values in order, sizes, and which arrays travel as images.

    A value is a NumPy scalar, ('buffer', name) or ('image', name) for an array argument, or
    ('local', nbytes) for a local-memory tile.
    """

    values: list
    global_size: tuple[int, ...]
    local_size: Optional[tuple[int, ...]]
    images: dict[str, int] = field(default_factory=dict)  # name -> dimensions


_CHANNEL_TYPES = {
    "float32": "FLOAT", "uint8": "UNSIGNED_INT8", "int8": "SIGNED_INT8", "uint16": "UNSIGNED_INT16",
    "int16": "SIGNED_INT16", "uint32": "UNSIGNED_INT32", "int32": "SIGNED_INT32",
}


def image_format(dtype: np.dtype, shape: tuple[int, ...], dims: int):
    """The image format of pixels of `dtype` in an array of `shape` (one channel, or RGBA for
    4-vector pixels)."""
    import pyopencl as cl

    channels = shape[-1] if len(shape) > dims else 1
    order = cl.channel_order.RGBA if channels == 4 else cl.channel_order.R
    return cl.ImageFormat(order, getattr(cl.channel_type, _CHANNEL_TYPES[np.dtype(dtype).name]))


def make_image(context, host: np.ndarray, dims: int):
    """A read-only OpenCL image holding `host` (one channel, or RGBA for 4-vector pixels);
    `dims` 1 makes a 1-D image (a fixed-size array read through image memory)."""
    import pyopencl as cl

    fmt = image_format(host.dtype, host.shape, dims)
    shape = tuple(reversed(host.shape[:dims]))
    return cl.create_image(context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, fmt, shape=shape,
                           hostbuf=host)


def upload(device, prepared: PreparedArgs, launch: Launch) -> dict:
    """Device memory for every array argument of `launch`."""
    import pyopencl as cl

    context, _ = context_and_queue(device)
    mf = cl.mem_flags
    memory = {}
    for value in launch.values:
        if isinstance(value, tuple) and value[0] == "buffer":
            memory[value[1]] = cl.Buffer(context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=prepared.arrays[value[1]])
        elif isinstance(value, tuple) and value[0] == "image":
            memory[value[1]] = make_image(context, prepared.arrays[value[1]], launch.images[value[1]])
    return memory


def bind(program, kernel_name: str, launch: Launch, memory: dict):
    """Our one kernel object of `program`, its arguments set for `launch` (arrays from `memory`).
    A number already set at its position by the previous bind() is not set again (a driver may
    take microseconds per argument); memory always is, as a freed handle may come back as
    another buffer. Only here: nothing else sets the arguments of our kernel objects."""
    import pyopencl as cl

    kernel = _kernel(program, kernel_name)
    last = getattr(kernel, "_imagecl_numbers", None)
    kernel._imagecl_numbers = None  # until every argument below is set
    if last is None or len(last) != len(launch.values):
        last = [None] * len(launch.values)
    for i, v in enumerate(launch.values):
        if isinstance(v, tuple) and v[0] in ("buffer", "image"):
            kernel.set_arg(i, memory[v[1]])
            last[i] = None
        elif isinstance(v, tuple) and v[0] == "local":
            kernel.set_arg(i, cl.LocalMemory(max(int(v[1]), 4)))
            last[i] = None
        else:
            key = (v.dtype, v.tobytes()) if isinstance(v, np.generic) else None
            if key is None or last[i] != key:
                kernel.set_arg(i, v)
            last[i] = key
    kernel._imagecl_numbers = last
    return kernel


def bind_kernel(kernel, launch: Launch, memory: dict):
    import pyopencl as cl

    args = []
    for v in launch.values:
        if isinstance(v, tuple) and v[0] in ("buffer", "image"):
            args.append(memory[v[1]])
        elif isinstance(v, tuple) and v[0] == "local":
            args.append(cl.LocalMemory(max(int(v[1]), 4)))
        else:
            args.append(v)
    kernel.set_args(*args)
    return kernel


def run_kernel(device, program, kernel_name: str, launch: Launch,
               prepared: PreparedArgs) -> tuple[dict[str, np.ndarray], float]:
    """Upload the arrays, launch once, download the written arrays; returns (outputs, seconds)."""
    import pyopencl as cl

    _, queue = context_and_queue(device)
    memory: dict = {}
    try:
        memory = upload(device, prepared, launch)
        kernel = bind(program, kernel_name, launch, memory)
        check_work_group_limit(kernel, device, launch.local_size)
        event = cl.enqueue_nd_range_kernel(queue, kernel, launch.global_size, launch.local_size)
        event.wait()
        seconds = (event.profile.end - event.profile.start) * 1e-9
        outputs = {}
        for name in prepared.outputs:
            out = np.empty_like(prepared.arrays[name])
            cl.enqueue_copy(queue, out, memory[name])
            outputs[name] = out
        queue.finish()
    except cl.Error as exc:
        raise ExecutionError(f"running kernel '{kernel_name}' failed on '{device.name.strip()}' "
                             f"(global {launch.global_size}, local {launch.local_size}): {exc}") from None
    finally:
        for m in memory.values():
            m.release()
    return outputs, seconds
