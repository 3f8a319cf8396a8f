"""Building a live search's next proposals ahead (tuner/pipeline.py) and the run's phase report
(tuner/phases.py): announcing changes nothing the search measures, the engine takes the builds
ahead instead of building again in the worker, and the report says where the seconds went."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl.space import DeviceLimits
from imagecl.tuner.engine import MeasureOptions, Measurer
from imagecl.tuner.live import LiveProblem
from imagecl.tuner.pipeline import BuildPipeline
from imagecl.tuner.phases import describe_phases, phase_report
from imagecl.tuner.session import SessionOptions, run_session
from imagecl.tuner.store import Store, canonical_config

from test_session import FakeMeasurer

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LIMITS = DeviceLimits(name="test device", max_work_group_size=256, max_work_item_sizes=(256, 256, 64),
                      local_mem_size=48 * 1024)


class AnnouncingMeasurer(FakeMeasurer):
    """The stand-in measurer, recording every announcement (Measurer.prefetch) and, for each
    measured configuration, whether it had been announced before it was measured."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.builds_ahead = True  # so the live problem announces
        self.announced: list[str] = []
        self.hits: list[bool] = []

    def prefetch(self, configs):
        self.announced.extend(canonical_config(self.space.complete(c)) for c in configs)
        return len(configs)

    def measure(self, configs, progress=None):
        for config in configs:
            self.hits.append(canonical_config(self.space.complete(config)) in self.announced)
        return super().measure(configs, progress)


def _seconds(config) -> float:  # a deterministic, structured landscape: the model has something to learn
    return (1.0 + 0.3 * abs(config["wg_x"] - 8) + 0.2 * abs(config["wg_y"] - 4)) / (config["px_x"] * config["px_y"]) ** 0.5


@pytest.mark.parametrize("strategy", ["hybrid", "ml"])
def test_announcing_changes_nothing_the_search_measures(tmp_path, strategy):
    space = imagecl.load(EXAMPLES / "sobel.icl").space_for_limits(LIMITS)
    runs = {}
    for kind in (FakeMeasurer, AnnouncingMeasurer):
        with Store(tmp_path / f"{kind.__name__}.db") as store:
            measurer = kind(space, store, _seconds)
            result = run_session(measurer, SessionOptions(strategy=strategy, budget=24, seed=5, confirm=0,
                                                          transfer=False))
        runs[kind] = (measurer, result)
    plain, announcing = runs[FakeMeasurer], runs[AnnouncingMeasurer]
    assert [canonical_config(c) for c in announcing[0].measured] == [canonical_config(c) for c in plain[0].measured]
    assert announcing[1].history == plain[1].history and announcing[1].best_config == plain[1].best_config
    # the whole first stage, and a share of the walks' picks, were known before they were measured
    stage1 = announcing[1].info["stage1"]
    assert all(announcing[0].hits[1:1 + stage1])  # [0]: the baseline, measured before the search
    assert sum(announcing[0].hits[1 + stage1:]) >= 1


def test_builds_ahead_are_taken_and_give_the_same_records(tmp_path, monkeypatch):
    """On PoCL (a quiet pool: builds between timed launches): the same configurations measured
    with and without building ahead give the same records (statuses, sources, checks), and the
    worker builds nothing that was built ahead."""
    monkeypatch.setenv("IMAGECL_CACHE", str(tmp_path / "cache-unused"))
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    args = {"input": np.random.default_rng(0).random((24, 40), dtype=np.float32)}
    space = prog.space_for(problem_shape=(24, 40))
    configs = space.random(3, seed=11)
    records = {}
    for ahead in (False, True):
        options = MeasureOptions(prebuild=False, build_ahead=ahead, build_workers=1,
                                 cache_dir=tmp_path / f"cache-{ahead}")
        with Store(tmp_path / f"{ahead}.db") as store, Measurer(prog, args, store, None, options) as measurer:
            assert measurer.builds_ahead == ahead and measurer.ahead is None  # no builder before a search
            problem = LiveProblem(measurer.space, measurer)
            assert problem.prefetching == ahead
            problem.prefetch(configs)  # as a first stage announces its sample
            for config in configs:
                problem.evaluate(config)
            report = phase_report(measurer, 1.0)
            records[ahead] = {canonical_config(r.config): (r.status, r.source_hash, r.verified)
                              for r in store.records()}
        if ahead:
            assert type(measurer.builders) is BuildPipeline and measurer.builders.keep  # the one pool
            assert measurer.counts["ahead_built"] == len(configs) and report["ahead"]["counts"]["built"] == 3
            assert report["phases"].get("worker_build", 0.0) == 0.0  # loaded from the builders' binaries
            assert report["phases"]["worker_load"] > 0 and report["ahead"]["build_cpu"] > 0
        else:
            assert report["phases"]["worker_build"] > 0 and "ahead" not in report
    assert records[True] == records[False] and len(records[True]) == 3
    assert all(status == "ok" and verified for status, _, verified in records[True].values())


