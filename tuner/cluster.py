"""Measurement and tuning on a Dask cluster: one worker per OpenCL device, results into one store.

`--cluster ADDRESS` (a running scheduler, `tcp://host:port`) or `--cluster local:N` (a local
cluster of N worker processes, one per OpenCL device of this machine). Every Dask worker is
pinned to one device for its life: its `IMAGECL_DEVICE` (set per worker by `local:N`, by the
user for `dask worker`) selects it, and it offers the resource `opencl=1`, which every task asks
for, so a worker runs one measurement at a time and only device workers get them.

A task is a few configurations that share OpenCL sources; the worker measures them with the
ordinary engine (engine.Measurer: builds on the worker, where the device is, in its own pool of
builder processes, started once and kept, of its host's cores divided among the device workers
there; launches in a watchdogged subprocess, so a hanging kernel is a `timeout` record and the
worker goes on) into a store in memory, and returns the records. Each task names the task that
will follow it on the same worker, whose sources that pool builds while this one launches. A task carries a few KB:
the target's inputs only when small; synthetic ones as their recipe, made again once per worker;
large given ones once per worker (`NeedsArguments`; docs/cluster.md). Only the client writes the
real store (SQLite, or the shared PostgreSQL store), keyed by configuration, so a task that Dask
runs again (its worker died: Dask reschedules what a lost worker held) cannot record a
configuration twice. A task that keeps killing workers is recorded as `crash` with Dask's reason
after `distributed.scheduler.allowed-failures` retries, and once more (Dask blames every task
a dead worker held), not retried forever.
"""
from __future__ import annotations

import asyncio
import hashlib
import math
import os
import pickle
import re
import time
from collections import Counter, deque
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from ..errors import ArgumentError, ImageCLError
from .engine import MeasureOptions, Measurer, Summary
from .pipeline import BuildPipeline, builder_count
from .store import Record, RunKey, Store, canonical_config, settled
from .target import ProgramTarget, device_identity
from .validate import plan_measurements

RESOURCE = "opencl"  # every device worker offers one; every task takes one
DEVICE_ENV = "IMAGECL_DEVICE"  # the worker's device (runtime/devices.select_device reads it)
# a task's size: about TASK_SECONDS of its worker's measured rate, at most TASK_LIMIT
# configurations, and FIRST_TASK before the rate is known (its successor's sources are built
# while it launches, so small tasks keep the builders busy too)
TASK_SECONDS = 4.0
TASK_LIMIT = 32
FIRST_TASK = 4
# arrays up to this many bytes in all travel with every task; larger ones go to a worker once
SMALL_ARGUMENTS = 1 << 20
_RESERVE = object()  # ClusterMeasurer.measure: a task's successor is the queue's next
# how often the client looks for tasks that cannot finish: pinned to a worker that is gone, or
# running for longer than STALL_SECONDS plus twice the configurations' timeouts (a hung worker)
WATCH_SECONDS = 2.0
STALL_SECONDS = 120.0
STARTED_TOPIC = "imagecl-task-started"  # a task tells the client when it starts on its worker
RESULT_SECONDS = 60.0  # reading a finished task's result from its worker
# distributed's waits raise asyncio's TimeoutError, not the built-in one before Python 3.11
_TIMEOUTS = (TimeoutError, asyncio.TimeoutError)
# with no device worker for this long (the nannies restart a killed one within a minute), give up
WORKERLESS_SECONDS = 180.0
_ADDRESS = re.compile(r"^(tcp|tls)://(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$")


@dataclass
class _InFlight:
    """A task out on the cluster: its configurations, the successor reserved for its worker,
    where it may run, when it was sent, with the full setup or not, and how often it stalled or
    was retried after a worker died (when it started: ClusterMeasurer._started)."""
    task: list
    after: Optional[list]
    workers: list[str]  # the workers it may run on: the one it is pinned to, or several; none: any
    sent: float  # when it was sent; moved on by the time the cluster had no worker
    full: bool = False
    stalls: int = 0
    retried: bool = False


class _Lost(Exception):
    """A task's result went with its worker before the client read it."""


class ClusterError(ImageCLError):
    """The cluster cannot do what was asked (no device workers, a worker on another device)."""


class NeedsArguments(Exception):
    """Raised on a worker that has not got the target's arrays yet: the client sends the task
    again with them (then the worker keeps them, with its measurer, for every later task)."""


@dataclass(frozen=True)
class Synthetic:
    """How a target's arguments were made: `synthetic_arguments(program, grid_shape, given,
    seed)`; a worker makes them again from this instead of receiving the images."""
    grid_shape: tuple[int, ...]
    given: dict  # the values given by the user (scalars, arrays from files)
    seed: int = 0


