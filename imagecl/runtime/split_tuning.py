"""Choosing a split across devices: which devices take part, each one's share of the grid's rows,
and for iterated programs the halo depth h.

The model (predicted without measuring any combination): each device runs alone once, its own
variant over the whole grid, and that run's profiling events give its kernel seconds and its
transfer seconds (inputs up, outputs down); the rest of its wall time is a fixed cost. A device
given n rows then takes

    T_d(n) = a_d + n * (k_d + u_d)        (n > 0; nothing for n = 0)

with k_d and u_d its kernel and transfer seconds per row and a_d the fixed cost. The devices run
at once, so a split takes max_d T_d(n_d); it is least when every taking part finishes together:
n_d = (T - a_d) / r_d with r_d = k_d + u_d and T = (rows + sum a_d / r_d) / sum 1 / r_d. A device
whose n_d comes out at or below zero (its fixed cost exceeds the others' whole time) is left out and
T recomputed, and when no split beats the best single device that one takes everything. For an
iterated program the data stays on the devices, so only kernel time counts per row (u_d = 0), k_d
once per step; the halo depth predicted is the largest h in `hs` whose redundant rows (h * reach
on each side of a band) stay within a tenth of the thinnest band (`predict_h`).

Then the prediction is refined by measuring a few splits around it (each pair of devices trading
`step` of the rows either way, and every device alone) and, for iterated programs, h in `hs`.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from . import multidevice


@dataclass
class Profile:
    """One device alone over the whole grid, its own variant."""

    device: Any
    rows: int
    wall: float  # seconds, the fastest of the timed runs
    kernel: float  # kernel seconds (profiling), median
    transfer: float  # transfer seconds (profiling), median

    def per_row(self, iterate: bool = False) -> float:
        return max((self.kernel + (0.0 if iterate else self.transfer)) / max(self.rows, 1), 1e-12)

    def fixed(self, iterate: bool = False) -> float:
        """What a run costs besides its kernel and transfers (launches, the host's work): taken per
        step for an iterated program too, an upper bound that keeps small grids on one device."""
        return max(0.0, self.wall - self.kernel - self.transfer)


def profile(program: Any, arguments: Mapping[str, Any], device: Any, config: Any = None,
            repeats: int = 3) -> Profile:
    """`device` alone over the whole grid: its fastest wall time, median kernel and transfer seconds."""
    multidevice.run(program, arguments, [device], [1.0], config)  # warm-up: build, first allocation
    walls, kernels, transfers = [], [], []
    rows = 0
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        _, ran = multidevice.run(program, arguments, [device], [1.0], config)
        walls.append(time.perf_counter() - start)
        kernels.append(ran.kernel_seconds[0])
        transfers.append(ran.transfer_seconds[0])
        rows = ran.bands[0][1]
    # the fastest wall time: what the host adds to the kernel and transfers is the least noisy there
    return Profile(device, rows, min(walls), statistics.median(kernels), statistics.median(transfers))


def predict(profiles: Sequence[Profile], iterate: bool = False, steps: int = 1) -> list[float]:
    """Shares that make every device taking part finish together (the module's model); `steps`:
    an iterated program's steps, each costing its kernel time per row again."""
    rows = profiles[0].rows
    rate = [p.per_row(iterate) * steps for p in profiles]
    fixed = [p.fixed(iterate) for p in profiles]
    taking = list(range(len(profiles)))
    while taking:
        total = (rows + sum(fixed[i] / rate[i] for i in taking)) / sum(1 / rate[i] for i in taking)
        counts = {i: (total - fixed[i]) / rate[i] for i in taking}
        dropped = [i for i, n in counts.items() if n <= 0]
        if not dropped:
            break
        taking = [i for i in taking if i not in dropped]
    best_single = min(range(len(profiles)), key=lambda i: fixed[i] + rows * rate[i])
    if not taking or predicted_seconds(profiles, _shares(counts, len(profiles), rows), iterate, steps) >= \
            fixed[best_single] + rows * rate[best_single]:
        return [1.0 if i == best_single else 0.0 for i in range(len(profiles))]
    return _shares(counts, len(profiles), rows)


def predict_h(program: Any, shares: Sequence[float], rows: int, hs: Sequence[int] = (1, 2, 4, 8)) -> int:
    """The largest h in `hs` whose redundant rows stay within a tenth of the thinnest band."""
    depth = max(depth_of(program), 1)
    thinnest = min((s * rows for s in shares if s > 0), default=rows)
    fitting = [h for h in sorted(hs) if h * depth <= 0.1 * thinnest]
    return fitting[-1] if fitting else min(hs)


def depth_of(program: Any) -> int:
    """The rows one step of an iterated program reads beyond a band's, both sides together."""
    reach = multidevice.reaches(program)
    fed = list(multidevice.feed_pairs(program.info, None).values())
    return max([reach[n].low + reach[n].high for n in fed] + [0])


def _shares(counts: Mapping[int, float], count: int, rows: int) -> list[float]:
    total = sum(max(0.0, n) for n in counts.values()) or 1.0
    return [max(0.0, counts.get(i, 0.0)) / total for i in range(count)]


def predicted_seconds(profiles: Sequence[Profile], shares: Sequence[float], iterate: bool = False,
                      steps: int = 1) -> float:
    """The model's time of a split."""
    rows = profiles[0].rows
    return max((p.fixed(iterate) + s * rows * p.per_row(iterate) * steps for p, s in zip(profiles, shares)
                if s > 0), default=0.0)


def neighbours(shares: Sequence[float], step: float) -> list[list[float]]:
    """Splits one step away: each device giving `step` of the grid (or all it has) to another."""
    found = []
    for i, give in enumerate(shares):
        if give <= 0:
            continue
        for j in range(len(shares)):
            if j == i:
                continue
            moved = min(step, give)
            new = list(shares)
            new[i] -= moved
            new[j] += moved
            new = [max(0.0, s) for s in new]
            total = sum(new)
            found.append([s / total for s in new])
    return found


@dataclass
class Timing:
    shares: list[float]
    h: Optional[int]
    seconds: float  # median
    runs: list[float]  # every timed run


def time_split(program: Any, arguments: Mapping[str, Any], devices: Sequence, shares: Sequence[float],
               config: Any = None, repeats: int = 3, iterate: Optional[int] = None,
               h: Optional[int] = None) -> Timing:
    """The wall seconds (median of `repeats` after a warm-up) of a run, or of `iterate` steps."""
    def once() -> float:
        start = time.perf_counter()
        if iterate is None:
            multidevice.run(program, arguments, devices, shares, config)
        else:
            multidevice.iterate(program, iterate, arguments, devices, shares, h or 1, config)
        return time.perf_counter() - start

    once()
    runs = [once() for _ in range(max(1, repeats))]
    return Timing([float(s) for s in shares], h, statistics.median(runs), runs)


@dataclass
class SplitTuning:
    devices: list
    profiles: list[Profile]
    predicted: list[float]  # the model's shares
    predicted_model_seconds: float
    measured: list[Timing] = field(default_factory=list)
    best: Optional[Timing] = None

    def timing_of(self, shares: Sequence[float], h: Optional[int] = None) -> Optional[Timing]:
        for t in self.measured:
            if t.h == h and all(abs(a - b) < 1e-9 for a, b in zip(t.shares, shares)):
                return t
        return None


def tune(program: Any, arguments: Mapping[str, Any], devices: Sequence, config: Any = None, repeats: int = 3,
         step: float = 0.05, iterate: Optional[int] = None, hs: Sequence[int] = (1, 2, 4, 8),
         log: Callable[[str], None] = lambda line: None, system: Any = None) -> SplitTuning:
    """Profile every device, predict the split, refine it by measuring its neighbours and every
    device alone; for an iterated program (`iterate` steps) then h in `hs` at the best shares.
    `system`: the device set's system_model.Terms (in the order of `devices`), which predicts the
    split and h; None: the analytic model alone."""
    chosen = multidevice.resolve_devices(list(devices))
    configs = multidevice._configs(config, len(chosen))
    profiles = [profile(program, arguments, d, c, repeats) for d, c in zip(chosen, configs)]
    for p in profiles:
        log(f"{p.device.name.strip()}: alone {p.wall * 1e3:.3f} ms (kernel {p.kernel * 1e3:.3f} ms, transfers "
            f"{p.transfer * 1e3:.3f} ms)")
    is_iter = iterate is not None
    h0 = None
    if system is not None:
        from . import system_model

        found = system_model.predict(system, profiles, iterate, depth_of(program) if is_iter else 0, hs,
                                     groups=system_model.groups_of(chosen))
        predicted, h0, model_s = found.shares, found.h, found.seconds
    else:
        predicted = predict(profiles, is_iter, iterate or 1)
        model_s = predicted_seconds(profiles, predicted, is_iter, iterate or 1)
    result = SplitTuning(chosen, profiles, predicted, model_s)
    log("predicted shares: " + ", ".join(f"{s:.3f}" for s in predicted) + (f", h {h0}" if h0 else ""))

    def measure(shares: Sequence[float], h: Optional[int] = None) -> Timing:
        known = result.timing_of(shares, h)
        if known is not None:
            return known
        t = time_split(program, arguments, chosen, shares, config, repeats, iterate, h)
        result.measured.append(t)
        log(f"  shares {', '.join(f'{s:.3f}' for s in shares)}" + (f", h {h}" if h else "")
            + f": {t.seconds * 1e3:.3f} ms")
        return t

    if is_iter and h0 is None:
        h0 = predict_h(program, predicted, profiles[0].rows, hs)
    candidates = [predicted] + neighbours(predicted, step)
    candidates += [[1.0 if i == j else 0.0 for i in range(len(chosen))] for j in range(len(chosen))]
    for shares in candidates:
        measure(shares, h0)
    best = min(result.measured, key=lambda t: t.seconds)
    if best.shares != [float(s) for s in predicted]:  # one more step from the best found, half as long
        for shares in neighbours(best.shares, step / 2):
            measure(shares, h0)
        best = min(result.measured, key=lambda t: t.seconds)
    if is_iter:
        for h in hs:
            measure(best.shares, h)
        best = min(result.measured, key=lambda t: t.seconds)
    result.best = best
    return result
