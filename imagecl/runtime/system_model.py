"""What running several devices at once costs on this system, learned once per device set from
synthetic programs, and the split predicted from it.

split_tuning's analytic model takes each device alone and the split's time as the slowest band's
alone time. Running devices together costs more: a call's own fixed cost on each device, a device
slowed while another runs (the host thread feeding a GPU takes a core of the CPU device), the
host's memory shared by every device's copies (two GPUs fed from pageable memory move about 1.5x,
not 2x, the bytes of one: benchmarks/multi_gpu_transfers.py), and for iterated programs each halo
exchange. The system model keeps the analytic form and adds those as terms fitted on the system:

    T(shares) = max over the devices taking part of
                    (1 - rho) * H_d + m * b_d + i * a_d + F_d * (1 + m * s_d)
                    + K * (i * e_d + n_d * k_d * (1 + m * s_d))
                + m * c * rounds

From device d's alone-profile (split_tuning.Profile) of the whole grid: k_d its kernel seconds per
row, u_d its transfer seconds (inputs up, outputs down) and H_d the rest of its wall time (the
host's work). f_d: its share of the rows; n_d: its band's rows plus, for an iterated program, the
rows it computes redundantly (on average (h - 1) / 2 times the program's reach per neighbour);
K: the steps (1 for one run; an iterated program moves its band once, however many steps);
m: 1 when more than one device takes part; i: 1 for an iterated program; rounds: the exchanges
(steps / h). Device d moves M_d = f_d * (u_d + rho * H_d) through the host's memory: its
transfers and the share rho of the host's work that grows with the rows (allocating and touching
the outputs). The devices move at once, sharing the host's memory: together they move at most 1 / g times as fast as one alone,
shared equally among those still moving (processor sharing), and F_d is when device d is done
(g = 0: every device as if alone, F_d = M_d; g = 1: the host moves for one device at a time).
Fitted (`Terms`): per device b_d, s_d, e_d (the cost of an iterated step beyond its kernel: a
launch, and on a CPU device its threads' wake-up, which a profile of one step does not show) and
a_d (an iterated call's cost beyond a single run's, once per call: its second buffer of the state,
its rounds' plans), and c (one exchange), rho and g.

Calibration (`calibrate`) runs synthetic box stencils (`Instance`: size, radius and per-tap work,
bytes per pixel, one run or iterated) over a sweep of shares, after profiling each alone as a real
program is, and fits the terms by least squares on the log of predicted over measured time. The
result is cached per device set beside the device features' measurements (`load_or_calibrate`).
A prediction then needs only each device's alone-profile of the real program: no split of it is
measured.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .split_tuning import Profile

VERSION = 4
PER_DEVICE = 4  # the per-device terms: b_d, s_d, e_d, a_d
CACHE_FILE = "system_models.json"
# a split is predicted only when the model puts it this much ahead of the best single device: the
# fitted terms are averages over the synthetic programs, and a split that gains less rarely pays
SPLIT_MARGIN = 0.03


# ---- the model -----------------------------------------------------------------------------------------


@dataclass
class Terms:
    """The fitted co-running terms of one device set (seconds; s_d a fraction), in its order."""

    fixed: list[float]  # b_d
    slowdown: list[float]  # s_d
    step: Optional[list[float]] = None  # e_d (None: 0 on every device)
    exchange: float = 0.0  # c
    moved: float = 0.0  # rho, in [0, 1]
    shared: float = 0.0  # g, in [0, 1]
    call: Optional[list[float]] = None  # a_d (None: 0 on every device)

    def __post_init__(self) -> None:
        if self.step is None:
            self.step = [0.0] * len(self.fixed)
        if self.call is None:
            self.call = [0.0] * len(self.fixed)

    @staticmethod
    def none(count: int) -> "Terms":
        """No co-running cost: the analytic model."""
        return Terms([0.0] * count, [0.0] * count)

    def vector(self) -> np.ndarray:
        return np.array(self.fixed + self.slowdown + self.step + self.call + [self.exchange, self.moved, self.shared],
                        dtype=float)

    @staticmethod
    def of_vector(x: Sequence[float], count: int) -> "Terms":
        x = [float(v) for v in x]
        per = [x[k * count:(k + 1) * count] for k in range(PER_DEVICE)]
        rest = x[PER_DEVICE * count:]
        return Terms(per[0], per[1], per[2], rest[0], rest[1], rest[2], per[3])


def model_seconds(terms: Terms, profiles: Sequence[Profile], shares: Sequence[float], steps: Optional[int] = None,
                  h: int = 1, depth: int = 0) -> float:
    """The system model's time of a split (`steps`: an iterated program's, None for one run;
    `depth`: the rows one step reads beyond a band's, both sides together)."""
    iterate = steps is not None
    count = steps or 1
    rows = profiles[0].rows
    active = [i for i, s in enumerate(shares) if s > 0]
    m = 1.0 if len(active) > 1 else 0.0
    host = [max(0.0, p.wall - p.kernel - p.transfer) for p in profiles]
    moved = shared_moving({i: shares[i] * (profiles[i].transfer + terms.moved * host[i]) for i in active},
                          m * terms.shared)
    worst = 0.0
    for k, i in enumerate(active):
        p = profiles[i]
        n = shares[i] * rows
        if iterate and m:
            neighbours = (k > 0) + (k < len(active) - 1)
            n += neighbours * depth * (h - 1) / 2
        together = 1 + m * terms.slowdown[i]
        per_step = (terms.step[i] if iterate else 0.0) + n * p.kernel / max(rows, 1) * together
        once = m * terms.fixed[i] + (terms.call[i] if iterate else 0.0)
        worst = max(worst, (1 - terms.moved) * host[i] + once + moved[i] * together + count * per_step)
    rounds = math.ceil(count / max(h, 1)) if iterate else 0
    return worst + m * terms.exchange * rounds