def arguments_digest(arguments: dict) -> str:
    """A hash of the arguments' content (names, array types, shapes and bytes, scalars)."""
    import numpy as np

    digest = hashlib.sha256()
    for name in sorted(arguments):
        value = arguments[name]
        digest.update(name.encode() + b"\0")
        if isinstance(value, np.ndarray):
            digest.update(f"{value.dtype.str}{value.shape}".encode())
            digest.update(np.ascontiguousarray(value).data)
        else:
            digest.update(repr(value).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _array_bytes(values: dict) -> int:
    import numpy as np

    return sum(int(v.nbytes) for v in values.values() if isinstance(v, np.ndarray))


@dataclass(frozen=True)
class ClusterSpec:
    address: Optional[str] = None  # a running scheduler's
    local_workers: Optional[int] = None  # start a local cluster of this many device workers

    def describe(self) -> str:
        return self.address if self.address else f"a local cluster of {self.local_workers} workers"


def parse_cluster(text: str) -> ClusterSpec:
    """`local:N` or a scheduler address `tcp://host:port` (or tls://); ArgumentError otherwise."""
    text = str(text).strip()
    if text.startswith("local:"):
        count = text[len("local:"):]
        if not count.isdigit() or int(count) < 1:
            raise ArgumentError(f"--cluster {text}: local:N needs a positive number of workers, e.g. local:2")
        return ClusterSpec(local_workers=int(count))
    match = _ADDRESS.match(text)
    if match is None or not 0 < int(match.group(3)) < 65536:
        raise ArgumentError(f"--cluster {text!r}: expected a Dask scheduler address tcp://HOST:PORT "
                            "(e.g. tcp://10.0.0.5:8786) or local:N (N workers on this machine's OpenCL devices)")
    return ClusterSpec(address=text)


def describe_device(identity: tuple[str, str, int]) -> str:
    """A device's (name, driver, compute units), as messages name it."""
    name, driver, units = identity
    return f"{name} (driver {driver}, {units} compute units)"


def local_devices(count: int, device: Any = None) -> list[int]:
    """The indices of `count` OpenCL devices of this machine of the kind (name, driver and compute
    units) of `device` (select_device's default if None), the first ones; ArgumentError when it
    has fewer."""
    from ..runtime.devices import _all_devices, select_device

    kind = device_identity(select_device(device))
    found = [i for i, d in enumerate(_all_devices()) if device_identity(d) == kind]
    if count > len(found):
        raise ArgumentError(f"--cluster local:{count}: this machine has {len(found)} OpenCL device"
                            f"{'s' if len(found) != 1 else ''} like {describe_device(kind)} and local:N starts "
                            "one worker per device (PoCL offers several CPU devices with "
                            "POCL_DEVICES=\"pthread pthread\")")
    return found[:count]


@contextmanager
def open_client(spec: ClusterSpec, devices: Optional[list[int]] = None) -> Iterator[Any]:
    """A Dask client of the cluster `spec` names (a local one is started here and stopped after);
    `devices`: the local workers' device indices (default: the first local_workers devices)."""
    import logging

    import dask
    from distributed import Client, Nanny, Scheduler, SpecCluster

    if spec.address is not None:
        try:
            client = Client(spec.address, timeout=15)
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"--cluster {spec.address}: no Dask scheduler answered ({exc})") from None
        try:
            yield client
        finally:
            client.close()
        return
    indices = devices if devices is not None else local_devices(spec.local_workers or 0)
    if not indices:
        raise ClusterError("a local cluster needs at least one device")
    # a worker starts the engine's measurement and build processes: it must not be a daemon process
    dask.config.set({"distributed.worker.daemon": False})
    # a device named twice gets two workers (they share it: a test of the spread, not a speed-up)
    workers = {f"device-{i}" + (f".{n}" if n else ""): {"cls": Nanny, "options": {
        "nthreads": 1, "resources": {RESOURCE: 1}, "env": {DEVICE_ENV: str(i)}, "silence_logs": logging.ERROR}}
        for n, i in ((indices[:k].count(i), i) for k, i in enumerate(indices))}
    # a killed worker's nanny starts it again; on a loaded machine that can take longer than
    # Dask's default 15 s, after which the cluster closes the nanny and the device has no worker
    # for the rest of the run: give the restart time (read when a worker is lost, so set for the
    # process), and open again any worker closed anyway
    dask.config.set({"distributed.deploy.lost-worker-timeout": f"{LOST_WORKER_SECONDS}s"})
    cluster = SpecCluster(workers=workers, scheduler={"cls": Scheduler, "options": {"dashboard_address": None}},
                          silence_logs=logging.ERROR)
    keeper = _keep_workers(cluster, len(workers))
    try:
        client = Client(cluster)
        try:
            client.wait_for_workers(len(indices), timeout=120)
            yield client
        finally:
            client.close()
    finally:
        cluster.loop.add_callback(keeper.stop)
        cluster.close()


