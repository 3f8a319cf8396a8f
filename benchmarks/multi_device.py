"""One job across several devices: each device alone, the predicted split, the tuned split and an
exhaustive sweep of shares (and of the halo depth h for iterated programs).

    PYTHONPATH=$PWD python3 benchmarks/multi_device.py --devices nvidia,cpu --out $OUT/multi_device.json

Programs: convolution9 and median (one run, NumPy in and out: the transfers count), and heat and
conway iterated `--steps` times (the data stays on the devices; only halos travel). Each device runs
its own variant: for convolution9 the configurations tuned earlier for the GPU and the CPU
(benchmarks/results/ground-convolution9-gpu.json, variants-cpu.json) where they are valid on the
device, else a plain work-group size on a GPU and the naive variant on a CPU. Times are wall seconds
of the whole call, the median of --repeats runs, with their spread (min, max). Each case first
times an optimised sequential baseline (OpenCV on one thread, else SciPy/NumPy; an iterated
program's first few steps, scaled), whose output, written from the programs' documented semantics,
is the reference every device alone and an even split are checked against (which warms them up).
The sweep skips a split that cannot win (its slowest device's kernel and transfer seconds for its
rows exceed 1.3x the best so far) and shares --budget-s between the cases.

First the system model (imagecl/runtime/system_model.py) is calibrated on synthetic stencils
(each device alone, then a sweep of shares), and its predictions are compared on held-out synthetic
programs (leave one program out) with the analytic model, scikit-learn trees and boosting, and a
model tree (a shallow tree with a linear model per leaf, as the wavefront tuner's M5P).

"predicted" is split_tuning.predict, the analytic model, from one profile per device (no combination
measured); "predicted_system" is system_model.predict from the same profiles and the calibrated
terms; "tuned" refines the latter by measuring its neighbours (split_tuning.tune). The ratios come from a final
confirmation: each device alone, the predicted and tuned splits and the sweep's three fastest timed
again in --confirm-rounds interleaved rounds; "best" is the fastest of them.
About 5-6 minutes on a GPU host with --budget-s 150 (calibration under a minute); --quick for a small
local check. The report is written after each case, so a run stopped at its limit keeps its cases.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import platform
import statistics
import sys
import time
from typing import Optional
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

import imagecl  # noqa: E402
from imagecl.bench.wall import wall_times  # noqa: E402
from imagecl.errors import ConfigError  # noqa: E402
from imagecl.bench.split_cases import make_case  # noqa: E402
from imagecl.bench.split_confirm import confirm  # noqa: E402
from imagecl.runtime import multidevice, split_tuning, system_model  # noqa: E402
from imagecl.runtime.system_model import compositions  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def known_configs(program: str) -> dict:
    """Configurations tuned earlier, by device kind: {'GPU': cfg, 'CPU': cfg}."""
    found = {}
    try:
        found["GPU"] = json.loads((RESULTS / f"ground-{program}-gpu.json").read_text())["best_config"]
    except (OSError, ValueError, KeyError):
        pass
    try:
        for r in json.loads((RESULTS / "variants-cpu.json").read_text())["records"]:
            if r["file"] == f"{program}.icl":
                found["CPU"] = r["best_config"]
    except (OSError, ValueError, KeyError):
        pass
    return found


def config_for(prog, device, shape, program: str):
    import pyopencl as cl

    kind = "GPU" if device.type & cl.device_type.GPU else "CPU"
    candidates = [known_configs(program).get(kind)]
    if kind == "GPU":
        candidates.append({"wg_x": 32, "wg_y": 8} if prog.info.grid_dims == 2 else {"wg_x": 32, "wg_y": 4, "wg_z": 2})
    for config in candidates:
        if config is None:
            continue
        try:
            return prog.space_for(device, shape).complete(config)
        except ConfigError:
            continue
    return "naive"


def sequential(name: str, args: dict, steps: int | None, cv2=None):
    """The optimised sequential baseline: OpenCV on one thread (`cv2`), else SciPy's C filters and
    NumPy. Written from the programs' documented semantics, it is also the independent reference
    the devices' outputs are checked against (returns the output). OpenCV's median replicates the
    border where the program mirrors it: its two outer rows and columns are not compared
    (`reference_border`)."""
    from scipy import ndimage

    if name == "convolution9":
        if cv2 is not None:
            return cv2.filter2D(args["input"], -1, np.ascontiguousarray(args["filter"][::-1, ::-1]),
                                borderType=cv2.BORDER_REPLICATE)
        return ndimage.convolve(args["input"], args["filter"], mode="nearest")
    if name == "median":
        if cv2 is not None:
            return cv2.medianBlur(args["input"], 5)
        return ndimage.median_filter(args["input"], size=5, mode="mirror")
    if name not in ("heat", "conway"):
        raise ValueError(name)
    u = args["input"]
    for _ in range(steps or 1):
        u = _heat_step(u, float(args["alpha"]), cv2) if name == "heat" else _conway_step(u, cv2)
    return u


def _heat_step(u: np.ndarray, alpha: float, cv2) -> np.ndarray:
    if cv2 is not None:
        stencil = np.array([[0, alpha, 0], [alpha, 1 - 4 * alpha, alpha], [0, alpha, 0]], np.float32)
        return cv2.filter2D(u, -1, stencil, borderType=cv2.BORDER_REPLICATE)
    p = np.pad(u, 1, mode="edge")
    return u + np.float32(alpha) * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - np.float32(4.0) * u)


def _conway_step(u: np.ndarray, cv2) -> np.ndarray:
    if cv2 is not None:
        ring = np.ones((3, 3), np.float32)
        ring[1, 1] = 0
        count = cv2.filter2D(u.astype(np.float32), -1, ring, borderType=cv2.BORDER_CONSTANT)
    else:
        p = np.pad(u.astype(np.int16), 1)
        count = sum(p[1 + dy:p.shape[0] - 1 + dy, 1 + dx:p.shape[1] - 1 + dx]
                    for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx)
    return ((count == 3) | ((u == 1) & (count == 2))).astype(np.int8)


def one_thread_opencv():
    """OpenCV set to one thread, or None where it is not installed (SciPy then)."""
    try:
        import cv2
    except ImportError:
        return None
    cv2.setNumThreads(1)
    return cv2


SEQUENTIAL_STEPS = 4  # an iterated program's sequential baseline times this many steps, scaled to the rest


def timed_sequential(name: str, args: dict, steps: int | None, repeats: int, cv2) -> dict:
    """The sequential baseline's wall time: the median of `repeats` runs (one when a run takes over
    a second); an iterated program's steps cost the same each, so SEQUENTIAL_STEPS of them are
    timed and scaled to `steps`."""
    timed_steps = min(steps, SEQUENTIAL_STEPS) if steps else None
    runs = []
    while len(runs) < (1 if runs and runs[0] > 1.0 else repeats):
        start = time.perf_counter()
        sequential(name, args, timed_steps, cv2)
        runs.append((time.perf_counter() - start) * ((steps / timed_steps) if steps else 1))
    return {"median_s": statistics.median(runs), "min_s": min(runs), "max_s": max(runs), "runs": runs,
            "library": "OpenCV, one thread" if cv2 is not None else "SciPy/NumPy",
            "timed_steps": timed_steps}


def reference_border(name: str, cv2) -> int:
    """Rows and columns at each edge where the sequential reference's border differs from the program's."""
    return 2 if name == "median" and cv2 is not None else 0


def check_output(name: str, got: dict, reference: np.ndarray, border: int, what: str) -> None:
    out, ref = got["output"], reference
    if border:
        out, ref = out[border:-border, border:-border], ref[border:-border, border:-border]
    if ref.dtype.kind == "f":
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4, err_msg=f"{name}: {what}")
    else:
        assert np.array_equal(out, ref), f"{name}: {what} differs from the sequential reference"


def pruned_sweep(candidates: list, profiles: list, iterate: bool, steps: int, slack: float = 1.3):
    """The sweep's splits, those the analytic model puts fastest first, each paired with a lower
    bound on its time: the slowest taking part device's kernel and transfer seconds for its rows,
    which running beside others can only lengthen. A split whose bound exceeds `slack` times the
    best time measured so far cannot win and is skipped."""
    def bound(shares):  # an iterated program moves its band once, and runs its kernel at every step
        return max((s * (p.kernel * (steps if iterate else 1) + p.transfer) for s, p in zip(shares, profiles) if s > 0),
                   default=0.0)

    order = sorted(candidates, key=lambda c: split_tuning.predicted_seconds(profiles, c[0], iterate, steps))
    return [(c, bound(c[0]) / slack) for c in order]


def timed(call, repeats: int) -> dict:
    runs = wall_times(call, repeats, warmup=0)
    return {"median_s": statistics.median(runs), "min_s": min(runs), "max_s": max(runs), "runs": runs}


def bench_case(prog, name: str, args: dict, devices: list, configs: list, steps: int | None, repeats: int,
               step: float, hs: list[int], sweep_seconds: float, confirm_rounds: int = 7, terms=None,
               samples: list | None = None) -> dict:
    iterate = steps is not None

    def call(shares, h=None):
        if iterate:
            return multidevice.iterate(prog, steps, args, devices, shares, h or 1, configs)
        return multidevice.run(prog, args, devices, shares, configs)[0]

    singles = [[1.0 if i == j else 0.0 for i in range(len(devices))] for j in range(len(devices))]
    result = {"singles": [], "sweep": []}
    # the sequential baseline, timed first (on a quiet host); its output (of SEQUENTIAL_STEPS steps for
    # an iterated program) checks every device alone and an even split, which also warms them up
    cv2 = one_thread_opencv()
    result["sequential"] = timed_sequential(name, args, steps, repeats, cv2)
    check_steps = min(steps, SEQUENTIAL_STEPS) if iterate else None
    reference = sequential(name, args, check_steps, cv2)
    even = [1 / len(devices)] * len(devices)
    for shares in singles + [even]:
        got = (multidevice.iterate(prog, check_steps, args, devices, shares, 2, configs) if iterate
               else call(shares))
        check_output(name, got, reference, reference_border(name, cv2), f"shares {shares}")
    h0 = 1 if iterate else None
    for j, shares in enumerate(singles):
        result["singles"].append({"device": devices[j].name.strip(), "shares": shares, "h": h0,
                                  **timed(lambda: call(shares, h0), repeats)})
    profiles = [split_tuning.profile(prog, args, d, c, repeats) for d, c in zip(devices, configs)]
    predicted = split_tuning.predict(profiles, iterate, steps or 1)
    result["profiles"] = [{"device": p.device.name.strip(), "wall_s": p.wall, "kernel_s": p.kernel,
                           "transfer_s": p.transfer, "rows": p.rows} for p in profiles]
    h_predicted = split_tuning.predict_h(prog, predicted, profiles[0].rows, hs) if iterate else None
    result["predicted"] = {"shares": predicted, "h": h_predicted,
                           "model_s": split_tuning.predicted_seconds(profiles, predicted, iterate, steps or 1),
                           **timed(lambda: call(predicted, h_predicted), repeats)}
    depth = split_tuning.depth_of(prog) if iterate else 0
    result["depth"] = depth
    found = system_model.predict(terms, profiles, steps, depth, hs, groups=system_model.groups_of(devices))
    result["predicted_system"] = {"shares": found.shares, "h": found.h, "model_s": found.seconds,
                                  "model_single_s": found.single_seconds,
                                  **timed(lambda: call(found.shares, found.h), repeats)}
    tuned = split_tuning.tune(prog, args, devices, configs, repeats, iterate=steps, hs=hs, system=terms)
    result["tuned"] = {"shares": tuned.best.shares, "h": tuned.best.h, "median_s": tuned.best.seconds,
                       "runs": tuned.best.runs, "measurements": len(tuned.measured)}
    candidates = [(shares, h) for shares in compositions(len(devices), step)
                  for h in (hs if iterate and sum(1 for s in shares if s > 0) > 1 else [h0])]
    best_so_far = math.inf
    result["sweep_skipped"] = 0
    sweep_started = time.time()
    deadline = sweep_started + sweep_seconds
    for (shares, h), bound in pruned_sweep(candidates, profiles, iterate, steps or 1):
        if time.time() > deadline:
            result["sweep_cut_short"] = True
            break
        if bound > best_so_far:
            result["sweep_skipped"] += 1
            continue
        result["sweep"].append({"shares": shares, "h": h, **timed(lambda: call(shares, h), repeats)})
        best_so_far = min(best_so_far, result["sweep"][-1]["median_s"])
    result["sweep_seconds"] = time.time() - sweep_started
    if samples is not None and len(devices) == 2:
        # judged on the sweep (no confirmation round): the swept time at the nearest share (best h),
        # over the sweep's best, beside the analytic and system model's shares judged alike
        best_swept = min(r["median_s"] for r in result["sweep"])

        def swept(shares):
            near = min({tuple(r["shares"]) for r in result["sweep"]},
                       key=lambda sh: sum(abs(a - b) for a, b in zip(sh, shares)))
            return min(r["median_s"] for r in result["sweep"] if tuple(r["shares"]) == near)

        try:
            learned = learned_shares(samples, profiles, steps, depth)
        except Exception as exc:  # noqa: BLE001 - the case's measurements matter more
            result["learners_error"] = f"{type(exc).__name__}: {exc}"
            learned = {}
        result["on_the_sweep"] = {name: {"shares": [1 - v, v], "share_of_best": best_swept / swept([1 - v, v])}
                                  for name, v in learned.items()}
        for name, shares in (("analytic", predicted), ("system_model", found.shares)):
            result["on_the_sweep"][name] = {"shares": shares, "share_of_best": best_swept / swept(shares)}
    confirmed = confirm(call, result, confirm_rounds)
    result["confirmed"] = confirmed
    singles_c = [c for c in confirmed if c["role"] == "single"]
    best_single = min(singles_c, key=lambda r: r["median_s"])
    # the best split: the fastest confirmed candidate (the sweep's leaders, the prediction, the tuned split
    # and each device alone are all splits), so no share of it exceeds 100% by the sweep's noise
    best = min(confirmed, key=lambda r: r["median_s"])
    result["predicted"]["median_s"] = next(c["median_s"] for c in confirmed if c["role"] == "predicted")
    result["predicted_system"]["median_s"] = next(c["median_s"] for c in confirmed if c["role"] == "predicted_system")
    result["tuned"]["median_s"] = next(c["median_s"] for c in confirmed if c["role"] == "tuned")
    result["best"] = {"shares": best["shares"], "h": best["h"], "median_s": best["median_s"], "role": best["role"]}
    result["best_single"] = {"device": best_single["device"], "median_s": best_single["median_s"]}
    result["speedup_predicted_over_best_single"] = best_single["median_s"] / result["predicted"]["median_s"]
    result["speedup_tuned_over_best_single"] = best_single["median_s"] / result["tuned"]["median_s"]
    result["speedup_best_over_best_single"] = best_single["median_s"] / best["median_s"]
    result["speedup_tuned_over_sequential"] = result["sequential"]["median_s"] / result["tuned"]["median_s"]
    result["speedup_predicted_system_over_best_single"] = (best_single["median_s"]
                                                           / result["predicted_system"]["median_s"])
    # the predicted split's speed as a share of the best split's (1.0: as fast)
    result["predicted_share_of_best"] = best["median_s"] / result["predicted"]["median_s"]
    result["predicted_system_share_of_best"] = best["median_s"] / result["predicted_system"]["median_s"]
    result["tuned_share_of_best"] = best["median_s"] / result["tuned"]["median_s"]
    return result


# ---- the system model on held-out synthetic programs ---------------------------------------------------------


def _instances_of(samples: list) -> list[list]:
    """The samples grouped by synthetic program (they share its profiles, steps and depth)."""
    groups: dict = {}
    for smp in samples:
        groups.setdefault(json.dumps([smp.profiles, smp.steps, smp.depth]), []).append(smp)
    return list(groups.values())


def _time_at(group: list, shares: list[float]) -> float:
    """The measured time at the swept shares nearest `shares` (the best of its h): every method
    is judged on its shares alone, at the same grid."""
    near = min({tuple(smp.shares) for smp in group}, key=lambda sh: sum(abs(a - b) for a, b in zip(sh, shares)))
    return min(smp.seconds for smp in group if tuple(smp.shares) == near)


def _features(group: list) -> list[float]:
    """What a learned predictor sees of a synthetic or real program: each device's alone-profile
    (per-row and fixed seconds, relative to the first device's whole time), the rows and steps,
    and the analytic model's share."""
    smp = group[0]
    profiles = smp.profile_objects()
    iterate = smp.steps is not None
    steps = smp.steps or 1
    whole = [p.fixed(iterate) + steps * p.rows * p.per_row(iterate) for p in profiles]
    analytic = split_tuning.predict(profiles, iterate, steps)
    return ([math.log(whole[i] / whole[0]) for i in range(1, len(profiles))]
            + [p.fixed(iterate) / w for p, w in zip(profiles, whole)]
            + [math.log(whole[0]), math.log(profiles[0].rows), float(iterate), math.log(steps), smp.depth]
            + analytic[1:])


class ModelTree:
    """A shallow regression tree with a linear model in each leaf (the wavefront tuner's M5P, in
    scikit-learn's pieces)."""

    def __init__(self, depth: int = 2, leaf: int = 3) -> None:
        from sklearn.tree import DecisionTreeRegressor

        self.tree = DecisionTreeRegressor(max_depth=depth, min_samples_leaf=leaf, random_state=0)
        self.leaves: dict = {}

    def fit(self, x, y):
        from sklearn.linear_model import Ridge

        x, y = np.asarray(x), np.asarray(y)
        self.tree.fit(x, y)
        where = self.tree.apply(x)
        for leaf in set(where):
            self.leaves[leaf] = Ridge(alpha=1.0).fit(x[where == leaf], y[where == leaf])
        return self

    def predict(self, x):
        x = np.asarray(x)
        return np.array([self.leaves[leaf].predict(row[None, :])[0] for leaf, row in zip(self.tree.apply(x), x)])


def _tree():
    from sklearn.tree import DecisionTreeRegressor

    return DecisionTreeRegressor(max_depth=3, min_samples_leaf=2, random_state=0)


def _boosting():
    from sklearn.ensemble import GradientBoostingRegressor

    return GradientBoostingRegressor(n_estimators=60, max_depth=2, random_state=0)


LEARNERS = {"tree": _tree, "boosting": _boosting, "model_tree": ModelTree}


def learned_shares(samples: list, profiles: list, steps, depth: int) -> dict:
    """Each learner, trained on every synthetic program, predicts the second device's share of a
    real program from its alone-profiles (two devices only)."""
    groups = _instances_of(samples)
    x = [_features(g) for g in groups]
    y = [min(g, key=lambda s: s.seconds).shares[1] for g in groups]
    probe = [system_model.Sample([[p.rows, p.wall, p.kernel, p.transfer] for p in profiles], [1.0, 0.0], steps, 1,
                                 depth, 1.0)]
    return {name: float(np.clip(make().fit(x, y).predict([_features(probe)])[0], 0.0, 1.0))
            for name, make in LEARNERS.items()}


def held_out(samples: list, count: int, hs: list[int], device_groups: Optional[list[int]] = None) -> dict:
    """Leave one synthetic program out: each method predicts its shares from the others, judged
    by the measured time there as a share of its sweep's best."""
    groups = _instances_of(samples)
    scores: dict[str, list[float]] = {"analytic": [], "system_model": []}
    learners = LEARNERS if count == 2 else {}
    for name in learners:
        scores[name] = []
    for k, group in enumerate(groups):
        rest = [smp for j, g in enumerate(groups) if j != k for smp in g]
        best = min(smp.seconds for smp in group)
        smp = group[0]
        profiles = smp.profile_objects()
        analytic = split_tuning.predict(profiles, smp.steps is not None, smp.steps or 1)
        scores["analytic"].append(best / _time_at(group, analytic))
        terms = system_model.fit(rest, count, device_groups)
        found = system_model.predict(terms, profiles, smp.steps, smp.depth, hs, groups=device_groups)
        scores["system_model"].append(best / _time_at(group, found.shares))
        others = [g for j, g in enumerate(groups) if j != k]
        x = [_features(g) for g in others]
        y = [min(g, key=lambda s: s.seconds).shares[1] for g in others]
        for name, make in learners.items():
            share = float(np.clip(make().fit(x, y).predict([_features(group)])[0], 0.0, 1.0))
            scores[name].append(best / _time_at(group, [1 - share, share]))
    return {name: {"mean": statistics.mean(v), "min": min(v), "each": v} for name, v in scores.items() if v}


def real_sweeps_held_out(cases: list, count: int, hs: list[int],
                         device_groups: Optional[list[int]] = None) -> dict:
    """The model's form on the real programs: its terms fitted on the other real programs' sweeps
    (leave one out), its shares judged on the sweep. Tells a model that cannot express the
    system from synthetic programs that do not resemble the real ones."""
    groups = []
    for c in cases:
        prof = [[p["rows"], p["wall_s"], p["kernel_s"], p["transfer_s"]] for p in c["profiles"]]
        groups.append([system_model.Sample(prof, r["shares"], c["steps"], r["h"] or 1, c["depth"], r["median_s"])
                       for r in c["sweep"]])
    scores = []
    for k, group in enumerate(groups):
        rest = [smp for j, g in enumerate(groups) if j != k for smp in g]
        found = system_model.predict(system_model.fit(rest, count, device_groups), group[0].profile_objects(),
                                     group[0].steps, group[0].depth, hs, groups=device_groups)
        scores.append(min(smp.seconds for smp in group) / _time_at(group, found.shares))
    return {"mean": statistics.mean(scores), "min": min(scores), "each": scores}


def _guarded(analysis) -> dict:
    """An analysis of what was measured; its failure is reported, and the measurements kept."""
    try:
        return analysis()
    except Exception as exc:  # noqa: BLE001 - the run's measurements must reach the JSON
        return {"error": f"{type(exc).__name__}: {exc}"}


def calibrate(devices: list, quick: bool, repeats: int, hs: list[int], size: int = 2048) -> tuple:
    instances = (system_model.default_instances((160, 128), (2, 8)) if quick
                 else system_model.default_instances((size, size)))
    t0 = time.time()
    model = system_model.calibrate(devices, instances, repeats, log=lambda line: print(line, flush=True))
    seconds = time.time() - t0
    compared = _guarded(lambda: held_out(model.samples, len(devices), hs, system_model.groups_of(devices)))
    print(f"system model: {model.terms} (median error {model.fit_error:.0%}, {seconds:.0f} s)")
    for name, v in compared.items():
        if name == "error":
            continue
        print(f"  held-out synthetic programs, {name:12s}: {v['mean']:.0%} of the best split's speed on average, "
              f"{v['min']:.0%} at worst")
    return model, {"seconds": seconds, "terms": dataclasses.asdict(model.terms), "fit_error": model.fit_error,
                   "instances": [dataclasses.asdict(i) for i in instances], "held_out": compared,
                   "samples": [dataclasses.asdict(smp) for smp in model.samples]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default="nvidia,cpu", help="comma-separated devices (indices or name fragments)")
    parser.add_argument("--sizes", default="2048x2048,4096x4096", help="one-run programs' sizes, WxH,...")
    parser.add_argument("--iter-sizes", default="1024x1024,2048x2048", help="iterated programs' sizes")
    parser.add_argument("--steps", type=int, default=16, help="steps of the iterated programs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--confirm-rounds", type=int, default=7,
                        help="interleaved rounds that time the finalists again for the reported ratios")
    parser.add_argument("--step", type=float, default=None, help="sweep step (default 0.05; 0.1 for 3+ devices)")
    parser.add_argument("--hs", default="1,2,4,8")
    parser.add_argument("--budget-s", type=float, default=420, help="seconds of sweeping in all, shared by the cases left as each sweep starts")
    parser.add_argument("--quick", action="store_true", help="small sizes and a coarse sweep, for a local check")
    parser.add_argument("--calibration-size", type=int, default=2048,
                        help="the synthetic programs' larger side (and half of it); contention between devices "
                             "sharing the host's memory shows at sizes like the real programs'")
    parser.add_argument("--programs", default="convolution9,median,heat,conway",
                        help="which of the four programs (the first two run once, the others iterated)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.iter_sizes, args.steps, args.step = "96x80,160x128", "64x48,96x80", 6, 0.25
    devices = multidevice.resolve_devices(args.devices)
    step = args.step or (0.05 if len(devices) == 2 else 0.1)
    hs = [int(h) for h in args.hs.split(",")]
    started = time.time()
    model, calibration = calibrate(devices, args.quick, args.repeats, hs, args.calibration_size)
    terms = model.terms_for(devices)
    sweep_left = args.budget_s  # seconds of sweeping, shared by the cases left when each sweep starts
    rng = np.random.default_rng(0)
    wanted = args.programs.split(",")
    plan = [(p, s, None) for p in ("convolution9", "median") if p in wanted for s in args.sizes.split(",")]
    plan += [(p, s, args.steps) for p in ("heat", "conway") if p in wanted for s in args.iter_sizes.split(",")]
    cases = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save(summary) -> None:
        """The report so far (after each case, so that a run stopped at its limit keeps its cases)."""
        out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                                   "host": platform.node(), "devices": [d.name.strip() for d in devices],
                                   "command": " ".join(sys.argv), "summary": summary, "calibration": calibration,
                                   "cases": cases}, indent=1) + "\n")

    for name, size, steps in plan:
        w, h = (int(v) for v in size.lower().split("x"))
        prog = imagecl.load(ROOT / "examples" / f"{name}.icl")
        case_args = make_case(name, (h, w), rng)
        configs = [config_for(prog, d, (h, w), name) for d in devices]
        # each sweep gets the budget left, shared by the cases left
        left = len(plan) - len(cases)
        t0 = time.time()
        result = bench_case(prog, name, case_args, devices, configs, steps, args.repeats, step, hs,
                            max(5.0, sweep_left / left),
                            args.confirm_rounds, terms, model.samples)
        sweep_left -= result["sweep_seconds"]
        result.update({"program": name, "size": [w, h], "steps": steps, "configs": configs,
                       "seconds_spent": time.time() - t0})
        cases.append(result)
        save(None)
        print(f"{name:13s} {size:>10s}{'' if steps is None else f' x{steps}':>5s}: best single "
              f"{result['best_single']['median_s'] * 1e3:9.3f} ms ({result['best_single']['device'][:24]}), "
              f"predicted {result['predicted']['median_s'] * 1e3:9.3f} ms "
              f"[{', '.join(f'{s:.2f}' for s in result['predicted']['shares'])}], "
              f"tuned {result['tuned']['median_s'] * 1e3:9.3f} ms, best {result['best']['median_s'] * 1e3:9.3f} ms "
              f"[{', '.join(f'{s:.2f}' for s in result['best']['shares'])}"
              + (f", h {result['best']['h']}" if steps else "") + "]; "
              f"speed-up tuned/best single {result['speedup_tuned_over_best_single']:.2f}x, "
              f"tuned/sequential {result['speedup_tuned_over_sequential']:.1f}x, "
              f"predicted {result['predicted_share_of_best']:.0%} of best, with the system model "
              f"{result['predicted_system_share_of_best']:.0%} "
              f"[{', '.join(f'{s:.2f}' for s in result['predicted_system']['shares'])}]", flush=True)
    shares = [c["predicted_share_of_best"] for c in cases]
    system_shares = [c["predicted_system_share_of_best"] for c in cases]
    summary = {"mean_predicted_share_of_best": statistics.mean(shares), "min_predicted_share_of_best": min(shares),
               "mean_predicted_system_share_of_best": statistics.mean(system_shares),
               "min_predicted_system_share_of_best": min(system_shares),
               "calibration_s": calibration["seconds"],
               "held_out_synthetic": {k: {"mean": v["mean"], "min": v["min"]} if isinstance(v, dict) else v
                                      for k, v in calibration["held_out"].items()},
               "real_cases_on_the_sweep": {k: {"mean": statistics.mean(c["on_the_sweep"][k]["share_of_best"]
                                                                     for c in cases),
                                               "min": min(c["on_the_sweep"][k]["share_of_best"] for c in cases)}
                                           for k in (cases[0].get("on_the_sweep") or {})
                                           if all(k in c.get("on_the_sweep", {}) for c in cases)},
               "real_sweeps_held_out": _guarded(lambda: {k: v for k, v in real_sweeps_held_out(
                   cases, len(devices), hs, system_model.groups_of(devices)).items() if k != "each"}),
               "mean_tuned_share_of_best": statistics.mean(c["tuned_share_of_best"] for c in cases)}
    print(f"predicted split: {summary['mean_predicted_share_of_best']:.0%} of the best split's speed on average, "
          f"{summary['min_predicted_share_of_best']:.0%} at worst; tuned {summary['mean_tuned_share_of_best']:.0%} "
          f"on average ({time.time() - started:.0f} s)")
    print(f"predicted with the system model: {summary['mean_predicted_system_share_of_best']:.0%} on average, "
          f"{summary['min_predicted_system_share_of_best']:.0%} at worst")
    v = summary["real_sweeps_held_out"]
    if "error" not in v:
        print(f"  the model's terms fitted on the other real programs' sweeps instead: {v['mean']:.0%} on average, "
              f"{v['min']:.0%} at worst (judged on the sweep)")
    for name, v in summary["real_cases_on_the_sweep"].items():
        print(f"  real programs judged on the sweep, {name:12s}: {v['mean']:.0%} on average, {v['min']:.0%} at worst")
    save(summary)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
