"""Running a program once in a child process, so that a kernel that never ends can be stopped.

An OpenCL kernel cannot be cancelled: a process whose queue holds one that hangs can neither
finish it nor release its context. With a timeout, `Program.run` therefore runs in a 'spawn'
child that is killed when the run takes longer, and the caller gets an ExecutionError; the
arguments are checked in the caller first, so that mistakes are reported as without a timeout.
"""
from __future__ import annotations

import math
import multiprocessing
import traceback
from typing import Any, Optional

import numpy as np

from .. import errors
from ..errors import ExecutionError, ImageCLError
from .arguments import PreparedArgs
from .memory import ResourceError, check_host, prepared_buffers

# starting the child (Python, pyopencl, the program) and building the kernel may take this long
# whatever the timeout: the timeout is the run's (upload, kernel, download)
START_SECONDS = 120.0

_ERRORS = {cls.__name__: cls for cls in (errors.ArgumentError, errors.DeviceError, errors.ConfigError,
                                         errors.ExecutionError, errors.BuildError, ResourceError)}


def check_timeout(value: Any, what: str = "timeout") -> float:
    """`value` as a number of seconds if it is a finite positive number, else an ArgumentError:
    a timeout of 0, a negative one or NaN would stop (or record as a timeout) every run."""
    try:
        seconds = float(value) if not isinstance(value, (bool, str)) else math.nan
    except (TypeError, ValueError, OverflowError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise errors.ArgumentError(f"{what} must be a finite number of seconds > 0, got {value!r}")
    return seconds


def _child(conn, setup: dict) -> None:
    """The child: build, say so, run, send the outputs (or the error)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's, which then kills this process
    try:
        import imagecl
        from imagecl.runtime import launcher
        from imagecl.runtime.arguments import prepare
        from imagecl.runtime.devices import _all_devices

        program = imagecl.compile(setup["source"], setup["filename"])
        device = _all_devices()[setup["device_index"]]
        prepared = prepare(program.info, setup["arguments"])
        plan = program.plan(setup["config"], device)  # the caller's choice (None: the naive variant)
        built = launcher.build(device, program.source_of(plan))
        conn.send({"built": True})
        outputs, seconds = launcher.run_kernel(device, built, program.kernel_symbol,
                                               program.launch_for(plan, prepared), prepared)
        conn.send({"outputs": outputs, "seconds": seconds})
    except ImageCLError as exc:
        conn.send({"error": type(exc).__name__, "message": str(exc)})
    except Exception as exc:  # noqa: BLE001 - a bug: reported to the caller as one
        conn.send({"error": None, "message": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()})


def run_isolated(program, prepared: PreparedArgs, device: Any, config: Optional[dict],
                 timeout: float) -> tuple[dict[str, np.ndarray], float]:
    """Run `program` (a full `config`, or None: the naive variant) on `prepared` arguments on
    `device` in a child process; an ExecutionError when the run takes over `timeout` seconds."""
    from ..tuner.spawn import main_module_hidden
    from .devices import _all_devices

    # the arrays travel pickled to the child, which holds its own copy
    check_host(prepared_buffers(program.info, prepared.arrays), "the arguments of a run in a child process",
               copies=2)
    setup = {"source": program.info.unit.source, "filename": program.filename,
             "device_index": list(_all_devices()).index(device), "config": config,
             "arguments": {**prepared.arrays, **prepared.scalars}}
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_child, args=(child, setup), daemon=True)
    with main_module_hidden():
        process.start()
    child.close()
    try:
        reply = _receive(parent, max(timeout, START_SECONDS), process)
        if reply is None:
            raise ExecutionError(f"'{program.name}' did not start within {max(timeout, START_SECONDS):g} s "
                                 "(building the kernel hung?); the run was stopped")
        if reply.get("built"):
            reply = _receive(parent, timeout, process)
            if reply is None:
                raise ExecutionError(f"'{program.name}' did not finish within {timeout:g} s on "
                                     f"'{device.name.strip()}': the kernel hangs or needs more time (allow more "
                                     "with a larger timeout); the run was stopped")
        if "error" in reply:
            cls = _ERRORS.get(reply["error"] or "")
            if cls is not None:
                raise cls(reply["message"])
            if reply["error"] is not None:
                raise ImageCLError(reply["message"])
            raise RuntimeError(f"the run's child process failed: {reply['message']}\n{reply.get('trace', '')}")
        return reply["outputs"], reply["seconds"]
    finally:
        if process.is_alive():
            process.kill()
        process.join(5)
        parent.close()


def _receive(conn, seconds: float, process) -> Optional[dict]:
    if not conn.poll(seconds):
        return None
    try:
        return conn.recv()
    except EOFError:
        process.join(5)
        raise ExecutionError(f"the run's process died (exit code {process.exitcode}): the kernel crashed the "
                             "OpenCL driver?") from None
