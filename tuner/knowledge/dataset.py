"""Measured records as a table for models that carry tuning knowledge across cases.

A case is one (program, device, problem size); each measured configuration of a case is one row:
the program's features, the device's, the size's and the configuration's encoding
(imagecl.features), with log(seconds) for configurations that ran and their failure kind for
those that did not. Failures stay in the table: they train the legality classifier.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from imagecl.features import CONFIG_FIELDS, DeviceFeatures, encode_columns, features_of, size_features, size_names
from imagecl.space import DeviceLimits

from ..censor import SLOW
from ..store import Record, canonical_config

# configuration fields that mean the same in every program's space: what identifies "one
# configuration" across programs (J48's labels, the best single configuration)
PORTABLE_FIELDS = ("wg_x", "wg_y", "wg_z", "px_x", "px_y", "px_z", "interleaved", "image_images_fraction",
                   "local_images_fraction", "constant_arrays_fraction", "interior", "vector_x",
                   "unroll_log2_mean", "unroll_full_fraction")
_PORTABLE_INDEX = [list(CONFIG_FIELDS).index(f) for f in PORTABLE_FIELDS]


@dataclass(frozen=True)
class Case:
    program_hash: str
    program_name: str
    device: str
    size: str  # "WxH[xD]", x first
    compute_units: int = 0  # the records' (Record.compute_units): one device name's sizes are cases apart

    def shape_xyz(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.size.split("x"))


@dataclass
class Dataset:
    """Rows of measured configurations; `case[i]` indexes `cases`."""

    cases: list[Case]
    case_features: np.ndarray  # one row per case: program, device and size features
    config_features: np.ndarray  # one row per measurement: the configuration's encoding
    case: np.ndarray  # int, per row
    configs: list[dict]
    keys: list[str]  # canonical configuration per row
    status: list[str]
    log_time: np.ndarray  # NaN where status is not ok
    default_key: dict[int, str] = field(default_factory=dict)  # case -> its default configuration's key
    # per row: the fastest and the slowest launch in seconds (NaN where it did not run); None
    # where the table was built without them
    launch_range: Optional[np.ndarray] = None

    @property
    def ok(self) -> np.ndarray:
        return np.array([s == "ok" for s in self.status], dtype=bool)

    def pair_features(self, rows: Optional[np.ndarray] = None, launch: bool = False,
                      relative: bool = False) -> np.ndarray:
        """Case and configuration features of `rows`; with `launch`, `launch_features` too;
        `relative` as `pair_matrix`'s."""
        rows = np.arange(len(self.case)) if rows is None else rows
        return pair_matrix(self.case_features[self.case[rows]], self.config_features[rows], launch, relative)

    def portable(self, rows: Optional[np.ndarray] = None) -> np.ndarray:
        rows = np.arange(len(self.case)) if rows is None else rows
        return self.config_features[rows][:, _PORTABLE_INDEX]

    def rows_of(self, case: int) -> np.ndarray:
        return np.flatnonzero(self.case == case)


LAUNCH_FIELDS = ("log2_groups_per_unit", "log2_items_per_unit", "log2_items_per_lane", "log2_group_per_lane",
                 "group_share_of_max")
_CONFIG = list(CONFIG_FIELDS)
_DEVICE = DeviceFeatures.names()


def launch_features(case_rows: np.ndarray, config_rows: np.ndarray) -> np.ndarray:
    """The launch measured in the device's own units, one row per (case, configuration) row:
    work-groups and work-items per compute unit, work-items per SIMD lane (compute units times
    the preferred float vector width), a work-group's items per lane and its share of the
    device's largest work-group. A configuration's absolute work-group count means opposite
    things on a 2-core and a 16-core CPU; these ratios carry from one device to another.
    On a CPU a work-group runs as a loop on one core, so these are what its best launch follows;
    on other devices they are 0 (a GPU's compute units hold many work-groups at once, and there
    the ratios made held-out sizes worse: eval-2026-11-24c-summary.md)."""
    device = _device_block(case_rows)
    cpu = device[:, _DEVICE.index("is_cpu")] > 0
    units = np.maximum(device[:, _DEVICE.index("compute_units")], 1.0)
    lanes = units * np.maximum(device[:, _DEVICE.index("preferred_vector_width_float")], 1.0)
    biggest = np.maximum(device[:, _DEVICE.index("max_work_group_size")], 1.0)
    groups = np.maximum(config_rows[:, _CONFIG.index("work_groups")], 1.0)
    items = np.maximum(config_rows[:, _CONFIG.index("work_items")], 1.0)
    group = np.maximum(config_rows[:, _CONFIG.index("wg_total")], 1.0)
    out = np.column_stack([np.log2(groups / units), np.log2(items / units), np.log2(items / lanes),
                           np.log2(group / (lanes / units)), group / biggest])
    return out * cpu[:, None]


