"""Measuring whole spaces fast: configurations checked all at once (tuner/validate.py), sources
generated and built in parallel processes while the worker launches (tuner/pipeline.py)."""
from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl.errors import ConfigError
from imagecl.runtime.timing import MIN_TIMED
from imagecl.space import DeviceLimits
from imagecl.tuner import pipeline
from imagecl.tuner.buildcache import BuildCache, build_key
from imagecl.tuner.engine import MeasureOptions, measure
from imagecl.tuner.store import Store
from imagecl.tuner.validate import complete_many

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
H200 = DeviceLimits(name="NVIDIA H200", max_work_group_size=1024, max_work_item_sizes=(1024, 1024, 64),
                    local_mem_size=48 * 1024, max_constant_buffer_size=64 * 1024, max_constant_args=9,
                    image_support=True, image2d_max=(32768, 32768), image3d_max=(16384, 16384, 16384))


def _one(space, config):
    try:
        return space.complete(config), None
    except ConfigError as exc:
        return None, str(exc)


def _assert_same(space, configs):
    got = complete_many(space, configs)
    for config, result in zip(configs, got):
        expected = _one(space, config)
        assert result == expected, config
        if result[0] is not None:  # the same keys in the same order: the stored JSON is the same text
            assert list(result[0]) == list(expected[0])
    return got


def test_complete_many_is_space_complete_on_the_paper_space():
    prog = imagecl.load(EXAMPLES / "convolution9.icl")
    space = prog.space_for_limits(H200, (4096, 4096))
    unroll = [p.name for p in space.parameters if p.kind == "unroll"]
    pow2 = [1, 2, 4, 8, 16, 32, 64, 128]
    configs = [{"wg_x": wx, "wg_y": wy, "px_x": px, "px_y": py, "image_input": img, "local_input": loc,
                "interleaved": inter, "constant_filter": const, **{n: 9 if unr else 1 for n in unroll}}
               for wx, wy, px, py, img, loc, inter, unr, const
               in itertools.product(pow2, [1, 8, 128], [1, 16, 128], [2, 64], *[(0, 1)] * 5)]
    got = _assert_same(space, configs)
    reasons = {error.split("): ", 1)[1] for _, error in got if error}
    assert len(reasons) >= 2  # several constraints are exercised (work-group size, local memory)
    assert any(full for full, _ in got)


@pytest.mark.parametrize("name", ["sobel", "bilateral3d", "raycasting", "median", "unsharp"])
def test_complete_many_is_space_complete_on_partial_and_odd_configurations(name):
    prog = imagecl.load(EXAMPLES / f"{name}.icl")
    space = prog.space_for_limits(H200)
    rng = np.random.default_rng(1)
    configs = []
    for _ in range(300):  # partial configurations: the work-group and tile defaults apply
        names = [n for n in space.names if rng.random() < 0.5]
        configs.append({n: int(rng.choice(space.parameter(n).values)) for n in names})
    configs += space.random(100, seed=2)
    wg = [n for n in space.names if n.startswith("wg_")]
    configs += [{wg[0]: 0}, {wg[0]: 4}, {}, {wg[0]: 3}, {"no_such": 1}, {wg[0]: 2.0}, {wg[0]: True},
                {wg[0]: np.int64(8)}, {wg[0]: "8"}]
    got = _assert_same(space, configs)
    assert any(e for _, e in got) and any(f for f, _ in got)


def test_pipeline_builds_in_processes_and_the_binary_runs(tmp_path):
    """Builders write binaries (and the compiler's verdicts) to the cache; the program created
    from such a binary computes what the program built from source does."""
    import pyopencl as cl

    from imagecl.runtime.devices import _all_devices, context_and_queue, select_device

    device = select_device(None)
    index = list(_all_devices()).index(device)
    cache = BuildCache(tmp_path / "cache")
    good = "__kernel void k(__global float *a) { a[get_global_id(0)] = 2.0f * get_global_id(0) + 1.0f; }"
    jobs = {"good": {"kind": "source", "source": good, "options": []},
            "bad": {"kind": "source", "source": "__kernel void k(__global float *a) { a[0] = nope; }",
                    "options": []}}
    name, driver = device.name.strip(), device.driver_version.strip()
    with pipeline.BuildPipeline(cache, index, name, driver, workers=2) as builds:
        results = dict(builds.results(jobs))
    assert results["good"].status == "built" and results["bad"].status == "rejected"
    assert results["good"].source_hash == pipeline.source_hash(good, [])
    assert cache.error(build_key(jobs["bad"]["source"], (), name, driver))
    binary = cache.get(build_key(good, (), name, driver))
    context, queue = context_and_queue(device)
    program = cl.Program(context, [device], [binary]).build()
    out = np.zeros(64, np.float32)
    buf = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=out)
    program.k(queue, (64,), None, buf)
    cl.enqueue_copy(queue, out, buf)
    np.testing.assert_array_equal(out, 2.0 * np.arange(64) + 1.0)
    with pipeline.BuildPipeline(cache, index, name, driver, workers=1) as builds:  # built before: not again
        assert {k: b.status for k, b in builds.results(jobs)} == {"good": "cached", "bad": "cached"}


