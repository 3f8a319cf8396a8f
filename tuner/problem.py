"""The tuning problem every search strategy works on.

Strategies only see parameters, the set of statically valid configurations, and a measurement
function. Nothing here knows about OpenCL, so a strategy can be run against a live device or
replayed from recorded measurements (`ReplayProblem`) with the same code, which is what makes
the strategies testable and comparable offline.

Configurations are dicts `{parameter name: int}`. Internally they are often handled as rows of
an int64 matrix in parameter order (the "key" of a configuration is that row as a tuple), since
models and strategies work on thousands to millions of them at once.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import numpy as np

Config = dict[str, int]
Key = tuple[int, ...]
Columns = dict[str, np.ndarray]

# Spaces with more configurations than this are not listed; strategies sample them instead.
MAX_ENUMERATE = 2_000_000


@dataclass
class Parameter:
    """One tuning parameter with its ordered integer values.

    `labels` keeps the original values when a recorded file used non-integer values (strings,
    fractional floats): the integers are then positions into `labels`, so the models still see an
    ordered quantity and the writers can restore what was recorded.
    """

    name: str
    values: list[int]
    labels: Optional[list[Any]] = None

    def __post_init__(self) -> None:
        self.values = [int(v) for v in self.values]
        if not self.values:
            raise ValueError(f"tuning parameter '{self.name}' has no values")

    def label(self, value: int) -> Any:
        """The value as originally recorded (the integer itself if there were no labels)."""
        if self.labels is None:
            return int(value)
        return self.labels[self.values.index(int(value))]


class Problem:
    """A search space plus a way to measure a configuration.

    Subclasses provide `evaluate` and, for constrained spaces, `valid_mask` (vectorised, so that
    listing or sampling millions of configurations stays fast). `context` carries extra numeric
    model inputs that are fixed for this problem, such as the problem size (section 5.4 of Falch
    & Elster), so a model can be trained on measurements of other sizes as well.
    """

    # the kind of device measured on ("CPU", "GPU"; None: unknown, a replay): strategies/design.py
    device_kind: Optional[str] = None

    def __init__(self, parameters: Sequence[Parameter], context: Optional[Mapping[str, float]] = None) -> None:
        self.parameters: list[Parameter] = list(parameters)
        names = [p.name for p in self.parameters]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate parameter names in {names}")
        self.context: dict[str, float] = {k: float(v) for k, v in (context or {}).items()}
        self._candidates: Optional[np.ndarray] = None
        self._listed = False

    # ---- description -----------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [p.name for p in self.parameters]

    @property
    def size(self) -> int:
        """Configurations before constraints."""
        return math.prod(len(p.values) for p in self.parameters)

    def key(self, config: Mapping[str, Any]) -> Key:
        return tuple(int(config[n]) for n in self.names)

    def config(self, row: Iterable[Any]) -> Config:
        return {n: int(v) for n, v in zip(self.names, row)}

    # ---- announcements ---------------------------------------------------------------------
    # whether `prefetch` does anything (a live problem that builds ahead): strategies skip the
    # work of choosing what to announce otherwise
    prefetching = False

    def prefetch(self, configs: Sequence[Config]) -> None:
        """The configurations a strategy expects to measure next, in order (a hint: a live
        problem builds their sources ahead, tuner/pipeline.py); it changes no result."""

    # ---- validity --------------------------------------------------------------------------
    def valid_mask(self, columns: Columns) -> np.ndarray:
        """Statically valid rows among `columns` (override for constrained spaces)."""
        n = len(next(iter(columns.values()))) if columns else 0
        return np.ones(n, dtype=bool)

    def is_valid(self, config: Mapping[str, Any]) -> bool:
        """Whether `config` is a statically valid configuration of this space."""
        try:
            row = self.key(config)
        except (KeyError, TypeError, ValueError):
            return False
        if any(v not in p.values for v, p in zip(row, self.parameters)):
            return False
        return bool(self.valid_mask({n: np.array([v]) for n, v in zip(self.names, row)})[0])

    # ---- listing and sampling --------------------------------------------------------------
    def candidates(self) -> Optional[Columns]:
        """All valid configurations as columns, or None if the space is too large to list."""
        matrix = self.candidate_matrix()
        if matrix is None:
            return None
        return {n: matrix[:, i] for i, n in enumerate(self.names)}

    def candidate_matrix(self) -> Optional[np.ndarray]:
        """All valid configurations as an (n, d) int64 matrix in parameter order (cached)."""
        if not self._listed:
            self._candidates = self._list_candidates()
            self._listed = True
        return self._candidates

    def _list_candidates(self) -> Optional[np.ndarray]:
        if self.size > MAX_ENUMERATE:
            return None
        parts = []
        chunk = 1 << 18
        for start in range(0, self.size, chunk):
            rows = self._decode(np.arange(start, min(self.size, start + chunk), dtype=np.int64))
            parts.append(rows[self._mask_rows(rows)])
        return np.concatenate(parts) if parts else np.zeros((0, len(self.parameters)), np.int64)

    def _decode(self, indices: np.ndarray) -> np.ndarray:
        """Rows of the unconstrained product space from their mixed-radix indices."""
        out = np.empty((len(indices), len(self.parameters)), dtype=np.int64)
        rest = indices.astype(np.int64)
        for i in range(len(self.parameters) - 1, -1, -1):
            values = np.asarray(self.parameters[i].values, dtype=np.int64)
            out[:, i] = values[rest % len(values)]
            rest = rest // len(values)
        return out

    def index(self, rows: np.ndarray) -> np.ndarray:
        """Each row's position in the unconstrained product space (-1 for unknown values).

        A vectorised identity for configurations: set operations on millions of rows (which
        are measured already?) become np.isin on integers instead of Python loops over tuples.
        """
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, len(self.parameters))
        table = self._position_table()
        if table is not None:  # a search asks thousands of times: a few operations over every column at once
            positions, low, radix = table
            shifted = rows - low
            inside = (shifted >= 0) & (shifted < positions.shape[1])
            digits = positions[np.arange(len(low)), np.where(inside, shifted, 0)]
            out = digits @ radix
            out[~inside.all(1) | (digits < 0).any(1)] = -1
            return out
        out = np.zeros(len(rows), dtype=np.int64)
        bad = np.zeros(len(rows), dtype=bool)
        for i, p in enumerate(self.parameters):
            values = np.asarray(p.values, dtype=np.int64)
            order = np.argsort(values)
            pos = np.clip(np.searchsorted(values[order], rows[:, i]), 0, len(values) - 1)
            bad |= values[order][pos] != rows[:, i]
            out = out * len(values) + order[pos]
        out[bad] = -1
        return out

    def _position_table(self) -> Optional[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """For `index`: each parameter's value -> position table (one row per parameter, -1 for
        values it does not have, column v - low), the lowest values and the positional weights;
        None where the values span too wide a range for a table (`index` searches them instead)."""
        cached = getattr(self, "_positions", None)
        if cached is not None and cached[0] is self.parameters:
            return cached[1]
        table = None
        values = [np.asarray(p.values, dtype=np.int64) for p in self.parameters]
        if values and all(len(v) for v in values):
            low = np.array([v.min() for v in values], dtype=np.int64)
            span = max(int(v.max()) - int(lo) for v, lo in zip(values, low)) + 1  # Python ints: no overflow
            if span * len(values) <= 1 << 20:
                positions = np.full((len(values), span), -1, dtype=np.int64)
                for i, v in enumerate(values):
                    positions[i, v[::-1] - low[i]] = np.arange(len(v))[::-1]  # a repeated value: its first position
                sizes = [len(v) for v in values]
                radix = np.array([math.prod(sizes[i + 1:]) for i in range(len(sizes))], dtype=np.int64)
                table = (positions, low, radix)
        self._positions = (self.parameters, table)
        return table

    def _mask_rows(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.valid_mask({n: rows[:, i] for i, n in enumerate(self.names)}), dtype=bool)

    def sample_matrix(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Up to `n` distinct valid configurations drawn uniformly, as a matrix."""
        if n <= 0:
            return np.zeros((0, len(self.parameters)), np.int64)
        matrix = self.candidate_matrix()
        if matrix is not None:
            pick = rng.choice(len(matrix), size=min(n, len(matrix)), replace=False)
            return matrix[pick]
        chosen = _SortedUnion()
        for _ in range(64):  # rejection sampling on the product space
            draw = rng.integers(0, self.size, size=max(2 * (n - len(chosen)), 1024), dtype=np.int64)
            chosen.add(draw[self._mask_rows(self._decode(draw))])
            if len(chosen) >= n:
                break
        # a uniform subset of a uniform sample is uniform; shuffle so the order is random too
        return self._decode(rng.permutation(chosen.array())[:n])

    def sample(self, n: int, rng: np.random.Generator) -> list[Config]:
        """`n` distinct valid configurations (fewer only if fewer exist)."""
        return [self.config(row) for row in self.sample_matrix(n, rng)]

    # ---- measuring -------------------------------------------------------------------------
    def evaluate(self, config: Mapping[str, Any]) -> Optional[float]:
        """Seconds, or None when the configuration fails (build error, launch error, wrong output)."""
        raise NotImplementedError

    def evaluate_many(self, configs: Sequence[Mapping[str, Any]]) -> list[Optional[float]]:
        """Several configurations' times, in order: a batch of proposals (Session.batch); a
        problem that can measure them in parallel (a cluster) overrides this."""
        return [self.evaluate(config) for config in configs]

    def optimum(self) -> Optional[float]:
        """The best time in the space, when it is known (replays); None otherwise."""
        return None


