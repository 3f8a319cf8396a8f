"""Censored measurements (tuner/censor.py): a configuration whose checked launch is over K x the
best so far is stored as `slow` (one launch, no time), never taken for a best; an audit sample of
them is timed fully anyway."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import imagecl
from imagecl.cli import main as cli_main
from imagecl.runtime.synthetic import synthetic_arguments
from imagecl.runtime.timing import MIN_TIMED, probe_global
from imagecl.tuner import formats, importing
from imagecl.tuner.censor import SLOW, CensorRule, default_probe
from imagecl.tuner.engine import MeasureOptions, Measurer
from imagecl.tuner.problem import Parameter
from imagecl.tuner.store import Record, Store

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SHAPE = (24, 40)
TINY = 1e-9  # a "best so far" that no launch beats: every checked launch is over K x it


def _measure(tmp_path, audit_every: int, count: int = 3, db: str = "r.db"):
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    arguments, _ = synthetic_arguments(prog, SHAPE, {}, seed=0)
    options = MeasureOptions(timeout=60, censor=4, audit_every=audit_every, build_workers=1,
                             cache_dir=tmp_path / "cache")
    store = Store(tmp_path / db)
    measurer = Measurer(prog, arguments, store, None, options)
    configs = measurer.space.random(count, seed=5)  # valid ones
    measurer.best = TINY
    summary = measurer.measure(configs)
    return store, measurer, configs, summary


def test_a_censored_configuration_is_stored_as_slow_and_never_a_best(tmp_path, capsys):
    store, measurer, configs, summary = _measure(tmp_path, audit_every=0)
    try:
        records = [r for r in store.records(measurer.run) if r.status != "invalid_config"]
        assert records and all(r.status == SLOW for r in records), [r.status for r in records]
        for r in records:
            assert r.time is None and len(r.times) == 1 and r.times[0] > 4 * TINY  # one launch, kept
            assert r.limit == pytest.approx(4 * TINY) and r.verified and "slow" in r.error
        assert summary.best_time is None and summary.statuses[SLOW] == len(records) and not summary.audits
        # settled: a resumed run does not launch them again
        again = measurer.measure(configs)
        assert again.measured == 0 and again.skipped == len(records)
        # and a fast configuration measured later is the best, whatever the slow ones' single launch
        store.add(measurer.run, Record(dict(records[0].config, wg_x=1), "ok", 0.5, [0.5, 0.5, 0.5], 0.0,
                                       verified=True))
    finally:
        measurer.close()
        store.close()
    assert cli_main(["results", "--db", str(tmp_path / "r.db")]) == 0
    shown = capsys.readouterr().out
    assert f"slow {len(records)}" in shown and "500.0000 ms" in shown
    assert shown.count(" ms  {") == 1  # only the timed record is listed as a time
    # a fresh measurer on this store starts from the stored best, not from a slow one's launch
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    arguments, _ = synthetic_arguments(prog, SHAPE, {}, seed=0)
    with Store(tmp_path / "r.db") as again_store, \
            Measurer(prog, arguments, again_store, None, MeasureOptions(timeout=60, censor=4)) as fresh:
        fresh.measure(configs)
        assert fresh.best == 0.5


def test_an_audited_configuration_is_timed_fully_and_reported(tmp_path):
    store, measurer, configs, summary = _measure(tmp_path, audit_every=1)
    try:
        records = [r for r in store.records(measurer.run) if r.status != "invalid_config"]
        assert records and all(r.status == "ok" and len(r.times) >= MIN_TIMED for r in records)
        assert len(summary.audits) == len(records)
        for audit in summary.audits:
            assert audit.best == TINY and audit.first > 4 * TINY and audit.ratio == audit.median / TINY
    finally:
        measurer.close()
        store.close()


def test_the_audit_sample_is_deterministic_and_about_one_in_n():
    rule = CensorRule(4, 50)
    keys = [json.dumps({"a": i}) for i in range(20_000)]
    picked = [k for k in keys if rule.audited(k)]
    assert 300 < len(picked) < 500 and picked == [k for k in keys if CensorRule(4, 50).audited(k)]
    assert not any(CensorRule(4, 0).audited(k) for k in keys[:100])
    assert rule.bound(None) is None and rule.bound(0.002) == pytest.approx(0.008)
    assert not CensorRule(0).censors and CensorRule(0).bound(1.0) == pytest.approx(4.0)  # the rule's own K
    for bad in (1, 0.5, -2):
        with pytest.raises(ValueError, match="censoring factor"):
            MeasureOptions(censor=bad)


def test_a_slow_record_is_exported_as_a_failure_and_imported_back_as_slow(tmp_path):
    params = [Parameter("wg_x", [1, 2])]
    measurements = [{"config": {"wg_x": 1}, "time_seconds": 0.002, "status": "ok", "times_seconds": [0.002] * 3},
                    {"config": {"wg_x": 2}, "time_seconds": None, "status": SLOW, "times_seconds": [0.0001],
                     "error": "slow: its checked launch took 0.1 ms, over 4 x the best so far"}]
    path = tmp_path / "cache.json"
    formats.write_kernel_tuner_cache(path, params, measurements)
    data = json.loads(path.read_text())
    entry = data["cache"]["2"]
    assert entry["time"] == "RuntimeFailedConfig" and entry["times"] == [] and entry["imagecl_status"] == SLOW
    back = {c["wg_x"]: m for c, m in importing.plan_import(data).configs()}
    assert back[2].status == SLOW and back[2].seconds is None and back[1].seconds == pytest.approx(0.002)
    t4 = tmp_path / "t4.json"
    formats.write_t4(t4, params, measurements)
    slow = [r for r in json.loads(t4.read_text())["results"] if r["invalidity"] != "correct"]
    assert len(slow) == 1 and slow[0]["times"]["runtimes"] == []  # no time published


def test_the_exhaustive_benchmark_reports_sources_censoring_and_the_audit(tmp_path):
    """benchmarks/exhaustive.py at a small size: a warm-up sample, then the rest with censoring;
    its JSON gives the space's distinct sources, the censored count and the audit."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "exhaustive.py"
    out = tmp_path / "ex.json"
    done = subprocess.run([sys.executable, str(script), "--program", str(EXAMPLES / "sobel.icl"), "--size", "40x24",
                           "--limit", "16", "--warm", "4", "--censor", "4", "--audit-every", "1", "--workers", "1",
                           "--db", str(tmp_path / "x.db"), "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["stored"] == 16 == sum(result["statuses"].values()) and result["complete"]
    assert 0 < result["distinct_sources_space"] <= 16
    censor = result["censor"]
    assert censor["probe"] == 0.0  # PoCL: no probe unless asked (its first launches compile)
    assert censor["censored"] == result["statuses"].get(SLOW, 0) == 0  # every would-be-censored one audited
    assert censor["audited"] == len(result["this_call"]["audits"])
    if censor["audited"]:
        assert censor["audit_worst_ratio"] == min(a["ratio"] for a in result["this_call"]["audits"])
    assert result["best_ms"] is not None and result["statuses"].get("ok", 0) >= 1


def test_a_probe_launches_a_quarter_on_a_gpu_and_nothing_on_pocl():
    from types import SimpleNamespace

    def device(platform):
        return SimpleNamespace(platform=SimpleNamespace(name=platform))

    assert default_probe(device("NVIDIA CUDA")) == 0.25
    assert default_probe(device("Portable Computing Language")) == 0.0


def test_probe_global_cuts_the_axis_with_the_most_work_groups():
    assert probe_global((64, 256), (8, 4), 0.25) == (64, 64)  # 8 x 64 groups: y cut to 16
    assert probe_global((512, 16), (8, 4), 0.25) == (128, 16)
    assert probe_global((8, 4, 64), (8, 4, 2), 0.5) == (8, 4, 32)
    assert probe_global((8, 12), (8, 4), 0.25) is None  # 3 groups at most: nothing to cut
    assert probe_global((64, 64), None, 0.25) is None  # the driver's work-group size
    assert probe_global((64, 64), (8, 8), 0.0) is None
    assert probe_global((64, 256), (8, 4), 0.25, min_groups=200) is None  # 8 x 16 groups left: one wave or so
    assert probe_global((64, 256), (8, 4), 0.25, min_groups=128) == (64, 64)
    with pytest.raises(ValueError, match="probe"):
        CensorRule(4, 50, 1.0)


PROBED = [{"wg_x": 4, "wg_y": 2, "px_x": 1, "px_y": 1}, {"wg_x": 2, "wg_y": 4, "px_x": 2, "px_y": 1, "local_input": 1},
          {"wg_x": 4, "wg_y": 1, "px_x": 1, "px_y": 2, "interleaved": 1}]


def _probed(tmp_path, audit_every: int):
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    # large enough that a quarter of the work-groups is several per compute unit (Session.time)
    arguments, _ = synthetic_arguments(prog, (96, 160), {}, seed=0)
    options = MeasureOptions(timeout=60, censor=4, audit_every=audit_every, probe=0.25, build_workers=1,
                             cache_dir=tmp_path / "cache")
    with Store(tmp_path / "p.db") as store, Measurer(prog, arguments, store, None, options) as measurer:
        measurer.best = TINY
        summary = measurer.measure(PROBED)
        return list(store.records(measurer.run)), summary


def test_a_probe_over_the_bound_censors_before_the_checked_launch(tmp_path):
    records, summary = _probed(tmp_path, audit_every=0)
    assert len(records) == len(PROBED) and all(r.status == SLOW for r in records)
    for r in records:  # a quarter of the work-groups, unchecked: said so
        assert not r.verified and "of its work-groups" in r.error and len(r.times) == 1 and r.time is None


def test_an_audited_configuration_reports_its_probe_and_its_full_time(tmp_path):
    records, summary = _probed(tmp_path, audit_every=1)
    assert all(r.status == "ok" and r.verified for r in records)  # timed in full, outputs checked
    assert len(summary.audits) == len(PROBED)
    for audit in summary.audits:
        assert audit.probe is not None and audit.probe > 0 and audit.to_json()["probe_over_median"] > 0


# ---- the one "slower than the best" rule, at both of its former call sites in the worker ------------

class ThresholdRunner:
    """A runner whose every launch takes `seconds` but one in three 3x that (a large spread: a
    contender is timed again round after round), and which stops after a checked launch over
    `stop_above` as Session.time does."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.calls = seconds, 0

    def build_input(self, config):
        return "src", ()

    def time(self, config, repeats=3, warmup=1, read_outputs=True, max_seconds=None, verify=False,
             stop_above=None, probe=0.0):
        from imagecl.runtime.timing import Timing

        self.calls += 1
        timing = Timing([], first=self.seconds if verify else None)
        if verify and stop_above is not None and self.seconds > stop_above:
            timing.censored = True
            return timing
        timing.times = [self.seconds if i % 3 else 3 * self.seconds for i in range(1, repeats + 1)]
        return timing


BEST = 1e-3


@pytest.mark.parametrize("factor", [0.0, 4.0, 8.0])  # censoring off (the rule's own K), on at K=4, on at K=8
@pytest.mark.parametrize("side", [1 - 1e-6, 1 + 1e-6])  # just under, just over K x the best
@pytest.mark.parametrize("audit_every", [0, 1])
def test_one_rule_decides_slow_and_contender_at_the_same_bound(factor, side, audit_every):
    from imagecl.tuner.censor import SLOWER
    from imagecl.tuner.worker import _measure_one

    rule = CensorRule(factor, audit_every)
    k = factor or SLOWER
    assert rule.k == k and rule.bound(BEST) == pytest.approx(k * BEST)
    runner = ThresholdRunner(side * k * BEST)
    result = _measure_one({"x": 1}, runner, None, None, 3, 12, 0.1, {"max_seconds": 100.0}, BEST, censor=rule)
    over = side > 1
    if over and factor and not audit_every:  # censored: one checked launch, recorded as slow
        assert result["status"] == SLOW and result["time"] is None and runner.calls == 1
        assert result["times"] == [runner.seconds] and result["limit"] == pytest.approx(k * BEST)
        assert f"over {k:g} x the best" in result["error"]
        return
    assert result["status"] == "ok" and result["time"] == pytest.approx(runner.seconds)
    if over:  # not a contender: one extra round only, whatever its spread
        assert runner.calls == 2 and len(result["times"]) == 6
    else:  # a contender: rounds until max_repeats
        assert runner.calls > 2 and len(result["times"]) >= 12
    # an audited configuration over the bound is timed (not censored), and its evidence kept
    assert ("audit" in result) == bool(over and factor and audit_every)
    if "audit" in result:
        assert result["audit"]["first"] == runner.seconds and result["audit"]["best"] == BEST


def test_the_rule_needs_a_best_and_times_everything_without_one():
    from imagecl.tuner.worker import _measure_one

    assert CensorRule(4).bound(None) is None and CensorRule(4).bound(float("inf")) is None
    assert not CensorRule.over(1.0, None) and not CensorRule.over(None, 1.0)
    runner = ThresholdRunner(1.0)
    result = _measure_one({"x": 1}, runner, None, None, 3, 12, 0.1, {"max_seconds": 100.0}, float("inf"),
                          censor=CensorRule(4, 0))
    assert result["status"] == "ok" and runner.calls > 2  # the first result of a run: a contender