def test_the_phase_report_names_where_the_seconds_went():
    class M:
        phases = {"start": 2.0, "measure": 5.0, "worker_build": 3.5, "worker_launch": 1.0, "validate": 0.001}
        counts = {"sources": 4, "ahead_built": 3, "ahead_none": 1}
        ahead = None

    report = phase_report(M(), 8.0)
    assert report["other_seconds"] == pytest.approx(8.0 - 7.001)
    text = describe_phases(report)
    assert "start 2.00 s, measure 5.00 s" in text and "validate" not in text  # under 5 ms: left out
    assert "worker_build 3.50 s, worker_launch 1.00 s" in text
    assert "sources measured: 4 (built ahead: built 3, none 1)" in text


def test_a_build_ahead_that_is_late_is_waited_for_less_each_time(tmp_path):
    """A builder far slower than the worker (seen on NVIDIA: 25 s for a source the worker built in
    under 1 s) costs a bounded wait: halved at each late build, down to taking finished ones only."""
    import concurrent.futures
    import time

    from imagecl.tuner.engine import Summary
    from imagecl.tuner.pipeline import BuildPipeline

    assert MeasureOptions().ahead_wait == 2.0  # the first wait, unless told
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    args = {"input": np.zeros((8, 8), np.float32)}
    options = MeasureOptions(prebuild=False, build_ahead=True, ahead_wait=0.8)
    with Store(tmp_path / "s.db") as store, Measurer(prog, args, store, None, options) as measurer:
        measurer.builders = builders = BuildPipeline.for_search(measurer.cache, 0, "d", "v", wait=options.ahead_wait)
        asked, waited = [], []
        for _ in range(6):
            late = concurrent.futures.Future()
            late.set_running_or_notify_cancel()  # under way in a builder, never done in time
            builders._queued["source"] = late
            asked.append(builders.wait)
            t = time.perf_counter()
            assert measurer._take_ahead("source", Summary()) is None
            waited.append(time.perf_counter() - t)
    assert asked == [0.8, 0.4, 0.2, 0.0, 0.0, 0.0]
    assert all(w >= a for w, a in zip(waited, asked)) and sum(waited) < 1.4 + 2.0  # bounded: each as asked
    assert measurer.counts["ahead_none"] == 6 and builders.counts["waited_too_long"] == 6


