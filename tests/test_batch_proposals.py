"""Batches of proposals (Session.batch): what a tuning run on a cluster of B workers measures at once."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from imagecl.tuner.problem import Parameter, Problem
from imagecl.tuner.simulate import SimulationError, simulate
from imagecl.tuner.strategies import STRATEGIES, BudgetExhausted, Session, _local_phase, _Ranker
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


@pytest.mark.parametrize("batch,lie", [(3, "constant"), (3, "believer")])
def test_hybrid_proposes_full_batches_of_distinct_configurations(batch, lie):
    problem = Batched(batch)
    result = STRATEGIES["hybrid"](problem, 30, np.random.default_rng(1), lie=lie)
    keys = [tuple(sorted(c.items())) for c, _ in result.history]
    assert result.evaluations == 30 == len(set(keys)) == problem.evaluations  # the budget, none twice
    assert [t for _, t in result.history] == [_true_time(problem, c) for c, _ in result.history]  # no lie left
    assert result.best_time == min(t for _, t in result.history if t is not None)
    assert max(problem.calls) == batch and sum(n for n in problem.calls if n == batch) >= 0.8 * 30
    rows = np.array([[c[n] for n in problem.names] for c, _ in result.history])
    assert problem._mask_rows(rows).all()  # legal: within the space's constraints


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


def test_one_at_a_time_the_lie_changes_nothing():
    """Batch 1 has nothing pending, so the lie cannot matter: hybrid (its sample and local
    search) and ml (its Eq. 2 walk) measure the same configurations in the same order with
    either lie. (Compared within one run, not against recorded hashes: those change with
    torch's and scikit-learn's versions.)"""
    for name, budget in (("hybrid", 24), ("ml", 20)):
        runs = {lie: [sorted(c.items()) for c, _ in STRATEGIES[name](Synthetic(), budget, np.random.default_rng(7),
                                                                    lie=lie).history]
                for lie in ("constant", "believer")}
        assert len(runs["constant"]) == budget
        assert runs["constant"] == runs["believer"], name


def test_the_believer_lie_is_the_models_prediction_and_models_learn_only_real_times():
    problem = Batched(2)
    session = Session(problem, 10, lie="believer")
    rows = problem.sample_matrix(5, np.random.default_rng(4))
    for row in rows[:4]:
        session.measure(row)  # two full batches: measured
    ranker = _Ranker(problem, "constant", {}, 0, (), 10_000, np.random.default_rng(0))
    ranker.fit(session)
    real = [t for t in session.times.values() if t is not None]
    expected = math.exp(np.mean(np.log(real)))  # the constant model: the mean log-time
    lie = session.measure(rows[4])  # pending: the second of its batch is not proposed yet
    assert session.pending and lie == pytest.approx(expected)
    ranker.fit(session)  # the pending prediction is no training data: the same mean
    assert session.belief(rows[4][None, :]) == pytest.approx(expected)
    assert ranker.trained_on == len(real)


class Grid(Problem):
    """Two parameters of ten values, every configuration legal; the time falls with x and y."""

    def __init__(self, batch: int) -> None:
        super().__init__([Parameter("x", list(range(10))), Parameter("y", list(range(10)))])
        self.batch = batch
        self.evaluations = 0

    def evaluate(self, config):
        self.evaluations += 1
        return math.exp(-0.1 * config["x"] - 0.04 * config["y"])

    def evaluate_many(self, configs):
        return [self.evaluate(c) for c in configs]


class Exact:
    """A model that knows the landscape (mean log-time -0.1x - 0.04y) and is sure of it."""

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        return -0.1 * X[:, 0] - 0.04 * X[:, 1], np.full(len(X), 1e-9)


class StubRanker:
    rng = np.random.default_rng(0)
    trained_on = 100

    def _features(self, rows):
        return np.asarray(rows, dtype=float)

    def fit(self, session):
        model = Exact()
        session.belief = lambda rows: math.exp(model.predict(rows)[0][0])
        return model


@pytest.mark.parametrize("lie,expected", [
    # the believer walks on from the pending step the model predicts faster: (9, 5), then its neighbour (9, 9)
    ("believer", [(9, 5), (9, 9), (9, 8)]),
    # the constant liar counts (9, 5) slowest until measured: the batch's other two stay around (5, 5)
    ("constant", [(9, 5), (8, 5), (7, 5)]),
])
def test_a_batch_walks_on_from_the_pending_steps_the_model_predicts_faster(lie, expected):
    problem = Grid(3)
    session = Session(problem, 6, lie=lie)
    for row in ((5, 5), (0, 0), (1, 1)):  # measured first: (5, 5) is the best
        session.measure(np.array(row))
    model = StubRanker().fit(session)
    _local_phase(problem, session, StubRanker(), model, None, pick="mean")
    assert [(c["x"], c["y"]) for c, _ in session.history[3:]] == expected
    assert all(t == problem.evaluate(c) for c, t in session.history)  # every lie replaced by the real time


def test_replays_with_batches_are_reproducible_per_seed():
    reports = [simulate(small_replay(), "hybrid", max_evals=16, repeats=2, seed=5, batch=4) for _ in range(2)]
    assert reports[0]["repeats"] == reports[1]["repeats"]
    assert all(r["evaluations"] == 16 for r in reports[0]["repeats"])


def test_an_unknown_lie_is_refused():
    with pytest.raises(SimulationError, match="lie must be one of constant, believer"):
        simulate(small_replay(), "hybrid", max_evals=12, repeats=1, batch=2, options={"lie": "optimist"})


def test_a_centre_given_up_that_failed_when_measured_leaves_the_others():
    """With the believer a pending proposal can be the walk's centre, be given up, and then fail
    when its batch is measured: the walk goes on from the measured ones."""
    from imagecl.tuner.strategies.local import _centres

    class Failing(Grid):
        def evaluate(self, config):
            return None if (config["x"], config["y"]) == (2, 2) else super().evaluate(config)

    session = Session(Failing(1), 10)
    for row in ((5, 5), (3, 3), (2, 2), (1, 1)):
        session.measure(np.array(row))
    centres = _centres(session, [np.array([2, 2]), np.array([3, 3])], 3)
    assert [tuple(r) for r in centres] == [(5, 5)]  # the only one faster than (3, 3), given up


def test_the_replay_report_counts_a_run_that_found_nothing_as_a_loss(tmp_path):
    """benchmarks/batch_replays.py --report-only over hand-made runs: a replay that found no
    configuration is reported, not dropped from the pairing (which would favour the cell that
    fails more often), and loses to a run that found one."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    runs = []
    for seed, (alone, batched) in enumerate([(1.0, 1.1), (1.2, None), (1.0, 1.0), (1.3, 1.2)]):
        for batch, slowdown in ((1, alone), (4, batched)):
            runs.append({"space": "s", "budget": 30, "batch": batch, "lie": "constant", "seed": seed,
                         "slowdown": slowdown, "evaluations": 30, "seconds": 1.0})
    out = tmp_path / "r.json"
    out.with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    done = subprocess.run([sys.executable, str(root / "benchmarks" / "batch_replays.py"), "--report-only",
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = {(r["space"], r["batch"]): r for r in json.loads(out.read_text())["cells"]}
    batched = rows["s", 4]
    assert batched["runs"] == 4 and batched["no_result"] == 1 and batched["worst"] == 1.2
    assert (batched["better"], batched["same"], batched["worse"]) == (1, 1, 2)
    assert "1 found nothing" in out.with_suffix(".md").read_text()
