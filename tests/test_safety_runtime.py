"""Hangs, honest timeouts and resource checks (issue 16, parts 2, 5 and 6).

Hanging kernels run with timeouts of 1-2 s, so each such test takes seconds, not minutes.
"""
from __future__ import annotations

import math
import sqlite3
import time
import tracemalloc
from types import SimpleNamespace

import numpy as np
import pytest

import imagecl
from imagecl.cli import main
from imagecl.errors import ArgumentError, ExecutionError, ImageCLError
from imagecl.runtime import memory
from imagecl.runtime.memory import Buffer, ResourceError, check_device, check_host
from imagecl.runtime.synthetic import synthetic_arguments
from imagecl.tuner.engine import MeasureOptions, Measurer, measure
from imagecl.tuner.store import Record, Store, canonical_config

# never ends for T == 1 (v stays non-negative); T's first value, 1, is the naive variant's
HANG_FIRST = """
#pragma imcl tunable(T: 1, 0)
#pragma imcl grid(a, o)
void spin(Image<int> a, Image<int> o) {
    int v = a[idx][idy];
    o[idx][idy] = v;
    while (T == 1 && v >= 0) {
        v = (v * 3 + 1) & 0x7fffffff;
        o[idx][idy] = v;
    }
}
"""
HANG_SECOND = HANG_FIRST.replace("tunable(T: 1, 0)", "tunable(T: 0, 1)")
HANG_ALWAYS = HANG_FIRST.replace("tunable(T: 1, 0)", "tunable(T: 1, 2)").replace("T == 1", "T >= 1")

COPY = """
#pragma imcl grid(a, o)
void copy(Image<float> a, Image<float> o) {
    o[idx][idy] = a[idx][idy] * 2.0f;
}
"""

