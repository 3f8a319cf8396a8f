"""The results store's contract, run against both back ends (SQLite and a real PostgreSQL server),
plus what only a shared server has: concurrent writers, two stores on one database, restarts."""
from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from old_stores import make_store

from imagecl.tuner.address import mask
from imagecl.tuner.store import Record, RunKey, Store, StoreError, canonical_config

RUN = RunKey("p0", "blur", "cpu", "pocl 1", "64x64")
OTHER = RunKey("p0", "blur", "cpu", "pocl 1", "128x128")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _ok(x: int, seconds: float = 1e-3) -> Record:
    return Record({"wg_x": x, "wg_y": 1}, "ok", seconds, [seconds, seconds * 1.1], spread=0.1, verified=True)


def test_add_records_runs(store_address):
    with Store(store_address) as store:
        for x in (1, 2, 4):
            store.add(RUN, _ok(x, x * 1e-3))
        store.add(OTHER, Record({"wg_x": 8, "wg_y": 1}, "build_error", None, error="no 'x'\n\"quoted\" %s ?"))
        got = list(store.records(RUN))
        assert [r.config for r in got] == [{"wg_x": x, "wg_y": 1} for x in (1, 2, 4)]
        assert [r.time for r in got] == [1e-3, 2e-3, 4e-3]
        assert got[0].times == [1e-3, 1.1e-3] and got[0].verified and got[0].spread == 0.1
        assert (got[0].program_name, got[0].problem_size) == ("blur", "64x64")
        (failed,) = store.records(OTHER)
        assert failed.status == "build_error" and failed.error == "no 'x'\n\"quoted\" %s ?" and failed.time is None
        one = list(store.records(RUN, canonical_config({"wg_y": 1, "wg_x": 2})))
        assert [r.time for r in one] == [2e-3]
        assert store.runs() == sorted([RUN, OTHER], key=lambda r: r.problem_size)
        assert len(list(store.records())) == 4


def test_a_configuration_written_again_replaces_its_record(store_address):
    with Store(store_address) as store:
        store.add(RUN, _ok(1, 5e-3))
        store.add(RUN, _ok(2, 6e-3))
        store.add(RUN, _ok(1, 3e-3))
        got = list(store.records(RUN))
    # one record per configuration, the newest last (as SQLite's INSERT OR REPLACE orders it)
    assert [(r.config["wg_x"], r.time) for r in got] == [(2, 6e-3), (1, 3e-3)]


def test_add_many_is_one_transaction(store_address):
    with Store(store_address) as store:
        assert store.add_many(RUN, [_ok(x, x * 1e-3) for x in (1, 2, 4)]) == 3
        assert [r.time for r in store.records(RUN)] == [1e-3, 2e-3, 4e-3]
        # a batch written again replaces its records, as add does
        store.add_many(RUN, [_ok(1, 9e-3)])
        assert [(r.config["wg_x"], r.time) for r in store.records(RUN)] == [(2, 2e-3), (4, 4e-3), (1, 9e-3)]


# PoCL names a 16- and a 32-core Xeon VM alike: one device name and driver, two sizes
XEON = ("cpu-skylake-avx512-Intel(R) Xeon(R) Processor", "5.0+debian")
XEON_16 = RunKey("p0", "blur", *XEON, "64x64", compute_units=16)
XEON_32 = dataclasses.replace(XEON_16, compute_units=32)
XEON_UNSIZED = dataclasses.replace(XEON_16, compute_units=0)


def test_devices_of_one_name_and_driver_but_other_compute_units_are_kept_apart(store_address):
    with Store(store_address) as store:
        store.add(XEON_16, _ok(1, 2e-3))
        store.add(XEON_32, _ok(1, 1e-3))  # the same configuration on the larger VM: a record of its own
        store.add(XEON_32, _ok(2, 3e-3))
        store.add(XEON_16, _ok(1, 4e-3))  # written again: still one record of that configuration
        assert [(r.config["wg_x"], r.time, r.compute_units) for r in store.records(XEON_16)] == [(1, 4e-3, 16)]
        assert [r.time for r in store.records(XEON_32)] == [1e-3, 3e-3]
        assert store.done_keys(XEON_16) == {canonical_config(_ok(1).config)}
        assert list(store.records(XEON_UNSIZED)) == [] and store.unsized(XEON_16) == 0
        assert store.runs() == [XEON_16, XEON_32]
        assert [r.compute_units for r in store.records()] == [32, 32, 16]


