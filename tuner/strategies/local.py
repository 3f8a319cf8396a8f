"""The model-guided local search that `hybrid` (and `ml` with `local_share`) ends with."""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..models import Model
from ..problem import Problem
from .neighbours import _best_rows, _neighbour_candidates, _repaired_neighbours, _untried_moves
from .ranking import _FailureModel, _likely, _pick, _Ranker
from .sampling import _unmeasured_sample
from .budget import AHEAD, Session


PROBES = ("cold", "always", "never")


def _local_phase(problem: Problem, session: Session, ranker: "_Ranker", model: Model,
                 failures: Optional[_FailureModel], width: int = 3, radius: int = 1,
                 patience: Optional[int] = None, pick: str = "thompson", probe: bool = False,
                 min_gain: float = 0.0) -> int:
    """Spend the rest of the budget on the model's pick among the neighbours of the best ones.

    A descent guided by the model: candidates are the unmeasured neighbours (one move, repaired
    where a constraint needs it: `_repaired_neighbours`) of the best measured configuration, and
    the one `_pick` chooses (`pick`) is measured. The model is refit on the way, so the walk
    learns the neighbourhood it is in. After `patience` measurements (default: an
    eighth of the budget, at least 10) without a better configuration, the walk's centre is
    given up: it restarts from the best measured configuration more than two parameters away
    from every centre given up, so a search stuck in the basin of a 2x slower variant family
    (scalar instead of vectorised loads, say) tries the other families it sampled. A
    configuration faster than every centre given up is a centre wherever it lies: it was not
    known when they were given up, and its neighbourhood may hold the best. A new best counts
    as progress when it is `min_gain` (relative) faster than the one before; by default any new
    best does, however small: it is a new centre with new neighbours.

    `probe`: after a measurement that did not improve, the next one changes a parameter of the
    centre that no measured neighbour has changed yet, while there is one (the model, or its
    draw, still chooses which move and which value). Without it, a model trained on a few dozen
    configurations can be confidently wrong about one parameter and never try it. It helps
    cold searches and hurts seeded ones, so `ml` probes only cold. The measurements behind
    these rules: BENCHMARKS.md, "Strategy design history".
    """
    patience = max(10, session.budget // 8) if patience is None else patience
    count, since_fit, stale = 0, 0, 0

    def refit_if_due(model: Model) -> Model:
        nonlocal since_fit
        if since_fit >= max(5, 0.25 * ranker.trained_on):  # fits grow with the log of the budget
            model, since_fit = ranker.fit(session), 0
        return model

    abandoned: list[np.ndarray] = []
    neighbourhoods: dict[bytes, np.ndarray] = {}  # a centre's repaired neighbours: it stays the centre for a while
    while session.remaining > 0:
        best = _centres(session, abandoned, width)
        if len(best) == 0:
            break
        centre = best[0]
        around = neighbourhoods.get(centre.tobytes())
        if around is None:
            around = neighbourhoods[centre.tobytes()] = _repaired_neighbours(problem, centre)
        pool = _neighbour_candidates(problem, session, best, radius, first=around)
        if len(pool) == 0:
            pool = _unmeasured_sample(problem, session, ranker.rng)
            if len(pool) == 0:
                break
        model = refit_if_due(model)
        if probe and stale > 0:
            untried = _untried_moves(problem, session, centre, around, pool)
            pool = pool[untried] if untried.any() else pool
        if problem.prefetching:
            session.upcoming(_likely(ranker, model, failures, pool, AHEAD))
        before = session.best_time
        session.measure(_pick(ranker, model, failures, pool, pick))
        if failures is not None and session.history[-1][1] is None:
            failures.fit(session)
        improved = session.best_time is not None and (before is None or session.best_time < before * (1 - min_gain))
        stale = 0 if improved else stale + 1
        if stale >= patience:
            abandoned.append(centre)
            stale = 0
        count += 1
        since_fit += 1
    return count


def _centres(session: Session, abandoned: list[np.ndarray], width: int) -> np.ndarray:
    """The `width` best measured configurations the walk may centre on: more than two parameters
    from every abandoned centre, or faster than all of them (unless none is)."""
    best = _best_rows(session, 64)
    if abandoned:
        far = np.array([min(int((row != a).sum()) for a in abandoned) > 2 for row in best], dtype=bool)
        # faster than every centre given up: not known when they were, so a centre again
        # a centre given up may have been a batch's pending proposal (the believer's lie) that failed
        given_up = min((t for t in (session.times.get(tuple(int(v) for v in a)) for a in abandoned)
                        if t is not None), default=math.inf)
        far |= np.array([session.times[tuple(int(v) for v in row)] < given_up for row in best], dtype=bool)
        best = best[far] if far.any() else best
    return best[:width]