# a launch's absolute counts: on a CPU, `relative` leaves only their per-unit forms (launch_features)
ABSOLUTE_LAUNCH = ("work_groups", "work_items")


def _device_block(case_rows: np.ndarray) -> np.ndarray:
    """The device's columns of case rows (program, device and size features, in that order)."""
    offset = case_rows.shape[1] - len(size_names()) - len(_DEVICE)
    return case_rows[:, offset:offset + len(_DEVICE)]


def _has_device(width: int) -> bool:
    """Whether case rows this wide hold a device's and a size's features (hand-made vectors of a
    few features do not)."""
    return width >= len(_DEVICE) + len(size_names())


def device_value(case_vector: np.ndarray, name: str) -> Optional[float]:
    """One device feature (`features.device` names) of one case's vector; None for a vector
    without a device's features."""
    if not _has_device(len(case_vector)):
        return None
    return float(_device_block(case_vector[None, :])[0, _DEVICE.index(name)])


def largest_cpu(case_rows: np.ndarray) -> float:
    """The most compute units of a CPU among case rows; 0 without one."""
    if not _has_device(case_rows.shape[1]):
        return 0.0
    units = _device_block(case_rows)[_cpu(case_rows), _DEVICE.index("compute_units")]
    return float(units.max()) if len(units) else 0.0


def config_column(config_rows: np.ndarray, name: str) -> np.ndarray:
    """One configuration feature (`features.config` names) of encoded configuration rows."""
    return config_rows[:, _CONFIG.index(name)]


def _cpu(case_rows: np.ndarray) -> np.ndarray:
    return _device_block(case_rows)[:, _DEVICE.index("is_cpu")] > 0


def pair_matrix(case_rows: np.ndarray, config_rows: np.ndarray, launch: bool = False,
                relative: bool = False) -> np.ndarray:
    """A model's input: case features beside configuration features, row by row; with `launch`,
    `launch_features` after them. `relative` (with `launch` implied): on CPUs the absolute
    work-group and work-item counts are 0, so that trees trained on one CPU can only learn its
    launch per compute unit and lane, not counts that mean the opposite on a CPU of 8x the cores."""
    launch = launch or relative
    extra = [launch_features(case_rows, config_rows)] if launch else []
    if relative:
        config_rows = config_rows.copy()
        cpu = _cpu(case_rows)
        for name in ABSOLUTE_LAUNCH:
            config_rows[cpu, _CONFIG.index(name)] = 0.0
    return np.hstack([case_rows, config_rows] + extra)


def limits_from_features(device: DeviceFeatures) -> DeviceLimits:
    """The limits a configuration space needs, from a device's recorded features (offline: the
    device itself need not be present)."""
    sizes = tuple(int(s) for s in device.max_work_item_sizes) or (1,)
    return DeviceLimits(name=device.name, max_work_group_size=int(device.max_work_group_size),
                        max_work_item_sizes=sizes, local_mem_size=int(device.local_mem_bytes),
                        max_constant_buffer_size=int(device.max_constant_buffer_bytes),
                        image_support=bool(device.image_support),
                        version=f"{device.version} (driver {device.driver})")


# the features of devices by name (a knowledge folder's features files), or by (name, compute units)
# where one name has several sizes (the service's store)
Devices = Mapping[Union[str, tuple[str, int]], DeviceFeatures]


def device_of(record: Record, devices: Devices) -> Optional[DeviceFeatures]:
    """The features of the device `record` was measured on: those of its name and compute units;
    else those of its name, when they are of its compute units or the record's are unknown (0:
    stored before the store kept them, as knowledge folders' stores were, with one device's
    features beside them). Never another size's: that would teach the model one device's
    times as another's."""
    sized = devices.get((record.device, record.compute_units))
    if sized is not None:
        return sized
    named = devices.get(record.device)
    if named is not None and record.compute_units in (0, named.compute_units):
        return named
    return None


def device_from_json(data: Mapping[str, Any]) -> DeviceFeatures:
    """DeviceFeatures from the "device" object `imagecl features` prints."""
    fields = {k: v for k, v in data.items() if k in DeviceFeatures.__dataclass_fields__}
    return DeviceFeatures(**fields)


