"""The measurement engine: verified timings, classified failures, watchdog, resumable store."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl.runtime.session import outputs_match
from imagecl.tuner.buildcache import BuildCache, build_key
from imagecl.tuner.engine import MeasureOptions, Measurer, interleaved_rounds, measure
from imagecl.tuner.store import Store

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

HANG = """
#pragma imcl tunable(SPIN: 0, 1)
#pragma imcl grid(a, o)
void spin(Image<int> a, Image<int> o) {
    int v = a[idx][idy];
    o[idx][idy] = v;
    while (SPIN == 1 && v >= 0) {    // never ends for SPIN == 1: v stays non-negative
        v = (v * 3 + 1) & 0x7fffffff;
        o[idx][idy] = v;
    }
}
"""


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "imagecl", *args], capture_output=True, text=True, **kw)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("IMAGECL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_measures_verifies_and_resumes(tmp_path, cache_dir):
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    args = {"input": np.random.default_rng(0).random((24, 40), dtype=np.float32)}
    configs = prog.space_for(problem_shape=(24, 40)).random(4, seed=3)
    # a launch-only sibling (the work-group size is compiled in only with local memory)
    base = next(c for c in configs if not c["local_input"])
    configs.append(dict(base, wg_x=2 if base["wg_x"] != 2 else 4))
    db = tmp_path / "r.db"
    with Store(db) as store:
        summary = measure(prog, args, configs, store)
        assert summary.measured == 5 and summary.statuses["ok"] == 5
        assert summary.sources == 4  # the sibling shares its source
        records = list(store.records())
    assert len(records) == 5
    for r in records:
        assert r.status == "ok" and r.verified and r.time > 0 and len(r.times) >= 3  # never one launch
        assert r.time == pytest.approx(float(np.median(r.times)))
        assert r.device and r.driver and r.problem_size == "40x24"
    assert all(r.spread == pytest.approx((max(r.times) - min(r.times)) / r.time) for r in records)
    with Store(db) as store:
        again = measure(prog, args, configs, store)
    assert again.measured == 0 and again.skipped == 5


def test_retiming_rounds_take_the_contenders_in_turn_forward_then_backward():
    assert interleaved_rounds(3, 7, 3) == [(0, 3), (1, 3), (2, 3), (2, 2), (1, 2), (0, 2), (0, 2), (1, 2), (2, 2)]
    assert interleaved_rounds(2, 2, 5) == [(0, 1), (1, 1), (1, 1), (0, 1)]  # never a round without a launch
    assert interleaved_rounds(4, 15, 1) == [(i, 15) for i in range(4)]  # one round: one contender after another
    for count, repeats, rounds in [(1, 15, 5), (3, 7, 3), (5, 4, 9)]:
        plan = interleaved_rounds(count, repeats, rounds)
        assert [sum(n for g, n in plan if g == i) for i in range(count)] == [repeats] * count


def test_retime_adds_launches_in_rounds_and_keeps_the_median_of_all(tmp_path, cache_dir):
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    args = {"input": np.random.default_rng(0).random((24, 40), dtype=np.float32)}
    configs = prog.space_for(problem_shape=(24, 40)).random(3, seed=5)
    with Store(tmp_path / "r.db") as store, Measurer(prog, args, store) as measurer:
        measurer.measure(configs)
        before = measurer.stored()
        updated = measurer.retime(configs[:2], repeats=20, rounds=3)
        after = measurer.stored()
        with pytest.raises(ValueError, match="rounds"):
            measurer.retime(configs[:2], repeats=20, rounds=0)
        again = measurer.retime(configs[:2], repeats=20)  # timed at length already: not again
        assert {k: r.times for k, r in again.items()} == {k: r.times for k, r in after.items() if k in updated}
    assert len(updated) == 2
    for key, record in updated.items():
        assert len(before[key].times) < 20 and len(record.times) == len(before[key].times) + 20
        assert record.time == pytest.approx(float(np.median(record.times)))
        assert (after[key].time, after[key].times) == (record.time, record.times)
    untouched = next(k for k in before if k not in updated)
    assert after[untouched].times == before[untouched].times


def test_watchdog_stops_a_hanging_kernel_and_the_run_goes_on(tmp_path, cache_dir):
    prog = imagecl.compile(HANG, "spin.icl")
    args = {"a": np.arange(12, dtype=np.int32).reshape(3, 4)}
    configs = [{"SPIN": 1}, {"SPIN": 0}]
    with Store(tmp_path / "h.db") as store:
        summary = measure(prog, args, configs, store, options=MeasureOptions(timeout=8))
        records = {r.config["SPIN"]: r for r in store.records()}
    assert records[1].status == "timeout" and records[1].time is None and "killed" in records[1].error
    assert records[0].status == "ok" and records[0].time > 0
    assert summary.statuses == {"timeout": 1, "ok": 1}


def test_build_errors_are_recorded_with_the_log(tmp_path, cache_dir):
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    args = {"input": np.ones((8, 8), np.float32)}
    config = prog.space_for(problem_shape=(8, 8)).complete({"px_x": 2})
    device = imagecl.select_device()
    source = prog.source_of(prog.plan(config))
    # the compiler's verdict on this source, as the build cache keeps it
    BuildCache().put_error(build_key(source, (), device.name.strip(), device.driver_version.strip()),
                           "error: something the driver did not like")
    with Store(tmp_path / "b.db") as store:
        measure(prog, args, [config], store, options=MeasureOptions(prebuild=False))
        (record,) = list(store.records())
    assert record.status == "build_error" and "something the driver did not like" in record.error


def test_invalid_configurations_are_recorded_not_measured(tmp_path, cache_dir):
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    args = {"input": np.ones((8, 8), np.float32)}
    with Store(tmp_path / "i.db") as store:
        summary = measure(prog, args, [{"px_x": 3}, {"nope": 1}], store)
        records = list(store.records())
    assert summary.measured == 0
    assert sorted(r.status for r in records) == ["invalid_config", "invalid_config"]
    assert any("'px_x' must be one of" in r.error for r in records)


def test_output_verification_catches_differences():
    ref = {"o": np.arange(6, dtype=np.float32).reshape(2, 3)}
    assert outputs_match({"o": ref["o"].copy()}, ref) is None
    wrong = ref["o"].copy()
    wrong[1, 2] += 0.5
    assert "differs at (1, 2)" in outputs_match({"o": wrong}, ref)
    assert outputs_match({"o": ref["o"][:1]}, ref) is not None
    # an infinite reference value does not widen the tolerance of the finite ones
    with_inf = {"o": np.array([np.inf, 1.0, 2.0], np.float32)}
    assert outputs_match({"o": np.array([np.inf, 1.0, 2.0], np.float32)}, with_inf) is None
    assert "differs at (1,)" in outputs_match({"o": np.array([np.inf, 5.0, 2.0], np.float32)}, with_inf)


def test_kill_during_a_run_loses_nothing_and_resumes(tmp_path, cache_dir):
    db = tmp_path / "k.db"
    cmd = [sys.executable, "-m", "imagecl", "measure", str(EXAMPLES / "box_blur.icl"), "--size", "33x21",
           "--random", "8", "--seed", "2", "--db", str(db)]
    env = dict(os.environ)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline:  # wait until some results are committed, then kill -9 the whole run
        time.sleep(0.5)
        if db.exists():
            try:
                with sqlite3.connect(db) as con:
                    if con.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] >= 2:
                        break
            except sqlite3.Error:
                pass
        if proc.poll() is not None:
            break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        before = con.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    assert before >= 2
    resumed = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{before} already stored" in resumed.stdout or before == 8
    listing = _cli("results", "--db", str(db), "--json")
    records = json.loads(listing.stdout)
    assert len(records) == 8
    assert len({json.dumps(r["config"], sort_keys=True) for r in records}) == 8
    for r in records:
        assert {"config", "status", "time"} <= set(r) and isinstance(r["config"], dict)
        assert (r["time"] is None) == (r["status"] != "ok")


def test_measure_cli_errors(tmp_path):
    icl = str(EXAMPLES / "sobel.icl")
    db = str(tmp_path / "e.db")
    for args in (("--size", "abc", "--random", "2"), ("--size", "8x8x8", "--random", "2"),
                 ("--size", "8x8", "--configs", str(tmp_path / "missing.json")),
                 ("--size", "8x8", "--random", "0")):
        result = _cli("measure", icl, *args, "--db", db)
        assert result.returncode == 1 and "Traceback" not in result.stderr, (args, result.stderr)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = _cli("measure", icl, "--size", "8x8", "--configs", str(bad), "--db", db)
    assert result.returncode == 1 and "not valid JSON" in result.stderr
    missing = _cli("results", "--db", str(tmp_path / "none.db"))
    assert missing.returncode == 1 and "no such results database" in missing.stderr
