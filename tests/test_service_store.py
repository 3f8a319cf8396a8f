"""The tuning service on its stores: the refusal, program and device tables in both back ends,
the schema version, two servers sharing one PostgreSQL store, and faults (a server killed in a
burst of Submits, PostgreSQL restarted under load) that must lose no acknowledged observation."""
from __future__ import annotations

import signal
import sqlite3
import threading
import time

import httpx
import pytest
from service_util import DEVICE, ProcessServer, ThreadServer, auth, body, token_file

import imagecl
from imagecl.service.app import Settings
from imagecl.service.knowledge import Knowledge
from imagecl.tuner.knowledge import device_from_json
from imagecl.tuner.store import SCHEMA_VERSION, Store, StoreError, canonical_config
from old_stores import make_store
from service_util import EXAMPLES


def test_refusals_programs_and_devices_round_trip(store_address):
    with Store(store_address) as store:
        store.refuse("k" * 16, "dev'ice", "drv", 16, {"wg_x": 4, "a": 1})
        store.refuse("k" * 16, "dev'ice", "drv", 16, {"a": 1, "wg_x": 4})  # the same configuration: kept once
        store.refuse("k" * 16, "other", "drv", 16, {"wg_x": 8})
        store.refuse("k" * 16, "dev'ice", "drv", 32, {"wg_x": 2})  # a device of that name of another size
        store.add_program("h1", "k" * 16, "blur", "void f() {}")
        store.add_program("h1", "k" * 16, "blur", "void f() {}")
        store.add_device("dev'ice", "drv", {"name": "dev'ice", "n": 1}, 16)
        store.add_device("dev'ice", "drv", {"name": "dev'ice", "n": 2}, 16)  # newer features replace older ones
        store.add_device("dev'ice", "drv", {"name": "dev'ice", "n": 3}, 32)
    with Store(store_address, readonly=True) as store:
        assert store.refused("k" * 16, "dev'ice", "drv", 16) == [{"a": 1, "wg_x": 4}]
        assert store.refused("k" * 16, "dev'ice", "drv", 32) == [{"wg_x": 2}]
        assert store.refused("k" * 16, "dev'ice", "drv", 0) == []
        assert store.refused("k" * 16, "dev'ice", "other", 16) == []
        assert store.programs() == [("h1", "k" * 16, "blur", "void f() {}")]
        assert store.program_hashes("k" * 16) == ["h1"]
        assert store.devices() == {("dev'ice", "drv", 16): {"name": "dev'ice", "n": 2},
                                   ("dev'ice", "drv", 32): {"name": "dev'ice", "n": 3}}
        with pytest.raises(StoreError, match="read-only"):
            store.refuse("k" * 16, "d", "v", 1, {})