class _SortedUnion:
    """The sorted union of the integer arrays added (np.union1d of all of them), built in
    amortised O(N log N): a large sorted part and a small one merged into it only when it has
    grown as large. Folding each draw into one array with union1d re-sorted everything at every
    draw: seconds for the ranking's 250,000-configuration samples of sparse spaces."""

    def __init__(self) -> None:
        self.large = np.zeros(0, dtype=np.int64)
        self.small = np.zeros(0, dtype=np.int64)  # disjoint from `large`

    def __len__(self) -> int:
        return len(self.large) + len(self.small)

    def add(self, values: np.ndarray) -> None:
        new = np.unique(values)
        if len(self.large) and len(new):
            at = np.minimum(np.searchsorted(self.large, new), len(self.large) - 1)
            new = new[self.large[at] != new]
        self.small = np.union1d(self.small, new)
        if len(self.small) >= len(self.large):
            self.large, self.small = np.union1d(self.large, self.small), np.zeros(0, dtype=np.int64)

    def array(self) -> np.ndarray:
        return np.union1d(self.large, self.small)


class FunctionProblem(Problem):
    """A problem from plain callables: how a live tuner plugs its measurement in.

    `measure(config)` returns seconds or None; `valid_mask(columns)` is the vectorised static
    constraint check (for imagecl, `Space.valid_mask`).
    """

    def __init__(self, parameters: Sequence[Parameter], measure: Callable[[Config], Optional[float]],
                 valid_mask: Optional[Callable[[Columns], np.ndarray]] = None,
                 context: Optional[Mapping[str, float]] = None) -> None:
        super().__init__(parameters, context)
        self._measure = measure
        self._valid = valid_mask

    def valid_mask(self, columns: Columns) -> np.ndarray:
        if self._valid is None:
            return super().valid_mask(columns)
        return np.asarray(self._valid(columns), dtype=bool)

    def evaluate(self, config: Mapping[str, Any]) -> Optional[float]:
        return self._measure({n: int(config[n]) for n in self.names})


