"""The models a search consults: a regression that ranks unmeasured configurations by predicted
log(time) (`_Ranker`), a classifier of failures (`_FailureModel`), and the choice of the next
candidate (`_pick`)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ..encoding import Encoder
from ..models import Model, make_model
from ..problem import Problem
from .neighbours import _neighbour_pool
from .sampling import _distinct
from .budget import Session


@dataclass
class Observation:
    """A measurement from elsewhere (the database): possibly another problem size (context)."""

    config: Mapping[str, int]
    time: Optional[float]
    context: Mapping[str, float] = field(default_factory=dict)


class _Ranker:
    """Model + encoder + candidate pool: ranks unmeasured configurations by predicted log(time)."""

    def __init__(self, problem: Problem, model: str, model_options: Mapping[str, Any], seed: int,
                 prior: Sequence[Observation], prediction_sample: int, rng: np.random.Generator) -> None:
        self.problem = problem
        extra = sorted(set(problem.context) | {k for o in prior for k in o.context})
        self.encoder = Encoder(problem.parameters, extra)
        self.extra = extra
        self.here = np.array([[problem.context.get(k, 0.0) for k in extra]]) if extra else None
        self.make = lambda s: make_model(model, seed=s, **dict(model_options))
        self.seed = seed
        usable = [o for o in prior if all(n in o.config for n in problem.names)]
        self.prior = [o for o in usable if o.time is not None and o.time > 0]
        same = [o for o in usable if dict(o.context) == problem.context]
        self.known = problem.index(np.array([[int(o.config[n]) for n in problem.names] for o in same],
                                            dtype=np.int64).reshape(len(same), len(problem.names)))
        self.best_known = min((o.time for o in same if o.time is not None and o.time > 0), default=None)
        # the prior's part of every training set, built once
        self.prior_rows = np.array([[int(o.config[n]) for n in problem.names] for o in self.prior],
                                   dtype=np.int64).reshape(len(self.prior), len(problem.names))
        self.prior_logt = np.log([o.time for o in self.prior])
        self.prior_extra = np.array([[o.context.get(k, self.here[0, j]) for j, k in enumerate(extra)]
                                     for o in self.prior]).reshape(len(self.prior), len(extra)) if extra else None
        self.rng = rng
        self.limit = prediction_sample
        listed = problem.candidate_matrix()
        self.listed = listed if listed is not None and len(listed) <= prediction_sample else None
        self.fits = 0
        self.trained_on = 0

    def _features(self, rows: np.ndarray, extra: Optional[np.ndarray] = None) -> np.ndarray:
        if not self.extra:
            return self.encoder.encode(rows)
        return self.encoder.encode(rows, self.here if extra is None else extra)

    def fit(self, session: Session) -> Model:
        observed = session.observed()
        rows = np.array([k for k, t in observed.items() if t is not None], dtype=np.int64)
        logt = np.log([t for t in observed.values() if t is not None])
        extra = np.repeat(self.here, len(rows), axis=0) if self.extra else None
        if self.prior:
            rows = np.concatenate([rows.reshape(-1, self.prior_rows.shape[1]), self.prior_rows])
            logt = np.concatenate([logt, self.prior_logt])
            if self.extra:
                extra = np.concatenate([extra.reshape(-1, len(self.extra)), self.prior_extra])
        if self.extra:
            self.encoder.fit_extra(np.concatenate([extra, self.here]))
        model = self.make(self.seed + self.fits)
        model.fit(self._features(rows, extra), logt)
        self.trained_on = len(logt)
        self.fits += 1
        session.belief = lambda rows: math.exp(model.predict(self._features(rows))[0][0])
        return model

    def rank(self, model: Model, session: Session, best_rows: Optional[np.ndarray] = None):
        """Unmeasured candidates in walk order, with their predicted mean and std of log(time)."""
        if self.listed is not None:
            pool = self.listed
        else:  # too many to rank every time: a fresh sample, plus the best ones' neighbourhood
            pool = self.problem.sample_matrix(self.limit, self.rng)
            if best_rows is not None and len(best_rows):
                pool = _distinct(self.problem, np.concatenate([pool, _neighbour_pool(self.problem, best_rows)]))
        pool = pool[~np.isin(self.problem.index(pool), np.concatenate([session.measured_index(), self.known]))]
        mean, std = model.predict(self._features(pool))
        order = np.argsort(mean, kind="stable")
        return pool[order], mean[order], std[order]


class _FailureModel:
    """Predicts which configurations will fail, from the failures and successes seen so far.

    Failures are left out of the regression (a made-up time would distort it, section 5.2.1),
    but a model that never sees them ranks them among the fastest: they are exactly the
    configurations that use "too much" of something. Failures from resource limits are
    thresholds on sums of log-sizes, conditioned on flags such as local memory; a logistic
    regression on the encoded features and their pairwise products represents that shape well
    from a handful of examples.
    """

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.clf: Optional[Any] = None

    def _features(self, rows: np.ndarray) -> np.ndarray:
        x = self.encoder.encode(rows).astype(np.float64)
        i, j = np.triu_indices(x.shape[1], k=1)
        return np.concatenate([x, x[:, i] * x[:, j]], axis=1)

    def fit(self, session: Session) -> bool:
        observed = session.observed()
        labels = np.array([t is None for t in observed.values()])
        if labels.sum() < 1 or (~labels).sum() < 2:
            self.clf = None
            return False
        from sklearn.linear_model import LogisticRegression

        rows = np.array(list(observed), dtype=np.int64)
        self.clf = LogisticRegression(C=10.0, class_weight="balanced", max_iter=2000)
        self.clf.fit(self._features(rows), labels)
        return True

    def p_fail(self, rows: np.ndarray) -> np.ndarray:
        if self.clf is None or len(rows) == 0:
            return np.zeros(len(rows))
        return self.clf.predict_proba(self._features(rows))[:, 1]


def _skip_mask(failures: Optional[_FailureModel], session: Session, rows: np.ndarray,
               head: int = 4096, cutoff: float = 0.5) -> np.ndarray:
    """Candidates at the front of the walk that are predicted to fail: passed over."""
    skip = np.zeros(len(rows), dtype=bool)
    if failures is not None and failures.fit(session):
        skip[:head] = failures.p_fail(rows[:head]) > cutoff
    return skip


PICKS = ("thompson", "mean")


def _pick(ranker: "_Ranker", model: Model, failures: Optional[_FailureModel], pool: np.ndarray,
          pick: str = "thompson") -> np.ndarray:
    """The candidate to measure next, passing over those predicted to fail.

    "mean": the one the model predicts fastest. "thompson": the fastest in one draw from the
    model's uncertainty (each candidate's predicted log-time plus its ensemble spread times a
    standard normal draw), so that a neighbour the members disagree on is tried now and then:
    a model trained on one family of configurations (scalar loads, say) underrates the moves
    into another, and always taking its fastest prediction can leave a search in the wrong
    family (BENCHMARKS.md, "Strategy design history")."""
    score, spread = model.predict(ranker._features(pool))
    if pick == "thompson":
        score = score + spread * ranker.rng.standard_normal(len(score))
    if failures is not None and failures.clf is not None:
        score = np.where(failures.p_fail(pool) > 0.5, np.inf, score)
    return pool[int(np.argmin(score))]


def _likely(ranker: "_Ranker", model: Model, failures: Optional[_FailureModel], pool: np.ndarray,
            count: int) -> np.ndarray:
    """The `count` candidates of `pool` the model predicts fastest (those predicted to fail left
    out), to announce ahead (Session.upcoming); draws nothing from the ranker's generator, so
    the search that follows is the same with or without it."""
    score, _ = model.predict(ranker._features(pool))
    if failures is not None and failures.clf is not None:
        score = np.where(failures.p_fail(pool) > 0.5, np.inf, score)
    order = np.argsort(score, kind="stable")[:count]
    return pool[order[np.isfinite(score[order])]]
