"""What the tuning service knows and how it answers: programs compiled once, the store, the
zero-shot model, and the answers cache.

Threads: the event loop only reads the answers cache (the hot path is one dict lookup); the
store is used from one thread of its own (an SQLite connection belongs to its thread; one
connection, statements in turn), compilation and prediction from another, and the model is
trained in a background thread that swaps the new model in whole (requests never wait for it).

An answer is cached per (program meaning, device, size), dropped at once when this server
stores a Submit or Refuse for it, and kept at most `cache_seconds` otherwise, so that what
another server (or another worker) on the same store learned is served within that time.

A device is its name, driver and compute units (tuner/store.py says why): what one device of a
name measured or refused is never told to a device of that name of another size.
"""
from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Optional

from ..errors import ConfigError, ImageCLError
from ..features.device import DeviceFeatures
from ..tuner.store import Record, RunKey, Store, _row, canonical_config, text_hash
from . import protocol
from .protocol import Answer, Case, Observation, ProtocolError, Refusal

log = logging.getLogger("imagecl.service")

TOP = 64  # predicted configurations kept per case (what Request and RequestTraining choose from)
TRAINING_POOL = 16  # RequestTraining: the most uncertain among this many best predicted
MAX_PROGRAMS = 512  # compiled programs kept in memory
MAX_RAW = 4096  # request bodies remembered with their cache key
MAX_CASES = 65536  # answers and rankings kept (one per program, device and size)


@dataclass
class Compiled:
    key: str  # meaning key (imagecl.tuned.program_key)
    program_hash: str  # the store's key: the hash of the source text (tuner/target.run_key)
    program: Any
    source: str


@dataclass
class Ranking:
    model_version: int
    configs: list[dict]
    seconds: list[float]
    uncertainty: list[Optional[float]]


@dataclass
class Entry:
    expires: float
    request: Optional[bytes] = None
    training: Optional[bytes] = None


CacheKey = tuple[str, str, str, int, str]  # program key, device, driver, compute units, size
DeviceId = tuple[str, str, int]  # name, driver, compute units (RunKey.device_id)


