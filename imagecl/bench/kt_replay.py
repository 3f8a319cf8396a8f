"""Kernel Tuner's search strategies replayed on our recorded spaces (its simulation mode).

`replay(file, strategy, budget, seed)` runs one Kernel Tuner strategy on a Kernel Tuner cache
file written by `imagecl export` (or `ground_truth.py`) with `max_fevals=budget`, and returns
the best time found and the number of distinct configurations it measured: the same count as
our `Session`, where a recorded failure costs a measurement and returning to a measured
configuration is free. Kernel Tuner's strategies draw from Python's and NumPy's global random
generators, which are seeded per run.
"""
from __future__ import annotations

import json
import os
import random
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

import numpy as np

from imagecl.tuner.formats import load_json
from imagecl.tuner.simulate import summarise

# the strategies of Kernel Tuner 1.5 that run in simulation mode (brute_force is exhaustive search)
KT_STRATEGIES = ["random_sample", "genetic_algorithm", "pso", "simulated_annealing", "dual_annealing",
                 "greedy_ils", "mls", "greedy_mls", "firefly_algorithm", "bayes_opt", "diff_evo", "basinhopping"]


@dataclass
class KTRun:
    best_time: Optional[float]  # seconds
    evaluations: int            # distinct configurations measured (failures included)


def replay(file: Union[str, Path], strategy: str, budget: int, seed: int) -> KTRun:
    """One run of Kernel Tuner's `strategy` on the cache `file`, at most `budget` measurements."""
    from kernel_tuner import tune_kernel
    from kernel_tuner.util import infer_restrictions_from_cache

    cache = load_json(file)  # plain or gzipped
    names = cache["tune_params_keys"]
    params = {k: cache["tune_params"][k] for k in names}
    # Kernel Tuner checks the cache's problem size against the call; ours record "unknown"
    cache["problem_size"] = [1]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cache.json")
        Path(path).write_text(json.dumps(cache))  # a copy: simulation mode may touch the file
        random.seed(seed)
        np.random.seed(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the recorded configurations are the space (as Kernel Tuner's own tune_cache does)
            results, _ = tune_kernel(cache["kernel_name"], "", (1,), [], params,
                                     restrictions=[infer_restrictions_from_cache(cache)], cache=path,
                                     simulation_mode=True, strategy=strategy,
                                     strategy_options={"max_fevals": int(budget)}, quiet=True, verbose=False)
    measured = {tuple(r[k] for k in names) for r in results}
    times = [float(r["time"]) for r in results if isinstance(r["time"], (int, float))]
    return KTRun(min(times) * 1e-3 if times else None, len(measured))


def simulate_kt(file: Union[str, Path], strategy: str, budget: int, repeats: int, seed: int,
                optimum: float) -> dict:
    """`repeats` runs; the same summary keys as imagecl.tuner.simulate.simulate."""
    runs = [replay(file, strategy, budget, seed * 1000 + r) for r in range(repeats)]
    return summarise([{"best_time": r.best_time, "evaluations": r.evaluations,
                       **({"slowdown": r.best_time / optimum} if r.best_time is not None else {})} for r in runs],
                     optimum, None)