LOST_WORKER_SECONDS = 90  # how long a local cluster waits for a killed worker's nanny
KEEP_WORKERS_MS = 2000  # how often it checks that every device has a worker


def _keep_workers(cluster: Any, count: int) -> Any:
    """Every KEEP_WORKERS_MS, the local cluster opens again the workers it closed (SpecCluster.scale
    to its own size re-creates the specified workers it no longer holds and touches the others)."""
    from tornado.ioloop import PeriodicCallback

    keeper = PeriodicCallback(lambda: cluster.scale(count), KEEP_WORKERS_MS)
    cluster.loop.add_callback(keeper.start)
    return keeper


# --- the worker side -------------------------------------------------------------------------

class _MemoryStore:
    """What a worker's Measurer writes to: the records of one task, returned to the client."""

    def __init__(self) -> None:
        self.added: dict[str, Record] = {}

    def done_keys(self, run: RunKey, timeout: Optional[float] = None) -> set[str]:
        return {k for k, r in self.added.items() if timeout is None or settled(r, timeout)}

    def add(self, run: RunKey, record: Record) -> None:
        self.added[canonical_config(record.config)] = record

    def add_many(self, run: RunKey, records: Iterable[Record]) -> int:
        count = 0
        for record in records:
            self.add(run, record)
            count += 1
        return count

    def records(self, run: Optional[RunKey] = None, config_key: Optional[str] = None) -> Iterator[Record]:
        for key, record in list(self.added.items()):
            if config_key is None or key == config_key:
                yield record


_WORKER_MEASURERS: dict[str, Measurer] = {}  # per worker process: the measurer of the target in hand


def _worker_measurer(setup: dict) -> Measurer:
    """This worker's measurer for `setup` (made once per target and kept: its measurement
    process, reference and build cache serve every later task); ClusterError when this worker's
    device is not the one the run is for."""
    import multiprocessing

    import imagecl
    from ..runtime.devices import select_device

    key = setup["key"]
    measurer = _WORKER_MEASURERS.get(key)
    if measurer is not None:
        return measurer
    if setup["arguments"] is None and setup["synthetic"] is None:
        from distributed import get_worker

        raise NeedsArguments(get_worker().address)
    if multiprocessing.current_process().daemon:
        raise ClusterError("this Dask worker is a daemon process and cannot start measurement processes: "
                           "start it with DASK_DISTRIBUTED__WORKER__DAEMON=False")
    for old in list(_WORKER_MEASURERS.values()):  # one target at a time holds the device
        old.close()
    _WORKER_MEASURERS.clear()
    device = select_device(None)
    program = imagecl.compile(setup["source"], setup["filename"])
    arguments = setup["arguments"]
    if arguments is None:
        from ..runtime.synthetic import synthetic_arguments

        recipe = setup["synthetic"]
        arguments, _ = synthetic_arguments(program, recipe.grid_shape, recipe.given, seed=recipe.seed)
    target = ProgramTarget(program, arguments, device)
    worker, wanted = target.run.device_id, setup["run"].device_id
    if worker != wanted and not setup.get("any_device"):
        advice = (f"start every worker with {DEVICE_ENV} naming a device of that kind" if worker[:2] != wanted[:2] else
                  "a device of the same name and driver with another number of compute units is another size of "
                  "device, whose times are not this run's: start the workers on devices of the run's size")
        raise ClusterError(f"a worker's device is {describe_device(worker)}, the run is for "
                           f"{describe_device(wanted)}: {advice}")
    # a worker measures whole tasks through its kept pool (which builds the successor's sources
    # ahead), whatever the client's options: `imagecl tune` sends prebuild=False, meant for its
    # one-configuration-at-a-time search on this machine, which bypassed the pool altogether
    options = replace(setup["options"], prebuild=True)
    measurer = Measurer(target, None, _MemoryStore(), options=options)
    # one pool of builders for the worker's life, its share of this host's cores
    from distributed import get_worker
    from distributed.comm import get_address_host

    sharing = setup.get("host_workers", {}).get(get_address_host(get_worker().address), 1)
    device = measurer.device
    measurer.builders = BuildPipeline(measurer.cache, measurer.device_index, device.name.strip(),
                                      device.driver_version.strip(),
                                      workers=builder_count(options.build_workers, sharing), keep=True,
                                      wait=options.ahead_wait)
    # what this worker measures with, for the client to compare with its own (once per target)
    measurer.arguments_digest = arguments_digest(arguments)
    _WORKER_MEASURERS[key] = measurer
    return measurer


