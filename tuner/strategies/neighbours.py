"""Neighbourhoods in a space: one-parameter moves, moves repaired across constraints, and the
best measured configurations a local search walks from."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..problem import Problem
from .sampling import _distinct
from .budget import Session


def _neighbour_pool(problem: Problem, rows: np.ndarray) -> np.ndarray:
    """All valid one-parameter neighbours of `rows` (for spaces too large to list)."""
    out = []
    for i, p in enumerate(problem.parameters):
        for v in p.values:
            moved = rows.copy()
            moved[:, i] = v
            out.append(moved)
    pool = _distinct(problem, np.concatenate(out))
    return pool[problem._mask_rows(pool)]


def _moves(problem: Problem, rows: np.ndarray, keep: Optional[int] = None) -> np.ndarray:
    """Every row of `rows` with one parameter (other than column `keep`) set to another value."""
    out = []
    for i, p in enumerate(problem.parameters):
        if i == keep:
            continue
        for v in p.values:
            moved = rows[rows[:, i] != v].copy()
            moved[:, i] = v
            out.append(moved)
    return np.concatenate(out) if out else rows[:0]


def _repaired_neighbours(problem: Problem, row: np.ndarray, max_repairs: int = 3) -> np.ndarray:
    """The valid configurations one move away from `row`, where a move sets one parameter to
    another value and, if that breaks a constraint, also changes the fewest other parameters
    that make it valid again (up to `max_repairs`).

    Plain one-parameter moves cannot reach a value that is only valid together with others:
    `vector_x = 1` needs the interior fast path, the blocked layout and px_x > 1, so from most
    configurations it is never a neighbour, and a local search stays among the slower scalar
    variants. Repairing the move keeps such options one step away, and the smallest repairs
    keep the step local.
    """
    row = np.asarray(row, dtype=np.int64)
    moved = [(i, v) for i, p in enumerate(problem.parameters) for v in p.values if v != row[i]]
    single = np.repeat(row[None, :], len(moved), axis=0)
    for j, (i, v) in enumerate(moved):
        single[j, i] = v
    valid = problem._mask_rows(single) if len(single) else np.zeros(0, dtype=bool)  # every plain move at once
    found = []
    for j, (i, _) in enumerate(moved):
        if valid[j]:
            found.append(single[j:j + 1])
            continue
        frontier = single[j:j + 1]
        for _ in range(max_repairs):
            frontier = _distinct(problem, _moves(problem, frontier, keep=i))
            if len(frontier) > 200_000:  # a deep repair in a very wide space: not a local step any more
                break
            repaired = problem._mask_rows(frontier)
            if repaired.any():
                found.append(frontier[repaired])
                break
    if not found:
        return row[None, :0].reshape(0, len(row))
    return _distinct(problem, np.concatenate(found))


def _neighbour_candidates(problem: Problem, session: Session, rows: np.ndarray, radius: int,
                          first: Optional[np.ndarray] = None) -> np.ndarray:
    """Unmeasured (repaired) neighbours of the first of `rows` that has any; [] if none has.
    `first`: the repaired neighbours of rows[0], where the caller has them already."""
    measured = session.measured_index()
    for i, row in enumerate(rows):  # the best's neighbours first; further ones only when those are used up
        pool = first if i == 0 and first is not None else _repaired_neighbours(problem, row)
        for _ in range(radius - 1):
            pool = _neighbour_pool(problem, pool)
        pool = pool[~np.isin(problem.index(pool), measured)]
        if len(pool):
            return pool
    return np.zeros((0, len(problem.parameters)), np.int64)


def _untried_moves(problem: Problem, session: Session, centre: np.ndarray, around: np.ndarray,
                   pool: np.ndarray) -> np.ndarray:
    """Which rows of `pool` change a parameter that no measured one of `around` (the repaired
    neighbours of `centre`) has changed: the centre's coordinates not probed yet."""
    measured = around[np.isin(problem.index(around), session.measured_index())]
    probed = (measured != centre).any(0)
    return ((pool != centre) & ~probed).any(1)


def _best_rows(session: Session, n: int = 32) -> np.ndarray:
    ok = sorted((t, k) for k, t in session.times.items() if t is not None)[:n]
    return np.array([k for _, k in ok], dtype=np.int64)
