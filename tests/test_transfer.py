"""Transfer between programs (OmniTune-style shared data): the best configurations of other
programs tuned on the same device start a search (`seeds`). Covers the seed rows, the choice of
seeds (`distinct_best`), where they come from (a results database, recorded files), and the
command lines that use them (`imagecl tune`, `imagecl simulate --seeds-from`)."""
from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl.tuner import simulate as simulate_mod
from imagecl.tuner.formats import read_measurements
from imagecl.tuner.live import seeds_from_store, transfer_sources
from imagecl.tuner.problem import Parameter, Problem
from imagecl.tuner.store import Record, RunKey, Store
from imagecl.tuner.strategies import _seed_rows, distinct_best, hybrid

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
RESULTS = ROOT / "benchmarks" / "results"


class Small(Problem):
    """4 parameters, 96 configurations; a * b <= 16, and c = 1 is invalid with a = 8."""

    def __init__(self) -> None:
        super().__init__([Parameter("a", [1, 2, 4, 8]), Parameter("b", [1, 2, 4, 8]), Parameter("c", [0, 1]),
                          Parameter("d", [0, 1, 2])])
        self.evaluations = 0

    def valid_mask(self, c):
        return (c["a"] * c["b"] <= 16) & ~((c["c"] == 1) & (c["a"] == 8))

    def evaluate(self, config):
        self.evaluations += 1
        # a smooth bowl with its minimum at a = 4, b = 2, c = 0, d = 1
        return 1e-3 * (1 + abs(math.log2(config["a"]) - 2) + abs(math.log2(config["b"]) - 1)
                       + 0.5 * config["c"] + 0.3 * abs(config["d"] - 1))


def _valid(problem: Problem, row) -> bool:
    return problem.is_valid(problem.config(row))


def _all_valid(problem: Problem) -> list[dict]:
    """Every valid configuration, by brute force over the product (the independent reference)."""
    rows = itertools.product(*(p.values for p in problem.parameters))
    return [c for c in (problem.config(r) for r in rows) if problem.is_valid(c)]


# ---- _seed_rows ------------------------------------------------------------------------------------


def test_seed_rows_keep_valid_values_and_vary_the_rest():
    p = Small()
    rows = _seed_rows(p, [{"a": 2, "b": 4, "c": 1}], np.random.default_rng(0))
    assert len(rows) == 1 and _valid(p, rows[0])
    assert p.config(rows[0])["a"] == 2 and p.config(rows[0])["b"] == 4 and p.config(rows[0])["c"] == 1
    # the parameter the seed does not name is drawn: over a few random streams it takes several values
    d_values = {p.config(_seed_rows(p, [{"a": 1, "b": 1, "c": 0}], np.random.default_rng(s))[0])["d"]
                for s in range(20)}
    assert len(d_values) > 1 and d_values <= {0, 1, 2}


def test_seed_rows_snap_values_to_the_nearest_listed_one():
    p = Small()
    cases = [({"a": 5, "b": 1, "c": 0, "d": 2}, (4, 1, 0, 2)),  # 5 -> 4 (nearer than 8)
             ({"a": 1, "b": 7, "c": 1, "d": 0}, (1, 8, 1, 0)),  # 7 -> 8 (nearer than 4)
             ({"a": 100, "b": -3, "c": 0, "d": 9}, (8, 1, 0, 2))]  # outside the lists: their ends
    for seed, expected in cases:
        assert tuple(_seed_rows(p, [seed], np.random.default_rng(1))[0].tolist()) == expected


def test_seed_rows_repair_an_invalid_combination_with_the_closest_valid_one():
    p = Small()
    seed = {"a": 8, "b": 8, "c": 1}  # a * b = 64, and c = 1 with a = 8: no valid configuration has all three
    agreement = lambda config: sum(config[k] == v for k, v in seed.items())  # noqa: E731
    best_possible = max(agreement(c) for c in _all_valid(p))
    assert best_possible == 2
    for s in range(5):
        rows = _seed_rows(p, [seed], np.random.default_rng(s))
        assert len(rows) == 1 and _valid(p, rows[0])
        assert agreement(p.config(rows[0])) == best_possible


