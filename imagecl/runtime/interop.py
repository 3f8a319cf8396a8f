"""Running on pyopencl's own objects: a caller's queue and context, `pyopencl.array.Array`s in
and out, images filled from device memory on the device.

A run's target is the caller's queue (`queue=`), else the queue of the first device array among
the arguments, else our shared profiling queue of the chosen device. Device arrays that are only
read are used in place; every written array is a fresh device array (a device-side copy of the
given one, or zero-filled; neither where the kernel overwrites it whole: passes/coverage.py), so a
run never changes what the caller passed.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

import numpy as np

from ..errors import ArgumentError, ExecutionError
from .arguments import PreparedArgs
from .devices import context_and_queue, select_device
from .host_pages import touch_pages

RETURNS = ("numpy", "device")


def is_device_array(value: Any) -> bool:
    """Whether `value` is a pyopencl.array.Array (without importing pyopencl.array: a caller who
    has one has imported it)."""
    module = sys.modules.get("pyopencl.array")
    return module is not None and isinstance(value, module.Array)


@dataclass
class Target:
    device: Any
    context: Any
    queue: Any
    ours: bool  # our shared queue (profiling enabled), not the caller's
    allocator: Any = None  # what the written arrays are allocated with (None: pyopencl's default)

    @property
    def profiling(self) -> bool:
        import pyopencl as cl

        return bool(self.queue.properties & cl.command_queue_properties.PROFILING_ENABLE)


def check_returns(returns: Any) -> str:
    if not isinstance(returns, str) or returns not in RETURNS:
        shown = repr(returns) if isinstance(returns, str) else f"a {type(returns).__name__}"
        raise ArgumentError(f"returns= is 'numpy' (NumPy arrays, the default) or 'device' (pyopencl.array.Array "
                            f"on the run's queue), not {shown}")
    return returns


def resolve_target(device: Any, queue: Any, arguments: Mapping[str, Any], allocator: Any = None,
                   returns: str = "device") -> Target:
    """Where a run goes (see the module's docstring) and what its outputs are allocated with; an
    ArgumentError when the queue, the device and the device arrays disagree."""
    target = _target(device, queue, arguments)
    if allocator is not None:
        if not callable(allocator):
            raise ArgumentError(f"allocator= needs a pyopencl allocator (e.g. pyopencl.tools.MemoryPool), got "
                                f"{type(allocator).__name__}")
        target.allocator = allocator
    elif target.ours and returns == "numpy":
        target.allocator = _pool(target)
    else:  # as pyopencl.array operations do: the result's memory comes from the operand's allocator
        target.allocator = next((v.allocator for v in arguments.values() if is_device_array(v)), None)
    return target


_POOLS: dict[int, Any] = {}


def _pool(target: Target) -> Any:
    """A memory pool for the outputs of NumPy calls on our own queue of `context`: they are
    downloaded (blocking, after the kernel) and dropped within the call, so a block returns to
    the pool only when nothing on the device uses it any more, and the next call takes it
    without allocating."""
    return memory_pool(target.context, target.queue)


def memory_pool(context: Any, queue: Any) -> Any:
    """The memory pool of one of our own contexts (runtime.devices.context_and_queue), made on
    first use with its queue."""
    import pyopencl.tools as cl_tools

    pool = _POOLS.get(context.int_ptr)
    if pool is None:  # our queues live as long as the process: so do their pools
        pool = _POOLS[context.int_ptr] = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    return pool


def _target(device: Any, queue: Any, arguments: Mapping[str, Any]) -> Target:
    import pyopencl as cl

    arrays = {name: value for name, value in arguments.items() if is_device_array(value)}
    if queue is not None:
        if not isinstance(queue, cl.CommandQueue):
            raise ArgumentError(f"queue= needs a pyopencl.CommandQueue, got {type(queue).__name__}")
        target, origin = Target(queue.device, queue.context, queue, False), "the queue"
    elif arrays:
        name, first = next(iter(arrays.items()))
        if first.queue is None:
            raise ArgumentError(f"device array '{name}' has no queue: pass queue= (a pyopencl.CommandQueue "
                                "of its context)")
        target, origin = Target(first.queue.device, first.context, first.queue, False), f"device array '{name}'"
    else:
        chosen = select_device(device)
        context, our_queue = context_and_queue(chosen)
        return Target(chosen, context, our_queue, True)
    if device is not None and select_device(device) != target.device:
        raise ArgumentError(f"device= names '{select_device(device).name.strip()}', but {origin} is on "
                            f"'{target.device.name.strip()}': pass one of them")
    for name, array in arrays.items():
        if array.context != target.context:
            raise ArgumentError(f"device array '{name}' belongs to another OpenCL context than {origin}: "
                                "create it on that context (or pass it as NumPy with .get())")
        if array.offset:
            raise ArgumentError(f"device array '{name}' is a view at an offset into its buffer: pass a copy "
                                "(.copy())")
    return target


def check_device_layout(name: str, array: Any) -> None:
    """Kernels index arrays densely in C order."""
    if not array.flags.c_contiguous:
        raise ArgumentError(f"device array '{name}' is not C-contiguous (strides {array.strides}): pass a "
                            "contiguous copy")


def _image_from(target: Target, source: Any, dims: int):
    """A read-only image holding `source` (a host array, or a device array copied on the device)."""
    import pyopencl as cl

    from .launcher import image_format, make_image

    if not is_device_array(source):
        return make_image(target.context, np.ascontiguousarray(source), dims)
    region = tuple(reversed(source.shape[:dims]))
    image = cl.create_image(target.context, cl.mem_flags.READ_ONLY, image_format(source.dtype, source.shape, dims),
                            shape=region)
    cl.enqueue_copy(target.queue, image, source.data, offset=0, origin=(0,) * dims, region=region,
                    wait_for=source.events or None)
    return image


def _output_array(target: Target, name: str, prepared: PreparedArgs, overwritten: frozenset):
    """The fresh device array a written parameter is computed in: holding the given array's
    values, or zeros, unless the kernel overwrites it whole (`overwritten`)."""
    import pyopencl as cl
    import pyopencl.array as cla

    given = prepared.arrays[name]
    result = cla.empty(target.queue, given.shape, given.dtype, allocator=target.allocator)
    if target.allocator is not None and result.base_data.get_info(cl.mem_info.CONTEXT) != target.context:
        raise ArgumentError(f"allocator= allocates in another OpenCL context than the run's queue (output '{name}')")
    if name in overwritten:
        return result
    if is_device_array(given):
        result.add_event(cl.enqueue_copy(target.queue, result.base_data, given.base_data, byte_count=given.nbytes,
                                         wait_for=given.events or None))
    elif name in prepared.zeros:
        result.add_event(cl.enqueue_fill_buffer(target.queue, result.base_data, np.uint8(0), 0, result.nbytes))
    else:
        result.set(np.ascontiguousarray(given))
    return result


@dataclass
class Enqueued:
    event: Any  # the kernel's event
    outputs: dict  # written parameter -> its device array
    memory: dict = field(default_factory=dict)  # what the kernel reads, kept until finish() (pooled blocks)


def enqueue(target: Target, kernel_name: str, program: Any, launch: Any, prepared: PreparedArgs,
            overwritten: frozenset = frozenset()) -> Enqueued:
    """Put the arrays of `prepared` on the device (host arrays uploaded, device arrays used in
    place), bind and enqueue the kernel; returns without waiting for it. The written arrays in
    `overwritten` (passes/coverage.py) start uninitialised."""
    import pyopencl as cl

    from .launcher import bind

    memory: dict[str, Any] = {}
    outputs: dict[str, Any] = {}
    waits: list = []
    try:
        for name in prepared.outputs:
            outputs[name] = memory[name] = _output_array(target, name, prepared, overwritten)
        for value in launch.values:
            if not (isinstance(value, tuple) and value[0] in ("buffer", "image")):
                continue
            role, name = value
            given = prepared.arrays[name]
            if role == "image":
                memory[name] = _image_from(target, given, launch.images[name])
            elif name not in memory:
                if is_device_array(given):
                    memory[name] = given
                    waits.extend(given.events)
                elif target.ours and target.allocator is not None:  # a NumPy call: from its pool, no allocation
                    memory[name] = target.allocator(given.nbytes)
                    waits.append(cl.enqueue_copy(target.queue, memory[name], np.ascontiguousarray(given),
                                                 is_blocking=False))
                else:
                    memory[name] = cl.Buffer(target.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                                             hostbuf=np.ascontiguousarray(given))
        buffers = {n: (m.data if is_device_array(m) else m) for n, m in memory.items()}
        kernel = bind(program, kernel_name, launch, buffers)
        waits.extend(e for a in outputs.values() for e in a.events)
        event = cl.enqueue_nd_range_kernel(target.queue, kernel, launch.global_size, launch.local_size,
                                           wait_for=waits or None)
    except cl.Error as exc:
        raise ExecutionError(f"running kernel '{kernel_name}' failed on '{target.device.name.strip()}' "
                             f"(global {launch.global_size}, local {launch.local_size}): {exc}") from None
    for array in outputs.values():
        array.add_event(event)
    return Enqueued(event, outputs, memory)


def finish(target: Target, kernel_name: str, enqueued: Enqueued, returns: str,
           timed: bool) -> tuple[dict, Optional[float]]:
    """The outputs as `returns` asks and, when `timed`, the kernel's seconds (None when the queue does
    not profile). Device outputs untimed are returned at once: the queue orders what follows."""
    import pyopencl as cl

    try:
        if returns == "device":
            outputs = dict(enqueued.outputs)
            if not timed:
                return outputs, None
        else:
            # new host arrays, their pages mapped while the device runs (a driver's copy down into
            # pages never touched maps them one by one behind its staging buffer)
            outputs = {name: np.empty(array.shape, array.dtype) for name, array in enqueued.outputs.items()}
            touch_pages(outputs.values(), before=target.queue.flush)
            for name, array in enqueued.outputs.items():
                array.get(queue=target.queue, ary=outputs[name])
        enqueued.event.wait()
        seconds = None
        if timed and target.profiling:
            seconds = (enqueued.event.profile.end - enqueued.event.profile.start) * 1e-9
    except cl.Error as exc:
        raise ExecutionError(f"running kernel '{kernel_name}' failed on '{target.device.name.strip()}': {exc}") \
            from None
    return outputs, seconds
