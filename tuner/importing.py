"""What of a Kernel Tuner cache or a T4 file can go into our store, and what cannot and why.

Our store holds configurations of integer parameters, exactly as they were measured. A value
that is not an integer (2.5, "float", true), that the cache's own `tune_params` does not list,
or a configuration that lacks a parameter, is skipped with its reason, never rounded or mapped
onto something that was not measured. A configuration measured more than once keeps its fastest
success, and the report says how many were merged. Every repeated timing and the kind of a
failure (Kernel Tuner's InvalidConfig / CompilationFailedConfig / RuntimeFailedConfig, T4's
invalidity) go in with it.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from .formats import KT_STATUS_KEY, FormatError, _entry_values, _seconds, _t4_time, detect_format
from .store import STATUSES

# the failure kinds of the two formats as our store's statuses
KT_STATUS = {"InvalidConfig": "invalid_config", "CompilationFailedConfig": "build_error",
             "RuntimeFailedConfig": "error", "ErrorConfig": "error"}
T4_STATUS = {"constraints": "invalid_config", "compile": "build_error", "runtime": "error",
             "correctness": "wrong_output", "timeout": "timeout"}


@dataclass
class Imported:
    """One configuration's measurement as it goes into the store."""

    seconds: Optional[float]  # None: failed
    times: list[float] = field(default_factory=list)  # every timing, seconds
    status: str = "ok"
    error: Optional[str] = None
    timestamp: float = 0.0  # seconds since the epoch; 0: not recorded


@dataclass
class ImportPlan:
    names: list[str]
    measurements: dict[tuple[int, ...], Imported] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)  # reason -> how many entries
    merged: int = 0  # entries that repeated a configuration already read
    noun: tuple[str, str] = ("entry", "entries")  # what the file calls one measurement

    def configs(self):
        for key, measured in self.measurements.items():
            yield dict(zip(self.names, key)), measured

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


def _add(plan: ImportPlan, raws: list[Any], measured: Imported, allowed: Mapping[str, Optional[list]]) -> None:
    for name, raw in zip(plan.names, raws):
        reason = _value_reason(name, raw, allowed.get(name))
        if reason is not None:
            plan.skipped[reason] += 1
            return
    key = tuple(_integer(r) for r in raws)
    if key in plan.measurements:
        plan.merged += 1
        old = plan.measurements[key]
        if measured.seconds is not None and (old.seconds is None or measured.seconds < old.seconds):
            plan.measurements[key] = measured
    else:
        plan.measurements[key] = measured


def _times(values: Any, factor: float = 1e-3) -> list[float]:
    """Repeated timings (ms in both formats) in seconds; anything but a positive finite number is left out."""
    if not isinstance(values, list):
        return []
    return [float(v) * factor for v in values
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0]


def _epoch(stamp: Any) -> float:
    if isinstance(stamp, str):
        try:
            parsed = _dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            return 0.0
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=_dt.timezone.utc)
        return parsed.timestamp()
    return 0.0


def _kt_measured(entry: Mapping[str, Any], seconds: Optional[float]) -> Imported:
    stamp = _epoch(entry.get("timestamp"))
    if seconds is not None:
        return Imported(seconds, _times(entry.get("times")) or [seconds], "ok", None, stamp)
    kind = entry.get("time")
    ours = entry.get(KT_STATUS_KEY)
    status = ours if isinstance(ours, str) and ours in STATUSES and ours != "ok" else \
        KT_STATUS.get(kind if isinstance(kind, str) else "", "error")
    error = kind if isinstance(kind, str) else "failed in the imported file"
    return Imported(None, [], status, error, stamp)


def _t4_measured(result: Mapping[str, Any], seconds: Optional[float]) -> Imported:
    stamp = _epoch(result.get("timestamp"))
    if seconds is not None:
        times = result.get("times")
        runtimes = times.get("runtimes") if isinstance(times, Mapping) else None
        return Imported(seconds, _times(runtimes) or [seconds], "ok", None, stamp)
    invalidity = result.get("invalidity")
    status = T4_STATUS.get(invalidity if isinstance(invalidity, str) else "", "error")
    listed = result.get("measurements")
    values = [m.get("value") for m in listed if isinstance(m, Mapping)] if isinstance(listed, list) else []
    message = next((v for v in values if isinstance(v, str) and v), None)
    return Imported(None, [], status, message or f"failed in the imported file ({invalidity or 'no time'})", stamp)


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
            _add(plan, raws, _kt_measured(entry, plan_seconds), allowed)  # type: ignore[arg-type]
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
        _add(plan, [config[n] for n in plan.names], _t4_measured(r, seconds), {})  # type: ignore[arg-type]
    return plan


_BAD = object()


def _safe_seconds(read):
    try:
        return read()
    except (FormatError, TypeError, AttributeError):
        return _BAD


__all__ = ["Imported", "ImportPlan", "plan_import", "KT_STATUS", "T4_STATUS"]