def _hostname_pid() -> str:
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


def measure_task(setup: dict, configs: list[dict], hook: Optional[Callable[[list], None]] = None,
                 ahead: Optional[list[dict]] = None) -> dict:
    """Run on a worker: measure `configs` on its device (and start building the sources of
    `ahead`, the task that will follow on this worker); the records and who measured them."""
    from distributed import get_worker

    started = time.time()
    worker = get_worker()
    worker.log_event(STARTED_TOPIC, {"key": str(worker.get_current_task())})
    if hook is not None:  # tests: a fault injected where the measurement runs
        hook(configs)
    measurer = _worker_measurer(setup)
    measurer.store = _MemoryStore()
    summary = measurer.measure(configs, upcoming=ahead)
    return {"records": list(measurer.store.added.values()), "worker": _hostname_pid(), "run": measurer.run,
            "build_seconds": summary.build_seconds, "notes": list(measurer.notes), "digest": measurer.arguments_digest,
            "started": started, "finished": time.time(), "address": worker.address, "builders": measurer.builders.workers,
            "pool_starts": measurer.builders.starts}


def retime_task(setup: dict, stored: list[Record], configs: list[dict], repeats: int, rounds: int) -> dict:
    """Run on a worker: `Measurer.retime` of contenders whose stored records are `stored`."""
    measurer = _worker_measurer(setup)
    measurer.store = _MemoryStore()
    for record in stored:
        measurer.store.add(measurer.run, record)
    updated = measurer.retime(configs, repeats, rounds)
    return {"records": list(updated.values()), "worker": _hostname_pid()}


# --- the client side -------------------------------------------------------------------------

