"""A built variant handed to the caller: the pyopencl Program and Kernel, the launch sizes and the
argument list, for enqueueing it directly (`Program.build`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..codegen.variant import KernelArg
from ..errors import ArgumentError


@dataclass
class BuiltKernel:
    """One variant of a program, built for one queue's device at one problem size.

    `kernel` is a Kernel object of its own (setting its arguments does not disturb `prog(...)`).
    `arguments` lists the OpenCL kernel's arguments in order: each names the `.icl` parameter it
    comes from and its role ('buffer', 'image', 'extent', 'length', 'scalar', 'tile').
    `set_args(**arrays_and_scalars)` sets them from device arrays (pyopencl.array.Array) and
    numbers, named as in the `.icl` source; written arrays are written in place, and an array
    read through image memory is copied into an image on the device at every set_args.
    `enqueue(queue)` and `built(queue, **args)` enqueue it with these sizes.
    """

    program: Any  # pyopencl.Program
    kernel: Any  # pyopencl.Kernel
    kernel_name: str
    global_size: tuple[int, ...]
    local_size: Optional[tuple[int, ...]]
    arguments: list[KernelArg]
    size: tuple[int, ...]  # width, height[, depth]: the problem size it was built for
    configuration: Optional[dict]  # None: the naive variant
    source: str
    queue: Any
    _owner: Any = field(repr=False, default=None)  # the Program
    _plan: Any = field(repr=False, default=None)
    _bound: dict = field(repr=False, default_factory=dict)  # keeps the bound memory alive

    def set_args(self, **arguments: Any) -> Any:
        """Check the arguments like `prog(...)` does and set them on `kernel`; returns it."""
        from . import interop
        from .arguments import prepare
        from .launcher import bind_kernel

        target = interop.resolve_target(None, self.queue, arguments)
        prepared = prepare(self._owner.info, dict(arguments), copy=False, device_ok=True)
        if prepared.zeros:
            raise ArgumentError("the built kernel allocates nothing: pass a device array for "
                                + ", ".join(f"'{n}'" for n in sorted(prepared.zeros)))
        host = [n for n, a in prepared.arrays.items() if not interop.is_device_array(a)]
        if host:
            raise ArgumentError(f"the built kernel takes device arrays (pyopencl.array.Array): '{host[0]}' is "
                                f"{type(prepared.arrays[host[0]]).__name__}")
        grid = tuple(reversed(prepared.grid_shape))
        if grid != tuple(self.size):
            raise ArgumentError(f"the kernel was built for size {'x'.join(map(str, self.size))}, the arguments "
                                f"have size {'x'.join(map(str, grid))}: build it for that size")
        launch = self._owner.launch_for(self._plan, prepared)
        memory: dict[str, Any] = {}
        for value in launch.values:
            if isinstance(value, tuple) and value[0] == "buffer":
                memory[value[1]] = prepared.arrays[value[1]].data
            elif isinstance(value, tuple) and value[0] == "image":
                memory[value[1]] = interop._image_from(target, prepared.arrays[value[1]], launch.images[value[1]])
        bind_kernel(self.kernel, launch, memory)
        self._bound = {"memory": memory, "arrays": prepared.arrays}
        return self.kernel

    def enqueue(self, queue: Any = None, wait_for: Optional[list] = None) -> Any:
        """Enqueue the kernel with its arguments as last set; returns the event."""
        import pyopencl as cl

        return cl.enqueue_nd_range_kernel(queue or self.queue, self.kernel, self.global_size, self.local_size,
                                          wait_for=wait_for)

    def __call__(self, queue: Any = None, wait_for: Optional[list] = None, **arguments: Any) -> Any:
        """set_args(**arguments) when any are given, then enqueue; returns the event."""
        if arguments:
            self.set_args(**arguments)
        return self.enqueue(queue, wait_for)
