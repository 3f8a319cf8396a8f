"""Offline evaluation of zero-shot predictions (OmniTune, Table 1): train on some cases, predict
for held-out ones, and score each prediction against what was measured there.

Offline, a held-out case's candidates are its MEASURED configurations (a random sample of its
space plus the default), so the oracle is the best measured one, not the space's true optimum.
A prediction that fails where it was measured counts as illegal; the tuner would then run the
default configuration, so that is the time it scores with.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Optional, Sequence

import numpy as np

from .dataset import Dataset
from .models import J48Baseline, PairRanker, nearest_candidate, portable_distance

FEW_SHOT = 10  # measurements a few-shot tuner spends on the top-ranked candidates


@dataclass
class CaseResult:
    case: int
    share: float  # oracle time / time of what was predicted (default's time where that failed)
    speedup_default: float  # default's time / predicted's
    speedup_single: float  # best single configuration's time / predicted's
    illegal: bool
    share_few_shot: float = math.nan  # oracle / best of the top FEW_SHOT ranked (rankers only)
    # the pick's fastest launch was no slower than the oracle's slowest: within measurement noise
    # of the oracle (a separate column: the share above still scores against the best median)
    within_noise: bool = False


def case_result(case: int, times: np.ndarray, chosen: Optional[int], default: Optional[int],
                single: Optional[int], few_shot: Sequence[int] = (),
                launch_range: Optional[np.ndarray] = None) -> CaseResult:
    """Scores for one held-out case: `times` per candidate (NaN where it failed), the indices of
    the predicted, default and best-single candidates (None: nothing legal was returned), and
    each candidate's fastest and slowest launch (`launch_range`, rows of two) where known."""
    def effective(i: Optional[int]) -> float:
        if i is not None and not math.isnan(times[i]):
            return float(times[i])
        return float(times[default]) if default is not None else math.nan

    oracle = float(np.nanmin(times))
    illegal = chosen is None or math.isnan(times[chosen])
    t = effective(chosen)
    t_default = float(times[default]) if default is not None else math.nan
    legal_top = [times[i] for i in few_shot if not math.isnan(times[i])]
    within = False
    if launch_range is not None and not illegal:
        best = int(np.nanargmin(times))
        within = bool(launch_range[chosen, 0] <= launch_range[best, 1])
    return CaseResult(case=case, share=oracle / t, speedup_default=t_default / t,
                      speedup_single=effective(single) / t, illegal=illegal,
                      share_few_shot=oracle / min(legal_top) if legal_top else math.nan, within_noise=within)


def _geomean(values: Sequence[float]) -> float:
    v = np.array([x for x in values if not math.isnan(x) and x > 0])
    return float(np.exp(np.mean(np.log(v)))) if len(v) else math.nan


TAIL = 0.5  # a prediction under this share of its oracle is in the tail


def summarize(results: Sequence[CaseResult]) -> dict:
    """Mean share of the oracle, its minimum, geometric-mean speedups, illegal share; the cases
    under TAIL of their oracle, and how many of those are within measurement noise of it."""
    shares = [r.share for r in results if not math.isnan(r.share)]
    few = [r.share_few_shot for r in results if not math.isnan(r.share_few_shot)]
    return {"cases": len(results),
            "share_of_oracle": float(np.mean(shares)) if shares else math.nan,
            "min_share_of_oracle": float(np.min(shares)) if shares else math.nan,
            "speedup_over_default": _geomean([r.speedup_default for r in results]),
            "speedup_over_best_single": _geomean([r.speedup_single for r in results]),
            "illegal_share": float(np.mean([r.illegal for r in results])) if results else math.nan,
            "few_shot_share_of_oracle": float(np.mean(few)) if few else math.nan,
            "median_share_of_oracle": float(np.median(shares)) if shares else math.nan,
            "tail_cases": sum(1 for r in results if r.share < TAIL),
            "tail_within_noise": sum(1 for r in results if r.share < TAIL and r.within_noise)}


def best_single(data: Dataset, cases: Sequence[int]) -> Optional[np.ndarray]:
    """The portable encoding, of those the training cases measured, with the best mean share of
    the oracle over every training case, each scored where the encoding lands in it as in
    evaluation (its nearest measured configuration; a failure scores 0). Scored where it lands,
    not only where it was measured: the spaces are sampled, so no configuration but a default is
    measured everywhere, and one measured in a few cases must not win on those alone."""
    portable = data.portable()
    scored = [rows for rows in (data.rows_of(c) for c in cases) if data.ok[rows].any()]
    if not scored:
        return None
    keys = np.unique(np.round(portable[np.concatenate(scored)], 6), axis=0)
    total = np.zeros(len(keys))
    for rows in scored:
        shares = np.exp(np.nanmin(data.log_time[rows]) - data.log_time[rows])
        shares = np.where(np.isnan(shares), 0.0, shares)
        # every key's nearest row of this case at once (as nearest_candidate lands one)
        total += shares[np.argmin(portable_distance(portable[rows], keys), axis=1)]
    return keys[int(np.argmax(total))]


def make_ranker(spec: str, seed: int = 0) -> PairRanker:
    """A PairRanker from a method name: the regressor kind, then options after slashes
    ("forest/scaled/caution=0.5")."""
    kind, *options = spec.split("/")
    kw: dict[str, Any] = {}
    for option in options:
        if option in ("median", "scaled", "rank"):
            kw["target"] = option
        elif option == "launch":
            kw["launch"] = True
        elif option == "relative":
            kw["relative"] = True
        elif option == "lambdarank":
            kw["order"] = "lambdarank"
        elif option.startswith("caution="):
            kw["caution"] = float(option.split("=", 1)[1])
        else:
            raise ValueError(f"unknown option '{option}' in method '{spec}'")
    return PairRanker(kind, seed, **kw)


def evaluate_split(data: Dataset, train: Sequence[int], test: Sequence[int], methods: Sequence[str],
                   seed: int = 0) -> dict[str, list[CaseResult]]:
    """Train every method on `train` cases and score it on each `test` case."""
    single = best_single(data, train)
    models = {}
    for m in methods:
        models[m] = J48Baseline(seed).fit(data, train) if m == "j48" else make_ranker(m, seed).fit(data, train)
    out: dict[str, list[CaseResult]] = {m: [] for m in [*methods, "best_single"]}
    portable = data.portable()
    for c in test:
        rows = data.rows_of(c)
        times = np.exp(data.log_time[rows])
        if np.all(np.isnan(times)):
            continue  # nothing ran: no oracle to compare with
        spans = data.launch_range[rows] if data.launch_range is not None else None
        keys = [data.keys[r] for r in rows]
        default = keys.index(data.default_key[c]) if data.default_key.get(c) in keys else None
        allowed = np.ones(len(rows), dtype=bool)
        s = nearest_candidate(portable[rows], single, allowed) if single is not None else None
        out["best_single"].append(case_result(c, times, s, default, s, launch_range=spans))
        vec = data.case_features[c]
        for m, model in models.items():
            if m == "j48":
                chosen, top = model.choose(vec, portable[rows], allowed), []
            else:
                order, _ = model.rank(vec, data.config_features[rows])
                chosen, top = (int(order[0]) if len(order) else None), list(order[:FEW_SHOT])
            out[m].append(case_result(c, times, chosen, default, s, top, launch_range=spans))
    return out


def results_json(results: dict[str, list[CaseResult]]) -> dict:
    return {m: {"summary": summarize(r), "cases": [asdict(x) for x in r]} for m, r in results.items()}