HUGE_ARRAY = """
#pragma imcl grid(a, o)
void big(Image<float> a, Image<float> o, float f[0x7fffffff]) {
    o[idx][idy] = a[idx][idy] + f[idx];
}
"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("IMAGECL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _ints(shape=(4, 6)):
    return {"a": np.arange(math.prod(shape), dtype=np.int32).reshape(shape)}


def _by_t(store):
    out = {}
    for r in store.records():
        out.setdefault(r.config["T"], []).append(r)
    return out


# ---- hangs ---------------------------------------------------------------------------------------

def test_a_hanging_naive_variant_gives_way_to_another_reference_and_the_rest_is_measured(tmp_path, cache_dir):
    prog = imagecl.compile(HANG_FIRST, "spin.icl")
    configs = [{"T": 0}, {"T": 1}, {"T": 0, "wg_x": 2}]
    started = time.time()
    with Store(tmp_path / "h.db") as store:
        summary = measure(prog, _ints(), configs, store, device="cpu", options=MeasureOptions(timeout=2))
        records = _by_t(store)
    elapsed = time.time() - started
    assert elapsed < 60, elapsed  # it waited 120 s for the reference and recorded nothing
    assert [r.status for r in records[0]] == ["ok", "ok"] and all(r.verified for r in records[0])
    assert [r.status for r in records[1]] == ["timeout"] and records[1][0].limit == 2
    (note,) = summary.notes
    assert "with T=1" in note and "did not finish within 2 s" in note and "with T=0 instead" in note


def test_a_reference_that_never_finishes_is_a_clear_error_not_a_long_wait(tmp_path, cache_dir):
    prog = imagecl.compile(HANG_ALWAYS, "spin.icl")
    started = time.time()
    with Store(tmp_path / "h.db") as store:
        with pytest.raises(ImageCLError, match=r"^neither the naive variant of 'spin' with T=1 nor the naive variant "
                                               r"of 'spin' with T=2, the reference every variant is checked against, "
                                               r"did not finish within 1 s"):
            measure(prog, _ints(), [{"T": 1}], store, device="cpu", options=MeasureOptions(timeout=1))
        assert list(store.records()) == []
    assert time.time() - started < 40


def test_the_cli_measures_a_program_whose_naive_variant_hangs(tmp_path, cache_dir, capsys):
    source = tmp_path / "spin.icl"
    source.write_text(HANG_FIRST)
    db = tmp_path / "m.db"
    configs = tmp_path / "configs.json"
    configs.write_text('[{"T": 1}, {"T": 0}]')
    assert main(["measure", str(source), "--size", "6x4", "--configs", str(configs), "--db", str(db),
                 "--timeout", "2", "--device", "cpu"]) == 0
    captured = capsys.readouterr()
    note = ("note: the naive variant of 'spin' with T=1 (the reference every variant is checked against) did not "
            "finish within 2 s; variants are checked against the naive variant of 'spin' with T=0 instead")
    assert note in captured.err
    assert "2 measured (ok 1, timeout 1)" in captured.out
    with Store(db) as store:
        statuses = sorted((r.config["T"], r.status, r.limit) for r in store.records())
    assert statuses == [(0, "ok", None), (1, "timeout", 2.0)]


def test_tune_keeps_the_default_when_every_pick_of_the_search_times_out(tmp_path, cache_dir, capsys, monkeypatch):
    from imagecl.tuner import simulate
    from imagecl.tuner.strategies import Result

    def picks_that_hang(problem, budget, rng):
        history = [({"T": 1, "wg_x": w}, problem.evaluate({"T": 1, "wg_x": w})) for w in (2, 4)][:budget]
        return Result(None, None, len(history), history)

    monkeypatch.setattr(simulate, "resolve_strategy", lambda name: ("hanging-picks", picks_that_hang))
    source = tmp_path / "spin.icl"
    source.write_text(HANG_SECOND)
    out = tmp_path / "out"
    code = main(["tune", str(source), "--size", "6x4", "--budget", "2", "--timeout", "1", "--confirm", "0",
                 "--device", "cpu", "--no-transfer", "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "none of the 2 configurations the search measured ran successfully" in captured.err
    assert '"T": 0' in captured.out and "measurements (the naive variant)" in captured.out
    with Store(out / "measurements.db") as store:
        statuses = sorted((r.config["T"], r.status) for r in store.records())
    assert statuses == [(0, "ok"), (1, "timeout"), (1, "timeout")]


def test_a_hanging_reference_kernel_is_a_clear_error(tmp_path, cache_dir):
    from imagecl.tuner.kernel import Output, TunableKernel

    k = TunableKernel("__kernel void k(__global int* o) { o[get_global_id(0)] = X; }", "k", global_size=(8,))
    k.add_parameter("X", [1, 2])
    k.set_arguments([Output(np.zeros(8, np.int32))])
    k.set_reference_kernel("__kernel void ref(__global int* o) { int v = 1; while (v >= 0) {"
                           " v = (v * 3 + 1) & 0x7fffffff; o[get_global_id(0)] = v; } }", "ref", global_size=(8,))
    started = time.time()
    with pytest.raises(ImageCLError, match=r"^the reference kernel 'ref', the reference every variant is checked "
                                           r"against, did not finish within 1 s"):
        k.tune(device="cpu", store=tmp_path / "k.db", timeout=1)
    assert time.time() - started < 30


# ---- timeouts with their limit ------------------------------------------------------------------

def _run_key(prog, shape):
    from imagecl.tuner.target import run_key

    return run_key(prog, imagecl.select_device("cpu"), shape)


def test_done_keys_retries_timeouts_only_when_a_run_allows_more_time(tmp_path):
    prog = imagecl.compile(COPY, "copy.icl")
    run = _run_key(prog, (4, 4))
    with Store(tmp_path / "d.db") as store:
        store.add(run, Record({"wg_x": 1}, "timeout", None, limit=2.0))
        store.add(run, Record({"wg_x": 2}, "ok", 1e-3))
        store.add(run, Record({"wg_x": 4}, "timeout", None))  # limit unknown
        store.add(run, Record({"wg_x": 8}, "build_error", None))
        keys = {w: canonical_config({"wg_x": w}) for w in (1, 2, 4, 8)}
        assert store.done_keys(run) == set(keys.values())  # no timeout given: all stored
        assert store.done_keys(run, 2.0) == {keys[1], keys[2], keys[8]}  # the same limit: not again
        assert store.done_keys(run, 1.0) == {keys[1], keys[2], keys[8]}  # a smaller one: not again
        assert store.done_keys(run, 2.5) == {keys[2], keys[8]}  # more time: the timeout is measured again


def test_a_stored_timeout_is_measured_again_with_a_larger_timeout_and_replaced(tmp_path, cache_dir):
    prog = imagecl.compile(COPY, "copy.icl")
    args = {"a": np.random.default_rng(0).random((8, 8), dtype=np.float32)}
    config = prog.space_for("cpu", (8, 8)).complete({"wg_x": 2})
    with Store(tmp_path / "r.db") as store, Measurer(prog, args, store, "cpu",
                                                     MeasureOptions(timeout=0.5)) as small:
        store.add(small.run, Record(config, "timeout", None, error="no result within 0.5 s", limit=0.5))
        same = small.measure([config])
        assert (same.skipped, same.measured) == (1, 0)
        with Measurer(prog, args, store, "cpu", MeasureOptions(timeout=20)) as large:
            again = large.measure([config])
            assert (again.skipped, again.measured) == (0, 1)
            (record,) = list(store.records())
            assert record.status == "ok" and record.time > 0 and record.limit is None


def test_a_search_measures_a_stored_timeout_again_when_it_allows_more_time(tmp_path, cache_dir):
    from imagecl.tuner.live import LiveProblem

    prog = imagecl.compile(COPY, "copy.icl")
    args = {"a": np.random.default_rng(0).random((8, 8), dtype=np.float32)}
    space = prog.space_for("cpu", (8, 8))
    stale, kept = space.complete({"wg_x": 2}), space.complete({"wg_x": 4})
    with Store(tmp_path / "s.db") as store, Measurer(prog, args, store, "cpu",
                                                     MeasureOptions(timeout=20)) as measurer:
        store.add(measurer.run, Record(stale, "timeout", None, limit=0.5))
        store.add(measurer.run, Record(kept, "timeout", None, limit=30.0))
        problem = LiveProblem(space, measurer)
        assert problem.evaluate(stale) > 0  # 0.5 s was less than this search allows: measured again
        assert problem.evaluate(kept) is None  # 30 s was more: it stands
        assert sorted(r.status for r in store.records()) == ["ok", "timeout"]


def test_an_older_database_gets_the_limit_column_and_its_timeouts_are_retried(tmp_path):
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE measurements (id INTEGER PRIMARY KEY, program_hash TEXT NOT NULL, program_name TEXT NOT NULL,
            device TEXT NOT NULL, driver TEXT NOT NULL, problem_size TEXT NOT NULL, config TEXT NOT NULL,
            config_key TEXT NOT NULL, source_hash TEXT, status TEXT NOT NULL, time REAL, times TEXT, spread REAL,
            error TEXT, verified INTEGER NOT NULL DEFAULT 0, timestamp REAL NOT NULL,
            UNIQUE (program_hash, device, driver, problem_size, config_key));
        INSERT INTO measurements (program_hash, program_name, device, driver, problem_size, config, config_key,
            status, timestamp) VALUES ('h', 'p', 'd', 'v', '4x4', '{"wg_x": 1}', '{"wg_x":1}', 'timeout', 0);
    """)
    con.commit()
    con.close()
    with Store(db) as store:
        (run,) = store.runs()
        (record,) = list(store.records(run))
        assert record.status == "timeout" and record.limit is None
        assert store.done_keys(run, 60.0) == set()


