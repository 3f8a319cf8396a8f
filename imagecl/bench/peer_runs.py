"""Ratios over independent tuning runs (issue 23): what a published peer ratio is made of.

Each workload is tuned several times from scratch (a fresh store, another seed, the same budget);
each run's tuned variant is timed, and a peer's ratio (peer time / tuned time) is computed per run.
The published ratio is the median over the runs, with its spread (the smallest and the largest
run's), never the best run alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np


@dataclass
class RatioSummary:
    median: float  # the median run's ratio (peer seconds / tuned seconds: > 1 means we are faster)
    low: float  # the worst run's
    high: float  # the best run's
    runs: int

    def text(self) -> str:
        if self.runs < 2:
            return f"{self.median:.2f}x (1 run)"
        return f"{self.median:.2f}x ({self.low:.2f}-{self.high:.2f}x over {self.runs} runs)"


def run_times(ours: dict) -> list[float]:
    """The tuned variant's time of each tuning run of a record's "imagecl" part; a record from
    before the runs (one tuning) gives its one tuned time."""
    runs = ours.get("runs")
    if runs is None:
        return [ours["tuned_seconds"]] if ours.get("tuned_seconds") else []
    return [r["tuned_seconds"] for r in runs if r.get("tuned_seconds")]


def median_time(times: list[float]) -> Optional[float]:
    return float(np.median(times)) if times else None


def ratio_summary(peer_seconds: float, tuned: list[float]) -> Optional[RatioSummary]:
    """The peer's time over each run's tuned time: median and range; None without a run."""
    ratios = [peer_seconds / t for t in tuned if t and t > 0]
    if not ratios:
        return None
    return RatioSummary(float(np.median(ratios)), min(ratios), max(ratios), len(ratios))
