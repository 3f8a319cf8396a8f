"""The SQLite back end of the results store: one embedded database file.

WAL journal and synchronous=FULL, each add its own transaction: a run interrupted at any moment
(Ctrl-C, kill -9, power loss) loses at most the measurement in flight and the file stays
consistent. Foreign, damaged or newer files are refused untouched (`_inspect`)."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Iterable, Iterator

from .address import sqlite_path
from .store import (_COLUMNS, _VALUES, APPLICATION_ID, CATALOG_SQL, CATALOG_TABLES, RECORD_KEY, RUN_KEY,
                    SCHEMA_VERSION, SIZED_TABLES, Store, StoreError)

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY,
    program_hash TEXT NOT NULL,
    program_name TEXT NOT NULL,
    device TEXT NOT NULL,
    driver TEXT NOT NULL,
    compute_units INTEGER NOT NULL,
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
    timeout_limit REAL,
    UNIQUE ({", ".join(RECORD_KEY)})
);
""" + CATALOG_SQL + f"""
CREATE INDEX IF NOT EXISTS by_run ON measurements ({", ".join(RUN_KEY)});
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

    _UPSERT = f"INSERT OR REPLACE INTO measurements ({_COLUMNS}) VALUES ({_VALUES})"

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
                # a read-only store of an older version is read as it is (the upgrade writes)
                columns = {row[1] for row in self._execute("PRAGMA table_info(measurements)")}
                self._limit = "timeout_limit" if "timeout_limit" in columns else "NULL"
                self._units = "compute_units" if "compute_units" in columns else "0"
                self._catalog = state == "empty" or bool(self._execute(
                    "SELECT 1 FROM sqlite_master WHERE type='table' AND name='refusals'"))
                return
            self.db = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            _create(self.db)
            self.db.execute(f"PRAGMA application_id={APPLICATION_ID}")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable results database ({exc})") from None

    def close(self) -> None:
        self.db.close()

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


def _create(db: sqlite3.Connection) -> None:
    """The tables of this version, made where missing, an older store's upgraded first: in one
    transaction that holds the write lock, so that two processes opening an older store at once
    upgrade it once, and one interrupted leaves it as it was."""
    db.execute("BEGIN IMMEDIATE")
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        old = [t for t in SIZED_TABLES if t in tables and "compute_units" not in _columns(db, t)]
        for table in old:  # SQLite cannot change a table's key: the old one is copied into a new one
            db.execute(f"ALTER TABLE {table} RENAME TO old_{table}")
        if "measurements" in old:  # its index went with it, under the name the new one needs
            db.execute("DROP INDEX IF EXISTS by_run")
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
        for table in old:
            _copy_unsized(db, table)
        db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        db.execute("UPDATE meta SET value=? WHERE key='schema_version' AND CAST(value AS INTEGER) < ?",
                   (str(SCHEMA_VERSION), SCHEMA_VERSION))
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def _copy_unsized(db: sqlite3.Connection, table: str) -> None:
    """The rows of a store older than version 3 (`old_<table>`) into `table`, with compute units 0:
    stored before the store kept them, so that no key of a known size matches them. A
    measurements table of version 1 may lack `timeout_limit`: NULL, a timeout measured again."""
    have = set(_columns(db, f"old_{table}"))
    wanted = [c for c in _columns(db, table) if c != "compute_units"]
    values = [c if c in have else "NULL" for c in wanted]
    db.execute(f"INSERT INTO {table} ({', '.join(wanted)}, compute_units)"
               f" SELECT {', '.join(values)}, 0 FROM old_{table}")
    db.execute(f"DROP TABLE old_{table}")


