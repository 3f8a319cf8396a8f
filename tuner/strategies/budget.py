"""The budget of a search and every measurement made in it (`Session`), and what a strategy
returns (`Result`)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

import numpy as np

from ..problem import Config, Key, Problem


@dataclass
class Result:
    best_config: Optional[Config]
    best_time: Optional[float]
    evaluations: int
    history: list[tuple[Config, Optional[float]]]
    info: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"best_config": self.best_config, "best_time": self.best_time, "evaluations": self.evaluations,
                "history": [{"config": c, "time": t} for c, t in self.history], "info": self.info}


AHEAD = 4  # proposals a walk announces at a time (Session.upcoming): its likely next few

LIES = ("constant", "believer")  # what a batch's pending proposals count as (Session.measure)

_DROPPED = object()  # a pending proposal the deadline stopped before it was measured


class BudgetExhausted(Exception):
    """Raised by Session.measure when the budget is spent: strategies stop on it."""


class Session:
    """The budget, and every measurement made in it."""

    def __init__(self, problem: Problem, budget: int, lie: str = "constant") -> None:
        if budget < 0:
            raise ValueError(f"the budget must be >= 0, got {budget}")
        if lie not in LIES:
            raise ValueError(f"lie must be one of {', '.join(LIES)}, got {lie!r}")
        self.problem = problem
        self.budget = int(budget)
        self.times: dict[Key, Optional[float]] = {}
        self.history: list[tuple[Config, Optional[float]]] = []
        self.best_key: Optional[Key] = None
        self.best_time: Optional[float] = None
        # configurations proposed at a time: the problem's `batch` (a cluster's worker count)
        self.batch = max(1, int(getattr(problem, "batch", 1) or 1))
        self.pending: dict[Key, int] = {}  # proposed, not yet measured: key -> its place in history
        self.lie = lie
        # the current model's predicted time of a configuration (rows -> seconds), set by whoever
        # fits one (_Ranker.fit): the kriging believer's lie; None until a model is fitted
        self.belief: Optional[Callable[[np.ndarray], float]] = None

    @property
    def evaluations(self) -> int:
        return len(self.history)

    @property
    def remaining(self) -> int:
        return self.budget - len(self.history)

    def known(self, key: Key) -> bool:
        return key in self.times

    def measured_index(self) -> np.ndarray:
        """The measured configurations as indices into the problem's product space."""
        return self.problem.index(np.array(list(self.times), dtype=np.int64))

    def measure(self, row: Iterable[int]) -> Optional[float]:
        """The configuration's time (None: it failed). With a `batch` of B > 1, a proposal is
        held until B are, then all are measured at once (Problem.evaluate_many, in parallel on
        a cluster); meanwhile the strategy is told a lie, so that it moves on to other
        configurations rather than waiting. `lie` "constant" (constant liar, the default), and
        "believer" before any model is fitted: the slowest time measured so far, and a model fit
        in between ranks the pending ones as slow (the batch spreads out). "believer" (kriging
        believer): the time the current model predicts (`belief`), so a pending proposal
        predicted faster than the best measured one is where a local search walks on from, as
        it would once that prediction came true; models are fitted on real measurements only
        (`observed`). benchmarks/results/cluster-batch-replays-2.md compares the two: the
        believer is no better, and worse at a tight budget on one space."""
        key = tuple(int(v) for v in row)
        if key in self.times:
            return self.times[key]
        if self.remaining <= 0:
            raise BudgetExhausted
        config = self.problem.config(key)
        if self.batch <= 1:
            self._record(key, config, self.problem.evaluate(config), len(self.history))
            return self.times[key]
        self.pending[key] = len(self.history)
        self.times[key] = self._lie(key)
        self.history.append((config, self.times[key]))
        if len(self.pending) >= self.batch:
            self.flush()
            if key not in self.times:  # a deadline stopped the batch before it was measured
                raise BudgetExhausted
        return self.times[key]

    def _lie(self, key: Key) -> Optional[float]:
        if self.lie == "believer" and self.belief is not None:
            return float(self.belief(np.array([key], dtype=np.int64)))
        real = [t for k, t in self.times.items() if t is not None and k not in self.pending]
        return max(real) if real else None

    def believed(self, key: Key) -> bool:
        """Whether `key`'s time is a prediction standing in for a pending measurement."""
        return self.lie == "believer" and key in self.pending

    def observed(self) -> dict[Key, Optional[float]]:
        """The times a model learns from: the measured ones; with the constant liar, the
        pending proposals' lies too (that is how it spreads a batch out)."""
        if self.lie == "constant" or not self.pending:
            return self.times
        return {k: t for k, t in self.times.items() if k not in self.pending}

    def upcoming(self, rows: Iterable[Iterable[int]]) -> None:
        """Tell the problem which configurations the strategy expects to measure next, in order
        (Problem.prefetch: a live problem builds them ahead); those known are left out. Changes
        nothing the search does."""
        if not self.problem.prefetching:
            return
        keys = [tuple(int(v) for v in row) for row in rows]
        configs = [self.problem.config(k) for k in dict.fromkeys(keys) if k not in self.times]
        if configs:
            self.problem.prefetch(configs[:max(0, self.remaining)])

    def flush(self) -> None:
        """Measure the pending proposals (see `measure`); those a deadline stopped are dropped."""
        if not self.pending:
            return
        keys = list(self.pending)
        places = [self.pending[k] for k in keys]
        try:
            times = self.problem.evaluate_many([self.history[i][0] for i in places])
        except BudgetExhausted:
            times = [_DROPPED] * len(keys)
        self.pending.clear()
        for key, place, time in zip(keys, places, times):
            self._record(key, self.history[place][0], time, place)
        dropped = {i for i, t in zip(places, times) if t is _DROPPED}
        if dropped:
            self.history = [h for i, h in enumerate(self.history) if i not in dropped]
            for key, t in zip(keys, times):
                if t is _DROPPED:
                    del self.times[key]

    def _record(self, key: Key, config: Config, time: Optional[float], place: int) -> None:
        if time is _DROPPED:
            return
        if time is not None and not (math.isfinite(time) and time > 0):
            time = None  # a zero, negative or NaN time is a broken measurement, not a fast one
        self.times[key] = time
        if place < len(self.history):
            self.history[place] = (config, time)
        else:
            self.history.append((config, time))
        if time is not None and (self.best_time is None or time < self.best_time):
            self.best_key, self.best_time = key, time

    def result(self, **info: Any) -> Result:
        self.flush()
        best = self.problem.config(self.best_key) if self.best_key is not None else None
        return Result(best, self.best_time, self.evaluations, list(self.history), dict(info))


Strategy = Callable[..., Result]
