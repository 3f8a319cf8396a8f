"""The default strategy: a spread sample, then a model-guided local search."""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ..problem import Problem
from .ml import ml
from .ranking import Observation
from .budget import Result


def hybrid(problem: Problem, budget: int, rng: np.random.Generator, *, sample_fraction: float = 0.3,
           local_share: float = 0.7, local_radius: int = 1, spread: bool = True,
           model: str = "bnn",
           model_options: Optional[Mapping[str, Any]] = None, prior: Sequence[Observation] = (),
           avoid_failures: bool = True, prediction_sample: int = 250_000,
           seeds: Sequence[Mapping[str, int]] = (), pick: str = "thompson", probe: str = "cold",
           min_gain: float = 0.0, code_shape: Optional[bool] = None, lie: str = "constant") -> Result:
    """The default tuner: a spread sample, then a model-guided local search (see `ml`).

    `sample_fraction` of the budget goes to a sample that covers every parameter's values
    (`spread`; uniform random with spread=False), `local_share` to steepest descent from the
    best one, where the bagged network picks the neighbour to measure (`pick`: "thompson", a draw
    from its uncertainty, the default; "mean", its fastest prediction); what is left between the
    two is `ml`'s Eq. 2 walk over the whole space. Why: at the budgets that matter (about 1% of
    spaces of thousands, 15-120 measurements), a model trained on a few dozen points ranks the
    whole space poorly but tells apart the neighbours of a good configuration well enough, and
    local search without a model (Kernel Tuner's mls, greedy_ils) spends most of its budget on
    bad neighbours. Where the fastest variants need options valid in few configurations
    (vectorised loads: interior fast path, blocked layout and px_x > 1 together), a uniform
    sample holds too few of them and plain one-parameter moves cannot reach them, hence the
    spread sample and the repaired moves (BENCHMARKS.md, "Strategy design history"). `probe`
    makes the walk try each parameter of its centre at least once when it stalls ("cold", the
    default: only without seeds or prior measurements; `_local_phase`). On a CPU device
    (`code_shape` None, the default, and the problem's `device_kind` "CPU"; or `code_shape`
    True) the sample balances the code shape first: each `vector_x` value in turn, with the
    least covered `px_x` (design.py). `lie`: what a batch's pending proposals count as (`ml`).
    """
    result = ml(problem, budget, rng, sample_fraction=sample_fraction, local_share=local_share,
                local_radius=local_radius, spread=spread, model=model, model_options=model_options, prior=prior,
                avoid_failures=avoid_failures, prediction_sample=prediction_sample, seeds=seeds, pick=pick,
                probe=probe, min_gain=min_gain, code_shape=code_shape, lie=lie)
    result.info["strategy"] = "hybrid"
    return result