def test_a_version_2_store_is_upgraded_and_its_records_are_reused_by_no_sized_run(store_address):
    make_store(store_address, 2, records=[(XEON_UNSIZED, _ok(x, x * 1e-3)) for x in (1, 2)],
               refusals=[("k" * 16, *XEON, {"wg_x": 4})], devices=[(*XEON, {"name": XEON[0]})])
    with Store(store_address, readonly=True) as old:  # read as it is: compute units unknown
        assert [(r.time, r.compute_units) for r in old.records()] == [(1e-3, 0), (2e-3, 0)]
        assert old.runs() == [XEON_UNSIZED]
        assert old.unsized(XEON_16) == 2 and list(old.records(XEON_16)) == []
        assert old.refused("k" * 16, *XEON, 0) == [{"wg_x": 4}] and old.refused("k" * 16, *XEON, 16) == []
        assert old.devices() == {(*XEON, 0): {"name": XEON[0]}}
    assert _schema_version(store_address) == "2"  # reading changed nothing
    with Store(store_address) as store:
        assert _schema_version(store_address) == "3"
        assert [(r.time, r.compute_units) for r in store.records(XEON_UNSIZED)] == [(1e-3, 0), (2e-3, 0)]
        assert list(store.records(XEON_16)) == [] and store.done_keys(XEON_16) == set()
        assert store.unsized(XEON_16) == 2 and store.unsized(XEON_UNSIZED) == 0
        assert store.refused("k" * 16, *XEON, 16) == [] and store.refused("k" * 16, *XEON, 0) == [{"wg_x": 4}]
        assert store.devices() == {(*XEON, 0): {"name": XEON[0]}}
        store.add(XEON_16, _ok(1, 5e-3))  # measured again on the 16-core VM, beside the unsized record
        store.refuse("k" * 16, *XEON, 16, {"wg_x": 8})
        store.add_device(*XEON, {"name": XEON[0], "compute_units": 16}, 16)
        assert [r.time for r in store.records(XEON_16)] == [5e-3]
        assert len(list(store.records())) == 3
    with Store(store_address) as again:  # opening an upgraded store changes nothing
        assert len(list(again.records())) == 3 and again.refused("k" * 16, *XEON, 16) == [{"wg_x": 8}]