# ---- validating timeouts ----------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "soon"])
@pytest.mark.parametrize("command", ["measure", "tune", "run", "tune-kernel"])
def test_invalid_timeouts_are_usage_errors(command, bad, tmp_path, capsys):
    args = {"measure": ["measure", "x.icl", "--size", "4x4", "--random", "1", "--db", "x.db"],
            "tune": ["tune", "x.icl", "--size", "4x4", "-o", "out"],
            "run": ["run", "x.icl"],
            "tune-kernel": ["tune-kernel", "x.py", "-o", "out"]}[command]
    with pytest.raises(SystemExit) as exit_:
        main(args + [f"--timeout={bad}"])
    err = capsys.readouterr().err
    assert exit_.value.code == 1
    assert "usage:" in err and f"argument --timeout: needs a finite number of seconds > 0, got '{bad}'" in err


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "5", True, None])
def test_invalid_timeouts_are_rejected_by_the_api(bad, tmp_path):
    with pytest.raises(ArgumentError, match="timeout must be a finite number of seconds > 0"):
        MeasureOptions(timeout=bad)
    if bad is None:
        return  # None is "no timeout" for a program's run
    prog = imagecl.compile(COPY, "copy.icl")
    with pytest.raises(ArgumentError, match="timeout must be a finite number of seconds > 0"):
        prog(a=np.ones((4, 4), np.float32), device="cpu", timeout=bad)


