"""The tuning service's messages: typed records, and their validation from untrusted JSON.

Every field is checked for its type and range here, before anything reaches the store, the
compiler or a model; an unknown field is refused (a misspelt option must not be ignored
silently). `ProtocolError` carries the message a client gets with its 4xx status.

    program  {"source": TEXT, "filename": NAME}  or  {"key": MEANING-KEY}  (a program the server
             has been sent before; imagecl.tuned.program_key)
    device   the "device" object `imagecl features` prints (DeviceFeatures; "summary" ignored); its
             name, driver and compute units tell it from another device
    size     [width, height] or [width, height, depth]
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from ..features.device import DeviceFeatures
from ..tuner.store import STATUSES

MAX_BODY = 1 << 20  # bytes of one request
MAX_SOURCE = 256 * 1024  # characters of a program's source
MAX_NAME = 256  # characters of a file name, device name, driver, parameter name
MAX_EXTENT = 1 << 16  # points per axis of a problem size
MAX_POINTS = 1 << 31
MAX_SECONDS = 1e6
MAX_BATCH = 1000  # observations in one Submit
MAX_PARAMETERS = 256
FAILURES = tuple(s for s in STATUSES if s != "ok")
_KEY = re.compile(r"^[0-9a-f]{16}$")


class ProtocolError(ValueError):
    """A request the service refuses: `status` is the HTTP status, the text says why."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ProgramRef:
    source: Optional[str] = None
    filename: str = "<service>"
    key: Optional[str] = None  # the meaning key, when the client sent only that


@dataclass(frozen=True)
class Case:
    """One (program, device, size): what Request and RequestTraining ask about."""

    program: ProgramRef
    device: DeviceFeatures
    size: tuple[int, ...]  # x first

    @property
    def size_text(self) -> str:
        return "x".join(str(s) for s in self.size)


@dataclass(frozen=True)
class Observation:
    case: Case
    config: dict
    seconds: Optional[float]  # None: it failed
    failure: Optional[str] = None
    times: tuple[float, ...] = ()


@dataclass(frozen=True)
class Refusal:
    case: Case  # the size only selects the space the configuration is checked in
    config: dict


@dataclass
class Answer:
    """Request's and RequestTraining's reply."""

    program_key: str
    configuration: dict
    source: str  # "measured", "predicted", "default" (no model yet), "unmeasured" (RequestTraining)
    seconds: Optional[float] = None  # measured or predicted time
    uncertainty: Optional[float] = None  # spread of the forest's trees' log-time predictions
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"program_key": self.program_key, "configuration": self.configuration, "source": self.source,
                "seconds": self.seconds, "uncertainty": self.uncertainty, **self.extra}


# ---- checks ----------------------------------------------------------------------------------------

