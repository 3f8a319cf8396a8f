"""The measuring worker's one "slower than the best" rule: a launch over K x the best time
confirmed so far (K = SLOWER, or the run's censoring factor) is slower than the best. It decides
two things, in `_measure_one` (tuner/worker.py), through `CensorRule.bound` and `CensorRule.over`:
a configuration whose median is over the bound is not a contender (timed again at most once, its
order among the slow ones deciding nothing), and, when censoring is on, one whose checked launch
is over it is recorded as `slow` after that launch.

Censored measurements: a configuration whose checked (verified) launch already takes more than
`factor` times the best time confirmed so far is recorded as `slow` after that one launch, not
timed further. Sweeping a whole space, most of the device's time otherwise goes to timing
configurations that cannot matter (issue 21: the paper's space, 4.7 launches of ~4.4 ms each
where the best is 0.38 ms).

A `slow` record is a result, not a time: `time` is None (so nothing that ranks, exports or
learns from times can take it for one), `times` holds the single checked launch and `limit` the
bound it exceeded (factor x the best at the time). It is settled: a resumed run does not measure
it again.

Soundness is checked, not assumed: a deterministic sample (every configuration whose key hashes
to 0 modulo `audit_every`) of the configurations that would be censored is timed fully anyway
(stored as `ok`), and the run reports the smallest ratio of such a true median to the best at
the time (`Audit`). A ratio near 1 would say that censoring could have hidden a contender."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Optional

SLOW = "slow"
SLOWER = 4.0  # K: a launch over K x the best so far is slower than the best (unless censoring sets K)
GPU_PROBE = 0.25  # the part of the work-groups a probe launches on a GPU (sound on the H100: BENCHMARKS.md)


def default_probe(device: Any) -> float:
    """A probe's share of the work-groups on `device` (a pyopencl Device): GPU_PROBE, but none on
    PoCL, whose first launches compile the kernel for their shape (docs/kernel-tuning.md)."""
    return 0.0 if "Portable Computing Language" in device.platform.name else GPU_PROBE


@dataclass(frozen=True)
class CensorRule:
    factor: float = 0.0  # censoring's K; 0: no censoring (the rule then uses SLOWER)
    audit_every: int = 50  # 0: no audit
    probe: float = 0.0  # > 0: first launch this part of the work-groups; over the bound, censored unchecked

    def __post_init__(self) -> None:
        if self.factor != 0 and not self.factor > 1:
            raise ValueError(f"the censoring factor must be 0 (off) or above 1, got {self.factor!r}")
        if isinstance(self.audit_every, bool) or not isinstance(self.audit_every, int) or self.audit_every < 0:
            raise ValueError(f"audit_every must be a non-negative integer, got {self.audit_every!r}")
        if not 0 <= self.probe < 1:
            raise ValueError(f"the probe is a fraction of the work-groups in [0, 1), got {self.probe!r}")

    @property
    def k(self) -> float:
        """The factor over the best above which a launch is slower than the best."""
        return self.factor or SLOWER

    @property
    def censors(self) -> bool:
        return bool(self.factor)

    def bound(self, best: Optional[float]) -> Optional[float]:
        """Seconds above which a launch is slower than the best (k x the best), or None (no best yet)."""
        if best is None or not 0 < best < float("inf"):
            return None
        return self.k * best

    @staticmethod
    def over(seconds: Optional[float], bound: Optional[float]) -> bool:
        """Whether a launch of `seconds` is over `bound` (the runners stop at the same test: a
        launch over `stop_above`)."""
        return bound is not None and seconds is not None and seconds > bound

    def audited(self, config_key: str) -> bool:
        """Whether a configuration (its canonical key) is timed fully even when it is slow."""
        if not self.audit_every:
            return False
        return int(hashlib.sha256(config_key.encode()).hexdigest()[:12], 16) % self.audit_every == 0

    def to_message(self, best: Optional[float]) -> dict:
        return {"factor": self.factor, "audit_every": self.audit_every, "probe": self.probe, "best": best}

    @staticmethod
    def from_message(message: Optional[dict]) -> tuple["CensorRule", Optional[float]]:
        if not message:
            return CensorRule(), None
        return (CensorRule(float(message["factor"]), int(message["audit_every"]), float(message.get("probe", 0.0))),
                message.get("best"))


def slow_fields(first: float, bound: float, factor: float, probe: float = 0.0) -> dict[str, Any]:
    """A censored result's fields (the worker's result dict): after its checked launch, or after
    a probe of `probe` of its work-groups (then unchecked: `verified` is false)."""
    launch = f"a launch of {probe:g} of its work-groups" if probe else "its checked launch"
    return {"status": SLOW, "time": None, "times": [first], "limit": bound, "verified": not probe,
            "error": f"slow: {launch} took {first * 1e3:.4g} ms, over {factor:g} x the best so far "
                     f"({bound * 1e3:.4g} ms); one launch, not a time"}


@dataclass
class Audit:
    """A configuration that would have been censored, timed fully."""

    config: dict
    first: float  # its checked launch, seconds
    median: float  # its true median
    best: float  # the best at the time
    probe: Optional[float] = None  # its probe launch (part of the work-groups), seconds, if one ran

    @property
    def ratio(self) -> float:
        return self.median / self.best

    def to_json(self) -> dict:
        return {"config": self.config, "first_ms": self.first * 1e3, "median_ms": self.median * 1e3,
                "best_ms": self.best * 1e3, "ratio": self.ratio,
                "probe_ms": self.probe * 1e3 if self.probe is not None else None,
                "probe_over_median": self.probe / self.median if self.probe is not None else None}


__all__ = ["SLOW", "SLOWER", "CensorRule", "Audit", "slow_fields"]