def test_the_gpu_path_and_the_cluster_path_use_the_one_pool(tmp_path, monkeypatch):
    """A live search's builds ahead (Measurer.prefetch / take) and a cluster worker's kept pool
    (tuner/cluster.py measure_task, its successor's sources announced behind its own) are the same
    BuildPipeline; both hand the builder's source to the measurement worker with the group."""
    import time
    import types

    import distributed

    from imagecl.tuner import cluster, engine
    from imagecl.tuner.pipeline import BuildPipeline
    from imagecl.tuner.target import ProgramTarget

    monkeypatch.setenv("IMAGECL_CACHE", str(tmp_path / "cache-unused"))
    handed = []
    measure_group = engine.Measurer._measure_group

    def recorded(self, group, source, summary, start, todo, progress, text=None):
        handed.append((self.builds_ahead, text is not None))
        return measure_group(self, group, source, summary, start, todo, progress, text)

    monkeypatch.setattr(engine.Measurer, "_measure_group", recorded)
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    args = {"input": np.random.default_rng(0).random((24, 40), dtype=np.float32)}
    configs = prog.space_for(problem_shape=(24, 40)).random(4, seed=3)

    # the GPU path (forced on PoCL: builds beside the launches): announced, then taken
    options = MeasureOptions(prebuild=False, build_ahead=True, quiet_builds=False, build_workers=1,
                             cache_dir=tmp_path / "gpu")
    with Store(tmp_path / "gpu.db") as store, Measurer(prog, args, store, None, options) as measurer:
        assert measurer.prefetch(configs[:2]) == 2
        assert type(measurer.builders) is BuildPipeline and measurer.builders.keep and measurer.ahead is measurer.builders
        deadline = time.time() + 120
        while not all(f.done() for f in measurer.builders._queued.values()) and time.time() < deadline:
            time.sleep(0.05)  # built ahead while nothing is measured
        measurer.measure(configs[:2])
        assert measurer.builders.counts["built"] == 2 and measurer.counts["ahead_built"] == 2
    assert handed == [(True, True)] * 2

    # the cluster path: a worker's measurer, as measure_task makes and keeps it
    handed.clear()
    worker = types.SimpleNamespace(address="tcp://127.0.0.1:9", log_event=lambda topic, msg: None,
                                   get_current_task=lambda: "measure_task-test")
    monkeypatch.setattr(distributed, "get_worker", lambda: worker)
    target = ProgramTarget(prog, args, measurer.device)
    # the options `imagecl tune --cluster` sends (prebuild=False: its search's, not the worker's)
    options = MeasureOptions(prebuild=False, build_workers=1, cache_dir=tmp_path / "cluster")
    setup = {**target.worker_setup(), "run": target.run, "options": options, "any_device": False, "synthetic": None,
             "digest": cluster.arguments_digest(args), "host_workers": {}, "arguments": args, "key": "one-pool-test"}
    try:
        first = cluster.measure_task(setup, configs[:2], ahead=configs[2:])
        kept = cluster._WORKER_MEASURERS["one-pool-test"]
        assert type(kept.builders) is BuildPipeline and kept.builders.keep
        assert kept.builders.counts["announced"] == 2  # the successor's sources, behind the task's own
        second = cluster.measure_task(setup, configs[2:])
        assert first["pool_starts"] == second["pool_starts"] == 1 and len(second["records"]) == 2
    finally:
        for kept in cluster._WORKER_MEASURERS.values():
            kept.close()
        cluster._WORKER_MEASURERS.clear()
    assert len(handed) == 4 and all(h == (False, True) for h in handed)


def test_on_a_cpu_no_build_runs_while_the_worker_times(tmp_path, monkeypatch):
    """A live search on PoCL builds ahead by default in a quiet pool: every timed launch (each
    source's group, and the confirmation's rounds) waits until no builder works, the builds are
    taken from the builders (not built again in the worker), and the search's records are those
    of configurations built in the worker."""
    from imagecl.tuner import engine

    monkeypatch.setenv("IMAGECL_CACHE", str(tmp_path / "cache-unused"))
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    args = {"input": np.random.default_rng(1).random((24, 40), dtype=np.float32)}
    busy_at_timing = []
    measure_group = engine._Worker.measure_group

    def checked(self, *a, **k):
        builders = measurer.builders
        if builders is not None:
            busy_at_timing.append(sum(not f.done() for f in [*builders._warming, *builders._queued.values()]))
        return measure_group(self, *a, **k)

    monkeypatch.setattr(engine._Worker, "measure_group", checked)
    results = {}
    for ahead in (None, False):
        options = MeasureOptions(prebuild=False, build_ahead=ahead, build_workers=2, cache_dir=tmp_path / f"c-{ahead}")
        with Store(tmp_path / f"{ahead}.db") as store, Measurer(prog, args, store, None, options) as measurer:
            assert measurer.builds_ahead == (ahead is None) and measurer.quiet_builds == (ahead is None)
            result = run_session(measurer, SessionOptions(strategy="ml", budget=10, seed=3, confirm=2, transfer=False))
            records = {canonical_config(r.config): (r.status, r.source_hash, r.verified) for r in store.records()}
            results[ahead] = (result, records, dict(measurer.counts), measurer.builders)
    quiet, plain = results[None], results[False]
    assert quiet[3] is not None and quiet[3].quiet and quiet[3].workers == 2
    assert busy_at_timing and not any(busy_at_timing)  # nothing built while anything was timed
    assert quiet[2]["ahead_built"] >= 5  # the first stage and a walk's batches came from the builders
    assert quiet[3].counts.get("settle_timeouts", 0) == 0
    assert quiet[3].counts["rounds"] >= 3  # the first stage's sample, two builds a round, then the walk's batches
    # the walks follow measured times, which differ between runs; what both measured, they built alike
    both = set(quiet[1]) & set(plain[1])
    assert len(both) >= 5 and all(quiet[1][k][:2] == plain[1][k][:2] for k in both)
    assert all(status == "ok" and verified for status, _, verified in quiet[1].values())