def test_seed_rows_merge_seeds_that_give_the_same_configuration():
    p = Small()
    full = {"a": 2, "b": 4, "c": 1, "d": 0}
    rows = _seed_rows(p, [full, dict(full), {"a": 2.0, "b": 4, "c": 1, "d": 0}, {"a": 1, "b": 1, "c": 0, "d": 2}],
                      np.random.default_rng(0))
    assert sorted(map(tuple, rows.tolist())) == [(1, 1, 0, 2), (2, 4, 1, 0)]
    # seeds that share no parameter with the problem give nothing
    assert len(_seed_rows(p, [{"wg_x": 8}], np.random.default_rng(0))) == 0


# ---- distinct_best ---------------------------------------------------------------------------------


def test_distinct_best_orders_by_time_skips_failures_and_near_duplicates():
    records = [({"x": 3, "y": 1, "z": 1}, 5.0),
               ({"x": 2, "y": 1, "z": 1}, None),          # failed
               ({"x": 3, "y": 3, "z": 3}, 0.0),           # a zero time is a broken measurement
               ({"x": 4, "y": 4, "z": 4}, float("nan")),
               ({"x": 1, "y": 2, "z": 2}, 1.0),           # the fastest
               ({"x": 1, "y": 2, "z": 3}, 1.5),           # differs from the fastest in z only
               ({"x": 2, "y": 3, "z": 2}, 2.0),
               ({"x": 1, "y": 3, "z": 3}, 2.0)]           # as fast as the one before: keeps the order given
    assert distinct_best(records, 3) == [{"x": 1, "y": 2, "z": 2}, {"x": 2, "y": 3, "z": 2},
                                         {"x": 1, "y": 3, "z": 3}]
    assert distinct_best(records, 3, min_distance=1) == [{"x": 1, "y": 2, "z": 2}, {"x": 1, "y": 2, "z": 3},
                                                         {"x": 2, "y": 3, "z": 2}]
    assert distinct_best(records, 2, min_distance=3) == [{"x": 1, "y": 2, "z": 2}, {"x": 3, "y": 1, "z": 1}]
    assert distinct_best(records, 0) == [] and distinct_best([({"x": 1}, None)], 3) == []
    # names only one configuration has count as differences (the union of the names is compared)
    assert distinct_best([({"x": 1}, 1.0), ({"x": 1, "w": 2}, 2.0), ({"x": 1, "w": 2, "v": 0}, 3.0)], 3) == \
        [{"x": 1}, {"x": 1, "w": 2, "v": 0}]


# ---- the strategy measures the seeds first ---------------------------------------------------------


def test_hybrid_measures_the_seeds_first_within_the_budget():
    seeds = [{"a": 1, "b": 8, "c": 1, "d": 0}, {"a": 8, "b": 1, "c": 0, "d": 2}, {"a": 2, "b": 2, "c": 1, "d": 1}]
    p = Small()
    result = hybrid(p, 20, np.random.default_rng(3), seeds=seeds, model_options={"epochs": 100})
    assert [c for c, _ in result.history[:3]] == seeds
    assert result.evaluations == len(result.history) == p.evaluations <= 20
    assert result.info["seeded"] == 3
    # more seeds than the first sample holds (0.3 * 10 = 3): the first three, and the budget still holds
    many = [{"a": a, "b": b, "c": 0, "d": 1} for a in (1, 2, 4) for b in (1, 2, 4)]
    p = Small()
    result = hybrid(p, 10, np.random.default_rng(3), seeds=many, model_options={"epochs": 100})
    assert [c for c, _ in result.history[:3]] == many[:3]
    assert result.evaluations == p.evaluations <= 10 and result.info["seeded"] == 3


# ---- seeds from a results database -----------------------------------------------------------------


def _run(name: str, device: str = "gpu", size: str = "512x512", phash: str = "") -> RunKey:
    return RunKey(phash or f"hash-{name}", name, device, "driver 1", size)


def _store(path: Path, runs: dict[RunKey, list[tuple[dict, float | None]]]) -> Store:
    store = Store(path)
    for run, records in runs.items():
        for config, t in records:
            store.add(run, Record(config, "ok" if t is not None else "build_error", t))
    return store


