"""The tuning space of a hand-written kernel: user parameters and constraints, and the launch
sizes derived from parameters (CLTune's Mul/DivGlobalSize, Mul/DivLocalSize).

Everything is checked statically, before anything is built: user constraints, the divisibility
of the global size by its divisors and by the local size, and the device's work-group limits and
local memory. A configuration that breaks one of them is not in the space (strategies never
propose it) and, asked for explicitly, is recorded as `invalid_config`.

User constraints are plain Python callables on scalar values (`lambda TS, WPT: TS % WPT == 0`).
Each is evaluated once per combination of *its own* parameters' values into a lookup table, so
any Python works in it (`and`, `if`, `min`) and checking millions of configurations stays a
vectorised table look-up.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from ..errors import ConfigError
from ..space import Constraint, DeviceLimits, Parameter, Space

Factor = Union[str, int]
MAX_TABLE = 1 << 22  # combinations a constraint's lookup table may have; beyond, rows are checked one by one


@dataclass
class SizeRules:
    """Base global / local sizes and the operations applied to them in order (picklable: the
    worker computes launch sizes with it)."""

    global_base: tuple[int, ...]
    local_base: Optional[tuple[int, ...]]
    ops: list[tuple[str, str, tuple[Factor, ...]]] = field(default_factory=list)  # (global|local, mul|div, factors)

    @property
    def dims(self) -> int:
        return len(self.global_base)

    def names(self) -> set[str]:
        return {f for _, _, factors in self.ops for f in factors if isinstance(f, str)}

    def columns(self, columns: Mapping[str, np.ndarray], n: int) -> tuple[list[np.ndarray], Optional[list[np.ndarray]],
                                                                            np.ndarray]:
        """Global and local sizes per dimension for every row of `columns`, and which rows have
        every division exact."""
        def value(f: Factor) -> np.ndarray:
            return np.asarray(columns[f], dtype=np.int64) if isinstance(f, str) else np.full(n, int(f), np.int64)

        sizes = {"global": [np.full(n, g, np.int64) for g in self.global_base],
                 "local": None if self.local_base is None else [np.full(n, v, np.int64) for v in self.local_base]}
        exact = np.ones(n, dtype=bool)
        for which, op, factors in self.ops:
            target = sizes[which]
            for d, f in enumerate(factors):
                v = value(f)
                if op == "mul":
                    target[d] = target[d] * v
                else:
                    safe = np.where(v > 0, v, 1)
                    exact &= (v > 0) & (target[d] % safe == 0)
                    target[d] = target[d] // safe
        return sizes["global"], sizes["local"], exact

    def sizes(self, config: Mapping[str, int]) -> tuple[tuple[int, ...], Optional[tuple[int, ...]]]:
        """(global, local) sizes of one configuration; a ConfigError if a division is not exact."""
        cols = {k: np.array([v]) for k, v in config.items()}
        glob, local, exact = self.columns(cols, 1)
        if not exact[0]:
            raise ConfigError(f"the launch sizes of {dict(config)} are not whole numbers: a divisor does not "
                              "divide the size")
        return tuple(int(g[0]) for g in glob), None if local is None else tuple(int(v[0]) for v in local)


def _lookup(fn: Callable[..., Any], names: Sequence[str], values: Sequence[Sequence[int]], what: str
            ) -> Callable[[Mapping[str, np.ndarray]], np.ndarray]:
    """A vectorised check from a scalar predicate `fn(*names)`, through a table over its own
    parameters' values (or row by row when that table would be too large)."""
    def call(args: tuple) -> bool:
        try:
            out = fn(*args)
        except Exception as exc:  # noqa: BLE001 - reported with the values that caused it
            shown = ", ".join(f"{n}={v}" for n, v in zip(names, args))
            raise ConfigError(f"{what} raised {type(exc).__name__} for {shown}: {exc}") from None
        if isinstance(out, (np.ndarray, list, tuple)) or out is None:
            raise ConfigError(f"{what} must return True or False, got {out!r}")
        return bool(out)

    ordered = [np.array(sorted(set(int(x) for x in v)), dtype=np.int64) for v in values]
    shape = tuple(len(v) for v in ordered)
    if math.prod(shape) <= MAX_TABLE:
        table = np.zeros(shape, dtype=bool)
        for idx in itertools.product(*(range(s) for s in shape)):
            table[idx] = call(tuple(int(ordered[i][j]) for i, j in enumerate(idx)))

        def check(columns: Mapping[str, np.ndarray]) -> np.ndarray:
            index, known = [], None
            for name, vals in zip(names, ordered):
                col = np.asarray(columns[name], dtype=np.int64)
                pos = np.clip(np.searchsorted(vals, col), 0, len(vals) - 1)
                hit = vals[pos] == col
                known = hit if known is None else known & hit
                index.append(pos)
            if not index:
                return np.full(len(next(iter(columns.values()))) if columns else 1, bool(table[()]))
            return table[tuple(index)] & known
        return check

    cache: dict[tuple, bool] = {}

    def check_rows(columns: Mapping[str, np.ndarray]) -> np.ndarray:
        rows = zip(*(np.asarray(columns[n]).tolist() for n in names))
        out = []
        for row in rows:
            if row not in cache:
                cache[row] = call(row)
            out.append(cache[row])
        return np.array(out, dtype=bool)
    return check_rows