def _crash_or_build(device, cache_dir, name, job, mark):
    if job.get("crash"):
        with open(mark % os.getpid(), "w") as f:
            f.write(name)
        os._exit(3)  # a compiler that aborts the process
    return pipeline.Built("built", "h-" + name)


def test_a_crashing_builder_is_left_to_the_worker_and_the_rest_is_built(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "_build_job", _crash_or_build)
    jobs = {f"j{i}": {"kind": "source", "crash": i == 3} for i in range(8)}
    with pipeline.BuildPipeline(BuildCache(tmp_path), 0, "d", "v", workers=2) as builds:
        results = dict(builds.results(jobs))
    assert set(results) == set(jobs)
    assert results["j3"].status == "left" and "died" in results["j3"].error
    assert all(results[k].status == "built" for k in jobs if k != "j3")


def _slow(device, cache_dir, name, job, mark):
    if name != "fast":
        time.sleep(60)
    return pipeline.Built("built")


def test_leaving_early_kills_the_builders(tmp_path, monkeypatch):
    """An exception (or Ctrl-C) in the measurement loop leaves no builder process behind."""
    monkeypatch.setattr(pipeline, "_build_job", _slow)
    jobs = {"fast": {}, "slow1": {}, "slow2": {}, "slow3": {}}
    start = time.time()
    processes = []
    with pytest.raises(RuntimeError, match="stop"):
        with pipeline.BuildPipeline(BuildCache(tmp_path), 0, "d", "v", workers=3) as builds:
            for name, _ in builds.results(jobs):
                processes = list(builds.pool._processes.values())
                raise RuntimeError("stop")
    assert processes and not any(p.is_alive() for p in processes)
    assert builds.pool is None and time.time() - start < 30


def _measure_both(tmp_path, prog, args, configs, **options):
    results = {}
    for prebuild in (False, True):
        db = tmp_path / f"{prebuild}.db"
        with Store(db) as store:
            summary = measure(prog, args, configs, store,
                              options=MeasureOptions(prebuild=prebuild, cache_dir=tmp_path / f"cache{prebuild}",
                                                     build_workers=2, **options))
            results[prebuild] = (summary, {json_key(r.config): r for r in store.records()})
    return results


def json_key(config):
    return tuple(sorted(config.items()))


def test_pipelined_measurement_stores_what_the_serial_one_does(tmp_path):
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    args = {"input": np.random.default_rng(0).random((24, 40), dtype=np.float32)}
    space = prog.space_for(problem_shape=(24, 40))
    configs = space.random(6, seed=5)
    configs.append(dict(configs[0], wg_x=3))  # not a value of wg_x: invalid
    configs.append({"wg_x": 64, "wg_y": 128})  # over the device's work-group limit on PoCL? else valid
    configs.append({"wg_x": 8})
    both = _measure_both(tmp_path, prog, args, configs)
    (serial, serial_records), (piped, piped_records) = both[False], both[True]
    assert serial_records.keys() == piped_records.keys()
    assert serial.sources == piped.sources and serial.statuses == piped.statuses
    assert piped.build_status["built"] == piped.sources
    for key, a in serial_records.items():
        b = piped_records[key]
        assert (a.status, a.error, a.verified, a.source_hash, a.config) == (b.status, b.error, b.verified,
                                                                             b.source_hash, b.config)
        if b.status == "ok":
            assert len(b.times) >= MIN_TIMED
    assert serial.statuses["invalid_config"] >= 1
    invalid = {json_key(r.config): r.error for r in piped_records.values() if r.status == "invalid_config"}
    expected = {json_key(c): _one(space, c)[1] for c in configs if _one(space, c)[0] is None}
    assert invalid == expected  # recorded with Space.complete's reasons, as one at a time did