class Knowledge:
    def __init__(self, address: str, retrain_after: int = 20, cache_seconds: float = 2.0, train: bool = True,
                 model_kind: str = "forest") -> None:
        self.address = address
        self.retrain_after = retrain_after
        self.cache_seconds = cache_seconds
        self.model_kind = model_kind
        self._db = ThreadPoolExecutor(1, thread_name_prefix="imagecl-store")
        self._cpu = ThreadPoolExecutor(1, thread_name_prefix="imagecl-compute")
        self.store: Store = self._db.submit(Store, address).result()  # StoreError: the caller reports it
        self.answers: dict[CacheKey, Entry] = {}
        # bumped by every Submit, Refuse and model swap: an answer composed from what was read
        # before one is not cached (it may be stale), only returned
        self.epoch = 0
        self.raw_keys: dict[bytes, CacheKey] = {}  # a validated request body -> its answer's key
        self._pending: list[tuple[list[tuple], asyncio.Future]] = []
        self._writing = False
        self.by_source: OrderedDict[tuple[str, str], Compiled] = OrderedDict()
        self.by_key: dict[str, Compiled] = {}
        self.rankings: dict[CacheKey, Ranking] = {}
        self.known_devices: set[DeviceId] = set()
        self.known_programs: set[str] = set()
        self.model: Any = None
        self.model_version = 0
        self.model_info: dict[str, Any] = {"state": "none"}
        self.new_data = 0
        self._training: Optional[threading.Thread] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self.hits = self.misses = 0
        self._want_training = train

    # ---- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Begin serving (on the running event loop); the first model trains in the background."""
        self._loop = asyncio.get_running_loop()
        if self._want_training:
            self.retrain()

    def close(self) -> None:
        self._db.submit(self.store.close).result()
        self._db.shutdown()
        self._cpu.shutdown()

    async def _in(self, pool: ThreadPoolExecutor, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)

    # ---- programs ----------------------------------------------------------------------------------

    def compiled_now(self, ref: protocol.ProgramRef) -> Optional[Compiled]:
        """The program if it is compiled already (the hot path), else None."""
        if ref.key is not None:
            found = self.by_key.get(ref.key)
            if found is None:
                raise ProtocolError(f"program.key: the service knows no program {ref.key}; send its 'source'",
                                    status=404)
            return found
        return self.by_source.get((ref.source, ref.filename))

    async def compiled(self, ref: protocol.ProgramRef) -> Compiled:
        found = self.compiled_now(ref)
        if found is None:
            # the same meaning in another text (comments, layout) is the program already compiled
            key = await self._in(self._cpu, _meaning, ref.source, ref.filename)
            found = self.by_key.get(key) if key is not None else None
        if found is None:
            found = await self._in(self._cpu, self._compile, ref.source, ref.filename)
        if (ref.source, ref.filename) not in self.by_source:
            self.by_source[(ref.source, ref.filename)] = found
            self.by_key.setdefault(found.key, found)
            while len(self.by_source) > MAX_PROGRAMS:
                _, gone = self.by_source.popitem(last=False)
                if self.by_key.get(gone.key) is gone:
                    del self.by_key[gone.key]
        return found

    @staticmethod
    def _compile(source: str, filename: str) -> Compiled:
        import imagecl
        from .. import tuned

        try:
            program = imagecl.compile(source, filename=filename)
        except ImageCLError as exc:
            raise ProtocolError(f"program: {exc}", status=422) from None
        except (RecursionError, ValueError, TypeError) as exc:  # pathological text the checks did not name
            raise ProtocolError(f"program: cannot compile it ({exc.__class__.__name__})", status=422) from None
        return Compiled(tuned.program_key(program.info.unit), text_hash(source), program, source)

    @staticmethod
    def space(program: Any, device: DeviceFeatures, size: tuple[int, ...]):
        from ..tuner.knowledge import limits_from_features

        return program.space_for_limits(limits_from_features(device), tuple(reversed(size)))

    @staticmethod
    def cache_key(compiled: Compiled, case: Case) -> CacheKey:
        return (compiled.key, *device_id(case.device), case.size_text)

    # ---- the hot path ------------------------------------------------------------------------------

    def remember_raw(self, raw: bytes, key: CacheKey) -> None:
        if len(self.raw_keys) >= MAX_RAW:
            self.raw_keys.clear()
        self.raw_keys[raw] = key

    def cached(self, key: CacheKey, kind: str) -> Optional[bytes]:
        entry = self.answers.get(key)
        if entry is not None and entry.expires > time.monotonic():
            body = entry.request if kind == "request" else entry.training
            if body is not None:
                self.hits += 1
                return body
        return None

    # ---- Request and RequestTraining ---------------------------------------------------------------

    async def answer(self, case: Case, kind: str) -> tuple[bytes, CacheKey]:
        compiled = await self.compiled(case.program)
        key = self.cache_key(compiled, case)
        hit = self.cached(key, kind)
        if hit is not None:
            return hit, key
        self.misses += 1  # nothing is written for an (open) Request: only Submit and Refuse, with a token, write
        epoch = self.epoch
        measured, refused = await self._in(self._db, self._facts, compiled.key, case)
        space = await self._in(self._cpu, self.space, compiled.program, case.device, case.size)
        ranking = await self._in(self._cpu, self._ranking, key, compiled, case, space)
        compose = self._best if kind == "request" else self._teaching
        answer = await self._in(self._cpu, compose, compiled.key, space, measured, refused, ranking)
        body = json.dumps(answer.to_json()).encode()
        if epoch != self.epoch:
            return body, key
        entry = self.answers.get(key)
        if entry is None or entry.expires <= time.monotonic():
            if len(self.answers) >= MAX_CASES:
                self.answers.clear()
            entry = self.answers[key] = Entry(time.monotonic() + self.cache_seconds)
        setattr(entry, kind, body)
        return body, key

    def _facts(self, program_key: str, case: Case) -> tuple[list[Record], set[str]]:
        """The stored records of this case (of every source text with this meaning) and the refused
        configurations' keys."""
        name, driver, units = device_id(case.device)
        records: list[Record] = []
        for h in self.store.program_hashes(program_key):
            records += self.store.records(RunKey(h, "", name, driver, case.size_text, units))
        refused = {canonical_config(c) for c in self.store.refused(program_key, name, driver, units)}
        return records, refused

    def _ranking(self, key: CacheKey, compiled: Compiled, case: Case, space) -> Optional[Ranking]:
        model, version = self.model, self.model_version
        if model is None:
            return None
        found = self.rankings.get(key)
        if found is not None and found.model_version == version:
            return found
        try:
            found = self._rank(model, version, compiled, case)
        except Exception:  # noqa: BLE001 - a model that cannot rank this case: answer without it
            log.exception("the model could not rank %s at %s", compiled.program.name, case.size_text)
            return None
        if len(self.rankings) >= MAX_CASES:
            self.rankings.clear()
        self.rankings[key] = found
        return found

    @staticmethod
    def _rank(model: Any, version: int, compiled: Compiled, case: Case) -> Ranking:
        from ..tuner.knowledge import case_vector, encode, predict

        predictions = predict(model, compiled.program, case.device, case.size, top=TOP)
        configs = [p.config for p in predictions]
        spread: list[Optional[float]] = [None] * len(configs)
        if configs:
            encoded, _ = encode(compiled.program, case.device, case.size, configs)
            found = model.spread(case_vector(compiled.program, case.device, case.size), encoded)
            if found is not None:
                spread = [float(s) for s in found]
        return Ranking(version, configs, [p.seconds for p in predictions], spread)

    @staticmethod
    def _best(program_key: str, space, measured: list[Record], refused: set[str],
              ranking: Optional[Ranking]) -> Answer:
        ok = [r for r in measured if r.status == "ok" and r.time is not None
              and canonical_config(r.config) not in refused]
        if ok:
            best = min(ok, key=lambda r: r.time)
            return Answer(program_key, space.complete(best.config), "measured", best.time, 0.0,
                          {"measurements": len(measured)})
        failed = {canonical_config(r.config) for r in measured}
        if ranking is not None:
            for config, seconds, spread in zip(ranking.configs, ranking.seconds, ranking.uncertainty):
                if canonical_config(config) not in refused | failed:
                    return Answer(program_key, config, "predicted", seconds, spread)
        config = _first_free(space, refused | failed)
        default = config == space.complete(space.defaults)
        return Answer(program_key, config, "default" if default else "fallback")

    @staticmethod
    def _teaching(program_key: str, space, measured: list[Record], refused: set[str],
                  ranking: Optional[Ranking]) -> Answer:
        done = refused | {canonical_config(r.config) for r in measured}
        if ranking is not None:
            pool = [(s if s is not None else 0.0, -i, c, t) for i, (c, t, s) in
                    enumerate(zip(ranking.configs, ranking.seconds, ranking.uncertainty))
                    if canonical_config(c) not in done][:TRAINING_POOL]
            if pool:
                spread, _, config, seconds = max(pool, key=lambda p: (p[0], p[1]))
                return Answer(program_key, config, "unmeasured", seconds, spread)
        return Answer(program_key, _first_free(space, done, seed=len(done)), "unmeasured")

    # ---- Submit and Refuse -------------------------------------------------------------------------

    async def _remember(self, compiled: Compiled, device: DeviceFeatures) -> None:
        """The program's source and the device's features, in the store (once per server): what
        any server on this store needs to learn from its records."""
        if compiled.program_hash not in self.known_programs:
            await self._in(self._db, self.store.add_program, compiled.program_hash, compiled.key,
                           compiled.program.name, compiled.source)
            self.known_programs.add(compiled.program_hash)
        ident = device_id(device)
        if ident not in self.known_devices:
            from dataclasses import asdict

            name, driver, units = ident
            await self._in(self._db, self.store.add_device, name, driver, asdict(device), units)
            self.known_devices.add(ident)

    async def _checked(self, case: Case, config: dict) -> tuple[Compiled, dict]:
        compiled = await self.compiled(case.program)
        # checking a configuration against every constraint takes most of a millisecond: off the event loop
        return compiled, await self._in(self._cpu, self._complete, compiled.program, case, config)

    @classmethod
    def _complete(cls, program: Any, case: Case, config: dict) -> dict:
        try:
            return cls.space(program, case.device, case.size).complete(config)
        except ConfigError as exc:
            raise ProtocolError(f"configuration: not in the program's space on this device and size: {exc}",
                                status=422) from None

    async def submit(self, observations: list[Observation]) -> int:
        """Store `observations` (each run's in one transaction); returns how many. Returns only
        after every transaction committed: an acknowledged observation is durable."""
        runs: dict[tuple, tuple[RunKey, CacheKey, list[Record]]] = {}
        checked = [(o, *(await self._checked(o.case, o.config))) for o in observations]  # all valid, or none stored
        for o, compiled, full in checked:
            await self._remember(compiled, o.case.device)
            name, driver, units = device_id(o.case.device)
            run = RunKey(compiled.program_hash, compiled.program.name, name, driver, o.case.size_text, units)
            record = Record(full, "ok" if o.failure is None else o.failure, o.seconds,
                            list(o.times) or ([o.seconds] if o.seconds is not None else []),
                            program_name=compiled.program.name, timestamp=time.time())
            runs.setdefault(run, (run, self.cache_key(compiled, o.case), []))[2].append(record)
        await self._commit([_row(run, r) for run, _, records in runs.values() for r in records])
        self.epoch += 1
        for _, key, _ in runs.values():
            self.answers.pop(key, None)
        self.new_data += len(observations)
        if self.new_data >= self.retrain_after:
            self.retrain()
        return len(observations)

    async def _commit(self, rows: list[tuple]) -> None:
        """Store `rows` (measurements); returns once they are committed. Group commit: the rows of
        Submits that arrive while a transaction commits go together in the next one, so that
        concurrent Submits share one synchronous commit instead of waiting for one each."""
        future = asyncio.get_running_loop().create_future()
        self._pending.append((rows, future))
        if not self._writing:
            self._writing = True
            asyncio.ensure_future(self._drain())
        await future

    async def _drain(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                rows = [row for rows, _ in batch for row in rows]
                try:
                    await self._in(self._db, self.store._execute_many, self.store._UPSERT, rows)
                except Exception as exc:  # noqa: BLE001 - each waiting Submit gets it (a StoreError: 503)
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                else:
                    for _, future in batch:
                        if not future.done():
                            future.set_result(None)
        finally:
            self._writing = False

    async def refuse(self, refusal: Refusal) -> dict:
        compiled, full = await self._checked(refusal.case, refusal.config)
        await self._remember(compiled, refusal.case.device)
        ident = device_id(refusal.case.device)
        await self._in(self._db, self.store.refuse, compiled.key, *ident, full)
        self.epoch += 1
        for key in [k for k in self.answers if k[:4] == (compiled.key, *ident)]:
            self.answers.pop(key, None)
        return full

    # ---- the model ---------------------------------------------------------------------------------

    def retrain(self) -> bool:
        """Train a new model from the whole store in the background, unless one is training."""
        if self._training is not None and self._training.is_alive():
            return False
        self.new_data = 0
        self._training = threading.Thread(target=self._train, name="imagecl-train", daemon=True)
        self._training.start()
        return True

    def _train(self) -> None:
        started = time.time()
        self.model_info = {**self.model_info, "state": "training"}
        try:
            model, info = train_from_store(self.address, self.model_kind)
        except (ImageCLError, ValueError, MemoryError) as exc:
            log.warning("training failed: %s", exc)
            self.model_info = {**self.model_info, "state": f"failed: {exc}"}
            return
        info["seconds"] = round(time.time() - started, 3)
        if model is None:
            self.model_info = {**info, "state": "no data"}
            return
        self.model, self.model_version = model, self.model_version + 1  # one swap: requests see old or new
        self.model_info = {**info, "state": "ready", "version": self.model_version}
        if self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(self._model_swapped)
            except RuntimeError:  # the server stopped while the model trained
                pass

    def _model_swapped(self) -> None:
        self.epoch += 1
        self.answers.clear()

    def wait_trained(self, timeout: float = 60.0) -> None:
        if self._training is not None:
            self._training.join(timeout)

    def stats(self) -> dict:
        return {"model": self.model_info, "cached_answers": len(self.answers), "programs": len(self.by_key),
                "hits": self.hits, "misses": self.misses, "store": self.store.name}


def train_from_store(address: str, kind: str = "forest") -> tuple[Any, dict]:
    """The live tuner's model (`tuner.knowledge.live_ranker`: the same target and features as
    `imagecl tune --knowledge`) trained on every record of the store whose program source and
    device features the store holds; (None, info) when there is nothing to learn from."""
    import imagecl
    from ..tuner.knowledge import assemble, device_from_json, live_ranker

    with Store(address) as store:
        sources = store.programs()
        # by name and compute units, as the records name their device (tuner.knowledge.device_of)
        devices = {(name, units): device_from_json(f) for (name, _, units), f in store.devices().items()}
        records = list(store.records())
    programs = {}
    for program_hash, _, name, source in sources:
        try:
            programs[program_hash] = imagecl.compile(source, filename=f"{name}.icl")
        except ImageCLError:
            continue  # stored by another imagecl version, say: its records are left out
    data, skipped = assemble(records, programs, devices)
    info = {"records": len(records), "used": len(records) - skipped, "cases": len(data.cases)}
    if not data.ok.any():
        return None, info
    return live_ranker(kind).fit(data, range(len(data.cases))), info


def device_id(device: DeviceFeatures) -> DeviceId:
    """What tells a client's device from another's in the store (RunKey.device_id)."""
    return device.name, device.driver, device.compute_units


def _meaning(source: str, filename: str) -> Optional[str]:
    """The meaning key of a source text (its tokens and pragmas), or None when it does not even
    lex (then compiling it says where)."""
    from ..tuned import _meaning_hash

    try:
        return _meaning_hash(source, filename)
    except Exception:  # noqa: BLE001 - any lexing failure: the compiler reports it properly
        return None


def _first_free(space, taken: set[str], seed: int = 0) -> dict:
    """The default configuration unless it is taken, else a valid one that is not."""
    default = space.complete(space.defaults)
    if canonical_config(default) not in taken:
        return default
    for config in space.random(256, seed=seed):
        full = space.complete(config)
        if canonical_config(full) not in taken:
            return full
    raise ProtocolError("every configuration the service could choose was refused or measured already", status=409)
