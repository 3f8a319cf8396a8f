"""Batches of proposals (Session.batch): what a tuning run on a cluster of B workers measures at once."""
from __future__ import annotations

import numpy as np
import pytest

from imagecl.tuner.simulate import SimulationError, simulate
from imagecl.tuner.strategies import STRATEGIES, BudgetExhausted, Session
from test_tuner import Synthetic, small_replay


class Batched(Synthetic):
    """The synthetic landscape, measuring `batch` proposals per evaluate_many call."""

    def __init__(self, batch: int) -> None:
        super().__init__()
        self.batch = batch
        self.calls: list[int] = []

    def evaluate_many(self, configs):
        self.calls.append(len(configs))
        return [self.evaluate(c) for c in configs]


def _true_time(problem, config):
    c = {k: np.array([v]) for k, v in config.items()}
    return None if problem.fails(c)[0] else float(np.exp(problem.log_time(c)[0]))


def test_a_batch_is_measured_at_once_and_the_history_holds_only_real_times():
    problem = Batched(4)
    result = STRATEGIES["random"](problem, 10, np.random.default_rng(0))
    assert problem.calls == [4, 4, 2]  # the last, partial batch when the strategy stops
    assert result.evaluations == 10 == problem.evaluations
    assert [t for _, t in result.history] == [_true_time(problem, c) for c, _ in result.history]
    assert result.best_time == min(t for _, t in result.history if t is not None)


@pytest.mark.parametrize("batch", [3])
def test_hybrid_proposes_full_batches_of_distinct_configurations(batch):
    problem = Batched(batch)
    result = STRATEGIES["hybrid"](problem, 30, np.random.default_rng(1))
    keys = [tuple(sorted(c.items())) for c, _ in result.history]
    assert result.evaluations == 30 == len(set(keys)) == problem.evaluations  # the budget, none twice
    assert [t for _, t in result.history] == [_true_time(problem, c) for c, _ in result.history]  # no lie left
    assert result.best_time == min(t for _, t in result.history if t is not None)
    assert max(problem.calls) == batch and sum(n for n in problem.calls if n == batch) >= 0.8 * 30


def test_proposals_a_deadline_stops_are_dropped_not_recorded():
    class Late(Batched):
        def evaluate_many(self, configs):
            if self.calls:
                raise BudgetExhausted  # the session's wall-clock limit passed before the second batch
            return super().evaluate_many(configs)

    problem = Late(3)
    session = Session(problem, 10)
    rows = problem.sample_matrix(5, np.random.default_rng(2))
    for row in rows:
        session.measure(row)
    result = session.result()
    assert result.evaluations == 3 and len(session.times) == 3 and not session.pending
    assert [t for _, t in result.history] == [_true_time(problem, c) for c, _ in result.history]


def test_simulate_replays_batches_and_refuses_a_bad_one():
    report = simulate(small_replay(), "random", max_evals=12, repeats=2, batch=3)
    assert report["batch"] == 3 and all(r["evaluations"] == 12 for r in report["repeats"])
    with pytest.raises(SimulationError, match="batch"):
        simulate(small_replay(), "random", max_evals=12, repeats=1, batch=0)


@pytest.mark.slow
def test_batches_keep_the_quality_of_one_at_a_time():
    """Replays of the default strategy on the synthetic landscape: the median slowdown after the
    same number of measurements, with batches of 4, within noise of one at a time."""
    slowdowns = {}
    for batch in (1, 4):
        report = simulate(Synthetic, "hybrid", max_evals=60, repeats=8, seed=3, batch=batch)
        slowdowns[batch] = float(np.median([r["slowdown"] for r in report["repeats"]]))
    assert slowdowns[4] <= slowdowns[1] * 1.1, slowdowns
