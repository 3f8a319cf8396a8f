"""`prog(...)` and `prog.run(...)` on a wavefront program: which split and which devices.

The split is `split=` (a Split or a dict of its fields), else `config=` (the same; "naive" is the
sequential run: the CPU device, one tile of the whole grid), else the split `imagecl tune`
recorded for this program on this CPU at this size (the nearest tuned size), else the model's
prediction when a trained model is installed (model.py), else all on the CPU in tiles of 8."""
from __future__ import annotations

from typing import Any, Mapping, Optional

from ..errors import ArgumentError, ConfigError
from .devices import Devices, wavefront_devices
from .executor import Result, run_wavefront
from .split import Split

DEFAULT = Split(cpu_tile=8)


def sequential(width: int, height: int) -> Split:
    """One tile of the whole grid on the CPU device: one work-item computes every point in row-major
    order (the optimised sequential baseline: compiled C, one core, no launches but one)."""
    return Split(cpu_tile=max(width, height))


def choose_split(program, arguments: Mapping[str, Any], devices: Devices, config: Any, split: Any) -> Split:
    if split is not None and config is not None:
        raise ArgumentError("give the wavefront split once: split= or config=, not both")
    given = split if split is not None else config
    if isinstance(given, str):
        from ..program import is_naive

        is_naive(given)  # any string but "naive" is a ConfigError
        out = arguments.get(program.info.wavefront)
        shape = getattr(out, "shape", (1, 1))
        return sequential(int(shape[1]), int(shape[0]))
    if given is not None:
        return Split.of(given)
    out = arguments.get(program.info.wavefront)
    size = None if out is None or not hasattr(out, "shape") else (int(out.shape[1]), int(out.shape[0]))
    from .. import tuned

    found = tuned.lookup(program, devices.cpu, size) if tuned.has_records(program) else None
    if found is not None:
        try:
            return Split.of(found.configuration)
        except ConfigError:
            pass
    if size is not None:
        from .model import predict_installed

        predicted = predict_installed(program, arguments, devices, size)
        if predicted is not None:
            return predicted
    return DEFAULT


def run_program(program, arguments: Mapping[str, Any], device: Any, config: Any, split: Any, *, timeout: Any,
                queue: Any, returns: str, allocator: Any, cast: bool = False,
                gpus: Optional[list] = None) -> Result:
    if timeout is not None or queue is not None or allocator is not None or returns != "numpy":
        raise ArgumentError(f"'{program.name}' is a wavefront program: it runs on a CPU and GPUs at once and takes "
                            "and returns NumPy arrays only (no timeout=, queue=, allocator= or returns='device')")
    devices = wavefront_devices(device, gpus)
    chosen = choose_split(program, arguments, devices, config, split)
    if chosen.gpu_count > len(devices.gpus):  # a recorded or predicted split for more GPUs than here
        if split is not None or config is not None:
            raise ConfigError(f"the split uses {chosen.gpu_count} GPU(s); {len(devices.gpus)} are available "
                              f"({devices.describe()})")
        chosen = DEFAULT
    return run_wavefront(program, arguments, chosen, devices, cast)