def test_a_quiet_pool_announces_in_batches(tmp_path, monkeypatch):
    """With quiet builds, a walk's announcement while its next source is still one announced
    before adds nothing (the batch goes on); one that starts at a source never announced starts
    the next batch, all of its builds at once."""
    monkeypatch.setenv("IMAGECL_CACHE", str(tmp_path / "cache-unused"))
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    args = {"input": np.zeros((24, 40), np.float32)}
    options = MeasureOptions(prebuild=False, build_workers=1, cache_dir=tmp_path / "cache")
    with Store(tmp_path / "s.db") as store, Measurer(prog, args, store, None, options) as measurer:
        space = measurer.space
        configs = []
        for config in space.random(40, seed=4):  # distinct sources: one announcement each
            if all(space.source_key(config) != space.source_key(c) for c in configs):
                configs.append(config)
        assert len(configs) >= 6
        assert measurer.quiet_builds and measurer.prefetch(configs[:3]) == 3
        assert measurer.builders.quiet
        measurer.measure(configs[:1])  # takes the first build (after the pool settled)
        assert measurer.prefetch(configs[1:5]) == 0  # its head is in the batch under way: nothing new
        measurer.measure(configs[1:3])
        assert measurer.prefetch(configs[3:6]) == 3  # a source never announced: the next batch
        assert measurer.counts["ahead_built"] == 3


def test_a_quiet_pool_waits_for_queued_builds_and_kills_stuck_ones(tmp_path):
    """`take` of a quiet pool waits for an announced build that has not started yet (a plain pool
    would cancel it and leave it to the worker); `settle` gives up on builds past their share of
    the timeout, with the pool (the worker builds those itself)."""
    import concurrent.futures
    import threading
    import time

    from imagecl.tuner.buildcache import BuildCache
    from imagecl.tuner.pipeline import Built

    cache = BuildCache(tmp_path / "cache")
    quiet = BuildPipeline.for_search(cache, 0, "d", "v", workers=1, quiet=True)
    queued = concurrent.futures.Future()  # announced, not started by any builder yet
    quiet._queued["source"] = queued
    threading.Timer(0.5, lambda: (queued.set_running_or_notify_cancel(), queued.set_result(Built("built")))).start()
    assert quiet.take("source").status == "built" and quiet.counts["cancelled"] == 0

    plain = BuildPipeline.for_search(cache, 0, "d", "v", workers=1)
    plain._queued["source"] = concurrent.futures.Future()
    assert plain.take("source") is None and plain.counts["cancelled"] == 1

    stuck = BuildPipeline(cache, 0, "d", "v", workers=1, timeout=0.3, keep=True, quiet=True)
    stuck._queued["source"] = concurrent.futures.Future()
    stuck._queued["source"].set_running_or_notify_cancel()  # under way, never done
    assert 0.25 < stuck.settle() < 5.0
    assert stuck.counts["settle_timeouts"] == 1 and not stuck._queued and stuck.settle() == 0.0

    # a search's deadline bounds the wait below the build's timeout: at it, the round is given up
    late = BuildPipeline(cache, 0, "d", "v", workers=1, timeout=60.0, keep=True, quiet=True)
    for name in ("needed", "other"):
        late._queued[name] = concurrent.futures.Future()
        late._queued[name].set_running_or_notify_cancel()
    t = time.time()
    assert late.take("needed", until=t + 0.3) is None
    assert late.settle(until=t + 0.6) < 1.5 and late.counts["settle_timeouts"] == 1 and not late._queued
    assert time.time() - t < 3.0


