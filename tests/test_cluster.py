"""Measurement and tuning on a Dask cluster (tuner/cluster.py): a local cluster of two PoCL devices."""
from __future__ import annotations

import dataclasses
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl.errors import ArgumentError
from imagecl.tuner.cluster import ClusterError
from imagecl.runtime.synthetic import synthetic_arguments
from imagecl.tuner.cluster import (ClusterMeasurer, ClusterSpec, Synthetic, arguments_digest, open_client,
                                   parse_cluster, worker_counts)
from imagecl.tuner.engine import MeasureOptions, measure
from imagecl.tuner.session import SessionOptions, run_session
from imagecl.tuner.store import Store, canonical_config
from imagecl.tuner.validate import plan_measurements

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SHAPE = (24, 40)


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "imagecl", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def _rows(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT config_key, status FROM measurements").fetchall()


@pytest.fixture(scope="module")
def client():
    """Two workers, one per PoCL device; a task that kills its worker twice is given up (then
    run once more: the cluster's second chance for the innocent tasks blamed with it)."""
    import dask

    saved = os.environ.get("POCL_DEVICES")
    os.environ["POCL_DEVICES"] = "pthread pthread"  # the workers' processes list two devices
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with open_client(ClusterSpec(local_workers=2), devices=[0, 1]) as client:
            yield client
    if saved is None:
        os.environ.pop("POCL_DEVICES", None)
    else:
        os.environ["POCL_DEVICES"] = saved


def _two_live_workers(client, timeout: float = 240.0) -> None:
    """Until both workers answer: after a worker was killed, the scheduler may still list the dead
    one, and its nanny's restart can take a minute on a loaded 2-core machine."""
    import time

    deadline = time.time() + timeout
    while True:
        try:
            answers = client.run(os.getpid, on_error="return")
            if (len(answers) == 2 and all(isinstance(p, int) for p in answers.values())
                    and len(client.scheduler_info()["workers"]) == 2):
                return
        except Exception:  # a worker dying while asked: ask again
            pass
        if time.time() > deadline:
            raise AssertionError("the cluster did not get back to two workers")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def sobel():
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    return prog, {"input": np.random.default_rng(0).random(SHAPE, dtype=np.float32)}


@pytest.mark.parametrize("text, expected", [
    ("local:2", ClusterSpec(local_workers=2)),
    ("tcp://10.0.0.5:8786", ClusterSpec(address="tcp://10.0.0.5:8786")),
    (" tls://gpu-host.example:9000 ", ClusterSpec(address="tls://gpu-host.example:9000")),
])
def test_cluster_addresses(text, expected):
    assert parse_cluster(text) == expected


@pytest.mark.parametrize("text, says", [
    ("local:0", "positive number"), ("local:x", "positive number"), ("local:", "positive number"),
    ("10.0.0.5:8786", "tcp://HOST:PORT"), ("tcp://host", "tcp://HOST:PORT"), ("tcp://host:99999", "tcp://HOST:PORT"),
    ("http://host:8786", "tcp://HOST:PORT"), ("tcp://a;b:1", "tcp://HOST:PORT"),
])
def test_bad_cluster_values_are_refused_with_what_is_expected(text, says):
    with pytest.raises(ArgumentError, match=says.replace("/", ".").replace(":", ".")):
        parse_cluster(text)


def test_cli_refuses_a_bad_cluster_and_more_workers_than_devices(tmp_path):
    bad = _cli("measure", str(EXAMPLES / "sobel.icl"), "--size", "40x24", "--random", "2", "--db",
               str(tmp_path / "r.db"), "--cluster", "tcp://nowhere")
    assert bad.returncode == 1 and "tcp://HOST:PORT" in bad.stderr and "Traceback" not in bad.stderr
    many = _cli("measure", str(EXAMPLES / "sobel.icl"), "--size", "40x24", "--random", "2", "--db",
                str(tmp_path / "r.db"), "--cluster", "local:5", env={"POCL_DEVICES": "pthread pthread"})
    assert many.returncode == 1 and "has 2 OpenCL devices like" in many.stderr, many.stderr
    assert not (tmp_path / "r.db").exists() or not _rows(tmp_path / "r.db")


def test_cluster_measures_each_configuration_once_like_the_engine(tmp_path, client, sobel):
    prog, args = sobel
    configs = prog.space_for(problem_shape=SHAPE).random(8, seed=3)
    configs.append(dict(configs[0]))  # given twice: measured and stored once
    with Store(tmp_path / "c.db") as store:
        cluster = ClusterMeasurer(client, prog, args, store, chunk=2)
        summary = cluster.measure(configs)
        again = cluster.measure(configs)
    assert summary.measured == 8 and summary.skipped == 1 and again.measured == 0 and again.skipped == 9
    rows = _rows(tmp_path / "c.db")
    assert len(rows) == 8 and len({k for k, _ in rows}) == 8
    assert len(worker_counts(cluster.measured_by)) == 2  # both workers measured some
    with Store(tmp_path / "one.db") as store:
        measure(prog, args, configs, store)
        alone = {canonical_config(r.config): r for r in store.records()}
    with Store(tmp_path / "c.db") as store:
        spread = {canonical_config(r.config): r for r in store.records()}
    assert spread.keys() == alone.keys()
    for key, record in spread.items():
        assert (record.status, record.verified) == (alone[key].status, alone[key].verified) == ("ok", True)
        assert len(record.times) >= 3 and record.device == alone[key].device


class _Recording:
    """A Dask client that records how many bytes each submitted task's arguments pickle to."""

    def __init__(self, client) -> None:
        self.client, self.sizes = client, []

    def submit(self, function, *args, **kwargs):
        self.sizes.append(len(pickle.dumps(args)))
        return self.client.submit(function, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.client, name)


BIG = (1024, 1024)  # a float image of 4 MiB


def test_synthetic_images_are_made_again_on_the_workers_not_sent(tmp_path, client):
    """A 1024x1024 synthetic target's tasks carry its recipe (a few KB), and every worker
    measures with inputs bit-identical to the client's."""
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    recipe = Synthetic(BIG, {}, seed=7)
    args, _ = synthetic_arguments(prog, BIG, {}, seed=7)
    configs = prog.space_for(problem_shape=BIG).random(4, seed=2)
    recording = _Recording(client)
    with Store(tmp_path / "s.db") as store:
        cluster = ClusterMeasurer(recording, prog, args, store, chunk=1, synthetic=recipe)
        summary = cluster.measure(configs)
    assert summary.statuses == {"ok": 4}
    assert len(recording.sizes) == 4 and max(recording.sizes) < 8192, recording.sizes
    assert cluster.worker_digests == {arguments_digest(args)}
    assert len(worker_counts(cluster.measured_by)) == 2


def test_a_worker_with_other_synthetic_inputs_than_the_client_is_refused(tmp_path, client):
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    args, _ = synthetic_arguments(prog, SHAPE, {}, seed=7)
    with Store(tmp_path / "w.db") as store:
        cluster = ClusterMeasurer(client, prog, args, store, synthetic=Synthetic(SHAPE, {}, seed=8))
        with pytest.raises(ClusterError, match="other inputs than the client"):
            cluster.measure(prog.space_for(problem_shape=SHAPE).random(2, seed=2))
        assert not list(store.records())


def test_a_worker_whose_device_is_another_size_is_refused_naming_the_compute_units(sobel):
    """The run is for a device of this worker's device's name and driver with twice its compute
    units (a 32-core VM's PoCL device; the worker's VM has 16): its times are not the run's."""
    from imagecl.runtime.devices import select_device
    from imagecl.tuner.cluster import _worker_measurer
    from imagecl.tuner.target import run_key

    prog, args = sobel
    mine = run_key(prog, select_device(None), SHAPE)
    larger = dataclasses.replace(mine, compute_units=2 * mine.compute_units)
    setup = {"key": "another-size", "arguments": args, "synthetic": None, "source": prog.info.unit.source,
             "filename": prog.filename, "run": larger, "any_device": False}
    with pytest.raises(ClusterError) as refused:
        _worker_measurer(setup)
    message = str(refused.value)
    assert (f"a worker's device is {mine.device} (driver {mine.driver}, {mine.compute_units} compute units), "
            f"the run is for {mine.device} (driver {mine.driver}, {larger.compute_units} compute units)") in message
    assert "another size of device" in message


def test_local_workers_take_only_devices_of_the_chosen_ones_size(monkeypatch):
    from types import SimpleNamespace

    from imagecl.runtime import devices
    from imagecl.tuner.cluster import local_devices

    found = [SimpleNamespace(name="Xeon ", driver_version="5.0", max_compute_units=n) for n in (16, 32, 16)]
    monkeypatch.setattr(devices, "_all_devices", lambda: found)
    monkeypatch.setattr(devices, "select_device", lambda device=None: found[0])
    assert local_devices(2) == [0, 2]
    with pytest.raises(ArgumentError, match=r"has 2 OpenCL devices like Xeon \(driver 5.0, 16 compute units\)"):
        local_devices(3)


def test_large_given_images_go_to_each_worker_once(tmp_path, client):
    """Images that cannot be made again (a user's file) and are large travel with a worker's
    first task only; small ones with every task."""
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    args = {"input": np.random.default_rng(3).random(BIG, dtype=np.float32)}
    configs = prog.space_for(problem_shape=BIG).random(6, seed=4)
    recording = _Recording(client)
    with Store(tmp_path / "g.db") as store:
        cluster = ClusterMeasurer(recording, prog, args, store, chunk=1)
        summary = cluster.measure(configs)
        # other options: a target no worker holds yet, so the confirmation's task asks for the arrays
        again = _Recording(client)
        retimed = ClusterMeasurer(again, prog, args, store, options=MeasureOptions(timeout=7)).retime(
            configs[:2], repeats=3, rounds=1)
    assert sorted(r.status for r in retimed.values()) == ["ok", "ok"]
    assert len(again.sizes) == 2 and min(again.sizes) < 8192 < args["input"].nbytes < max(again.sizes)
    assert summary.statuses == {"ok": 6}
    large = [n for n in recording.sizes if n > args["input"].nbytes]
    assert 1 <= len(large) <= 2 and len(recording.sizes) == 6 + len(large), recording.sizes
    assert cluster.worker_digests == {arguments_digest(args)}
    small = _Recording(client)
    with Store(tmp_path / "small.db") as store:
        ClusterMeasurer(small, prog, {"input": args["input"][:64, :64].copy()}, store, chunk=1).measure(
            prog.space_for(problem_shape=(64, 64)).random(2, seed=4))
    assert len(small.sizes) == 2  # small images go with every task: no round trip for them


@pytest.mark.timeout(420)
@pytest.mark.parametrize("victims", [1, 2])
def test_workers_killed_mid_run_lose_nothing_and_record_nothing_twice(tmp_path, client, sobel, victims):
    """One worker killed: its task moves to the other. Both: the nannies restart them, and the
    setup every worker held (the target, its images) is sent again."""
    prog, args = sobel
    configs = prog.space_for(problem_shape=SHAPE).random(10, seed=11 + victims)
    _two_live_workers(client)
    pids = client.run(os.getpid)
    killed = []

    def kill_one(done, total, summary):
        if not killed:  # after the first result: the other tasks are in flight or queued
            for victim in sorted(pids)[:victims]:
                os.kill(pids[victim], signal.SIGKILL)
                killed.append(victim)

    with Store(tmp_path / "k.db") as store:
        summary = ClusterMeasurer(client, prog, args, store, chunk=1).measure(configs, progress=kill_one)
    assert killed
    rows = _rows(tmp_path / "k.db")
    assert len(rows) == 10 and len({k for k, _ in rows}) == 10
    with Store(tmp_path / "k.db") as store:
        problems = [r.error for r in store.records() if r.status != "ok"]
    assert not problems, "\n".join(problems)
    assert summary.measured == 10
    _two_live_workers(client)  # the nanny restarted it


@pytest.mark.timeout(200)
def test_a_worker_the_cluster_gave_up_on_is_opened_again_for_its_device(client):
    """When a killed worker stays lost past distributed.deploy.lost-worker-timeout (its restart is
    slow on a loaded machine), Dask's cluster closes its nanny and forgets it: the device would have
    no worker for the rest of the run. The local cluster opens it again, with its device."""
    _two_live_workers(client)
    cluster = client.cluster
    name = sorted(cluster.workers)[0]
    closed = cluster.workers[name]

    async def give_up():  # what SpecCluster does to a worker lost for longer than that timeout
        await cluster.workers.pop(name).close()

    cluster.sync(give_up)
    _two_live_workers(client, timeout=150)
    assert cluster.workers[name] is not closed
    infos = client.scheduler_info()["workers"].values()
    assert sorted(w["name"] for w in infos) == sorted(cluster.worker_spec)
    devices = client.run(lambda: os.environ.get("IMAGECL_DEVICE"))
    assert sorted(devices.values()) == ["0", "1"]


class _KillsEveryWorkerAtTheFirstPin(_Recording):
    """A client that kills every worker just before it sends the first task pinned to one: the
    worker named is gone by the time Dask places the task, and no worker is up to take it."""

    def __init__(self, client, pids: dict) -> None:
        super().__init__(client)
        self.pids, self.killed = pids, False

    def submit(self, function, *args, **kwargs):
        if kwargs.get("workers") and not self.killed:
            for pid in self.pids.values():
                os.kill(pid, signal.SIGKILL)
            self.killed = True
        return super().submit(function, *args, **kwargs)


def _loose_tasks(dask_scheduler) -> list:
    return [str(k) for k, ts in dask_scheduler.tasks.items() if ts.loose_restrictions]


@pytest.mark.timeout(300)
def test_a_task_pinned_to_a_worker_that_is_gone_is_sent_again(tmp_path, client, sobel):
    """Successors are pinned to their worker, strictly, and sent again unpinned when the worker
    is gone. Loosely pinned (Dask's allow_other_workers), a task whose worker died while no
    worker was up stayed unrunnable for ever: Dask never looks at it again (the client hung)."""
    prog, args = sobel
    configs = prog.space_for(problem_shape=SHAPE).random(6, seed=21)
    _two_live_workers(client)
    killer = _KillsEveryWorkerAtTheFirstPin(client, client.run(os.getpid))
    with Store(tmp_path / "p.db") as store:
        cluster = ClusterMeasurer(killer, prog, args, store, chunk=1)
        summary = cluster.measure(configs)
        assert client.run_on_scheduler(_loose_tasks) == []
    assert killer.killed and cluster.sent_again["worker gone"] >= 1, cluster.sent_again
    assert summary.measured == 6 and summary.statuses == {"ok": 6}, summary.statuses
    rows = _rows(tmp_path / "p.db")
    assert len(rows) == 6 and len({k for k, _ in rows}) == 6
    _two_live_workers(client)


def _sleep_once(marker: str, seconds: float):
    def hook(todo):  # runs on the worker: the first task to get here hangs (in Python, outside the
        import os as _os  # engine's watchdog); O_EXCL: of two tasks starting at once, only one
        import time as _time

        try:
            _os.close(_os.open(marker, _os.O_CREAT | _os.O_EXCL))
        except FileExistsError:
            return
        _time.sleep(seconds)
    return hook


def _executing(dask_worker) -> int:
    return dask_worker.state.executing_count


@pytest.mark.timeout(240)
def test_a_task_that_hangs_past_its_limit_goes_to_another_worker_and_the_run_finishes(tmp_path, client, sobel):
    """A task running past its limit is cancelled, but its thread goes on holding its worker, and
    the scheduler then sees that worker idle: the task goes again to another worker, and no task
    goes to the hung one while the run lasts (else it would wait there and be given up)."""
    import time

    prog, args = sobel
    configs = prog.space_for(problem_shape=SHAPE).random(6, seed=23)
    _two_live_workers(client)
    marker = tmp_path / "slept"
    with Store(tmp_path / "s.db") as store:
        cluster = ClusterMeasurer(client, prog, args, store, chunk=1, options=MeasureOptions(timeout=2),
                                  hook=_sleep_once(str(marker), 40.0))
        cluster.stall_seconds = 6.0  # a one-configuration task: stalled 6 + 2 x 2 s after it started
        summary = cluster.measure(configs)
    assert marker.exists()
    assert summary.statuses == {"ok": 6}, (summary.statuses, summary.notes)
    assert cluster.sent_again == {"stalled": 1}, cluster.sent_again
    assert any("sent again to another worker" in note for note in summary.notes), summary.notes
    workers = {w for _, w in cluster.measured_by}
    assert len(workers) == 1, "every configuration measured by the worker that did not hang"
    assert cluster._started, "the workers tell the client when each task starts (the stall clock)"
    rows = _rows(tmp_path / "s.db")
    assert len(rows) == 6 and len({k for k, _ in rows}) == 6
    deadline = time.time() + 60  # the next tests find both workers free
    while any(client.run(_executing).values()) and time.time() < deadline:
        time.sleep(0.5)


def test_a_hanging_configuration_times_out_on_its_worker_and_the_run_goes_on(tmp_path, client):
    from test_measure import HANG

    prog = imagecl.compile(HANG, "spin.icl")
    args = {"a": np.arange(12, dtype=np.int32).reshape(3, 4)}
    with Store(tmp_path / "h.db") as store:
        cluster = ClusterMeasurer(client, prog, args, store, options=MeasureOptions(timeout=4))
        summary = cluster.measure([{"SPIN": 1}, {"SPIN": 0}])
        records = {r.config["SPIN"]: r for r in store.records()}
    assert records[1].status == "timeout" and records[1].limit == 4 and "killed" in records[1].error
    assert records[0].status == "ok" and summary.statuses == {"timeout": 1, "ok": 1}


def test_a_configuration_that_keeps_killing_workers_is_recorded_as_failed(tmp_path, client, sobel):
    prog, args = sobel
    space = prog.space_for(problem_shape=SHAPE)
    configs = space.random(3, seed=5)
    deadly = canonical_config(space.complete(configs[0]))

    def die_on(todo):  # runs on the worker: a driver that takes the process down with it
        import os as _os
        import signal as _signal

        from imagecl.tuner.store import canonical_config as key

        if any(key(c) == deadly for c in todo):
            _os.kill(_os.getpid(), _signal.SIGKILL)

    with Store(tmp_path / "d.db") as store:
        summary = ClusterMeasurer(client, prog, args, store, chunk=1, hook=die_on).measure(configs)
        records = {canonical_config(r.config): r for r in store.records()}
    assert len(records) == 3 and len(_rows(tmp_path / "d.db")) == 3
    assert records[deadly].status == "crash" and "allowed failures" in records[deadly].error
    assert all(r.status == "ok" for k, r in records.items() if k != deadly)
    assert summary.statuses == {"crash": 1, "ok": 2}
    _two_live_workers(client)


def test_tuning_on_the_cluster_proposes_a_batch_per_worker(tmp_path, client, sobel):
    prog, args = sobel
    _two_live_workers(client)
    with Store(tmp_path / "t.db") as store:
        cluster = ClusterMeasurer(client, prog, args, store, options=MeasureOptions(prebuild=False))
        asked, measure_now = [], cluster.measure
        cluster.measure = lambda configs, progress=None: asked.append(len(configs)) or measure_now(configs, progress)
        result = run_session(cluster, SessionOptions(strategy="random", budget=4, seed=1, confirm=2,
                                                     transfer=False))
    rows = _rows(tmp_path / "t.db")
    assert result.best_config is not None and result.evaluations == 4
    assert len(rows) == len({k for k, _ in rows}) == 5  # the baseline and the 4 the search measured
    assert asked == [1, 2, 2]  # the baseline, then the search's proposals two at a time: one per worker
    assert len(worker_counts(cluster.measured_by)) == 2
    assert result.info["confirmed"] == 2


@pytest.mark.slow
def test_cli_measures_and_tunes_on_a_local_cluster(tmp_path):
    env = {"POCL_DEVICES": "pthread pthread"}
    db = tmp_path / "m.db"
    measured = _cli("measure", str(EXAMPLES / "sobel.icl"), "--size", "40x24", "--random", "6", "--db", str(db),
                    "--cluster", "local:2", env=env)
    assert measured.returncode == 0, measured.stderr
    assert "6 measured (ok 6)" in measured.stdout and len(_rows(db)) == 6
    tuned = _cli("tune", str(EXAMPLES / "sobel.icl"), "--size", "40x24", "--budget", "4", "--confirm", "2",
                 "--strategy", "random", "--db", str(db), "--cluster", "local:2", "-o", str(tmp_path / "out"), env=env)
    assert tuned.returncode == 0, tuned.stderr
    assert "best:" in tuned.stdout and len(_rows(db)) == len({k for k, _ in _rows(db)}) >= 6


def test_the_cluster_writes_each_configuration_once_to_either_store(client, sobel, store_address):
    prog, args = sobel
    configs = prog.space_for(problem_shape=SHAPE).random(4, seed=21)
    with Store(store_address) as store:
        cluster = ClusterMeasurer(client, prog, args, store, chunk=1)
        cluster.measure(configs + configs[:2])
        cluster.measure(configs)  # a second run: everything already stored
        keys = [canonical_config(r.config) for r in store.records()]
    assert len(keys) == len(set(keys)) == 4


class _Calls:
    """A Dask client that records each submitted measurement's configurations, the successor it
    names (`ahead`) and the worker it is pinned to."""

    def __init__(self, client) -> None:
        self.client, self.calls = client, []

    def submit(self, function, *args, **kwargs):
        if function.__name__ == "measure_task":
            self.calls.append({"task": args[1], "ahead": args[3], "workers": kwargs.get("workers")})
        return self.client.submit(function, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_tasks_are_whole_source_groups_built_ahead_by_one_pool_per_worker(tmp_path, client, sobel):
    """Configurations that share a source go in one task (even beyond the chunk); every task
    after the first round was named as its predecessor's successor, so the worker's builders
    started on it early; each worker started its builder pool once, for all its tasks."""
    prog, args = sobel
    _two_live_workers(client)
    space = prog.space_for(problem_shape=SHAPE)
    bases = [c for c in space.random(40, seed=9) if not c.get("local_input")][:4]
    configs = [{**c, "wg_x": x, "wg_y": y} for c in bases for x, y in ((1, 1), (2, 2), (4, 1))]
    plan = plan_measurements(space, configs, set())
    assert len(plan.groups) == 4 and not plan.invalid and {len(g) for g in plan.groups.values()} == {3}
    recording = _Calls(client)
    with Store(tmp_path / "g.db") as store:
        cluster = ClusterMeasurer(recording, prog, args, store, chunk=2)
        summary = cluster.measure(configs)
        again = cluster.measure(space.random(6, seed=10))  # another call: the same pools
    assert summary.statuses == {"ok": 12} and again.measured == 6
    first_call = recording.calls[:4]
    sources = [{canonical_config(space.source_key(c)) for c in call["task"]} for call in first_call]
    assert all(len(s) == 1 for s in sources) and len(set().union(*sources)) == 4  # one whole group per task
    named = [canonical_config(c) for call in first_call if call["ahead"] for c in call["ahead"]]
    for call in first_call[2:]:  # after one task per worker: each was its predecessor's named successor
        assert all(canonical_config(c) in named for c in call["task"])
        assert call["workers"] is not None  # and went to the worker that built it
    assert set(cluster.pool_starts) == set(cluster.builders) and len(cluster.pool_starts) == 2
    assert set(cluster.pool_starts.values()) == {1}, cluster.pool_starts
    assert len(recording.calls) >= 6  # several tasks per worker, one pool each
