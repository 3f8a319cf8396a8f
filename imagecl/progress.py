"""Progress with an estimated time left, on standard error only (stdout stays the command's
result, e.g. --json). On a terminal it is tqdm's bar; elsewhere (a log file, CI) a plain line
at every tenth of the work, so that a redirected run neither floods nor stays silent."""
from __future__ import annotations

import sys
import time
from typing import Any, Iterable, Iterator, Optional, TypeVar

T = TypeVar("T")

from tqdm import tqdm


class Progress:
    """Call with (done, total, summary); `summary` may have `statuses` (a Counter of results) and
    `best_time` (seconds) to show beside the bar, or be None."""

    def __init__(self, what: str, unit: str = "config") -> None:
        self.what = what
        self.unit = unit
        self.interactive = _is_terminal(sys.stderr)
        self.bar: Optional[tqdm] = None
        self.reported = -1  # the last tenth printed without a terminal
        self.started = time.monotonic()  # the rate and time left count from here

    def __call__(self, done: int, total: int, summary: Any = None) -> None:
        total = max(int(total), 1)
        done = min(int(done), total)
        postfix = _postfix(summary)
        if self.interactive:
            if self.bar is None or self.bar.total != total:
                self.close()
                self.bar = tqdm(total=total, desc=self.what, unit=self.unit, file=sys.stderr, dynamic_ncols=True,
                                leave=True)
            self.bar.set_postfix_str(postfix, refresh=False)
            self.bar.update(done - self.bar.n)
            if done >= total:
                self.close()
            return
        tenth = done * 10 // total  # 10 at the end: printed once
        if tenth <= self.reported:
            return
        self.reported = tenth
        meter = tqdm.format_meter(done, total, time.monotonic() - self.started, prefix=self.what, unit=self.unit,
                                  ncols=0)
        print(meter + (f"  {postfix}" if postfix else ""), file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def counted(items: Iterable[T], total: int, progress: Progress) -> Iterator[T]:
    """`items`, reporting to `progress` as each one is taken (a consumer that takes them lazily,
    such as one transaction's inserts, is then what the progress shows)."""
    done = 0
    for item in items:
        yield item
        done += 1
        progress(done, total)


def _postfix(summary: Any) -> str:
    if summary is None:
        return ""
    statuses = getattr(summary, "statuses", None) or {}
    failed = sum(v for k, v in statuses.items() if k != "ok")
    best = getattr(summary, "best_time", None)
    return f"failed {failed}, best " + (f"{best * 1e3:.4f} ms" if best is not None else "-")


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


__all__ = ["Progress", "counted"]