def shared_moving(alone: dict, shared: float) -> dict:
    """When each device is done moving what it would move in `alone[d]` seconds by itself, all at
    once through a host that moves at most 1 / `shared` times as fast as one device alone, equally
    shared by those still moving (`shared` 0: no limit)."""
    capacity = 1.0 / shared if shared > 0 else math.inf
    done, clock, moved = {}, 0.0, 0.0  # moved: what each device still moving has moved so far
    left = len(alone)
    for d in sorted(alone, key=alone.__getitem__):
        rate = min(1.0, capacity / left)
        clock += (alone[d] - moved) / rate
        moved = alone[d]
        done[d] = clock
        left -= 1
    return done


def compositions(count: int, step: float) -> list[list[float]]:
    """Every split of 1 into `count` multiples of `step`."""
    units = int(round(1 / step))
    found = []
    for cut in itertools.combinations(range(units + count - 1), count - 1):
        parts, last = [], -1
        for c in cut + (units + count - 1,):
            parts.append(c - last - 1)
            last = c
        found.append([p / units for p in parts])
    return found


@dataclass
class Prediction:
    shares: list[float]
    h: Optional[int]
    seconds: float  # the model's
    single_seconds: float  # the model's best single device


def groups_of(devices: Sequence) -> list[int]:
    """Each device's group: devices of one key (one model of one size under one driver) share one."""
    from .devices import device_key

    keys = [device_key(d) for d in devices]
    return [keys.index(k) for k in keys]


def pooled(profiles: Sequence[Profile], groups: Optional[Sequence[int]]) -> list[Profile]:
    """Each device's alone-profile replaced by its group's mean: devices of one model run one
    program alike, and what their own profiles differ by is the timing's noise, which would
    otherwise tilt the split between them."""
    if groups is None:
        return list(profiles)
    found = []
    for i, p in enumerate(profiles):
        same = [q for q, g in zip(profiles, groups) if g == groups[i]]
        found.append(Profile(p.device, p.rows, float(np.mean([q.wall for q in same])),
                             float(np.mean([q.kernel for q in same])), float(np.mean([q.transfer for q in same]))))
    return found


