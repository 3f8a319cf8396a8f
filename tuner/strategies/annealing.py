"""CLTune's simulated annealing."""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..problem import Problem
from .sampling import _unmeasured_sample
from .budget import BudgetExhausted, Result, Session


def _random_neighbour(problem: Problem, row: np.ndarray, rng: np.random.Generator,
                      session: Session, tries: int = 32) -> Optional[np.ndarray]:
    """A valid configuration differing from `row` in one parameter, preferably unmeasured."""
    free = [i for i, p in enumerate(problem.parameters) if len(p.values) > 1]
    if not free:
        return None
    fallback = None
    for _ in range(tries):
        i = free[rng.integers(len(free))]
        values = [v for v in problem.parameters[i].values if v != row[i]]
        cand = row.copy()
        cand[i] = values[rng.integers(len(values))]
        if not problem.is_valid(problem.config(cand)):
            continue
        if not session.known(tuple(int(v) for v in cand)):
            return cand
        fallback = cand
    return fallback


def simulated_annealing(problem: Problem, budget: int, rng: np.random.Generator, temperature: float = 1.0,
                        max_stale: int = 50) -> Result:
    """CLTune's annealing: random one-parameter moves, worse moves accepted with exp(-dE/T).

    The energy is log(time), so the acceptance of a move depends on how many times slower it is,
    not on the kernel's absolute runtime; T falls linearly to zero over the budget. After
    `max_stale` moves that find nothing new, the walk restarts at a random unmeasured point.
    """
    session = Session(problem, budget)
    current: Optional[np.ndarray] = None
    energy: Optional[float] = None
    stale = 0
    try:
        while session.remaining > 0:
            if current is None or energy is None or stale >= max_stale:
                start = _unmeasured_sample(problem, session, rng)
                if len(start) == 0:
                    break
                current, stale = start[0], 0
                t = session.measure(current)
                energy = math.log(t) if t is not None else None
                continue
            cand = _random_neighbour(problem, current, rng, session)
            if cand is None:
                stale = max_stale
                continue
            before = session.evaluations
            t = session.measure(cand)
            stale = stale + 1 if session.evaluations == before else 0
            if t is None:
                continue
            temp = temperature * max(1.0 - session.evaluations / max(budget, 1), 1e-3)
            delta = math.log(t) - energy
            if delta < 0 or rng.random() < math.exp(-delta / temp):
                current, energy = cand, math.log(t)
    except BudgetExhausted:
        pass
    return session.result(strategy="annealing", temperature=temperature)
