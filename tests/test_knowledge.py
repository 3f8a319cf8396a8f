"""Zero-shot tuning knowledge (imagecl.tuner.knowledge): the table built from records, models
that learn where the best configuration depends on a feature, legality, and the evaluation's
metrics against hand-computed values."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl.features import CONFIG_FIELDS, DeviceFeatures, encode_config, size_names
from imagecl.tuner.knowledge import J48Baseline, PairRanker, assemble, device_from_json, device_of, predict, seeds
from imagecl.tuner.knowledge.dataset import LAUNCH_FIELDS, Dataset, device_value, launch_features, \
    limits_from_features, pair_matrix
from imagecl.tuner.knowledge.evaluate import best_single, case_result, evaluate_split, summarize
from imagecl.tuner.knowledge.models import fills_the_cores
from imagecl.tuner.store import Record, canonical_config, text_hash

ROOT = Path(__file__).resolve().parent.parent
SOBEL = ROOT / "examples" / "sobel.icl"
FIELDS = list(CONFIG_FIELDS)
WG_X = FIELDS.index("wg_x")


@pytest.fixture(scope="module")
def device():
    text = (ROOT / "benchmarks" / "results" / "knowledge" / "features-cpu.json").read_text()
    return device_from_json(json.loads(text[text.index("{"):])["device"])


@pytest.fixture(scope="module")
def sobel():
    return imagecl.load(str(SOBEL))


def _records(sobel, device, n=6):
    space = sobel.space_for_limits(limits_from_features(device), (64, 64))
    configs = [space.complete(space.defaults)] + space.random(n - 1, seed=3)
    h = text_hash(SOBEL.read_text())
    out = []
    for i, c in enumerate(configs):
        failed = i == 2
        out.append(Record(config=c, status="invalid_work_group" if failed else "ok",
                          time=None if failed else 1e-3 * (i + 1), program_name="sobel", program_hash=h,
                          device=device.name, driver="d", problem_size="64x64"))
    return out, space


def test_assembly_matches_records(sobel, device):
    records, space = _records(sobel, device)
    stray = Record(config={}, status="ok", time=1.0, program_hash="unknown", device=device.name, problem_size="8x8")
    # a censored record (tuner/censor.py) is neither a time nor a failure to learn from: left out
    slow = Record(config=records[1].config, status="slow", time=None, times=[0.5], limit=0.1, program_name="sobel",
                  program_hash=records[0].program_hash, device=device.name, driver="d", problem_size="64x64")
    data, skipped = assemble([*records, slow, stray], {records[0].program_hash: sobel}, {device.name: device})
    assert skipped == 1 and len(data.cases) == 1 and len(data.keys) == len(records)
    assert data.status == [r.status for r in records]
    assert np.isnan(data.log_time[2]) and not data.ok[2]
    assert data.log_time[4] == pytest.approx(math.log(5e-3))
    assert data.keys == [canonical_config(r.config) for r in records]
    assert data.default_key[0] == canonical_config(space.complete(space.defaults))
    for i in (0, 3):  # each row is the configuration's own encoding on that device and size
        expected = encode_config(sobel, space, records[i].config, (64, 64)).to_vector()
        np.testing.assert_allclose(data.config_features[i], expected)
    width = data.case_features.shape[1]
    np.testing.assert_allclose(data.pair_features()[:, width:], data.config_features)


def test_records_are_learned_with_the_features_of_their_own_size_of_device(sobel, device):
    """PoCL names a 16- and a 32-core Xeon VM alike (the features file is the 16-core one's): a
    record of the 32-core VM is never learned with the 16-core one's features, one stored before
    the store kept compute units (0) is learned with those of its device's name, as knowledge
    folders' stores always were, and each size is a case of its own."""
    import dataclasses

    assert device.compute_units == 16
    records, _ = _records(sobel, device)
    sized = {n: [dataclasses.replace(r, compute_units=n) for r in records] for n in (0, 16, 32)}
    programs = {records[0].program_hash: sobel}
    data, skipped = assemble([r for n in (0, 16, 32) for r in sized[n]], programs, {device.name: device})
    assert skipped == len(records) and [c.compute_units for c in data.cases] == [0, 16]
    large = dataclasses.replace(device, compute_units=32)
    # by name and compute units, as the service keys them: each size its own features
    data, skipped = assemble([r for n in (16, 32) for r in sized[n]], programs,
                             {(device.name, 16): device, (device.name, 32): large})
    assert skipped == 0 and [c.compute_units for c in data.cases] == [16, 32]
    assert [device_value(row, "compute_units") for row in data.case_features] == [16, 32]
    assert device_of(sized[0][0], {(device.name, 16): device}) is None  # a key of a known size: never unsized


def _toy(fail_wide: bool = False, seed: int = 0) -> Dataset:
    """Cases with one feature f; configurations differ in wg_x. The best wg_x is 2 where f < 0.5
    and 8 where f >= 0.5; wg_x 16 always fails when `fail_wide` (and would be fastest)."""
    rng = np.random.default_rng(seed)
    wgs = [1, 2, 4, 8] + ([16] if fail_wide else [])
    cases, case_features, enc, case, status, log_time = [], [], [], [], [], []
    for c in range(40):
        f = rng.random()
        best = 2 if f < 0.5 else 8
        cases.append(c)
        case_features.append([f, rng.random()])
        for wg in wgs:
            row = np.zeros(len(CONFIG_FIELDS))
            row[WG_X] = wg
            enc.append(row)
            case.append(c)
            if wg == 16:
                status.append("invalid_work_group")
                log_time.append(math.nan)
            else:
                status.append("ok")
                log_time.append(abs(math.log2(wg) - math.log2(best)) + 0.01 * rng.random())
    return Dataset(cases=cases, case_features=np.array(case_features), config_features=np.array(enc),
                   case=np.array(case), configs=[{} for _ in case], keys=[str(i) for i in range(len(case))],
                   status=status, log_time=np.array(log_time), default_key={})


def _candidates(wgs):
    enc = np.zeros((len(wgs), len(CONFIG_FIELDS)))
    enc[:, WG_X] = wgs
    return enc


@pytest.mark.parametrize("kind", ["forest", "boosting", "ensemble"])
def test_ranker_learns_feature_dependent_best(kind):
    model = PairRanker(kind).fit(_toy(), range(40))
    candidates = _candidates([1, 2, 4, 8])
    for f, best in ((0.1, 2), (0.3, 2), (0.7, 8), (0.9, 8)):
        order, seconds = model.rank(np.array([f, 0.5]), candidates)
        assert candidates[order[0], WG_X] == best
        assert seconds[order[0]] == seconds.min()


@pytest.mark.parametrize("target", ["scaled", "rank"])
def test_ranker_targets_learn_feature_dependent_best(target):
    model = PairRanker("forest", target=target).fit(_toy(), range(40))
    candidates = _candidates([1, 2, 4, 8])
    for f, best in ((0.1, 2), (0.3, 2), (0.7, 8), (0.9, 8)):
        order, seconds = model.rank(np.array([f, 0.5]), candidates)
        assert candidates[order[0], WG_X] == best
        assert seconds[order[0]] == seconds.min()
    with pytest.raises(ValueError, match="unknown target"):
        PairRanker("forest", target="median_of_means")


def test_lambdarank_order_learns_feature_dependent_best_and_keeps_the_regressors_times():
    """order="lambdarank": the candidates come in the ranking model's order (the best wg_x of
    each case first), never a predicted failure or a refused one, while the predicted seconds,
    failures and spreads stay the regressor's and the classifier's."""
    model = PairRanker("forest", target="scaled", launch=False, order="lambdarank").fit(_toy(fail_wide=True), range(40))
    assert model.ranker is not None
    plain = PairRanker("forest", target="scaled").fit(_toy(fail_wide=True), range(40))
    candidates = _candidates([1, 2, 4, 8, 16])
    for f, best in ((0.1, 2), (0.3, 2), (0.7, 8), (0.9, 8)):
        order, seconds = model.rank(np.array([f, 0.5]), candidates)
        assert candidates[order[0], WG_X] == best and 4 not in order
        np.testing.assert_allclose(seconds, plain.rank(np.array([f, 0.5]), candidates)[1])
    refused = np.array([False, False, False, True, False])
    order, _ = model.rank(np.array([0.9, 0.5]), candidates, refused)
    assert 3 not in order and 4 not in order
    # the order is the ranking model's (higher scores first), not the predicted times'
    score = model.ranker.predict(model._pairs(np.array([0.9, 0.5]), candidates))
    assert list(order) == sorted([0, 1, 2], key=lambda i: -score[i])
    # the same model whatever the threads, and after pickling
    import pickle

    threaded = PairRanker("forest", target="scaled", order="lambdarank", n_jobs=2).fit(_toy(fail_wide=True), range(40))
    again = pickle.loads(pickle.dumps(model))
    for other in (threaded, again):
        for f in (0.2, 0.6):
            np.testing.assert_array_equal(other.rank(np.array([f, 0.5]), candidates)[0],
                                          model.rank(np.array([f, 0.5]), candidates)[0])
    with pytest.raises(ValueError, match="unknown order"):
        PairRanker("forest", order="listnet")


def test_a_ranker_pickled_before_the_order_option_ranks_by_time():
    model = PairRanker("forest").fit(_toy(), range(40))
    del model.__dict__["order"], model.__dict__["ranker"]  # as unpickled from before the option
    order, seconds = model.rank(np.array([0.9, 0.5]), _candidates([1, 2, 4, 8]))
    assert list(order) == list(np.argsort(seconds, kind="stable"))


def test_j48_learns_feature_dependent_best():
    data = _toy()
    model = J48Baseline().fit(data, range(40))
    portable = data.portable(np.arange(4))  # the four configurations of one case
    for f, best in ((0.1, 2), (0.9, 8)):
        chosen = model.choose(np.array([f, 0.5]), portable, np.ones(4, dtype=bool))
        assert portable[chosen][0] == best  # wg_x is PORTABLE_FIELDS' first
    # a label the target cannot run lands on the nearest allowed candidate, never a forbidden one
    allowed = np.array([True, False, True, False])
    chosen = model.choose(np.array([0.9, 0.5]), portable, allowed)
    assert allowed[chosen] and portable[chosen][0] == 4


def test_failures_and_refused_never_ranked():
    model = PairRanker("forest").fit(_toy(fail_wide=True), range(40))
    candidates = _candidates([1, 2, 4, 8, 16])
    order, _ = model.rank(np.array([0.9, 0.5]), candidates)
    assert 4 not in order and len(order) == 4
    refused = np.array([False, False, False, True, False])  # the best, wg_x 8, refused by a client
    order, _ = model.rank(np.array([0.9, 0.5]), candidates, refused)
    assert set(order) == {0, 1, 2} and candidates[order[0], WG_X] == 4


def test_predict_returns_only_legal_configurations(sobel, device):
    records, space = _records(sobel, device, n=12)
    data, _ = assemble(records, {records[0].program_hash: sobel}, {device.name: device})
    model = PairRanker("forest").fit(data, [0])
    refused = [records[5].config]
    out = predict(model, sobel, device, (64, 64), refused=refused, kernel_work_group_limit=64)
    assert out, "some configuration must remain"
    keys = {canonical_config(p.config) for p in out}
    assert canonical_config(records[5].config) not in keys
    for p in out:
        assert p.config.get("wg_x", 1) * p.config.get("wg_y", 1) <= 64
        assert space.complete(p.config) == p.config  # valid in the device's space
        assert p.p_fail <= 0.5
    assert [p.seconds for p in out] == sorted(p.seconds for p in out)  # trained on this CPU: the model's order
    # given candidates: the refused one is among them and still never returned
    ok = [r.config for r in records if r.status == "ok"]
    given = predict(model, sobel, device, (64, 64), candidates=ok, refused=refused)
    assert {canonical_config(p.config) for p in given} <= {canonical_config(c) for c in ok} - \
        {canonical_config(records[5].config)}
    assert len(given) >= 1
    # a strategy's seeds: the same top configurations, in the same order
    assert seeds(model, sobel, device, (64, 64), k=3, candidates=ok) == \
        [p.config for p in predict(model, sobel, device, (64, 64), candidates=ok)][:3]


def test_case_metrics_hand_computed():
    times = np.array([2.0, 1.0, math.nan, 4.0])  # the oracle is 1.0; candidate 2 failed
    r = case_result(0, times, chosen=0, default=3, single=0, few_shot=[2, 0, 1])
    assert (r.share, r.speedup_default, r.speedup_single, r.illegal) == (0.5, 2.0, 1.0, False)
    assert r.share_few_shot == 1.0
    r = case_result(0, times, chosen=2, default=3, single=1)  # illegal: scored as the default
    assert r.illegal and r.share == 0.25 and r.speedup_default == 1.0 and r.speedup_single == 0.25
    s = summarize([case_result(0, times, 0, 3, 0), case_result(1, times, 1, 3, 0), case_result(2, times, 2, 3, 0)])
    assert s["share_of_oracle"] == pytest.approx((0.5 + 1.0 + 0.25) / 3)
    assert s["speedup_over_default"] == pytest.approx((2.0 * 4.0 * 1.0) ** (1 / 3))
    assert s["speedup_over_best_single"] == pytest.approx((1.0 * 2.0 * 0.5) ** (1 / 3))
    assert s["illegal_share"] == pytest.approx(1 / 3)


def _table(times: list[list[float]]) -> Dataset:
    """Cases (rows of `times`) of configurations wg_x 1, 2, 4; NaN: failed."""
    wgs = [1, 2, 4]
    n = len(times)
    return Dataset(cases=list(range(n)), case_features=np.zeros((n, 1)), config_features=np.tile(_candidates(wgs), (n, 1)),
                   case=np.repeat(np.arange(n), 3), configs=[{}] * (3 * n), keys=[str(w) for w in wgs] * n,
                   status=["ok" if not math.isnan(t) else "failed" for row in times for t in row],
                   log_time=np.log(np.array(times, dtype=float).ravel()), default_key={})


def test_best_single_is_best_mean_share_not_most_wins():
    # shares of the oracle: wg 1 (1, .25, 1) mean .75; wg 2 (.8, .8, .8) mean .8; wg 4 (.25, 1, .25)
    assert best_single(_table([[1, 1.25, 4], [4, 1.25, 1], [1, 1.25, 4]]), range(3))[0] == 2
    # a failure scores 0: wg 2 (.8, .8, 0) mean .53 loses to wg 1
    assert best_single(_table([[1, 1.25, 4], [4, 1.25, 1], [1, math.nan, 4]]), range(3))[0] == 1


def test_best_single_is_scored_where_it_lands_in_every_case():
    # wg 8 was measured (and best) in two cases only; in the four others its nearest configuration
    # is wg 4, ten times slower there. wg 2 is within 10% everywhere: it is the best single one.
    wgs = [[1, 2, 8]] * 2 + [[1, 2, 4]] * 4
    times = [[4, 1.1, 1]] * 2 + [[2, 1, 10]] * 4
    n = len(times)
    data = Dataset(cases=list(range(n)), case_features=np.zeros((n, 1)),
                   config_features=np.vstack([_candidates(w) for w in wgs]), case=np.repeat(np.arange(n), 3),
                   configs=[{}] * (3 * n), keys=[str(w) for row in wgs for w in row], status=["ok"] * (3 * n),
                   log_time=np.log(np.array(times, dtype=float).ravel()), default_key={})
    assert best_single(data, range(n))[0] == 2


def test_split_evaluation_beats_best_single_on_toy():
    results = evaluate_split(_toy(), range(30), range(30, 40), ["forest", "j48"])
    assert {len(v) for v in results.values()} == {10}
    assert summarize(results["forest"])["share_of_oracle"] > 0.95
    assert summarize(results["j48"])["share_of_oracle"] > 0.85
    assert summarize(results["best_single"])["share_of_oracle"] < 0.8


def test_assembly_keeps_each_measurement_launch_range(sobel, device):
    records, _ = _records(sobel, device)
    records[1].times = [3e-3, 1e-3, 2e-3]
    records[3].times = []  # stored without its launches: the median is the only time known
    data, _ = assemble(records, {records[0].program_hash: sobel}, {device.name: device})
    np.testing.assert_allclose(data.launch_range[1], [1e-3, 3e-3])
    np.testing.assert_allclose(data.launch_range[3], [4e-3, 4e-3])
    assert np.isnan(data.launch_range[2]).all()  # failed: no launch


def _launch_case(units: int, vector: int, f: float, cpu: bool = True) -> np.ndarray:
    """A case vector in the real layout: one program feature `f`, then the device's features
    (only its type, compute units, float vector width and work-group limit set), then the size's."""
    names = DeviceFeatures.names()
    row = np.zeros(1 + len(names) + len(size_names()))
    row[0] = f
    row[1 + names.index("is_cpu")] = float(cpu)
    row[1 + names.index("is_gpu")] = float(not cpu)
    row[1 + names.index("compute_units")] = units
    row[1 + names.index("preferred_vector_width_float")] = vector
    row[1 + names.index("max_work_group_size")] = 1024
    return row


def _launch_encodings(groups: list[int], group_size: int = 8) -> np.ndarray:
    enc = np.zeros((len(groups), len(CONFIG_FIELDS)))
    enc[:, FIELDS.index("work_groups")] = groups
    enc[:, FIELDS.index("wg_total")] = group_size
    enc[:, FIELDS.index("work_items")] = np.array(groups) * group_size
    return enc


def test_launch_features_hand_computed():
    out = launch_features(_launch_case(16, 8, 0.3)[None, :], _launch_encodings([64], group_size=32))
    # 64 groups / 16 units; 2048 items / 16 units; 2048 / (16 x 8 lanes); 32 items / 8 lanes; 32 / 1024
    np.testing.assert_allclose(out, [[2.0, 7.0, 4.0, 2.0, 1 / 32]])
    assert out.shape[1] == len(LAUNCH_FIELDS)
    gpu = launch_features(_launch_case(16, 8, 0.3, cpu=False)[None, :], _launch_encodings([64], group_size=32))
    np.testing.assert_array_equal(gpu, np.zeros((1, len(LAUNCH_FIELDS))))  # CPUs only
    X = pair_matrix(_launch_case(16, 8, 0.3)[None, :], _launch_encodings([64]), launch=True)
    assert X.shape[1] == len(_launch_case(16, 8, 0.3)) + len(CONFIG_FIELDS) + len(LAUNCH_FIELDS)


def _launch_toy() -> Dataset:
    """CPUs of 2, 4, 8 and 32 compute units, programs with one feature; the fastest launch has
    one work-group per compute unit, slower by a factor of two per doubling away from it."""
    rng = np.random.default_rng(5)
    groups = [1, 2, 4, 8, 16, 32, 64]
    cases, features, enc, case, log_time = [], [], [], [], []
    for c, units in enumerate([2, 4, 8, 32] * 8):
        cases.append(c)
        features.append(_launch_case(units, 8, rng.random()))
        enc.append(_launch_encodings(groups))
        case += [c] * len(groups)
        log_time += [abs(math.log2(g / units)) * math.log(2) + 0.01 * rng.random() for g in groups]
    n = len(case)
    return Dataset(cases=cases, case_features=np.array(features), config_features=np.vstack(enc),
                   case=np.array(case), configs=[{} for _ in range(n)], keys=[str(i) for i in range(n)],
                   status=["ok"] * n, log_time=np.array(log_time), default_key={})


def test_launch_features_carry_the_best_launch_to_a_larger_device():
    data = _launch_toy()
    candidates = _launch_encodings([1, 2, 4, 8, 16, 32, 64])
    sixteen = _launch_case(16, 8, 0.5)  # a device with compute units unlike any in training
    with_launch = PairRanker("forest", target="scaled", launch=True).fit(data, range(len(data.cases)))
    seconds, _ = with_launch.score(sixteen, candidates)  # the trees' own pick (rank adds fills_the_cores)
    assert candidates[np.argmin(seconds), FIELDS.index("work_groups")] == 16
    # without them the trees can only copy a device they saw (8 or 32 units): their own times
    # (rank would put the 8-group launch after those that fill the 16 units: fills_the_cores)
    plain = PairRanker("forest", target="scaled").fit(data, range(len(data.cases)))
    seconds, _ = plain.score(sixteen, candidates)
    assert candidates[np.argmin(seconds), FIELDS.index("work_groups")] in (8, 32)


def test_a_cpu_launch_that_leaves_cores_idle_is_ranked_after_those_that_fill_them():
    """Trained on one 2-unit CPU without launch features, the trees copy its best count (2
    work-groups) to a 16-unit CPU; `rank` then puts every launch of fewer than 16 work-groups
    after the others, each part in the model's order, refused ones left out. On a CPU no larger
    than the training's, and on a GPU, the order is the model's own."""
    data = _one_cpu_toy()
    groups = [64, 1, 16, 2, 32, 4, 8]  # not in the order of their counts
    candidates = _launch_encodings(groups)
    model = PairRanker("forest", target="scaled").fit(data, range(len(data.cases)))
    assert model.cpu_units == 2
    sixteen = _launch_case(16, 8, 0.5)
    seconds, _ = model.score(sixteen, candidates)
    assert groups[int(np.argmin(seconds))] == 2  # the model alone would leave 14 cores idle
    refused = np.array([False, False, True, False, False, False, False])  # 16 work-groups
    order, _ = model.rank(sixteen, candidates, refused)
    assert 2 not in order  # the refused candidate (index 2)
    assert sorted(groups[i] for i in order[:2]) == [32, 64]
    assert sorted(groups[i] for i in order[2:]) == [1, 2, 4, 8]
    for part in (order[:2], order[2:]):  # the model's order within each part
        assert list(seconds[part]) == sorted(seconds[part])
    assert list(fills_the_cores(sixteen, candidates)) == [g >= 16 for g in groups]
    for same in (_launch_case(2, 8, 0.5), _launch_case(16, 8, 0.5, cpu=False)):  # the model's own order
        order, own = model.rank(same, candidates)
        assert list(own[order]) == sorted(own)
    assert fills_the_cores(_launch_case(16, 8, 0.5, cpu=False), candidates).all()
    assert fills_the_cores(np.array([0.9, 0.5]), candidates).all()  # no device in a hand-made vector
    unknown = PairRanker("forest", target="scaled").fit(data, range(len(data.cases)))
    del unknown.cpu_units  # pickled before the rule: never applied
    order, own = unknown.rank(sixteen, candidates)
    assert list(own[order]) == sorted(own)


def test_within_noise_column_and_tail_counts():
    times = np.array([1.0, 4.0, 2.5, math.nan])  # medians; the oracle is candidate 0
    spans = np.array([[0.9, 2.2], [3.9, 4.1], [2.1, 3.0], [math.nan, math.nan]])
    noisy = case_result(0, times, 2, 1, 1, launch_range=spans)  # its fastest launch 2.1 <= the oracle's slowest 2.2
    slow = case_result(1, times, 1, 1, 1, launch_range=spans)  # 3.9 > 2.2
    best = case_result(2, times, 0, 1, 1, launch_range=spans)
    failed = case_result(3, times, 3, 1, 1, launch_range=spans)  # illegal: scored as the default, never noise
    assert (noisy.within_noise, slow.within_noise, best.within_noise, failed.within_noise) == (True, False, True, False)
    assert noisy.share == pytest.approx(0.4)  # the share still scores against the oracle's median
    assert not case_result(0, times, 2, 1, 1).within_noise  # launches unknown: not claimed
    s = summarize([noisy, slow, best, failed])
    assert (s["tail_cases"], s["tail_within_noise"]) == (3, 1)  # shares .4, .25, 1, .25
    assert s["median_share_of_oracle"] == pytest.approx(0.325)


def test_the_default_of_a_store_from_before_the_drivers_choice_is_its_measured_naive_variant():
    """Stores measured when the naive variant had a 1x1 work-group: the case's default is that
    record (the current default, the driver's choice, was never measured there), so "x default"
    and an illegal pick's fallback score against a measured time instead of dropping out."""
    from pathlib import Path

    import imagecl
    from imagecl.tuner.knowledge.dataset import measured_default
    from imagecl.tuner.store import canonical_config

    program = imagecl.load(Path(__file__).resolve().parent.parent / "examples" / "sobel.icl")
    space = program.space
    default = space.complete(space.defaults)
    assert default["wg_x"] == 0 and default["wg_y"] == 0
    old_naive = {**default, "wg_x": 1, "wg_y": 1}
    wider_naive = {**default, "wg_x": 4, "wg_y": 2}
    other = {**default, "wg_x": 1, "wg_y": 1, "px_x": 2}
    assert measured_default(default, [other, wider_naive, old_naive], program) == canonical_config(old_naive)
    # measured as it is now: that one
    assert measured_default(default, [old_naive, default], program) == canonical_config(default)
    # no naive variant at all: the current default's key (the case has no default time)
    assert measured_default(default, [other], program) == canonical_config(default)


def _one_cpu_toy(units: int = 2, programs: int = 12) -> Dataset:
    """One training CPU (`units` compute units), programs with one feature; the fastest launch
    has one work-group per compute unit, slower by a factor of two per doubling away from it."""
    rng = np.random.default_rng(7)
    groups = [1, 2, 4, 8, 16, 32, 64]
    features, enc, case, log_time = [], [], [], []
    for c in range(programs):
        features.append(_launch_case(units, 8, rng.random()))
        enc.append(_launch_encodings(groups))
        case += [c] * len(groups)
        log_time += [abs(math.log2(g / units)) * math.log(2) + 0.01 * rng.random() for g in groups]
    n = len(case)
    return Dataset(cases=list(range(programs)), case_features=np.array(features), config_features=np.vstack(enc),
                   case=np.array(case), configs=[{} for _ in range(n)], keys=[str(i) for i in range(n)],
                   status=["ok"] * n, log_time=np.array(log_time), default_key={})


def test_relative_launch_hides_absolute_counts_on_cpus_only():
    cpu, gpu = _launch_case(16, 8, 0.3), _launch_case(16, 8, 0.3, cpu=False)
    enc = _launch_encodings([64], group_size=32)
    X = pair_matrix(np.vstack([cpu, gpu]), np.vstack([enc, enc]), relative=True)
    at = len(cpu)  # the configuration block
    for name in ("work_groups", "work_items"):
        assert X[0, at + FIELDS.index(name)] == 0 and X[1, at + FIELDS.index(name)] == enc[0, FIELDS.index(name)]
    assert X[0, at + FIELDS.index("wg_total")] == 32  # the work-group's shape stays
    np.testing.assert_allclose(X[:, -len(LAUNCH_FIELDS):], launch_features(np.vstack([cpu, gpu]), np.vstack([enc, enc])))
    assert PairRanker(relative=True).launch  # relative implies the launch features


def test_relative_launch_carries_one_cpus_optimum_per_unit_to_another():
    """Trained on a single 2-unit CPU, where the absolute and the per-unit work-group counts are
    the same information: hiding the absolute counts makes a 16-unit CPU get 16 work-groups
    (one per unit), whatever the seed; with them, these trees copy the training CPU's count."""
    data = _one_cpu_toy()
    candidates = _launch_encodings([1, 2, 4, 8, 16, 32, 64])
    sixteen = _launch_case(16, 8, 0.5)
    picks: dict[bool, list] = {True: [], False: []}
    for relative in picks:
        for seed in range(3):
            model = PairRanker("forest", seed, target="scaled", launch=True, relative=relative).fit(
                data, range(len(data.cases)))
            seconds, _ = model.score(sixteen, candidates)  # the trees' own pick, before fills_the_cores
            picks[relative].append(candidates[np.argmin(seconds), FIELDS.index("work_groups")])
    assert picks == {True: [16, 16, 16], False: [2, 2, 2]}