def _make_version_1(path):
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE measurements (id INTEGER PRIMARY KEY, program_hash TEXT NOT NULL, program_name TEXT NOT NULL,
            device TEXT NOT NULL, driver TEXT NOT NULL, problem_size TEXT NOT NULL, config TEXT NOT NULL,
            config_key TEXT NOT NULL, source_hash TEXT, status TEXT NOT NULL, time REAL, times TEXT, spread REAL,
            error TEXT, verified INTEGER NOT NULL DEFAULT 0, timestamp REAL NOT NULL, timeout_limit REAL,
            UNIQUE (program_hash, device, driver, problem_size, config_key));
    """)
    con.commit()
    con.close()


def test_a_version_1_sqlite_store_is_read_as_it_is_and_upgraded_for_writing(tmp_path):
    db = tmp_path / "v1.db"
    _make_version_1(db)
    with Store(db, readonly=True) as store:
        assert store.refused("k", "d", "v", 0) == [] and store.programs() == []
    assert {r[0] for r in sqlite3.connect(db).execute("SELECT name FROM sqlite_master")} >= {"meta"}
    assert "refusals" not in {r[0] for r in sqlite3.connect(db).execute("SELECT name FROM sqlite_master")}
    with Store(db) as store:
        store.refuse("k", "d", "v", 4, {"wg_x": 2})
    con = sqlite3.connect(db)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    con.close()


def test_a_store_of_a_newer_schema_is_refused(store_address):
    Store(store_address).close()
    if store_address.startswith("postgresql"):
        import psycopg

        with psycopg.connect(store_address, autocommit=True) as conn:
            conn.execute("UPDATE imagecl.meta SET value=%s WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    else:
        con = sqlite3.connect(store_address)
        con.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
        con.commit()
        con.close()
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}"):
        Store(store_address)


def test_a_version_1_postgres_store_is_upgraded(pg_server):
    import psycopg

    url = pg_server.new_database()
    make_store(url, 1)
    with Store(url, readonly=True) as store:
        assert store.refused("k", "d", "v", 4) == []
    with Store(url) as store:
        store.refuse("k", "d", "v", 4, {"wg_x": 2})
        assert store.refused("k", "d", "v", 4) == [{"wg_x": 2}]
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT value FROM imagecl.meta WHERE key='schema_version'").fetchone() == (
            str(SCHEMA_VERSION),)


def test_two_servers_on_one_postgres_store_share_what_they_learn(pg_server, tmp_path):
    url = pg_server.new_database()
    settings = Settings(db=url, token_file=str(token_file(tmp_path)), cache_seconds=0.3, train=False)
    a, b = ThreadServer(settings), ThreadServer(settings)
    try:
        first = b.http.post("/request", json=body()).json()
        assert first["source"] == "default"  # and B now holds it in its cache
        space = Knowledge.space(imagecl.load(EXAMPLES / "box_blur.icl"), device_from_json(DEVICE), (64, 48))
        learned = next(space.complete(c) for c in space.random(20, seed=5) if space.complete(c) != space.complete({}))
        assert a.http.post("/submit", json={**body(), "configuration": learned, "seconds": 1e-6},
                           headers=auth()).status_code == 200
        time.sleep(0.4)  # B's cached answer expires
        answer = b.http.post("/request", json=body()).json()
        assert (answer["source"], answer["configuration"]) == ("measured", learned)
        # and what B is told to refuse, A never suggests again
        assert b.http.post("/refuse", json={**body(), "configuration": learned}, headers=auth()).status_code == 200
        time.sleep(0.4)
        assert a.http.post("/request", json=body()).json()["configuration"] != learned
    finally:
        a.stop()
        b.stop()


def _burst(url: str, configs: list[dict], acked: list, errors: list, stop: threading.Event, size=(64, 48)) -> None:
    with httpx.Client(base_url=url, timeout=30) as http:
        for i, config in enumerate(configs):
            if stop.is_set():
                return
            try:
                reply = http.post("/submit", json={**body(size=size), "configuration": config,
                                                   "seconds": 1e-3 + i * 1e-6}, headers=auth())
            except httpx.HTTPError as exc:
                errors.append(exc)
                continue
            if reply.status_code == 200:
                acked.append(canonical_config(config))
            else:
                errors.append(reply.text)


def _stored(address: str) -> set[str]:
    with Store(address, readonly=True) as store:
        return {canonical_config(r.config) for r in store.records()}


def _configs(n: int, size=(64, 48)) -> list[dict]:
    space = Knowledge.space(imagecl.load(EXAMPLES / "box_blur.icl"), device_from_json(DEVICE), size)
    return [space.complete(c) for c in space.random(n, seed=7)]


def test_a_server_killed_during_a_burst_of_submits_loses_nothing_acknowledged(store_address, tmp_path):
    server = ProcessServer(store_address, tmp_path, "--no-train")
    configs = _configs(400)
    acked: list = []
    errors: list = []
    stop = threading.Event()
    threads = [threading.Thread(target=_burst, args=(server.url, configs[i::4], acked, errors, stop))
               for i in range(4)]
    for t in threads:
        t.start()
    deadline = time.time() + 60
    while len(acked) < 40 and time.time() < deadline:
        time.sleep(0.01)
    server.process.send_signal(signal.SIGKILL)  # mid-burst: some Submits are in flight
    server.process.wait()
    stop.set()
    for t in threads:
        t.join(60)
    server.stop()
    assert len(acked) >= 40 and len(acked) < len(configs), (len(acked), errors[:3])
    assert errors  # the kill was during the burst: some Submits got no answer
    stored = _stored(store_address)
    assert set(acked) <= stored


def test_postgres_restarted_under_load_loses_nothing_acknowledged(pg_server, tmp_path):
    url = pg_server.new_database()
    server = ThreadServer(Settings(db=url, token_file=str(token_file(tmp_path)), train=False))
    configs = _configs(300)
    acked: list = []
    errors: list = []
    stop = threading.Event()
    threads = [threading.Thread(target=_burst, args=(server.url, configs[i::3], acked, errors, stop))
               for i in range(3)]
    try:
        for t in threads:
            t.start()
        deadline = time.time() + 60
        while len(acked) < 30 and time.time() < deadline:
            time.sleep(0.01)
        during = len(acked)
        pg_server.stop("fast")
        time.sleep(0.5)
        pg_server.start()
        for t in threads:
            t.join(120)
    finally:
        stop.set()
        server.stop()
    assert not [e for e in errors if "503" not in str(e)], errors[:3]  # every failure said "try again"
    assert len(acked) > during + 10  # it reconnected: Submits after the restart were stored
    assert set(acked) <= _stored(url)


def test_serve_with_two_worker_processes(tmp_path):
    """`imagecl serve --workers 2`: both processes answer, and what one stores the other serves
    once its cached answer expires (--cache-seconds)."""
    server = ProcessServer(str(tmp_path / "s.db"), tmp_path, "--workers", "2", "--no-train", "--cache-seconds", "0.2")
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            for _ in range(4):  # new connections: the kernel spreads them over the workers
                with httpx.Client(base_url=server.url, timeout=60) as fresh:
                    assert fresh.post("/request", json=body()).json()["source"] == "default"
            learned = _configs(2)[1]
            assert http.post("/submit", json={**body(), "configuration": learned, "seconds": 1e-6},
                             headers=auth()).json() == {"stored": 1}
            time.sleep(0.3)
            for _ in range(6):
                with httpx.Client(base_url=server.url, timeout=60) as fresh:
                    answer = fresh.post("/request", json=body()).json()
                    assert (answer["source"], answer["configuration"]) == ("measured", learned)
    finally:
        server.stop()
