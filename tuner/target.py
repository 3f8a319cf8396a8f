"""What the measurement engine tunes: an `.icl` program, or a hand-written OpenCL kernel.

The engine (engine.py) and its worker (worker.py) only need, from a target:

* in the parent process: its tuning space (an `imagecl.space.Space`), the store's run key, the
  OpenCL source and build options of a configuration (to group configurations that share a build
  and to build them ahead, in parallel), and a picklable setup message for the worker;
* in the worker process: a *runner* made from that setup, which builds, launches, times and
  verifies one configuration (`Runner.time`, returning a `session.Timing`).

`ProgramTarget` / `ProgramRunner` are the `.icl` side; tuner/kernel.py and tuner/kernelrun.py
the hand-written one. Everything else (store, build cache, watchdog, failure classification,
repeats, strategies) is shared.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Mapping, Optional, Protocol

from ..space import Space
from .store import RunKey, text_hash


class Target:
    """Base class of the engine's targets (see the module docstring)."""

    device: Any
    space: Space
    run: RunKey

    def build_input(self, config: Mapping[str, int]) -> tuple[str, tuple[str, ...]]:
        """The OpenCL source and build options of a full, valid configuration."""
        raise NotImplementedError

    def build_job(self, config: Mapping[str, int]) -> dict:
        """What a builder process (pipeline.py) needs to build a full, valid configuration's
        source (picklable): by default the source itself, generated here."""
        source, options = self.build_input(config)
        return {"kind": "source", "source": source, "options": list(options)}

    def worker_setup(self) -> dict:
        """Everything a worker process needs to make this target's runner (picklable); its
        'kind' names the runner (see `make_runner`)."""
        raise NotImplementedError

    def reference_candidates(self, configs: list[dict], limit: int = 3) -> list[Optional[dict]]:
        """The references to try, in order, should one not finish within the timeout (a
        worker-setup 'reference_tunables' each; None: the target's only reference)."""
        return [None]

    def describe_reference(self, candidate: Optional[dict]) -> str:
        return "the reference kernel"


class Runner(Protocol):
    def build_input(self, config: Mapping[str, int]) -> tuple[str, tuple[str, ...]]: ...

    def time(self, config: Mapping[str, int], repeats: int = 3, warmup: int = 1, read_outputs: bool = True,
             max_seconds: Optional[float] = None, verify: bool = False, stop_above: Optional[float] = None,
             probe: float = 0.0, meanwhile: Optional[Callable[[], None]] = None): ...


def device_identity(device) -> tuple[str, str, int]:
    """(name, driver, compute units) of a pyopencl device: what tells its measurements from
    another device's (RunKey.compute_units says why the name and driver do not)."""
    return device.name.strip(), device.driver_version.strip(), int(device.max_compute_units)


def run_key(program, device, grid_shape: tuple[int, ...]) -> RunKey:
    size = "x".join(str(s) for s in reversed(grid_shape))
    name, driver, units = device_identity(device)
    return RunKey(text_hash(program.info.unit.source), program.name, name, driver, size, units)


