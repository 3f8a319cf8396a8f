"""Measuring splits, and `imagecl tune` on a wavefront program: the candidates ranked by the
cost model (cost_model.py; trained on a benchmark file given with --knowledge, or on
$IMAGECL_WAVEFRONT_TRAINING; calibrated by the program's predicted best split all on the CPU and
all on the GPUs, measured first) are measured best-first, then the neighbours of the best one, up
to the budget; each split's output is checked against the sequential run's, and the fastest split
is recorded for `prog(...)` (imagecl/tuned.py, keyed by the CPU device)."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ..errors import ArgumentError, ConfigError
from .api import sequential
from .cost_model import CostModel, calibrated, profile_splits
from .devices import Devices, wavefront_devices
from .executor import run_wavefront
from .split import FIELDS, Split, split_space


RETIME_SPREAD = 0.2  # (slowest - fastest) / median of a split's timed runs above which it is timed again


@dataclass
class Measured:
    seconds: dict = field(default_factory=dict)  # Split -> median seconds of its timed runs
    wrong: list = field(default_factory=list)  # splits whose output differed from the reference
    reference: Optional[np.ndarray] = None
    spread: dict = field(default_factory=dict)  # Split -> (slowest - fastest) / median of its timed runs
    once: list = field(default_factory=list)  # splits timed by one run after the warm-up (far slower than the best)


def measure_splits(program, arguments: Mapping[str, Any], devices: Devices, splits: Sequence[Split],
                   repeats: int = 3, into: Optional[Measured] = None, deadline: float = float("inf"),
                   sequential_reference: bool = True, slower_than: Optional[float] = None) -> Measured:
    """Each split run once to warm up (its output compared bit for bit with the sequential run's,
    computed first when missing, or without `sequential_reference` with the first measured
    split's), then timed `repeats` times (wall clock: transfers and launches, not the build); its
    time is the median, and a spread over RETIME_SPREAD times it `repeats` times more. With
    `slower_than` f, a split whose warm-up took over f times the best median so far is run once more,
    and if that run too takes over f times the best, its time is kept alone (listed in `once`):
    where it stands is clear, timing it again buys nothing."""
    out = into or Measured()
    if out.reference is None and sequential_reference:
        w, h = _size(program, arguments)
        out.reference = run_wavefront(program, arguments, sequential(w, h), devices).output
    for split in splits:
        if split in out.seconds or time.perf_counter() > deadline:
            continue
        warm = run_wavefront(program, arguments, split, devices)
        if out.reference is None:
            out.reference = warm.output
        elif not np.array_equal(warm.output, out.reference):
            out.wrong.append(split)
        best = min(out.seconds.values(), default=None)
        times: list[float] = []
        if slower_than is not None and best is not None and warm.seconds > slower_than * best:
            # the warm-up carries one-off costs (a work-group function built per local size, clocks
            # ramping up): only a timed run far slower than the best is taken alone
            times.append(run_wavefront(program, arguments, split, devices).seconds)
            if times[0] > slower_than * best:
                out.seconds[split], out.spread[split] = times[0], 0.0
                out.once.append(split)
                continue
        times += [run_wavefront(program, arguments, split, devices).seconds
                  for _ in range(max(1, repeats) - len(times))]
        if len(times) > 1 and _spread(times) > RETIME_SPREAD:
            times += [run_wavefront(program, arguments, split, devices).seconds for _ in range(repeats)]
        out.seconds[split], out.spread[split] = float(np.median(times)), _spread(times)
    return out


def _spread(times: Sequence[float]) -> float:
    return (max(times) - min(times)) / float(np.median(times))


def _size(program, arguments: Mapping[str, Any]) -> tuple[int, int]:
    out = arguments.get(program.info.wavefront)
    if out is None or not hasattr(out, "shape"):
        raise ArgumentError(f"pass the output '{program.info.wavefront}': its shape is the grid")
    return int(out.shape[1]), int(out.shape[0])


def neighbours(split: Split, candidates: Sequence[Split]) -> list[Split]:
    """Candidates that differ from `split` in one parameter, nearest values first."""
    out = []
    for c in candidates:
        diff = [f for f in FIELDS if getattr(c, f) != getattr(split, f)]
        if len(diff) == 1:
            f = diff[0]
            out.append((abs(getattr(c, f) - getattr(split, f)), c))
    return [c for _, c in sorted(out, key=lambda t: t[0])]


def tune_split(program, arguments: Mapping[str, Any], devices: Devices, budget: int,
               training: Optional[str] = None, repeats: int = 3) -> tuple[Split, Measured, list[Split]]:
    """(best split, what was measured, the model's ranking or []) within `budget` measurements."""
    from . import model

    width, height = _size(program, arguments)
    gpus = len(devices.gpus)
    candidates = split_space(width, height, gpus)
    ranked: list[Split] = []
    path = training or os.environ.get(model.TRAINING_ENV)
    if path:
        trained, grid = model.trained_from(path)
        scalars = {k: v for k, v in arguments.items() if k not in program.info.arrays}
        features = model.Features(width, height, model.work_per_point(program, scalars, devices),
                                  model.data_per_point(program))
        candidates = model.candidates(width, height, gpus, grid) or candidates
        ranked = trained.rank(features, candidates, gpus) if hasattr(trained, "rank") else \
            [trained.choose(features, candidates, gpus)]
    measured = Measured()
    if ranked and isinstance(trained, CostModel) and budget >= 3:
        # the program's own speed on each side first: its predicted best split all on the CPU and all on
        # the GPUs, then the cost model calibrated by them ranks the rest
        profiles = profile_splits(trained, features, candidates, gpus)
        measure_splits(program, arguments, devices, profiles, repeats, into=measured)
        ranked = calibrated(trained, features, {s: measured.seconds[s] for s in profiles}).rank(
            features, candidates, gpus)
    order = ranked or [Split(cpu_tile=8)] + candidates
    measure_splits(program, arguments, devices, order[: max(1, budget // 2)], repeats, into=measured)
    while len(measured.seconds) < min(budget, len(candidates)):
        best = min(measured.seconds, key=measured.seconds.get)
        fresh = [c for c in neighbours(best, candidates) if c not in measured.seconds]
        if not fresh:
            fresh = [c for c in order if c not in measured.seconds]
        if not fresh:
            break
        measure_splits(program, arguments, devices, fresh[:1], repeats, into=measured)
    if measured.wrong:
        raise ConfigError(f"{len(measured.wrong)} split(s) gave another result than the sequential run, e.g. "
                          f"{measured.wrong[0]}: please report this")
    best = min(measured.seconds, key=measured.seconds.get)
    return best, measured, ranked


def tune_cli(program, args) -> int:
    """`imagecl tune FILE.icl --size WxH` for a wavefront program."""
    from .. import tuned
    from ..cli import _inputs, parse_size
    from .model import instance_arguments

    shape = parse_size(args.size)
    if args.budget < 1:
        raise ArgumentError("--budget needs a positive number of splits")
    if len(shape) != 2:
        raise ArgumentError("a wavefront grid is 2-D: --size WIDTHxHEIGHT")
    height, width = shape
    given = _inputs(program, args.assignments)
    arguments = {**instance_arguments(program, width, height, given, seed=args.seed or 0), **given}
    devices = wavefront_devices(args.device)
    training = next((k for k in args.knowledge if k.endswith(".json")), None)
    best, measured, ranked = tune_split(program, arguments, devices, args.budget, training)
    seconds = measured.seconds[best]
    seq = run_wavefront(program, arguments, sequential(width, height), devices).seconds
    outcome = tuned.record(program, devices.cpu, best.as_config(), shape, seconds)
    _write_summary(args.output, program, best, measured, seq, devices)
    print(f"{program.name}: {len(measured.seconds)} splits measured on {devices.describe()}")
    if ranked:
        first = measured.seconds.get(ranked[0])
        print(f"  predicted split {ranked[0]}: {first * 1e3:.3f} ms" if first else "")
    print(f"  best split {best}: {seconds * 1e3:.3f} ms ({seq / seconds:.2f}x the sequential run, "
          f"{seq * 1e3:.3f} ms)")
    print(f"  recorded in {outcome.path}" if outcome.kept else
          f"  a faster record ({outcome.previous_seconds * 1e3:.3f} ms) is kept in {outcome.path}")
    return 0


def _write_summary(folder: str, program, best: Split, measured: Measured, sequential_seconds: float,
                   devices: Devices) -> None:
    """`<folder>/<program>.wavefront.json`: the best split and every measured one."""
    import json
    from pathlib import Path

    from ..outputs import write_atomic

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    data = {"program": program.name, "devices": devices.describe(), "best": best.as_config(),
            "sequential_seconds": sequential_seconds,
            "measured": [[s.as_config(), t] for s, t in sorted(measured.seconds.items(), key=lambda st: st[1])]}
    write_atomic(out / f"{program.name}.wavefront.json", json.dumps(data, indent=1) + "\n")
