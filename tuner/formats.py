"""Reading and writing recorded measurements in the community's formats.

Two formats, both JSON:

**Kernel Tuner cache files** (what ``tune_kernel(..., cache="file")`` writes; see
``process_cache``/``read_cache``/``store_cache`` in kernel_tuner/util.py and the schema in
kernel_tuner/schema/cache/1.1.0/schema.json)::

    {"schema_version": "1.1.0",            # absent in caches of older Kernel Tuner versions
     "device_name": "...", "kernel_name": "...", "problem_size": [..] | int | str,
     "tune_params_keys": ["block_size_x", ...],          # parameter order of the keys below
     "tune_params": {"block_size_x": [16, 32, ...], ...},
     "objective": "time",
     "cache": {"16,1,2": {"block_size_x": 16, ..., "time": 0.123,   # milliseconds
                          "times": [...], "compile_time": .., "verification_time": ..,
                          "benchmark_time": .., "strategy_time": .., "framework_time": ..,
                          "timestamp": ".."},
               "32,1,2": {..., "time": "CompilationFailedConfig"}, ...}}

A key is the configuration's values joined by commas in ``tune_params_keys`` order. A failed
configuration stores one of the strings "InvalidConfig" (restrictions or resources exceeded),
"CompilationFailedConfig" or "RuntimeFailedConfig" instead of a number; very old caches used a
huge number (1e20) instead. Kernel Tuner appends entries while it tunes and only closes the two
braces at the end, so a cache of an interrupted run ends in ``,`` or without ``}\\n}``; the
reader closes it the way Kernel Tuner does.

**T4** (the auto-tuning community's "Open Autotuning Results Schema", TuningSchema/T4, as written
by kernel_tuner/file_utils.py ``store_output_file``; schema kernel_tuner/schema/T4/1.0.0)::

    {"schema_version": "1.0.0",
     "results": [{"timestamp": "..", "configuration": {"block_size_x": 16, ...},
                  "objectives": ["time"],
                  "times": {"compilation": .., "benchmark": .., "framework": ..,
                            "search_algorithm": .., "validation": .., "runtimes": [...]},
                  "invalidity": "correct" | "compile" | "runtime" | "correctness"
                                | "constraints" | "timeout",
                  "correctness": 1,
                  "measurements": [{"name": "time", "value": 0.123, "unit": "ms"}, ...]}]}

T4 has no list of parameter values, so the parameters are inferred from the configurations.

Both readers return ``(parameters, records)`` for ``ReplayProblem``: records map configuration
keys (tuples in parameter order) to seconds, or None for a failure. Non-integer parameter values
(strings, fractional floats) become positions into ``Parameter.labels``. The writers take our own
measurements: a list of ``{"config": {...}, "time_seconds": float | None, "status": str,
"error": str | None}``.
"""
from __future__ import annotations

import datetime as _dt
import gzip
import json
import math
import zlib
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from ..outputs import write_atomic
from .problem import Key, Parameter

Records = dict[Key, Optional[float]]
PathLike = Union[str, Path]

KT_ERRORS = ("InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig")
T4_INVALIDITY = ("timeout", "compile", "runtime", "correctness", "constraints", "correct")
UNIT_SECONDS = {"s": 1.0, "sec": 1.0, "seconds": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}
FAILED_TIME = 1e19  # old Kernel Tuner caches wrote 1e20 for failures


class FormatError(ValueError):
    """The file is not a valid measurement file of the expected format."""


# ---- shared helpers --------------------------------------------------------------------------------


def read_text(path: PathLike) -> str:
    """A file's text, gunzipped when it is gzip data (recorded spaces of 10,000+ configurations
    are kept compressed: `.kt.json.gz`)."""
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8")


def write_text(path: PathLike, text: str) -> None:
    """Write `text`, gzipped when the name ends in `.gz`."""
    data = text.encode("utf-8")
    write_atomic(path, gzip.compress(data, mtime=0) if str(path).endswith(".gz") else data)