def test_tunable_kernel_rejects_an_invalid_timeout_before_measuring(tmp_path):
    from imagecl.tuner.kernel import Output, TunableKernel

    k = TunableKernel("__kernel void k(__global float* o) { o[get_global_id(0)] = 1.0f; }", "k", global_size=(8,))
    k.add_parameter("X", [1, 2])
    k.set_arguments([Output(np.zeros(8, np.float32))])
    k.set_reference({0: np.ones(8, np.float32)})
    with pytest.raises(ArgumentError, match="timeout must be"):
        k.tune(device="cpu", store=tmp_path / "k.db", timeout=0)
    assert not (tmp_path / "k.db").exists()


# ---- a timeout for running a program -----------------------------------------------------------------

def test_a_run_with_a_timeout_gives_the_same_outputs_and_a_hanging_one_is_stopped(cache_dir):
    prog = imagecl.compile(COPY, "copy.icl")
    img = np.random.default_rng(1).random((5, 7), dtype=np.float32)
    out = prog(a=img, device="cpu", timeout=30)
    np.testing.assert_array_equal(out["o"], img * 2)  # the reference: NumPy
    hang = imagecl.compile(HANG_FIRST, "spin.icl")
    started = time.time()
    with pytest.raises(ExecutionError, match=r"'spin' did not finish within 1 s on .*the run was stopped"):
        hang(a=_ints()["a"], device="cpu", timeout=1)
    assert time.time() - started < 30
    # a mistake is reported as without a timeout, by the caller
    with pytest.raises(ArgumentError, match="needs dtype float32"):
        prog(a=img.astype(np.float64), device="cpu", timeout=5)


def test_imagecl_run_timeout(tmp_path, cache_dir, capsys):
    source = tmp_path / "spin.icl"
    source.write_text(HANG_FIRST)
    np.save(tmp_path / "a.npy", _ints()["a"])
    started = time.time()
    code = main(["run", str(source), f"a={tmp_path / 'a.npy'}", "--timeout", "1", "--device", "cpu",
                 "--config", '{"T": 1}'])
    err = capsys.readouterr().err
    assert code == 1 and "imagecl: error: 'spin' did not finish within 1 s" in err
    assert time.time() - started < 30
    assert main(["run", str(source), f"a={tmp_path / 'a.npy'}", "--timeout", "20", "--device", "cpu",
                 "--config", '{"T": 0}', "-o", f"o={tmp_path / 'o.npy'}"]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), _ints()["a"])


# ---- resources ------------------------------------------------------------------------------------------

# PoCL's limits follow the host's free memory, so the CLI tests also pretend that the host has
# 4 GiB available: whichever check refuses first, the arrays are never allocated

def test_a_huge_size_is_rejected_before_anything_is_allocated():
    prog = imagecl.compile(COPY, "copy.icl")
    device = SimpleNamespace(name="gpu ", max_mem_alloc_size=2 * 2**30, global_mem_size=4 * 2**30)
    tracemalloc.start()
    try:
        with pytest.raises(ResourceError) as error:
            synthetic_arguments(prog, (100000, 100000), device=device)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20
    assert str(error.value) == ("image 'a' (100000x100000 float) needs 37.3 GiB, but 'gpu' allocates at most "
                                "2.0 GiB at once (of 4.0 GiB of memory)")


def _refused(err: str) -> bool:
    return "allocates at most" in err or "on the device, but" in err or "the host has only 4.0 GiB" in err