def predict(terms: Terms, profiles: Sequence[Profile], steps: Optional[int] = None, depth: int = 0,
            hs: Sequence[int] = (1, 2, 4, 8), step: Optional[float] = None,
            groups: Optional[Sequence[int]] = None) -> Prediction:
    """The split (and h) the system model puts fastest, with the fewest devices: one more device
    takes part only where it gains more than SPLIT_MARGIN over the best split without it (the
    terms are averages over synthetic programs, and a device that gains less rarely pays).
    `groups` (groups_of): devices of one group predicted from their pooled profile."""
    together = pooled(profiles, groups)  # a device alone is its own profile; in a split, its group's
    count = len(profiles)
    step = step or {1: 1.0, 2: 0.01, 3: 0.02, 4: 0.05}.get(count, 0.1)
    iterate = steps is not None
    best: dict[int, tuple[float, list[float], Optional[int]]] = {}  # by the number of devices taking part
    for shares in compositions(count, step):
        taking = sum(1 for s in shares if s > 0)
        for h in (hs if iterate and taking > 1 else [min(hs) if iterate else None]):
            t = model_seconds(terms, together if taking > 1 else profiles, shares, steps, h or 1, depth)
            if taking not in best or t < best[taking][0]:
                best[taking] = (t, shares, h)
    chosen = best[1]
    for taking in sorted(best)[1:]:
        if best[taking][0] < chosen[0] * (1 - SPLIT_MARGIN):
            chosen = best[taking]
    return Prediction(chosen[1], chosen[2], chosen[0], best[1][0])


# ---- fitting ---------------------------------------------------------------------------------------------


@dataclass
class Sample:
    """One timed split of a synthetic program, with the alone-profiles the model starts from."""

    profiles: list[list[float]]  # per device: [rows, wall, kernel, transfer]
    shares: list[float]
    steps: Optional[int]
    h: int
    depth: int
    seconds: float

    def profile_objects(self) -> list[Profile]:
        return [Profile(None, int(r), w, k, t) for r, w, k, t in self.profiles]


def fit(samples: Sequence[Sample], count: int, groups: Optional[Sequence[int]] = None) -> Terms:
    """The terms that make the model's times closest to the samples' (least squares on the log of
    their ratio, robust to a few outlying timings); without samples, none. `groups` (groups_of):
    the devices of one group share their per-device terms (two GPUs of one model differ in the
    samples by noise only, and terms of their own would fit it)."""
    from scipy.optimize import least_squares

    if not samples:
        return Terms.none(count)
    groups = list(range(count)) if groups is None else [int(g) for g in groups]
    distinct = sorted(set(groups))
    index = [distinct.index(g) for g in groups]  # each device's group, numbered 0..n-1
    n = len(distinct)
    profiles = [s.profile_objects() for s in samples]

    def terms_of(x: np.ndarray) -> Terms:
        per = [x[k * n:(k + 1) * n] for k in range(PER_DEVICE)]
        return Terms.of_vector([per[k][index[d]] for k in range(PER_DEVICE) for d in range(count)]
                               + list(x[PER_DEVICE * n:]), count)

    def residuals(x: np.ndarray) -> np.ndarray:
        terms = terms_of(x)
        return np.array([math.log(max(model_seconds(terms, p, s.shares, s.steps, s.h, s.depth), 1e-9) / s.seconds)
                         for p, s in zip(profiles, samples)])

    # g starts where the shared moving binds (above 1 / devices): below it the term has no gradient
    start = np.array([1e-4] * n + [0.05] * n + [1e-5] * n + [1e-4] * n + [1e-5, 0.2, 0.75])
    scale = np.array([1e-3] * n + [0.1] * n + [1e-4] * n + [1e-3] * n + [1e-4, 0.2, 0.2])
    upper = np.array([np.inf] * (PER_DEVICE * n + 1) + [1.0, 1.0])
    found = least_squares(residuals, start, bounds=(0.0, upper), x_scale=scale, loss="soft_l1", f_scale=0.1)
    return terms_of(found.x)


def fit_error(terms: Terms, samples: Sequence[Sample]) -> float:
    """The median relative error of the model's times over `samples`."""
    errors = [abs(model_seconds(terms, s.profile_objects(), s.shares, s.steps, s.h, s.depth) / s.seconds - 1)
              for s in samples]
    return float(np.median(errors)) if errors else 0.0


