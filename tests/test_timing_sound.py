"""Sound timings (issue 21): every stored time is the median of at least MIN_TIMED timed launches
after a warm-up launch whose time is never counted; a large spread is timed again."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from imagecl.runtime.timing import MIN_TIMED, Timing, launch_count, settle, time_launches
from imagecl.tuner.worker import _measure_one

WARM = 5.0  # the warm-up launch: far slower than any timed one, so a count of it shows


class FakeQueue:
    def finish(self) -> None:
        pass


def _event(seconds: float):
    return SimpleNamespace(profile=SimpleNamespace(start=0, end=int(round(seconds * 1e9))))


def _launcher(times):
    """A launch function whose events take `times` seconds in turn (then the last again)."""
    it = iter(times)
    last = [times[-1]]

    def launch():
        last[0] = next(it, last[0])
        return _event(last[0])
    return launch


def test_a_slow_first_launch_is_never_a_time_and_at_least_three_launches_are_timed():
    # the old loop kept the checked launch as the one time when it exceeded max_seconds
    times = time_launches(FakeQueue(), _launcher([0.5]), lambda: None, WARM, repeats=3, max_seconds=1.0)
    assert times == [0.5, 0.5, 0.5]
    assert WARM not in times


def test_max_seconds_shortens_extra_launches_only():
    assert launch_count(10, 0.1, 0.35) == 3  # three fit: never fewer than MIN_TIMED
    assert launch_count(10, 1.0, 0.5) == MIN_TIMED
    assert launch_count(10, 0.01, 0.5) == 10
    assert launch_count(10, 0.1, 0.55) == 5
    assert launch_count(2, 9.0, 1.0) == 2  # fewer asked (a re-timing share): as asked
    n = len(time_launches(FakeQueue(), _launcher([1e-3]), lambda: None, 2.0, repeats=10, max_seconds=1.0))
    assert n == MIN_TIMED
    with pytest.raises(ValueError):
        time_launches(FakeQueue(), _launcher([1e-3]), lambda: None, 1e-3, repeats=0)


def test_warmup_launches_beyond_the_checked_one_are_not_timed():
    launch = _launcher([WARM, WARM, 1e-3, 1e-3, 1e-3])
    assert time_launches(FakeQueue(), launch, lambda: None, WARM, repeats=3, warmup=3) == [1e-3] * 3


def _rounds(rounds):
    it = iter(rounds)
    return lambda: Timing(list(next(it)))


def test_a_large_spread_is_timed_again():
    first = Timing([1.0e-3, 2.0e-3, 1.0e-3])
    got = settle(first, _rounds([[1.0e-3] * 3] * 5), max_spread=0.1, max_repeats=10, budget=1.0)
    # (max - min) / median keeps the outlier: rounds until max_repeats, the median now robust
    assert len(got.times) == 12 and got.median == 1.0e-3 and got.spread == pytest.approx(1.0)
    steady = settle(Timing([1e-3] * 3), _rounds([]), max_spread=0.1, max_repeats=10, budget=1.0)
    assert len(steady.times) == 3  # a small spread: not again


def test_settle_stops_at_max_repeats_the_round_limit_and_the_budget():
    noisy = [[1e-3, 3e-3, 1e-3]] * 10
    assert len(settle(Timing([1e-3, 3e-3, 1e-3]), _rounds(noisy), 0.1, 7, 1.0).times) == 9
    assert len(settle(Timing([1e-3, 3e-3, 1e-3]), _rounds(noisy), 0.1, 10, 1.0, max_rounds=1).times) == 6
    slow = [[0.2, 0.4, 0.2]] * 10
    # 0.8 s spent, the next round (4 launches at 0.2 s) would pass a 1 s budget
    assert len(settle(Timing([0.2, 0.4, 0.2]), _rounds(slow), 0.1, 10, 1.0).times) == 3


class FakeRunner:
    """A runner as KernelRunner/ProgramTarget: a checked first launch (slow: the warm-up), then
    the real time_launches over fake events."""

    def __init__(self, seconds: float, noisy: bool = False) -> None:
        self.seconds, self.noisy, self.calls = seconds, noisy, 0

    def build_input(self, config):
        return "src", ()

    def time(self, config, repeats=3, warmup=1, read_outputs=True, max_seconds=None, verify=False):
        self.calls += 1
        pattern = [self.seconds, 3 * self.seconds] if self.noisy else [self.seconds]
        launch = _launcher(pattern * repeats)
        return Timing(time_launches(FakeQueue(), launch, lambda: None, WARM, repeats, warmup, max_seconds))


@pytest.mark.parametrize("best", [float("inf"), 1e-6])  # a contender, and one far slower than the best
def test_the_worker_stores_three_timed_launches_without_the_warmup(best):
    runner = FakeRunner(2e-3)
    result = _measure_one({"x": 1}, runner, None, None, 1, 10, 0.1, {}, best)
    assert result["status"] == "ok"
    assert len(result["times"]) >= MIN_TIMED and WARM not in result["times"]
    assert result["time"] == pytest.approx(2e-3) and result["spread"] == 0.0
    assert runner.calls == 1


def test_the_worker_times_a_noisy_configuration_again():
    contender = FakeRunner(1e-3, noisy=True)
    result = _measure_one({"x": 1}, contender, None, None, 3, 10, 0.1, {}, float("inf"))
    assert contender.calls > 2 and len(result["times"]) >= 10 and result["spread"] > 0.1
    slow = FakeRunner(1e-3, noisy=True)
    result = _measure_one({"x": 1}, slow, None, None, 3, 10, 0.1, {}, 1e-6)
    assert slow.calls == 2 and len(result["times"]) == 6  # not a contender: timed again once


def test_retiming_takes_exactly_the_launches_asked():
    runner = FakeRunner(1e-3)
    result = _measure_one({"x": 1}, runner, None, None, 2, 2, 0.1, {}, float("inf"), floor=1)
    assert result["times"] == [1e-3, 1e-3]


# ---- peers (imagecl/bench/peers.py) --------------------------------------------------------------------

class CompilingPeer:
    """A peer whose first calls compile (1000x slower), as cupyx's: they must never be its time."""
    name, timing = "compiling", "fake clock"

    def __init__(self, calls):
        self.calls = list(calls)
        self.made = 0

    def prepare(self, workload, args):
        from imagecl.bench.peer_impls import PeerRun

        def once():
            self.made += 1
            return self.calls.pop(0) if len(self.calls) > 1 else self.calls[0]
        return PeerRun(once, lambda: dict(args["reference"]))


