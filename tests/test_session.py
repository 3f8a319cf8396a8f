"""One tuning session (tuner/session.py), the path of `imagecl tune`, TunableKernel.tune and the
peer benchmark: its baseline, hooks, fallback and the rule that nothing slower than the baseline
is kept. A stand-in measurer gives every configuration a known time, so the session's own logic
is checked without a device; tests/test_tune.py runs it on PoCL through the CLI."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import pytest

import imagecl
from imagecl.errors import ArgumentError
from imagecl.space import DeviceLimits
from imagecl.tuner.session import Measurement, SessionOptions, run_session
from imagecl.tuner.store import Record, RunKey, Store, canonical_config

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LIMITS = DeviceLimits(name="test device", max_work_group_size=256, max_work_item_sizes=(256, 256, 64),
                      local_mem_size=48 * 1024)


class FakeMeasurer:
    """What run_session uses of engine.Measurer, with times from `seconds(config)` (None: fails)."""

    def __init__(self, space, store: Store, seconds: Callable[[dict], Optional[float]]) -> None:
        self.space, self.store, self.seconds = space, store, seconds
        self.run = RunKey("p0", "sobel", "test device", "1.0", "64x48")
        self.records: dict[str, Record] = {}
        self.notes: list[str] = []
        self.measured: list[dict] = []
        self.retimed: list[dict] = []

    def settled(self, record) -> bool:
        return True

    def stored(self, key=None):
        return {k: r for k, r in self.records.items() if key is None or k == key}

    def measure(self, configs, progress=None):
        for config in configs:
            full = self.space.complete(config)
            key = canonical_config(full)
            if key not in self.records:
                t = self.seconds(full)
                self.measured.append(full)
                self.records[key] = Record(full, "ok" if t is not None else "runtime_error", t, [t] if t else [])

    def retime(self, configs, repeats=15, rounds=5, progress=None):
        self.retimed.extend(configs)
        out = {}
        for config in configs:
            key = canonical_config(self.space.complete(config))
            if self.records[key].time is not None:
                out[key] = self.records[key]
        return out


@pytest.fixture
def space():
    return imagecl.load(EXAMPLES / "sobel.icl").space_for_limits(LIMITS)


def _px(config) -> int:
    return config["px_x"] * config["px_y"]


def test_baseline_first_then_the_search_through_the_hooks(space, tmp_path):
    events: list[Measurement] = []
    with Store(tmp_path / "m.db") as store:
        measurer = FakeMeasurer(space, store, lambda c: 1.0 / _px(c))  # more points per item: faster
        result = run_session(measurer, SessionOptions(strategy="random", budget=12, confirm=2,
                                                      on_measure=[events.append],
                                                      on_store=lambda info: events.append(("store", info))))
    assert events[1] == ("store", {})  # what the database gave, said before the search (an empty one: nothing)
    del events[1]
    naive = space.complete(space.defaults)
    assert measurer.measured[0] == naive and events[0] == Measurement(measurer.run, naive, 1.0, "baseline")
    assert [e.phase for e in events[1:]] == ["search"] * result.evaluations and result.evaluations == 12
    assert result.baseline_time == 1.0 and result.best_time == min(1.0 / _px(e.config) for e in events)
    assert result.speedup == pytest.approx(1.0 / result.best_time)
    assert len(measurer.retimed) == 2 and result.info["confirmed"] == 2  # the two fastest timed again


def test_seeds_are_measured_first(space, tmp_path):
    seed = {"px_x": 8, "px_y": 2, "wg_x": 4, "wg_y": 4}
    asked = []

    def provider(sp, run):
        asked.append(run.program_name)
        return [seed]

    events: list[Measurement] = []
    with Store(tmp_path / "m.db") as store:
        measurer = FakeMeasurer(space, store, lambda c: 1.0 / _px(c))
        result = run_session(measurer, SessionOptions(budget=2, confirm=0, seeds=provider, transfer=False,
                                                      on_measure=[events.append]))
    assert asked == ["sobel"] and result.info["seeds_given"] == 1
    with Store(tmp_path / "m2.db") as store:  # a strategy without seeds says it did not use them
        measurer = FakeMeasurer(space, store, lambda c: 1.0 / _px(c))
        other = run_session(measurer, SessionOptions(strategy="random", budget=2, confirm=0, seeds=provider))
    assert asked == ["sobel"] and other.info["seeds_unused"] == "strategy 'random' takes no seeds"
    first = next(e for e in events if e.phase == "search").config  # the seed's values, the rest the strategy's
    assert {k: first[k] for k in seed} == seed


def test_a_winner_slower_than_the_baseline_is_not_kept(space, tmp_path):
    naive = canonical_config(space.complete(space.defaults))
    times = {}

    def seconds(config):  # the search's first pick is faster than the baseline, until it is timed again
        return times.setdefault(canonical_config(config), 1.0 if canonical_config(config) == naive else 0.5)

    with Store(tmp_path / "m.db") as store:
        measurer = FakeMeasurer(space, store, seconds)
        original = measurer.retime

        def slower_again(configs, *args, **kw):
            out = original(configs, *args, **kw)
            return {k: Record(r.config, "ok", 2.0, [2.0] * 15) for k, r in out.items()}

        measurer.retime = slower_again
        result = run_session(measurer, SessionOptions(strategy="random", budget=3, confirm=1))
    assert result.kept_baseline and result.best_config == space.complete(space.defaults)
    assert result.best_time == 1.0 and result.found_time == 2.0 and result.found_config != result.best_config


def test_all_search_picks_fail_falls_back_to_the_baseline(space, tmp_path):
    naive = space.complete(space.defaults)
    with Store(tmp_path / "m.db") as store:
        measurer = FakeMeasurer(space, store, lambda c: 1.0 if c == naive else None)
        result = run_session(measurer, SessionOptions(strategy="random", budget=4, confirm=0))
        assert result.search_fell_back and result.best_config == naive and result.best_time == 1.0
        nothing = run_session(FakeMeasurer(space, store, lambda c: None),
                              SessionOptions(strategy="random", budget=4, confirm=0))
    assert nothing.best_config is None and nothing.speedup is None


def test_without_a_baseline_nothing_is_measured_outside_the_search(space, tmp_path):
    with Store(tmp_path / "m.db") as store:
        measurer = FakeMeasurer(space, store, lambda c: 1.0 / _px(c))
        result = run_session(measurer, SessionOptions(strategy="random", budget=5, confirm=0, baseline=False))
    assert len(measurer.measured) == 5 and result.baseline_time is None and result.speedup is None


@pytest.mark.parametrize("options, message", [
    (SessionOptions(strategy="nope", budget=3), "unknown strategy|no strategy"),
    (SessionOptions(strategy="random", budget=0), "positive number of configurations"),
    (SessionOptions(strategy="random", budget=3, strategy_options={"tries": 2}), "has no option 'tries'"),
])
def test_bad_options_are_argument_errors(space, tmp_path, options, message):
    with Store(tmp_path / "m.db") as store, pytest.raises(ArgumentError, match=message):
        run_session(FakeMeasurer(space, store, lambda c: 1.0), options)
