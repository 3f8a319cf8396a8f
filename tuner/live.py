"""A tuning problem measured live on a device: the bridge from the strategies to the engine."""
from __future__ import annotations

from typing import Callable, Mapping, Optional

import numpy as np

from ..errors import ConfigError
from .engine import Measurer
from .problem import Parameter, Problem
from .store import canonical_config


class LiveProblem(Problem):
    """The program's tuning space; `evaluate` measures through a Measurer (and its store, so
    what an earlier or interrupted run measured is reused, not measured again)."""

    def __init__(self, space, measurer: Measurer, context: Optional[Mapping[str, float]] = None,
                 on_measure: Optional[Callable[[dict, Optional[float]], None]] = None) -> None:
        super().__init__([Parameter(p.name, list(p.values)) for p in space.parameters], context)
        self.space = space
        self.measurer = measurer
        self.on_measure = on_measure
        self.evaluations = 0
        self.known = {k: r.time for k, r in measurer.stored().items()}

    def valid_mask(self, columns) -> np.ndarray:
        return self.space.valid_mask(columns)

    def evaluate(self, config: Mapping[str, int]) -> Optional[float]:
        self.evaluations += 1
        try:
            full = self.space.complete(config)
        except ConfigError:
            return None
        key = canonical_config(full)
        if key not in self.known:
            self.measurer.measure([full])
            self.known.update({k: r.time for k, r in self.measurer.stored(key).items()})
        time = self.known.get(key)
        if self.on_measure is not None:
            self.on_measure(full, time)
        return time
