"""Completing and checking many configurations at once: `Space.complete` over NumPy columns.

`Space.complete` checks one configuration against every constraint on one-element arrays, about
a millisecond each: two minutes for the 131,072 configurations of the paper's convolution space.
Here the configurations that name the same parameters are completed and checked together, one
constraint call per group, with the same result for each as `Space.complete` gives: the same
full configuration (its keys in the same order) or the same error. A configuration that is not
a plain dict of known parameter names and allowed integers goes through `Space.complete` itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from .. import choices as ch
from ..errors import ConfigError

Completed = tuple[Optional[dict], Optional[str]]  # (full configuration, None) or (None, why it is invalid)


def complete_many(space, configs: Sequence[Any]) -> list[Completed]:
    """For each of `configs`, what `space.complete(config)` gives: (the full configuration, None),
    or (None, the ConfigError's message)."""
    out: list[Optional[Completed]] = [None] * len(configs)
    groups: dict[tuple, list[int]] = {}
    allowed = {p.name: set(p.values) for p in space.parameters}
    pairs = {(p.name, v) for p in space.parameters for v in p.values}
    for i, config in enumerate(configs):
        if type(config) is not dict:
            out[i] = _one(space, config)
        elif all(type(v) is int and (k, v) in pairs for k, v in config.items()) or all(
                type(k) is str and k in allowed and _plain_int(v) and int(v) in allowed[k] for k, v in config.items()):
            groups.setdefault(tuple(config), []).append(i)
        else:
            out[i] = _one(space, config)
    for keys, rows in groups.items():
        for i, result in zip(rows, _complete_group(space, keys, [configs[i] for i in rows])):
            out[i] = result if result is not None else _one(space, configs[i])
    return out  # type: ignore[return-value]


def _plain_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _one(space, config: Any) -> Completed:
    try:
        return space.complete(config), None
    except ConfigError as exc:
        return None, str(exc)


def _complete_group(space, keys: tuple, configs: list[Mapping[str, Any]]) -> list[Optional[Completed]]:
    """Configurations that name exactly `keys`, completed as Space.complete does; None where
    this cannot tell (then the caller asks Space.complete)."""
    n = len(configs)
    names = space.names
    if any(name not in space.defaults and name not in keys for name in names):
        return [None] * n  # a parameter without a value: Space.complete says what happens
    columns = {}
    for name in names:
        if name in keys:
            columns[name] = np.fromiter((int(c[name]) for c in configs), dtype=np.int64, count=n)
        else:
            columns[name] = np.full(n, int(space.defaults[name]), dtype=np.int64)
    wg = [p.name for p in space.parameters if p.family is ch.WORK_GROUP]
    named = [k for k in keys if k in wg]
    # what Space.complete does to the work-group size: given in some axes, the others are 1; given
    # in none with a local-memory tile on, the tile's default
    if named:
        some = np.zeros(n, dtype=bool)
        for k in named:
            some |= columns[k] != ch.DRIVERS_CHOICE
        changed = {k: some & (columns[k] == ch.DRIVERS_CHOICE) for k in wg if k not in named}
        for k, rows in changed.items():
            columns[k] = np.where(rows, 1, columns[k])
        fills = {k: (rows, 1) for k, rows in changed.items()}
    else:
        tiled = np.zeros(n, dtype=bool)
        for t in space.tiles:
            tiled |= columns[t] != 0
        fills = {k: (tiled, int(v)) for k, v in space.tile_defaults.items()}
        for k, (rows, value) in fills.items():
            columns[k] = np.where(rows, value, columns[k])
    first_violated = np.full(n, -1, dtype=np.int64)
    for index, constraint in enumerate(space.constraints):
        ok = np.broadcast_to(np.asarray(constraint.check(columns), dtype=bool), (n,))
        first_violated[(first_violated < 0) & ~ok] = index

    results: list[Optional[Completed]] = []
    for row, config in enumerate(configs):
        full = dict(space.defaults)
        for k, v in config.items():
            full[k] = int(v)
        for k, (rows, value) in fills.items():
            if rows[row]:
                full[k] = value
        violated = int(first_violated[row])
        if violated < 0:
            results.append((full, None))
            continue
        constraint = space.constraints[violated]
        shown = ", ".join(f"{p}={full[p]}" for p in constraint.parameters if p in full)
        results.append((None, f"configuration violates a constraint ({shown}): {constraint.description}"))
    return results


@dataclass
class Plan:
    """What a measurement of some configurations has to do: the valid ones not yet stored, grouped
    by the source they build (a group shares one build), and the invalid ones as records."""
    groups: dict[str, list[dict]] = field(default_factory=dict)
    invalid: list = field(default_factory=list)  # Records of status invalid_config, not yet stored
    skipped: int = 0  # stored already, or repeated


def plan_measurements(space, configs: Sequence[Any], done: set[str]) -> Plan:
    """`configs` checked all at once (`complete_many`): those whose canonical key is in `done`
    skipped, the rest grouped by source key; an invalid one already recorded is not recorded again."""
    from .store import Record, canonical_config

    plan = Plan()
    seen: set[str] = set()
    for config, (full, error) in zip(configs, complete_many(space, configs)):
        if full is None:
            key = canonical_config({k: v for k, v in config.items() if isinstance(v, int)})
            if key not in done:
                plan.invalid.append(Record(dict(config), "invalid_config", None, error=error))
            continue
        key = canonical_config(full)
        if key in done or key in seen:
            plan.skipped += 1
            continue
        seen.add(key)
        plan.groups.setdefault(canonical_config(space.source_key(full)), []).append(full)
    return plan
