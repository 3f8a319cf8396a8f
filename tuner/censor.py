"""Censored measurements: a configuration whose checked (verified) launch already takes more than
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


@dataclass(frozen=True)
class CensorRule:
    factor: float = 0.0  # 0: off
    audit_every: int = 50  # 0: no audit

    def __post_init__(self) -> None:
        if self.factor != 0 and not self.factor > 1:
            raise ValueError(f"the censoring factor must be 0 (off) or above 1, got {self.factor!r}")
        if isinstance(self.audit_every, bool) or not isinstance(self.audit_every, int) or self.audit_every < 0:
            raise ValueError(f"audit_every must be a non-negative integer, got {self.audit_every!r}")

    def bound(self, best: Optional[float]) -> Optional[float]:
        """Seconds above which a checked launch is censored, or None (off, or no best yet)."""
        if not self.factor or best is None or not 0 < best < float("inf"):
            return None
        return self.factor * best

    def audited(self, config_key: str) -> bool:
        """Whether a configuration (its canonical key) is timed fully even when it is slow."""
        if not self.audit_every:
            return False
        return int(hashlib.sha256(config_key.encode()).hexdigest()[:12], 16) % self.audit_every == 0

    def to_message(self, best: Optional[float]) -> dict:
        return {"factor": self.factor, "audit_every": self.audit_every, "best": best}

    @staticmethod
    def from_message(message: Optional[dict]) -> tuple["CensorRule", Optional[float]]:
        if not message:
            return CensorRule(), None
        return CensorRule(float(message["factor"]), int(message["audit_every"])), message.get("best")


def slow_fields(first: float, bound: float, factor: float) -> dict[str, Any]:
    """A censored result's fields (the worker's result dict)."""
    return {"status": SLOW, "time": None, "times": [first], "limit": bound, "verified": True,
            "error": f"slow: its checked launch took {first * 1e3:.4g} ms, over {factor:g} x the best so far "
                     f"({bound * 1e3:.4g} ms); one launch, not a time"}


@dataclass
class Audit:
    """A configuration that would have been censored, timed fully."""

    config: dict
    first: float  # its checked launch, seconds
    median: float  # its true median
    best: float  # the best at the time

    @property
    def ratio(self) -> float:
        return self.median / self.best

    def to_json(self) -> dict:
        return {"config": self.config, "first_ms": self.first * 1e3, "median_ms": self.median * 1e3,
                "best_ms": self.best * 1e3, "ratio": self.ratio}


__all__ = ["SLOW", "CensorRule", "Audit", "slow_fields"]
