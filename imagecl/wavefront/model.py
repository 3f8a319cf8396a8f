"""Predicting a wavefront program's split without searching: models trained on the synthetic
instances' exhaustive measurements (benchmarks/wavefront_split.py writes them).

An instance is described by its size, its work per point (seconds per point of the sequential
run, calibrated on a small grid: one run, not a search) and its data per point (bytes of an
output pixel). Three kinds of model are compared:

- the cost model (cost_model.py, the default): the split's time as a sum of the execution's
  counts (launches, points on the critical path, bytes moved) times costs fitted on the system;

- performance models (`PerfModel`): regress log(seconds / the instance's best seconds) of
  (instance, split) and take the split predicted fastest among the candidates; gradient boosting, a random forest and the tuner's
  bagged network (tuner/models.py);
- the seed's way (`SeedTrees`): one regression tree per split parameter, trained on each
  training instance's five best splits, predicting the parameter from the instance alone; the
  prediction is snapped to the nearest candidate (sklearn has no M5P model tree with linear
  leaves, so these are plain CART trees).
"""
from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from .split import Split, legal_splits, phases, split_space

PERF_MODELS = ("gradient_boosting", "random_forest", "bnn")
SEED_MODEL = "seed_trees"
COST_MODEL = "cost_model"
DEFAULT_MODEL = COST_MODEL  # the prediction of `imagecl tune` and `prog(...)` on a wavefront program
TRAINING_ENV = "IMAGECL_WAVEFRONT_TRAINING"


@dataclass(frozen=True)
class Features:
    width: int
    height: int
    work: float  # seconds per point of the sequential run
    data: int  # bytes per point

    def vector(self) -> list[float]:
        return [math.log2(self.width * self.height), math.log10(max(self.work, 1e-12) * 1e9 + 1.0), float(self.data)]


def gpu_share(split: Split, width: int, height: int) -> float:
    """The share of the grid's points on the GPUs."""
    ph = phases(split, width, height)
    if not ph.on_gpu:
        return 0.0
    d = np.arange(ph.lo, ph.hi + 1)
    lengths = np.minimum.reduce([d, np.full_like(d, width - 1), np.full_like(d, height - 1), width + height - 2 - d]) + 1
    return float(lengths.sum()) / (width * height)