def test_seeds_from_store_take_other_programs_on_this_device_only(tmp_path):
    me = _run("me", size="512x512")
    blur_small, blur_large = _run("blur", size="64x64"), _run("blur", size="1024x1024")
    cfg = lambda wx, wy, px: {"wg_x": wx, "wg_y": wy, "px_x": px}  # noqa: E731
    store = _store(tmp_path / "m.db", {
        _run("me", size="64x64"): [(cfg(1, 1, 1), 1e-9)],   # this program at another size: prior_from_store's
        blur_small: [(cfg(4, 4, 1), 1e-6)],                  # faster, but at a size farther from 512x512
        blur_large: [(cfg(32, 4, 2), 3e-3), (cfg(32, 4, 1), 2e-3), (cfg(16, 8, 2), 4e-3), (cfg(8, 8, 8), None),
                     (cfg(64, 2, 4), 5e-3), (cfg(2, 2, 2), 9e-3)],
        _run("alpha"): [(cfg(8, 8, 2), 1e-3), (cfg(8, 8, 1), 2e-3)],
        _run("other-device", device="cpu"): [(cfg(128, 1, 1), 1e-9)],
        RunKey("hash-other-driver", "other-driver", "gpu", "driver 2", "512x512"): [(cfg(2, 64, 1), 1e-9)],
        # a device of this name and driver but another size (a MIG slice of the GPU, say)
        RunKey("hash-other-size", "other-size", "gpu", "driver 1", "512x512", 14): [(cfg(2, 32, 1), 1e-9)],
    })
    store.add(_run("alpha"), Record(cfg(1, 2, 4), "wrong_output", 1e-9))  # timed, but wrong: not a seed
    with store:
        seeds = seeds_from_store(store, me)
        sources = transfer_sources(store, me, per_program=2)
    # by program name (alpha, blur); blur from its size closest to 512x512; near-duplicates skipped
    assert seeds == [cfg(8, 8, 2), cfg(32, 4, 1), cfg(16, 8, 2), cfg(64, 2, 4)]
    assert [(run, s) for run, s in sources] == [(_run("alpha"), [cfg(8, 8, 2)]),
                                               (blur_large, [cfg(32, 4, 1), cfg(16, 8, 2)])]


# ---- imagecl simulate --seeds-from -----------------------------------------------------------------


def _recorded(name: str) -> Path:
    return RESULTS / f"ground-{name}-gpu-large.kt.json.gz"


def _fastest(path: Path) -> dict:
    parameters, records = read_measurements(path)
    key = min((k for k, t in records.items() if t is not None), key=lambda k: records[k])
    return {p.name: v for p, v in zip(parameters, key)}


