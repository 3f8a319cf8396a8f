"""Zero-shot models: which configuration of a case nobody measured should run first.

`PairRanker` scores (case, configuration) pairs: a regressor predicts a configuration's log time
relative to its case's median (so that the trees spend their splits on what the configuration
changes, not on how slow a case is overall), a second one the case's median, and a classifier the
chance that the configuration fails (work-group limits of the built kernel, resources, wrong
output). Its candidates are ordered by the predicted time, or (`order="lambdarank"`) by a
learning-to-rank model (LightGBM's LambdaRank) trained on each case's configurations graded by
their share of the case's best: what a zero-shot pick needs is the top of each case's order, which
a regression of every configuration's time serves only indirectly. `J48Baseline` is OmniTune's
baseline: a decision tree from the case's features straight to the best configuration seen. Both
return only candidates they are given, never a predicted or known failure, so what they return is
legal in the target's space by construction.
"""
from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any, Optional, Sequence

import numpy as np

from .dataset import Dataset, config_column, device_value, largest_cpu, pair_matrix

_NORMAL = NormalDist()
# predicted failure probability above which a candidate is left out: strict, because seeds are
# the top few of thousands of candidates, where the time model extrapolates into the region that
# failed (a miss costs a measurement; leaving out a good candidate among thousands costs little)
FAIL_THRESHOLD = 0.2
REGRESSORS = ("forest", "boosting", "bagged_nn", "ensemble")


def _regressor(kind: str, seed: int, n_jobs: int = 1) -> Any:
    if kind == "forest":
        from sklearn.ensemble import ExtraTreesRegressor

        return ExtraTreesRegressor(n_estimators=80, min_samples_leaf=2, max_features=0.5, n_jobs=n_jobs,
                                   random_state=seed)
    if kind == "boosting":
        from sklearn.ensemble import HistGradientBoostingRegressor

        return HistGradientBoostingRegressor(max_iter=300, learning_rate=0.08, random_state=seed)
    if kind == "bagged_nn":
        return _StandardizedNN(seed)
    if kind == "ensemble":
        return _Mean([_regressor("forest", seed, n_jobs), _regressor("boosting", seed)])
    raise ValueError(f"unknown regressor '{kind}' (one of {', '.join(REGRESSORS)})")


class _Mean:
    """The mean prediction of several regressors: trees and boosting err on different cases."""

    def __init__(self, members: list) -> None:
        self.members = members

    def fit(self, X: np.ndarray, y: np.ndarray) -> "_Mean":
        for m in self.members:
            m.fit(X, y)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.mean([m.predict(X) for m in self.members], axis=0)


class _StandardizedNN:
    """tuner.models' bagged network (k members, each early-stopped on its own fold) on
    standardized, log-compressed inputs: the features span many orders of magnitude."""

    def __init__(self, seed: int) -> None:
        from ..models import BaggedNeuralNetwork

        self.net = BaggedNeuralNetwork(k=5, hidden=(64, 32), epochs=400, seed=seed)

    def _x(self, X: np.ndarray) -> np.ndarray:
        Z = np.sign(X) * np.log1p(np.abs(X))
        return (Z - self.mu) / self.sd

    def fit(self, X: np.ndarray, y: np.ndarray) -> "_StandardizedNN":
        Z = np.sign(X) * np.log1p(np.abs(X))
        self.mu, self.sd = Z.mean(axis=0), Z.std(axis=0)
        self.sd[self.sd == 0] = 1.0
        self.net.fit(self._x(X), y)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.net.predict(self._x(X))[0]


TARGETS = ("median", "scaled", "rank")
ORDERS = ("time", "lambdarank")
# a configuration's grade in its case for the ranker: how many of these shares of the case's best
# time it reaches (4: within 2% of the best ... 0: under half its speed)
GRADES = (0.98, 0.9, 0.75, 0.5)
# what `train` and the live tuner use: the best in the evaluation
# (benchmarks/results/knowledge/eval-2026-11-24c-summary.md)
DEFAULT_TARGET = "scaled"
DEFAULT_LAUNCH = True
DEFAULT_ORDER = "lambdarank"