# ---- synthetic programs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instance:
    """One synthetic program and problem: a box stencil of `radius` over one image of `pixel`s,
    `heavy` adding a transcendental per tap; one run, or `steps` iterated steps."""

    width: int
    height: int
    radius: int
    heavy: bool = False
    pixel: str = "float"
    steps: Optional[int] = None

    @property
    def depth(self) -> int:
        return 2 * self.radius

    def source(self) -> str:
        r = self.radius
        taps = (2 * r + 1) ** 2
        tap = "sqrt(fabs(v) + (float)(i * j))" if self.heavy else "v"
        out = "(uchar)clamp(acc, 0.0f, 255.0f)" if self.pixel == "uchar" else "acc"
        return (f"#pragma imcl grid(input, output)\n#pragma imcl boundary_cond(input:clamped)\n"
                f"void syn(Image<{self.pixel}> input, Image<{self.pixel}> output) {{\n"
                f"    float acc = 0.0f;\n"
                f"    for (int j = -{r}; j <= {r}; j++) {{\n"
                f"        for (int i = -{r}; i <= {r}; i++) {{\n"
                f"            float v = (float)input[idx + i][idy + j];\n"
                f"            acc += {tap};\n"
                f"        }}\n    }}\n"
                f"    acc = acc / {taps}.0f;\n"
                f"    output[idx][idy] = {out};\n}}\n")

    def arguments(self, rng: np.random.Generator) -> dict:
        shape = (self.height, self.width)
        if self.pixel == "uchar":
            return {"input": rng.integers(0, 256, shape).astype(np.uint8)}
        return {"input": rng.random(shape, dtype=np.float32)}