def test_an_error_mid_run_keeps_what_was_measured_and_leaves_no_process(tmp_path):
    """The results measured before an exception (as Ctrl-C would raise) are stored, though
    they are committed in batches; no builder or worker process outlives the run."""
    import multiprocessing

    prog = imagecl.load(EXAMPLES / "sobel.icl")
    args = {"input": np.random.default_rng(0).random((24, 40), dtype=np.float32)}
    configs = prog.space_for(problem_shape=(24, 40)).random(6, seed=7)

    def stop(done, todo, summary):
        if done == 2:
            raise KeyboardInterrupt

    db = tmp_path / "r.db"
    with Store(db) as store:
        with pytest.raises(KeyboardInterrupt):
            measure(prog, args, configs, store, progress=stop,
                    options=MeasureOptions(cache_dir=tmp_path / "cache", build_workers=2))
        assert len(list(store.records())) == 2
    assert multiprocessing.active_children() == []


def _crash_named(device, cache_dir, name, job, mark):
    if name == os.environ.get("EX_TEST_CRASH"):
        with open(mark % os.getpid(), "w") as f:
            f.write(name)
        os._exit(3)
    return pipeline._build_job(device, cache_dir, name, job, mark)  # the builder's own (unpatched there)


def test_a_source_whose_builder_crashes_is_built_and_measured_by_the_worker(tmp_path, monkeypatch):
    from imagecl.tuner.store import canonical_config

    prog = imagecl.load(EXAMPLES / "sobel.icl")
    args = {"input": np.random.default_rng(0).random((24, 40), dtype=np.float32)}
    space = prog.space_for(problem_shape=(24, 40))
    configs = space.random(4, seed=11)
    monkeypatch.setenv("EX_TEST_CRASH", canonical_config(space.source_key(space.complete(configs[0]))))
    monkeypatch.setattr(pipeline, "_build_job", _crash_named)
    with Store(tmp_path / "r.db") as store:
        summary = measure(prog, args, configs, store,
                          options=MeasureOptions(cache_dir=tmp_path / "cache", build_workers=2))
        records = list(store.records())
    assert summary.build_status["left"] == 1 and summary.statuses["ok"] == 4
    assert all(r.source_hash for r in records)


def test_ctrl_c_during_a_measurement_leaves_no_process_and_keeps_the_results(tmp_path):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) while builders and the
    worker run: the command ends, what was measured is stored, no process of it is left."""
    import signal
    import sqlite3
    import subprocess
    import sys

    db = tmp_path / "c.db"
    env = dict(os.environ, IMAGECL_CACHE=str(tmp_path / "cache"))
    # a run far longer than the wait for its first stored results, even with PoCL's own compiler
    # cache warm (40 small configurations could finish between two looks at the store)
    proc = subprocess.Popen([sys.executable, "-m", "imagecl", "measure", str(EXAMPLES / "sobel.icl"), "--size",
                             "320x240", "--random", "400", "--seed", "3", "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    deadline = time.time() + 240
    count = 0
    while time.time() < deadline and proc.poll() is None and count < 2:
        time.sleep(0.5)
        try:
            with sqlite3.connect(db) as con:
                count = con.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
        except sqlite3.Error:
            pass
    assert proc.poll() is None, "the run ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=60)
    gone = time.time() + 20
    while time.time() < gone:
        try:
            os.killpg(proc.pid, 0)  # anything left in the run's process group?
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        pytest.fail("processes of the interrupted run are still alive")
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] >= count


def test_a_measuring_worker_whose_engine_is_gone_exits_without_a_traceback(tmp_path):
    """The engine closes its end of the pipe while its worker starts (a run stopped early): the
    worker's answer finds no reader, and the worker leaves quietly, printing nothing."""
    import subprocess
    import sys

    script = tmp_path / "orphan.py"
    script.write_text(
        "import multiprocessing as mp\n"
        "from imagecl.tuner.worker import worker_main\n"
        "if __name__ == '__main__':\n"
        "    ctx = mp.get_context('spawn')\n"
        "    parent, child = ctx.Pipe()\n"
        "    worker = ctx.Process(target=worker_main, args=(child, {'device_index': 10**6}))\n"
        "    worker.start()\n"
        "    child.close()\n"
        "    parent.close()\n"
        "    worker.join(120)\n"
        "    print('exit', worker.exitcode)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert done.stdout.strip() == "exit 0"
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