def test_a_quiet_pool_started_again_keeps_what_was_announced(tmp_path, monkeypatch):
    """A round announced when the quiet pool has no builders (none started yet, or killed by
    `settle` with a late round) starts the pool and builds in it; the announced builds beyond the
    round wait for the next one. Starting the pool used to drop them mid-round (a KeyError that
    ended a CPU tuning run)."""
    import concurrent.futures

    from imagecl.tuner import pipeline
    from imagecl.tuner.buildcache import BuildCache

    class Threads(concurrent.futures.ThreadPoolExecutor):  # builders in threads: _build_job stays patched
        def __init__(self, max_workers, mp_context=None, initializer=None):
            super().__init__(max_workers)

    built = []
    monkeypatch.setattr(pipeline.concurrent.futures, "ProcessPoolExecutor", Threads)
    monkeypatch.setattr(pipeline, "_build_job", lambda device, cache, name, job, marks: built.append(name) or
                        pipeline.Built("built"))
    monkeypatch.setattr(pipeline, "kill_pool", lambda pool: pool.shutdown(wait=True, cancel_futures=True))
    quiet = BuildPipeline(BuildCache(tmp_path / "cache"), 0, "d", "v", workers=1, keep=True, quiet=True)
    for round_ in range(2):  # the pool never started, then the pool killed (a late round at settle)
        names = [f"{round_}-a", f"{round_}-b", f"{round_}-c"]
        assert quiet.announce({name: None for name in names}) == 3
        assert [quiet.take(name).status for name in names] == ["built"] * 3
        assert built[-3:] == names and quiet.counts["rounds"] == 3 * (round_ + 1)
        quiet._stop(kill=True)
    assert quiet.starts == 2


def _union_sample(problem, n, rng):  # sample_matrix's rejection sampling as it was: one union1d per draw
    chosen = np.zeros(0, dtype=np.int64)
    for _ in range(64):
        draw = rng.integers(0, problem.size, size=max(2 * (n - len(chosen)), 1024), dtype=np.int64)
        chosen = np.union1d(chosen, draw[problem._mask_rows(problem._decode(draw))])
        if len(chosen) >= n:
            break
    return problem._decode(rng.permutation(chosen)[:n])


@pytest.mark.parametrize("n", [1, 700, 5000, 40_000])
def test_sampling_a_large_space_draws_what_it_drew_before(n):
    """The faster union (problem._SortedUnion) leaves every sample as it was, so searches too."""
    from imagecl.tuner.problem import MAX_ENUMERATE, Parameter, Problem

    class Sparse(Problem):  # too large to list; about one configuration in 7 valid
        def valid_mask(self, columns):
            return (columns["a"] + 2 * columns["b"] + columns["c"]) % 7 == 0

    problem = Sparse([Parameter(name, list(range(60))) for name in "abcd"] + [Parameter("e", list(range(40)))])
    assert problem.size > MAX_ENUMERATE and problem.candidate_matrix() is None
    for seed in range(3):
        got = problem.sample_matrix(n, np.random.default_rng(seed))
        assert np.array_equal(got, _union_sample(problem, n, np.random.default_rng(seed)))
        assert len(got) == n and len({tuple(r) for r in got}) == n


def test_tune_verbose_reports_the_phases(tmp_path, monkeypatch):
    import subprocess
    import sys

    monkeypatch.setenv("IMAGECL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("IMAGECL_TUNED", str(tmp_path / "tuned"))
    result = subprocess.run([sys.executable, "-m", "imagecl", "tune", str(EXAMPLES / "sobel.icl"), "--size", "32x24",
                             "--budget", "3", "--confirm", "0", "--verbose", "-o", str(tmp_path / "out")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "time by phase (" in result.stderr and "in the worker (within measure): " in result.stderr
    # the worker loads what a builder built, or builds it itself where the builder was late (a
    # loaded machine: the wait for a build ahead is bounded), which timing decides
    assert "sources measured: " in result.stderr
    assert "worker_load" in result.stderr or "worker_build" in result.stderr
    assert "between timed launches)" in result.stderr  # PoCL: a quiet pool built the search's sources
    plain = subprocess.run([sys.executable, "-m", "imagecl", "tune", str(EXAMPLES / "sobel.icl"), "--size", "32x24",
                            "--budget", "1", "--confirm", "0", "-o", str(tmp_path / "out2")],
                           capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0 and "time by phase" not in plain.stderr
