"""Tuning knowledge across programs, devices and sizes (issue 17): zero-shot predictions of the
best configuration for a (program, device, size) nobody measured, from everything in results
stores. `assemble` builds the table, `PairRanker` / `J48Baseline` learn from it, `predict`
ranks a new case's legal configurations, `evaluate` scores predictions on held-out cases."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

from imagecl.features import DeviceFeatures

from ..store import Record, canonical_config
from .dataset import PORTABLE_FIELDS, Case, Dataset, Devices, assemble, case_vector, device_from_json, device_of, \
    encode, limits_from_features
from .models import REGRESSORS, J48Baseline, PairRanker, live_ranker

__all__ = ["PORTABLE_FIELDS", "REGRESSORS", "Case", "Dataset", "Devices", "J48Baseline", "PairRanker", "Prediction",
           "assemble", "case_vector", "device_from_json", "device_of", "encode", "limits_from_features", "live_ranker",
           "predict", "seeds", "train"]

CANDIDATES = 4096  # valid configurations drawn from a space too large to score whole


@dataclass
class Prediction:
    config: dict
    seconds: float  # predicted time
    p_fail: float  # predicted chance that it fails


def train(records: Iterable[Record], programs: Mapping[str, Any], devices: Devices,
          kind: str = "forest", seed: int = 0, n_jobs: int = 1) -> PairRanker:
    """A ranker trained on every case of `records` (programs by program_hash, devices as
    `device_of` finds them): `live_ranker`, the model of the live tuner and the service."""
    data, _ = assemble(records, programs, devices)
    return live_ranker(kind, seed, n_jobs).fit(data, range(len(data.cases)))


def predict(model: PairRanker, program: Any, device: DeviceFeatures, shape_xyz: tuple[int, ...],
            candidates: Optional[Sequence[Mapping[str, int]]] = None, refused: Iterable[Mapping[str, int]] = (),
            kernel_work_group_limit: Optional[int] = None, top: Optional[int] = None,
            seed: int = 0) -> list[Prediction]:
    """`program`'s configurations on `device` at `shape_xyz` (x first), the model's best first
    (`PairRanker.rank`'s order; each with the model's predicted time and chance of failure).

    Candidates are the space's valid configurations (all of them, or CANDIDATES drawn at random
    from a larger space), or the given ones that the space accepts. Never returned: what the
    space rejects (device limits), work-groups above `kernel_work_group_limit` (the built
    kernel's own limit), `refused` configurations, and predicted failures."""
    limits = limits_from_features(device)
    space = program.space_for_limits(limits, tuple(reversed(shape_xyz)))
    if candidates is None:
        pool = space.random(CANDIDATES, seed=seed)  # all of them where fewer exist
    else:
        pool = [space.complete(c) for c in candidates]  # a ConfigError names what the space rejects
    no = {canonical_config(space.complete(c)) for c in refused}
    pool = [c for c in pool if canonical_config(c) not in no]
    if kernel_work_group_limit is not None:
        pool = [c for c in pool if np.prod([c.get(f"wg_{a}", 1) for a in "xyz"]) <= kernel_work_group_limit]
    if not pool:
        return []
    configs, _ = encode(program, device, tuple(shape_xyz), pool)
    order, seconds = model.rank(case_vector(program, device, tuple(shape_xyz)), configs)
    _, p_fail = model.score(case_vector(program, device, tuple(shape_xyz)), configs)
    chosen = order[:top] if top is not None else order
    return [Prediction(dict(pool[i]), float(seconds[i]), float(p_fail[i])) for i in chosen]


def seeds(model: PairRanker, program: Any, device: DeviceFeatures, shape_xyz: tuple[int, ...], k: int = 10,
          **kw: Any) -> list[dict]:
    """The `k` configurations ranked first, in order: a strategy's `seeds` option (as
    `tuner.live.seeds_from_store` gives it), so that a search measures them first instead of a
    uniform random sample. Keywords as `predict`'s."""
    return [p.config for p in predict(model, program, device, shape_xyz, top=k, **kw)]