class ClusterMeasurer:
    """Measurer's interface (measure, retime, stored, settled) over a Dask cluster's device
    workers; the client writes every record to `store`. `workers`: how many device workers the
    cluster has now (a tuner proposes that many configurations at a time).

    Every worker must have a device of the run's kind (name, driver and compute units: the
    client's `device`), unless `any_device`: then each worker measures on its own device whatever
    it is, and its records go under its own device's run (one configuration, one device: what a
    throughput measurement of mixed devices needs; a tuning run compares times, so it never mixes)."""

    def __init__(self, client: Any, program, arguments: dict, store: Store, device: Any = None,
                 options: Optional[MeasureOptions] = None, chunk: Optional[int] = None,
                 hook: Optional[Callable[[list], None]] = None, any_device: bool = False,
                 synthetic: Optional[Synthetic] = None) -> None:
        from ..runtime.devices import select_device

        self.client = client
        self.device = select_device(device)
        self.target = ProgramTarget(program, dict(arguments or {}), self.device)
        self.space, self.run, self.store = self.target.space, self.target.run, store
        self.options = options or MeasureOptions()
        self.chunk = chunk
        self.hook = hook
        self.notes: list[str] = []
        self.measured_by: list[tuple[str, str]] = []  # (canonical configuration, worker) in arrival order
        self.worker_digests: set[str] = set()  # the hashes of the inputs the workers measured with
        self.task_waits: list[float] = []  # seconds from each task's submission to its start on a worker
        self.pool_starts: dict[str, int] = {}  # per worker (Dask address): its builder pools started so far
        self.builders: dict[str, int] = {}  # per worker: its builder processes
        self._busy: dict[str, list[float]] = {}  # per worker: configurations, seconds, tasks (see _count)
        self._workerless: Optional[float] = None  # since when the cluster has had no device worker
        self.stall_seconds = STALL_SECONDS  # a task out longer than this plus its timeouts is sent again
        self.sent_again: Counter = Counter()  # tasks sent again by the client: "worker gone", "lost", "stalled"
        self._started: dict[str, float] = {}  # task key: when it started on its worker (STARTED_TOPIC)
        self._hung: set[str] = set()  # workers a stalled task was taken from (its thread still runs there)
        setup = {**self.target.worker_setup(), "run": self.run, "options": self.options, "any_device": any_device,
                 "digest": arguments_digest(dict(arguments or {})), "synthetic": None,
                 "host_workers": self._host_workers()}
        setup["arguments"] = dict(arguments or {})  # as given: the worker prepares them, hashes them the same
        # what a worker keeps its measurer for: the target, its arguments and the options
        setup["key"] = hashlib.sha256(pickle.dumps((self.run, setup["digest"], repr(self.options)))).hexdigest()
        # the full setup, with the arrays, goes to a worker that lacks them (NeedsArguments);
        # every other task carries what fits in a few KB: the arrays only when they are small,
        # else the recipe that makes them again, else nothing (the worker has them)
        self._full_setup = setup
        if synthetic is not None and _array_bytes(synthetic.given) <= SMALL_ARGUMENTS:
            self._light_setup = {**setup, "arguments": None, "synthetic": synthetic}
        elif _array_bytes(setup["arguments"]) <= SMALL_ARGUMENTS:
            self._light_setup = setup
        else:
            self._light_setup = {**setup, "arguments": None}
        self.task_bytes = len(pickle.dumps(self._light_setup))  # the setup every task carries
        if self.workers == 0:
            raise ClusterError(f"the cluster has no worker with the resource '{RESOURCE}' (start each with "
                               f"--resources {RESOURCE}=1 and {DEVICE_ENV} naming its device)")

    def _submit(self, function: Callable, *args: Any, full: bool = False, workers: Sequence[str] = ()) -> Any:
        """A task on one device worker, with the target's setup: the light one (no large
        arrays), or the `full` one for a worker that said it lacks them. The setup goes with
        the task, not as scattered data or a task of its own: either makes the tasks depend on
        it, and Dask then hands all of them to workers at once, so a worker's death is blamed
        on every task it held (and scattered data dies with its workers).

        `workers`: the task runs there and nowhere else. Never a loose restriction: when the
        named worker is gone, Dask places a loosely restricted task on any worker, one without
        a device included, and one that became unrunnable while no worker was up is never
        looked at again (the client waited forever); `measure` sends a task whose worker is
        gone again, unpinned."""
        setup = self._full_setup if full else self._light_setup
        placed = {"workers": list(workers), "allow_other_workers": False} if workers else {}
        return self.client.submit(function, setup, *args, resources={RESOURCE: 1}, pure=False, **placed)

    def _device_workers(self) -> list[str]:
        info = self.client.scheduler_info(n_workers=-1) if _takes_n_workers(self.client) else self.client.scheduler_info()
        return [a for a, w in info["workers"].items() if w.get("resources", {}).get(RESOURCE, 0) >= 1]

    def _host_workers(self) -> dict[str, int]:
        """How many device workers each host runs (they share its cores among their builders)."""
        from distributed.comm import get_address_host

        return dict(Counter(get_address_host(a) for a in self._device_workers()))

    @property
    def workers(self) -> int:
        return len(self._device_workers())

    def _count(self, address: str, result: dict, configs: int) -> None:
        """A worker's result: its builders, and its rate (its first task, which starts its
        measurement process and builders, counts only until a second one arrives)."""
        self.pool_starts[address] = result.get("pool_starts", 0)
        self.builders[address] = result.get("builders", 0)
        seconds = max(result.get("finished", 0.0) - result.get("started", 0.0), 1e-3)
        busy = self._busy.get(address)
        if busy is None or busy[2] == 1:  # its first task, or the second, which replaces the first
            self._busy[address] = [configs, seconds, 1 if busy is None else 2]
            return
        self._busy[address] = [busy[0] + configs, busy[1] + seconds, busy[2] + 1]

    def __enter__(self) -> "ClusterMeasurer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """The workers keep their measurers for the next task; nothing to release here."""

    def settled(self, record: Record) -> bool:
        return settled(record, self.options.timeout)

    def stored(self, key: Optional[str] = None) -> dict[str, Record]:
        return {canonical_config(r.config): r for r in self.store.records(self.run, key)}

    def _groups(self, configs: list[dict], summary: Summary) -> list[list[dict]]:
        """The configurations to measure (invalid ones recorded, stored ones skipped), as whole
        source groups (a group shares one build, so it never spans two tasks)."""
        plan = plan_measurements(self.space, configs, self.store.done_keys(self.run, self.options.timeout))
        if plan.invalid:
            self.store.add_many(self.run, plan.invalid)
            summary.statuses["invalid_config"] += len(plan.invalid)
        summary.skipped += plan.skipped
        summary.sources = len(plan.groups)
        return list(plan.groups.values())

    def _task_size(self, rate: Optional[float], todo: int) -> int:
        """Configurations for a worker's next task: `chunk` when given; else about TASK_SECONDS
        of the worker's measured rate (a slow device's tasks stay short, so the run does not end
        waiting for one), at most TASK_LIMIT; before its rate is known, a first small share."""
        if self.chunk:
            return self.chunk
        share = max(1, min(FIRST_TASK, math.ceil(todo / (4 * max(1, self.workers)))))
        if rate is None:
            return share
        return max(1, min(TASK_LIMIT, round(rate * TASK_SECONDS)))

    def measure(self, configs: list[dict],
                progress: Optional[Callable[[int, int, Summary], None]] = None) -> Summary:
        """Measure `configs` on the cluster (stored ones skipped); every result goes to the store."""
        summary = Summary(total=len(configs))
        start = time.time()
        queue = deque(self._groups(configs, summary))
        todo = sum(len(g) for g in queue)
        # one task in flight per worker, and the client holds each one's successor: Dask hands
        # resource-bound tasks to workers ahead of time and blames every task a dead worker
        # held, so a queue on the workers would make innocent tasks share a deadly one's fate.
        # The successor travels with its predecessor (`ahead`: the worker's builders start on
        # its sources) and goes to the same worker as soon as the predecessor's result arrives.
        futures: dict[Any, _InFlight] = {}

        def take(worker: Optional[str]) -> Optional[list[dict]]:
            """The next task from the queue, sized for `worker` (None: not known yet)."""
            busy = self._busy.get(worker) if worker else None
            size = self._task_size(busy[0] / busy[1] if busy and busy[1] > 0 else None, todo)
            task: list[dict] = []
            while queue and (not task or len(task) + len(queue[0]) <= size):
                task.extend(queue.popleft())
            return task or None

        def send(task: list[dict], after: Any = _RESERVE, full: bool = False, worker: Optional[str] = None,
                 stalls: int = 0, retried: bool = False) -> None:
            if after is _RESERVE:
                after = take(worker)
            if worker:
                placed = [worker]
            else:  # any worker, but none a stalled task still holds
                placed = [w for w in self._device_workers() if w not in self._hung] if self._hung else []
            future = self._submit(measure_task, task, self.hook, after, full=full, workers=placed)
            futures[future] = _InFlight(task, after, placed, time.time(), full, stalls, retried)

        def again(entry: _InFlight, stalls: Optional[int] = None) -> None:
            """`entry`'s task sent again as it was, unpinned (its worker gone, its result lost, or stalled)."""
            send(entry.task, entry.after, full=entry.full, stalls=entry.stalls if stalls is None else stalls,
                 retried=entry.retried)

        def successor(entry: _InFlight, worker: Optional[str]) -> Optional[list[dict]]:
            """What the worker that finished goes on with: its reserved task, else the queue's
            next, else one reserved for a busier worker (at the end, the fastest takes it)."""
            if entry.after is not None:
                return entry.after
            if queue:
                return take(worker)
            for other in futures.values():
                if other.after is not None:
                    stolen, other.after = other.after, None
                    return stolen
            return None

        def rescue(now: float, last: float) -> None:
            """Tasks that cannot finish go out again: one pinned to a worker that is gone
            (unpinned now), and one running for longer than its stall limit (a hung worker:
            once more, on another worker; then its configurations are recorded as timeouts
            without a limit, which a later run measures again)."""
            alive = set(self._device_workers())
            if not alive:
                if now - self._workerless_since(now) > WORKERLESS_SECONDS:
                    raise ClusterError(f"the cluster has had no device worker for {WORKERLESS_SECONDS:.0f} s "
                                       "(every worker died and none came back): the configurations not yet "
                                       "measured are not in the store; run again when the workers are up")
                for entry in futures.values():  # time without a worker is no task's fault
                    entry.sent += now - last
                return
            self._workerless = None
            self._hung &= alive
            where = None
            for future, entry in list(futures.items()):
                if future.done():  # its result is read on the next turn
                    continue
                gone = bool(entry.workers) and not alive.intersection(entry.workers)
                limit = self.stall_seconds + 2 * self.options.timeout * len(entry.task)
                began = self._started.get(str(future.key))
                # the clock runs from the task's start on its worker; one that never starts (queued
                # behind a hung task, or never placed) gets twice as long from when it was sent
                stalled = now - began > limit if began is not None else now - entry.sent > 2 * limit
                if not (gone or stalled):
                    continue
                futures.pop(future)
                if stalled and not gone:
                    # the cancelled task's thread goes on holding its worker's device: no task
                    # goes there while this run lasts (the scheduler would see it idle and prefer it)
                    where = where if where is not None else self.client.processing()
                    self._hung.update(w for w, keys in where.items() if future.key in keys)
                future.cancel()
                if gone:
                    self.sent_again["worker gone"] += 1
                    again(entry)
                    continue
                note = (f"a task of {len(entry.task)} configuration(s) was not done after "
                        f"{now - (began or entry.sent):.0f} s on its worker (a hung worker?)")
                if entry.stalls == 0:
                    self._note(f"{note}: sent again to another worker")
                    self.sent_again["stalled"] += 1
                    again(entry, stalls=1)
                    continue
                self._note(f"{note}, twice: recorded as timeouts without a limit (a later run measures "
                           "them again)")
                record_result({"records": [_unfinished(c, note) for c in entry.task], "worker": None}, entry)
                following = successor(entry, None)
                if following is not None:
                    send(following)

        def record_result(result: dict, entry: _InFlight) -> None:
            if result.get("digest", self._full_setup["digest"]) != self._full_setup["digest"]:
                # a silently different input would make every record of this worker wrong
                raise ClusterError(f"the worker {result['worker']} measures with other inputs than the client's "
                                   "(it made the synthetic images again and got other values: another NumPy "
                                   "version?): run the cluster's workers with the client's NumPy")
            if "digest" in result:
                self.worker_digests.add(result["digest"])
            if "started" in result:
                self.task_waits.append(result["started"] - entry.sent)
            if self.options.deadline is not None and time.time() - start > self.options.deadline:
                summary.stopped_early = True
            for record in result["records"]:
                self.store.add(result.get("run") or self.run, record)
                self.measured_by.append((canonical_config(record.config), result["worker"]))
                summary.measured += 1
                summary.statuses[record.status] += 1
                if record.time is not None and (summary.best_time is None or record.time < summary.best_time):
                    summary.best_time, summary.best_config = record.time, record.config
            summary.build_seconds += result.get("build_seconds", 0.0)
            for note in result.get("notes", []):
                self._note(note)
            summary.seconds = time.time() - start
            if progress is not None:
                progress(summary.measured, todo, summary)

        self._workerless, self._hung = None, set()
        self._started.clear()
        self.client.subscribe_topic(STARTED_TOPIC, self._on_started)
        # every worker busy before any successor is reserved, each first task pinned to its own
        # worker: left to itself, Dask may hand two resource-bound tasks to one worker ahead of
        # time while the other idles (a pinned task whose worker is gone goes out again unpinned)
        idle = self._device_workers()
        first = [t for t in (take(None) for _ in range(max(1, len(idle)))) if t]
        for task, worker in zip(first, idle or [None]):
            send(task, worker=worker)
        watched = time.time()
        try:
            while futures and not summary.stopped_early:
                done = self._first_done(list(futures), WATCH_SECONDS)
                if time.time() - watched >= WATCH_SECONDS:
                    rescue(time.time(), watched)
                    watched = time.time()
                for future in done:
                    entry = futures.pop(future, None)
                    if entry is None:  # sent again by rescue() meanwhile
                        continue
                    try:
                        result = self._result(future)
                    except _Lost:
                        # its worker died after it finished, before the client read it: Dask would
                        # run it again where it was pinned, a worker that is gone
                        future.cancel()
                        self.sent_again["lost"] += 1
                        again(entry)
                        continue
                    except Exception as exc:  # noqa: BLE001 - a task's failure is its configurations' record
                        if isinstance(exc, ClusterError):
                            raise
                        if isinstance(exc, NeedsArguments):
                            # this worker's first task, again with the arrays: it takes this worker's
                            # turn (a task from the queue sent now would find the worker without them)
                            send(entry.task, entry.after, full=True,
                                 worker=str(exc.args[0]) if exc.args else None, stalls=entry.stalls,
                                 retried=entry.retried)
                            continue
                        if _killed_worker(exc) and not entry.retried:
                            # Dask blames every task a dead worker held, the innocent ones queued
                            # behind the deadly one too: each gets a second run before it is recorded
                            send(entry.task, entry.after, stalls=entry.stalls, retried=True)
                            continue
                        following = successor(entry, None)
                        if following is not None:
                            send(following)
                        result = {"records": [_failed(config, exc) for config in entry.task], "worker": None}
                    else:
                        address = result.get("address")
                        if address is not None:
                            self._count(address, result, len(entry.task))
                        following = successor(entry, address)
                        if following is not None:  # at once: the worker is not idle while this result is stored
                            send(following, worker=address)
                    record_result(result, entry)
                    if summary.stopped_early:
                        break
        finally:
            for future in futures:
                future.cancel()
            self.client.unsubscribe_topic(STARTED_TOPIC)
        summary.notes = list(self.notes)
        summary.seconds = time.time() - start
        return summary

    def _first_done(self, futures: list, timeout: float) -> list:
        """The futures among `futures` that are done, waiting at most `timeout` seconds for one."""
        from distributed import wait

        with self.client.as_current():
            try:
                return list(wait(futures, timeout=timeout, return_when="FIRST_COMPLETED").done)
            except _TIMEOUTS:
                return []

    @staticmethod
    def _result(future: Any) -> dict:
        """A done task's result, or its exception raised; _Lost when the result went with its
        worker (Dask's status "lost", or a read that does not come back)."""
        if future.status == "error":
            return future.result()
        if future.status != "finished":
            raise _Lost()
        try:
            return future.result(timeout=RESULT_SECONDS)
        except _TIMEOUTS:
            raise _Lost() from None

    def _on_started(self, event: tuple) -> None:
        """STARTED_TOPIC's handler (the client's event loop): when each task started."""
        self._started[str(event[1]["key"])] = time.time()

    def _workerless_since(self, now: float) -> float:
        if self._workerless is None:
            self._workerless = now
        return self._workerless

    def _note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def retime(self, configs: list[dict], repeats: int = 15, rounds: int = 5,
               progress: Optional[Callable[[int, int, Any], None]] = None) -> dict[str, Record]:
        """`Measurer.retime` on one worker (contenders compared on one device, in turns)."""
        stored = self.stored()
        keys = {canonical_config(self.space.complete(c)) for c in configs}
        contenders = [stored[k] for k in keys if k in stored]
        try:
            result = self._submit(retime_task, contenders, configs, repeats, rounds).result()
        except NeedsArguments:  # the full setup suits any worker: not pinned to one that may be gone
            result = self._submit(retime_task, contenders, configs, repeats, rounds, full=True).result()
        updated = {}
        for record in result["records"]:
            key = canonical_config(record.config)
            if stored.get(key) is None or record.times != stored[key].times:
                self.store.add(self.run, record)
            updated[key] = record
        if progress is not None:
            progress(1, 1, None)
        return updated


