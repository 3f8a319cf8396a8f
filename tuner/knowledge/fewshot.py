"""Few-shot tuning: a live search that starts from what the results stores know.

A knowledge model (`PairRanker`) trained on every program, device and size of the stores ranks
the space of the program being tuned; the strategy measures the configurations it ranks first
before any other (its `seeds`), and its own model sees a spread of those predictions as prior observations
marked by a context input `knowledge` = 1 (measured ones have 0), so that before it has more than
a handful of measurements it already leans the way the stores point, and its own measurements
take over as they come (they differ in that input, so a level offset between predicted and
measured times costs the model nothing).

Training takes seconds to a minute; the model is cached on disk, keyed by the content of the
table it was trained on (every measurement, every program's, device's and size's features), so a
tune whose stores hold nothing new since the last one loads it instead.
"""
from __future__ import annotations

import hashlib
import inspect
import os
import pickle
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Optional, Union

import numpy as np

from ..live import StoreOptions, size_context
from ..store import RunKey, Store
from ..strategies import Observation
from . import predict
from .dataset import Dataset, assemble
from .models import DEFAULT_LAUNCH, DEFAULT_TARGET, PairRanker, live_ranker
from .sources import Knowledge, gather

MODEL_VERSION = 4  # bump when PairRanker's training changes: older cache entries are then not used
SEEDS = 10  # configurations ranked first that the search measures first
PSEUDO = 48  # predictions the strategy's model sees as prior observations
TARGET = DEFAULT_TARGET  # PairRanker's target and launch features: the best in the evaluation
LAUNCH = DEFAULT_LAUNCH
KEEP = 2  # cached models kept (the most recently used)


@dataclass
class TrainedKnowledge:
    model: PairRanker
    key: str
    cases: int
    measurements: int
    programs: int
    devices: int
    train_seconds: float  # how long training took (when it was trained, also if loaded from the cache)
    cached: bool  # loaded from the cache


def default_cache_dir() -> Path:
    from ..buildcache import default_cache_dir as builds

    return builds().parent / "knowledge"


def table_key(data: Dataset, kind: str, seed: int) -> str:
    """A digest of everything a model trained on `data` depends on."""
    import sklearn

    h = hashlib.sha256(f"v{MODEL_VERSION} {kind} {seed} sklearn {sklearn.__version__}".encode())
    for array in (data.case_features, data.config_features, data.case, data.log_time):
        h.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
        h.update(b"\0")
    h.update("\n".join(data.status).encode())
    return h.hexdigest()[:32]


def _load(path: Path) -> Optional[dict]:
    try:
        with open(path, "rb") as f:
            entry = pickle.load(f)
        os.utime(path)  # most recently used
    except Exception:  # a missing, partly written or foreign file: train again
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("model"), PairRanker):
        return None
    return entry


