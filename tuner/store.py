"""The results store: measurements, one record per configuration of a run, in a database
chosen by its address (tuner/address.py): an embedded SQLite file (tuner/store_sqlite.py, the
default) or a PostgreSQL server that several machines share (tuner/store_postgres.py).

Each measurement is committed in its own transaction, so a run interrupted at any moment loses
at most the measurement in flight, and a restarted run skips what is already stored. A record
is keyed by (program_hash, device, driver, compute_units, problem_size, config_key): writing a
configuration again replaces its record, so concurrent or retried writes leave it recorded
exactly once.

A device is its name, its driver and its compute units: devices of one name and driver come in
several sizes (PoCL names a 16- and a 32-core Xeon VM alike, a MIG slice is named as its whole
GPU), and a store shared between machines must never take one's measurements for the other's.
Records stored before the store knew the size have compute units 0, and only a key of 0 matches them.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional

from ..errors import ImageCLError
from .address import AddressError, is_postgres, sqlite_path

# 2: the service's tables (refusals, programs, devices) beside the measurements; 3: a device's compute
# units in every key that names a device (0 in the records of an older store). An older store is
# upgraded when opened for writing and read as it is when opened read-only; a newer one is refused
SCHEMA_VERSION = 3

STATUSES = ("ok", "build_error", "invalid_work_group", "out_of_resources", "wrong_output", "timeout", "crash",
            "invalid_config", "error", "slow")  # slow: censored, no time (tuner/censor.py)

# the columns a record is written with, in this order (both back ends)
_COLUMNS = ("program_hash, program_name, device, driver, compute_units, problem_size, config, config_key, source_hash,"
            " status, time, times, spread, error, verified, timestamp, timeout_limit")
_VALUES = ", ".join("?" * len(_COLUMNS.split(",")))  # a record's placeholders
RUN_KEY = ("program_hash", "device", "driver", "compute_units", "problem_size")
RECORD_KEY = RUN_KEY + ("config_key",)
APPLICATION_ID = 0x494D434C  # "IMCL" in an SQLite header (PRAGMA application_id): the file is a results store


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
    # a timeout's limit in seconds (None: not a timeout, or recorded without); a slow record's bound
    # (censor.py: its one checked launch took longer)
    limit: Optional[float] = None
    compute_units: int = 0  # of the device (RunKey.compute_units); 0: stored before the store kept them

    def to_json(self) -> dict:
        return {"config": self.config, "status": self.status, "time": self.time, "times": self.times,
                "spread": self.spread, "error": self.error, "verified": self.verified, "limit": self.limit,
                "program": self.program_name, "program_hash": self.program_hash, "device": self.device,
                "driver": self.driver, "compute_units": self.compute_units, "problem_size": self.problem_size,
                "timestamp": self.timestamp, "source_hash": self.source_hash}


@dataclass(frozen=True)
class RunKey:
    """What makes measurements comparable: the program, the device (its name, driver and compute
    units), the problem size."""

    program_hash: str
    program_name: str
    device: str
    driver: str
    problem_size: str
    # The device's compute units (CL_DEVICE_MAX_COMPUTE_UNITS, tuner/target.device_identity). A name
    # and a driver do not tell a device's size: PoCL names a 16- and a 32-core Xeon VM alike, a
    # MIG slice is named as its whole GPU. 0: unknown, the key of records stored before the store
    # kept the size; a key of 0 matches only those, a key of N only records of N.
    compute_units: int = 0

    @property
    def device_id(self) -> tuple[str, str, int]:
        """What tells this run's device from another's: its name, driver and compute units."""
        return self.device, self.driver, self.compute_units

    @property
    def family(self) -> str:
        """The program whatever its problem size. A hand-written kernel's hash names its sizes and
        arguments too ("family.instance", tuner/kernel.py), since measurements at one size cannot be
        reused at another; its family is the part before the dot. An .icl program's hash is its
        source's, the same at every size: the whole hash."""
        return self.program_hash.split(".", 1)[0]


