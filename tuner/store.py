"""The results store: one embedded SQLite database of measurements.

Each measurement is committed in its own transaction (WAL journal, synchronous=FULL), so a run
interrupted at any moment (Ctrl-C, kill -9, power loss) loses at most the measurement in flight,
the database stays consistent, and a restarted run skips what is already stored.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from ..errors import ImageCLError

SCHEMA_VERSION = 1

STATUSES = ("ok", "build_error", "invalid_work_group", "out_of_resources", "wrong_output", "timeout", "crash",
            "invalid_config", "error")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY,
    program_hash TEXT NOT NULL,
    program_name TEXT NOT NULL,
    device TEXT NOT NULL,
    driver TEXT NOT NULL,
    problem_size TEXT NOT NULL,
    config TEXT NOT NULL,
    config_key TEXT NOT NULL,
    source_hash TEXT,
    status TEXT NOT NULL,
    time REAL,
    times TEXT,
    spread REAL,
    error TEXT,
    verified INTEGER NOT NULL DEFAULT 0,
    timestamp REAL NOT NULL,
    UNIQUE (program_hash, device, driver, problem_size, config_key)
);
CREATE INDEX IF NOT EXISTS by_run ON measurements (program_hash, device, driver, problem_size);
"""


def canonical_config(config: dict) -> str:
    return json.dumps({k: int(v) for k, v in sorted(config.items())}, separators=(",", ":"))


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class Record:
    config: dict
    status: str
    time: Optional[float]  # seconds (median), None for failures
    times: list[float] = field(default_factory=list)
    spread: Optional[float] = None
    error: Optional[str] = None
    verified: bool = False
    source_hash: Optional[str] = None
    program_name: str = ""
    program_hash: str = ""
    device: str = ""
    driver: str = ""
    problem_size: str = ""
    timestamp: float = 0.0
    limit: Optional[float] = None  # a timeout's limit in seconds (None: not a timeout, or recorded without)

    def to_json(self) -> dict:
        return {"config": self.config, "status": self.status, "time": self.time, "times": self.times,
                "spread": self.spread, "error": self.error, "verified": self.verified, "limit": self.limit,
                "program": self.program_name, "program_hash": self.program_hash, "device": self.device,
                "driver": self.driver, "problem_size": self.problem_size, "timestamp": self.timestamp,
                "source_hash": self.source_hash}


@dataclass(frozen=True)
class RunKey:
    """What makes measurements comparable: the program, the device and driver, the problem size."""

    program_hash: str
    program_name: str
    device: str
    driver: str
    problem_size: str

    @property
    def family(self) -> str:
        """The program whatever its problem size. A hand-written kernel's hash names its sizes and
        arguments too ("family.instance", tuner/kernel.py), since measurements at one size cannot be
        reused at another; its family is the part before the dot. An .icl program's hash is its
        source's, the same at every size: the whole hash."""
        return self.program_hash.split(".", 1)[0]


APPLICATION_ID = 0x494D434C  # "IMCL" in the header (PRAGMA application_id): the file is a results store
_OUR_TABLES = {"meta", "measurements"}


def _inspect(path: Path) -> str:
    """What `path` holds: "missing", "empty" (no bytes, or SQLite without tables), "ours", or
    why it is someone else's. Reads without changing the file (no journal mode, no locks taken
    for writing; `immutable` when there is no write-ahead log to read, so that no -shm file is made)."""
    try:
        if not path.exists():
            return "missing"
        if not path.is_file():
            return "not a file"
        with open(path, "rb") as f:
            head = f.read(100)
    except OSError as exc:
        return f"cannot read ({exc.strerror or exc})"
    if not head:
        return "empty"
    if len(head) < 100 or head[:16] != b"SQLite format 3\x00":
        return "not an SQLite database"
    wal = Path(f"{path}-wal")
    uri = f"{path.resolve().as_uri()}?mode=ro" + ("" if wal.exists() else "&immutable=1")
    try:
        db = sqlite3.connect(uri, uri=True, timeout=30.0)
        try:
            application_id = db.execute("PRAGMA application_id").fetchone()[0]
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            version = (db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                       if "meta" in tables else None)
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        return f"a damaged or unreadable SQLite database ({exc})"
    if application_id not in (0, APPLICATION_ID):
        return f"an SQLite database of another application (application_id {application_id:#x})"
    if not tables:
        return "empty"
    if not tables <= _OUR_TABLES or "measurements" not in tables or version is None:
        return "an SQLite database of another application (tables: " + ", ".join(sorted(tables)) + ")"
    if not str(version[0]).isdigit() or int(version[0]) > SCHEMA_VERSION:  # older versions are upgraded on opening
        return f"a results database of schema version {version[0]} (this imagecl reads up to {SCHEMA_VERSION})"
    return "ours"