def default_instances(size: Sequence[int] = (2048, 2048), steps: Any = (4, 64)) -> list[Instance]:
    """The calibration set at `size` (width, height) and half of it: little and much work per
    point, 4 and 1 bytes per pixel, one run and iterated at each step count in `steps` (an int:
    one count), so that the devices' alone-times range from their fixed cost to many
    milliseconds of kernel. Two step counts tell an iterated call's cost once (a_d) from its
    cost per step (e_d); at one count, e_d absorbs a_d / steps, counted again at every step."""
    counts = [int(steps)] if isinstance(steps, (int, np.integer)) else [int(v) for v in steps]
    w, h = (max(8, int(v)) for v in size[:2])
    sizes = [(max(8, w // 2), max(8, h // 2)), (w, h)]
    work = [(0, False), (2, True)]  # radius, a transcendental per tap
    found = [Instance(sw, sh, radius, heavy, pixel)
             for (sw, sh), (radius, heavy), pixel in itertools.product(sizes, work, ["float", "uchar"])]
    found += [Instance(sw, sh, 1, False, "float", n) for n in counts for sw, sh in sizes]
    return found


CALIBRATION_SHARES = (0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0)


def sweep_shares(count: int) -> list[list[float]]:
    """The shares each synthetic program is timed at: for two devices the second's share over
    CALIBRATION_SHARES; for more, coarser compositions."""
    if count == 2:
        return [[1 - s, s] for s in CALIBRATION_SHARES]
    return compositions(count, 0.25 if count == 3 else 0.5)


def default_config(program: Any, device: Any, grid_shape: tuple[int, int]) -> Any:
    """A GPU: a plain 32 x 8 work-group where valid; otherwise the naive variant."""
    import pyopencl as cl

    from ..errors import ConfigError

    if device.type & cl.device_type.GPU:
        try:
            return program.space_for(device, grid_shape).complete({"wg_x": 32, "wg_y": 8})
        except ConfigError:
            pass
    return "naive"


def measure(devices: Sequence, instances: Sequence[Instance], repeats: int = 3, hs: Sequence[int] = (1, 4),
            configure: Callable = default_config, log: Callable[[str], None] = lambda line: None,
            seed: int = 0) -> list[Sample]:
    """Every instance profiled alone on each device and timed at `sweep_shares` (iterated ones
    at each h in `hs`): the samples the terms are fitted on."""
    import imagecl

    from . import split_tuning

    rng = np.random.default_rng(seed)
    samples: list[Sample] = []
    for inst in instances:
        program = imagecl.compile(inst.source(), f"<synthetic {inst}>")
        args = inst.arguments(rng)
        configs = [configure(program, d, (inst.height, inst.width)) for d in devices]
        profiles = [split_tuning.profile(program, args, d, c, repeats) for d, c in zip(devices, configs)]
        rows_profiles = [[p.rows, p.wall, p.kernel, p.transfer] for p in profiles]
        iterate_args = {k: v for k, v in args.items() if k != "output"}
        started = time.perf_counter()
        for shares in sweep_shares(len(devices)):
            taking = sum(1 for s in shares if s > 0)
            for h in (hs if inst.steps is not None and taking > 1 else [1]):
                t = split_tuning.time_split(program, iterate_args, devices, shares, configs, repeats, inst.steps, h)
                samples.append(Sample(rows_profiles, list(shares), inst.steps, h, inst.depth, t.seconds))
        log(f"  {inst}: {time.perf_counter() - started:.1f} s")
    return samples


# ---- one device set's model, cached --------------------------------------------------------------------


@dataclass
class SystemModel:
    device_keys: list[str]
    terms: Terms
    fit_error: float  # median relative error over the calibration samples
    samples: list[Sample] = field(default_factory=list)

    def terms_for(self, devices: Sequence) -> Terms:
        """The terms in the order of `devices` (the same set, in any order; devices of one key,
        which cannot be told apart, in the calibration's order)."""
        from .devices import device_key

        free = list(range(len(self.device_keys)))
        order = []
        for d in devices:
            i = next(i for i in free if self.device_keys[i] == device_key(d))
            free.remove(i)
            order.append(i)
        return Terms([self.terms.fixed[i] for i in order], [self.terms.slowdown[i] for i in order],
                     [self.terms.step[i] for i in order], self.terms.exchange, self.terms.moved, self.terms.shared,
                     [self.terms.call[i] for i in order])

    def to_json(self) -> dict:
        return {"version": VERSION, "device_keys": self.device_keys, "terms": asdict(self.terms),
                "fit_error": self.fit_error, "samples": [asdict(s) for s in self.samples]}

    @staticmethod
    def from_json(data: Any) -> Optional["SystemModel"]:
        """The model of a cache entry; None for a damaged or older one."""
        try:
            if data.get("version") != VERSION:
                return None
            keys = [str(k) for k in data["device_keys"]]
            t = data["terms"]
            terms = Terms([float(v) for v in t["fixed"]], [float(v) for v in t["slowdown"]],
                          [float(v) for v in t["step"]], float(t["exchange"]), float(t["moved"]), float(t["shared"]),
                          [float(v) for v in t["call"]])
            values = list(terms.vector())
            if any(len(v) != len(keys) for v in (terms.fixed, terms.slowdown, terms.step, terms.call)) or \
                    not all(math.isfinite(v) and v >= 0 for v in values) or terms.moved > 1 or terms.shared > 1:
                return None
            samples = [Sample(**s) for s in data.get("samples", [])]
            return SystemModel(keys, terms, float(data["fit_error"]), samples)
        except (AttributeError, KeyError, TypeError, ValueError):
            return None


def set_key(devices: Sequence) -> str:
    """The cache's key of a device set: its devices' keys, in any order."""
    from .devices import device_key

    return hashlib.sha256(json.dumps(sorted(device_key(d) for d in devices)).encode()).hexdigest()[:16]


def default_cache_path() -> Path:
    from ..features.device import default_cache_path as features_path

    return features_path().parent / CACHE_FILE


def _read_cache(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cached(devices: Sequence, cache_path: Optional[Path] = None) -> Optional[SystemModel]:
    """The cached model of this device set, or None."""
    path = Path(cache_path) if cache_path is not None else default_cache_path()
    return SystemModel.from_json(_read_cache(path).get(set_key(devices)))


def store(model: SystemModel, devices: Sequence, cache_path: Optional[Path] = None) -> None:
    """Adds the model to the cache, atomically; a cache that cannot be written costs a
    calibration next time, nothing else."""
    from ..outputs import write_atomic

    path = Path(cache_path) if cache_path is not None else default_cache_path()
    data = _read_cache(path)
    data[set_key(devices)] = model.to_json()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(data) + "\n")
    except OSError:
        pass


def calibrate(devices: Sequence, instances: Optional[Sequence[Instance]] = None, repeats: int = 3,
              log: Callable[[str], None] = lambda line: None, **options: Any) -> SystemModel:
    """Measure the synthetic instances on `devices` and fit the terms."""
    from .devices import device_key

    samples = measure(devices, instances if instances is not None else default_instances(), repeats,
                      log=log, **options)
    terms = fit(samples, len(devices), groups_of(devices))
    return SystemModel([device_key(d) for d in devices], terms, fit_error(terms, samples), samples)


def load_or_calibrate(devices: Sequence, cache_path: Optional[Path] = None,
                      log: Callable[[str], None] = lambda line: None, **options: Any) -> SystemModel:
    """This device set's model: cached, or calibrated now (a minute or so) and cached."""
    found = cached(devices, cache_path)
    if found is not None:
        return found
    log(f"calibrating the system model of {len(devices)} devices on synthetic programs (once per device set)")
    model = calibrate(devices, log=log, **options)
    log(f"  fitted: {model.terms} (median error {model.fit_error:.0%})")
    store(model, devices, cache_path)
    return model