class Store:
    """The results store at `address` (a path, `sqlite:///PATH`, or `postgresql://...`).
    `Store(address)` opens the back end the address names. For writing (the default) the store is
    created if missing; anything that is not already a results store (or empty) is refused
    untouched. `readonly`: the store must exist; it is read and never changed.

    The back ends run the same SQL, written with `?` placeholders; each supplies `_execute`
    (all rows of one statement, its own transaction), `_rows` (rows streamed), and `_UPSERT`."""

    _UPSERT = ""  # INSERT of one record that replaces the configuration's earlier record
    name = ""     # the address, fit to print (no password)
    readonly = False
    _limit = "timeout_limit"  # the column of a timeout's limit ("NULL" in an older read-only SQLite store)
    _units = "compute_units"  # the column of a device's compute units ("0" in a read-only store of version 1 or 2)

    def __new__(cls, address: Any = None, readonly: bool = False, **options: Any) -> "Store":
        if cls is Store:
            cls = _backend(address)
        return super().__new__(cls)

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _execute(self, query: str, args: tuple = ()) -> list[tuple]:
        raise NotImplementedError

    def _rows(self, query: str, args: tuple = ()) -> Iterator[tuple]:
        raise NotImplementedError

    def _of_run(self) -> str:
        return f" WHERE program_hash=? AND device=? AND driver=? AND {self._units}=? AND problem_size=?"

    def done_keys(self, run: RunKey, timeout: Optional[float] = None) -> set[str]:
        """The configurations of `run` that need no new measurement: all stored ones, except,
        with the `timeout` of a new run, timeouts recorded with a smaller limit (or none)."""
        rows = self._execute(f"SELECT config_key, status, {self._limit} FROM measurements" + self._of_run(),
                             _run_args(run))
        return {key for key, status, limit in rows
                if timeout is None or _settled(status, limit, timeout)}

    def add(self, run: RunKey, record: Record) -> None:
        if self.readonly:
            raise StoreError(f"{self.name}: opened read-only")
        self._execute(self._UPSERT, _row(run, record))

    def records(self, run: Optional[RunKey] = None, config_key: Optional[str] = None) -> Iterator[Record]:
        """The stored records (of `run`; of one configuration, by its canonical key)."""
        query = "SELECT program_name, program_hash, device, driver, problem_size, config, source_hash, status," \
                f" time, times, spread, error, verified, timestamp, {self._limit}, {self._units} FROM measurements"
        args: tuple = ()
        if run is not None:
            query += self._of_run()
            args = _run_args(run)
        if config_key is not None:
            query += (" AND" if run is not None else " WHERE") + " config_key=?"
            args += (config_key,)
        for row in self._rows(query + " ORDER BY id", args):
            (name, phash, device, driver, size, config, shash, status, t, times, spread, error, verified, ts,
             limit, units) = row
            try:
                parsed, parsed_times = json.loads(config), json.loads(times or "[]")
            except (TypeError, ValueError, RecursionError):
                raise StoreError(f"{self.name}: a damaged record (configuration {str(config)[:60]!r})") from None
            if not isinstance(parsed, dict):
                raise StoreError(f"{self.name}: a damaged record (configuration {str(config)[:60]!r})")
            yield Record(parsed, status, t, parsed_times, spread, error, bool(verified),
                         shash, name, phash, device, driver, size, ts, limit, units)

    def runs(self) -> list[RunKey]:
        rows = self._execute(f"SELECT DISTINCT program_hash, program_name, device, driver, problem_size, {self._units}"
                             " FROM measurements")
        # sorted here: SQL would take the "0" of an older store for a column's number
        return sorted((RunKey(*r) for r in rows), key=lambda r: (r.program_name, r.device, r.compute_units,
                                                                 r.problem_size, r.program_hash, r.driver))

    def unsized(self, run: RunKey) -> int:
        """How many records of `run`'s program, device name, driver and size were stored before
        the store kept compute units (0), where `run` knows them: records it must not reuse, as
        they may be another size's of a device of this name."""
        if not run.compute_units:
            return 0
        unknown = dataclasses.replace(run, compute_units=0)
        return self._execute("SELECT COUNT(*) FROM measurements" + self._of_run(), _run_args(unknown))[0][0]

    def adopt_unsized(self, device: str, driver: str, compute_units: int) -> tuple[int, int]:
        """Make the records of `device` and `driver` stored without compute units (an older
        store's) those of a device of `compute_units`, on the word of a user who knows that they
        were measured on it (the store cannot tell). A record whose configuration this size has
        already is left as it was: the sized one stands. Returns (adopted, left)."""
        if compute_units < 1:
            raise StoreError(f"{self.name}: a device has at least one compute unit, not {compute_units}")
        unsized = " WHERE device=? AND driver=? AND compute_units=0"
        twin = (" AND NOT EXISTS (SELECT 1 FROM measurements AS twin WHERE twin.program_hash=measurements.program_hash"
                " AND twin.device=measurements.device AND twin.driver=measurements.driver AND twin.compute_units=?"
                " AND twin.problem_size=measurements.problem_size AND twin.config_key=measurements.config_key)")
        total = self._execute("SELECT COUNT(*) FROM measurements" + unsized, (device, driver))[0][0]
        adopted = self._execute("SELECT COUNT(*) FROM measurements" + unsized + twin,
                                (device, driver, compute_units))[0][0]
        self._write("UPDATE measurements SET compute_units=?" + unsized + twin,
                    (compute_units, device, driver, compute_units))
        return adopted, total - adopted

    def add_many(self, run: RunKey, records: Iterable[Record]) -> int:
        """Store `records` in one transaction: all or none of them (an import of thousands would
        otherwise wait for one synchronous commit each)."""
        if self.readonly:
            raise StoreError(f"{self.name}: opened read-only")
        count = 0

        def rows() -> Iterator[tuple]:
            nonlocal count
            for record in records:
                yield _row(run, record)
                count += 1

        self._execute_many(self._UPSERT, rows())
        return count

    # ---- the service's tables (imagecl/service): refusals, and what it needs to learn --------------
    # A refusal holds for a program (by its meaning key, imagecl.tuned.program_key) on a device
    # (name, driver and compute units, as in RunKey) at every size. `programs` maps a record's
    # program_hash to the source it was measured from, `devices` a record's device to its features
    # (imagecl.features), so that any server on a shared store can rebuild what the models need.
    _catalog = True  # False: a read-only store of schema version 1, without these tables

    def refuse(self, program_key: str, device: str, driver: str, compute_units: int, config: dict) -> None:
        self._write("INSERT INTO refusals (program_key, device, driver, compute_units, config_key, config, timestamp)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (program_key, device, driver, compute_units, canonical_config(config), json.dumps(config),
                     time.time()))

    def refused(self, program_key: str, device: str, driver: str, compute_units: int) -> list[dict]:
        if not self._catalog:
            return []
        rows = self._execute(f"SELECT config FROM refusals WHERE program_key=? AND device=? AND driver=?"
                             f" AND {self._units}=? ORDER BY config_key", (program_key, device, driver, compute_units))
        return [json.loads(r[0]) for r in rows]

    def add_program(self, program_hash: str, program_key: str, name: str, source: str) -> None:
        self._write("INSERT INTO programs (program_hash, program_key, name, source) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT DO NOTHING", (program_hash, program_key, name, source))

    def programs(self) -> list[tuple[str, str, str, str]]:
        """(program_hash, program_key, name, source) of every program the service has seen."""
        if not self._catalog:
            return []
        return [tuple(r) for r in self._execute(
            "SELECT program_hash, program_key, name, source FROM programs ORDER BY program_hash")]

    def program_hashes(self, program_key: str) -> list[str]:
        if not self._catalog:
            return []
        return [r[0] for r in self._execute("SELECT program_hash FROM programs WHERE program_key=?"
                                            " ORDER BY program_hash", (program_key,))]

    def add_device(self, device: str, driver: str, features: dict, compute_units: int = 0) -> None:
        """A device's features (the latest reported replace the earlier ones), under the key of its
        records: `compute_units` as in their RunKey (0: records stored without them)."""
        self._write("INSERT INTO devices (device, driver, compute_units, features) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (device, driver, compute_units) DO UPDATE SET features = EXCLUDED.features",
                    (device, driver, compute_units, json.dumps(features, sort_keys=True)))

    def devices(self) -> dict[tuple[str, str, int], dict]:
        """Features by (device, driver, compute units)."""
        if not self._catalog:
            return {}
        return {(d, v, n): json.loads(f)
                for d, v, n, f in self._execute(f"SELECT device, driver, {self._units}, features FROM devices")}

    def _write(self, query: str, args: tuple) -> None:
        if self.readonly:
            raise StoreError(f"{self.name}: opened read-only")
        self._execute(query, args)

    def _execute_many(self, query: str, rows: Iterable[tuple]) -> None:
        """`query` once per row, all in one transaction (rows may come from a generator that
        fails midway: then none is stored)."""
        raise NotImplementedError


