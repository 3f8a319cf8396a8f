"""The measurement worker: a separate process that builds, launches, times and verifies variants.

The engine (engine.py) talks to it over a pipe and kills it when it hangs or dies; everything
the worker needs arrives in one setup message, so a fresh worker can replace it at any time.
"""
from __future__ import annotations

import time
import traceback
from typing import Any

from ..runtime.timing import MIN_TIMED, settle
from .censor import CensorRule, slow_fields
from .store import canonical_config


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
        censor, known = CensorRule.from_message(message.get("censor"))
        if known is not None:
            best = min(best, float(known))  # the engine's best (earlier workers', earlier runs')
        built = set()
        for config in message["configs"]:
            if retime:
                # exactly `retime` launches, added to the stored ones (which hold MIN_TIMED or more)
                result = _measure_one(config, runner, device, cache, int(retime), int(retime), max_spread, setup,
                                      float("inf"), floor=1)
            else:
                result = _measure_one(config, runner, device, cache, repeats, max_repeats, max_spread, setup, best,
                                      censor=censor)
            if result.get("time") is not None:
                best = min(best, result["time"])
            built.add(result.pop("built", None))
            conn.send(result)
        if message.get("forget"):  # the group's source is not needed again (pipelined measurement)
            _forget(device, built - {None})


def _forget(device, built: set) -> None:
    from imagecl.runtime import launcher

    for source, options in built:
        launcher.forget(device, source, options)


def _measure_one(config, runner, device, cache, repeats, max_repeats, max_spread, setup, best: float,
                 floor: int = MIN_TIMED, censor: CensorRule = CensorRule()) -> dict:
    """One configuration's result: at least `floor` timed launches after a checked warm-up launch,
    more rounds while the spread is large (see settle). A variant whose median is over 4x the best
    so far is not a contender: it gets at most one extra round (its order among the slow ones
    does not decide anything), a contender as many as `max_repeats` and the time budget allow."""
    import imagecl
    from imagecl.runtime import launcher

    from .buildcache import build_key

    result: dict[str, Any] = {"config": config}
    key, cached = None, False
    # where the worker's time goes (the engine adds them up): code generation, loading a cached
    # binary, building one not cached, and the checked, timed and settling launches
    seconds = result["seconds"] = {"generate": 0.0, "load": 0.0, "build": 0.0, "launch": 0.0}
    clock = time.perf_counter()
    try:
        source, options = runner.build_input(config)
        result["built"] = (source, tuple(options))
        seconds["generate"] = time.perf_counter() - clock
        if cache is not None:
            key = build_key(source, options, device.name.strip(), device.driver_version.strip())
            binary = cache.get(key)
            error = cache.error(key)
            if error is not None:
                cached = True
                raise imagecl.BuildError("the OpenCL compiler rejected the kernel", error, source)
            if binary is not None:
                cached = launcher.preload(device, source, binary, options)
        seconds["load"] = time.perf_counter() - clock - seconds["generate"]
        if not cached and device is not None:  # built here, on its own clock (else the launches below build it)
            launcher.build(device, source, options)
            seconds["build"] = time.perf_counter() - clock - seconds["generate"] - seconds["load"]
        count = max(repeats, floor)
        bound = censor.bound(best)  # a checked launch over it ends the measurement (censor.py)
        audited = bound is not None and censor.audited(canonical_config(config))
        stop = {}  # (runners without censoring are asked nothing new)
        if bound is not None:
            stop = {"probe": censor.probe} if censor.probe else {}
            if not audited:
                stop["stop_above"] = bound
        timing = runner.time(config, repeats=count, verify=True, read_outputs=False, **stop)
        if timing.problem:
            result.update(status="wrong_output", error=timing.problem, time=None)
            seconds["launch"] = time.perf_counter() - clock - sum(seconds.values())
            return result
        if timing.censored:
            probed = timing.first is None  # stopped by the probe, before the checked launch
            result.update(slow_fields(timing.probe if probed else timing.first, bound, censor.factor,
                                      censor.probe if probed else 0.0))
            seconds["launch"] = time.perf_counter() - clock - sum(seconds.values())
            return result
        contender = timing.median <= 4 * best
        timing = settle(timing, lambda: runner.time(config, repeats=count, read_outputs=False), max_spread,
                        max_repeats, float(setup.get("max_seconds", 1.0)), max_rounds=None if contender else 1)
        result.update(times=timing.times, time=timing.median, spread=timing.spread, status="ok",
                      verified=bool(setup.get("verify", True)))
        if audited and ((timing.first is not None and timing.first > bound) or (timing.probe or 0.0) > bound):
            # would have been censored: the audit's evidence (tuner/censor.py)
            result["audit"] = {"first": timing.first, "median": timing.median, "best": best, "probe": timing.probe}
        seconds["launch"] = time.perf_counter() - clock - sum(seconds.values())
        seconds["kernel"] = float(sum(timing.times))  # of the launch's wall time, the timed launches' own
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