def _save(folder: Path, key: str, entry: dict) -> None:
    """Written atomically; a cache that cannot be written costs a training next time, nothing else."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=key, suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(entry, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, folder / f"{key}.pickle")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        entries = sorted(folder.glob("*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass


def trained_model(knowledge: Knowledge, kind: str = "forest", seed: int = 0, target: str = TARGET,
                  cache_dir: Optional[Union[str, Path]] = None, launch: bool = LAUNCH) -> Optional[TrainedKnowledge]:
    """A model of every usable record of `knowledge`, from the cache where one was trained on
    the same table; None when no record ran successfully. Trained on every core."""
    data, _ = assemble(knowledge.usable(), knowledge.programs, knowledge.devices)
    if not len(data.cases) or not data.ok.any():
        return None
    key = table_key(data, f"{kind}/{target}" + ("/launch" if launch else ""), seed)
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    counts = dict(cases=len(data.cases), measurements=len(data.keys),
                  programs=len({c.program_hash for c in data.cases}), devices=len({c.device for c in data.cases}))
    entry = _load(folder / f"{key}.pickle")
    if entry is not None:
        return TrainedKnowledge(entry["model"], key, train_seconds=float(entry.get("seconds", 0.0)), cached=True,
                                **counts)
    start = time.perf_counter()
    model = live_ranker(kind, seed, n_jobs=-1, target=target, launch=launch).fit(data, range(len(data.cases)))
    seconds = time.perf_counter() - start
    _save(folder, key, {"model": model, "seconds": seconds})
    return TrainedKnowledge(model, key, train_seconds=seconds, cached=False, **counts)


def pseudo_observations(predictions: list, context: dict, n: int = PSEUDO) -> list[Observation]:
    """`n` of `predictions` (best ranked first) as prior observations: the first half of them and
    the rest spread evenly over the remaining ranking, so that the strategy's model sees both
    what the knowledge prefers and what it expects to be slow."""
    if len(predictions) <= n:
        chosen = predictions
    else:
        head = n // 2
        tail = np.linspace(head, len(predictions) - 1, n - head).round().astype(int)
        chosen = predictions[:head] + [predictions[i] for i in tail]
    marked = {**context, "knowledge": 1.0}
    return [Observation(dict(p.config), float(p.seconds), marked) for p in chosen]


def with_knowledge(taken: StoreOptions, store: Optional[Store], run: RunKey, program: Any, device: Any,
                   shape_xyz: tuple[int, ...], strategy: Callable, sources: Iterable[Union[str, Path]] = (),
                   program_files: Iterable[Path] = (), given: Collection[str] = (), k: int = SEEDS,
                   cache_dir: Optional[Union[str, Path]] = None, device_features: Any = None,
                   seed: int = 0, budget: Optional[int] = None) -> StoreOptions:
    """`taken` (what `tuner.live.store_options` found) with the knowledge model's predictions
    added for a strategy that takes them: its `seeds` start with the `k` configurations
    ranked first and its `prior` gains `pseudo_observations`; with the `budget`, a
    strategy's first sample (`sample_fraction`) grows to hold all `k` seeds where it is smaller. The model learns from the
    `sources` (knowledge folders or stores, `sources.load_source`) and `store`'s records;
    programs are `program` and the .icl `program_files`, devices the knowledge folders' and
    `device` (a pyopencl device; `device_features` where they are known already).
    `info["knowledge"]` says what was used. Options named in `given` are the caller's own."""
    takes = inspect.signature(strategy).parameters
    if "seeds" not in takes or "seeds" in given:
        return taken
    if device_features is None:
        from imagecl.features import device_features as measured

        device_features = measured(device)
    # by name and compute units: the sources' records of this name but another size keep their own features
    knowledge = gather(sources, local=store, programs={run.program_hash: program},
                       devices={(run.device, run.compute_units): device_features}, program_files=program_files)
    # the run's own measurements are the search's (LiveProblem reuses them); left out, a rerun of
    # the same tune finds the same table and loads the cached model
    own = (run.program_hash, run.device, run.driver, run.compute_units, run.problem_size)
    knowledge.records = [r for r in knowledge.records
                         if (r.program_hash, r.device, r.driver, r.compute_units, r.problem_size) != own]
    model = trained_model(knowledge, seed=seed, cache_dir=cache_dir)
    info: dict[str, Any] = {"seeds": 0, "stores": list(knowledge.stores)}
    if model is not None:
        predictions = predict(model.model, program, device_features, tuple(shape_xyz), seed=seed)
        seeds = [p.config for p in predictions[:k]]
        taken.options["seeds"] = seeds + list(taken.options.get("seeds", []))
        fraction = takes.get("sample_fraction")
        if fraction is not None and "sample_fraction" not in given and isinstance(fraction.default, float) \
                and budget is not None and budget > 0:
            # the first sample holds every seed: at small budgets (10 measurements: all of them
            # seeds) the model of the whole store ranks better than one of a few measurements
            share = max(fraction.default, min(1.0, len(seeds) / budget))
            if share != fraction.default:
                taken.options["sample_fraction"] = share
        if "prior" in takes and "prior" not in given:
            pseudo = pseudo_observations(predictions, size_context(run.problem_size))
            taken.options["prior"] = list(taken.options.get("prior", [])) + pseudo
            info["prior"] = len(pseudo)
        info.update(seeds=len(seeds), cases=model.cases, measurements=model.measurements, programs=model.programs,
                    devices=model.devices, train_seconds=round(model.train_seconds, 2), cached=model.cached)
    taken.info["knowledge"] = info
    return taken