def test_tune_does_not_reuse_an_upgraded_stores_unsized_records_and_says_so_once(store_address, tmp_path):
    """A version-2 store holds box_blur's default configuration at this size on a device of this
    machine's device's name and driver, absurdly fast: measured on a device of another size,
    perhaps. `imagecl tune` measures it again, keeps the old record apart, and says why once."""
    import imagecl
    from imagecl.runtime.devices import select_device
    from imagecl.tuner.target import run_key

    program = imagecl.load(EXAMPLES / "box_blur.icl")
    device = select_device(None)
    run = run_key(program, device, (16, 24))
    space = program.space_for(device, (16, 24))
    default, other = space.complete(space.defaults), space.random(1, seed=3)[0]
    unsized = dataclasses.replace(run, compute_units=0)
    make_store(store_address, 2, records=[(unsized, Record(default, "ok", 1e-9, [1e-9])),
                                          (unsized, Record(other, "ok", 1e-9, [1e-9]))])
    env = {**os.environ, "IMAGECL_TUNED": str(tmp_path / "registry")}
    result = subprocess.run([sys.executable, "-m", "imagecl", "tune", str(EXAMPLES / "box_blur.icl"), "--size",
                             "24x16", "--budget", "2", "--confirm", "0", "--no-knowledge", "--db", store_address,
                             "-o", str(tmp_path / "tuned")], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("not reusing 2 older records") == 1, result.stderr
    assert "stored without the device's number of compute units" in result.stderr
    with Store(store_address, readonly=True) as store:
        measured = {canonical_config(r.config): r for r in store.records(run)}
        assert measured[canonical_config(default)].time > 1e-9  # measured here, not taken from the old record
        assert [r.time for r in store.records(unsized)] == [1e-9, 1e-9]  # kept, apart


def test_adopt_makes_an_older_stores_records_this_devices(store_address, tmp_path):
    """`imagecl results --adopt`: the user vouches that an older store's unsized records of this
    device's name and driver were measured on it; they become its records, except where a record
    of its size has the same configuration (that one stands), and others are untouched."""
    import imagecl
    from imagecl.runtime.devices import select_device
    from imagecl.tuner.target import run_key

    program = imagecl.load(EXAMPLES / "box_blur.icl")
    device = select_device(None)
    run = run_key(program, device, (16, 24))
    space = program.space_for(device, (16, 24))
    a, b, c = space.random(3, seed=5)
    unsized = dataclasses.replace(run, compute_units=0)
    elsewhere = dataclasses.replace(unsized, device="another device")
    make_store(store_address, 2, records=[(unsized, Record(a, "ok", 1.0, [1.0])), (unsized, Record(b, "ok", 2.0, [2.0])),
                                          (elsewhere, Record(c, "ok", 3.0, [3.0]))])
    with Store(store_address) as store:  # upgraded; then b is measured again on this device
        store.add_many(run, [Record(b, "ok", 5.0, [5.0])])
    env = {**os.environ, "IMAGECL_TUNED": str(tmp_path / "registry")}
    adopt = [sys.executable, "-m", "imagecl", "results", "--db", store_address, "--adopt"]
    result = subprocess.run(adopt, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    assert "1 record of " in result.stdout and f"({run.compute_units} compute units)" in result.stdout
    assert "1 left as they were" in result.stdout
    with Store(store_address, readonly=True) as store:
        sized = {canonical_config(r.config): r.time for r in store.records(run)}
        assert sized == {canonical_config(a): 1.0, canonical_config(b): 5.0}  # b: the sized record stands
        assert [r.time for r in store.records(unsized)] == [2.0]  # the old b, left apart
        assert [r.time for r in store.records(dataclasses.replace(elsewhere))] == [3.0]  # another device's
    again = subprocess.run(adopt, capture_output=True, text=True, timeout=120, env=env)
    assert again.returncode == 0 and "0 records of " in again.stdout
    wrong = subprocess.run([sys.executable, "-m", "imagecl", "results", "--db", store_address, "--device", "0"],
                           capture_output=True, text=True, timeout=120, env=env)
    assert wrong.returncode != 0 and "--device goes with --adopt" in wrong.stderr


def _schema_version(address: str) -> str:
    if address.startswith("postgresql"):
        import psycopg

        with psycopg.connect(address) as conn:
            return conn.execute("SELECT value FROM imagecl.meta WHERE key='schema_version'").fetchone()[0]
    with sqlite3.connect(address) as con:
        return con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]


def test_postgres_add_many_refused_midway_stores_nothing(pg_server):
    # the server itself refuses the second row (a value out of its INTEGER column's range) after
    # taking the first: the transaction must take the first back
    refused = Record({"wg_x": 2, "wg_y": 1}, "ok", 1e-3, verified=2 ** 40)
    with Store(pg_server.new_database()) as store:
        with pytest.raises(StoreError, match="out of range"):
            store.add_many(RUN, [_ok(1), refused, _ok(4)])
        assert list(store.records(RUN)) == []


def test_done_keys_and_timeout_limits(store_address):
    with Store(store_address) as store:
        store.add(RUN, _ok(1))
        store.add(RUN, Record({"wg_x": 2, "wg_y": 1}, "timeout", None, limit=5.0))
        store.add(RUN, Record({"wg_x": 4, "wg_y": 1}, "timeout", None))  # limit unknown
        keys = {x: canonical_config({"wg_x": x, "wg_y": 1}) for x in (1, 2, 4)}
        assert store.done_keys(RUN) == set(keys.values())
        assert store.done_keys(RUN, timeout=5.0) == {keys[1], keys[2]}
        assert store.done_keys(RUN, timeout=10.0) == {keys[1]}  # a longer limit measures the timeout again
        assert store.done_keys(OTHER) == set()


def test_readonly_reads_and_never_writes(store_address):
    with Store(store_address) as store:
        store.add(RUN, _ok(1))
    with Store(store_address, readonly=True) as store:
        assert len(list(store.records())) == 1
        with pytest.raises(StoreError, match="read-only"):
            store.add(RUN, _ok(2))
    with Store(store_address) as store:
        assert len(list(store.records())) == 1


def test_two_stores_on_one_database_see_each_others_writes(store_address):
    with Store(store_address) as a, Store(store_address) as b:
        a.add(RUN, _ok(1))
        assert [r.config["wg_x"] for r in b.records(RUN)] == [1]
        b.add(RUN, _ok(2))
        assert a.done_keys(RUN) == {canonical_config({"wg_x": x, "wg_y": 1}) for x in (1, 2)}


def test_concurrent_writers_record_each_configuration_once(store_address):
    """Four writers (as four machines) measure overlapping configurations at once."""
    with Store(store_address):
        pass  # created once, as the first run on a new store does
    errors = []

    def writer(seed: int) -> None:
        try:
            with Store(store_address) as store:
                for x in range(40):
                    store.add(RUN, _ok(x, (x + seed) * 1e-4))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with Store(store_address, readonly=True) as store:
        got = [r.config["wg_x"] for r in store.records(RUN)]
    assert sorted(got) == list(range(40))


def test_postgres_schemas_made_concurrently(pg_server):
    """Writers opening a brand-new database at once: one makes the schema, none fails."""
    url = pg_server.new_database()
    errors = []

    def opener() -> None:
        try:
            with Store(url) as store:
                store.add(RUN, _ok(1))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with Store(url, readonly=True) as store:
        assert len(list(store.records())) == 1


def _foreign_schema(url: str, sql: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql)
        return _shape(url)


def _shape(url: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute("SELECT table_name, column_name FROM information_schema.columns"
                            " WHERE table_schema='imagecl' ORDER BY 1, 2").fetchall()


@pytest.mark.parametrize("sql", [
    "CREATE SCHEMA imagecl; CREATE TABLE imagecl.users (name TEXT)",
    "CREATE SCHEMA imagecl; CREATE TABLE imagecl.measurements (id INT, size TEXT)",
    "CREATE SCHEMA imagecl; CREATE TABLE imagecl.meta (key TEXT PRIMARY KEY, value TEXT)",
])
def test_postgres_foreign_schema_refused_untouched(pg_server, sql):
    url = pg_server.new_database()
    before = _foreign_schema(url, sql)
    for readonly in (False, True):
        with pytest.raises(StoreError, match="not a results store of imagecl.*left unchanged"):
            Store(url, readonly=readonly)
    assert _shape(url) == before


def test_postgres_newer_schema_version_refused(pg_server):
    import psycopg

    url = pg_server.new_database()
    Store(url).close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE imagecl.meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(StoreError, match="schema version 99"):
        Store(url)


def test_postgres_readonly_store_runs_read_only_transactions(pg_server):
    """Not only add() refuses: the connection itself cannot write."""
    url = pg_server.new_database()
    Store(url).close()
    with Store(url, readonly=True) as store:
        with pytest.raises(StoreError, match="read-only transaction"):
            store._execute("INSERT INTO meta VALUES (?, ?)", ("k", "v"))


def test_postgres_readonly_creates_nothing(pg_server):
    url = pg_server.new_database()
    with pytest.raises(StoreError, match="no results store in this database"):
        Store(url, readonly=True)
    assert _shape(url) == []


def test_sqlite_url_is_the_file(tmp_path):
    with Store(f"sqlite:///{tmp_path}/u.db") as store:
        store.add(RUN, _ok(1))
    with Store(tmp_path / "u.db", readonly=True) as store:
        assert len(list(store.records())) == 1
    with pytest.raises(StoreError, match="not a database address"):
        Store("mysql://u@h/db")


def test_password_masked_in_messages(pg_server):
    url = f"postgresql://nobody:s3cret-pw@127.0.0.1:{pg_server.port}/no_such_db"
    with pytest.raises(StoreError) as caught:
        Store(url)
    assert "s3cret-pw" not in str(caught.value) and "***" in str(caught.value)
    assert mask("postgresql://u:pw@h:5/d?password=pw2") == "postgresql://u:***@h:5/d?password=***"
    assert mask("/tmp/a:b@c.db") == "/tmp/a:b@c.db"


def test_unreachable_server_is_a_clear_error_after_bounded_retries(pg_server):
    url = pg_server.new_database()
    store = Store(url, retries=3, backoff=0.05)
    pg_server.stop()
    try:
        with pytest.raises(StoreError, match="cannot be reached after 3 attempts"):
            store.add(RUN, _ok(1))
    finally:
        pg_server.start()
    store.add(RUN, _ok(1))  # the next operation reconnects
    assert len(list(store.records())) == 1
    store.close()


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_server_restarted_between_and_during_writes_loses_nothing(pg_server, mode):
    """Every acknowledged add survives the server's restart (a clean stop, or a crash: `immediate`),
    adds made while it is down wait for it, and nothing is recorded twice."""
    url = pg_server.new_database()
    acknowledged = []
    with Store(url, retries=40, backoff=0.05) as store:
        for x in range(10):
            store.add(RUN, _ok(x))
            acknowledged.append(x)
        pg_server.stop(mode)  # between writes: the next add finds the connection dead
        restart = threading.Timer(0.5, pg_server.start)  # during writes: back while an add retries
        restart.start()
        try:
            for x in range(10, 20):
                store.add(RUN, _ok(x))
                acknowledged.append(x)
        finally:
            restart.join()
        assert sorted(r.config["wg_x"] for r in store.records(RUN)) == acknowledged
    with Store(url, readonly=True) as fresh:
        assert sorted(r.config["wg_x"] for r in fresh.records(RUN)) == list(range(20))


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "imagecl", *args], capture_output=True, text=True, timeout=300)


