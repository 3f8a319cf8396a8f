"""The measurement worker: a separate process that builds, launches, times and verifies variants.

The engine (engine.py) talks to it over a pipe and kills it when it hangs or dies; everything
the worker needs arrives in one setup message, so a fresh worker can replace it at any time.
"""
from __future__ import annotations

import traceback
from typing import Any


def classify(exc: BaseException) -> str:
    """The status of a failed measurement, from the exception that ended it."""
    from ..errors import BuildError, ConfigError, ExecutionError

    text = str(exc)
    if isinstance(exc, BuildError):
        return "build_error"
    if isinstance(exc, ConfigError):
        return "invalid_config"
    if "WORK_GROUP" in text.upper() or "work-group size" in text:
        return "invalid_work_group"
    if any(s in text.upper() for s in ("OUT_OF_RESOURCES", "OUT_OF_HOST_MEMORY", "MEM_OBJECT_ALLOCATION",
                                        "INVALID_KERNEL_ARGS", "LOCAL_MEM")):
        return "out_of_resources"
    if isinstance(exc, ExecutionError):
        return "out_of_resources"
    return "error"


def worker_main(conn, setup: dict) -> None:
    """Entry point of the worker process (multiprocessing, 'spawn')."""
    try:
        from imagecl.runtime.devices import _all_devices

        from .buildcache import BuildCache
        from .target import make_runner

        device = _all_devices()[setup["device_index"]]
        # "built": what remains is running the reference, which the engine's watchdog times
        runner = make_runner(setup, device, on_built=lambda: conn.send({"built": True}))
        cache = BuildCache(setup["cache_dir"]) if setup.get("cache_dir") else None
        conn.send({"ready": True})
    except Exception as exc:  # noqa: BLE001 - report anything that stops the worker from starting
        conn.send({"ready": False, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()})
        return

    repeats, max_repeats, max_spread = setup.get("repeats", 3), setup.get("max_repeats", 10), setup.get("max_spread", 0.1)
    best = float("inf")  # the fastest verified time so far in this worker
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        # a group of configurations (one source, many launches); one result is sent per configuration
        retime = message.get("repeats")  # re-timing contenders: exactly that many launches, no early cut
        for config in message["configs"]:
            if retime:
                result = _measure_one(config, runner, device, cache, int(retime), int(retime), max_spread, setup,
                                      float("inf"))
            else:
                result = _measure_one(config, runner, device, cache, repeats, max_repeats, max_spread, setup, best)
            if result.get("time") is not None:
                best = min(best, result["time"])
            conn.send(result)


def _measure_one(config, runner, device, cache, repeats, max_repeats, max_spread, setup, best: float) -> dict:
    import imagecl
    from imagecl.runtime import launcher

    from .buildcache import build_key

    result: dict[str, Any] = {"config": config}
    key, cached = None, False
    try:
        source, options = runner.build_input(config)
        if cache is not None:
            key = build_key(source, options, device.name.strip(), device.driver_version.strip())
            binary = cache.get(key)
            error = cache.error(key)
            if error is not None:
                cached = True
                raise imagecl.BuildError("the OpenCL compiler rejected the kernel", error, source)
            if binary is not None:
                cached = launcher.preload(device, source, binary, options)
        # a variant whose checked launch is over 4x slower than the best so far is not a contender:
        # that launch is its one measurement (repeating it would only cost time)
        timing = runner.time(config, repeats=repeats, verify=True, read_outputs=False,
                             max_seconds=min(setup.get("max_seconds", 2.0), 4 * best))
        if timing.problem:
            result.update(status="wrong_output", error=timing.problem, time=None)
            return result
        # more repeats while the spread stays large (noisy device, or a first-touch effect)
        while timing.spread > max_spread and len(timing.times) < max_repeats and sum(timing.times) < 1.0:
            extra = runner.time(config, repeats=repeats, warmup=1, read_outputs=False)
            timing.times.extend(extra.times)
        result.update(times=timing.times, time=timing.median, spread=timing.spread, status="ok",
                      verified=bool(setup.get("verify", True)))
    except Exception as exc:  # noqa: BLE001 - every failure is recorded, none stops the run
        result.update(status=classify(exc), error=str(exc)[:4000], time=None)
        if key is not None and not cached and isinstance(exc, imagecl.BuildError):
            cache.put_error(key, exc.log or str(exc))  # the compiler's verdict, for later runs
            cached = True
    if key is not None and not cached:
        # built here (not ahead): keep the binary, so a later run or a restarted worker skips the build
        binary = launcher.binary_of(device, source, options)
        if binary is not None:
            cache.put(key, binary)
    return result
