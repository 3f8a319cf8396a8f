"""What of a Kernel Tuner cache or a T4 file can go into our store, and what cannot and why.

Our store holds configurations of integer parameters, exactly as they were measured. A value
that is not an integer (2.5, "float", true), that the cache's own `tune_params` does not list,
or a configuration that lacks a parameter, is skipped with its reason, never rounded or mapped
onto something that was not measured. A configuration measured more than once keeps its fastest
success, and the report says how many were merged.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from .formats import FormatError, _entry_values, _seconds, _t4_time, detect_format


@dataclass
class ImportPlan:
    names: list[str]
    measurements: dict[tuple[int, ...], Optional[float]] = field(default_factory=dict)  # seconds, None: failed
    skipped: Counter = field(default_factory=Counter)  # reason -> how many entries
    merged: int = 0  # entries that repeated a configuration already read
    noun: tuple[str, str] = ("entry", "entries")  # what the file calls one measurement

    def configs(self):
        for key, seconds in self.measurements.items():
            yield dict(zip(self.names, key)), seconds

    def describe_skipped(self) -> str:
        return "; ".join(f"{count} {self.noun[count != 1]} {reason}" for reason, count in self.skipped.most_common())


def _integer(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _value_reason(name: str, raw: Any, allowed: Optional[list]) -> Optional[str]:
    if _integer(raw) is None:
        return f"with {name} = {json.dumps(raw)[:40]}, not an integer"
    if allowed is not None and not any(_integer(a) == _integer(raw) for a in allowed):
        return f"with {name} = {json.dumps(raw)[:40]}, which tune_params does not list"
    return None


def _add(plan: ImportPlan, raws: list[Any], seconds: Optional[float], allowed: Mapping[str, Optional[list]]) -> None:
    for name, raw in zip(plan.names, raws):
        reason = _value_reason(name, raw, allowed.get(name))
        if reason is not None:
            plan.skipped[reason] += 1
            return
    key = tuple(_integer(r) for r in raws)
    if key in plan.measurements:
        plan.merged += 1
        old = plan.measurements[key]
        if seconds is not None and (old is None or seconds < old):
            plan.measurements[key] = seconds
    else:
        plan.measurements[key] = seconds  # type: ignore[assignment]


def plan_import(data: Any) -> ImportPlan:
    """The measurements of a parsed Kernel Tuner cache or T4 file that our store can hold."""
    kind = detect_format(data)
    if kind == "kernel_tuner":
        names = data.get("tune_params_keys")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or not names:
            raise FormatError("'tune_params_keys' must be a list of parameter names")
        if not isinstance(data["cache"], Mapping):
            raise FormatError("'cache' must be an object")
        listed = data.get("tune_params") if isinstance(data.get("tune_params"), Mapping) else {}
        allowed = {n: list(listed[n]) if isinstance(listed.get(n), list) else None for n in names}
        plan = ImportPlan(list(names))
        for entry_key, entry in data["cache"].items():
            if not isinstance(entry, Mapping):
                plan.skipped["that is not an object"] += 1
                continue
            try:
                raws = _entry_values(names, entry_key, entry)
            except FormatError:
                plan.skipped["whose key does not give one value per parameter"] += 1
                continue
            plan_seconds = _safe_seconds(lambda: _seconds(entry.get("time"), "ms"))
            if plan_seconds is _BAD:
                plan.skipped["with an unreadable time"] += 1
                continue
            _add(plan, raws, plan_seconds, allowed)  # type: ignore[arg-type]
        return plan
    results = data["results"]
    first = next((r.get("configuration") for r in results if isinstance(r, Mapping)
                  and isinstance(r.get("configuration"), Mapping)), None)
    plan = ImportPlan([str(n) for n in first] if first else [], noun=("result", "results"))
    for r in results:
        config = r.get("configuration") if isinstance(r, Mapping) else None
        if not isinstance(config, Mapping):
            plan.skipped["without a 'configuration' object"] += 1
            continue
        if set(config) != set(plan.names):
            plan.skipped[f"whose parameters differ from the first's ({', '.join(plan.names)})"] += 1
            continue
        seconds = _safe_seconds(lambda: _t4_time(r))
        if seconds is _BAD:
            plan.skipped["with an unreadable time"] += 1
            continue
        _add(plan, [config[n] for n in plan.names], seconds, {})  # type: ignore[arg-type]
    return plan


_BAD = object()


def _safe_seconds(read):
    try:
        return read()
    except (FormatError, TypeError, AttributeError):
        return _BAD


__all__ = ["ImportPlan", "plan_import"]