def parameters_from_keys(names: Sequence[str], keys: Iterable[Key]) -> list[Parameter]:
    """Parameters whose values are exactly those occurring in recorded configurations."""
    seen: list[set[int]] = [set() for _ in names]
    for key in keys:
        for i, v in enumerate(key):
            seen[i].add(int(v))
    return [Parameter(n, sorted(s)) for n, s in zip(names, seen)]


class ReplayProblem(Problem):
    """Replays recorded measurements: candidates are the recorded configurations.

    `records` maps configuration keys (tuples in parameter order, or frozensets of
    `(name, value)` pairs, or dicts) to seconds or None for a recorded failure. A configuration
    that was never recorded evaluates to None. `evaluations` counts calls to `evaluate`, so a
    simulation can check what a strategy really spent.
    """

    def __init__(self, parameters: Sequence[Parameter], records: Mapping[Any, Optional[float]],
                 context: Optional[Mapping[str, float]] = None) -> None:
        super().__init__(parameters, context)
        self.records: dict[Key, Optional[float]] = {}
        for raw, time in records.items():
            key = self._normalise_key(raw)
            self.records[key] = None if time is None or not math.isfinite(float(time)) else float(time)
        self.evaluations = 0

    def _normalise_key(self, raw: Any) -> Key:
        if isinstance(raw, (frozenset, set)):
            raw = dict(raw)
        if isinstance(raw, Mapping):
            return self.key(raw)
        key = tuple(int(v) for v in raw)
        if len(key) != len(self.parameters):
            raise ValueError(f"recorded configuration {raw!r} has {len(key)} values, expected {len(self.parameters)}")
        return key

    def _list_candidates(self) -> np.ndarray:
        if not self.records:
            return np.zeros((0, len(self.parameters)), np.int64)
        return np.array(sorted(self.records), dtype=np.int64).reshape(len(self.records), len(self.parameters))

    def valid_mask(self, columns: Columns) -> np.ndarray:
        rows = zip(*(np.asarray(columns[n]).tolist() for n in self.names))
        return np.fromiter((tuple(r) in self.records for r in rows), dtype=bool)

    def evaluate(self, config: Mapping[str, Any]) -> Optional[float]:
        self.evaluations += 1
        try:
            return self.records.get(self.key(config))
        except (KeyError, TypeError, ValueError):
            return None

    def optimum(self) -> Optional[float]:
        times = [t for t in self.records.values() if t is not None]
        return min(times) if times else None

    @property
    def valid_count(self) -> int:
        return sum(t is not None for t in self.records.values())

    @staticmethod
    def from_measurements(names: Sequence[str], measurements: Iterable[tuple[Mapping[str, Any], Optional[float]]],
                          parameters: Optional[Sequence[Parameter]] = None) -> "ReplayProblem":
        """A replay from (config, seconds|None) pairs; parameters inferred if not given."""
        rows = [(tuple(int(c[n]) for n in names), t) for c, t in measurements]
        params = list(parameters) if parameters is not None else parameters_from_keys(names, (k for k, _ in rows))
        return ReplayProblem(params, dict(rows))


def product_keys(parameters: Sequence[Parameter]) -> Iterable[Key]:
    """Every configuration of the unconstrained space, lazily (for exhaustive search)."""
    return itertools.product(*(p.values for p in parameters))


__all__ = ["Config", "Key", "Columns", "Parameter", "Problem", "FunctionProblem", "ReplayProblem",
           "parameters_from_keys", "product_keys", "MAX_ENUMERATE"]
