"""The SQLite back end of the results store: one embedded database file.

WAL journal and synchronous=FULL, each add its own transaction: a run interrupted at any moment
(Ctrl-C, kill -9, power loss) loses at most the measurement in flight and the file stays
consistent. Foreign, damaged or newer files are refused untouched (`_inspect`)."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Iterable, Iterator

from .address import sqlite_path
from .store import _COLUMNS, APPLICATION_ID, CATALOG_SQL, CATALOG_TABLES, SCHEMA_VERSION, Store, StoreError

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
""" + CATALOG_SQL + """
CREATE INDEX IF NOT EXISTS by_run ON measurements (program_hash, device, driver, problem_size);
"""

_OUR_TABLES = {"meta", "measurements"} | set(CATALOG_TABLES)


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


class SQLiteStore(Store):
    """The SQLite results database at `path`. For writing (the default) it is created if missing, in an
    existing folder; an existing file is used only when it is an empty file or database or already
    a results store: anything else is refused untouched. `readonly`: the file must exist and be
    ours; it is opened read-only and never changed."""

    _UPSERT = f"INSERT OR REPLACE INTO measurements ({_COLUMNS}) VALUES ({', '.join('?' * 16)})"

    def __init__(self, path: str | Path, readonly: bool = False) -> None:
        self.path = sqlite_path(path)
        self.name = str(self.path)
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
                self._catalog = state == "empty" or bool(self._execute(
                    "SELECT 1 FROM sqlite_master WHERE type='table' AND name='refusals'"))
                return
            self.db = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(_SCHEMA)
            self.db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            # an older store got the new tables above (CREATE ... IF NOT EXISTS): now it is this version
            self.db.execute("UPDATE meta SET value=? WHERE key='schema_version' AND CAST(value AS INTEGER) < ?",
                            (str(SCHEMA_VERSION), SCHEMA_VERSION))
            add_limit_column(self.db)
            self._limit = "timeout_limit"
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable results database ({exc})") from None

    def close(self) -> None:
        self.db.close()

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

    def _execute_many(self, query: str, rows: Iterable[tuple]) -> None:
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.executemany(query, rows)
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot write the results database ({exc})") from None

    def _rows(self, query: str, args: tuple = ()) -> Iterator[tuple]:
        """The rows of `query` one at a time (a store can hold hundreds of thousands), as _execute."""
        try:
            yield from self.db.execute(query, args)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot read the results database ({exc})") from None


def add_limit_column(db: sqlite3.Connection) -> None:
    """Migration: the `timeout_limit` column (seconds a timeout was given; NULL for other
    results and for timeouts stored before it existed), added to a database that lacks it.
    A timeout is only final for runs that allow no more time than it had (`settled`)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(measurements)")}
    if "timeout_limit" not in columns:
        db.execute("ALTER TABLE measurements ADD COLUMN timeout_limit REAL")