class Store:
    """The results database at `path`. For writing (the default) it is created if missing, in an
    existing folder; an existing file is used only when it is an empty file or database or already
    a results store: anything else is refused untouched. `readonly`: the file must exist and be
    ours; it is opened read-only and never changed."""

    def __init__(self, path: str | Path, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        try:
            state = _inspect(self.path)
        except OSError as exc:  # e.g. a name too long for the file system
            raise StoreError(f"{self.path}: cannot open ({exc.strerror or exc})") from None
        if state == "missing":
            if readonly:
                raise StoreError(f"{self.path}: no such results database")
            if not self.path.parent.is_dir():
                raise StoreError(f"{self.path}: the folder {self.path.parent} does not exist; create it first")
        elif state.startswith("cannot"):
            raise StoreError(f"{self.path}: {state}")
        elif state not in ("empty", "ours"):
            raise StoreError(f"{self.path}: not a results database of imagecl: {state}; "
                             "it is left unchanged" + ("" if readonly else " (choose another --db)"))
        try:
            if readonly:
                self.db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0,
                                          isolation_level=None)
                if state == "empty":
                    # nothing to read: empty tables of this connection's own, the file stays as it is
                    self.db.executescript(_SCHEMA.split("CREATE INDEX")[0].replace("CREATE TABLE IF NOT EXISTS",
                                                                                   "CREATE TEMP TABLE"))
                self._limit = self._limit_column()
                return
            self.db = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(_SCHEMA)
            self.db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            add_limit_column(self.db)
            self._limit = "timeout_limit"
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable results database ({exc})") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _limit_column(self) -> str:
        # a read-only store of an older database has no timeout_limit column (the migration writes)
        columns = {row[1] for row in self._execute("PRAGMA table_info(measurements)")}
        return "timeout_limit" if "timeout_limit" in columns else "NULL"

    def _execute(self, query: str, args: tuple = ()) -> list[tuple]:
        """Rows of `query`; a damaged database is the user's file to mend, not a crash."""
        try:
            return self.db.execute(query, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot {'read' if query.startswith('SELECT') else 'write'} the results "
                             f"database ({exc})") from None

    def _rows(self, query: str, args: tuple = ()) -> Iterator[tuple]:
        """The rows of `query` one at a time (a store can hold hundreds of thousands), as _execute."""
        try:
            yield from self.db.execute(query, args)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot read the results database ({exc})") from None

    def done_keys(self, run: RunKey, timeout: Optional[float] = None) -> set[str]:
        """The configurations of `run` that need no new measurement: all stored ones, except,
        with the `timeout` of a new run, timeouts recorded with a smaller limit (or none)."""
        rows = self._execute(
            f"SELECT config_key, status, {self._limit} FROM measurements"
            " WHERE program_hash=? AND device=? AND driver=? AND problem_size=?",
            (run.program_hash, run.device, run.driver, run.problem_size))
        return {key for key, status, limit in rows
                if timeout is None or _settled(status, limit, timeout)}

    def add(self, run: RunKey, record: Record) -> None:
        if self.readonly:
            raise StoreError(f"{self.path}: opened read-only")
        self._execute(
            "INSERT OR REPLACE INTO measurements (program_hash, program_name, device, driver, problem_size, config,"
            " config_key, source_hash, status, time, times, spread, error, verified, timestamp, timeout_limit)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run.program_hash, run.program_name, run.device, run.driver, run.problem_size,
             json.dumps(record.config), canonical_config(record.config), record.source_hash, record.status,
             record.time, json.dumps(record.times), record.spread, record.error, int(record.verified),
             record.timestamp or time.time(), record.limit))

    def records(self, run: Optional[RunKey] = None, config_key: Optional[str] = None) -> Iterator[Record]:
        """The stored records (of `run`; of one configuration, by its canonical key)."""
        query = "SELECT program_name, program_hash, device, driver, problem_size, config, source_hash, status," \
                f" time, times, spread, error, verified, timestamp, {self._limit} FROM measurements"
        args: tuple = ()
        if run is not None:
            query += " WHERE program_hash=? AND device=? AND driver=? AND problem_size=?"
            args = (run.program_hash, run.device, run.driver, run.problem_size)
        if config_key is not None:
            query += (" AND" if run is not None else " WHERE") + " config_key=?"
            args += (config_key,)
        for row in self._rows(query + " ORDER BY id", args):
            (name, phash, device, driver, size, config, shash, status, t, times, spread, error, verified, ts,
             limit) = row
            try:
                parsed, parsed_times = json.loads(config), json.loads(times or "[]")
            except (TypeError, ValueError, RecursionError):
                raise StoreError(f"{self.path}: a damaged record (configuration {str(config)[:60]!r})") from None
            if not isinstance(parsed, dict):
                raise StoreError(f"{self.path}: a damaged record (configuration {str(config)[:60]!r})")
            yield Record(parsed, status, t, parsed_times, spread, error, bool(verified),
                         shash, name, phash, device, driver, size, ts, limit)

    def runs(self) -> list[RunKey]:
        rows = self._execute("SELECT DISTINCT program_hash, program_name, device, driver, problem_size"
                             " FROM measurements ORDER BY program_name, device, problem_size")
        return [RunKey(*r) for r in rows]

    def add_many(self, run: RunKey, records: Iterable[Record]) -> int:
        n = 0
        for r in records:
            self.add(run, r)
            n += 1
        return n


def add_limit_column(db: sqlite3.Connection) -> None:
    """Migration: the `timeout_limit` column (seconds a timeout was given; NULL for other
    results and for timeouts stored before it existed), added to a database that lacks it.
    A timeout is only final for runs that allow no more time than it had (`settled`)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(measurements)")}
    if "timeout_limit" not in columns:
        db.execute("ALTER TABLE measurements ADD COLUMN timeout_limit REAL")


def _settled(status: str, limit: Optional[float], timeout: float) -> bool:
    # a timeout without a limit (an older database's) is measured again: its limit is unknown
    return status != "timeout" or (limit is not None and limit >= timeout)


def settled(record: Record, timeout: float) -> bool:
    """Whether `record` stands for a run with this `timeout`: every result but a timeout whose
    limit was smaller (or unknown); such configurations are measured again and the new result
    replaces the timeout (one record per configuration)."""
    return _settled(record.status, record.limit, timeout)


class StoreError(ImageCLError):
    """A database that cannot be opened or read."""


def open_store(path: Any, readonly: bool = False) -> Store:
    return Store(path, readonly=readonly)
