"""One tuning session: the search, its baseline, transfer from the store, confirmation.

`imagecl tune` (cli._tune), `TunableKernel.tune` (kernel.py) and the peer benchmark
(benchmarks/peers.py) all tune through `run_session`; what differs between them is a field of
`SessionOptions`, not a copy of the loop:

- the baseline: the space's default configuration (for a program, its naive variant: the driver
  chooses the work-group size) is measured first; the speed-up is reported against it, a
  search whose picks all failed falls back to it, and a winner that is slower than it once
  timed again is not kept (`SessionResult.kept_baseline`);
- the store: this target's measurements at other sizes train the model (`prior`), other
  programs' best configurations on this device are measured first (`transfer`), and whatever
  the store already holds is reused, not measured again;
- the search itself, stopped by the budget or by `seconds` of wall-clock time;
- confirmation: the search's `confirm` fastest timed again in turns (live.confirm_best).

Hooks: each `on_measure` callback gets every `Measurement` of the baseline and the search (a
tuning service can receive them as they come); `seeds` provides configurations the strategy
measures first (a knowledge model's guesses), before the store's transfer seeds.
"""
from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from ..errors import ArgumentError
from .engine import Measurer
from .models import import_in_background
from .live import LiveProblem, confirm_best, size_context, store_options
from .store import RunKey, canonical_config
from .strategies import DEFAULT_STRATEGY, BudgetExhausted


MODEL_STRATEGIES = ("hybrid", "ml")  # those that fit the bagged networks (torch)


@dataclass(frozen=True)
class Measurement:
    """One measurement of a session, as its `on_measure` callbacks receive it."""

    run: RunKey  # the program (or kernel), device, driver and problem size
    config: dict  # a full configuration
    seconds: Optional[float]  # None: it failed (see the store for why)
    phase: str  # "baseline" or "search"


SeedProvider = Callable[[Any, RunKey], Sequence[Mapping[str, int]]]  # (space, run) -> configurations


@dataclass
class SessionOptions:
    strategy: Union[str, Callable] = DEFAULT_STRATEGY
    budget: Optional[int] = None  # configurations; None: all valid ones for exhaustive, else min(100, all)
    seed: int = 0
    confirm: int = 4  # the search's fastest timed again (0: the search's pick is kept)
    transfer: bool = True  # seed the search with other programs' best configurations from the store
    strategy_options: dict = field(default_factory=dict)  # a "prior" or "seeds" here wins over the store's
    seconds: Optional[float] = None  # wall-clock limit of the search; None: only the budget
    baseline: bool = True  # measure the default configuration first (see the module's docstring)
    on_measure: list = field(default_factory=list)  # callables taking a Measurement
    seeds: Optional[SeedProvider] = None  # configurations measured first (e.g. a knowledge model's)
    confirm_progress: Optional[Callable[[int, int, Any], None]] = None
    on_store: Optional[Callable[[dict], None]] = None  # gets what the store gave ("prior", "transfer") before the search
    # (what the store gave, the store, the run, the strategy, the caller's strategy options) -> what
    # the search starts from: a knowledge model's seeds and prior (tuner.knowledge.fewshot.with_knowledge)
    knowledge: Optional[Callable[..., Any]] = None


@dataclass
class SessionResult:
    strategy: str
    best_config: Optional[dict]  # full; None when nothing ran (the caller says why)
    best_time: Optional[float]
    evaluations: int
    history: list  # (configuration, seconds or None) as the search measured them
    info: dict  # the strategy's, the store's ("prior", "transfer"), confirmation's, "seeds_given"
    baseline_config: Optional[dict] = None
    baseline_time: Optional[float] = None
    kept_baseline: bool = False  # the winner, timed again, was slower than the baseline: the baseline is best
    search_fell_back: bool = False  # every configuration the search measured failed; the baseline ran
    predicted: Optional[float] = None  # the model's prediction for the best, when the strategy made one
    found_config: Optional[dict] = None  # the search's winner after confirmation (best_config unless kept_baseline)
    found_time: Optional[float] = None

    @property
    def speedup(self) -> Optional[float]:
        """The baseline's time over the best's, when both exist and differ as configurations."""
        if self.baseline_time is None or not self.found_time or self.found_config == self.baseline_config:
            return None
        return self.baseline_time / self.found_time


def check_strategy(options: SessionOptions) -> tuple[str, Callable]:
    """(name, function) of the session's strategy; ArgumentError for a bad one or bad options."""
    from .simulate import SimulationError, check_options, resolve_strategy

    try:
        name, fn = resolve_strategy(options.strategy)
        check_options(name, fn, dict(options.strategy_options or {}))
    except SimulationError as exc:
        raise ArgumentError(str(exc)) from None
    return name, fn


def resolve(options: SessionOptions, space) -> tuple[str, Callable, int]:
    """(name, function, budget) of the session on `space`; ArgumentError for a bad one."""
    name, fn = check_strategy(options)
    budget = options.budget
    if budget is None:
        valid = space.count_valid()
        budget = valid if name == "exhaustive" else min(100, valid)
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise ArgumentError(f"the budget is a positive number of configurations, got {budget!r}")
    if not isinstance(options.transfer, bool):
        raise ArgumentError(f"transfer is True or False, got {options.transfer!r}")
    return name, fn, int(budget)