def load_json(source: Union[PathLike, Mapping[str, Any]], closing: bool = False) -> Any:
    """The parsed JSON of `source` (a path, plain or gzipped, or already parsed); `closing`:
    repair a Kernel Tuner cache that an interrupted run left without its closing braces."""
    if isinstance(source, Mapping):
        return source
    path = Path(source)
    try:
        text = read_text(path)
    except FileNotFoundError:
        raise FormatError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, EOFError, zlib.error) as e:  # gzip.BadGzipFile is an OSError
        raise FormatError(f"{path}: cannot read ({e})") from None
    try:
        return _parse(text, path)
    except json.JSONDecodeError as e:
        if closing:
            fixed = _close_kernel_tuner_cache(text)
            if fixed is not None:
                try:
                    return _parse(fixed, path)
                except json.JSONDecodeError:
                    pass
        raise FormatError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refused when a key repeats: which of the values was meant is unknowable,
    and json.loads would silently keep the last."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise FormatError(f"the key {key!r} appears twice in one object; which value is meant is ambiguous, "
                              "so nothing is read")
        result[key] = value
    return result


def _parse(text: str, path: Path) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except FormatError as e:
        raise FormatError(f"{path}: {e}") from None
    except RecursionError:
        raise FormatError(f"{path}: JSON nested too deeply to be a measurement file") from None


def _close_kernel_tuner_cache(text: str) -> Optional[str]:
    """The text of an unclosed cache (interrupted tuning run) with its braces closed."""
    s = text.strip()
    if not s or s[-3:] in ("}\n}", "}}}") or '"tune_params_keys"' not in s or '"cache"' not in s:
        return None
    if s.endswith(","):
        s = s[:-1]
    return s + "}\n}" if s.rstrip().endswith("}") else s + "\n}\n}"


def _integer_parameters(names: Sequence[str], raw_values: Sequence[Sequence[Any]]) -> list[Parameter]:
    """Parameters from recorded values: integers stay, anything else becomes labelled positions."""
    params = []
    for name, values in zip(names, raw_values):
        as_int = [_as_int(v) for v in values]
        if all(v is not None for v in as_int) and len(set(as_int)) == len(as_int):
            params.append(Parameter(name, sorted(as_int)))  # type: ignore[type-var]
        else:
            numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
            labels = sorted(values) if numeric else list(values)  # keep numbers ordered for the models
            params.append(Parameter(name, list(range(len(labels))), labels=labels))
    return params