class PairRanker:
    """Ranks a case's candidate configurations by predicted time, predicted failures left out.

    `target`: what the regressor learns, a configuration's log time minus its case's median
    ("median"), or that divided by the case's spread ("scaled": the interquartile range of its
    log times, so that a case whose configurations differ by 100x does not outweigh ten whose
    differ by 2x), or its rank in its case as a normal score (robust to a few extreme times: what
counts is which configurations are faster, not by how much). `caution`: candidates are ranked by the members' mean prediction plus
    `caution` times their standard deviation (forest only), so that of two candidates predicted
    equally fast the one the trees agree on comes first. `launch`: the regressor and the
    classifier also see `dataset.launch_features` (the launch in the device's own units).
    `relative`: on CPUs the launch's absolute counts are hidden (`dataset.pair_matrix`).
    `order`: "time" ranks by the predicted time, "lambdarank" by the ranking model (the predicted
    times, failures and spreads stay the regressor's and the classifier's).
    `n_jobs`: processes for the trees (the same trees whatever the number)."""

    relative = False  # models pickled before the options have none
    order = "time"
    ranker = None
    cpu_units = math.inf  # the most compute units of a CPU in the training cases (see fills_the_cores)

    def __init__(self, kind: str = "forest", seed: int = 0, target: str = "median", caution: float = 0.0,
                 n_jobs: int = 1, launch: bool = False, relative: bool = False, order: str = "time") -> None:
        if kind not in REGRESSORS:
            raise ValueError(f"unknown regressor '{kind}' (one of {', '.join(REGRESSORS)})")
        if target not in TARGETS:
            raise ValueError(f"unknown target '{target}' (one of {', '.join(TARGETS)})")
        if order not in ORDERS:
            raise ValueError(f"unknown order '{order}' (one of {', '.join(ORDERS)})")
        self.kind, self.seed, self.target, self.caution, self.n_jobs = kind, seed, target, float(caution), n_jobs
        self.launch, self.relative, self.order = launch or relative, relative, order

    def fit(self, data: Dataset, cases: Sequence[int]) -> "PairRanker":
        from sklearn.ensemble import ExtraTreesClassifier, ExtraTreesRegressor

        rows = np.flatnonzero(np.isin(data.case, np.asarray(cases)))
        ok = rows[data.ok[rows]]
        if len(ok) == 0:
            raise ValueError("no successful measurements to learn from")
        medians, scales = {}, {}
        for c in np.unique(data.case[ok]):
            times = data.log_time[ok[data.case[ok] == c]]
            medians[c] = float(np.median(times))
            q1, q3 = np.percentile(times, [25, 75])
            scales[c] = max(float(q3 - q1), 0.05) if self.target != "median" else 1.0
        if self.target == "rank":
            relative = np.empty(len(ok))
            for c in medians:
                at = np.flatnonzero(data.case[ok] == c)
                ranks = np.argsort(np.argsort(data.log_time[ok[at]], kind="stable"), kind="stable")
                relative[at] = [_NORMAL.inv_cdf((r + 0.5) / len(at)) * scales[c] / 1.349 for r in ranks]
        else:
            relative = (data.log_time[ok] - np.array([medians[c] for c in data.case[ok]]))
        relative = relative / np.array([scales[c] for c in data.case[ok]])
        self.regressor = _regressor(self.kind, self.seed, self.n_jobs).fit(
            data.pair_features(ok, self.launch, self.relative), relative)
        self.ranker = self._fit_ranker(data, ok) if self.order == "lambdarank" else None
        known = sorted(medians)
        self.level = ExtraTreesRegressor(n_estimators=50, min_samples_leaf=1, random_state=self.seed).fit(
            data.case_features[known], np.array([[medians[c], math.log(scales[c])] for c in known]))
        failed = ~data.ok[rows]
        self.classifier = None
        if failed.any() and not failed.all():
            self.classifier = ExtraTreesClassifier(n_estimators=80, min_samples_leaf=1, max_features=0.5,
                                                   class_weight="balanced", n_jobs=self.n_jobs, random_state=self.seed
                                                   ).fit(data.pair_features(rows, self.launch, self.relative), failed)
        self.always_fails = bool(failed.all())
        self.cpu_units = largest_cpu(data.case_features[np.unique(data.case[rows])])
        return self

    def _fit_ranker(self, data: Dataset, ok: np.ndarray) -> Any:
        """LambdaRank over each case's successful configurations (a query each), graded by GRADES;
        None, with a warning, where LightGBM is missing (a source tree run without the package's
        dependencies): the predicted times order the candidates then."""
        try:
            import lightgbm
        except ImportError:
            import warnings

            warnings.warn("lightgbm is not installed: the knowledge model ranks by predicted time "
                          "(pip install lightgbm, a dependency of imagecl, for its ranking model)", stacklevel=3)
            return None

        rows = ok[np.argsort(data.case[ok], kind="stable")]  # a query's rows together
        cases, sizes = np.unique(data.case[rows], return_counts=True)
        best = {c: float(np.min(data.log_time[rows[data.case[rows] == c]])) for c in cases}
        share = np.exp(np.array([best[c] for c in data.case[rows]]) - data.log_time[rows])
        grade = sum((share >= g).astype(int) for g in GRADES)
        # small trees: the ranking must carry to programs and devices the training never had
        # (benchmarks/results/knowledge/eval-2026-11-28-summary.md)
        ranker = lightgbm.LGBMRanker(objective="lambdarank", n_estimators=400, learning_rate=0.05, num_leaves=15,
                                     min_child_samples=5, subsample=0.8, subsample_freq=1, colsample_bytree=0.5,
                                     lambdarank_truncation_level=10, label_gain=[0, 1, 3, 7, 15],
                                     random_state=self.seed, n_jobs=self.n_jobs, deterministic=True,
                                     force_row_wise=True, verbose=-1)  # the same model whatever n_jobs
        return ranker.fit(data.pair_features(rows, self.launch, self.relative), grade, group=sizes)

    def score(self, case_vector: np.ndarray, configs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predicted seconds and failure probability of each encoded configuration (rows of
        `configs`) of the case `case_vector`."""
        X = self._pairs(case_vector, configs)
        level, log_scale = self.level.predict(case_vector[None, :])[0]
        seconds = np.exp(self._relative(X) * math.exp(log_scale) + level)
        if self.classifier is not None:
            p_fail = self.classifier.predict_proba(X)[:, list(self.classifier.classes_).index(True)]
        else:
            p_fail = np.full(len(configs), 1.0 if self.always_fails else 0.0)
        return seconds, p_fail

    def _relative(self, X: np.ndarray) -> np.ndarray:
        members = getattr(self.regressor, "estimators_", None)
        if not self.caution or members is None:
            return self.regressor.predict(X)
        each = np.stack([m.predict(X) for m in members])
        return each.mean(axis=0) + self.caution * each.std(axis=0)

    def spread(self, case_vector: np.ndarray, configs: np.ndarray) -> Optional[np.ndarray]:
        """How much the members disagree on each encoded configuration of the case: the standard
        deviation of their predicted log times (None where the regressor has no members)."""
        members = getattr(self.regressor, "estimators_", None)
        if members is None:
            return None
        _, log_scale = self.level.predict(case_vector[None, :])[0]
        X = self._pairs(case_vector, configs)
        return np.stack([m.predict(X) for m in members]).std(axis=0) * math.exp(log_scale)

    def _pairs(self, case_vector: np.ndarray, configs: np.ndarray) -> np.ndarray:
        """The model's input for each encoded configuration of one case (as in training)."""
        return pair_matrix(np.repeat(case_vector[None, :], len(configs), axis=0), configs, self.launch,
                           self.relative)

    def rank(self, case_vector: np.ndarray, configs: np.ndarray, refused: Optional[np.ndarray] = None
             ) -> tuple[np.ndarray, np.ndarray]:
        """Candidate indices fastest first, without predicted failures or `refused` (a mask); on a
        CPU with more compute units than any CPU the model was trained on, those that leave cores
        idle after the others (`fills_the_cores`); and the predicted seconds of all candidates
        (the model's, whatever the order)."""
        seconds, p_fail = self.score(case_vector, configs)
        keep = p_fail <= FAIL_THRESHOLD
        if refused is not None:
            keep &= ~refused
        order = np.flatnonzero(keep)
        key = seconds if self.ranker is None else -self.ranker.predict(self._pairs(case_vector, configs))
        order = order[np.argsort(key[order], kind="stable")]
        units = device_value(case_vector, "compute_units")
        if units is not None and units > self.cpu_units:
            order = order[np.argsort(~fills_the_cores(case_vector, configs[order]), kind="stable")]
        return order, seconds


def fills_the_cores(case_vector: np.ndarray, configs: np.ndarray) -> np.ndarray:
    """Per encoded configuration of one case: whether its launch has at least one work-group per
    compute unit, or the device is not a CPU. A CPU runs a work-group as a loop on one core, so a
    launch of fewer leaves cores idle whatever the code. The models cannot learn that for a CPU
    with more cores than those in their training cases: with the 16-core Xeon held out (the
    2-core EPYC the only CPU left) they picked launches that kept 4 of its 16 cores busy. For such
    a CPU `rank` puts these candidates after the others; where a CPU as large was measured, the
    models know better (on a 2-core CPU at 128x128 one work-group can be fastest) and their order
    stands (BENCHMARKS.md, issue 17)."""
    is_cpu, units = device_value(case_vector, "is_cpu"), device_value(case_vector, "compute_units")
    if not is_cpu or units is None:  # a GPU, or a vector without a device's features
        return np.ones(len(configs), dtype=bool)
    return config_column(configs, "work_groups") >= units


def live_ranker(kind: str = "forest", seed: int = 0, n_jobs: int = 1, target: str = DEFAULT_TARGET,
                launch: bool = DEFAULT_LAUNCH, order: str = DEFAULT_ORDER) -> PairRanker:
    """The ranker every live consumer trains (`train`, `imagecl tune --knowledge` through
    fewshot, `imagecl serve`): one recipe, so that a prediction does not depend on which of
    them made it. `n_jobs` changes only the speed."""
    return PairRanker(kind, seed, target=target, n_jobs=n_jobs, launch=launch, order=order)


def portable_distance(targets: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Log2-scaled distances from portable encodings `wanted` (one row, or several) to each row
    of `targets`: shape (len(targets),), or (len(wanted), len(targets))."""
    return np.linalg.norm(np.log2(1 + targets) - np.log2(1 + wanted)[..., None, :], axis=-1)


def nearest_candidate(candidates: np.ndarray, wanted: np.ndarray, allowed: np.ndarray) -> Optional[int]:
    """The allowed candidate (portable encodings, rows) equal to `wanted`, else the nearest one
    (log2-scaled distance): how a configuration learned on one program lands in another's space."""
    idx = np.flatnonzero(allowed)
    if len(idx) == 0:
        return None
    d = portable_distance(candidates[idx], wanted)
    return int(idx[np.argmin(d)])


class J48Baseline:
    """OmniTune's J48 baseline: a decision tree from case features to the portable encoding of
    the best measured configuration (sklearn's CART standing in for C4.5)."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def fit(self, data: Dataset, cases: Sequence[int]) -> "J48Baseline":
        import warnings

        from sklearn.tree import DecisionTreeClassifier

        labels, features = [], []
        portable = data.portable()
        for c in cases:
            rows = data.rows_of(c)
            rows = rows[data.ok[rows]]
            if len(rows) == 0:
                continue
            labels.append(tuple(np.round(portable[rows[np.argmin(data.log_time[rows])]], 6)))
            features.append(data.case_features[c])
        if not labels:
            raise ValueError("no successful measurements to learn from")
        self.classes = sorted(set(labels))
        y = np.array([self.classes.index(label) for label in labels])
        with warnings.catch_warnings():  # nearly one label per case is what OmniTune's baseline is
            warnings.simplefilter("ignore", UserWarning)
            self.tree = DecisionTreeClassifier(random_state=self.seed).fit(np.array(features), y)
        return self

    def choose(self, case_vector: np.ndarray, portable: np.ndarray, allowed: np.ndarray) -> Optional[int]:
        """The candidate (rows of `portable`, only where `allowed`) for the most probable label
        that some allowed candidate matches exactly, else the one nearest the top label."""
        proba = self.tree.predict_proba(case_vector[None, :])[0]
        order = [self.tree.classes_[i] for i in np.argsort(-proba, kind="stable") if proba[i] > 0]
        for label in order:
            wanted = np.array(self.classes[label])
            exact = np.flatnonzero(allowed & np.all(np.isclose(portable, wanted[None, :]), axis=1))
            if len(exact):
                return int(exact[0])
        return nearest_candidate(portable, np.array(self.classes[order[0]]), allowed)
