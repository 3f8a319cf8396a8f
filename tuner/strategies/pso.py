"""CLTune's particle swarm optimisation."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..problem import Problem
from .sampling import _unmeasured_sample
from .budget import BudgetExhausted, Result, Session


def particle_swarm(problem: Problem, budget: int, rng: np.random.Generator, swarm_size: int = 3,
                   alpha: float = 0.4, beta: float = 0.0, gamma: float = 0.4, max_stale: int = 50) -> Result:
    """CLTune's discrete accelerated PSO.

    Each particle moves dimension by dimension: to a random value with probability alpha, to its
    own best with beta, to the swarm's best with gamma, else it stays. Defaults are CLTune's
    (alpha = gamma = 0.4, beta = 0). A particle whose move is statically invalid, or that keeps
    landing on measured points, is re-seeded at a random unmeasured configuration.
    """
    if alpha + beta + gamma > 1 + 1e-9:
        raise ValueError("alpha + beta + gamma must be at most 1")
    session = Session(problem, budget)
    d = len(problem.parameters)
    values = [np.asarray(p.values, dtype=np.int64) for p in problem.parameters]
    start = _unmeasured_sample(problem, session, rng, swarm_size)
    positions = [row.copy() for row in start]
    own_best: list[tuple[Optional[float], np.ndarray]] = [(None, row.copy()) for row in start]
    stale = 0
    try:
        for i, row in enumerate(positions):
            t = session.measure(row)
            own_best[i] = (t, row.copy())
        while session.remaining > 0 and positions:
            if stale >= max_stale * len(positions):
                break  # the space around the swarm is used up
            for i in range(len(positions)):
                if session.best_key is None:
                    best_global = positions[i]
                else:
                    best_global = np.array(session.best_key)
                cand = None
                for _ in range(16):
                    r = rng.random(d)
                    new = positions[i].copy()
                    pick_random = r < alpha
                    pick_own = (r >= alpha) & (r < alpha + beta)
                    pick_global = (r >= alpha + beta) & (r < alpha + beta + gamma)
                    for j in np.flatnonzero(pick_random):
                        new[j] = values[j][rng.integers(len(values[j]))]
                    new[pick_own] = own_best[i][1][pick_own]
                    new[pick_global] = best_global[pick_global]
                    if problem.is_valid(problem.config(new)):
                        cand = new
                        break
                if cand is None or stale >= max_stale:
                    fresh = _unmeasured_sample(problem, session, rng)
                    if len(fresh) == 0:
                        return session.result(strategy="pso", swarm_size=swarm_size)
                    cand, stale = fresh[0], 0
                before = session.evaluations
                t = session.measure(cand)
                stale = stale + 1 if session.evaluations == before else 0
                positions[i] = cand
                if t is not None and (own_best[i][0] is None or t < own_best[i][0]):
                    own_best[i] = (t, cand.copy())
    except BudgetExhausted:
        pass
    return session.result(strategy="pso", swarm_size=swarm_size)
