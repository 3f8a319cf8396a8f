"""One grid split across several devices, and iterated programs (imagecl/runtime/multidevice.py).

PoCL exposes several CPU devices when POCL_DEVICES is set before it is first loaded, so the
split runs go to worker processes (multidevice_worker.py): three 'pthread' devices, and a mixed
'pthread' + 'basic' pair. Each case (multidevice_cases.py) compares the split result with a
single-device run and with an independent NumPy/SciPy reference."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from imagecl.errors import ArgumentError
from imagecl.runtime import multidevice
from multidevice_worker import Worker


@pytest.fixture(scope="module")
def three():
    worker = Worker("pthread pthread pthread")
    yield worker
    worker.close()


@pytest.fixture(scope="module")
def mixed():
    worker = Worker("pthread basic")
    yield worker
    worker.close()


@pytest.mark.parametrize("case", [
    "conv9_families", "conv9_own_variant_per_device", "conv9_tuned_variant_per_device",
    "boundary_modes_and_thin_bands", "band_with_zero_share", "integer_programs_bit_exact",
    "several_outputs_and_caller_outputs", "arrays_in_any_order", "three_d", "three_d_iterate", "data_dependent_reads", "shrunk_halo_is_caught",
    "tuned_split_is_used", "conway_iterate", "wrapped_iterate", "heat_iterate", "tuned_h_is_used", "errors",
])
def test_three_pthread_devices(three, case):
    three.run(case)


@pytest.mark.parametrize("case", ["conv9_families", "conv9_tuned_variant_per_device", "integer_programs_bit_exact",
                                  "conway_iterate", "heat_iterate", "gpus_start_together"])
def test_mixed_pthread_and_basic(mixed, case):
    mixed.run(case)


# ---- the pieces, without devices ------------------------------------------------------------------------


def test_split_rows_follow_shares_and_granule():
    assert multidevice.split_rows([0.25, 0.75], 40) == [(0, 10), (10, 40)]
    assert multidevice.split_rows([0.3, 0.3, 0.4], 10, granule=4) == [(0, 4), (4, 8), (8, 10)]
    assert multidevice.split_rows([0.0, 1.0], 7) == [(0, 0), (0, 7)]
    assert multidevice.split_rows([1.0, 0.0], 7) == [(0, 7), (7, 7)]


def test_check_shares_refuses_bad_fractions():
    assert multidevice.check_shares([0.5, 0.5], 2) == [0.5, 0.5]
    for bad in ([0.5, 0.6], [1.0], [float("nan"), 1.0], [-0.1, 1.1], None):
        with pytest.raises(ArgumentError):
            multidevice.check_shares(bad, 2)


@pytest.mark.parametrize("mode,rows,expected", [
    ("constant", [0, 1], [0, 1, 2, 3]),
    ("clamped", [0], [0, 1, 2]),
    ("wrap", [0], [0, 1, 2, 8, 9]),
    ("mirror", [0], [0, 1, 2]),
    ("reflect", [9], [7, 8, 9]),
])
def test_needed_rows_follow_the_boundary(mode, rows, expected):
    reach = multidevice.Reach(2, 2, mode, False)
    got = multidevice.needed_rows(np.array(rows), reach, 10)
    assert got.tolist() == expected


@pytest.mark.parametrize("mode", ["clamped", "constant", "wrap", "mirror", "reflect"])
def test_needed_rows_of_one_run_are_every_read_row(mode):
    """One run of rows (an iterated program's band: asked once per step) is widened directly;
    the reference is every row of every read, mapped through the boundary."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        extent = int(rng.integers(1, 30))
        a = int(rng.integers(0, extent + 5))
        rows = np.arange(a, a + int(rng.integers(1, 12)))
        reach = multidevice.Reach(int(rng.integers(0, 5)), int(rng.integers(0, 5)), mode, False)
        got = multidevice.needed_rows(rows, reach, extent)
        reads = (rows[:, None] + np.arange(-reach.low, reach.high + 1)[None, :]).ravel()
        if mode == "constant":
            expected = sorted({int(r) for r in reads if 0 <= r < extent})
        else:
            expected = sorted({int(multidevice._boundary_rows(np.array([r]), extent, mode)[0]) for r in reads})
        assert got.tolist() == expected, (mode, extent, rows.tolist(), reach)


def test_union_rows_is_the_sorted_union():
    generator = np.random.default_rng(3)
    sets = [generator.integers(0, 500, size) for size in (0, 7, 300, 1)]
    assert np.array_equal(multidevice.union_rows(sets), np.unique(np.concatenate(sets)))
    assert multidevice.union_rows([np.arange(0)]).size == 0


def test_touch_pages_zeroes_a_large_band_in_parts_and_leaves_small_arrays():
    from imagecl.runtime.host_pages import SMALL, touch_pages

    whole = np.full(10 * SMALL // 4, 7, np.float32)
    band = whole[: whole.size // 2]  # a band of rows: a view, contiguous
    small = np.full(1000, 7, np.float32)
    calls = []
    touch_pages([band, small], threads=3, before=lambda: calls.append(1))
    assert not band.any() and (whole[whole.size // 2:] == 7).all() and (small == 7).all()
    assert calls == [1]  # once, before the band
    touch_pages([small], before=lambda: calls.append(2))
    assert calls == [1]  # nothing to touch: no call (a small call's queue is not flushed)


def test_runs():
    assert multidevice.runs(np.array([0, 1, 2, 5, 6, 9])) == [(0, 3), (5, 7), (9, 10)]
    assert multidevice.runs(np.array([], dtype=int)) == []


@pytest.mark.parametrize("config", [
    {"wg_x": 4, "wg_y": 4, "px_y": 2, "interior": 1, "local_input": 1},
    {"wg_x": 4, "wg_y": 4, "px_y": 2, "interleaved": 1, "local_input": 1},
    {"wg_x": 2, "wg_y": 4, "px_x": 4, "px_y": 2, "interior": 1, "vector_x": 1},
])
def test_banded_variant_takes_the_group_origin_from_global_ids(config):
    """A banded variant is generated so (no text of a source is patched): every work-group origin
    comes from get_global_id - get_local_id, and the rest of the source is the plain variant's."""
    import dataclasses
    import inspect
    from pathlib import Path

    import imagecl
    from imagecl.space import DeviceLimits

    prog = imagecl.load(Path(__file__).resolve().parent.parent / "examples" / "convolution9.icl")
    space = prog.space_for_limits(DeviceLimits(), (64, 64))
    plan = space.plan(space.complete(config))
    plain = prog.source_of(plan)
    banded = prog.source_of(dataclasses.replace(plan, banded=True))
    assert "get_group_id(" in plain and "get_group_id(" not in banded
    expected = plain
    for d in range(2):  # the reference: the same origin spelled with the global offset
        expected = expected.replace(f"get_group_id({d}) * get_local_size({d})",
                                    f"(get_global_id({d}) - get_local_id({d}))")
    assert banded == expected
    # the runtime builds banded variants and patches no generated text
    source = inspect.getsource(multidevice)
    assert "banded=True" in source and ".replace(\"get_group_id" not in source and "banded_source" not in source


def test_round_rows_widen_by_the_reach_per_step():
    reach = {"input": multidevice.Reach(1, 2, "constant", False)}
    sets = multidevice.round_rows((10, 20), 3, reach, ["input"], 40)
    assert [(int(s.min()), int(s.max()) + 1) for s in sets] == [(7, 26), (8, 24), (9, 22), (10, 20)]


# ---- the split's model -------------------------------------------------------------------------------------

from imagecl.runtime import split_tuning  # noqa: E402


def _profile(kernel_ms: float, transfer_ms: float, fixed_ms: float, rows: int = 1000):
    return split_tuning.Profile("dev", rows, (kernel_ms + transfer_ms + fixed_ms) / 1e3, kernel_ms / 1e3,
                                transfer_ms / 1e3)


def test_predicted_shares_follow_throughput_and_transfers():
    # a device three times as fast per row takes three quarters of the rows
    shares = split_tuning.predict([_profile(30, 0, 0), _profile(10, 0, 0)])
    assert shares == pytest.approx([0.25, 0.75])
    # transfers count per row: the same kernels, one with costly transfers, gets fewer rows
    shares = split_tuning.predict([_profile(10, 20, 0), _profile(10, 0, 0)])
    assert shares == pytest.approx([0.25, 0.75])
    # ... but not for iterated programs, whose data stays on the devices
    assert split_tuning.predict([_profile(10, 20, 0), _profile(10, 0, 0)], iterate=True) == pytest.approx([0.5, 0.5])
    # the times come out equal: every device finishes together
    profiles = [_profile(30, 5, 2), _profile(10, 1, 4)]
    shares = split_tuning.predict(profiles)
    times = [p.fixed() + s * p.rows * p.per_row() for p, s in zip(profiles, shares)]
    assert times[0] == pytest.approx(times[1])


def test_a_device_whose_fixed_cost_exceeds_the_split_is_left_out():
    # the second device's fixed cost is more than the first one's whole time: it takes no part
    assert split_tuning.predict([_profile(10, 0, 0), _profile(1, 0, 50)]) == [1.0, 0.0]
    # three devices: the slow one with a large fixed cost drops out, the others share
    shares = split_tuning.predict([_profile(20, 0, 0), _profile(20, 0, 0), _profile(1, 0, 30)])
    assert shares == pytest.approx([0.5, 0.5, 0.0])


def test_neighbours_trade_a_step_between_each_pair():
    found = split_tuning.neighbours([0.5, 0.5], 0.05)
    assert [pytest.approx(f) for f in found] == [[0.45, 0.55], [0.55, 0.45]]
    assert split_tuning.neighbours([1.0, 0.0], 0.05) == [pytest.approx([0.95, 0.05])]


# ---- the command line --------------------------------------------------------------------------------------

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _cli(*args, cwd):
    env = dict(os.environ, POCL_DEVICES="pthread basic")
    env.pop("IMAGECL_DEVICE", None)
    return subprocess.run([sys.executable, "-m", "imagecl", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def _life(board, steps):
    from multidevice_cases import life_step

    for _ in range(steps):
        board = life_step(board)
    return board


def test_cli_run_across_devices_and_iterated(tmp_path):
    board = (np.random.default_rng(20).random((30, 21)) < 0.4).astype(np.int8)
    np.save(tmp_path / "board.npy", board)
    life = ROOT / "examples" / "conway.icl"
    done = _cli("run", life, "input=board.npy", "-o", "output=one.npy", "--devices", "0,1", "--shares", "0.3,0.7",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "rows 0..9" in done.stdout and "rows 9..30" in done.stdout
    assert np.array_equal(np.load(tmp_path / "one.npy"), _life(board, 1))
    done = _cli("run", life, "input=board.npy", "-o", "output=five.npy", "--devices", "1,0", "--iterate", "5",
                "--h", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert np.array_equal(np.load(tmp_path / "five.npy"), _life(board, 5))
    for bad, words in ((["--devices", "0,1", "--device", "0"], "--device and --devices"),
                       (["--shares", "0.5,0.5"], "pass --devices too"),
                       (["--devices", "0,1", "--timeout", "5"], "--timeout does not apply"),
                       (["--devices", "0,1", "--shares", "0.5,x"], "comma-separated numbers"),
                       (["--devices", "0,1", "--shares", "0.5,0.6"], "sum to 1"),
                       (["--devices", "0,7"], "out of range")):
        done = _cli("run", life, "input=board.npy", *bad, cwd=tmp_path)
        assert done.returncode == 1 and words in done.stderr, (bad, done.stderr)
        assert "Traceback" not in done.stderr


def test_cli_tune_across_devices_records_the_split(tmp_path):
    heat = ROOT / "examples" / "heat.icl"
    done = _cli("tune", heat, "alpha=0.2", "--size", "24x20", "--devices", "0,1", "--budget", "2", "--confirm", "0",
                "--iterate", "4", "-o", tmp_path / "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    report = __import__("json").loads((tmp_path / "out" / "split.json").read_text())
    assert sum(report["best"]["shares"]) == pytest.approx(1.0) and report["best"]["h"] in (1, 2, 4, 8)
    assert len(report["profiles"]) == 2 and report["measured"]
    # the device set's system model was calibrated, cached beside the device features, and predicted the split
    terms = report["system_model"]["terms"]
    assert len(terms["fixed"]) == 2 and len(terms["slowdown"]) == 2 and "calibrating" in done.stderr
    cache = Path(os.environ["IMAGECL_CACHE"]) / "system_models.json"
    assert cache.is_file() and __import__("json").loads(cache.read_text())
    assert (tmp_path / "out" / "device0").is_dir() and (tmp_path / "out" / "device1").is_dir()
    recorded = list(Path(os.environ["IMAGECL_TUNED"]).glob("*/splits/*.json"))
    assert recorded and "split:" in done.stdout
    for bad, words in ((["--iterate", "4"], "pass --devices too"),
                       (["--devices", "0,1", "--device", "0"], "one of them"), (["--devices", "0,0"], "twice")):
        done = _cli("tune", heat, "alpha=0.2", "--size", "24x20", *bad, "-o", tmp_path / "bad", cwd=tmp_path)
        assert done.returncode == 1 and words in done.stderr and "Traceback" not in done.stderr, (bad, done.stderr)
    sobel = ROOT / "examples" / "sobel.icl"
    done = _cli("tune", sobel, "--size", "24x20", "--devices", "0,1", "--iterate", "3", "-o", tmp_path / "bad",
                cwd=tmp_path)
    assert done.returncode == 1 and "feed" in done.stderr, done.stderr


def test_iterated_steps_weigh_the_kernel_against_the_fixed_cost():
    # one step: the fast device's fixed cost (12 ms) is more than the other's whole time; 16 steps: it is not
    profiles = [_profile(10, 0, 0), _profile(5, 0, 12)]
    assert split_tuning.predict(profiles, iterate=True, steps=1) == [1.0, 0.0]
    shares = split_tuning.predict(profiles, iterate=True, steps=16)
    assert 0.5 < shares[1] < 0.7


@pytest.mark.slow
def test_benchmark_runs_on_two_pocl_devices(tmp_path):
    env = dict(os.environ, POCL_DEVICES="pthread basic")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "multi_device.py"), "--devices", "0,1",
                           "--quick", "--out", str(tmp_path / "md.json")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = __import__("json").loads((tmp_path / "md.json").read_text())
    assert len(report["cases"]) == 8 and {c["program"] for c in report["cases"]} == {
        "convolution9", "median", "heat", "conway"}
    for case in report["cases"]:
        assert case["sweep"] and case["predicted_share_of_best"] > 0 and len(case["singles"]) == 2
        assert 0 < case["predicted_system_share_of_best"] <= 1
        assert sum(case["predicted_system"]["shares"]) == pytest.approx(1)
    calibration = report["calibration"]
    assert calibration["samples"] and len(calibration["terms"]["fixed"]) == 2
    assert set(calibration["held_out"]) == {"analytic", "system_model", "tree", "boosting", "model_tree"}
    assert all(0 < v["min"] <= v["mean"] <= 1 for v in calibration["held_out"].values())
    summary = report["summary"]
    assert "min_predicted_system_share_of_best" in summary and 0 < summary["real_sweeps_held_out"]["min"] <= 1
    assert set(summary["real_cases_on_the_sweep"]) == {"analytic", "system_model", "tree", "boosting", "model_tree"}


def test_a_wavefront_program_is_not_split_into_bands():
    """A wavefront program's split is its own (split=): bands of rows would break its dependences."""
    import imagecl
    from pathlib import Path

    prog = imagecl.load(Path(__file__).resolve().parent.parent / "examples" / "wavefront" / "lcs.icl")
    with pytest.raises(ArgumentError, match="wavefront program"):
        prog(a=np.zeros(8, np.uint8), b=np.zeros(8, np.uint8), length=np.zeros((8, 8), np.int32), devices=[0],
             shares=[1.0])
    with pytest.raises(ArgumentError, match="wavefront program"):
        prog.iterate(2, a=np.zeros(8, np.uint8), b=np.zeros(8, np.uint8), length=np.zeros((8, 8), np.int32),
                     devices=[0])


def test_split_is_refused_for_a_data_parallel_program():
    """split= names a wavefront partition: on another program it is an error, not ignored."""
    import imagecl
    from pathlib import Path

    prog = imagecl.load(Path(__file__).resolve().parent.parent / "examples" / "conway.icl")
    with pytest.raises(ArgumentError, match="split="):
        prog(np.zeros((8, 8), np.uint8), split={"cpu_tile": 8})


def test_confirmation_times_one_split_once_whatever_its_roles():
    """The benchmark's confirmation: a prediction that is 'the GPU alone' (also a single, the tuned
    split and a sweep leader, at another h) is the same split and gets the same times, so the best
    split is never a lucky repeat of the predicted one; different splits keep their own."""
    from imagecl.bench.split_confirm import confirm, split_identity

    calls = []
    clock = iter(range(1, 10_000))

    def call(shares, h):
        calls.append((tuple(shares), h))
        next(clock)

    alone, split = [1.0, 0.0], [0.9, 0.1]
    result = {"singles": [{"device": "gpu", "shares": alone, "h": 1}, {"device": "cpu", "shares": [0.0, 1.0], "h": 1}],
              "predicted": {"shares": split, "h": 2}, "predicted_system": {"shares": alone, "h": 4},
              "tuned": {"shares": alone, "h": 2},
              "sweep": [{"shares": alone, "h": 8, "median_s": 1.0}, {"shares": split, "h": 2, "median_s": 1.1},
                        {"shares": split, "h": 4, "median_s": 1.2}]}
    confirmed = confirm(call, result, rounds=3)
    distinct = {(alone_t, None) for alone_t in [(1.0, 0.0), (0.0, 1.0)]} | {((0.9, 0.1), 2), ((0.9, 0.1), 4)}
    assert set(calls) == distinct and len(calls) == 3 * len(distinct)
    gpu_alone = [c for c in confirmed if split_identity(c["shares"], c["h"]) == ((1.0, 0.0), None)]
    assert len(gpu_alone) == 4 and len({tuple(c["runs"]) for c in gpu_alone}) == 1
    splits = {c["h"]: c["runs"] for c in confirmed if tuple(c["shares"]) == (0.9, 0.1)}
    assert splits[2] != splits[4]


def test_each_device_drives_the_devices_at_once_and_raises_the_first_failure():
    """Two devices' work that can only finish together (each waits for the other at a barrier): one
    host thread per device, or the barrier times out. A failure is raised once every device's work
    has ended, so no device is left running behind it."""
    import threading
    import time

    meet = threading.Barrier(2, timeout=20)
    assert multidevice.each_device(lambda name: (meet.wait(), name)[1], [("a",), ("b",)]) == ["a", "b"]
    ended = []

    def work(name):
        if name == "bad":
            raise ValueError("bad device")
        time.sleep(0.2)
        ended.append(name)

    with pytest.raises(ValueError, match="bad device"):
        multidevice.each_device(work, [("bad",), ("slow",)])
    assert ended == ["slow"]
    assert multidevice.each_device(lambda x: x * 2, [(3,)]) == [6]  # one device: no thread


def test_a_split_run_takes_its_device_memory_from_the_pool():
    """A repeated run of the same size finds its whole-size buffers in its context's pool instead of
    allocating them again (the pool of prog(...)'s NumPy calls on that context)."""
    import imagecl
    from imagecl.runtime.devices import context_and_queue, select_device
    from imagecl.runtime.interop import memory_pool

    prog = imagecl.load(Path(__file__).resolve().parent.parent / "examples" / "convolution9.icl")
    device = select_device("cpu")
    pool = memory_pool(*context_and_queue(device))
    args = {"input": np.random.default_rng(0).random((48, 40), dtype=np.float32),
            "filter": np.ones((9, 9), np.float32) / 81}
    first, _ = multidevice.run(prog, args, [device], [1.0], "naive")
    managed = pool.managed_bytes
    assert pool.held_blocks >= 2 and pool.active_blocks == 0  # input and output, given back
    again, _ = multidevice.run(prog, args, [device], [1.0], "naive")
    assert pool.managed_bytes == managed and pool.active_blocks == 0
    np.testing.assert_array_equal(again["output"], first["output"])
