"""A cost model of a wavefront split's execution on this system, fitted on the synthetic instances'
measured splits, and the split it predicts: the one of least predicted time among the legal ones.

Trees on (instance, split) parameters learn the system only where the training grid has points;
this model follows what executor.py does instead and learns what each step costs. A split's time
is a sum of terms, each a count the split and the instance determine (launches, points on the
critical path, bytes moved) times a cost per unit fitted on the system (`Terms`):

- the CPU phases: one launch per diagonal of tiles; the points of a diagonal of tiles run one
  tile per work-item over `cpu_units` cores, so the critical path is ceil(tiles / cores) tiles
  of that diagonal; each point on it costs its work (the instance's seconds per point of the
  sequential run) and its data, each visited point of a tile (the kernel visits the whole tile)
  a test;
- the band on the GPUs: per launch a fixed cost (one per diagonal with `gpu_tile` 1, one per
  diagonal of tiles otherwise), per launch the latency of one point's work (a diagonal runs as
  one wave of threads), per inner step of a GPU tile a barrier and a point's work, and the
  band's points' work over the GPUs' throughput; with two or more GPUs the swaps (a fixed cost
  each and their bytes) and the recomputed halo points;
- the hand-overs, as executor.py moves them: the first CPU phase's rectangle to the host and to
  each GPU, the band's rows back, the rectangle of the last CPU phase (and the two diagonals it
  reads) to the CPU and back, the whole output from a CPU-only run; a fixed cost per phase
  boundary, and a fixed cost per run.

The costs are fitted by non-negative least squares on the relative error of the predicted times
(every unit costs something; the split's time is what matters, not its absolute error). The
CPU's cores are the count that fits best (the effective parallelism, which hyper-threads or
shared memory bandwidth can make differ from the device's compute units).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ..errors import ConfigError
from .split import Split, diagonal_box, legal_splits, phases, strips

TERMS = (
    "run",  # one per run: the host's own cost of a run
    "cpu_launch",  # launches of CPU tile kernels
    "cpu_path_work",  # seconds of sequential work on the CPU's critical path
    "cpu_path_bytes",  # bytes of output written on the CPU's critical path
    "cpu_path_visits",  # points visited (tested) on the CPU's critical path
    "cpu_total_work",  # seconds of sequential work of all the CPU phases' points (the cores' throughput)
    "cpu_copy_bytes",  # output rectangles between the host and the CPU device (executor.py)
    "gpu_copy_bytes",  # the first CPU phase's rectangle to each GPU, the band's rows back
    "handover",  # phase boundaries (CPU to GPU, GPU to CPU)
    "gpu_launch_point",  # launches of one work-item per point (gpu_tile 1)
    "gpu_launch_tile",  # launches of one work-group per tile (gpu_tile > 1)
    "gpu_latency_work",  # seconds of sequential work of one point, once per launch or tile step
    "gpu_tile_steps",  # inner steps of GPU tiles (a barrier each)
    "gpu_points_work",  # seconds of sequential work of the band's points, per GPU
    "swap",  # halo swaps between GPUs
    "swap_bytes",  # bytes of the halo swaps
)
CPU_UNITS = tuple(range(1, 17)) + (20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128)


@dataclass(frozen=True)
class Instance:
    """What the model knows of a run: the grid, the work per point (seconds per point of the
    sequential run) and the data per point (bytes of an output pixel)."""

    width: int
    height: int
    work: float
    data: int


def _diagonal_lengths(d: np.ndarray, width: int, height: int) -> np.ndarray:
    return np.minimum.reduce([d, np.full_like(d, width - 1), np.full_like(d, height - 1), width + height - 2 - d]) + 1


@functools.lru_cache(maxsize=4096)
def _band_points(lo: int, hi: int, width: int, height: int) -> float:
    if hi < lo:
        return 0.0
    return float(_diagonal_lengths(np.arange(lo, hi + 1), width, height).sum())


@functools.lru_cache(maxsize=4096)
def _tile_diagonals(tile: int, dlo: int, dhi: int, width: int, height: int):
    """(tiles on each launched diagonal of tiles, the share of a tile's points inside [dlo, dhi])
    as executor._cpu_tiles launches them."""
    tiles_x, tiles_y = -(-width // tile), -(-height // tile)
    first = max(0, -(-(dlo - 2 * tile + 2) // tile))
    t = np.arange(first, min(dhi // tile, tiles_x + tiles_y - 2) + 1)
    counts = np.minimum(tiles_x - 1, t) - np.maximum(0, t - (tiles_y - 1)) + 1
    keep = counts >= 1
    t, counts = t[keep], counts[keep]
    # a tile's points by inner diagonal j = d - t * tile: min(j, 2 tile - 2 - j) + 1 of them
    j = np.arange(2 * tile - 1)
    prefix = np.concatenate([[0], np.cumsum(np.minimum(j, 2 * tile - 2 - j) + 1)])
    a = np.clip(dlo - t * tile, 0, 2 * tile - 1)
    b = np.clip(dhi - t * tile + 1, 0, 2 * tile - 1)
    share = (prefix[b] - prefix[a]) / float(tile * tile)
    counts.flags.writeable = share.flags.writeable = False  # cached: shared by every caller
    return counts, share


def _cpu_phase(terms: dict, tile: int, dlo: int, dhi: int, inst: Instance, cpu_units: int,
               parts: Optional[list] = None) -> None:
    counts, share = _tile_diagonals(tile, dlo, dhi, inst.width, inst.height)
    # a tile larger than the grid visits only the grid's points (the kernel's loop bounds are the tile's,
    # but its test is cheap next to the points it computes; the grid bounds the work)
    area = float(min(tile, inst.width) * min(tile, inst.height))
    terms["cpu_launch"] += len(counts)
    terms["cpu_total_work"] += float((counts * area * share).sum()) * inst.work
    if parts is not None:  # the critical path's terms are left to the caller (fit_terms: for every core count)
        parts.append((counts, area, share))
        return
    path = np.ceil(counts / cpu_units) * area
    terms["cpu_path_work"] += float((path * share).sum()) * inst.work
    terms["cpu_path_bytes"] += float((path * share).sum()) * inst.data
    terms["cpu_path_visits"] += float(path.sum())


def _gpu_launches(tile: int, dlo: int, dhi: int, width: int, height: int) -> int:
    if tile == 1:
        return dhi - dlo + 1
    counts, _ = _tile_diagonals(tile, dlo, dhi, width, height)
    return len(counts)


def basis(split: Split, inst: Instance, cpu_units: int, parts: Optional[list] = None) -> dict[str, float]:
    """The counts each fitted cost multiplies, for `split` on `inst` (with `parts`, a list, the CPU's
    critical path is left out and its tile diagonals appended to it instead)."""
    w, h = inst.width, inst.height
    terms = dict.fromkeys(TERMS, 0.0)
    terms["run"] = 1.0
    ph = phases(split, w, h)
    last = ph.diagonals - 1
    boundaries = 0

    def box_bytes(dlo: int, dhi: int) -> float:
        x0, x1, y0, y1 = diagonal_box(dlo, dhi, w, h)
        return float(max(0, x1 - x0) * max(0, y1 - y0) * inst.data)

    if not ph.on_gpu:
        _cpu_phase(terms, split.cpu_tile, 0, last, inst, cpu_units, parts)
        terms["cpu_copy_bytes"] += float(w * h * inst.data)
    else:
        k = split.gpu_count
        boundaries += (ph.lo > 0) + (ph.hi < last)
        if ph.lo > 0:
            _cpu_phase(terms, split.cpu_tile, 0, ph.lo - 1, inst, cpu_units, parts)
            terms["cpu_copy_bytes"] += box_bytes(0, ph.lo - 1)
            terms["gpu_copy_bytes"] += k * box_bytes(0, ph.lo - 1)
        if ph.hi < last:
            _cpu_phase(terms, split.cpu_tile, ph.hi + 1, last, inst, cpu_units, parts)
            terms["cpu_copy_bytes"] += box_bytes(ph.hi - 1, last) + box_bytes(ph.hi + 1, last)
        rows = min(h - 1, ph.hi) - max(0, ph.lo - (w - 1)) + 1
        terms["gpu_copy_bytes"] += rows * w * inst.data
        points = _band_points(ph.lo, ph.hi, w, h)
        g = split.gpu_tile
        if k == 1:
            launches = _gpu_launches(g, ph.lo, ph.hi, w, h)
            busiest, redundant, swaps = launches, 0.0, 0
        else:
            step = split.halo
            periods = -(-(ph.hi - ph.lo + 1) // step)
            per_period = (_gpu_launches(g, ph.lo, ph.lo + step - 1, w, h) if g > 1 else step)
            busiest = periods * per_period
            launches = k * busiest
            narrowest = min(c1 - c0 for c0, c1 in strips(w, k))
            # each GPU but the first recomputes up to halo - 1 columns of its neighbour's strip, each
            # diagonal of a period one fewer: (halo - 1) / 2 points a diagonal on average
            redundant = (k - 1) * (ph.hi - ph.lo + 1) * (min(step, narrowest) - 1) / 2.0
            swaps = (periods - 1) * (k - 1)
            terms["swap_bytes"] += swaps * float(min(h, 2 * step)) * step * inst.data
        terms["swap"] += swaps
        terms["gpu_launch_point" if g == 1 else "gpu_launch_tile"] += launches
        steps = busiest * (2 * g - 1) if g > 1 else busiest
        terms["gpu_latency_work"] += steps * inst.work
        if g > 1:
            terms["gpu_tile_steps"] += steps
        terms["gpu_points_work"] += (points + redundant) / k * inst.work
    terms["handover"] += boundaries
    return terms


@dataclass
class Terms:
    """The fitted cost of one unit of each term (seconds per count), and the CPU's cores."""

    cost: dict[str, float]
    cpu_units: int
    residual: float = 0.0  # root mean square of the relative error on the training splits
    unseen: frozenset = frozenset()  # terms no training split had: their cost is unknown, not 0

    def known(self, split: Split, inst: Instance) -> bool:
        """Whether every term `split` needs on `inst` has a fitted cost."""
        b = basis(split, inst, self.cpu_units)
        return not any(b[t] > 0 for t in self.unseen)

    def predict(self, split: Split, inst: Instance) -> float:
        b = basis(split, inst, self.cpu_units)
        return sum(self.cost[t] * b[t] for t in TERMS)


def fit_terms(samples: Sequence[tuple[Split, Instance, float]], cpu_units: Optional[int] = None) -> Terms:
    """The costs that minimise the relative error of the predicted times of `samples` (split,
    instance, measured seconds), each cost >= 0; the CPU's cores as given, else the count of
    CPU_UNITS that fits best. ConfigError when the samples cannot identify the costs."""
    from scipy.optimize import nnls

    if not samples:
        raise ValueError("no measured splits to fit the wavefront cost model on")
    instances = len({inst for _, inst, _ in samples})
    if instances < 2:
        # one instance's work and data per point are constants: its per-point and per-byte costs
        # cannot be told apart, and neither can what a heavier or lighter program would cost
        raise ConfigError("the wavefront cost model needs measured splits of two or more synthetic instances "
                          f"to fit its costs; got {instances}")
    seconds = np.array([t for _, _, t in samples], dtype=float)
    # everything but the CPU's critical path once; the critical path for each core count
    rows, index, counts, areas, shares, works, datas = [], [], [], [], [], [], []
    for i, (split, inst, _) in enumerate(samples):
        parts: list = []
        b = basis(split, inst, 1, parts)
        rows.append([b[t] for t in TERMS])
        for c, area, share in parts:
            index.append(np.full(len(c), i))
            counts.append(c)
            areas.append(np.full(len(c), area))
            shares.append(share)
            works.append(np.full(len(c), inst.work))
            datas.append(np.full(len(c), float(inst.data)))
    base = np.array(rows)
    flat = [np.concatenate(a) if a else np.zeros(0) for a in (index, counts, areas, shares, works, datas)]
    index, counts, areas, shares, works, datas = flat
    index = index.astype(int)
    columns = [TERMS.index(t) for t in ("cpu_path_work", "cpu_path_bytes", "cpu_path_visits")]
    best: Optional[Terms] = None
    for units in ([cpu_units] if cpu_units else CPU_UNITS):
        X = base.copy()
        path = np.ceil(counts / units) * areas
        for col, weight in zip(columns, (path * shares * works, path * shares * datas, path)):
            X[:, col] = np.bincount(index, weights=weight, minlength=len(samples))
        X /= seconds[:, None]
        scale = np.maximum(np.abs(X).max(axis=0), 1e-300)  # columns of comparable size for nnls
        coef, _ = nnls(X / scale, np.ones(len(samples)), maxiter=50 * X.shape[1])
        coef = coef / scale
        residual = float(np.sqrt(np.mean((X @ coef - 1.0) ** 2)))
        if best is None or residual < best.residual:
            unseen = frozenset(t for t, column in zip(TERMS, X.T) if not column.any())
            best = Terms(dict(zip(TERMS, map(float, coef))), units, residual, unseen)
            rank = int(np.linalg.matrix_rank(X / scale))
    if len(samples) <= rank:
        # as many unknowns as equations: any core count fits exactly, the costs are one solution of many
        raise ConfigError(f"{len(samples)} measured splits cannot identify the wavefront cost model's {rank} "
                          "terms they use: measure more splits or instances (benchmarks/wavefront_split.py)")
    return best


def _instance(record: Mapping[str, Any]) -> Instance:
    return Instance(int(record["width"]), int(record["height"]), float(record["work"]), int(record["data"]))


def _samples(record: Mapping[str, Any]) -> list[tuple[Split, Instance, float]]:
    """A record's measured splits; a time that is no positive finite number of seconds is a
    ConfigError naming the instance and the split (None: not measured, skipped)."""
    inst, out = _instance(record), []
    for s, t in record["splits"]:
        if t is None:
            continue
        seconds = t if isinstance(t, (int, float)) and not isinstance(t, bool) else math.nan
        if not math.isfinite(seconds) or seconds <= 0:
            raise ConfigError(f"wavefront instance {record.get('name', '?')!r}: split {s} has the time {t!r}; "
                              "a measured time is a positive number of seconds")
        out.append((Split.of(s), inst, float(seconds)))
    return out


class CostModel:
    """The wavefront model interface of model.py (fit on benchmark records, rank, choose)."""

    name = "cost_model"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed  # deterministic: kept for make()'s signature
        self.terms: Optional[Terms] = None

    def fit(self, records: Sequence[Mapping[str, Any]]) -> "CostModel":
        self.terms = fit_terms([sample for r in records for sample in _samples(r)])
        return self

    def predict(self, features, split: Split) -> float:
        return self.terms.predict(split, Instance(features.width, features.height, features.work, features.data))

    def rank(self, features, candidates: Sequence[Split], gpus: int) -> list[Split]:
        """The candidates legal with `gpus` GPUs (legal_splits), predicted fastest first; ties keep the
        candidates' order. Those that need a term the training never had (e.g. swaps, trained on one
        GPU) come last: their predicted time leaves that cost out, they are measured, not chosen."""
        legal = legal_splits(candidates, features.width, features.height, gpus)
        inst = Instance(features.width, features.height, features.work, features.data)
        times = [self.predict(features, s) for s in legal]
        unknown = [not self.terms.known(s, inst) for s in legal]
        return [legal[i] for i in np.lexsort((times, unknown))]

    def choose(self, features, candidates: Sequence[Split], gpus: int) -> Split:
        ranked = self.rank(features, candidates, gpus)
        if not ranked:
            raise ValueError("no legal wavefront split among the candidates")
        return ranked[0]


CPU_TERMS = tuple(t for t in TERMS if t.startswith("cpu_"))
GPU_TERMS = tuple(t for t in TERMS if t.startswith("gpu_") or t.startswith("swap"))
SCALE_LIMITS = (0.2, 5.0)  # a profile moves its side's costs at most this far: one run is one sample


def all_on_cpu(split: Split) -> bool:
    return split.gpu_count == 0


def all_on_gpus(split: Split, width: int, height: int) -> bool:
    return split.gpu_count > 0 and phases(split, width, height).whole


def profile_splits(model: "CostModel", features, candidates: Sequence[Split], gpus: int) -> list:
    """The alone-profiles that calibrate the model to a real program: its predicted fastest split
    all on the CPU, and all on the GPUs (where a candidate is)."""
    ranked = model.rank(features, candidates, gpus)
    cpu = next((s for s in ranked if all_on_cpu(s)), None)
    gpu = next((s for s in ranked if all_on_gpus(s, features.width, features.height)), None)
    return [s for s in (cpu, gpu) if s is not None]


def calibrated(model: "CostModel", features, profiles: Mapping[Split, float]) -> "CostModel":
    """The model with its CPU-side costs scaled by a measured all-CPU run's time over its prediction
    and its GPU-side costs by an all-GPU run's (the run's own cost unscaled): the synthetic
    instances' system, this program's speed on each side."""
    cost = dict(model.terms.cost)
    inst = Instance(features.width, features.height, features.work, features.data)
    for split, seconds in profiles.items():
        if all_on_cpu(split):
            side = CPU_TERMS
        elif all_on_gpus(split, features.width, features.height):
            side = GPU_TERMS
        else:
            continue
        b = basis(split, inst, model.terms.cpu_units)
        fixed = sum(model.terms.cost[t] * b[t] for t in TERMS if t not in side)
        variable = sum(model.terms.cost[t] * b[t] for t in side)
        if variable <= 0:
            continue
        scale = min(max((seconds - fixed) / variable, SCALE_LIMITS[0]), SCALE_LIMITS[1])
        for t in side:
            cost[t] = model.terms.cost[t] * scale
    out = CostModel(model.seed)
    out.terms = Terms(cost, model.terms.cpu_units, model.terms.residual, model.terms.unseen)
    return out