class _SessionProblem(LiveProblem):
    """The live problem with a wall-clock deadline (the strategies stop on BudgetExhausted)."""

    deadline = float("inf")

    def evaluate(self, config):
        if time.time() > self.deadline:
            raise BudgetExhausted
        return super().evaluate(config)

    def evaluate_many(self, configs):
        if time.time() > self.deadline:
            raise BudgetExhausted
        return super().evaluate_many(configs)


def run_session(measurer: Measurer, options: SessionOptions) -> SessionResult:
    """Tune the target of `measurer` (its space, store and device) as `options` say."""
    space, run = measurer.space, measurer.run
    name, fn, budget = resolve(options, space)
    if name in MODEL_STRATEGIES:
        import_in_background()  # torch's import overlaps the baseline's measurement (the worker's start)

    def emit(config: Mapping[str, int], seconds: Optional[float], phase: str) -> None:
        event = Measurement(run, dict(config), seconds, phase)
        for callback in options.on_measure:
            callback(event)

    baseline_config = baseline_time = None
    if options.baseline:
        baseline_config = space.complete(space.defaults)
        measurer.measure([baseline_config])
        record = measurer.stored(canonical_config(baseline_config)).get(canonical_config(baseline_config))
        baseline_time = record.time if record is not None and record.status == "ok" else None
        emit(baseline_config, baseline_time, "baseline")
    warm = getattr(measurer, "warm_ahead", None)
    if warm is not None and space.parameters:
        # the builders (tuner/pipeline.py) start once the worker has: on the H100 the worker's start
        # took 4 s beside 15 builders creating their OpenCL contexts, 1.8 s alone
        warm()
    if not space.parameters:  # nothing to choose: the one configuration is the result
        if not options.baseline:
            measurer.measure([{}])
        record = next(iter(measurer.stored().values()), None)
        seconds = record.time if record is not None and record.status == "ok" else None
        chosen = {} if seconds is not None else None
        return SessionResult(name, chosen, seconds, 1, [({}, seconds)], {}, baseline_config, baseline_time,
                             found_config=chosen, found_time=seconds)

    given = dict(options.strategy_options or {})
    taken = store_options(measurer.store, run, fn, transfer=options.transfer, given=given)
    if options.knowledge is not None:
        taken = options.knowledge(taken, measurer.store, run, fn, given)
    info: dict[str, Any] = {}
    if options.seeds is not None and "seeds" not in inspect.signature(fn).parameters:
        info["seeds_unused"] = f"strategy '{name}' takes no seeds"  # said, not silently dropped
    elif options.seeds is not None:
        provided = [dict(c) for c in options.seeds(space, run)]
        info["seeds_given"] = len(provided)
        kwargs_seeds = given if "seeds" in given else taken.options
        kwargs_seeds["seeds"] = provided + list(kwargs_seeds.get("seeds", []))
    if options.on_store is not None:
        options.on_store(dict(taken.info))
    problem = _SessionProblem(space, measurer, context=size_context(run.problem_size),
                              on_measure=lambda config, seconds: emit(config, seconds, "search"))
    if options.seconds is not None:
        problem.deadline = time.time() + options.seconds
    if hasattr(measurer, "search_deadline"):  # builds ahead are not waited for past it
        measurer.search_deadline = problem.deadline if options.seconds is not None else None
    problem.batch = getattr(measurer, "workers", 1)  # a cluster's workers each measure one of a batch
    outcome = fn(problem, budget, np.random.default_rng(options.seed), **taken.options, **given)
    history = [(dict(c), t) for c, t in outcome.history]
    info = {**outcome.info, **taken.info, **info}
    fell_back = False
    if outcome.best_config is None:
        if baseline_time is None:
            return SessionResult(name, None, None, outcome.evaluations, history, info, baseline_config, None)
        history.append((dict(baseline_config), baseline_time))
        fell_back = True
    if options.confirm > 0 or fell_back:
        best_config, best_time, confirmed = confirm_best(measurer, history, top=options.confirm,
                                                         progress=options.confirm_progress)
        info.update(confirmed)
    else:
        best_config, best_time = outcome.best_config, outcome.best_time
    found = space.complete(best_config)
    predicted = info.get("predicted_seconds") if best_config == outcome.best_config else None
    best = found
    kept = (baseline_time is not None and best_time > baseline_time and found != baseline_config)
    if kept:  # never keep a configuration slower than the baseline
        best, predicted = dict(baseline_config), None
    return SessionResult(name, best, baseline_time if kept else best_time, outcome.evaluations, history, info,
                         baseline_config, baseline_time, kept_baseline=kept, search_fell_back=fell_back,
                         predicted=predicted, found_config=found, found_time=best_time)


__all__ = ["Measurement", "SeedProvider", "SessionOptions", "SessionResult", "check_strategy", "resolve", "run_session"]
