"""CLTune's exhaustive search."""
from __future__ import annotations

from typing import Iterable, Optional

import numpy as np

from ..problem import Problem, product_keys
from .budget import BudgetExhausted, Result, Session


def exhaustive(problem: Problem, budget: int, rng: Optional[np.random.Generator] = None) -> Result:
    """Measure every valid configuration in order (until the budget ends)."""
    session = Session(problem, budget)
    matrix = problem.candidate_matrix()
    rows: Iterable = matrix if matrix is not None else (k for k in product_keys(problem.parameters)
                                                          if problem.is_valid(problem.config(k)))
    try:
        for row in rows:
            session.measure(row)
    except BudgetExhausted:
        pass
    return session.result(strategy="exhaustive")
