"""Search strategies: which configurations to measure, within a budget of measurements.

Every strategy is `run(problem, budget, rng, **options) -> Result`. `budget` caps the number of
distinct configurations measured, failed ones included, because on a real device a build
error or a wrong result costs about as much as a success. Measurements go through a `Session`
(budget.py), which enforces the budget and remembers results, so a strategy that comes back to
a configuration (annealing, swarms) neither pays for it twice nor overruns.

One module a strategy, registered in STRATEGIES below: `hybrid` (hybrid.py), the default, is a
sample that spreads every parameter's values followed by a local search from the best
configuration in which a model picks the neighbour to measure (local.py); `ml` (ml.py) is Falch
& Elster's two-stage method; `exhaustive`, `random` (random_search.py), `annealing` and `pso`
follow CLTune (Nugteren & Codreanu 2015). What they share: samples (sampling.py),
neighbourhoods (neighbours.py) and the models that rank candidates (ranking.py). How the
choices were made, with the measurements behind them: BENCHMARKS.md, "Strategy design history".
"""
from __future__ import annotations

from ...errors import suggestion_suffix
from .annealing import simulated_annealing
from .exhaustive import exhaustive
from .hybrid import hybrid
from .local import PROBES
from .ml import ml
from .pso import particle_swarm
from .random_search import random_search
from .ranking import PICKS, Observation
from .sampling import distinct_best
from .budget import BudgetExhausted, Result, Session, Strategy

# the shared helpers, reachable here for the tests that exercise them one by one
from .local import _local_phase  # noqa: F401
from .neighbours import _repaired_neighbours, _untried_moves  # noqa: F401
from .ranking import _pick, _Ranker  # noqa: F401
from .sampling import _seed_rows, _spread_sample  # noqa: F401

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


__all__ = ["Result", "Session", "BudgetExhausted", "Observation", "Strategy", "distinct_best", "exhaustive",
           "random_search", "simulated_annealing", "particle_swarm", "ml", "hybrid", "STRATEGIES",
           "DEFAULT_STRATEGY", "get_strategy", "PICKS", "PROBES"]