def test_a_huge_array_parameter_is_rejected_with_its_size(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(memory, "host_available", lambda: 4 * 2**30)
    source = tmp_path / "big.icl"
    source.write_text(HUGE_ARRAY)
    started = time.time()
    assert main(["measure", str(source), "--size", "8x8", "--random", "1", "--db", str(tmp_path / "b.db"),
                 "--device", "cpu"]) == 1
    err = capsys.readouterr().err
    assert time.time() - started < 20
    assert err.startswith("imagecl: error: ") and "array 'f' (2147483647 float)" in err and "8.0 GiB" in err
    assert _refused(err), err
    assert not (tmp_path / "b.db").exists()


def test_cli_size_too_large_for_the_device(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(memory, "host_available", lambda: 4 * 2**30)
    source = tmp_path / "copy.icl"
    source.write_text(COPY)
    assert main(["tune", str(source), "--size", "100000x100000", "--device", "cpu", "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "image 'a' (100000x100000 float)" in err and "37.3 GiB" in err and _refused(err), err


def test_host_memory_is_checked_with_the_memory_available(monkeypatch):
    prog = imagecl.compile(COPY, "copy.icl")
    monkeypatch.setattr(memory, "host_available", lambda: 10 * 2**20)  # 10 MiB
    with pytest.raises(ResourceError, match=r"need 32.0 MiB .*the host has only 10.0 MiB of memory available"):
        synthetic_arguments(prog, (2048, 2048))  # two float images of 16 MiB
    # marshalling copies the caller's arrays: checked before it does
    with pytest.raises(ResourceError, match=r"the host has only 10.0 MiB"):
        prog(a=np.zeros((2048, 2048), np.float32), device="cpu")
    assert synthetic_arguments(prog, (64, 64))[0]["a"].shape == (64, 64)  # what fits is generated
    # a run with a timeout sends the arrays (16 KiB each) to a child, which holds them too
    monkeypatch.setattr(memory, "host_available", lambda: 48 * 2**10)
    small = np.ones((64, 64), np.float32)
    np.testing.assert_array_equal(prog(a=small, device="cpu")["o"], small * 2)
    with pytest.raises(ResourceError, match=r"^the arguments of a run in a child process need 32.0 KiB \(2 copies"):
        prog(a=small, device="cpu", timeout=10)


def test_device_limits_name_the_buffer_its_size_and_the_limit():
    device = SimpleNamespace(name="tiny ", max_mem_alloc_size=2**20, global_mem_size=3 * 2**20)
    check_device([Buffer("image 'a'", 2**20), Buffer("image 'o'", 2**20)], device)  # fits exactly
    with pytest.raises(ResourceError, match=r"image 'b' needs 1.5 MiB, but 'tiny' allocates at most 1.0 MiB at once"):
        check_device([Buffer("image 'b'", 3 * 2**19)], device)
    with pytest.raises(ResourceError, match=r"need 4.0 MiB on the device, but 'tiny' has 3.0 MiB of memory"):
        check_device([Buffer(f"image '{n}'", 2**20) for n in "abcd"], device)
    with pytest.raises(ResourceError, match=r"the largest is image 'b', 3.0 MiB"):
        check_host([Buffer("image 'a'", 2**20), Buffer("image 'b'", 3 * 2**20)], copies=2, available=7 * 2**20)


def test_a_run_checks_the_device_before_uploading(monkeypatch):
    import imagecl.program as program_module

    prog = imagecl.compile(COPY, "copy.icl")
    seen = []

    def refuse(buffers, device):
        seen.append(sorted(b.label for b in buffers))
        raise ResourceError("refused")

    monkeypatch.setattr(program_module, "check_device", refuse)
    with pytest.raises(ResourceError, match="refused"):
        prog(a=np.zeros((4, 4), np.float32), device="cpu")
    assert seen == [["image 'a' (4, 4) float32", "image 'o' (4, 4) float32"]]


def test_measuring_counts_the_device_copies_of_the_outputs(tmp_path, monkeypatch):
    prog = imagecl.compile(COPY, "copy.icl")
    tiny = SimpleNamespace(name="tiny", max_mem_alloc_size=2**20, global_mem_size=40 * 2**10)
    real = memory.check_device
    monkeypatch.setattr(memory, "check_device", lambda buffers, device, *rest: real(buffers, tiny, *rest))
    args = {"a": np.zeros((64, 64), np.float32)}  # 16 KiB, and the output as much: 32 KiB would fit in 40 KiB
    with Store(tmp_path / "t.db") as store:
        with pytest.raises(ResourceError, match=r"^the arguments and the measurement's copies of the outputs need "
                                                r"64.0 KiB on the device, but 'tiny' has 40.0 KiB of memory"):
            Measurer(prog, args, store, "cpu")
