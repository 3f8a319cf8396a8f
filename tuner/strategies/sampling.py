"""Samples of a space: unmeasured configurations, samples that spread every parameter's values,
and configurations built from seeds (other programs' best)."""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

from ..problem import Problem
from .budget import Session


def _unmeasured_sample(problem: Problem, session: Session, rng: np.random.Generator, n: int = 1) -> np.ndarray:
    """Up to n valid configurations not measured yet (empty when the space is used up)."""
    for size in (4 * n + 16, 64 * n + 256):
        rows = problem.sample_matrix(size, rng)
        fresh = [r for r in rows if not session.known(tuple(int(v) for v in r))]
        if fresh:
            return np.array(fresh[:n])
    matrix = problem.candidate_matrix()
    if matrix is not None and session.times:
        fresh = matrix[~np.isin(problem.index(matrix), session.measured_index())]
        if len(fresh):
            return fresh[rng.choice(len(fresh), size=min(n, len(fresh)), replace=False)]
    return np.zeros((0, len(problem.parameters)), np.int64)


def _spread_sample(problem: Problem, n: int, rng: np.random.Generator, pool_factor: int = 32,
                   lead: Sequence[Sequence[int]] = ()) -> np.ndarray:
    """`n` valid configurations that cover every parameter's values about evenly.

    A uniform sample of the valid configurations reflects the constraints: where `vector_x = 1`
    is valid for only 16% of them, 30 random draws hold about 5 vectorised variants, too few for
    a model to learn what vectorising is worth. Here each draw is the candidate (among
    `pool_factor` random valid ones) whose values are the least represented so far, so rare
    but valid values get their share while every pick stays a valid configuration.

    `lead`: levels of columns (design.code_shape_levels) balanced first, in order: a draw takes
    the candidate whose joint values at the first level are the least represented, among those
    the least at the next level, and only then the rarest values of all parameters.
    """
    pool = problem.sample_matrix(max(n * pool_factor, 256), rng)
    if lead:
        pool = _with_every_cell(problem, pool, lead, rng)
    if len(pool) <= n:
        return pool
    free = [i for i, p in enumerate(problem.parameters) if len(p.values) > 1]
    # each candidate's values as positions in its parameter's list, and how often each was picked
    position = [np.searchsorted(np.sort(problem.parameters[i].values), pool[:, i]) for i in free]
    counts = [np.zeros(len(problem.parameters[i].values)) for i in free]
    # each lead level's joint values as one cell number per candidate, and each cell's picks
    cells = [np.unique(pool[:, list(level)], axis=0, return_inverse=True)[1].reshape(-1) for level in lead]
    cell_counts = [np.zeros(int(c.max()) + 1) for c in cells]
    available = np.ones(len(pool), dtype=bool)
    chosen = []
    for _ in range(n):
        # the rarity of each of the candidate's values so far (1, 1/2, 1/3, ...), summed over parameters
        score = sum((1.0 / (1.0 + c[pos]) for c, pos in zip(counts, position)), np.zeros(len(pool)))
        score = np.where(available, score + 1e-6 * rng.random(len(pool)), -np.inf)
        levels = [np.where(available, 1.0 / (1.0 + c[cell]), -np.inf) for c, cell in zip(cell_counts, cells)]
        pick = int(np.lexsort([score] + levels[::-1])[-1])  # lexsort: the last key is the primary one
        available[pick] = False
        chosen.append(pool[pick])
        for c, pos in zip(counts, position):
            c[pos[pick]] += 1
        for c, cell in zip(cell_counts, cells):
            c[cell[pick]] += 1
    return np.array(chosen)