def _time_peer(calls, repeats=3, max_seconds=2.0):
    from imagecl.bench.peer_workloads import all_workloads
    from imagecl.bench.peers import time_peer

    workload = next(w for w in all_workloads() if w.key == "conv3")
    reference = {"output": np.zeros((4, 4), np.float32)}
    peer = CompilingPeer(calls)
    return time_peer(peer, workload, {"reference": reference}, reference, repeats, max_seconds), peer


def test_a_peers_compiling_first_call_is_never_its_time():
    record, _ = _time_peer([3.0, 2e-3])  # over max_seconds: the old harness kept it as the one time
    assert record["status"] == "ok" and record["seconds"] == pytest.approx(2e-3)
    assert 3.0 not in record["times"] and len(record["times"]) >= MIN_TIMED
    assert record["warmup_times"][0] == 3.0 and record["warm"] and record["spread"] == 0.0


def test_a_peer_is_warmed_up_until_two_calls_agree():
    record, _ = _time_peer([2.0, 0.5, 0.1, 2e-3, 2e-3])  # compiles over three calls
    assert record["warmup_times"] == [2.0, 0.5, 0.1, 2e-3, 2e-3] and record["warm"]
    assert record["times"] == [2e-3] * len(record["times"]) and len(record["times"]) >= MIN_TIMED


def test_a_slow_peer_is_still_timed_three_times_and_cheap_ones_more():
    slow, peer = _time_peer([3.0], max_seconds=2.0)  # SciPy at full size: each call over the budget
    assert len(slow["times"]) == MIN_TIMED and slow["seconds"] == 3.0 and peer.made == 1 + 1 + MIN_TIMED
    cheap, _ = _time_peer([1e-4], repeats=3, max_seconds=2.0)
    assert len(cheap["times"]) > MIN_TIMED  # more while cheap


def test_the_peer_report_says_the_spread():
    from imagecl.bench.peers_report import spread_lines

    result = {"records": [
        {"title": "a", "peers": [{"peer": "P", "status": "ok", "spread": 0.05, "warm": True}]},
        {"title": "b", "peers": [{"peer": "P", "status": "ok", "spread": 0.3, "warm": False},
                                 {"peer": "Q", "status": "ok"}]}]}  # Q: a run from before (no spread)
    assert spread_lines(result) == ["P 30% (b), not steady after its warm-up calls on b"]


def test_the_peer_report_tells_old_runs_from_warmed_ones():
    from imagecl.bench.peers_report import _timing_method

    old = {"records": [{"title": "a", "peers": [{"peer": "P", "status": "ok", "seconds": 1.0}]}]}
    new = {"records": [{"title": "a", "peers": [{"peer": "P", "status": "ok", "seconds": 1.0, "warmup_times": [2.0]}]}]}
    assert "before issue 21" in _timing_method(old) and "warm-up" in _timing_method(new)