def _as_int(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _encode_value(param: Parameter, raw: Any) -> int:
    if param.labels is None:
        v = _as_int(raw)
        if v is None:
            raise FormatError(f"parameter '{param.name}' has non-integer value {raw!r}")
        return v
    for i, label in enumerate(param.labels):
        if label == raw or str(label) == str(raw):
            return param.values[i]
    raise FormatError(f"parameter '{param.name}' has value {raw!r}, not among {param.labels}")


def _seconds(value: Any, unit: str = "ms") -> Optional[float]:
    if isinstance(value, list):  # repeated runtimes: their mean
        nums = [v for v in value if isinstance(v, (int, float)) and not isinstance(v, bool)]
        value = sum(nums) / len(nums) if nums else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    factor = UNIT_SECONDS.get(unit.strip() if unit else "ms")
    if factor is None:
        raise FormatError(f"unknown time unit '{unit}'")
    if not math.isfinite(value) or value <= 0 or value >= FAILED_TIME:
        return None
    return float(value) * factor


def _keep_best(records: Records, key: Key, time: Optional[float]) -> None:
    """Repeated measurements of one configuration: keep the fastest success."""
    if key not in records:
        records[key] = time
    elif time is not None and (records[key] is None or time < records[key]):  # type: ignore[operator]
        records[key] = time


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat()


OK_STATUSES = ("ok", "correct", "success", "valid", "measured")


_KIND_WORDS = (("constraints", ("invalid", "constraint", "resource", "limit")),
               ("compile", ("compil", "build")),
               ("correctness", ("wrong", "correct", "mismatch", "verif")),
               ("timeout", ("timeout", "timed out")))


def _status_kind(status: Optional[str], error: Optional[str]) -> str:
    """A failure's kind: constraints, compile, correctness, timeout or runtime.

    The status decides when it names the kind (imagecl's store: invalid_work_group,
    out_of_resources, invalid_config -> constraints; build_error -> compile; wrong_output ->
    correctness; timeout; crash, error -> runtime), otherwise the error message may.
    """
    for text in (str(status or "").lower(), str(error or "").lower()):
        for kind, words in _KIND_WORDS:
            if any(w in text for w in words):
                return kind
    return "runtime"


def _measurement_rows(parameters: Sequence[Parameter], measurements: Iterable[Mapping[str, Any]]):
    """(recorded values, seconds | None, kind, measurement) for each of our measurements."""
    by_name = {p.name: p for p in parameters}
    for m in measurements:
        config = m["config"]
        missing = [n for n in by_name if n not in config]
        if missing:
            raise FormatError(f"measurement of {config} lacks parameters {missing}")
        time = m.get("time_seconds")
        status = m.get("status")
        ok = time is not None and (status is None or str(status).lower() in OK_STATUSES)
        kind = "ok" if ok else _status_kind(status, m.get("error"))
        raw = {n: by_name[n].label(config[n]) for n in by_name}
        yield raw, (float(time) if ok else None), kind, m


# ---- Kernel Tuner cache files --------------------------------------------------------------------


def read_kernel_tuner_cache(source: Union[PathLike, Mapping[str, Any]]) -> tuple[list[Parameter], Records]:
    """Parameters and records (seconds | None) from a Kernel Tuner cache file or its parsed JSON."""
    data = load_json(source, closing=True)
    where = source if not isinstance(source, Mapping) else "cache"
    if not isinstance(data, Mapping) or not isinstance(data.get("cache"), Mapping) \
            or not isinstance(data.get("tune_params_keys"), list):
        raise FormatError(f"{where}: not a Kernel Tuner cache file (needs 'tune_params_keys' and 'cache')")
    names = [str(n) for n in data["tune_params_keys"]]
    tune_params = data.get("tune_params") if isinstance(data.get("tune_params"), Mapping) else {}
    raw_values: list[list[Any]] = [list(tune_params.get(n) or []) for n in names]
    rows = []
    for entry_key, entry in data["cache"].items():
        if not isinstance(entry, Mapping):
            raise FormatError(f"{where}: cache entry '{entry_key}' is not an object")
        raw = _entry_values(names, entry_key, entry)
        for i, v in enumerate(raw):  # values tuned but missing from 'tune_params' still count
            if v not in raw_values[i]:
                raw_values[i].append(v)
        rows.append((raw, _seconds(entry.get("time"), "ms")))
    params = _integer_parameters(names, raw_values)
    records: Records = {}
    for raw, time in rows:
        _keep_best(records, tuple(_encode_value(p, v) for p, v in zip(params, raw)), time)
    return params, records


def _entry_values(names: Sequence[str], entry_key: str, entry: Mapping[str, Any]) -> list[Any]:
    if all(n in entry for n in names):
        return [entry[n] for n in names]
    parts = str(entry_key).split(",")
    if len(parts) != len(names):
        raise FormatError(f"cache key '{entry_key}' does not have one value per parameter {list(names)}")
    return [_parse_scalar(p) for p in parts]


def _parse_scalar(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def write_kernel_tuner_cache(path: PathLike, parameters: Sequence[Parameter],
                             measurements: Iterable[Mapping[str, Any]], device_name: str = "unknown device",
                             kernel_name: str = "kernel", problem_size: Any = "unknown") -> None:
    """Write measurements as a closed Kernel Tuner cache (schema 1.1.0), times in ms."""
    errors = {"constraints": "InvalidConfig", "compile": "CompilationFailedConfig"}
    cache: dict[str, Any] = {}
    for raw, time, kind, m in _measurement_rows(parameters, measurements):
        key = ",".join(str(raw[p.name]) for p in parameters)
        value: Any = time * 1e3 if time is not None else errors.get(kind, "RuntimeFailedConfig")
        entry = dict(raw)
        entry.update({"time": value, "times": [value] if time is not None else [],
                      "compile_time": 0.0, "verification_time": 0.0, "benchmark_time": 0.0,
                      "strategy_time": 0.0, "framework_time": 0.0,
                      "timestamp": m.get("timestamp") or _now()})
        cache[key] = entry
    data = {"schema_version": "1.1.0", "device_name": device_name, "kernel_name": kernel_name,
            "problem_size": problem_size, "tune_params_keys": [p.name for p in parameters],
            "tune_params": {p.name: [p.label(v) for v in p.values] for p in parameters},
            "objective": "time", "cache": cache}
    write_text(path, json.dumps(data, indent=1) + "\n")


# ---- T4 -------------------------------------------------------------------------------------------


def read_t4(source: Union[PathLike, Mapping[str, Any]],
            parameters: Optional[Sequence[Parameter]] = None) -> tuple[list[Parameter], Records]:
    """Parameters and records from a T4 results file (or its parsed JSON).

    Pass `parameters` to keep a known parameter order and value set; otherwise they are inferred
    from the configurations in the file (in the order of the first one).
    """
    data = load_json(source)
    where = source if not isinstance(source, Mapping) else "results"
    if not isinstance(data, Mapping) or not isinstance(data.get("results"), list):
        raise FormatError(f"{where}: not a T4 results file (needs a 'results' list)")
    results = data["results"]
    for i, r in enumerate(results):
        if not isinstance(r, Mapping) or not isinstance(r.get("configuration"), Mapping):
            raise FormatError(f"{where}: result {i} has no 'configuration' object")
    if parameters is None:
        names = list(results[0]["configuration"]) if results else []
        raw_values: list[list[Any]] = [[] for _ in names]
        for r in results:
            for i, n in enumerate(names):
                if n not in r["configuration"]:
                    raise FormatError(f"{where}: a configuration lacks parameter '{n}'")
                v = r["configuration"][n]
                if v not in raw_values[i]:
                    raw_values[i].append(v)
        params = _integer_parameters(names, [_sorted_values(v) for v in raw_values])
    else:
        params = list(parameters)
    records: Records = {}
    for r in results:
        key = tuple(_encode_value(p, r["configuration"].get(p.name)) for p in params)
        _keep_best(records, key, _t4_time(r))
    return params, records


def _sorted_values(values: list[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:
        return values


def _t4_time(result: Mapping[str, Any]) -> Optional[float]:
    if result.get("invalidity", "correct") != "correct" or result.get("correctness", 1) in (0, False):
        return None
    objectives = result.get("objectives") or ["time"]
    wanted = [o for o in objectives if isinstance(o, str)] + ["time"]
    measurements = {m.get("name"): m for m in result.get("measurements") or [] if isinstance(m, Mapping)}
    for name in wanted:
        if name in measurements:
            m = measurements[name]
            return _seconds(m.get("value"), m.get("unit") or "ms")
    runtimes = (result.get("times") or {}).get("runtimes")
    return _seconds(runtimes, "ms") if runtimes else None


def write_t4(path: PathLike, parameters: Sequence[Parameter], measurements: Iterable[Mapping[str, Any]]) -> None:
    """Write measurements as a T4 results file (schema 1.0.0), times in ms."""
    results = []
    for raw, time, kind, m in _measurement_rows(parameters, measurements):
        ms = time * 1e3 if time is not None else None
        results.append({
            "timestamp": m.get("timestamp") or _now(),
            "configuration": raw,
            "objectives": ["time"],
            "times": {"runtimes": [ms] if ms is not None else []},
            "invalidity": "correct" if kind == "ok" else kind,
            "correctness": 0 if kind == "correctness" else 1,
            "measurements": [{"name": "time", "value": ms if ms is not None else (m.get("error") or kind),
                              "unit": "ms"}],
        })
    write_text(path, json.dumps({"schema_version": "1.0.0", "results": results}, indent=1) + "\n")


# ---- either -------------------------------------------------------------------------------------


def detect_format(data: Any) -> str:
    """'kernel_tuner' or 't4' from the parsed JSON's content (file names say nothing reliable)."""
    if isinstance(data, Mapping):
        if "cache" in data and "tune_params_keys" in data:
            return "kernel_tuner"
        if isinstance(data.get("results"), list):
            return "t4"
    raise FormatError("neither a Kernel Tuner cache file (no 'tune_params_keys'/'cache') "
                      "nor a T4 results file (no 'results' list)")


def read_measurements(source: Union[PathLike, Mapping[str, Any]]) -> tuple[list[Parameter], Records]:
    """Read a Kernel Tuner cache or a T4 file, whichever it is."""
    data = load_json(source, closing=True)
    try:
        kind = detect_format(data)
        return read_kernel_tuner_cache(data) if kind == "kernel_tuner" else read_t4(data)
    except FormatError as e:
        if isinstance(source, Mapping):
            raise
        raise FormatError(f"{source}: {e}") from None


__all__ = ["FormatError", "load_json", "read_text", "write_text", "read_kernel_tuner_cache", "write_kernel_tuner_cache",
           "read_t4", "write_t4", "detect_format", "read_measurements", "KT_ERRORS", "T4_INVALIDITY"]
