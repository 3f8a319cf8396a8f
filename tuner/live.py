"""A tuning problem measured live on a device: the bridge from the strategies to the engine."""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping, Optional, Sequence

import numpy as np

from ..errors import ConfigError
from .censor import SLOW
from .engine import Measurer
from .problem import Parameter, Problem
from .store import RunKey, Store, canonical_config
from .strategies import Observation, distinct_best
from .strategies.design import device_kind


class LiveProblem(Problem):
    """The program's tuning space; `evaluate` measures through a Measurer (and its store, so
    what an earlier or interrupted run measured is reused, not measured again)."""

    def __init__(self, space, measurer: Measurer, context: Optional[Mapping[str, float]] = None,
                 on_measure: Optional[Callable[[dict, Optional[float]], None]] = None) -> None:
        super().__init__([Parameter(p.name, list(p.values)) for p in space.parameters], context)
        self.space = space
        self.measurer = measurer
        self.on_measure = on_measure
        self.evaluations = 0
        # a timeout with a smaller limit than this run's is measured again (Measurer.settled)
        self.known = {k: r.time for k, r in measurer.stored().items() if measurer.settled(r)}
        self.device_kind = device_kind(getattr(measurer, "device", None))  # the first sample's design

    def valid_mask(self, columns) -> np.ndarray:
        return self.space.valid_mask(columns)

    @property
    def prefetching(self) -> bool:
        return bool(getattr(self.measurer, "builds_ahead", False))

    def prefetch(self, configs: Sequence[Mapping[str, int]]) -> None:
        if not self.prefetching:
            return
        fulls = []
        for config in configs:
            try:
                fulls.append(self.space.complete(config))
            except ConfigError:  # evaluate records it when it comes to it
                continue
        self.measurer.prefetch([f for f in fulls if canonical_config(f) not in self.known])

    def evaluate(self, config: Mapping[str, int]) -> Optional[float]:
        self.evaluations += 1
        try:
            full = self.space.complete(config)
        except ConfigError:
            return None
        key = canonical_config(full)
        if key not in self.known:
            self.measurer.measure([full])
            self.known.update({k: r.time for k, r in self.measurer.stored(key).items()})
        time = self.known.get(key)
        if self.on_measure is not None:
            self.on_measure(full, time)
        return time

    def evaluate_many(self, configs: Sequence[Mapping[str, int]]) -> list[Optional[float]]:
        """A batch measured in one call: in parallel where the measurer has several workers."""
        fulls = []
        for config in configs:
            try:
                fulls.append(self.space.complete(config))
            except ConfigError:
                fulls.append(None)
        todo = [f for f in fulls if f is not None and canonical_config(f) not in self.known]
        if todo:
            self.measurer.measure(todo)
            stored = self.measurer.stored()
            self.known.update({canonical_config(f): stored[canonical_config(f)].time
                               for f in todo if canonical_config(f) in stored})
        times = []
        for full in fulls:
            self.evaluations += 1
            time = None if full is None else self.known.get(canonical_config(full))
            if full is not None and self.on_measure is not None:
                self.on_measure(full, time)
            times.append(time)
        return times


def confirm_best(measurer: Measurer, history: Sequence[tuple[Mapping[str, int], Optional[float]]],
                 top: int = 4, repeats: int = 15, rounds: int = 5,
                 progress: Optional[Callable[[int, int, Any], None]] = None) -> tuple[Optional[dict], Optional[float], dict]:
    """The fastest of a search's `top` fastest configurations once each is timed again with
    `repeats` more launches, in `rounds` rounds that take the contenders in turn
    (`Measurer.retime`): the search times each configuration with a few launches, and on a
    noisy device (a CPU) its winner is often one whose first launches were lucky by more than
    the few percent that separate it from the runners-up. Returns (config, seconds, info).
    """
    ok = sorted(((t, dict(c)) for c, t in history if t is not None), key=lambda x: x[0])
    if not ok:
        return None, None, {"confirmed": 0}
    seen: set[str] = set()
    contenders = []
    for _, config in ok:
        key = canonical_config(measurer.space.complete(config))
        if key not in seen:
            seen.add(key)
            contenders.append(config)
        if len(contenders) >= top:
            break
    info = {"confirmed": 0, "search_best_seconds": ok[0][0]}
    if top <= 0 or repeats <= 0:
        return ok[0][1], ok[0][0], info
    updated = measurer.retime(contenders, repeats, rounds, progress=progress)
    timed = [(updated[k].time, updated[k].config) for k in updated]
    info["confirmed"] = len(timed)
    if not timed:
        return ok[0][1], ok[0][0], info
    seconds, config = min(timed, key=lambda x: x[0])
    return {k: int(v) for k, v in config.items()}, seconds, info