def case_vector(program: Any, device: DeviceFeatures, shape_xyz: tuple[int, ...]) -> np.ndarray:
    """Program, device and size features of one case (device NaNs, i.e. unmeasured rates, as 0)."""
    return np.nan_to_num(np.concatenate([features_of(program).to_vector(), device.to_vector(),
                                         np.array(list(size_features(shape_xyz).values()))]))


def encode(program: Any, device: DeviceFeatures, shape_xyz: tuple[int, ...], configs: list[Mapping[str, int]]
           ) -> tuple[np.ndarray, dict]:
    """Encodings of `configs` of `program` on `device` at `shape_xyz`, and the space's default
    configuration (parameters a configuration lacks take the default's values)."""
    space = program.space_for_limits(limits_from_features(device), tuple(reversed(shape_xyz)))
    default = space.complete(space.defaults)
    columns = {p.name: np.array([int(c.get(p.name, default[p.name])) for c in configs]) for p in space.parameters}
    return encode_columns(program, space, columns, shape_xyz), default


def measured_default(default: Mapping[str, Any], configs: Sequence[Mapping[str, Any]], program: Any) -> str:
    """The key of the case's default configuration as it was measured. The space's default
    work-group is now the driver's choice (0); stores from before that hold the naive variant
    with a 1x1 work-group. Where the current default was not measured, the naive variant
    measured with the smallest work-group stands in (every other parameter at its default), so
    that "x default" and an illegal pick's fallback score against what the store has."""
    key = canonical_config(default)
    keys = [canonical_config(c) for c in configs]
    if key in keys:
        return key
    from imagecl import choices as ch

    work_group = {p.name for p in program.space.parameters if p.family is ch.WORK_GROUP}
    naive = [c for c in configs if all(c.get(k) == v for k, v in default.items() if k not in work_group)]
    if not naive:
        return key
    smallest = min(naive, key=lambda c: math.prod(max(1, int(c.get(k, 1))) for k in work_group))
    return canonical_config(smallest)


def assemble(records: Iterable[Record], programs: Mapping[str, Any], devices: Devices) -> tuple[Dataset, int]:
    """The table of `records` whose program (by program_hash) and device (`device_of`) are known;
    returns it and how many records were left out for want of either."""
    grouped: dict[Case, tuple[DeviceFeatures, list[Record]]] = {}
    skipped = 0
    for r in records:
        if r.status == SLOW:  # censored: neither a time nor a failure (tuner/censor.py)
            continue
        device = device_of(r, devices)
        if r.program_hash not in programs or device is None:
            skipped += 1
            continue
        case = Case(r.program_hash, r.program_name, r.device, r.problem_size, r.compute_units)
        grouped.setdefault(case, (device, []))[1].append(r)
    cases, case_rows, enc, case_idx, configs, keys, status, log_time, defaults = [], [], [], [], [], [], [], [], {}
    ranges = []
    for i, (case, (device, recs)) in enumerate(sorted(grouped.items(), key=lambda kv: (
            kv[0].program_name, kv[0].program_hash, kv[0].device, kv[0].compute_units, kv[0].size))):
        program = programs[case.program_hash]
        shape = case.shape_xyz()
        cases.append(case)
        case_rows.append(case_vector(program, device, shape))
        rows, default = encode(program, device, shape, [r.config for r in recs])
        defaults[i] = measured_default(default, [r.config for r in recs], program)
        enc.append(rows)
        for r in recs:
            case_idx.append(i)
            configs.append(dict(r.config))
            keys.append(canonical_config(r.config))
            status.append(r.status)
            ok = r.status == "ok" and r.time is not None and r.time > 0
            log_time.append(math.log(r.time) if ok else math.nan)
            launches = [t for t in (r.times or [r.time]) if t is not None and t > 0] if ok else []
            ranges.append((min(launches), max(launches)) if launches else (math.nan, math.nan))
    width = len(CONFIG_FIELDS)
    data = Dataset(cases=cases, case_features=np.array(case_rows) if case_rows else np.empty((0, 0)),
                   config_features=np.vstack(enc) if enc else np.empty((0, width)),
                   case=np.array(case_idx, dtype=np.int64), configs=configs, keys=keys, status=status,
                   log_time=np.array(log_time, dtype=np.float64), default_key=defaults,
                   launch_range=np.array(ranges, dtype=np.float64).reshape(-1, 2))
    return data, skipped