def _with_every_cell(problem: Problem, pool: np.ndarray, levels: Sequence[Sequence[int]],
                     rng: np.random.Generator, rounds: int = 3) -> np.ndarray:
    """`pool` plus one configuration for each joint value (cell) of each level of columns that it
    lacks and that a larger uniform sample holds (up to `rounds` samples, 16x the pool each): a
    value valid in 1% of the space is missing from a pool of 256 about one time in thirteen, and
    a cell of vector code with one px_x more often. Cells no sample holds stay missing."""
    for _ in range(rounds):
        more = problem.sample_matrix(16 * max(len(pool), 256), rng)
        added = []
        for level in levels:
            columns = list(level)
            have = {tuple(r) for r in pool[:, columns].tolist()}
            _, first = np.unique(more[:, columns], axis=0, return_index=True)
            added.extend(more[i] for i in first if tuple(more[i, columns].tolist()) not in have)
        if added:
            pool = _distinct(problem, np.concatenate([pool, np.array(added)]))
    return pool


def _seed_rows(problem: Problem, seeds: Sequence[Mapping[str, Any]], rng: np.random.Generator,
               pool_size: int = 4096) -> np.ndarray:
    """Valid configurations of `problem` that agree with each seed as far as its constraints allow.

    A seed names values for some of the parameters (the best configuration of another program on
    this device, say: the parameters the two programs share, such as the work-group size or the
    input's memory). A seed value missing from a parameter's list takes the nearest listed value.
    Each seed becomes one configuration: the seed's values with the other parameters drawn from
    valid configurations, and where no such combination is valid, the sampled configuration
    that agrees with the seed on the most parameters. Seeds that end on the same configuration
    count once.
    """
    names = problem.names
    pool = problem.sample_matrix(pool_size, rng)
    if len(pool) == 0:
        return np.zeros((0, len(names)), np.int64)
    rows = []
    for seed in seeds:
        shared = [(i, _nearest(problem.parameters[i].values, seed[n])) for i, n in enumerate(names) if n in seed]
        if not shared:
            continue
        columns = np.array([i for i, _ in shared])
        values = np.array([v for _, v in shared], dtype=np.int64)
        filled = pool.copy()
        filled[:, columns] = values
        valid = filled[problem._mask_rows(filled)]
        if len(valid):
            rows.append(valid[rng.integers(len(valid))])
            continue
        agree = (pool[:, columns] == values).sum(axis=1)
        closest = np.flatnonzero(agree == agree.max())
        rows.append(pool[closest[rng.integers(len(closest))]])
    if not rows:
        return np.zeros((0, len(names)), np.int64)
    return _distinct(problem, np.array(rows, dtype=np.int64))


def distinct_best(records: Iterable[tuple[Mapping[str, Any], Optional[float]]], n: int,
                  min_distance: int = 2) -> list[dict[str, int]]:
    """The `n` fastest successful configurations of `records` ((config, seconds or None) pairs),
    each differing from every one chosen before it in at least `min_distance` parameters.

    Meant as seeds for `_seed_rows`: the best configurations of a space are often one
    configuration and its neighbours (the same but for the unroll factor), and seeding a search
    with three of those costs three measurements to learn one thing. Parameters are compared on
    the union of the two configurations' names (a name only one of them has counts as a
    difference). Failures (None, zero, negative, NaN times) are skipped; ties keep the order of
    `records`.
    """
    ok = [(float(t), i, dict(c)) for i, (c, t) in enumerate(records)
          if t is not None and math.isfinite(float(t)) and float(t) > 0]
    chosen: list[dict[str, int]] = []
    for _, _, config in sorted(ok, key=lambda x: (x[0], x[1])):
        if len(chosen) >= n:
            break
        if all(_distance(config, c) >= min_distance for c in chosen):
            chosen.append({k: int(v) for k, v in config.items()})
    return chosen


def _distance(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    missing = object()
    return sum(a.get(k, missing) != b.get(k, missing) for k in set(a) | set(b))


def _nearest(values: Sequence[int], value: Any) -> int:
    value = int(value)
    return min(values, key=lambda v: (abs(int(v) - value), int(v)))


def _distinct(problem: Problem, rows: np.ndarray) -> np.ndarray:
    _, first = np.unique(problem.index(rows), return_index=True)
    return rows[np.sort(first)]