def size_context(problem_size: str) -> dict[str, float]:
    """Model inputs for a stored problem size ("4096x2048" -> size_0 = 4096, size_1 = 2048)."""
    try:
        return {f"size_{i}": float(s) for i, s in enumerate(problem_size.split("x"))}
    except ValueError:
        return {}


def prior_from_store(store: Store, run: RunKey) -> list[Observation]:
    """Measurements of the same program (its `RunKey.family`) on the same device (its name, driver
    and compute units) at other problem sizes, as training data for the model, with the size as
    an extra input (section 5.4 of Falch & Elster): a model fit on them and on this size's first
    measurements predicts this size better than one fit on this size alone. Measurements of this
    size are not included: the run itself reuses them (LiveProblem), without a second measurement."""
    prior: list[Observation] = []
    dims = len(size_context(run.problem_size))
    for other in store.runs():
        if (other.family, other.device_id) != (run.family, run.device_id) or other.problem_size == run.problem_size:
            continue
        context = size_context(other.problem_size)
        if not context or len(context) != dims:
            continue
        # a failed variant's time (one with a wrong output is timed) is no time to learn from
        # a censored one (slow, tuner/censor.py) is neither a time nor a failure: left out
        prior.extend(Observation(r.config, r.time if r.status == "ok" else None, context)
                     for r in store.records(other) if r.status != SLOW)
    return prior


def transfer_sources(store: Store, run: RunKey, per_program: int = 3) -> list[tuple[RunKey, list[dict]]]:
    """For every other program measured in `store` on the device of `run` (its name, driver and
    compute units): the run its seeds come from and its `per_program` fastest mutually distinct
    configurations (`distinct_best`), program by program in the order of their names (then hashes).

    Other programs are those of another `RunKey.family` (so an edited program counts as another
    one; the same program at other sizes is `prior_from_store`'s). Of a program measured at
    several sizes, the size closest to this run's is used (`_size_distance`), not a pool of
    all: a small image runs faster with every configuration, so pooled times would rank the
    configurations of the smallest size first, whatever they are worth at this one.
    """
    by_program: dict[tuple[str, str], list[RunKey]] = {}
    for other in store.runs():
        if other.family != run.family and other.device_id == run.device_id:
            by_program.setdefault((other.program_name, other.family), []).append(other)
    sources = []
    for key in sorted(by_program):
        closest = min(by_program[key], key=lambda r: (_size_distance(r.problem_size, run.problem_size),
                                                      r.problem_size))
        records = ((r.config, r.time if r.status == "ok" else None) for r in store.records(closest))
        best = distinct_best(records, per_program)
        if best:
            sources.append((closest, best))
    return sources


@dataclass
class StoreOptions:
    """What a results database adds to a search: keyword options for the strategy and, for the
    result's `info`, what they hold."""

    options: dict[str, Any] = field(default_factory=dict)  # "prior" and/or "seeds"
    # "prior": {measurements, sizes}; "transfer": {seeds, programs}; "unsized": records not reused (Store.unsized)
    info: dict[str, Any] = field(default_factory=dict)


