"""The OpenCL compiler's chatter, kept out of the output unless asked for.

A successful build can still talk: pyopencl turns a non-empty build log into a CompilerWarning
(warnings module), and some drivers (PoCL's clang) write "5 warnings generated." straight to the
process's standard error. Neither belongs in `run`, `tune` or a library caller's output. Both
are captured around each build; the text goes with a failed build's error, and is printed to
standard error only when IMAGECL_BUILD_LOG=1 (or the command line's --verbose) asks for it.
"""
from __future__ import annotations

import os
import sys
import tempfile
import threading
import warnings
from typing import Callable, TypeVar

T = TypeVar("T")

ENV = "IMAGECL_BUILD_LOG"
_FD_LOCK = threading.Lock()  # one redirection of file descriptor 2 at a time


def wanted() -> bool:
    """Whether build logs are to be shown (IMAGECL_BUILD_LOG set to anything but "", "0", "no", "false")."""
    return os.environ.get(ENV, "").strip().lower() not in ("", "0", "no", "false", "off")


def captured(build: Callable[[], T]) -> tuple[T, str]:
    """Run `build` with warnings and file descriptor 2 captured; its result and the captured text.
    If it raises, the exception goes on with the text as its `build_chatter` (see `chatter`)."""
    with _FD_LOCK, tempfile.TemporaryFile(mode="w+b") as sink:
        try:
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        saved = _redirect(sink.fileno())
        messages: list[str] = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    result = build()
                finally:
                    messages = [str(w.message) for w in caught]
        except BaseException as exc:  # noqa: BLE001 - re-raised with what was said
            _restore(saved)
            try:
                exc.build_chatter = _text(sink, messages)  # type: ignore[attr-defined]
            except AttributeError:
                pass
            raise
        _restore(saved)
        return result, _text(sink, messages)


def chatter(exc: BaseException) -> str:
    """What the compiler said during a build that raised `exc` ("" if nothing, or not captured)."""
    return getattr(exc, "build_chatter", "") or ""


def show(text: str, what: str) -> None:
    """Print a successful build's log to standard error when asked for."""
    if text.strip() and wanted():
        print(f"imagecl: build log of {what}:\n{text.rstrip()}", file=sys.stderr)


def _redirect(target: int):
    try:
        saved = os.dup(2)
    except OSError:  # no standard error at all: nothing to keep clean
        return None
    os.dup2(target, 2)
    return saved


def _restore(saved) -> None:
    if saved is not None:
        os.dup2(saved, 2)
        os.close(saved)


def _text(sink, messages: list[str]) -> str:
    sink.seek(0)
    raw = sink.read().decode("utf-8", "replace")
    return "\n".join([m for m in messages if m.strip()] + ([raw.rstrip()] if raw.strip() else []))


__all__ = ["ENV", "wanted", "captured", "chatter", "show"]
