"""Search strategies: which configurations to measure, within a budget of measurements.

Every strategy is `run(problem, budget, rng, **options) -> Result`. `budget` caps the number of
distinct configurations measured, failed ones included, because on a real device a build
error or a wrong result costs about as much as a success. Measurements go through a `Session`,
which enforces the budget and remembers results, so a strategy that comes back to a
configuration (annealing, swarms) neither pays for it twice nor overruns.

`hybrid`, the default (DEFAULT_STRATEGY), is a sample that spreads every parameter's values
(`_spread_sample`) followed by a local search from the best configuration in which the model
picks the neighbour to measure, moves repaired across constraints, and restarts elsewhere when
it stalls (`_local_phase`).
`exhaustive`, `random_search`, `simulated_annealing` and `particle_swarm` follow CLTune
(Nugteren & Codreanu 2015). `ml` is Falch & Elster's two-stage method (random sample, bagged
neural network on log(time), second stage driven by Eq. 2 with a threshold T), with these
changes:

* Eq. 2 is evaluated on log(time): the error of a model trained on log(time) is Gaussian there,
  and a log-normal never puts probability on negative times.
* The model's error estimate is calibrated as stage 2 goes: standardised residuals of the new
  measurements update a running variance (the paper's running estimate), so a model that turns
  out worse near the optimum than in cross-validation automatically widens the second stage.
* The model is retrained as stage 2 adds data (whenever the new measurements reach a quarter of
  the training set, at least `retrain_every`, and once more before the threshold stops the
  walk): the stage-2 points lie exactly in the region that matters, and with a small budget a
  single fit on the random sample is too coarse to rank the best configurations.
* Failed configurations stay out of the regression (section 5.2.1), but train a failure
  classifier, refit after every new failure; candidates it predicts to fail are passed over.
  Without it, the regression ranks failing configurations (the ones that ask for too much local
  memory, say) among the fastest, and stage 2 spends much of its budget on them.
* Configurations already measured are skipped; for spaces too large to list, the model ranks a
  large random sample grown by the one-parameter neighbours of the best measured ones.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import numpy as np

from ..errors import suggestion_suffix
from .encoding import Encoder
from .models import Model, make_model
from .problem import Config, Key, Problem, product_keys


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


def _unmeasured_sample(problem: Problem, session: Session, rng: np.random.Generator, n: int = 1) -> np.ndarray:
    """Up to n valid configurations not measured yet (empty when the space is used up)."""
    for size in (4 * n + 16, 64 * n + 256):
        rows = problem.sample_matrix(size, rng)
        fresh = [r for r in rows if not session.known(tuple(int(v) for v in r))]
        if fresh:
            return np.array(fresh[:n])
    matrix = problem.candidate_matrix()
    if matrix is not None and session.times:
        fresh = matrix[~np.isin(problem.index(matrix), session.measured_index())]
        if len(fresh):
            return fresh[rng.choice(len(fresh), size=min(n, len(fresh)), replace=False)]
    return np.zeros((0, len(problem.parameters)), np.int64)


def _spread_sample(problem: Problem, n: int, rng: np.random.Generator, pool_factor: int = 32) -> np.ndarray:
    """`n` valid configurations that cover every parameter's values about evenly.

    A uniform sample of the valid configurations reflects the constraints: where `vector_x = 1`
    is valid for only 16% of them, 30 random draws hold about 5 vectorised variants, too few for
    a model to learn what vectorising is worth. Here each draw is the candidate (among
    `pool_factor` random valid ones) whose values are the least represented so far, so rare
    but valid values get their share while every pick stays a valid configuration.
    """
    pool = problem.sample_matrix(max(n * pool_factor, 256), rng)
    if len(pool) <= n:
        return pool
    free = [i for i, p in enumerate(problem.parameters) if len(p.values) > 1]
    # each candidate's values as positions in its parameter's list, and how often each was picked
    position = [np.searchsorted(np.sort(problem.parameters[i].values), pool[:, i]) for i in free]
    counts = [np.zeros(len(problem.parameters[i].values)) for i in free]
    available = np.ones(len(pool), dtype=bool)
    chosen = []
    for _ in range(n):
        # the rarity of each of the candidate's values so far (1, 1/2, 1/3, ...), summed over parameters
        score = sum((1.0 / (1.0 + c[pos]) for c, pos in zip(counts, position)), np.zeros(len(pool)))
        score = np.where(available, score + 1e-6 * rng.random(len(pool)), -np.inf)
        pick = int(np.argmax(score))
        available[pick] = False
        chosen.append(pool[pick])
        for c, pos in zip(counts, position):
            c[pos[pick]] += 1
    return np.array(chosen)


def _seed_rows(problem: Problem, seeds: Sequence[Mapping[str, Any]], rng: np.random.Generator,
               pool_size: int = 4096) -> np.ndarray:
    """Valid configurations of `problem` that agree with each seed as far as its constraints allow.

    A seed names values for some of the parameters (the best configuration of another program on
    this device, say: the parameters the two programs share, such as the work-group size or the
    input's memory). A seed value missing from a parameter's list takes the nearest listed value.
    Each seed becomes one configuration: the seed's values with the other parameters drawn from
    valid configurations, and where no such combination is valid, the sampled configuration
    that agrees with the seed on the most parameters. Seeds that end on the same configuration
    count once.
    """
    names = problem.names
    pool = problem.sample_matrix(pool_size, rng)
    if len(pool) == 0:
        return np.zeros((0, len(names)), np.int64)
    rows = []
    for seed in seeds:
        shared = [(i, _nearest(problem.parameters[i].values, seed[n])) for i, n in enumerate(names) if n in seed]
        if not shared:
            continue
        columns = np.array([i for i, _ in shared])
        values = np.array([v for _, v in shared], dtype=np.int64)
        filled = pool.copy()
        filled[:, columns] = values
        valid = filled[problem._mask_rows(filled)]
        if len(valid):
            rows.append(valid[rng.integers(len(valid))])
            continue
        agree = (pool[:, columns] == values).sum(axis=1)
        closest = np.flatnonzero(agree == agree.max())
        rows.append(pool[closest[rng.integers(len(closest))]])
    if not rows:
        return np.zeros((0, len(names)), np.int64)
    return _distinct(problem, np.array(rows, dtype=np.int64))


def distinct_best(records: Iterable[tuple[Mapping[str, Any], Optional[float]]], n: int,
                  min_distance: int = 2) -> list[dict[str, int]]:
    """The `n` fastest successful configurations of `records` ((config, seconds or None) pairs),
    each differing from every one chosen before it in at least `min_distance` parameters.

    Meant as seeds for `_seed_rows`: the best configurations of a space are often one
    configuration and its neighbours (the same but for the unroll factor), and seeding a search
    with three of those costs three measurements to learn one thing. Parameters are compared on
    the union of the two configurations' names (a name only one of them has counts as a
    difference). Failures (None, zero, negative, NaN times) are skipped; ties keep the order of
    `records`.
    """
    ok = [(float(t), i, dict(c)) for i, (c, t) in enumerate(records)
          if t is not None and math.isfinite(float(t)) and float(t) > 0]
    chosen: list[dict[str, int]] = []
    for _, _, config in sorted(ok, key=lambda x: (x[0], x[1])):
        if len(chosen) >= n:
            break
        if all(_distance(config, c) >= min_distance for c in chosen):
            chosen.append({k: int(v) for k, v in config.items()})
    return chosen


def _distance(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    missing = object()
    return sum(a.get(k, missing) != b.get(k, missing) for k in set(a) | set(b))


def _nearest(values: Sequence[int], value: Any) -> int:
    value = int(value)
    return min(values, key=lambda v: (abs(int(v) - value), int(v)))


# ---- CLTune's strategies ------------------------------------------------------------------------


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


def random_search(problem: Problem, budget: int, rng: np.random.Generator) -> Result:
    """Measure `budget` distinct valid configurations drawn uniformly."""
    session = Session(problem, budget)
    try:
        for row in problem.sample_matrix(budget, rng):
            session.measure(row)
    except BudgetExhausted:
        pass
    return session.result(strategy="random")


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


# ---- the machine-learning strategy -------------------------------------------------------------


@dataclass
class Observation:
    """A measurement from elsewhere (the database): possibly another problem size (context)."""

    config: Mapping[str, int]
    time: Optional[float]
    context: Mapping[str, float] = field(default_factory=dict)


def _phi(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def _neighbour_pool(problem: Problem, rows: np.ndarray) -> np.ndarray:
    """All valid one-parameter neighbours of `rows` (for spaces too large to list)."""
    out = []
    for i, p in enumerate(problem.parameters):
        for v in p.values:
            moved = rows.copy()
            moved[:, i] = v
            out.append(moved)
    pool = _distinct(problem, np.concatenate(out))
    return pool[problem._mask_rows(pool)]


def _moves(problem: Problem, rows: np.ndarray, keep: Optional[int] = None) -> np.ndarray:
    """Every row of `rows` with one parameter (other than column `keep`) set to another value."""
    out = []
    for i, p in enumerate(problem.parameters):
        if i == keep:
            continue
        for v in p.values:
            moved = rows[rows[:, i] != v].copy()
            moved[:, i] = v
            out.append(moved)
    return np.concatenate(out) if out else rows[:0]


def _repaired_neighbours(problem: Problem, row: np.ndarray, max_repairs: int = 3) -> np.ndarray:
    """The valid configurations one move away from `row`, where a move sets one parameter to
    another value and, if that breaks a constraint, also changes the fewest other parameters
    that make it valid again (up to `max_repairs`).

    Plain one-parameter moves cannot reach a value that is only valid together with others:
    `vector_x = 1` needs the interior fast path, the blocked layout and px_x > 1, so from most
    configurations it is never a neighbour, and a local search stays among the 2.5x slower
    scalar variants (convolution on the H200). Repairing the move keeps such options one step
    away, and the smallest repairs keep the step local.
    """
    row = np.asarray(row, dtype=np.int64)
    found = []
    for i, p in enumerate(problem.parameters):
        for v in p.values:
            if v == row[i]:
                continue
            frontier = row[None, :].copy()
            frontier[0, i] = v
            for depth in range(max_repairs + 1):
                valid = problem._mask_rows(frontier)
                if valid.any():
                    found.append(frontier[valid])
                    break
                if depth == max_repairs:
                    break
                frontier = _distinct(problem, _moves(problem, frontier, keep=i))
                if len(frontier) > 200_000:  # a deep repair in a very wide space: not a local step any more
                    break
    if not found:
        return row[None, :0].reshape(0, len(row))
    return _distinct(problem, np.concatenate(found))


def _distinct(problem: Problem, rows: np.ndarray) -> np.ndarray:
    _, first = np.unique(problem.index(rows), return_index=True)
    return rows[np.sort(first)]


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
        rows = np.array([k for k, t in session.times.items() if t is not None], dtype=np.int64)
        logt = np.log([t for t in session.times.values() if t is not None])
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
        labels = np.array([t is None for t in session.times.values()])
        if labels.sum() < 1 or (~labels).sum() < 2:
            self.clf = None
            return False
        from sklearn.linear_model import LogisticRegression

        rows = np.array(list(session.times), dtype=np.int64)
        self.clf = LogisticRegression(C=10.0, class_weight="balanced", max_iter=2000)
        self.clf.fit(self._features(rows), labels)
        return True

    def p_fail(self, rows: np.ndarray) -> np.ndarray:
        if self.clf is None or len(rows) == 0:
            return np.zeros(len(rows))
        return self.clf.predict_proba(self._features(rows))[:, 1]


def ml(problem: Problem, budget: int, rng: np.random.Generator, *, sample_fraction: float = 0.4,
       threshold: float = 0.02, min_second: Optional[int] = None, fixed_second: Optional[int] = None,
       retrain: bool = True, model: str = "bnn", model_options: Optional[Mapping[str, Any]] = None,
       prior: Sequence[Observation] = (), prediction_sample: int = 250_000, prior_weight: float = 10.0,
       avoid_failures: bool = True, retrain_every: int = 10, max_retrains: int = 10,
       local_share: float = 0.0, local_radius: int = 1, spread: bool = False,
       seeds: Sequence[Mapping[str, int]] = (), pick: str = "thompson", probe: str = "cold",
       min_gain: float = 0.0) -> Result:
    """Falch & Elster's two-stage ML search (see the module docstring for what is changed).

    Stage 1 measures `sample_fraction * budget` random configurations. Stage 2 walks the rest
    from the fastest prediction up and measures while q = P(time < best so far) (Eq. 2) is at
    least `threshold`, measuring at least `min_second` (default: a tenth of the budget, at least
    5) and at most what the budget has left. `fixed_second=M` replaces the threshold by exactly
    M configurations, the paper's fixed-size second stage.

    Other options: `model` (a name in models.MODELS) and `model_options` (its constructor
    arguments); `retrain=False` keeps the first model (the paper's method), `retrain_every` and
    `max_retrains` bound the refits; `avoid_failures=False` drops the failure classifier;
    `spread=True` draws stage 1 with `_spread_sample` (every parameter's values covered) instead
    of uniformly;
    `prediction_sample` is the most configurations ranked at once (larger spaces are sampled);
    `prior_weight` is how many pseudo-observations the model's own error estimate is worth
    against the residuals seen in stage 2. `local_share` > 0 keeps that fraction of the budget
    for a model-guided local search from the best configuration (`_local_phase`; moves of up
    to `local_radius` parameters), after stage 2, where `pick` chooses the neighbour to measure
    (`_pick`: "thompson", a draw from the model's uncertainty, or "mean", its fastest prediction)
    and `probe` when the walk probes every parameter of its centre ("cold": only without `seeds`
    and `prior`; "always"; "never"; see `_local_phase`).

    `prior` adds measurements from the database, of this or other problem sizes (their
    `context`, matched against `problem.context`), to the training data. Prior measurements with
    the same context count as known: they are not measured again and their best time is the one
    to beat, but the Result lists only this run's measurements, so a caller passing `prior`
    should compare the result with the prior's best.
    """
    if not 0 < sample_fraction <= 1:
        raise ValueError("sample_fraction must be in (0, 1]")
    if not 0 <= threshold <= 1:
        raise ValueError("threshold must be a probability in [0, 1]")
    if not 0 <= local_share < 1:
        raise ValueError("local_share must be in [0, 1)")
    if pick not in PICKS:
        raise ValueError(f"pick must be one of {', '.join(PICKS)}, got {pick!r}")
    if probe not in PROBES:
        raise ValueError(f"probe must be one of {', '.join(PROBES)}, got {probe!r}")
    if not 0 <= min_gain < 1:
        raise ValueError(f"min_gain must be in [0, 1), got {min_gain!r}")
    session = Session(problem, budget)
    seed = int(rng.integers(2 ** 31))
    info: dict[str, Any] = {"strategy": "ml", "model": model, "threshold": threshold, "retrains": 0}
    try:
        stage1 = max(1, min(budget, round(sample_fraction * budget)))
        seeded = _seed_rows(problem, seeds, rng)[:stage1] if seeds else np.zeros((0, len(problem.names)), np.int64)
        rest = stage1 - len(seeded)
        first = _spread_sample(problem, rest, rng) if spread else problem.sample_matrix(rest, rng)
        for row in np.concatenate([seeded, first.reshape(-1, len(problem.names))]):
            session.measure(row)
        while sum(t is not None for t in session.times.values()) < 4 and session.remaining > 0:
            extra = _unmeasured_sample(problem, session, rng)  # too few successes to learn from
            if len(extra) == 0:
                break
            session.measure(extra[0])
        info["stage1"] = session.evaluations
        info["seeded"] = len(seeded)
        if session.best_time is None or session.remaining <= 0:
            return session.result(**info, stage2=0)

        ranker = _Ranker(problem, model, model_options or {}, seed, prior, prediction_sample, rng)
        best_log = math.log(min(session.best_time, ranker.best_known or math.inf))
        fitted = ranker.fit(session)
        info["cv_rmse"] = float(getattr(fitted, "cv_rmse_", float("nan")))
        rows, mean, std = ranker.rank(fitted, session, _best_rows(session))
        failures = _FailureModel(Encoder(problem.parameters)) if avoid_failures else None
        skip = _skip_mask(failures, session, rows)
        floor = min(max(5, budget // 10), session.remaining) if min_second is None else min_second
        z2_sum, z_count, count, i, since_fit = 0.0, 0, 0, 0, 0
        reserve = round(local_share * budget)
        while session.remaining > reserve:
            if fixed_second is not None and count >= fixed_second:
                break
            if i >= len(rows):
                break
            if skip[i]:
                i += 1
                continue
            scale = math.sqrt((prior_weight + z2_sum) / (prior_weight + z_count))
            sd = max(float(std[i]) * scale, 1e-6)
            q = _phi((best_log - float(mean[i])) / sd)
            stop = fixed_second is None and count >= floor and q < threshold
            # retrain when the new data is a sizeable fraction of what the model saw (so the
            # number of fits grows with the log of the budget), and before giving up
            due = since_fit >= max(retrain_every, 0.25 * ranker.trained_on)
            if (stop and since_fit >= 5) or due:
                if retrain and info["retrains"] < max_retrains:
                    info["retrains"] += 1
                    since_fit = 0
                    fitted = ranker.fit(session)
                    rows, mean, std = ranker.rank(fitted, session, _best_rows(session))
                    skip = _skip_mask(failures, session, rows)
                    z2_sum, z_count, i = 0.0, 0, 0
                    continue
            if stop:
                break
            t = session.measure(rows[i])
            count += 1
            since_fit += 1
            i += 1
            if t is not None:
                z = (math.log(t) - float(mean[i - 1])) / max(float(std[i - 1]), 1e-6)
                z2_sum, z_count = z2_sum + z * z, z_count + 1
                best_log = min(best_log, math.log(t))
            elif failures is not None:  # learn from the failure before choosing the next one
                skip[i:] = _skip_mask(failures, session, rows[i:])
        info["stage2"] = count
        probing = probe == "always" or (probe == "cold" and not seeds and not prior)
        info["probe"] = probing
        info["local"] = _local_phase(problem, session, ranker, fitted, failures, radius=local_radius,
                                     pick=pick, probe=probing, min_gain=min_gain) if local_share > 0 else 0
        if session.best_key is not None:  # what the final model expected of the winner
            best_row = np.array([session.best_key], dtype=np.int64)
            info["predicted_seconds"] = float(np.exp(fitted.predict(ranker._features(best_row))[0][0]))
    except BudgetExhausted:
        pass
    return session.result(**info)


def _neighbour_candidates(problem: Problem, session: Session, rows: np.ndarray, radius: int,
                          first: Optional[np.ndarray] = None) -> np.ndarray:
    """Unmeasured (repaired) neighbours of the first of `rows` that has any; [] if none has.
    `first`: the repaired neighbours of rows[0], where the caller has them already."""
    measured = session.measured_index()
    for i, row in enumerate(rows):  # the best's neighbours first; further ones only when those are used up
        pool = first if i == 0 and first is not None else _repaired_neighbours(problem, row)
        for _ in range(radius - 1):
            pool = _neighbour_pool(problem, pool)
        pool = pool[~np.isin(problem.index(pool), measured)]
        if len(pool):
            return pool
    return np.zeros((0, len(problem.parameters)), np.int64)


def _untried_moves(problem: Problem, session: Session, centre: np.ndarray, around: np.ndarray,
                   pool: np.ndarray) -> np.ndarray:
    """Which rows of `pool` change a parameter that no measured one of `around` (the repaired
    neighbours of `centre`) has changed: the centre's coordinates not probed yet."""
    measured = around[np.isin(problem.index(around), session.measured_index())]
    probed = (measured != centre).any(0)
    return ((pool != centre) & ~probed).any(1)


PICKS = ("thompson", "mean")
PROBES = ("cold", "always", "never")


def _pick(ranker: "_Ranker", model: Model, failures: Optional[_FailureModel], pool: np.ndarray,
          pick: str = "thompson") -> np.ndarray:
    """The candidate to measure next, passing over those predicted to fail.

    "mean": the one the model predicts fastest. "thompson": the fastest in one draw from the
    model's uncertainty (each candidate's predicted log-time plus its ensemble spread times a
    standard normal draw), so that a neighbour the members disagree on is tried now and then.
    Always taking the predicted fastest leaves about one run in ten in the scalar family on the
    H200 convolution space at 1% of it, where the model, trained on scalar configurations,
    underrates the moves into the vectorised one: over 4 sets of 10 replays, 13.3% from the best
    with "mean" and 7.7% with "thompson". Over the 19 rows of the strategy tables the mean goes
    from 9.4% to 8.1%, 12 rows better and 6 worse (BENCHMARKS.md)."""
    score, spread = model.predict(ranker._features(pool))
    if pick == "thompson":
        score = score + spread * ranker.rng.standard_normal(len(score))
    if failures is not None and failures.clf is not None:
        score = np.where(failures.p_fail(pool) > 0.5, np.inf, score)
    return pool[int(np.argmin(score))]


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
    known when they were given up. Without that, a walk on the H200 convolution space found a
    configuration 1.21x the best two parameters from a centre it had given up, never searched
    around it and ended there, with a configuration 1.05x the best one move from it and the
    best two. A new best counts as progress when it is `min_gain` (relative) faster than the
    one before; by default any new best does, however small: it is a new centre with new
    neighbours. When gains under 0.5% counted as stalls (`min_gain=0.005`, the rule before), a
    walk on the H200 convolution space that had just reached a configuration 4.5% off the best,
    one move from it, gave its region up (the new best lay within two parameters of the
    abandoned centre) and spent its last 28 measurements on configurations 1.4x the best. Over
    120 paired replays at 1% of that space the mean went from 8.5% to 4.7% with any gain
    counted (BENCHMARKS.md).

    `probe`: after a measurement that did not improve, the next one changes a parameter of the
    centre that no measured neighbour has changed yet, while there is one (the model, or its
    draw, still chooses which move and which value). Without it, a model trained on a few dozen
    configurations can be confidently wrong about one parameter and never try it: on the H200
    convolution space, the walk stayed at 2x the best next to a configuration whose one move
    (no local-memory tile) was 1.4x, because every sampled configuration without the tile also
    used image memory, a slow combination. Over 6 recorded spaces at 1% of each, 40 paired
    replays each, probing took the mean slowdown from 5.98% to 4.64%; with the other programs'
    best configurations as seeds it made it worse (2.40% to 2.96%), so `ml` probes only cold
    (BENCHMARKS.md).
    """
    patience = max(10, session.budget // 8) if patience is None else patience
    count, since_fit, stale = 0, 0, 0

    def refit_if_due(model: Model) -> Model:
        nonlocal since_fit
        if since_fit >= max(5, 0.25 * ranker.trained_on):  # fits grow with the log of the budget
            model, since_fit = ranker.fit(session), 0
        return model

    abandoned: list[np.ndarray] = []
    while session.remaining > 0:
        best = _best_rows(session, 64)
        if abandoned:
            far = np.array([min(int((row != a).sum()) for a in abandoned) > 2 for row in best], dtype=bool)
            # faster than every centre given up: not known when they were, so a centre again
            given_up = min(session.times[tuple(int(v) for v in a)] for a in abandoned)
            far |= np.array([session.times[tuple(int(v) for v in row)] < given_up for row in best], dtype=bool)
            best = best[far] if far.any() else best
        best = best[:width]
        if len(best) == 0:
            break
        centre = best[0]
        around = _repaired_neighbours(problem, centre)
        pool = _neighbour_candidates(problem, session, best, radius, first=around)
        if len(pool) == 0:
            pool = _unmeasured_sample(problem, session, ranker.rng)
            if len(pool) == 0:
                break
        model = refit_if_due(model)
        if probe and stale > 0:
            untried = _untried_moves(problem, session, centre, around, pool)
            pool = pool[untried] if untried.any() else pool
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


def hybrid(problem: Problem, budget: int, rng: np.random.Generator, *, sample_fraction: float = 0.3,
           local_share: float = 0.7, local_radius: int = 1, spread: bool = True,
           model: str = "bnn",
           model_options: Optional[Mapping[str, Any]] = None, prior: Sequence[Observation] = (),
           avoid_failures: bool = True, prediction_sample: int = 250_000,
           seeds: Sequence[Mapping[str, int]] = (), pick: str = "thompson", probe: str = "cold",
           min_gain: float = 0.0) -> Result:
    """The default tuner: a spread sample, then a model-guided local search (see `ml`).

    `sample_fraction` of the budget goes to a sample that covers every parameter's values
    (`spread`; uniform random with spread=False), `local_share` to steepest descent from the
    best one, where the bagged network picks the neighbour to measure (`pick`: "thompson", a draw
    from its uncertainty, the default; "mean", its fastest prediction); what is left between the
    two is `ml`'s Eq. 2 walk over the whole space. Why: at the budgets that matter (about 1% of
    spaces of thousands, 15-120 measurements), a model trained on a few dozen points ranks the
    whole space poorly (its error is 25-50% there) but tells apart the neighbours of a good
    configuration well enough, and local search without a model (Kernel Tuner's mls,
    greedy_ils) spends most of its budget on bad neighbours. Where the fastest variants need
    options valid in few configurations (vectorised loads: interior fast path, blocked layout
    and px_x > 1 together), a uniform sample holds too few of them and plain one-parameter moves
    cannot reach them: the spread sample and the repaired moves are what take convolution on the
    H200 (9,944 configurations, 99 measurements) from 88% to about 12% over the best
    (BENCHMARKS.md). `probe` makes the walk try each parameter of its centre at least once when
    it stalls ("cold", the default: only without seeds or prior measurements; `_local_phase`).
    """
    result = ml(problem, budget, rng, sample_fraction=sample_fraction, local_share=local_share,
                local_radius=local_radius, spread=spread, model=model, model_options=model_options, prior=prior,
                avoid_failures=avoid_failures, prediction_sample=prediction_sample, seeds=seeds, pick=pick,
                probe=probe, min_gain=min_gain)
    result.info["strategy"] = "hybrid"
    return result


def _skip_mask(failures: Optional[_FailureModel], session: Session, rows: np.ndarray,
               head: int = 4096, cutoff: float = 0.5) -> np.ndarray:
    """Candidates at the front of the walk that are predicted to fail: passed over."""
    skip = np.zeros(len(rows), dtype=bool)
    if failures is not None and failures.fit(session):
        skip[:head] = failures.p_fail(rows[:head]) > cutoff
    return skip


def _best_rows(session: Session, n: int = 32) -> np.ndarray:
    ok = sorted((t, k) for k, t in session.times.items() if t is not None)[:n]
    return np.array([k for _, k in ok], dtype=np.int64)


STRATEGIES: dict[str, Strategy] = {
    "hybrid": hybrid,
    "ml": ml,
    "random": random_search,
    "annealing": simulated_annealing,
    "pso": particle_swarm,
    "exhaustive": exhaustive,
}


DEFAULT_STRATEGY = "hybrid"  # the best on our recorded spaces (benchmarks/evaluate_tuners.py)


def get_strategy(name: str) -> Strategy:
    """The strategy called `name` (any case); a ValueError naming the closest one if there is none."""
    key = str(name).strip().lower()
    if key in STRATEGIES:
        return STRATEGIES[key]
    hint = suggestion_suffix(key, STRATEGIES, cutoff=0.4)
    raise ValueError(f"unknown strategy '{name}'{hint} (known: {', '.join(STRATEGIES)})")


__all__ = ["Result", "Session", "BudgetExhausted", "Observation", "distinct_best", "exhaustive", "random_search",
           "simulated_annealing", "particle_swarm", "ml", "hybrid", "STRATEGIES", "DEFAULT_STRATEGY", "get_strategy"]
