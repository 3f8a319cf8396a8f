"""A kept builder pool (tuner/pipeline.BuildPipeline(keep=True), a cluster worker's): started once,
reused by every call, builds queued ahead taken over by the call that needs them."""
from __future__ import annotations

import os
import time
from pathlib import Path

from imagecl.tuner import pipeline
from imagecl.tuner.buildcache import BuildCache


def _counted(device, cache_dir, name, job, mark):
    """A build that leaves one file per build (its job and builder process) and takes a moment."""
    if job.get("crash"):
        os._exit(3)  # a compiler that aborts the process
    time.sleep(0.2)
    Path(cache_dir, f"{name}.{os.getpid()}.{time.time_ns()}").touch()
    return pipeline.Built("built", "h-" + name)


def _builds(directory: Path) -> list[tuple[str, str]]:
    return sorted(tuple(p.name.split(".")[:2]) for p in directory.iterdir() if p.name.count(".") == 2)


def test_a_kept_pool_starts_once_and_builds_what_was_queued_ahead_once(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "_build_job", _counted)
    now = {"a": {}, "b": {}}
    later = {"c": {}, "d": {}, "a": {}}  # a job of this call named again: not queued twice
    with pipeline.BuildPipeline(BuildCache(tmp_path), 0, "d", "v", workers=2, keep=True) as builds:
        assert sorted(n for n, _ in builds.results(now, later)) == ["a", "b"]
        deadline = time.time() + 60
        while not all(f.done() for f in builds._queued.values()) and time.time() < deadline:
            time.sleep(0.05)  # the builds queued ahead finish while nobody waits for them
        second = dict(builds.results({"c": {}, "d": {}, "e": {}}))
        assert builds.starts == 1 and builds.pool is not None  # kept after the calls
        pids = {p for p in builds.pool._processes}
    assert set(second) == {"c", "d", "e"} and all(b.status == "built" for b in second.values())
    built = _builds(tmp_path)
    assert sorted(n for n, _ in built) == ["a", "b", "c", "d", "e"]  # each built once
    assert {int(p) for _, p in built} <= pids  # by the same two builders


def test_a_kept_pool_broken_by_a_crash_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "_build_job", _counted)
    with pipeline.BuildPipeline(BuildCache(tmp_path), 0, "d", "v", workers=1, keep=True) as builds:
        first = dict(builds.results({"x": {"crash": True}}))
        second = dict(builds.results({"y": {}}))
        processes = list(builds.pool._processes.values())
        assert builds.starts >= 2
    assert first["x"].status == "left" and second["y"].status == "built"
    assert processes and not any(p.is_alive() for p in processes)  # closing kills the kept builders


def test_builders_share_the_host_cores_among_its_workers(monkeypatch):
    monkeypatch.setattr(pipeline, "usable_cores", lambda: 16)
    assert pipeline.builder_count() == 15
    assert pipeline.builder_count(sharing=2) == 7 and pipeline.builder_count(sharing=20) == 1
    assert pipeline.builder_count(3, sharing=2) == 3  # asked for: as asked


def test_the_measurement_worker_takes_the_source_its_builder_generated(tmp_path, monkeypatch):
    """The engine hands the builder's generated source to the measurement worker, which uses it
    instead of generating it again: a source marked on its way there is the one built."""
    import numpy as np

    import imagecl
    from imagecl.tuner import engine
    from imagecl.tuner.buildcache import build_key
    from imagecl.tuner.store import Store

    prog = imagecl.load(Path(__file__).resolve().parent.parent / "examples" / "sobel.icl")
    args = {"input": np.random.default_rng(0).random((24, 40), dtype=np.float32)}
    handed = []
    measure_group = engine.Measurer._measure_group

    def marked(self, group, source, summary, start, todo, progress, text=None):
        if text is not None:
            text = text + "\n// as the builder made it\n"
            handed.append(text)
        return measure_group(self, group, source, summary, start, todo, progress, text)

    monkeypatch.setattr(engine.Measurer, "_measure_group", marked)
    cache = tmp_path / "cache"
    with Store(tmp_path / "m.db") as store:
        with engine.Measurer(prog, args, store, options=engine.MeasureOptions(build_workers=1, cache_dir=cache)) \
                as measurer:
            summary = measurer.measure(measurer.space.random(2, seed=1))
            device = measurer.device
    assert summary.statuses == {"ok": 2} and len(handed) == 2
    found = [build_key(text, (), device.name.strip(), device.driver_version.strip()) for text in handed]
    assert all(BuildCache(cache).get(key) is not None for key in found)  # the worker built the marked text