def store_options(store: Store, run: RunKey, strategy: Callable, transfer: bool = True,
                  given: Collection[str] = ()) -> StoreOptions:
    """The `prior` (this program's measurements at other sizes, `prior_from_store`) and `seeds`
    (other programs' best configurations on this device, `transfer_sources`; only with
    `transfer`) that `strategy` takes, from `store`, for tuning `run`. Options named in `given`
    are the caller's own and are not looked up: what a user passes explicitly wins. The info
    also counts the run's older records that it does not reuse (`Store.unsized`)."""
    takes = inspect.signature(strategy).parameters
    out = StoreOptions()
    unsized = store.unsized(run)
    if unsized:
        out.info["unsized"] = unsized
    if "prior" in takes and "prior" not in given:
        prior = prior_from_store(store, run)
        out.options["prior"] = prior
        out.info["prior"] = {"measurements": len(prior),
                             "sizes": sorted({"x".join(f"{v:g}" for v in o.context.values()) for o in prior})}
    if transfer and "seeds" in takes and "seeds" not in given:
        sources = transfer_sources(store, run)
        out.options["seeds"] = [seed for _, seeds in sources for seed in seeds]
        # one name per program: two programs of one name (an edited one, say) count twice
        out.info["transfer"] = {"seeds": len(out.options["seeds"]),
                                "programs": sorted(source.program_name for source, _ in sources)}
    return out


def store_messages(info: Mapping[str, Any], db: Any) -> list[str]:
    """One line for the user per thing `store_options` took from the database `db` (none when
    it found nothing), from the `info` it returned or a result's info that holds it."""
    lines = []
    unsized = info.get("unsized")
    if unsized:
        lines.append(f"not reusing {unsized} older record{'s' if unsized != 1 else ''} of this program, device and "
                     f"size in {db}: {'they were' if unsized != 1 else 'it was'} stored without the device's number "
                     "of compute units, and may be of another device of the same name")
    prior = info.get("prior")
    if prior and prior["measurements"]:
        lines.append(f"using {prior['measurements']} measurements of other sizes ({', '.join(prior['sizes'])}) "
                     f"from {db}")
    transfer = info.get("transfer")
    if transfer and transfer["programs"]:
        programs = transfer["programs"]
        plural = "s" if len(programs) != 1 else ""
        lines.append(f"starting from {transfer['seeds']} configurations of {len(programs)} other program{plural} "
                     f"tuned on this device ({', '.join(sorted(set(programs)))}) from {db}")
    knowledge = info.get("knowledge")
    if knowledge and knowledge.get("seeds"):
        how = "loaded from the cache" if knowledge["cached"] else f"trained in {knowledge['train_seconds']:.1f} s"
        lines.append(f"starting from the {knowledge['seeds']} configurations ranked first by a model of "
                     f"{knowledge['measurements']:,} measurements ({knowledge['programs']} programs on "
                     f"{knowledge['devices']} devices, {knowledge['cases']} cases; {how})")
    return lines


def seeds_from_store(store: Store, run: RunKey, per_program: int = 3) -> list[dict]:
    """Starting configurations for tuning `run` from what other programs measured on the same
    device (OmniTune-style shared data): the best configurations of other programs share the
    work-group shape, pixels per thread or input memory that suit this device. See
    `transfer_sources` for which are taken; program by program, in a stable order."""
    return [seed for _, seeds in transfer_sources(store, run, per_program) for seed in seeds]


def _size_distance(a: str, b: str) -> float:
    """How far apart two problem sizes are: the sum over dimensions of |log(a_i / b_i)|, the
    log ratio of their element counts when the dimensions differ, inf if either is no size."""
    sa, sb = size_context(a), size_context(b)
    if not sa or not sb or any(v <= 0 for v in (*sa.values(), *sb.values())):
        return math.inf
    if len(sa) == len(sb):
        return sum(abs(math.log(x / y)) for x, y in zip(sa.values(), sb.values()))
    return abs(math.log(math.prod(sa.values()) / math.prod(sb.values())))
