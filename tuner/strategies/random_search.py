"""CLTune's random search."""
from __future__ import annotations

import numpy as np

from ..problem import Problem
from .budget import BudgetExhausted, Result, Session


def random_search(problem: Problem, budget: int, rng: np.random.Generator) -> Result:
    """Measure `budget` distinct valid configurations drawn uniformly."""
    session = Session(problem, budget)
    try:
        for row in problem.sample_matrix(budget, rng):
            session.measure(row)
    except BudgetExhausted:
        pass
    return session.result(strategy="random")
