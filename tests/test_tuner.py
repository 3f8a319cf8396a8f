"""The auto-tuner's strategies, models, file formats and simulator, on a synthetic landscape.

The landscape has a known optimum, static constraints (work-group size) and configurations that
only fail when measured (local-memory tiles too large), like a real kernel's space. Everything
is seeded, and the whole file runs in well under a minute on two cores.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest


def _tuner_modules():
    """imagecl.tuner as installed, or straight from the source tree when the install predates it."""
    try:
        importlib.import_module("imagecl.tuner.simulate")
    except ImportError:
        root = Path(__file__).resolve().parent.parent / "tuner"
        for name in [n for n in sys.modules if n == "imagecl.tuner" or n.startswith("imagecl.tuner.")]:
            del sys.modules[name]
        spec = importlib.util.spec_from_file_location("imagecl.tuner", root / "__init__.py",
                                                      submodule_search_locations=[str(root)])
        module = importlib.util.module_from_spec(spec)
        sys.modules["imagecl.tuner"] = module
        spec.loader.exec_module(module)
    return [importlib.import_module(f"imagecl.tuner.{m}")
            for m in ("problem", "encoding", "models", "strategies", "formats", "simulate")]


problem_mod, encoding, models, strategies, formats, simulate_mod = _tuner_modules()
Parameter, Problem, ReplayProblem = problem_mod.Parameter, problem_mod.Problem, problem_mod.ReplayProblem
STRATEGIES, SimulationError = strategies.STRATEGIES, simulate_mod.SimulationError


# ---- a synthetic tuning problem ----------------------------------------------------------------------


class Synthetic(Problem):
    """7 parameters, 6912 configurations, 6336 statically valid, 12.5% of those failing when measured.

    log(time) is a sum of one-parameter bowls plus a work-group-size term and a local/image
    interaction, with a little deterministic noise: a smooth but not trivially separable space
    where, as on real devices, few configurations are near the best (0.1% within 10%).
    """

    def __init__(self) -> None:
        pow2 = [1, 2, 4, 8, 16, 32]
        super().__init__([Parameter("wg_x", pow2), Parameter("wg_y", pow2), Parameter("px_x", [1, 2, 4, 8]),
                          Parameter("px_y", [1, 2, 4, 8]), Parameter("unroll", [1, 2, 4]),
                          Parameter("local", [0, 1]), Parameter("image", [0, 1])])
        self.evaluations = 0

    def valid_mask(self, c):
        return c["wg_x"] * c["wg_y"] <= 256

    @staticmethod
    def log_time(c):
        lx, ly, px, py = (np.log2(c[n]) for n in ("wg_x", "wg_y", "px_x", "px_y"))
        t = 0.12 * (lx + ly - 7) ** 2 + 0.06 * (lx - 4) ** 2 + 0.15 * (px - 1.5) ** 2 + 0.1 * (py - 1) ** 2
        t = t + np.where(c["unroll"] == 2, -0.12, np.where(c["unroll"] == 4, -0.05, 0.0))
        t = t - 0.3 * c["local"] - 0.1 * c["image"] + 0.15 * c["local"] * c["image"]
        h = (c["wg_x"] * 7919 + c["wg_y"] * 104729 + c["px_x"] * 1299709 + c["px_y"] * 15485863
             + c["unroll"] * 32452843 + c["local"] * 49979687 + c["image"] * 67867967) % 1000003
        return t + 0.04 * ((np.sin(h * 12.9898) * 43758.5453) % 1.0 - 0.5) + np.log(1e-3)

    @staticmethod
    def fails(c):
        return (c["local"] == 1) & (c["wg_x"] * c["px_x"] * c["wg_y"] * c["px_y"] > 512)

    def evaluate(self, config):
        self.evaluations += 1
        c = {k: np.array([v]) for k, v in config.items()}
        return None if self.fails(c)[0] else float(np.exp(self.log_time(c)[0]))

    def truth(self):
        """All candidates, their times, and which fail."""
        m = self.candidate_matrix()
        c = {n: m[:, i] for i, n in enumerate(self.names)}
        return m, np.exp(self.log_time(c)), self.fails(c)

    def optimum(self):
        _, t, fail = self.truth()
        return float(t[~fail].min())


@pytest.fixture(scope="module")
def truth():
    return Synthetic().truth()


def small_replay(n: int = 400, seed: int = 0) -> ReplayProblem:
    """A replay of n measured configurations of the synthetic space (failures included)."""
    p = Synthetic()
    m = p.sample_matrix(n, np.random.default_rng(seed))
    return ReplayProblem(p.parameters, {tuple(r): p.evaluate(p.config(r)) for r in m})


# ---- problem ---------------------------------------------------------------------------------------


def test_candidates_and_sampling_respect_constraints(truth):
    p = Synthetic()
    assert p.size == 6912 and len(p.candidate_matrix()) == 6336
    cols = p.candidates()
    assert np.all(cols["wg_x"] * cols["wg_y"] <= 256)
    rows = p.sample(300, np.random.default_rng(1))
    assert len({tuple(sorted(r.items())) for r in rows}) == 300
    assert all(p.is_valid(r) for r in rows)
    assert not p.is_valid({**rows[0], "wg_x": 32, "wg_y": 32})
    assert not p.is_valid({**rows[0], "wg_x": 3})
    assert not p.is_valid({"wg_x": 1})


def test_replay_problem_counts_and_looks_up():
    replay = small_replay(200)
    assert len(replay.candidate_matrix()) == 200
    key, time = next(iter(replay.records.items()))
    assert replay.evaluate(replay.config(key)) == time
    assert replay.evaluate({**replay.config(key), "unroll": 3}) is None  # never recorded
    assert replay.evaluations == 2
    assert replay.optimum() == min(t for t in replay.records.values() if t is not None)
    frozen = {frozenset(replay.config(k).items()): t for k, t in replay.records.items()}
    assert ReplayProblem(replay.parameters, frozen).records == replay.records


# ---- encoding ------------------------------------------------------------------------------------


def test_encoding_logs_powers_of_two_and_scales():
    enc = encoding.Encoder([Parameter("wg", [1, 2, 4, 8, 16]), Parameter("n", [3, 5, 7, 9]),
                            Parameter("flag", [0, 1])], extra_names=["width"])
    x = enc.encode(np.array([[1, 3, 0], [4, 7, 1], [16, 9, 1]]), extra=np.array([[1024], [2048], [4096]]))
    np.testing.assert_allclose(x[:, 0], [0, 0.5, 1])          # log2: 1, 4, 16 evenly spaced
    np.testing.assert_allclose(x[:, 1], [0, 2 / 3, 1], rtol=1e-6)
    np.testing.assert_allclose(x[:, 2], [0, 1, 1])
    np.testing.assert_allclose(x[:, 3], [0, 0.5, 1])          # problem size on a log scale too
    assert x.dtype == np.float32


# ---- strategies ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_strategy_stays_within_budget_and_returns_a_measured_config(name):
    for budget in (0, 1, 25):
        p = Synthetic()
        result = STRATEGIES[name](p, budget, np.random.default_rng(3))
        assert result.evaluations <= budget and p.evaluations == result.evaluations == len(result.history)
        if budget == 0:
            assert result.best_config is None
            continue
        measured = {tuple(sorted(c.items())): t for c, t in result.history}
        assert len(measured) == len(result.history)  # never pays twice for one configuration
        if result.best_config is not None:
            assert p.is_valid(result.best_config)
            assert measured[tuple(sorted(result.best_config.items()))] == result.best_time
            assert result.best_time == min(t for t in measured.values() if t is not None)


def test_strategies_stop_when_the_space_is_used_up():
    replay = small_replay(30)
    for name, fn in STRATEGIES.items():
        if name == "ml":
            continue
        result = fn(replay, 100, np.random.default_rng(0))
        assert result.evaluations <= 30, name
    exhaustive = STRATEGIES["exhaustive"](replay, 100, None)
    assert exhaustive.evaluations == 30 and exhaustive.best_time == replay.optimum()


def test_ml_finds_near_optimum_with_5_percent_of_the_space(truth):
    m, t, fail = truth
    optimum = t[~fail].min()
    budget = int(0.05 * len(m))  # 316 of 6336
    ml_slow, random_slow = [], []
    for seed in (0, 1, 2):
        p = Synthetic()
        result = STRATEGIES["ml"](p, budget, np.random.default_rng(seed))
        assert p.evaluations == result.evaluations <= budget
        ml_slow.append(result.best_time / optimum)
        random_slow.append(STRATEGIES["random"](Synthetic(), budget, np.random.default_rng(seed)).best_time / optimum)
    # measured on this landscape: ml 1.000 on every seed (about 165 measurements), random 1.06-1.26
    assert np.mean(ml_slow) < 1.02 and max(ml_slow) < 1.05, ml_slow
    assert np.mean(ml_slow) < np.mean(random_slow) - 0.03, (ml_slow, random_slow)


def test_hybrid_local_phase_moves_one_parameter_from_the_best(truth):
    """After the random sample, each measurement is a one-parameter neighbour of the best so far
    (of the next best ones once the best's neighbours are all measured)."""
    m, t, fail = truth
    optimum = t[~fail].min()
    budget = 63  # 1% of the space
    hybrid_slow, random_slow = [], []
    for seed in (0, 1, 2):
        p = Synthetic()
        result = STRATEGIES["hybrid"](p, budget, np.random.default_rng(seed), model_options={"epochs": 400})
        assert p.evaluations == result.evaluations == budget
        assert result.info["local"] == round(0.7 * budget) and result.info["stage1"] == round(0.3 * budget)
        ok = []
        for i, (config, time) in enumerate(result.history):
            if i >= budget - result.info["local"]:
                # a move from one of the best: one parameter, plus the fewest others the
                # work-group limit needs (after a stall, from a best one farther away)
                row = np.array([config[n] for n in p.names])
                tops = [np.array([c[n] for n in p.names]) for _, c in sorted(ok, key=lambda x: x[0])[:64]]
                assert any((strategies._repaired_neighbours(p, top) == row).all(1).any() for top in tops), (i, config)
            if time is not None:
                ok.append((time, config))
        hybrid_slow.append(result.best_time / optimum)
        random_slow.append(STRATEGIES["random"](Synthetic(), budget, np.random.default_rng(seed)).best_time / optimum)
    assert np.mean(hybrid_slow) < np.mean(random_slow), (hybrid_slow, random_slow)


def _flag_problem():
    """`vec = 1` is valid only with `inner = 1` and `wide >= 2`: 1 in 8 of the configurations."""
    params = [Parameter("vec", [0, 1]), Parameter("inner", [0, 1]), Parameter("wide", [1, 2, 4, 8]),
              Parameter("size", [1, 2, 4, 8, 16, 32])]
    valid = lambda c: (c["vec"] == 0) | ((c["inner"] == 1) & (c["wide"] >= 2))  # noqa: E731
    return problem_mod.FunctionProblem(params, lambda c: 1.0, valid)


def test_repaired_neighbours_reach_values_valid_only_with_others():
    """Setting `vec = 1` from a configuration with inner = 0 and wide = 1 is invalid alone; the
    move also changes the fewest other parameters (two) that make it valid, and nothing else."""
    p = _flag_problem()
    row = np.array([0, 0, 1, 4])
    pool = strategies._repaired_neighbours(p, row)
    assert len(pool) and p._mask_rows(pool).all()
    assert len(np.unique(p.index(pool))) == len(pool) and not (pool == row).all(1).any()
    vec = pool[pool[:, 0] == 1]
    assert len(vec) == 3  # inner -> 1 and wide -> each of 2, 4, 8; size untouched
    assert (vec[:, 1] == 1).all() and set(vec[:, 2]) == {2, 4, 8} and (vec[:, 3] == 4).all()
    plain = pool[pool[:, 0] == 0]  # the valid one-parameter moves stay single moves
    assert ((plain != row).sum(1) == 1).all() and len(plain) == 1 + 3 + 5


def test_spread_sample_gives_rare_valid_values_their_share():
    p = _flag_problem()
    for seed in range(3):
        spread = strategies._spread_sample(p, 16, np.random.default_rng(seed))
        assert len(spread) == 16 and p._mask_rows(spread).all() and len(np.unique(p.index(spread))) == 16
        uniform = p.sample_matrix(16, np.random.default_rng(seed))
        # vec = 1 is 1 in 8 valid configurations: a uniform draw of 16 holds about 2
        assert (spread[:, 0] == 1).sum() >= 6 > (uniform[:, 0] == 1).sum()
        assert set(spread[:, 3]) == {1, 2, 4, 8, 16, 32}  # every size at least once


def _walk(patience: int, budget: int = 20):
    """The local phase from two measured configurations: the scalar best S and a vectorised V."""
    p = _flag_problem()
    p._measure = lambda c: 0.5 if c["vec"] and c["size"] == 32 else 1.5 if c["vec"] else 1.0 + 0.01 * c["size"]
    session = strategies.Session(p, budget)
    for row in ([0, 0, 1, 1], [1, 1, 2, 16]):
        session.measure(np.array(row))
    ranker = strategies._Ranker(p, "bnn", {"epochs": 50}, 0, [], 250_000, np.random.default_rng(0))
    strategies._local_phase(p, session, ranker, ranker.fit(session), None, patience=patience)
    return p, [np.array([c[n] for n in p.names]) for c, _ in session.history[2:]]


def test_local_search_leaves_a_stalled_centre_for_another_family():
    """After `patience` measurements around the best (S) that do not beat it, the walk moves to
    the best configuration more than two parameters away from S; without that it spends its
    budget on S's neighbourhood (12 configurations, none faster)."""
    p, steps = _walk(patience=4)
    s = np.array([0, 0, 1, 1])
    around_s = strategies._repaired_neighbours(p, s)
    assert all((around_s == row).all(1).any() for row in steps[:4])
    far = [row for row in steps[:4] if (row != s).sum() > 2]  # measured by then, away from S
    assert any((strategies._repaired_neighbours(p, f) == steps[4]).all(1).any()
               for f in [np.array([1, 1, 2, 16])] + far), steps[4]
    _, stuck = _walk(patience=1000)
    assert all((around_s == row).all(1).any() for row in stuck[:len(around_s)])


class _FixedModel:
    """A model whose predictions are given: log-times and their ensemble spread."""

    def __init__(self, mean, spread):
        self.mean, self.spread = np.asarray(mean, float), np.asarray(spread, float)

    def predict(self, X):
        return self.mean.copy(), self.spread.copy()


def test_pick_takes_the_predicted_fastest_or_a_draw_from_the_uncertainty():
    p = _flag_problem()
    ranker = strategies._Ranker(p, "bnn", {}, 0, [], 250_000, np.random.default_rng(0))
    pool = np.array([[0, 0, 1, 1], [0, 0, 1, 2], [0, 1, 2, 4]])
    # the second is predicted fastest; the third is slower on average but the members disagree on it
    model = _FixedModel([0.0, -0.2, 0.1], [0.01, 0.01, 1.0])
    assert (strategies._pick(ranker, model, None, pool, "mean") == pool[1]).all()
    drawn = [tuple(strategies._pick(ranker, model, None, pool, "thompson")) for _ in range(400)]
    share = drawn.count(tuple(pool[2])) / len(drawn)
    # P(0.1 + z < -0.2) for z ~ N(0, 1) is 0.38; the first (never below the second by more
    # than its own 0.01 spread allows) is practically never taken
    assert 0.30 < share < 0.46 and drawn.count(tuple(pool[1])) == len(drawn) - drawn.count(tuple(pool[2]))
    certain = _FixedModel([0.0, -0.2, 0.1], [0.0, 0.0, 0.0])  # no uncertainty: the same as "mean"
    assert all((strategies._pick(ranker, certain, None, pool, "thompson") == pool[1]).all() for _ in range(20))
    with pytest.raises(ValueError, match="pick must be one of thompson, mean"):
        STRATEGIES["hybrid"](Synthetic(), 10, np.random.default_rng(0), pick="greedy")


class _RowModel:
    """A model that predicts from the configuration rows themselves (no encoding), spread 0."""

    def __init__(self, log_time):
        self.log_time = log_time

    def predict(self, X):
        return self.log_time(np.asarray(X)), np.zeros(len(X))


def _fixed_model_walk(measure, log_time, start, budget: int, **options):
    """The local phase on `_flag_problem` from the configurations `start` (rows, measured first),
    timed by `measure(config)`, under a model that predicts `log_time(rows)` and never learns."""
    p = _flag_problem()
    p._measure = measure
    session = strategies.Session(p, budget)
    for row in start:
        session.measure(np.array(row))
    ranker = strategies._Ranker(p, "bnn", {}, 0, [], 250_000, np.random.default_rng(0))
    model = _RowModel(log_time)
    ranker._features = lambda rows, extra=None: np.asarray(rows)
    ranker.fit = lambda session: model
    strategies._local_phase(p, session, ranker, model, None, **options)
    return p, session


def _probe_walk(probe: bool, budget: int):
    """The local phase from S = (vec 0, inner 0, wide 1, size 1) under a model that is sure any
    `inner = 1` is 160x slower and every other move a little faster, while the opposite is true."""
    p, session = _fixed_model_walk(lambda c: 0.5 if c["inner"] else 1.0 + 0.01 * (c["wide"] + c["size"]),
                                   lambda rows: np.where(rows[:, 1] == 1, 5.0, -0.1), [[0, 0, 1, 1]], budget,
                                   pick="mean", probe=probe)
    return [np.array([c[n] for n in p.names]) for c, _ in session.history[1:]], session.best_time


def test_untried_moves_are_the_centres_parameters_no_measured_neighbour_changed():
    p = _flag_problem()
    centre = np.array([0, 0, 1, 1])
    session = strategies.Session(p, 10)
    for row in ([0, 0, 1, 1], [0, 0, 2, 1], [0, 0, 4, 8], [1, 1, 2, 16]):  # a wide move; two not neighbours
        session.measure(np.array(row))
    pool = strategies._repaired_neighbours(p, centre)
    untried = strategies._untried_moves(p, session, centre, pool, pool)
    assert not untried[(pool[:, 2] != 1) & (pool[:, [0, 1, 3]] == centre[[0, 1, 3]]).all(1)].any()
    assert untried[pool[:, 3] != 1].all() and untried[pool[:, 1] == 1].all()  # size, inner and vec moves
    session.measure(np.array([1, 1, 2, 1]))  # a repaired vec move changes vec, inner and wide at once
    untried = strategies._untried_moves(p, session, centre, pool, pool)
    assert list(np.flatnonzero(untried)) == list(np.flatnonzero((pool != centre)[:, 3]))


def test_a_stalled_walk_probes_the_parameter_the_model_rules_out():
    """Without probing the walk spends its budget on the moves the model prefers (3 of wide, 5
    of size) and never tries `inner`; with it, the first step that does not improve makes the
    next ones change the centre's parameters not tried yet, `inner` among them."""
    steps, best = _probe_walk(probe=False, budget=9)
    assert not any(row[1] == 1 for row in steps) and best > 1.0
    steps, best = _probe_walk(probe=True, budget=9)
    assert any(row[1] == 1 for row in steps[:4]) and best == 0.5
    first_params = [set(np.flatnonzero(row != [0, 0, 1, 1])) for row in steps[:3]]
    assert len(set.union(*first_params)) >= 3  # three steps, three different parameters at least


def test_hybrid_probes_cold_only_unless_told():
    quick = {"model_options": {"epochs": 50}}
    seed = [{"wg_x": 8, "wg_y": 8, "px_x": 2, "px_y": 2, "unroll": 2, "local": 0, "image": 0}]
    cold = STRATEGIES["hybrid"](Synthetic(), 30, np.random.default_rng(0), **quick)
    warm = STRATEGIES["hybrid"](Synthetic(), 30, np.random.default_rng(0), seeds=seed, **quick)
    always = STRATEGIES["hybrid"](Synthetic(), 30, np.random.default_rng(0), seeds=seed, probe="always", **quick)
    never = STRATEGIES["hybrid"](Synthetic(), 30, np.random.default_rng(0), probe="never", **quick)
    known = STRATEGIES["hybrid"](Synthetic(), 30, np.random.default_rng(0), **quick,
                                 prior=[strategies.Observation(seed[0], 1e-3, {})])
    assert (cold.info["probe"], warm.info["probe"], always.info["probe"], never.info["probe"],
            known.info["probe"]) == (True, False, True, False, False)
    with pytest.raises(ValueError, match="probe must be one of cold, always, never"):
        STRATEGIES["hybrid"](Synthetic(), 10, np.random.default_rng(0), probe="sometimes")


def _chain_times(rows: np.ndarray) -> np.ndarray:
    """A ridge of small gains: 0.1% faster per step up in log2(size) or log2(wide), but only
    while the two stay within one step of each other (1.01 off the ridge, vec or inner 1.5)."""
    rows = np.asarray(rows)
    j, i = np.log2(rows[:, 3]), np.log2(rows[:, 2])
    on_ridge = (np.abs(j - i) <= 1) & (rows[:, 0] == 0) & (rows[:, 1] == 0)
    return np.where(on_ridge, 1.0 - 0.001 * (i + j), np.where(rows[:, :2].any(1), 1.5, 1.01))


def _true_model_walk(times, start, budget: int, **options):
    """`_fixed_model_walk` where the configurations take `times(rows)` and the model knows it."""
    return _fixed_model_walk(lambda c: float(times(np.array([[c["vec"], c["inner"], c["wide"], c["size"]]]))[0]),
                             lambda rows: np.log(times(rows)), start, budget, pick="mean", probe=False, **options)


def _ridge_walk(min_gain: float):
    # the start, and a slow one far from it
    return _true_model_walk(_chain_times, [[0, 0, 1, 1], [1, 1, 8, 32]], 12, patience=3, min_gain=min_gain)


def test_a_walk_follows_a_ridge_of_small_gains():
    """Each step along the ridge is 0.2% faster (one parameter moves two places), a new best with
    new neighbours: the walk follows it to its end, (wide 8, size 16), in 4 steps, and measures
    `patience` of the end's neighbours before it gives the end up. When only gains of 0.5% or
    more count (`min_gain=0.005`, the rule before), the gains on the ridge counted as stalls; the
    walk still follows the ridge (each new best is faster than the centres given up on the way,
    so it stays a centre) but gives the end up sooner."""
    p, session = _ridge_walk(min_gain=0.0)
    walk = [t for _, t in session.history[2:6]]
    assert walk == sorted(walk, reverse=True) and len(set(walk)) == 4  # a new best at every step
    assert session.best_time == pytest.approx(1.0 - 0.001 * 7)
    assert p.config(session.best_key) == {"vec": 0, "inner": 0, "wide": 8, "size": 16}
    # the ridge's end is given up after `patience` (3) of its neighbours, and the walk restarts
    # at the far configuration, whose first step (its predicted best neighbour) is (0, 0, 8, 32)
    keys = [tuple(c[n] for n in p.names) for c, _ in session.history]
    assert keys.index((0, 0, 8, 32)) == 5 + 1 + 3
    p, session = _ridge_walk(min_gain=0.005)
    # the small gains on the way counted as stalls, so the end is given up one neighbour sooner
    keys = [tuple(c[n] for n in p.names) for c, _ in session.history]
    assert session.best_time == pytest.approx(1.0 - 0.001 * 7) and keys.index((0, 0, 8, 32)) == 5 + 1 + 2
    with pytest.raises(ValueError, match=r"min_gain must be in \[0, 1\)"):
        STRATEGIES["hybrid"](Synthetic(), 10, np.random.default_rng(0), min_gain=1.5)


def _given_up_times(rows: np.ndarray) -> np.ndarray:
    """A (0, 0, 1, 1) 1.0 and F (0, 1, 2, 2) 1.2, three parameters apart; F's neighbour N
    (0, 0, 2, 2) 0.9, two parameters from A; N's neighbour B (0, 0, 2, 4) 0.5; the rest 1.3."""
    known = {(0, 0, 1, 1): 1.0, (0, 1, 2, 2): 1.2, (0, 0, 2, 2): 0.9, (0, 0, 2, 4): 0.5}
    return np.array([known.get(tuple(int(v) for v in row), 1.3) for row in np.asarray(rows)])


def test_a_new_best_near_a_centre_given_up_is_a_centre():
    """The walk gives A up after `patience` slower neighbours and restarts at F, whose best
    neighbour N beats A. N lies within two parameters of A, but it was not known when A was
    given up: it becomes the centre, and its neighbour B, the best, is measured next. Before,
    rows near a centre given up were never centres, so the walk stayed around F."""
    _, session = _true_model_walk(_given_up_times, [[0, 0, 1, 1], [0, 1, 2, 2]], 8, patience=2)
    times = [t for _, t in session.history]
    assert times[2:4] == [1.3, 1.3] and times[4] == 0.9  # A given up, then F's best neighbour, N
    assert times[5] == 0.5 and session.best_time == 0.5


def test_ml_fixed_second_stage_and_threshold_options():
    quick = {"model_options": {"epochs": 300}}
    p = Synthetic()
    result = STRATEGIES["ml"](p, 120, np.random.default_rng(0), fixed_second=20, retrain=False, **quick)
    assert result.info["stage2"] == 20 and result.evaluations == result.info["stage1"] + 20
    eager = STRATEGIES["ml"](Synthetic(), 120, np.random.default_rng(0), threshold=0.0, retrain=False, **quick)
    assert eager.evaluations == 120  # T = 0 never stops: the whole budget is used


def test_ml_on_a_space_too_large_to_list(monkeypatch, truth):
    """Unlisted spaces are ranked on random samples grown by the best ones' neighbours."""
    monkeypatch.setattr(problem_mod, "MAX_ENUMERATE", 1000)
    p = Synthetic()
    assert p.candidates() is None
    rows = p.sample_matrix(500, np.random.default_rng(0))
    assert len(np.unique(p.index(rows))) == 500 and np.all(rows[:, 0] * rows[:, 1] <= 256)
    result = STRATEGIES["ml"](p, 200, np.random.default_rng(0), prediction_sample=1500, max_retrains=2,
                              model_options={"epochs": 500})
    m, t, fail = truth
    assert p.evaluations == result.evaluations <= 200
    assert result.best_time / t[~fail].min() < 1.1


def test_ml_learns_from_other_problem_sizes():
    """Measurements of another size (section 5.4) join the training data with the size as input."""
    other = Synthetic()
    rows = other.sample_matrix(150, np.random.default_rng(9))
    prior = [strategies.Observation(other.config(r), other.evaluate(other.config(r)), {"width": 1024.0})
             for r in rows]
    p = Synthetic()
    p.context = {"width": 2048.0}
    seen = []
    real_fit = strategies._Ranker.fit

    def spy(self, session):
        model = real_fit(self, session)
        seen.append((self.encoder.width, self.trained_on))
        return model

    strategies._Ranker.fit = spy
    try:
        result = STRATEGIES["ml"](p, 60, np.random.default_rng(0), prior=prior, model_options={"epochs": 300})
    finally:
        strategies._Ranker.fit = real_fit
    valid_prior = sum(o.time is not None for o in prior)
    stage1_valid = sum(t is not None for _, t in result.history[:result.info["stage1"]])
    assert seen[0] == (len(p.parameters) + 1, valid_prior + stage1_valid)
    assert result.evaluations <= 60


def test_invalid_configurations_are_left_out_of_training(monkeypatch):
    seen = []

    class Spy(models.ConstantModel):
        def fit(self, X, y):
            seen.append((np.array(X), np.array(y)))
            return super().fit(X, y)

    monkeypatch.setitem(models.MODELS, "spy", lambda seed=0, **kw: Spy())
    p = Synthetic()
    result = STRATEGIES["ml"](p, 200, np.random.default_rng(0), model="spy")
    failed = [c for c, t in result.history if t is None]
    assert failed and seen
    enc = encoding.Encoder(p.parameters)
    failed_x = {tuple(r) for r in enc.encode(np.array([p.key(c) for c in failed]))}
    stage1 = result.info["stage1"]
    X, y = seen[0]
    assert len(y) == sum(t is not None for _, t in result.history[:stage1])
    assert np.all(np.isfinite(y)) and not failed_x & {tuple(r) for r in X}


# ---- models ---------------------------------------------------------------------------------------


def test_bagged_network_is_far_better_than_a_constant(truth):
    m, t, fail = truth
    rows, y = m[~fail], np.log(t[~fail])
    rng = np.random.default_rng(0)
    train = rng.choice(len(rows), 250, replace=False)
    test = np.setdiff1d(np.arange(len(rows)), train)
    enc = encoding.Encoder(Synthetic().parameters)
    errors = {}
    for name in ("bnn", "constant"):
        model = models.make_model(name, seed=0).fit(enc.encode(rows[train]), y[train])
        mean, std = model.predict(enc.encode(rows[test]))
        assert mean.shape == std.shape == (len(test),) and np.all(std > 0)
        errors[name] = np.sqrt(np.mean((mean - y[test]) ** 2))
    assert errors["bnn"] < 0.25 * errors["constant"], errors  # measured: about 0.06 vs 1.75


@pytest.mark.parametrize("activation", ["tanh", "sigmoid", "relu", "silu"])
@pytest.mark.parametrize("hidden", [(8,), (8, 5)])
def test_bagged_network_gradients_are_autograds(activation, hidden):
    """The hand-written backward pass against torch's autograd of the same loss: the k members'
    squared errors weighted per sample, plus the weight decay on the weights."""
    import torch

    net = models.BaggedNeuralNetwork(k=3, hidden=hidden, activation=activation, weight_decay=0.01)
    k, n, width = 3, 17, 4
    gen = torch.Generator().manual_seed(1)
    flat, params = net._init_params(k, width, gen)
    for b in params[1::2]:  # biases start at zero: make them matter
        b.copy_(torch.randn(b.shape, generator=gen))
    x, y = torch.randn(n, width, generator=gen), torch.randn(n, generator=gen)
    weight = torch.rand(k, n, generator=gen)
    _, grads = net._views(k, width)
    net._gradients(params, grads, x, y.view(1, n, 1), (2 * weight).unsqueeze(-1))

    act = {"tanh": torch.tanh, "sigmoid": torch.sigmoid, "relu": torch.relu,
           "silu": torch.nn.functional.silu}[activation]
    leaves = [p.clone().requires_grad_() for p in params]
    h = x.expand(k, n, width)
    for w, b in zip(leaves[0:-2:2], leaves[1:-2:2]):
        h = act(h @ w + b)
    out = (h @ leaves[-2] + leaves[-1]).squeeze(-1)                       # (k, n)
    loss = ((out - y) ** 2 * weight).sum() + 0.01 * sum((w ** 2).sum() for w in leaves[0::2])
    loss.backward()
    for mine, leaf in zip(grads, leaves):
        assert torch.allclose(mine, leaf.grad, rtol=1e-4, atol=1e-5), (mine - leaf.grad).abs().max()
    assert float(flat.abs().sum()) > 0 and flat.data_ptr() == params[0].data_ptr()  # the views share one tensor


@pytest.mark.parametrize("options, message", [({"hidden": ()}, "one or more layers"),
                                              ({"hidden": (8, 0)}, "one or more layers"),
                                              ({"activation": "gelu"}, "unknown activation 'gelu'")])
def test_bagged_network_refuses_shapes_it_cannot_train(options, message):
    with pytest.raises(ValueError, match=message):
        models.BaggedNeuralNetwork(**options)


def test_index_numbers_rows_as_a_mixed_radix_of_value_positions():
    """`index` against a per-row reference: digit i is the value's position in parameter i's
    values, the first parameter most significant; a value a parameter does not have gives -1.
    A parameter whose values span too wide a range for a table takes the other path."""
    for values in ([[3, 1, 2], [-4, 0, 9], [7]], [[1, 2], [0, 1 << 40, 5]], [[-(1 << 62) - 1, (1 << 62) + 1]]):
        problem = Problem([Parameter(f"p{i}", v) for i, v in enumerate(values)])
        rng = np.random.default_rng(0)
        pool = [v + [v[0] + 1000, -77] for v in values]
        rows = np.stack([rng.choice(p, 300) for p in pool], axis=1)

        def reference(row):
            digits = [v.index(int(x)) if int(x) in v else None for v, x in zip(values, row)]
            if None in digits:
                return -1
            out = 0
            for v, d in zip(values, digits):
                out = out * len(v) + d
            return out

        assert problem.index(rows).tolist() == [reference(r) for r in rows]
        assert problem.index(rows[:0]).shape == (0,)


def test_scikit_learn_models_share_the_interface(truth):
    m, t, fail = truth
    rows, y = m[~fail][::40], np.log(t[~fail][::40])
    enc = encoding.Encoder(Synthetic().parameters)
    for name in ("svr", "adaboost", "random_forest", "gradient_boosting"):
        model = models.make_model(name, seed=0, **({"n_estimators": 20} if name != "svr" else {}))
        mean, std = model.fit(enc.encode(rows), y).predict(enc.encode(m[:500]))
        assert mean.shape == std.shape == (500,) and np.all(np.isfinite(mean)) and np.all(std > 0), name
    with pytest.raises(ValueError, match="svr"):
        models.make_model("svm")


# ---- file formats -----------------------------------------------------------------------------------


MEASUREMENTS = [
    {"config": {"bs": 16, "tile": 1, "kind": 0}, "time_seconds": 2.5e-3, "status": "ok", "error": None},
    {"config": {"bs": 32, "tile": 1, "kind": 1}, "time_seconds": 1.25e-3, "status": "ok", "error": None},
    {"config": {"bs": 64, "tile": 2, "kind": 0}, "time_seconds": None, "status": "build_error",
     "error": "clBuildProgram failed"},
    {"config": {"bs": 64, "tile": 4, "kind": 1}, "time_seconds": None, "status": "wrong_output",
     "error": "max abs error 3.0"},
    {"config": {"bs": 128, "tile": 4, "kind": 1}, "time_seconds": None, "status": "invalid",
     "error": "work-group too large"},
]
LABELLED = [Parameter("bs", [16, 32, 64, 128]), Parameter("tile", [1, 2, 4]),
            Parameter("kind", [0, 1], labels=["plain", "vector"])]


@pytest.mark.parametrize("fmt, name", [("kernel_tuner", "recorded.json"), ("t4", "recorded.json"),
                                       ("kernel_tuner", "recorded.kt.json.gz"), ("t4", "recorded.json.gz")])
def test_formats_round_trip(tmp_path, fmt, name):
    path = tmp_path / name
    if fmt == "kernel_tuner":
        formats.write_kernel_tuner_cache(path, LABELLED, MEASUREMENTS, device_name="dev", kernel_name="k")
    else:
        formats.write_t4(path, LABELLED, MEASUREMENTS)
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")  # gzipped by its name
    params, records = formats.read_measurements(path)
    assert formats.detect_format(json.loads(formats.read_text(path))) == fmt
    assert [p.name for p in params] == ["bs", "tile", "kind"]
    assert params[2].labels == ["plain", "vector"]
    expected = {(m["config"]["bs"], m["config"]["tile"], m["config"]["kind"]): m["time_seconds"]
                for m in MEASUREMENTS}
    assert set(records) == set(expected)
    for key, time in expected.items():
        assert (records[key] is None) if time is None else records[key] == pytest.approx(time)
    replay = ReplayProblem(params, records)
    assert replay.optimum() == pytest.approx(1.25e-3)


def test_kernel_tuner_cache_as_kernel_tuner_writes_it(tmp_path):
    """An unclosed cache of an interrupted run, with error strings and a float parameter."""
    header = {"device_name": "GPU", "kernel_name": "conv", "problem_size": [4096, 4096],
              "tune_params_keys": ["block_size_x", "use_shmem", "factor"],
              "tune_params": {"block_size_x": [32, 16], "use_shmem": [0, 1], "factor": [0.5, 1.5]},
              "objective": "time", "cache": {}}
    text = json.dumps(header, indent="")[:-3]
    entries = {"16,0,0.5": 1.5, "32,1,1.5": 0.75, "32,0,0.5": "CompilationFailedConfig",
               "16,1,1.5": "InvalidConfig"}
    for key, time in entries.items():
        bs, sh, f = key.split(",")
        entry = {"block_size_x": int(bs), "use_shmem": int(sh), "factor": float(f), "time": time}
        text += "\n" + json.dumps({key: entry})[1:-1] + ","
    path = tmp_path / "cache.json"
    path.write_text(text)
    params, records = formats.read_kernel_tuner_cache(path)
    assert params[0].values == [16, 32] and params[2].labels == [0.5, 1.5]
    assert records == {(16, 0, 0): 1.5e-3, (32, 1, 1): 0.75e-3, (32, 0, 0): None, (16, 1, 1): None}


def test_t4_reader_units_and_invalidity():
    data = {"schema_version": "1.0.0", "results": [
        {"configuration": {"a": 1}, "invalidity": "correct", "correctness": 1, "times": {},
         "measurements": [{"name": "time", "value": 250, "unit": "us"}], "objectives": ["time"]},
        {"configuration": {"a": 2}, "invalidity": "compile", "correctness": 1, "times": {}, "measurements": []},
        {"configuration": {"a": 4}, "invalidity": "correct", "correctness": 1, "times": {"runtimes": [2, 4]}},
    ]}
    params, records = formats.read_t4(data)
    assert params[0].values == [1, 2, 4]
    assert records == {(1,): pytest.approx(250e-6), (2,): None, (4,): pytest.approx(3e-3)}


# ---- simulation -----------------------------------------------------------------------------------


def _write_synthetic_cache(path, n=400):
    replay = small_replay(n)
    rows = [{"config": replay.config(k), "time_seconds": t, "status": "ok" if t else "runtime_error",
             "error": None if t else "out of resources"} for k, t in replay.records.items()]
    formats.write_kernel_tuner_cache(path, replay.parameters, rows)
    return replay


def test_simulate_command_line_json(tmp_path, capsys):
    path = tmp_path / "synthetic_cache.json"
    replay = _write_synthetic_cache(path)
    assert simulate_mod.main([str(path), "--strategy", "random", "--max-evals", "30", "--repeats", "3",
                              "--seed", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for key in ("strategy", "max_evals", "seed", "space_size", "optimum", "repeats", "mean_best_time",
                "mean_evaluations", "mean_slowdown", "max_slowdown", "found_optimum", "fraction_measured"):
        assert key in report, key
    assert report["strategy"] == "random" and report["space_size"] == 400 and len(report["repeats"]) == 3
    assert report["optimum"] == pytest.approx(replay.optimum())
    for run in report["repeats"]:
        assert set(run) >= {"best_time", "evaluations", "best_config"}
        assert run["evaluations"] <= 30 and run["slowdown"] >= 1.0
        assert replay.records[replay.key(run["best_config"])] == pytest.approx(run["best_time"])
    assert report["within_5pct"] == sum(r["slowdown"] <= 1.05 for r in report["repeats"]) / 3
    again = simulate_mod.simulate(replay, "random", 30, 3, 1)
    assert [r["best_time"] for r in again["repeats"]] == pytest.approx([r["best_time"] for r in report["repeats"]])


def test_simulate_default_strategy_is_the_hybrid_and_reads_t4(tmp_path, capsys):
    replay = small_replay(300, seed=4)
    rows = [{"config": replay.config(k), "time_seconds": t, "status": "ok" if t else "runtime_error"}
            for k, t in replay.records.items()]
    path = tmp_path / "results.json"
    formats.write_t4(path, replay.parameters, rows)
    simulate_mod.main([str(path), "--max-evals", "40", "--repeats", "2", "--option", "model_options={\"epochs\": 300}"])
    out = capsys.readouterr().out
    assert strategies.DEFAULT_STRATEGY == "hybrid"
    assert out.startswith("hybrid: 2 runs of at most 40 measurements") and "slowdown" in out and "within 5% of it in " in out


@pytest.mark.parametrize("argv, message", [
    (["{missing}"], "no such file"),
    (["{bad_json}"], "not valid JSON"),
    (["{other_json}"], "neither a Kernel Tuner cache"),
    (["{cache}", "--strategy", "anealing"], "did you mean 'annealing'"),
    (["{cache}", "--strategy", "ml", "--option", "treshold=0.1"], "did you mean 'threshold'"),
    (["{cache}", "--max-evals", "0"], "positive integer"),
    (["{cache}", "--strategy", "ml", "--option", "threshold=often"], "takes float values"),
    (["{cache}", "--strategy", "ml", "--option", "threshold=2"], "threshold must be a probability"),
    (["{cache}", "--option", "local_share=1.5"], "local_share must be in"),
    (["{cache}", "--repeats", "many"], "invalid int value"),
])
def test_simulate_user_errors_are_simulation_errors(tmp_path, argv, message):
    files = {"missing": tmp_path / "nope.json", "bad_json": tmp_path / "bad.json",
             "other_json": tmp_path / "other.json", "cache": tmp_path / "cache.json"}
    files["bad_json"].write_text('{"cache": {')
    files["other_json"].write_text('{"hello": 1}')
    _write_synthetic_cache(files["cache"], 50)
    args = [a.format(**files) for a in argv]
    with pytest.raises(SimulationError, match=message) as info:
        simulate_mod.main(args)
    assert isinstance(info.value, ValueError)


def _benchmark_module(name: str):
    """A harness of the benchmarks (imagecl/bench/), as the scripts in benchmarks/ run it."""
    return importlib.import_module(f"imagecl.bench.{name}")


def _recorded_cache(path: Path):
    """A replay of 300 measured configurations, written as a Kernel Tuner cache at `path`."""
    replay = small_replay(300, seed=5)
    rows = [{"config": replay.config(k), "time_seconds": t, "status": "ok" if t else "runtime_error"}
            for k, t in replay.records.items()]
    formats.write_kernel_tuner_cache(path, replay.parameters, rows)
    return replay, path


def test_kernel_tuner_strategies_replay_our_cache_files(tmp_path):
    """imagecl/bench/kt_replay.py: Kernel Tuner's strategies on our exports, counted like ours."""
    pytest.importorskip("kernel_tuner")
    kt_replay = _benchmark_module("kt_replay")
    replay, path = _recorded_cache(tmp_path / "cache.kt.json.gz")  # recorded spaces are kept gzipped
    recorded = {t for t in replay.records.values() if t is not None}
    for strategy in ("random_sample", "pso"):
        run = kt_replay.replay(path, strategy, 20, seed=1)
        assert 0 < run.evaluations <= 20
        assert min(abs(run.best_time - t) for t in recorded) < 1e-12  # one of the recorded times
    everything = kt_replay.replay(path, "random_sample", 300, seed=1)
    assert everything.best_time == pytest.approx(replay.optimum())


def test_prior_from_store_takes_other_sizes_of_the_same_program_and_device(tmp_path):
    live = importlib.import_module("imagecl.tuner.live")
    store_mod = importlib.import_module("imagecl.tuner.store")
    here = store_mod.RunKey("p1", "blur", "gpu", "1.0", "64x32", 132)
    other = store_mod.RunKey("p1", "blur", "gpu", "1.0", "128x64", 132)
    unrelated = [store_mod.RunKey("p2", "sobel", "gpu", "1.0", "128x64", 132),  # another program
                 store_mod.RunKey("p1", "blur", "cpu", "1.0", "128x64", 132),   # another device
                 store_mod.RunKey("p1", "blur", "gpu", "2.0", "128x64", 132),   # another driver
                 store_mod.RunKey("p1", "blur", "gpu", "1.0", "128x64", 14),    # another size of device (MIG)
                 store_mod.RunKey("p1", "blur", "gpu", "1.0", "128x64", 0)]     # stored when sizes were unknown
    with store_mod.Store(tmp_path / "m.db") as store:
        store.add(here, store_mod.Record({"wg_x": 8}, "ok", 1e-3, [1e-3]))
        store.add(other, store_mod.Record({"wg_x": 8}, "ok", 4e-3, [4e-3]))
        store.add(other, store_mod.Record({"wg_x": 16}, "build_error", None, error="x"))
        store.add(other, store_mod.Record({"wg_x": 4}, "wrong_output", 1e-4, [1e-4]))  # timed, but no time to learn
        store.add(other, store_mod.Record({"wg_x": 64}, "slow", None, [1e-2], limit=8e-3))  # censored: left out
        for run in unrelated:
            store.add(run, store_mod.Record({"wg_x": 32}, "ok", 9e-3, [9e-3]))
        prior = live.prior_from_store(store, here)
        # hand-written kernels hash their sizes too ("family.instance"): the family is what must match
        kernel_here = store_mod.RunKey("k1.aaaa", "scale", "gpu", "1.0", "48")
        store.add(store_mod.RunKey("k1.bbbb", "scale", "gpu", "1.0", "96"), store_mod.Record({"wg_x": 2}, "ok", 2e-3))
        store.add(store_mod.RunKey("k2.cccc", "scale", "gpu", "1.0", "96"), store_mod.Record({"wg_x": 1}, "ok", 1e-3))
        kernel_prior = live.prior_from_store(store, kernel_here)
    assert sorted((o.config["wg_x"], o.time) for o in prior) == [(4, None), (8, 4e-3), (16, None)]
    assert all(o.context == {"size_0": 128.0, "size_1": 64.0} for o in prior)
    assert [(o.config, o.time, o.context) for o in kernel_prior] == [({"wg_x": 2}, 2e-3, {"size_0": 96.0})]
    assert live.size_context("64x32") == {"size_0": 64.0, "size_1": 32.0}


def test_evaluate_tuners_runs_and_updates_one_strategy(tmp_path, capsys):
    """imagecl/bench/evaluate_tuners.py (benchmarks/evaluate_tuners.py) on a small recorded space; `--update` replaces only the
    strategies run again and keeps the rest of the earlier report."""
    evaluate = _benchmark_module("evaluate_tuners")
    _, cache = _recorded_cache(tmp_path / "space.kt.json")
    common = [str(cache), "--fractions", "0.05", "--repeats", "2", "--model-sizes", "25", "--model-repeats", "1",
              "--kt-strategies", ""]
    assert evaluate.main(common + ["--strategies", "random,pso", "--out", str(tmp_path / "a")]) == 0
    first = json.loads((tmp_path / "a" / "tuners.json").read_text())
    entry = first["spaces"][0]
    assert [r["strategy"] for r in entry["search"]] == ["random", "pso"]
    assert all(1.0 <= r["mean_slowdown"] and r["mean_evaluations"] <= r["budget"] for r in entry["search"])
    assert set(entry["models"]) >= {"bnn", "constant"}
    assert evaluate.main(common + ["--strategies", "hybrid,random", "--repeats", "3", "--update",
                                   str(tmp_path / "a" / "tuners.json"), "--out", str(tmp_path / "b")]) == 0
    second = json.loads((tmp_path / "b" / "tuners.json").read_text())
    search = {r["strategy"]: r for r in second["spaces"][0]["search"]}
    assert list(search) == ["random", "pso", "hybrid"]
    assert search["pso"] == entry["search"][1]  # kept as it was
    assert search["random"] != entry["search"][0]  # run again (3 repeats instead of 2)
    assert second["spaces"][0]["models"] == entry["models"] and "updated" in second
    assert "| hybrid |" in (tmp_path / "b" / "tuners.md").read_text()


def test_ground_truth_pass_goes_on_where_an_earlier_one_stopped(tmp_path):
    """imagecl/bench/ground_truth.py (benchmarks/ground_truth.py) on PoCL: a second pass with the same --out measures only what the
    first left out (--chunk passes resume), and the report and export cover both."""
    ground = _benchmark_module("ground_truth")
    common = ["--device", "cpu", "--variant", "cpu-large", "--benchmark", "sobel", "--warm-up", "0",
              "--chunk", "2", "--out", str(tmp_path)]
    assert ground.main(common + ["--limit", "2"]) == 0
    first = json.loads((tmp_path / "ground-sobel-cpu.json").read_text())
    assert (first["configs"], first["measured"], first["measured_now"], first["passes"]) == (2, 2, 2, 1)
    assert ground.main(common + ["--limit", "4"]) == 0
    second = json.loads((tmp_path / "ground-sobel-cpu.json").read_text())
    assert (second["configs"], second["measured"], second["measured_now"], second["passes"]) == (4, 4, 2, 2)
    assert second["complete"] and second["seconds"] >= first["seconds"]
    parameters, records = formats.read_measurements(tmp_path / "ground-sobel-cpu.kt.json.gz")
    assert len(records) == 4 and all(t is not None for t in records.values())
    assert min(records.values()) * 1e3 == pytest.approx(second["best_ms"])