def test_measure_then_results_on_postgres(pg_server, tmp_path):
    url = pg_server.new_database()
    icl = str(EXAMPLES / "sobel.icl")
    measured = _cli("measure", icl, "--size", "32x32", "--random", "3", "--db", url)
    assert measured.returncode == 0, measured.stderr
    shown = _cli("results", "--db", url, "--json")
    assert shown.returncode == 0, shown.stderr
    records = json.loads(shown.stdout)
    assert len(records) == 3 and all(r["program"] == "sobel" for r in records)
    again = _cli("measure", icl, "--size", "32x32", "--random", "3", "--db", url)  # all stored: none measured twice
    assert again.returncode == 0, again.stderr
    assert len(json.loads(_cli("results", "--db", url, "--json").stdout)) == 3
    text = _cli("results", "--db", url)
    assert text.returncode == 0 and "sobel" in text.stdout
    exported = _cli("export", "--db", url, "--format", "kernel_tuner", "-o", str(tmp_path / "c.json"))
    assert exported.returncode == 0, exported.stderr
    assert len(json.loads((tmp_path / "c.json").read_text())["cache"]) == 3
    replay = _cli("simulate", url, "--strategy", "random", "--max-evals", "2", "--repeats", "1")
    assert replay.returncode == 0, replay.stderr
    wrong = _cli("results", "--db", "mysql://u@h/db")
    assert wrong.returncode == 1 and "not a database address" in wrong.stderr and "Traceback" not in wrong.stderr


