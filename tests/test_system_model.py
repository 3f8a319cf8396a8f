"""The system model of several devices (imagecl/runtime/system_model.py): its fit, its prediction,
its cache, and its calibration on two PoCL devices (in a worker process: POCL_DEVICES is read when
pyopencl first lists platforms)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from imagecl.runtime import split_tuning, system_model
from imagecl.runtime.system_model import Sample, Terms
from multidevice_worker import Worker


def _profile(kernel_ms: float, transfer_ms: float, fixed_ms: float, rows: int = 1000):
    return split_tuning.Profile(None, rows, (kernel_ms + transfer_ms + fixed_ms) / 1e3, kernel_ms / 1e3,
                                transfer_ms / 1e3)


def _samples_from(terms: Terms, programs, share_list=system_model.CALIBRATION_SHARES, hs=(1, 4)) -> list[Sample]:
    """Samples timed by `terms` themselves: what a system that follows the model would measure."""
    found = []
    for profiles, steps, depth in programs:
        rows = [[p.rows, p.wall, p.kernel, p.transfer] for p in profiles]
        for s in share_list:
            shares = [1 - s, s]
            for h in (hs if steps is not None and 0 < s < 1 else [1]):
                t = system_model.model_seconds(terms, profiles, shares, steps, h, depth)
                found.append(Sample(rows, shares, steps, h, depth, t))
    return found


PROGRAMS = [([_profile(2, 3, 1), _profile(20, 5, 0.5)], None, 0),
            ([_profile(8, 6, 2, 2000), _profile(40, 10, 1, 2000)], None, 0),
            ([_profile(1, 1, 3), _profile(6, 2, 1)], None, 0),
            ([_profile(0.5, 1, 2), _profile(3, 2, 1)], 16, 2),
            ([_profile(2, 2, 2, 4000), _profile(9, 3, 1, 4000)], 8, 4)]


def test_fit_recovers_the_terms_that_timed_the_samples():
    # an independent reference: samples made by known terms; the fit finds them again
    truth = Terms([0.004, 0.002], [0.1, 0.6], step=[0.0005, 0.0012], exchange=0.001)
    fitted = system_model.fit(_samples_from(truth, PROGRAMS), 2)
    assert fitted.fixed == pytest.approx(truth.fixed, rel=0.05, abs=2e-4)
    assert fitted.slowdown == pytest.approx(truth.slowdown, rel=0.05, abs=0.02)
    assert fitted.step == pytest.approx(truth.step, rel=0.05, abs=5e-5)
    assert fitted.call == pytest.approx([0, 0], abs=2e-4)  # none in the samples
    assert fitted.moved == pytest.approx(0, abs=0.05) and fitted.shared <= 0.55  # none in the samples
    assert fitted.exchange == pytest.approx(truth.exchange, rel=0.1, abs=1e-4)
    assert system_model.fit_error(fitted, _samples_from(truth, PROGRAMS)) < 0.01
    assert system_model.fit([], 2) == Terms.none(2)


def test_an_iterated_calls_cost_once_is_told_from_its_cost_per_step():
    """Samples of iterated programs at two step counts: the fit finds the cost once per call (a_d)
    and the cost per step (e_d) apart, and predicts a call of many steps. At one step count they
    cannot be told apart: e_d takes some of a_d / steps, which a call of four times as many steps
    then counts four times as often."""
    truth = Terms([0.001, 0.001], [0.1, 0.1], step=[2e-5, 6e-5], exchange=5e-4, call=[0.004, 0.002])
    iterated = [(p, d) for p, _, d in PROGRAMS[3:]]
    fitted = system_model.fit(_samples_from(truth, PROGRAMS[:3] + [(p, n, d) for p, d in iterated for n in (4, 64)]), 2)
    assert fitted.call == pytest.approx(truth.call, rel=0.05, abs=1e-4)
    assert fitted.step == pytest.approx(truth.step, rel=0.05, abs=5e-6)
    one_count = system_model.fit(_samples_from(truth, PROGRAMS[:3] + [(p, 16, d) for p, d in iterated]), 2)
    for profiles, depth in iterated:
        for shares in ([1.0, 0.0], [0.5, 0.5]):
            want = system_model.model_seconds(truth, profiles, shares, 256, 4, depth)
            assert system_model.model_seconds(fitted, profiles, shares, 256, 4, depth) == pytest.approx(want, rel=0.01)
    errors = [abs(system_model.model_seconds(one_count, p, [1.0, 0.0], 256, 1, d)
                  / system_model.model_seconds(truth, p, [1.0, 0.0], 256, 1, d) - 1) for p, d in iterated]
    assert max(errors) > 0.05, errors


def test_a_split_that_costs_more_than_it_gains_goes_to_one_device():
    """Two devices as fast as each other: the analytic model halves the grid; where the
    synthetic programs show that running together costs 8 ms more on each device, the system
    model keeps the whole grid on one device, and with no such cost it splits as the analytic one."""
    costly = Terms([0.008, 0.008], [0.3, 0.3])
    fitted = system_model.fit(_samples_from(costly, PROGRAMS), 2)
    even = [_profile(5, 1, 0.5), _profile(5, 1, 0.5)]
    assert split_tuning.predict(even) == pytest.approx([0.5, 0.5])
    found = system_model.predict(fitted, even)
    assert sorted(found.shares) == [0.0, 1.0]
    assert found.seconds == pytest.approx(6.5e-3, rel=0.01)
    free = system_model.fit(_samples_from(Terms.none(2), PROGRAMS), 2)
    assert system_model.predict(free, even).shares == pytest.approx([0.5, 0.5], abs=0.011)
    # a slower second device with a co-running slowdown gets less than the analytic share, but some
    slow = [_profile(10, 0, 0.1), _profile(30, 0, 0.1)]
    analytic = split_tuning.predict(slow)
    mild = system_model.predict(Terms([0.0, 0.0], [0.0, 0.5]), slow)
    assert 0 < mild.shares[1] < analytic[1] - 0.03


def test_iterated_prediction_weighs_exchanges_against_redundant_rows():
    profiles = [_profile(4, 0, 0.2, 1000), _profile(4, 0, 0.2, 1000)]
    # costly exchanges, a shallow reach: the fewest exchanges (largest h)
    found = system_model.predict(Terms([0, 0], [0, 0], [0, 0], 0.002), profiles, steps=16, depth=2)
    assert found.h == 8 and found.shares == pytest.approx([0.5, 0.5], abs=0.011)
    # free exchanges and a deep reach: every step exchanges, nothing is computed twice
    found = system_model.predict(Terms([0, 0], [0, 0], [0, 0], 0.0), profiles, steps=16, depth=40)
    assert found.h == 1
    # the iterated step's host cost counts once per step on every device: one device's alone time
    t = system_model.model_seconds(Terms([0, 0], [0, 0], [0.001, 0.001], 0), profiles, [1.0, 0.0], 16)
    assert t == pytest.approx(0.2e-3 + 16 * (0.001 + 4e-3))
    # and the call's own cost once, whatever the steps; neither counts for one run
    t = system_model.model_seconds(Terms([0, 0], [0, 0], [0.001, 0.001], 0, call=[0.003, 0.003]), profiles,
                                   [1.0, 0.0], 16)
    assert t == pytest.approx(0.2e-3 + 0.003 + 16 * (0.001 + 4e-3))
    assert system_model.model_seconds(Terms([0, 0], [0, 0], [0.001, 0.001], 0, call=[0.003, 0.003]), profiles,
                                      [1.0, 0.0]) == pytest.approx(0.2e-3 + 4e-3)


class _Device:
    def __init__(self, name: str) -> None:
        self.name = name
        self.driver_version = "1"
        self.platform = type("P", (), {"name": "test"})()
        self.max_compute_units = 4


def test_the_model_is_cached_per_device_set_and_damage_is_ignored(tmp_path):
    cache = tmp_path / "models.json"
    a, b = _Device("A"), _Device("B")
    model = system_model.SystemModel(["test | A | 1 | 4 compute units", "test | B | 1 | 4 compute units"], Terms([0.001, 0.002], [0.1, 0.2], [3e-4, 5e-4], 4e-4, 0.3, 0.6, [2e-3, 1e-3]),
                                     0.05, _samples_from(Terms.none(2), PROGRAMS[:1]))
    system_model.store(model, [a, b], cache)
    again = system_model.cached([b, a], cache)  # the same set in another order
    assert again is not None and again.terms == model.terms and len(again.samples) == len(model.samples)
    assert again.terms_for([b, a]) == Terms([0.002, 0.001], [0.2, 0.1], [5e-4, 3e-4], 4e-4, 0.3, 0.6, [1e-3, 2e-3])
    assert system_model.cached([a, _Device("C")], cache) is None
    data = json.loads(cache.read_text())
    key = next(iter(data))
    damaged_call = dict(data[key]["terms"], call=[-1e-3, 0.0])
    for damage in ({"version": 0}, {"terms": {"fixed": [-1, 0]}}, {"fit_error": "x"}, {"terms": None},
                   {"terms": damaged_call}, {"version": 3}):
        broken = dict(data[key], **damage)
        cache.write_text(json.dumps({key: broken}))
        assert system_model.cached([a, b], cache) is None, damage
    cache.write_text("{not json")
    assert system_model.cached([a, b], cache) is None


def test_synthetic_instances_are_valid_programs():
    import imagecl

    for inst in system_model.default_instances((64, 48), 4):
        program = imagecl.compile(inst.source())
        assert program.info.grid and inst.depth == 2 * inst.radius
        args = inst.arguments(np.random.default_rng(0))
        out = program(**args, config="naive")["output"]
        assert out.shape == (inst.height, inst.width)
        if not inst.heavy and inst.pixel == "float":  # a box mean of clamped reads
            from scipy import ndimage

            reference = ndimage.uniform_filter(args["input"].astype(np.float64), 2 * inst.radius + 1, mode="nearest")
            np.testing.assert_allclose(out, reference, rtol=1e-5, atol=1e-5)


# ---- on two PoCL devices ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two():
    worker = Worker("pthread pthread")
    yield worker
    worker.close()


def test_calibration_is_fitted_cached_and_reloaded(two):
    two.run("system_model_calibrates_and_caches")


def test_tune_predicts_with_the_system_model(two):
    two.run("tune_uses_the_system_model")


def test_three_devices_leave_out_the_one_whose_company_costs_more_than_its_rows():
    profiles = [_profile(20, 0, 0.1), _profile(20, 0, 0.1), _profile(60, 0, 0.1)]
    # no co-running cost: all three take part, in proportion to their speed (3 : 3 : 1)
    free = system_model.predict(Terms.none(3), profiles)
    assert free.shares == pytest.approx([3 / 7, 3 / 7, 1 / 7], abs=0.021)
    # the third device adds 9 ms to a call it joins: the other two share
    found = system_model.predict(Terms([0.0, 0.0, 0.009], [0.0, 0.0, 0.0]), profiles)
    assert found.shares == pytest.approx([0.5, 0.5, 0.0], abs=0.021)


def test_shared_moving_is_processor_sharing():
    """Worked by hand: three devices moving 0.1, 0.5 and 1.0 s worth alone, through a host that moves
    at most 1.5x one device's rate. All three share 1.5 (0.5 each) until the first is done at 0.2 s;
    the other two then move at 0.75 each, the second done after its remaining 0.4 at 0.2 + 0.4 / 0.75;
    the last alone at full rate for its remaining 0.5."""
    done = system_model.shared_moving({"a": 0.1, "b": 0.5, "c": 1.0}, 1 / 1.5)
    assert done["a"] == pytest.approx(0.2)
    assert done["b"] == pytest.approx(0.2 + 0.4 / 0.75)
    assert done["c"] == pytest.approx(done["b"] + 0.5)
    assert system_model.shared_moving({"a": 0.3, "b": 0.7}, 0.0) == {"a": 0.3, "b": 0.7}  # no limit
    serial = system_model.shared_moving({"a": 0.3, "b": 0.7}, 1.0)  # one device's rate in all: in turn
    assert serial["b"] == pytest.approx(1.0) and serial["a"] == pytest.approx(0.6)


def test_shared_host_memory_keeps_a_transfer_bound_split_from_halving():
    """Two equal devices whose time is all transfers: with g = 0 a split halves the time; with the
    host moving 1.5x one device's rate (g = 2/3) the split takes 1/1.5 of the whole, and the fit
    finds g again from samples timed that way."""
    even = [_profile(0, 10, 0), _profile(0, 10, 0)]
    assert system_model.model_seconds(Terms.none(2), even, [0.5, 0.5]) == pytest.approx(5e-3)
    shared = Terms([0, 0], [0, 0], shared=2 / 3)
    assert system_model.model_seconds(shared, even, [0.5, 0.5]) == pytest.approx(10e-3 / 1.5)
    programs = [([_profile(1, 8, 0.5), _profile(1, 8, 0.5)], None, 0),
                ([_profile(4, 6, 1), _profile(12, 6, 1)], None, 0),
                ([_profile(2, 3, 1, 2000), _profile(3, 4, 1, 2000)], None, 0)]
    truth = Terms([0.0005, 0.0005], [0.05, 0.05], shared=0.7)
    fitted = system_model.fit(_samples_from(truth, programs), 2)
    assert fitted.shared == pytest.approx(0.7, abs=0.03)


def test_an_iterated_program_moves_its_band_once():
    """An iterated run uploads its band and downloads it once, however many steps: the alone-profile's
    transfers count once, its kernel at every step."""
    profiles = [_profile(2, 6, 1), _profile(2, 6, 1)]
    t = system_model.model_seconds(Terms.none(2), profiles, [1.0, 0.0], steps=16)
    assert t == pytest.approx(1e-3 + 6e-3 + 16 * 2e-3)
    half = system_model.model_seconds(Terms.none(2), profiles, [0.5, 0.5], steps=16)
    assert half == pytest.approx(1e-3 + 3e-3 + 16 * 1e-3)


def test_a_device_takes_part_only_where_it_gains_the_margin():
    """Two fast devices and a slow one: the third's best share gains under SPLIT_MARGIN, so the
    prediction leaves it out though the model puts the three-device split a little ahead."""
    profiles = [_profile(10, 0, 1), _profile(10, 0, 1), _profile(200, 0, 1)]
    terms = Terms([0, 0, 0], [0, 0, 0])
    three = min(system_model.compositions(3, 0.02), key=lambda sh: system_model.model_seconds(terms, profiles, sh))
    assert three[2] > 0  # the model alone would give the slow device a share
    found = system_model.predict(terms, profiles)
    assert found.shares[2] == 0 and found.shares[0] == pytest.approx(0.5, abs=0.011)
    # a slow device that gains more than the margin does take part
    profiles[2] = _profile(25, 0, 1)
    assert system_model.predict(terms, profiles).shares[2] > 0


def test_devices_of_one_model_share_their_terms_and_their_profile():
    """Two GPUs of one model: samples timed by one set of terms plus noise that favours the
    second device. Fitted apart, the terms differ and the split tilts to one GPU by more than
    their profiles do; tied (groups_of), both get one set of terms and the pooled profile
    splits them evenly, while a device alone is still judged by its own profile."""
    truth = Terms([0.002, 0.002], [0.2, 0.2], step=[0.0004, 0.0004])
    samples = _samples_from(truth, PROGRAMS)
    noisy = [Sample(s.profiles, s.shares, s.steps, s.h, s.depth,
                    s.seconds * (1.12 if s.shares[0] > s.shares[1] else 1.0)) for s in samples]
    apart = system_model.fit(noisy, 2)
    tied = system_model.fit(noisy, 2, groups=[0, 0])
    assert tied.fixed[0] == tied.fixed[1] and tied.slowdown[0] == tied.slowdown[1] and tied.step[0] == tied.step[1]
    assert apart.fixed != pytest.approx(apart.fixed[::-1], rel=0.1) or \
        apart.slowdown != pytest.approx(apart.slowdown[::-1], rel=0.1)
    # one model's profiles, a few per cent apart by the timing's noise
    twins = [_profile(10, 20, 1.0), _profile(10.6, 20.4, 1.1)]
    split = system_model.predict(tied, twins, groups=[0, 0])
    assert split.shares == pytest.approx([0.5, 0.5], abs=1e-9)
    assert system_model.predict(tied, twins).shares[0] > 0.5  # without groups the noise tilts it
    # alone, each device keeps its own profile: where no split pays, the faster twin is chosen
    costly = Terms([0.05, 0.05], [0.0, 0.0])
    assert system_model.predict(costly, twins, groups=[0, 0]).shares == [1.0, 0.0]
    assert system_model.pooled(twins, None) == twins


def test_groups_of_gives_devices_of_one_key_the_first_ones_index():
    from types import SimpleNamespace

    def device(name, driver="1.0", units=8):
        return SimpleNamespace(name=name, driver_version=driver, platform=SimpleNamespace(name="P"),
                               max_compute_units=units)

    devices = [device("gpu"), device("cpu"), device("gpu"), device("gpu", "2.0"), device("gpu", units=4)]
    assert system_model.groups_of(devices) == [0, 1, 0, 3, 4]  # another driver, or another size: apart