@dataclass
class UserConstraint:
    fn: Callable[..., Any]
    names: tuple[str, ...]
    description: str


def build_kernel_space(parameters: Sequence[tuple[str, list[int], bool]], constraints: Sequence[UserConstraint],
                       rules: SizeRules, limits: DeviceLimits,
                       local_memory: Optional[UserConstraint] = None) -> Space:
    """The Space of a hand-written kernel on a device with `limits`."""
    params = [Parameter(name, list(values), "user", "user parameter" + ("" if define else " (launch only)"),
                        launch_only=not define) for name, values, define in parameters]
    by_name = {p.name: p.values for p in params}
    checks: list[Constraint] = []
    for c in constraints:
        checks.append(Constraint(c.description, c.names,
                                 _lookup(c.fn, c.names, [by_name[n] for n in c.names], f"constraint '{c.description}'")))
    if local_memory is not None:
        fn, size = local_memory.fn, limits.local_mem_size
        checks.append(Constraint(f"local memory ({local_memory.description}) <= {size} bytes of {limits.name}",
                                 local_memory.names,
                                 _lookup(lambda *a: int(fn(*a)) <= size, local_memory.names,
                                         [by_name[n] for n in local_memory.names], "the local memory function")))
    size_names = tuple(sorted(rules.names()))

    def sizes_of(columns: Mapping[str, np.ndarray]):
        n = len(next(iter(columns.values()))) if columns else 1
        return rules.columns(columns, n)

    checks.append(Constraint("every size division is exact (global size by its divisors)", size_names,
                             lambda c: sizes_of(c)[2]))
    if rules.local_base is not None:
        item_limits = tuple(limits.max_work_item_sizes) + (1,) * 3

        def local_fits(c):
            _, local, _ = sizes_of(c)
            ok = np.ones(len(local[0]), dtype=bool)
            for d, v in enumerate(local):
                ok &= (v >= 1) & (v <= item_limits[d])
            return ok & (np.prod(np.stack(local), axis=0) <= limits.max_work_group_size)

        def divides(c):
            glob, local, _ = sizes_of(c)
            ok = np.ones(len(glob[0]), dtype=bool)
            for g, v in zip(glob, local):
                ok &= (v >= 1) & (g % np.where(v > 0, v, 1) == 0)
            return ok

        checks.append(Constraint(f"the local size fits {limits.name} (at most {limits.max_work_group_size} work-items, "
                                 f"{tuple(limits.max_work_item_sizes)} per dimension)", size_names, local_fits))
        checks.append(Constraint("the local size divides the global size", size_names, divides))
    checks.append(Constraint("the global size is at least 1 in every dimension", size_names,
                             lambda c: np.all(np.stack(sizes_of(c)[0]) >= 1, axis=0)))
    defaults = {p.name: p.values[0] for p in params}
    return Space(params, checks, limits, defaults)


def explain_empty(space: Space) -> str:
    """Why no configuration of `space` is valid: how many each constraint rejects."""
    cols = space._decode(np.arange(min(space.size, 1 << 20), dtype=np.int64))
    lines = []
    for c in space.constraints:
        rejected = int((~np.asarray(c.check(cols), dtype=bool)).sum())
        if rejected:
            lines.append(f"  {c.description}: rejects {rejected} of {len(next(iter(cols.values()), [0]))}")
    return "\n".join(lines)