def test_tune_into_a_postgres_store(pg_server, tmp_path):
    url = pg_server.new_database()
    out = tmp_path / "tuned"
    env = {**os.environ, "IMAGECL_TUNED": str(tmp_path / "registry")}
    result = subprocess.run([sys.executable, "-m", "imagecl", "tune", str(EXAMPLES / "box_blur.icl"), "--size",
                             "24x16", "--budget", "3", "--confirm", "0", "--db", url, "-o", str(out)],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    assert f"measurements in {url}" in result.stdout
    assert not (out / "measurements.db").exists()  # the store is the server's, no file beside the kernel
    with Store(url, readonly=True) as store:
        assert len(list(store.records())) >= 3


def test_adds_while_reading_are_stored_at_once(store_address):
    """A caller that adds while it iterates records (and stops half-way) loses none of the adds,
    and a second reading can run inside the first."""
    with Store(store_address) as store:
        for x in range(3):
            store.add(RUN, _ok(x))
        reading = store.records(RUN)
        next(reading)
        assert len(list(store.records(RUN))) == 3  # a reading inside a reading
        store.add(OTHER, _ok(9))
        reading.close()  # abandoned half-way
    with Store(store_address, readonly=True) as fresh:
        assert [r.config["wg_x"] for r in fresh.records(OTHER)] == [9]


def test_server_crash_under_load_from_several_writers_loses_nothing(pg_server):
    """Three writers (machines) adding overlapping configurations while the server crashes and
    comes back: every add any of them had acknowledged is stored, each configuration once."""
    url = pg_server.new_database()
    Store(url).close()
    acknowledged: set[int] = set()
    errors = []
    lock = threading.Lock()
    started = threading.Barrier(4)

    def writer(offset: int) -> None:
        try:
            with Store(url, retries=40, backoff=0.05) as store:
                started.wait()
                for i in range(60):
                    x = (i + offset * 20) % 80
                    store.add(RUN, _ok(x))
                    with lock:
                        acknowledged.add(x)
                    time.sleep(0.01)  # a measurement's pace: the crash comes in the middle
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    started.wait()
    pg_server.stop("immediate")
    try:
        crashed_under_load = all(t.is_alive() for t in threads) and len(acknowledged) < 80
    finally:
        pg_server.start()
        for t in threads:
            t.join()
    assert crashed_under_load
    assert not errors
    with Store(url, readonly=True) as store:
        got = [r.config["wg_x"] for r in store.records(RUN)]
    assert len(got) == len(set(got)) and set(got) == acknowledged == set(range(80))
