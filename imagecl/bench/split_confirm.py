"""The final timing of a split benchmark: its finalists timed again in interleaved rounds."""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Optional, Sequence


def confirm(call: Callable[[list[float], Optional[int]], Any], result: dict, rounds: int,
            leaders: int = 3) -> list[dict]:
    """The finalists timed again in interleaved rounds (one call of each per round), so that a slow
    moment of the host or a device hits all of them alike and the sweep's luckiest median (the
    minimum of many noisy ones) is not what the ratios divide by."""
    candidates = [{"role": "single", "device": s["device"], "shares": s["shares"], "h": s["h"] if "h" in s else None}
                  for s in result["singles"]]
    candidates.append({"role": "predicted", "shares": result["predicted"]["shares"], "h": result["predicted"]["h"]})
    candidates.append({"role": "predicted_system", "shares": result["predicted_system"]["shares"],
                       "h": result["predicted_system"]["h"]})
    candidates.append({"role": "tuned", "shares": result["tuned"]["shares"], "h": result["tuned"]["h"]})
    for r in sorted(result["sweep"], key=lambda r: r["median_s"])[:leaders]:
        candidates.append({"role": "sweep", "shares": r["shares"], "h": r["h"]})
    # the same split under several roles (the prediction is often "the GPU alone", which is also a
    # single and a sweep leader) is timed once and shares its times: separate medians of one split
    # differ by the host's noise, and the least of them would make the split look slower than itself
    # each split called with its first candidate's own shares: the identity's rounded ones may not sum to 1
    exact: dict[tuple, list[float]] = {}
    for c in candidates:
        exact.setdefault(split_identity(c["shares"], c["h"]), list(c["shares"]))
    runs: dict[tuple, list[float]] = {key: [] for key in exact}
    for _ in range(rounds):
        for key, times in runs.items():
            start = time.perf_counter()
            call(exact[key], key[1])
            times.append(time.perf_counter() - start)
    return [{**c, "median_s": statistics.median(t), "min_s": min(t), "max_s": max(t), "runs": t}
            for c in candidates for t in [runs[split_identity(c["shares"], c["h"])]]]


def split_identity(shares: Sequence[float], h: Optional[int]) -> tuple:
    """What a split computes: its shares (rounded to the row) and, when more than one device takes
    part, its halo depth (with one device there is no exchange, so h changes nothing)."""
    rounded = tuple(round(float(s), 6) for s in shares)
    taking_part = sum(1 for s in rounded if s > 0)
    return rounded, (h if taking_part > 1 else None)