# the service's tables, the same SQL in both back ends (TEXT keys, REAL seconds)
CATALOG_SQL = """
CREATE TABLE IF NOT EXISTS refusals (
    program_key TEXT NOT NULL,
    device TEXT NOT NULL,
    driver TEXT NOT NULL,
    compute_units INTEGER NOT NULL,
    config_key TEXT NOT NULL,
    config TEXT NOT NULL,
    timestamp DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (program_key, device, driver, compute_units, config_key)
);
CREATE TABLE IF NOT EXISTS programs (
    program_hash TEXT PRIMARY KEY,
    program_key TEXT NOT NULL,
    name TEXT NOT NULL,
    source TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS devices (
    device TEXT NOT NULL,
    driver TEXT NOT NULL,
    compute_units INTEGER NOT NULL,
    features TEXT NOT NULL,
    PRIMARY KEY (device, driver, compute_units)
);
"""
CATALOG_TABLES = {
    "refusals": {"program_key", "device", "driver", "compute_units", "config_key", "config", "timestamp"},
    "programs": {"program_hash", "program_key", "name", "source"},
    "devices": {"device", "driver", "compute_units", "features"},
}
# the tables whose key gained the device's compute units in schema version 3
SIZED_TABLES = ("measurements", "refusals", "devices")


def _row(run: RunKey, record: Record) -> tuple:
    """The measurements table's columns (in _UPSERT's order) for one record."""
    return (run.program_hash, run.program_name, run.device, run.driver, run.compute_units, run.problem_size,
            json.dumps(record.config), canonical_config(record.config), record.source_hash, record.status,
            record.time, json.dumps(record.times), record.spread, record.error, int(record.verified),
            record.timestamp or time.time(), record.limit)


def _run_args(run: RunKey) -> tuple:
    """The arguments of `Store._of_run`'s condition."""
    return run.program_hash, run.device, run.driver, run.compute_units, run.problem_size


def _backend(address: Any) -> type:
    if address is None:
        raise StoreError("no results database given")
    if is_postgres(address):
        from .store_postgres import PostgresStore

        return PostgresStore
    try:
        sqlite_path(address)
    except AddressError as exc:
        raise StoreError(str(exc)) from None
    from .store_sqlite import SQLiteStore

    return SQLiteStore


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


def open_store(address: Any, readonly: bool = False) -> Store:
    """The store at `address` (see `Store`)."""
    return Store(address, readonly=readonly)
