"""An on-disk cache of built OpenCL programs, and building many sources in parallel.

Binaries are keyed by the source text, the build options, the device name and the driver
version, so a driver update or another device never reuses a stale binary. Building runs in
separate processes (each with its own OpenCL context), so a compiler that hangs or crashes
costs one build, not the run.
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import multiprocessing
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence, Union

from .spawn import main_module_hidden


def default_cache_dir() -> Path:
    base = os.environ.get("IMAGECL_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "imagecl")
    return Path(base) / "builds"


def build_key(source: str, options: Sequence[str], device_name: str, driver: str) -> str:
    h = hashlib.sha256()
    for part in (source, " ".join(options), device_name, driver):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


class BuildCache:
    def __init__(self, directory: Optional[Path] = None) -> None:
        self.directory = Path(directory) if directory else default_cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.bin"

    def get(self, key: str) -> Optional[bytes]:
        p = self.path(key)
        try:
            return p.read_bytes()
        except OSError:
            return None

    def error(self, key: str) -> Optional[str]:
        p = self.directory / f"{key}.err"
        try:
            return p.read_text()
        except OSError:
            return None

    def put(self, key: str, binary: bytes) -> None:
        tmp = self.path(key).with_suffix(".tmp%d" % os.getpid())
        tmp.write_bytes(binary)
        os.replace(tmp, self.path(key))  # atomic: a reader never sees half a binary

    def put_error(self, key: str, log: str) -> None:
        path = self.directory / f"{key}.err"
        tmp = path.with_suffix(".etmp%d" % os.getpid())
        tmp.write_text(log)
        os.replace(tmp, path)  # atomic too: a builder killed mid-write leaves no half log


def _build_in_child(device_index: int, source: str, options: tuple,
                    after: Optional[Callable[[Any], Any]] = None) -> tuple[Optional[bytes], Optional[str]]:
    """Build `source` in this (builder) process: its binary, or None and the compiler's log.
    `after(program)` runs on the built program before its binary is taken (what it adds to the
    program, such as PoCL's compiled work-group functions, travels with the binary); its failure
    costs nothing but what it would have added."""
    import pyopencl as cl

    from ..runtime import buildlog
    from ..runtime.devices import _all_devices, context_and_queue
    from ..runtime.launcher import program_log

    device = _all_devices()[device_index]
    context, _ = context_and_queue(device)  # one context per builder process, reused
    try:
        program, said = buildlog.captured(lambda: cl.Program(context, source).build(options=list(options)))
    except cl.Error as exc:
        extra = buildlog.chatter(exc)
        return None, str(exc) + (f"\n{extra}" if extra and extra not in str(exc) else "")
    buildlog.show(program_log(program, device) or said, f"a kernel on '{device.name.strip()}'")
    if after is not None:
        try:
            after(program)
        except Exception:  # noqa: BLE001 - the worker's first launch compiles what this did not
            pass
    return bytes(program.get_info(cl.program_info.BINARIES)[0]), None


def prebuild(cache: BuildCache, device_index: int, device_name: str, driver: str,
             sources: Iterable[Union[str, tuple[str, Sequence[str]]]], options: Sequence[str] = (),
             workers: int = 0, timeout: float = 120.0) -> dict[str, str]:
    """Build every source not yet cached, in parallel processes; returns {key: 'ok' | error}.
    An item of `sources` is a source (built with `options`) or a (source, its options) pair."""
    todo: dict[str, tuple[str, tuple]] = {}
    for item in sources:
        source, opts = (item, options) if isinstance(item, str) else item
        key = build_key(source, opts, device_name, driver)
        if cache.get(key) is None and cache.error(key) is None:
            todo[key] = (source, tuple(opts))
    results: dict[str, str] = {}
    if not todo:
        return results
    workers = workers or max(1, min(len(todo), (os.cpu_count() or 2)))
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        with main_module_hidden():  # the pool starts its processes as tasks are submitted
            futures = {pool.submit(_build_in_child, device_index, src, opts): key
                       for key, (src, opts) in todo.items()}
        try:
            for future in concurrent.futures.as_completed(futures, timeout=timeout * max(1, len(todo) / workers)):
                key = futures[future]
                try:
                    binary, log = future.result()
                except Exception as exc:  # a crashed compiler process: not cached, the worker builds it again
                    results[key] = f"the build process failed: {exc}"
                    continue
                if binary is not None:
                    cache.put(key, binary)
                    results[key] = "ok"
                else:
                    cache.put_error(key, log or "unknown build error")
                    results[key] = log or "unknown build error"
        except concurrent.futures.TimeoutError:
            for future, key in futures.items():
                if not future.done():
                    future.cancel()
                    results[key] = "build timed out"
    return results