_ORPHAN = """
import os, sys, time
from imagecl.tuner import pipeline
from imagecl.tuner.buildcache import BuildCache
sys.path.insert(0, sys.argv[2])
import test_pipeline_kept
pipeline._build_job = test_pipeline_kept._counted
builds = pipeline.BuildPipeline(BuildCache(sys.argv[1]), 0, "d", "v", workers=2, keep=True)
list(builds.results({"a": {}, "b": {}}))
print(" ".join(str(p) for p in builds.pool._processes), flush=True)
os.kill(os.getpid(), 9)  # killed outright: no chance to stop its builders
"""


def test_the_builders_of_a_parent_killed_outright_exit(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "pids.txt"
    with open(out, "w") as stdout:  # a file, not a pipe: surviving builders would hold a pipe open
        subprocess.run([sys.executable, "-c", _ORPHAN, str(tmp_path), str(Path(__file__).parent)],
                       stdout=stdout, stderr=subprocess.DEVNULL, timeout=300)
    pids = [int(p) for p in out.read_text().split()]
    assert len(pids) == 2
    deadline = time.time() + 60
    while any(_alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.2)
    alive = [p for p in pids if _alive(p)]
    for pid in alive:  # this test's own processes, not to outlive it
        os.kill(pid, 9)
    assert not alive


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_announced_builds_are_taken_replaced_or_left_to_the_worker(tmp_path, monkeypatch):
    """The ahead half of the one pool: `take` hands over an announced build, None for one never
    announced; a new announcement drops the old one's builds not started; a crash in a build
    taken ahead leaves it to the worker and the next announcement starts a fresh pool."""
    monkeypatch.setattr(pipeline, "_build_job", _counted)
    with pipeline.BuildPipeline(BuildCache(tmp_path), 0, "d", "v", workers=1, keep=True, wait=60) as builds:
        assert builds.announce({"a": {}, "b": {}, "c": {}, "e": {}}) == 4
        assert builds.announce({"a": {}, "d": {}}) == 1  # "a" queued already; "c", "e" at least were not started
        assert builds.counts["cancelled"] >= 2 and "e" not in builds._queued and "d" in builds._queued
        assert builds.take("a").status == "built" and builds.take("a") is None  # taken once
        assert builds.take("never") is None
        _settle(builds)
        assert builds.announce({"x": {"crash": True}}) == 1
        _settle(builds)
        assert builds.take("x") is None and builds.counts["crashed"] == 1 and builds.pool is None
        assert builds.announce({"y": {}}) == 1 and builds.starts == 2
        assert builds.take("y").status == "built"
        processes = list(builds.pool._processes.values())
    assert processes and not any(p.is_alive() for p in processes)  # closing kills the kept builders
    built = [n for n, _ in _builds(tmp_path)]
    assert built.count("a") == 1 and "e" not in built and "x" not in built


def _settle(builds) -> None:
    """Until every build queued in `builds` is done (or, crashed, has broken the pool)."""
    deadline = time.time() + 60
    while not all(f.done() for f in builds._queued.values()) and time.time() < deadline:
        time.sleep(0.05)


def test_building_ahead_needs_a_kept_pool(tmp_path):
    import pytest

    with pipeline.BuildPipeline(BuildCache(tmp_path), 0, "d", "v", workers=1) as builds:
        with pytest.raises(ValueError, match="kept pool"):
            builds.announce({"a": {}})
        assert builds.pool is None


def test_closing_with_builds_ahead_under_way_kills_the_builders(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "_build_job", _sleepy)
    builds = pipeline.BuildPipeline(BuildCache(tmp_path), 0, "d", "v", workers=2, keep=True)
    start = time.time()
    builds.announce({"s1": {}, "s2": {}, "s3": {}})
    deadline = time.time() + 60
    while not builds.pool._processes and time.time() < deadline:
        time.sleep(0.05)
    processes = list(builds.pool._processes.values())
    builds.close()
    assert processes and not any(p.is_alive() for p in processes) and builds.pool is None
    assert time.time() - start < 30


def _sleepy(device, cache_dir, name, job, mark):
    time.sleep(60)
    return pipeline.Built("built")
