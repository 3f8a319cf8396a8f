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


class BudgetExhausted(Exception):
    """Raised by Session.measure when the budget is spent: strategies stop on it."""


class Session:
    """The budget, and every measurement made in it."""

    def __init__(self, problem: Problem, budget: int) -> None:
        if budget < 0:
            raise ValueError(f"the budget must be >= 0, got {budget}")
        self.problem = problem
        self.budget = int(budget)
        self.times: dict[Key, Optional[float]] = {}
        self.history: list[tuple[Config, Optional[float]]] = []
        self.best_key: Optional[Key] = None
        self.best_time: Optional[float] = None

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
        key = tuple(int(v) for v in row)
        if key in self.times:
            return self.times[key]
        if self.remaining <= 0:
            raise BudgetExhausted
        config = self.problem.config(key)
        time = self.problem.evaluate(config)
        if time is not None and not (math.isfinite(time) and time > 0):
            time = None  # a zero, negative or NaN time is a broken measurement, not a fast one
        self.times[key] = time
        self.history.append((config, time))
        if time is not None and (self.best_time is None or time < self.best_time):
            self.best_key, self.best_time = key, time
        return time

    def result(self, **info: Any) -> Result:
        best = self.problem.config(self.best_key) if self.best_key is not None else None
        return Result(best, self.best_time, self.evaluations, list(self.history), dict(info))


Strategy = Callable[..., Result]