def test_simulate_seeds_from_other_recorded_programs(capsys):
    target, others = _recorded("convolution9"), [_recorded("sobel"), _recorded("bilateral")]
    code = simulate_mod.main([str(target), "--seeds-from", *map(str, others), "--max-evals", "12", "--repeats", "2",
                              "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    names = {p.name for p in read_measurements(target)[0]}
    seeds = report["options"]["seeds"]
    assert report["seeds_offered"] == len(seeds) == 6 and report["seeds_from"] == list(map(str, others))
    # each file's fastest configuration comes first, restricted to the parameters convolution9 has
    for seed, other in ((seeds[0], others[0]), (seeds[3], others[1])):
        assert seed == {k: v for k, v in _fastest(other).items() if k in names}
    for run in report["repeats"]:  # the first sample holds round(0.3 * 12) = 4 of them
        assert 1 <= run["seeded"] <= 4 and run["evaluations"] <= 12
    assert 1 <= report["mean_seeded"] <= 4


def test_simulate_seeds_from_errors(tmp_path):
    target, other = str(_recorded("convolution9")), str(_recorded("sobel"))
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    unrelated = tmp_path / "unrelated.json"
    unrelated.write_text(json.dumps({"tune_params_keys": ["q"], "tune_params": {"q": [1, 2]},
                                     "cache": {"1": {"q": 1, "time": 1.0}, "2": {"q": 2, "time": 2.0}}}))
    cases = [(["--strategy", "random", "--seeds-from", other], "does not start from seeds"),
             (["--seeds-from", str(bad)], "bad.json"),
             (["--seeds-from", str(tmp_path / "none.json")], "no such file"),
             (["--seeds-from", other, "--seeds-per-file", "0"], "--seeds-per-file"),
             (["--seeds-from", str(unrelated)], "shares no parameter"),
             (["--seeds-from", other, target], "the CACHE replayed itself")]
    for extra, message in cases:
        with pytest.raises(simulate_mod.SimulationError, match=message):
            simulate_mod.main([target, *extra, "--max-evals", "5", "--repeats", "1"])
    # and through the command line: a message, no traceback
    result = subprocess.run([sys.executable, "-m", "imagecl", "simulate", target, "--strategy", "random",
                             "--seeds-from", other], capture_output=True, text=True)
    assert result.returncode == 1 and "does not start from seeds" in result.stderr
    assert "Traceback" not in result.stderr


def test_simulate_takes_seeds_from_a_results_database(tmp_path):
    """A --seeds-from file may be one of our databases, as CACHE may."""
    fast, slow = {"wg_x": 32, "wg_y": 4, "px_x": 2, "other": 1}, {"wg_x": 8, "wg_y": 8, "px_x": 1, "other": 0}
    db = tmp_path / "other.db"
    with _store(db, {_run("other"): [(slow, 2e-3), (fast, 1e-3), ({**fast, "other": 0}, 1.5e-3)]}):
        pass
    result = subprocess.run([sys.executable, "-m", "imagecl", "simulate", str(_recorded("convolution9")),
                             "--seeds-from", str(db), "--max-evals", "6", "--repeats", "1", "--json"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["options"]["seeds"] == [{"wg_x": 32, "wg_y": 4, "px_x": 2}, {"wg_x": 8, "wg_y": 8, "px_x": 1}]
    assert report["seeds_offered"] == 2 and report["repeats"][0]["seeded"] == 2


# ---- imagecl tune with a shared database -----------------------------------------------------------


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "imagecl", *args], capture_output=True, text=True)


def test_tune_starts_from_other_programs_best_configurations(tmp_path):
    """box_blur's measurements on this device are in the database; sobel's search measures
    box_blur's best configurations first (after the default one, the baseline), and with
    --no-transfer it does not."""
    from imagecl.tuner.target import run_key

    device = imagecl.select_device()
    shape = (31, 45)  # --size 45x31
    blur, sobel = imagecl.load(EXAMPLES / "box_blur.icl"), imagecl.load(EXAMPLES / "sobel.icl")
    space = sobel.space_for(device, shape)
    best = {"wg_x": 8, "wg_y": 4, "px_x": 2, "px_y": 1, "interleaved": 0, "image_input": 0, "local_input": 1,
            "interior": 1, "vector_x": 0}
    second = {**best, "wg_x": 16, "wg_y": 2, "local_input": 0}
    for config in (best, second):  # the seeds are valid sobel configurations: the test can expect them exactly
        assert space.complete(config) == config
    unroll = {"unroll_box_blur_l12": 5, "unroll_box_blur_l13": 1}
    records = [({**best, **unroll}, 1e-4), ({**best, **unroll, "px_x": 4}, 1.2e-4),  # a near-duplicate
               ({**second, **unroll}, 2e-4), ({**space.defaults, **unroll}, 9e-4)]
    db = tmp_path / "shared.db"
    with _store(db, {run_key(blur, device, shape): records}):
        pass
    # without the knowledge model, whose predictions would come before the transfer seeds
    common = [str(EXAMPLES / "sobel.icl"), "--size", "45x31", "--budget", "6", "--confirm", "0", "--seed", "1",
              "--no-knowledge"]
    result = _cli("tune", *common, "--db", str(db), "-o", str(tmp_path / "seeded"))
    assert result.returncode == 0, result.stderr
    assert "starting from 3 configurations of 1 other program tuned on this device (box_blur)" in result.stderr
    with Store(db) as store:
        run = run_key(sobel, device, shape)
        measured = [r.config for r in store.records(run)]
    assert measured[0] == space.defaults and measured[1:3] == [best, second]  # round(0.3 * 6) = 2 seeds fit

    plain = tmp_path / "plain.db"
    with _store(plain, {run_key(blur, device, shape): records}):
        pass
    result = _cli("tune", *common, "--db", str(plain), "--no-transfer", "-o", str(tmp_path / "plain"))
    assert result.returncode == 0, result.stderr
    assert "starting from" not in result.stderr
    with Store(plain) as store:
        measured = [r.config for r in store.records(run_key(sobel, device, shape))]
    assert measured[1:3] != [best, second]
