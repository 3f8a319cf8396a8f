"""Feature encoding of configurations for the performance models.

Tuning parameters are mostly sizes that grow in powers of two (work-group sizes, work per
thread, unroll factors); their effect on time is closer to linear in log2 of the value, and
log2 spreads 1, 2, 4, ..., 128 evenly instead of crowding the small values into one corner of
the input range. Everything is then scaled to [0, 1] so that sigmoid-like units start in their
sensitive range regardless of the parameter's magnitude.

A work-group size also holds 0, the driver's choice: it is encoded one step (a halving) below
the smallest size, so that the sizes keep their log scale.

Extra inputs (problem size, section 5.4 of Falch & Elster) are treated the same way, with their
range taken from the data the model is trained on.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from .problem import Parameter


def _is_power_of_two_scale(values: Sequence[float]) -> bool:
    vals = [float(v) for v in values if v != 0]  # 0: the driver's choice of a work-group size
    if len(set(vals)) < 3 or min(vals) <= 0:  # booleans and pairs gain nothing from the log
        return False
    return all(float(v).is_integer() and (int(v) & (int(v) - 1)) == 0 for v in vals)


@dataclass
class _Column:
    log: bool
    low: float
    high: float
    zero: float = 0.0  # where 0 goes on the log scale

    def apply(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if self.log:
            x = np.where(x == 0, self.zero, np.log2(np.maximum(x, 1e-12)))
        span = self.high - self.low
        if span <= 0:
            return np.zeros_like(x)
        return (x - self.low) / span


def _column(values: Sequence[float], log: Optional[bool] = None) -> _Column:
    vals = np.asarray(values, dtype=np.float64)
    use_log = _is_power_of_two_scale(vals.tolist()) if log is None else log
    if log is not None and use_log and vals.size and vals.min() <= 0:
        use_log = False
    if not use_log:
        return _Column(False, float(vals.min()) if vals.size else 0.0, float(vals.max()) if vals.size else 0.0)
    positive = np.log2(vals[vals > 0])
    zero = float(positive.min()) - 1.0
    t = np.where(vals == 0, zero, np.log2(np.maximum(vals, 1e-12)))
    return _Column(True, float(t.min()), float(t.max()), zero)


class Encoder:
    """Maps (n, d) parameter-value rows (+ optional (n, e) extra inputs) to float32 features."""

    def __init__(self, parameters: Sequence[Parameter], extra_names: Sequence[str] = ()) -> None:
        self.names = [p.name for p in parameters]
        self.columns = [_column(p.values) for p in parameters]
        self.extra_names = list(extra_names)
        self.extra_columns: list[_Column] = []

    @property
    def width(self) -> int:
        return len(self.columns) + len(self.extra_names)

    def fit_extra(self, extra: Optional[np.ndarray]) -> "Encoder":
        """Fix the scaling of the extra inputs from the values seen in training."""
        if not self.extra_names:
            return self
        extra = np.asarray(extra, dtype=np.float64).reshape(-1, len(self.extra_names))
        cols = []
        for j in range(extra.shape[1]):
            positive = extra.shape[0] > 0 and extra[:, j].min() > 0
            cols.append(_column(extra[:, j], log=bool(positive)))  # sizes: relative changes matter
        self.extra_columns = cols
        return self

    def encode(self, rows: np.ndarray, extra: Optional[np.ndarray] = None) -> np.ndarray:
        rows = np.asarray(rows)
        if rows.ndim != 2 or rows.shape[1] != len(self.columns):
            raise ValueError(f"expected rows of {len(self.columns)} parameter values, got shape {rows.shape}")
        out = np.empty((rows.shape[0], self.width), dtype=np.float32)
        for i, col in enumerate(self.columns):
            out[:, i] = col.apply(rows[:, i])
        if self.extra_names:
            if extra is None:
                raise ValueError(f"extra inputs {self.extra_names} are required")
            extra = np.broadcast_to(np.asarray(extra, dtype=np.float64).reshape(-1, len(self.extra_names)),
                                    (rows.shape[0], len(self.extra_names)))
            if not self.extra_columns:
                self.fit_extra(extra)
            for j, col in enumerate(self.extra_columns):
                out[:, len(self.columns) + j] = col.apply(extra[:, j])
        return out


__all__ = ["Encoder"]