class ProgramTarget(Target):
    """An `.icl` program on one set of arguments; the reference is its naive variant."""

    def __init__(self, program, arguments: Mapping[str, Any], device) -> None:
        from ..runtime.arguments import prepare
        from ..runtime.memory import check_device, prepared_buffers

        self.program = program
        self.device = device
        self.prepared = prepare(program.info, dict(arguments))
        buffers = prepared_buffers(program.info, self.prepared.arrays)
        # a measurement keeps two more copies of each written array on the device: its initial
        # data, restored before every launch, and the reference (session.py, verify.py)
        copies = [dataclasses.replace(b, label=f"{b.label} ({copy})")
                  for b, name in zip(buffers, self.prepared.arrays) if program.info.arrays[name].is_written
                  for copy in ("its initial data", "its reference")]
        check_device(buffers + copies, device, "the arguments and the measurement's copies of the outputs")
        self.run = run_key(program, device, self.prepared.grid_shape)
        self.space = program.space_for(device, self.prepared.grid_shape)

    def build_input(self, config: Mapping[str, int]) -> tuple[str, tuple[str, ...]]:
        return self.program.source_of(self.program.plan(dict(config), self.device)), ()

    def build_job(self, config: Mapping[str, int]) -> dict:
        # the builder generates the source itself: code generation runs on every core too; the
        # arguments' shapes let it compile a CPU's work-group function too (runtime/warm.py)
        return {"kind": "icl", "program": self.program.info.unit.source, "filename": self.program.filename,
                "config": dict(config), "arguments": self.argument_shapes}

    @functools.cached_property
    def argument_shapes(self) -> dict:
        from ..runtime.warm import argument_shapes

        return argument_shapes(self.prepared)

    def worker_setup(self) -> dict:
        return {"kind": "icl", "source": self.program.info.unit.source, "filename": self.program.filename,
                "arguments": self.prepared.arrays | self.prepared.scalars}

    def reference_candidates(self, configs: list[dict], limit: int = 3) -> list[Optional[dict]]:
        """At most `limit` references: the naive variant with the tunables' first values, then
        with those of the configurations to measure, then with any others. A program's
        `tunable` values compute the same result by contract, so the naive variant with any of
        them is a valid reference, and one whose first value never ends (a loop that a later
        value avoids) need not block the others."""
        import itertools

        tunables = self.program.info.tunables
        if not tunables:
            return [None]
        candidates = [{n: int(v[0]) for n, v in tunables.items()}]
        others = (dict(zip(tunables, values)) for values in itertools.product(*tunables.values()))
        for candidate in itertools.chain(({n: int(c.get(n, v[0])) for n, v in tunables.items()} for c in configs),
                                         itertools.islice(others, 1000)):
            if candidate not in candidates:
                candidates.append(candidate)
            if len(candidates) >= limit:
                break
        return candidates

    def describe_reference(self, candidate: Optional[dict]) -> str:
        values = ", ".join(f"{n}={v}" for n, v in sorted((candidate or {}).items()))
        return f"the naive variant of '{self.program.name}'" + (f" with {values}" if values else "")


class ProgramRunner:
    """The worker side of a ProgramTarget: a Session whose reference is the naive variant."""

    def __init__(self, setup: dict, device, on_built: Optional[Callable[[], None]] = None) -> None:
        import imagecl
        from imagecl.runtime.session import Session

        self.program = imagecl.compile(setup["source"], setup["filename"])
        self.device = device
        self.session = Session(self.program, setup["arguments"], device)
        reference = self.program.plan(None)
        if setup.get("reference_tunables"):
            reference = dataclasses.replace(reference, tunables=tuple(sorted(
                (n, int(v)) for n, v in setup["reference_tunables"].items())))
        self.session.set_reference_from(reference, on_built=on_built)
        self._plans: dict = {}
        self._space = self.program.space_for(device)
        self._names = frozenset(self._space.names)

    def _plan(self, config: Mapping[str, int]):
        key = tuple(sorted(config.items()))
        if key not in self._plans:
            # the engine sends configurations it completed and checked against the constraints
            # (validate.plan_measurements, all at once): checking each again here cost about half
            # a millisecond a configuration, a minute over a space of 100,000
            space = self._space
            full = config if frozenset(config) == self._names else space.complete(dict(config))
            # the one measured and the next one, planned ahead (prepare)
            self._plans = {k: p for k, p in list(self._plans.items())[-1:]}
            self._plans[key] = space.plan(full)
        return self._plans[key]

    def prepare(self, config: Mapping[str, int]) -> None:
        """Plan `config` and its launch ahead of its measurement (see Session.prepare)."""
        self.session.prepare(self._plan(config))

    def build_input(self, config: Mapping[str, int]) -> tuple[str, tuple[str, ...]]:
        return self.program.source_of(self._plan(config)), ()

    def adopt_source(self, config: Mapping[str, int], source: str) -> None:
        """`source` is this configuration's (a builder generated it from the same program)."""
        self.program.adopt_source(self._plan(config), source)

    def time(self, config: Mapping[str, int], repeats: int = 3, warmup: int = 1, read_outputs: bool = True,
             max_seconds: Optional[float] = None, verify: bool = False, stop_above: Optional[float] = None,
             probe: float = 0.0, meanwhile: Optional[Callable[[], None]] = None):
        return self.session.time(self._plan(config), repeats=repeats, warmup=warmup, read_outputs=read_outputs,
                                 max_seconds=max_seconds, verify=verify, stop_above=stop_above, probe=probe,
                                 meanwhile=meanwhile)


def make_runner(setup: dict, device, on_built: Optional[Callable[[], None]] = None) -> Runner:
    """The runner for a worker's setup message; `on_built` is called once everything is ready
    but the run of the reference (the part that may hang)."""
    kind = setup.get("kind", "icl")
    if kind == "icl":
        return ProgramRunner(setup, device, on_built)
    if kind == "kernel":
        from .kernelrun import KernelRunner

        return KernelRunner(setup, device, on_built)
    raise ValueError(f"unknown target kind '{kind}'")