def split_vector(split: Split, width: int, height: int) -> list[float]:
    # tiles across the grid as well as their side: one tile across (the sequential run) means the
    # same at every size
    across = -(-max(width, height) // split.cpu_tile)
    return [math.log2(split.cpu_tile), math.log2(across), gpu_share(split, width, height), math.log2(split.gpu_tile),
            float(split.gpu_count), math.log2(split.halo + 1)]


def _features(record: Mapping[str, Any]) -> Features:
    return Features(int(record["width"]), int(record["height"]), float(record["work"]), int(record["data"]))


def _splits(record: Mapping[str, Any]) -> list[tuple[Split, float]]:
    return [(Split.of(s), float(t)) for s, t in record["splits"] if t is not None]


class PerfModel:
    """log(seconds / best seconds) of (instance, split): the instance's own scale drops out, what is
    left is what the split costs. `choose` takes the candidate predicted fastest."""

    def __init__(self, name: str = "gradient_boosting", seed: int = 0) -> None:
        self.name, self.seed = name, seed

    def fit(self, records: Sequence[Mapping[str, Any]]) -> "PerfModel":
        from ..tuner.models import make_model

        X, y = [], []
        for record in records:
            f = _features(record)
            measured = _splits(record)
            best = min(t for _, t in measured)
            for split, seconds in measured:
                X.append(f.vector() + split_vector(split, f.width, f.height))
                y.append(math.log(seconds / best))  # the split's cost relative to the instance's best
        kw = {"epochs": 300} if self.name == "bnn" else {}
        model = make_model(self.name, seed=self.seed, **kw)
        if hasattr(model, "cv"):
            model.cv = len(y) + 1  # only the ranking is used: no cross-validated error estimate
        self.model = model.fit(np.array(X), np.array(y))
        return self

    def rank(self, features: Features, candidates: Sequence[Split], gpus: int) -> list[Split]:
        candidates = legal_splits(candidates, features.width, features.height, gpus)
        if not candidates:
            return []
        X = np.array([features.vector() + split_vector(s, features.width, features.height) for s in candidates])
        mean, _ = self.model.predict(X)
        return [candidates[i] for i in np.argsort(mean, kind="stable")]

    def choose(self, features: Features, candidates: Sequence[Split], gpus: int) -> Split:
        ranked = self.rank(features, candidates, gpus)
        if not ranked:
            raise ValueError("no legal wavefront split among the candidates")
        return ranked[0]


class SeedTrees:
    """One regression tree per split parameter on the five best splits of each instance."""

    def __init__(self, top: int = 5, seed: int = 0) -> None:
        self.top, self.seed = top, seed

    def fit(self, records: Sequence[Mapping[str, Any]]) -> "SeedTrees":
        from sklearn.tree import DecisionTreeRegressor

        X, Y = [], []
        for record in records:
            f = _features(record)
            for split, _ in sorted(_splits(record), key=lambda st: st[1])[: self.top]:
                X.append(f.vector())
                Y.append(split_vector(split, f.width, f.height))
        X, Y = np.array(X), np.array(Y)
        self.scale = np.maximum(Y.std(axis=0), 1e-9)
        self.trees = [DecisionTreeRegressor(min_samples_leaf=self.top, random_state=self.seed).fit(X, Y[:, i])
                      for i in range(Y.shape[1])]
        return self

    def choose(self, features: Features, candidates: Sequence[Split], gpus: int) -> Split:
        candidates = legal_splits(candidates, features.width, features.height, gpus)
        if not candidates:
            raise ValueError("no legal wavefront split among the candidates")
        want = np.array([t.predict(np.array([features.vector()]))[0] for t in self.trees])
        have = np.array([split_vector(s, features.width, features.height) for s in candidates])
        return candidates[int(np.argmin((((have - want) / self.scale) ** 2).sum(axis=1)))]


def make(name: str, seed: int = 0):
    if name == COST_MODEL:
        from .cost_model import CostModel

        return CostModel(seed=seed)
    return SeedTrees(seed=seed) if name == SEED_MODEL else PerfModel(name, seed)


# ---- work per point ---------------------------------------------------------------------------------


def instance_arguments(program, width: int, height: int, given: Mapping[str, Any], seed: int = 0) -> dict:
    """Arguments of `program` for a `width` x `height` grid: the given scalars, random arrays
    (pointers as long as the longer side plus one, indexed by idx or idy), a zero output."""
    from ..ir import types as ty

    info = program.info
    rng = np.random.default_rng(seed)
    args: dict[str, Any] = {}
    for p in info.params:
        array = info.arrays.get(p.name)
        if array is None:
            args[p.name] = given[p.name] if p.name in given else 1
            continue
        dtype = array.element.dtype
        lanes = (array.element.width,) if isinstance(array.element, ty.VectorType) else ()
        if p.name == info.wavefront or array.kind == "image":
            shape = (height, width) + lanes
        elif array.kind == "array":
            shape = tuple(array.shape) + lanes
        else:
            shape = (max(width, height) + 1,) + lanes
        if p.name == info.wavefront:
            args[p.name] = np.zeros(shape, dtype)
        elif np.issubdtype(dtype, np.integer):
            args[p.name] = rng.integers(0, 4, shape).astype(dtype)
        else:
            args[p.name] = rng.standard_normal(shape).astype(dtype)
    return args


def work_per_point(program, given: Mapping[str, Any], devices, sizes=(64, 256), repeats: int = 3) -> float:
    """Seconds per point of the sequential run: the slope between two small square grids (the
    fixed costs of a run cancel out)."""
    from .api import sequential
    from .executor import run_wavefront

    times = []
    for n in sizes:
        args = instance_arguments(program, n, n, given)
        times.append(min(run_wavefront(program, args, sequential(n, n), devices).seconds for _ in range(repeats)))
    return max((times[1] - times[0]) / (sizes[1] ** 2 - sizes[0] ** 2), 1e-12)


def data_per_point(program) -> int:
    from .synthetic import data_bytes

    return data_bytes(program)


# ---- the installed model ------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _trained(path: str, stamp: float, name: str):
    import json

    with open(path) as f:
        data = json.load(f)
    from ..errors import ConfigError

    records = [r for r in data.get("instances", []) if r.get("kind") == "synthetic" and r.get("splits")]
    if not records:
        raise ConfigError(f"{path}: no measured synthetic wavefront instance to train the split model on "
                          "(a benchmarks/wavefront_split.py output is expected)")
    try:
        return make(name).fit(records), data.get("grid", {})
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def trained_from(path: str, name: str = DEFAULT_MODEL):
    """The model `name` trained on the synthetic instances of a benchmark file, and its split grid."""
    return _trained(path, os.stat(path).st_mtime, name)


def candidates(width: int, height: int, gpus: int, grid: Mapping[str, Any]) -> list[Split]:
    keys = {k: tuple(v) for k, v in grid.items() if k in ("cpu_tiles", "gpu_tiles", "halos")}
    return split_space(width, height, gpus, **keys)


def predict_installed(program, arguments: Mapping[str, Any], devices, size: tuple[int, int]) -> Optional[Split]:
    """The split the model trained on `$IMAGECL_WAVEFRONT_TRAINING` (a benchmark file of this
    system) predicts for this run, or None without one."""
    path = os.environ.get(TRAINING_ENV)
    if not path or not os.path.isfile(path):
        return None
    model, grid = trained_from(path)
    scalars = {k: v for k, v in arguments.items() if k not in program.info.arrays}
    key = (path, os.stat(path).st_mtime, tuple(size), repr(sorted(scalars.items())), devices)
    cache = program.__dict__.setdefault("_wavefront_predictions", {})
    if key not in cache:  # the calibration runs once per program, size and scalars
        features = Features(size[0], size[1], work_per_point(program, scalars, devices), data_per_point(program))
        gpus = len(devices.gpus)
        cache[key] = model.choose(features, candidates(size[0], size[1], gpus, grid), gpus)
    return cache[key]


def share(choice: Split, measured: Mapping[Split, float]) -> float:
    """The best measured time over the chosen split's (1.0: the best split)."""
    return min(measured.values()) / measured[choice]


def pooled_share(choice: Split, measured: Mapping[Split, float], width: int, height: int) -> float:
    """share() with the splits that run the grid the same way (split.same_execution) taken as one,
    timed by the median of their measurements: what the choice is worth without the luck of which
    of several measurements of one execution it names (the minimum would favour executions
    measured more often: the least of k noisy runs is biased low)."""
    from .split import same_execution

    groups: dict[tuple, list[float]] = {}
    for split, seconds in measured.items():
        groups.setdefault(same_execution(split, width, height), []).append(seconds)
    pooled = {key: float(np.median(times)) for key, times in groups.items()}
    return min(pooled.values()) / pooled[same_execution(choice, width, height)]


