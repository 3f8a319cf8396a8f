"""Falch & Elster's two-stage method: a random sample, a bagged neural network on log(time), and a
second stage driven by Eq. 2 with a threshold T; with these changes:

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
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ..encoding import Encoder
from ..models import Model
from ..problem import Problem
from .local import PROBES, _local_phase
from .neighbours import _best_rows
from .ranking import PICKS, Observation, _FailureModel, _Ranker, _skip_mask
from .design import code_shape_levels, code_shape_seeds
from .sampling import _seed_rows, _spread_sample, _unmeasured_sample
from .budget import AHEAD, BudgetExhausted, Result, Session


def _phi(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def ml(problem: Problem, budget: int, rng: np.random.Generator, *, sample_fraction: float = 0.4,
       threshold: float = 0.02, min_second: Optional[int] = None, fixed_second: Optional[int] = None,
       retrain: bool = True, model: str = "bnn", model_options: Optional[Mapping[str, Any]] = None,
       prior: Sequence[Observation] = (), prediction_sample: int = 250_000, prior_weight: float = 10.0,
       avoid_failures: bool = True, retrain_every: int = 10, max_retrains: int = 10,
       local_share: float = 0.0, local_radius: int = 1, spread: bool = False,
       seeds: Sequence[Mapping[str, int]] = (), pick: str = "thompson", probe: str = "cold",
       min_gain: float = 0.0, code_shape: Optional[bool] = None, lie: str = "constant") -> Result:
    """Falch & Elster's two-stage ML search (the module's docstring says what is changed).

    Stage 1 measures `sample_fraction * budget` random configurations. Stage 2 walks the rest
    from the fastest prediction up and measures while q = P(time < best so far) (Eq. 2) is at
    least `threshold`, measuring at least `min_second` (default: a tenth of the budget, at least
    5) and at most what the budget has left. `fixed_second=M` replaces the threshold by exactly
    M configurations, the paper's fixed-size second stage.

    Other options: `model` (a name in models.MODELS) and `model_options` (its constructor
    arguments); `retrain=False` keeps the first model (the paper's method), `retrain_every` and
    `max_retrains` bound the refits; `avoid_failures=False` drops the failure classifier;
    `spread=True` draws stage 1 with `_spread_sample` (every parameter's values covered) instead
    of uniformly, led by the code shape (design.py) when `code_shape` is True, or None and the
    problem is measured on a CPU device (then, with no `seeds` and no `prior`, design.CPU_SEEDS
    are measured first);
    `prediction_sample` is the most configurations ranked at once (larger spaces are sampled);
    `prior_weight` is how many pseudo-observations the model's own error estimate is worth
    against the residuals seen in stage 2. `local_share` > 0 keeps that fraction of the budget
    for a model-guided local search from the best configuration (`_local_phase`; moves of up
    to `local_radius` parameters), after stage 2, where `pick` chooses the neighbour to measure
    (`_pick`: "thompson", a draw from the model's uncertainty, or "mean", its fastest prediction)
    and `probe` when the walk probes every parameter of its centre ("cold": only without `seeds`
    and `prior`; "always"; "never"; see `_local_phase`). `lie`: what proposals pending in a
    batch (a cluster's workers measuring B at a time) count as until measured: "constant", the
    slowest time so far, or "believer", the model's prediction (Session.measure); one at a time
    it changes nothing.

    `prior` adds measurements from the database, of this or other problem sizes (their
    `context`, matched against `problem.context`), to the training data. Prior measurements with
    the same context count as known: they are not measured again and their best time is the one
    to beat, but the Result lists only this run's measurements, so a caller passing `prior`
    should compare the result with the prior's best.
    """
    _check_options(sample_fraction, threshold, local_share, pick, probe, min_gain)
    session = Session(problem, budget, lie=lie)  # which checks the lie
    seed = int(rng.integers(2 ** 31))
    info: dict[str, Any] = {"strategy": "ml", "model": model, "threshold": threshold, "retrains": 0}
    try:
        stage1 = max(1, min(budget, round(sample_fraction * budget)))
        lead = code_shape_levels(problem, code_shape) if spread else []
        first_seeds = list(seeds)
        if lead and not first_seeds and not prior:  # nothing known: the CPU's fastest shapes measured before
            first_seeds = code_shape_seeds(problem)
            info["design_seeds"] = len(first_seeds)
        if lead:  # one configuration per value of the code shape's first level, however small the budget
            stage1 = min(budget, max(stage1, len(first_seeds) + math.prod(len(problem.parameters[c].values)
                                                                          for c in lead[0])))
        seeded = _first_stage(problem, session, rng, stage1, first_seeds, spread, lead)
        info["stage1"] = session.evaluations
        info["seeded"] = seeded
        if session.best_time is None or session.remaining <= 0:
            return session.result(**info, stage2=0)

        ranker = _Ranker(problem, model, model_options or {}, seed, prior, prediction_sample, rng)
        fitted = ranker.fit(session)
        info["cv_rmse"] = float(getattr(fitted, "cv_rmse_", float("nan")))
        failures = _FailureModel(Encoder(problem.parameters)) if avoid_failures else None
        floor = min(max(5, budget // 10), session.remaining) if min_second is None else min_second
        fitted, info["stage2"] = _second_stage(
            session, ranker, fitted, failures, info, threshold=threshold, floor=floor, fixed_second=fixed_second,
            retrain=retrain, retrain_every=retrain_every, max_retrains=max_retrains, prior_weight=prior_weight,
            reserve=round(local_share * budget))
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


def _check_options(sample_fraction: float, threshold: float, local_share: float, pick: str, probe: str,
                   min_gain: float) -> None:
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


def _first_stage(problem: Problem, session: Session, rng: np.random.Generator, stage1: int,
                 seeds: Sequence[Mapping[str, int]], spread: bool, lead: Sequence[Sequence[int]] = ()) -> int:
    """Stage 1: the seeds' configurations and a sample (spread or uniform), `stage1` in all, then
    more until 4 have succeeded (too few to learn from otherwise); returns how many seeds it measured."""
    seeded = _seed_rows(problem, seeds, rng)[:stage1] if seeds else np.zeros((0, len(problem.names)), np.int64)
    rest = stage1 - len(seeded)
    first = _spread_sample(problem, rest, rng, lead=lead) if spread else problem.sample_matrix(rest, rng)
    rows = np.concatenate([seeded, first.reshape(-1, len(problem.names))])
    session.upcoming(rows)  # the whole stage is known: its sources are built ahead while it runs
    for row in rows:
        session.measure(row)
    while sum(t is not None for t in session.times.values()) < 4 and session.remaining > 0:
        extra = _unmeasured_sample(problem, session, rng)
        if len(extra) == 0:
            break
        session.measure(extra[0])
    return len(seeded)


def _second_stage(session: Session, ranker: _Ranker, fitted: Model, failures: Optional[_FailureModel],
                  info: dict[str, Any], *, threshold: float, floor: int, fixed_second: Optional[int], retrain: bool,
                  retrain_every: int, max_retrains: int, prior_weight: float, reserve: int) -> tuple[Model, int]:
    """Stage 2: the walk from the fastest prediction up while Eq. 2 says it is worth it (see `ml`),
    leaving `reserve` of the budget; returns the model as last fitted and how many it measured.
    Counts its refits in info["retrains"]."""
    best_log = math.log(min(session.best_time, ranker.best_known or math.inf))
    rows, mean, std = ranker.rank(fitted, session, _best_rows(session))
    skip = _skip_mask(failures, session, rows)
    z2_sum, z_count, count, i, since_fit = 0.0, 0, 0, 0, 0
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
        if session.problem.prefetching:  # the ranking's next few, should the walk go on
            session.upcoming(rows[i:i + 16][~skip[i:i + 16]][:AHEAD])
        t = session.measure(rows[i])
        count += 1
        since_fit += 1
        i += 1
        if session.believed(tuple(int(v) for v in rows[i - 1])):
            continue  # the model's own prediction: nothing to calibrate it with, no best to beat
        if session.lie == "believer" and session.best_time is not None:  # the batch just measured
            best_log = min(best_log, math.log(session.best_time))
        if t is not None:
            z = (math.log(t) - float(mean[i - 1])) / max(float(std[i - 1]), 1e-6)
            z2_sum, z_count = z2_sum + z * z, z_count + 1
            best_log = min(best_log, math.log(t))
        elif failures is not None:  # learn from the failure before choosing the next one
            skip[i:] = _skip_mask(failures, session, rows[i:])
    return fitted, count