def _failed(config: dict, exc: BaseException) -> Record:
    """The record of a configuration whose task failed on the cluster (Dask gave up on it)."""
    from distributed import KilledWorker

    if isinstance(exc, KilledWorker):
        return Record(dict(config), "crash", None, error=f"its measurement killed the cluster's workers again and "
                      f"again; Dask gave up after its allowed failures ({exc})"[:4000])
    return Record(dict(config), "error", None, error=f"the cluster could not measure it: "
                  f"{type(exc).__name__}: {exc}"[:4000])


def _unfinished(config: dict, why: str) -> Record:
    """The record of a configuration whose task never finished on the cluster: a timeout with
    no limit, which `settled` leaves to be measured again by a later run."""
    return Record(dict(config), "timeout", None, error=f"the cluster did not finish it: {why}"[:4000], limit=None)


def _killed_worker(exc: BaseException) -> bool:
    from distributed import KilledWorker

    return isinstance(exc, KilledWorker)


def _takes_n_workers(client: Any) -> bool:
    import inspect

    return "n_workers" in inspect.signature(client.scheduler_info).parameters


def worker_counts(measured_by: list[tuple[str, str]]) -> dict[str, int]:
    """How many configurations each worker measured."""
    return dict(Counter(w for _, w in measured_by if w is not None))


@contextmanager
def open_measurer(cluster: Optional[ClusterSpec], program, arguments: dict, store: Store, device: Any = None,
                  options: Optional[MeasureOptions] = None, synthetic: Optional[Synthetic] = None) -> Iterator[Any]:
    """The measurer `imagecl measure/tune` use: the engine's on this machine (cluster None), or a
    ClusterMeasurer on the cluster `cluster` names (`synthetic`: how `arguments` were made, so
    that the workers make them again instead of receiving them)."""
    if cluster is None:
        with Measurer(program, arguments, store, device, options) as measurer:
            yield measurer
        return
    devices = local_devices(cluster.local_workers, device) if cluster.local_workers else None
    with open_client(cluster, devices) as client:
        yield ClusterMeasurer(client, program, arguments, store, device, options, synthetic=synthetic)


def cluster_option(text: str) -> ClusterSpec:
    """argparse's `type` for --cluster: a usage error that says what is expected."""
    import argparse

    try:
        return parse_cluster(text)
    except ArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