def _object(value: Any, what: str, allowed: set[str], required: set[str] = frozenset()) -> dict:
    if not isinstance(value, dict):
        raise ProtocolError(f"{what}: expected a JSON object, got {_kind(value)}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ProtocolError(f"{what}: unknown field {_show(unknown[0])} (known: {', '.join(sorted(allowed))})")
    missing = sorted(required - set(value))
    if missing:
        raise ProtocolError(f"{what}: missing field '{missing[0]}'")
    return value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def _show(text: Any) -> str:
    """User text quoted for a message: shortened, non-printable characters escaped."""
    text = str(text)
    return repr(text[:60] + ("..." if len(text) > 60 else ""))


def _text(value: Any, what: str, limit: int = MAX_NAME, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ProtocolError(f"{what}: expected a string, got {_kind(value)}")
    if len(value) > limit:
        raise ProtocolError(f"{what}: longer than {limit} characters")
    if not value and not empty:
        raise ProtocolError(f"{what}: empty")
    if "\x00" in value:
        raise ProtocolError(f"{what}: contains a NUL character")
    return value


def _int(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"{what}: expected an integer, got {_kind(value)}")
    if not low <= value <= high:
        raise ProtocolError(f"{what}: {value} is outside {low}..{high}")
    return value


def _number(value: Any, what: str, low: float, high: float, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProtocolError(f"{what}: expected a number, got {_kind(value)}")
    value = float(value)
    if not math.isfinite(value) or value < low or value > high or (positive and value <= 0):
        raise ProtocolError(f"{what}: {value!r} is not a finite number in {'(' if positive else '['}{low:g}, {high:g}]")
    return value


def program_ref(value: Any) -> ProgramRef:
    data = _object(value, "program", {"source", "filename", "key"})
    if "key" in data:
        if "source" in data:
            raise ProtocolError("program: give its source or its key, not both")
        key = _text(data["key"], "program.key", 16)
        if not _KEY.match(key):
            raise ProtocolError("program.key: expected 16 lowercase hexadecimal digits")
        return ProgramRef(key=key)
    if "source" not in data:
        raise ProtocolError("program: give its 'source' (or the 'key' the service returned for it)")
    filename = _text(data.get("filename", "<service>"), "program.filename")
    return ProgramRef(source=_text(data["source"], "program.source", MAX_SOURCE), filename=filename)


_DEVICE_INTS = ("compute_units", "max_clock_mhz", "global_mem_bytes", "global_mem_cache_bytes", "max_mem_alloc_bytes",
                "local_mem_bytes", "max_constant_buffer_bytes", "max_work_group_size")
_DEVICE_TEXTS = ("key", "name", "vendor", "platform", "driver", "version", "type")
_DEVICE_FIELDS = set(DeviceFeatures.__dataclass_fields__) | {"summary"}
_POSITIVE_INTS = ("compute_units", "max_work_group_size")  # no device has none: 0 is a client's mistake
# a device of one name and driver comes in several sizes (tuner/store.py): without its compute units
# the service could not keep their measurements apart
_NO_UNITS = ("device: missing field 'compute_units' (the device's number of compute units, which tells it from "
             "a device of the same name and driver but another size); a client of an older imagecl does not "
             "send it: update imagecl on the client")
_VECTOR_TYPES = ("char", "short", "int", "long", "float", "double")


def device(value: Any) -> DeviceFeatures:
    if isinstance(value, dict) and "compute_units" not in value:
        raise ProtocolError(_NO_UNITS)
    data = _object(value, "device", _DEVICE_FIELDS, set(_DEVICE_TEXTS) | set(_DEVICE_INTS)
                   | {"local_mem_dedicated", "max_work_item_sizes", "image_support", "preferred_vector_widths"})
    out: dict[str, Any] = {n: _text(data[n], f"device.{n}", 1024, empty=n not in ("name",)) for n in _DEVICE_TEXTS}
    out["name"] = out["name"].strip()
    out["driver"] = out["driver"].strip()
    if out["type"] not in ("GPU", "CPU", "ACCELERATOR", "OTHER"):
        raise ProtocolError("device.type: one of GPU, CPU, ACCELERATOR, OTHER")
    for n in _DEVICE_INTS:
        out[n] = _int(data[n], f"device.{n}", 1 if n in _POSITIVE_INTS else 0, 1 << 62)
    for n in ("local_mem_dedicated", "image_support"):
        if not isinstance(data[n], bool):
            raise ProtocolError(f"device.{n}: expected true or false")
        out[n] = data[n]
    sizes = data["max_work_item_sizes"]
    if not isinstance(sizes, list) or not 1 <= len(sizes) <= 3:
        raise ProtocolError("device.max_work_item_sizes: expected a list of 1 to 3 integers")
    out["max_work_item_sizes"] = [_int(s, "device.max_work_item_sizes", 1, 1 << 31) for s in sizes]
    widths = _object(data["preferred_vector_widths"], "device.preferred_vector_widths", set(_VECTOR_TYPES))
    out["preferred_vector_widths"] = {t: _int(w, f"device.preferred_vector_widths.{t}", 0, 64)
                                      for t, w in widths.items()}
    for n in ("copy_bandwidth_gbs", "peak_gflops"):
        v = data.get(n)
        out[n] = None if v is None else _number(v, f"device.{n}", 0.0, 1e9, positive=True)
    return DeviceFeatures(**out)


def size(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not 2 <= len(value) <= 3:
        raise ProtocolError("size: expected [width, height] or [width, height, depth]")
    dims = tuple(_int(v, "size", 1, MAX_EXTENT) for v in value)
    if math.prod(dims) > MAX_POINTS:
        raise ProtocolError(f"size: more than {MAX_POINTS} points")
    return dims


def config(value: Any, what: str = "configuration") -> dict:
    if not isinstance(value, dict):
        raise ProtocolError(f"{what}: expected a JSON object of parameter values, got {_kind(value)}")
    if len(value) > MAX_PARAMETERS:
        raise ProtocolError(f"{what}: more than {MAX_PARAMETERS} parameters")
    return {_text(k, f"{what} parameter name"): _int(v, f"{what}.{k[:60]}", -(1 << 31), 1 << 31)
            for k, v in value.items()}


def case(data: Mapping[str, Any], extra: set[str] = frozenset(), required: set[str] = frozenset()) -> Case:
    body = _object(data, "request", {"program", "device", "size"} | extra, {"program", "device", "size"} | required)
    return Case(program_ref(body["program"]), device(body["device"]), size(body["size"]))


def observation(data: Any) -> Observation:
    body = _object(data, "observation", {"program", "device", "size", "configuration", "seconds", "failure", "times"},
                   {"program", "device", "size", "configuration"})
    c = case({k: body[k] for k in ("program", "device", "size")})
    cfg = config(body["configuration"])
    seconds, failure = body.get("seconds"), body.get("failure")
    if (seconds is None) == (failure is None):
        raise ProtocolError("observation: give either 'seconds' (it ran) or 'failure' (it did not)")
    if failure is not None:
        failure = _text(failure, "failure")
        if failure not in FAILURES:
            raise ProtocolError(f"failure: {_show(failure)} is not one of {', '.join(FAILURES)}")
        return Observation(c, cfg, None, failure)
    seconds = _number(seconds, "seconds", 0.0, MAX_SECONDS, positive=True)
    times = body.get("times", [])
    if not isinstance(times, list) or len(times) > 1000:
        raise ProtocolError("times: expected a list of at most 1000 numbers")
    return Observation(c, cfg, seconds, None, tuple(_number(t, "times", 0.0, MAX_SECONDS, positive=True) for t in times))


def submit(data: Any) -> list[Observation]:
    """One observation, or {"observations": [...]} (stored in one transaction)."""
    if isinstance(data, dict) and "observations" in data:
        _object(data, "request", {"observations"})
        items = data["observations"]
        if not isinstance(items, list) or not 1 <= len(items) <= MAX_BATCH:
            raise ProtocolError(f"observations: expected a list of 1 to {MAX_BATCH} observations")
        return [observation(item) for item in items]
    return [observation(data)]


def refusal(data: Any) -> Refusal:
    body = _object(data, "request", {"program", "device", "size", "configuration"},
                   {"program", "device", "size", "configuration"})
    c = case({k: body[k] for k in ("program", "device", "size")})
    return Refusal(c, config(body["configuration"]))
