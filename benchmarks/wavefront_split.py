"""Wavefront splits between the CPU and the GPUs (issue 22, seed 003): every split of a small grid
measured on synthetic instances (dim, tsize, dsize) and on real wavefront programs, models trained
on the synthetic ones predict the real programs' splits, and the prediction's time is reported as a
share of the best split's.

    PYTHONPATH=$PWD python3 benchmarks/wavefront_split.py --device nvidia --out $OUT/wavefront_split.json

`--device` names the GPUs (a name fragment: every device it matches; "cpu" makes the CPU device
play the GPU too); the CPU is the first CPU device (PoCL). The measurements stop at
`--time-limit` seconds (default 300: real programs first, for at most 45% of it, then synthetic
instances in an interleaved order, so that a cut keeps the grid's corners); the models then train
and predict (about a minute). Expect about 7 minutes in all on the GPU host.
Times are wall-clock times of one whole run (uploads, launches, halo swaps, downloads; the build
is not counted): each split runs once to warm up, then its time is the median of 3 timed runs
(6 when their spread exceeds 20%); a split whose warm-up took over 3x the best median so far
is run once more and keeps that run's time if it too took over 3x (listed in the record's
"once"). The sequential baseline is the CPU device computing the whole grid as one tile (one
work-item, row-major: compiled C on one core). Every split's output is compared bit for bit with the sequential run's (a real program's) or the first
split's (a synthetic instance's, whose sequential run would take longer than all its splits). The
input arrays are uploaded before the clock starts; the output's transfers are timed.

`cost_model_profiled` is the cost model calibrated by two alone-profiles of the program itself (its
predicted best split all on the CPU and all on the GPUs, read from the measurements), as
`imagecl tune` measures them first; the other models see no measurement of the program.
Each model's share of the best split is reported twice: as measured, and pooled (splits that run
the grid the same way, e.g. a band over the whole grid with any CPU tile, taken as one: the
median of their measurements), which older files with such duplicates need.

`--from FILE` evaluates the models on a stored output of this script, without a device
(`--out` then names the evaluation's JSON; a Markdown summary is written beside it).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import imagecl
from imagecl.wavefront import cost_model as cm
from imagecl.wavefront import model as wm
from imagecl.wavefront.api import sequential
from imagecl.wavefront.devices import wavefront_devices
from imagecl.wavefront.split import Split, same_execution, split_space
from imagecl.wavefront.synthetic import Instance
from imagecl.wavefront.tune import measure_splits

ROOT = Path(__file__).resolve().parent.parent

FULL = {"dims": [256, 1024, 2560], "tsizes": [1, 16, 128, 512], "dsizes": [1, 4],
        "real_sizes": [1024, 2048], "cpu_tiles": [8, 32, 128], "gpu_tiles": [1, 16], "halos": [1, 4, 16],
        "repeats": 3}
QUICK = {"dims": [24, 48], "tsizes": [1, 200], "dsizes": [1, 4], "real_sizes": [40],
         "cpu_tiles": [4, 16], "gpu_tiles": [1, 4], "halos": [1, 4], "repeats": 3}
SLOWER_THAN = 3.0  # a split whose warm-up and next run took this many times the best median so far: timed once
REAL = {"needleman_wunsch": {"match": 2, "mismatch": -1, "gap": 1}, "lcs": {}, "dtw": {},
        "wavefront_synthetic": {"tsize": 256}}


def interleaved(items: list) -> list:
    """Corners and middles first: the order in which a time limit cuts the grid least."""
    out, step = [], len(items)
    while step >= 1:
        for i in range(0, len(items), step):
            if items[i] not in out:
                out.append(items[i])
        step //= 2
    return out


def measure_instance(name, program, arguments, width, height, devices, grid, deadline, kind, extra):
    splits = split_space(width, height, len(devices.gpus), cpu_tiles=grid["cpu_tiles"],
                         gpu_tiles=grid["gpu_tiles"], halos=grid["halos"])
    started = time.perf_counter()
    # a synthetic instance's splits are compared with each other (the tests compare them with NumPy);
    # a real program's with its sequential run, which its speed-up needs anyway
    measured = measure_splits(program, arguments, devices, splits, repeats=grid["repeats"], deadline=deadline,
                              sequential_reference=kind == "program", slower_than=SLOWER_THAN)
    if len(measured.seconds) < len(splits):
        return None  # cut by the time limit: an incomplete space would flatter the prediction
    scalars = {k: v for k, v in arguments.items() if k not in program.info.arrays}
    record = {"kind": kind, "name": name, "width": width, "height": height,
              "work": wm.work_per_point(program, scalars, devices), "data": wm.data_per_point(program),
              "splits": [[s.as_config(), t] for s, t in measured.seconds.items()],
              "wrong": [s.as_config() for s in measured.wrong], "once": [s.as_config() for s in measured.once],
              "spread": [[s.as_config(), v] for s, v in measured.spread.items()],
              "cpu_units": int(devices.cpu.max_compute_units), "seconds_measuring": time.perf_counter() - started,
              **extra}
    if kind == "program":  # the sequential run is a split of the space (one tile of the whole grid)
        record["sequential"] = measured.seconds[sequential(width, height)]
    return record


PROFILED = "cost_model_profiled"  # the cost model calibrated by the program's all-CPU and all-GPU runs
MODELS = (wm.COST_MODEL, PROFILED) + wm.PERF_MODELS + (wm.SEED_MODEL,)


def _make(name: str):
    return wm.make(wm.COST_MODEL if name == PROFILED else name)


def _judge(model, record, profiled: bool = False) -> dict:
    """The model's split for `record` and its shares of the best (as measured, pooled, and the best
    of the model's first three distinct executions, pooled: what the live tuner measures first).
    `profiled`: the cost model calibrated first by the record's own measurements of its two
    alone-profiles (cost_model.profile_splits), as a live run would measure them."""
    measured = {Split.of(s): t for s, t in record["splits"]}
    w, h = record["width"], record["height"]
    features = wm.Features(w, h, record["work"], record["data"])
    # the measuring host's GPUs: its split space went up to all of them, so its measured splits do
    gpus = max(s.gpu_count for s in measured)
    if profiled:
        profiles = cm.profile_splits(model, features, list(measured), gpus)
        model = cm.calibrated(model, features, {s: measured[s] for s in profiles})
    choice = model.choose(features, list(measured), gpus)
    row = {"name": record["name"], "width": w, "split": choice.as_config(), "share": wm.share(choice, measured),
           "share_pooled": wm.pooled_share(choice, measured, w, h)}
    if hasattr(model, "rank"):  # the first three distinct executions, pooled (older files measured some twice)
        top: dict = {}
        for s in model.rank(features, list(measured), gpus):
            top.setdefault(same_execution(s, w, h), s)
            if len(top) == 3:
                break
        row["share_top3"] = max(wm.pooled_share(s, measured, w, h) for s in top.values())
    return row


def _summary(rows: list, seconds: float) -> dict:
    def stat(key, fn):
        values = [r[key] for r in rows if key in r]
        return fn(values) if values else None

    mean = lambda v: sum(v) / len(v)  # noqa: E731
    return {"rows": rows, "mean_share": stat("share", mean), "min_share": stat("share", min),
            "mean_share_pooled": stat("share_pooled", mean), "min_share_pooled": stat("share_pooled", min),
            "mean_share_top3": stat("share_top3", mean), "n": len(rows), "seconds": seconds}


def evaluate(records, models):
    """Each model trained on the synthetic records, asked for each real record's split."""
    train = [r for r in records if r["kind"] == "synthetic"]
    real = [r for r in records if r["kind"] == "program"]
    out = {}
    for name in models:
        if len(train) < 2:
            break
        started = time.perf_counter()
        model = _make(name).fit(train)
        out[name] = _summary([_judge(model, r, name == PROFILED) for r in real], time.perf_counter() - started)
    return out


def cross_validate(records, models, folds=4):
    """Synthetic instances held out by fold: the share of the best split each model reaches."""
    train = [r for r in records if r["kind"] == "synthetic"]
    out = {}
    if len(train) < folds:
        return out
    for name in models:
        started = time.perf_counter()
        rows = []
        for k in range(folds):
            model = _make(name).fit([r for i, r in enumerate(train) if i % folds != k])
            rows += [_judge(model, r, name == PROFILED) for i, r in enumerate(train) if i % folds == k]
        out[name] = _summary(rows, time.perf_counter() - started)
    return out


def speedups(records):
    rows = []
    for r in records:
        if r["kind"] != "program":
            continue
        measured = {Split.of(s): t for s, t in r["splits"]}
        best = min(measured, key=measured.get)
        cpu_only = min(t for s, t in measured.items() if s.gpu_count == 0)
        half = (r["width"] + r["height"] - 2) // 2 + 1
        gpu_only = [t for s, t in measured.items() if s.gpu_count == 1 and s.band >= half]
        single = min([cpu_only, r["sequential"]] + gpu_only)  # the sequential run is a single-device run too
        rows.append({"name": r["name"], "width": r["width"], "best_split": best.as_config(),
                     "best": measured[best], "cpu_only": cpu_only, "gpu_only": min(gpu_only) if gpu_only else None,
                     "sequential": r["sequential"], "over_single_device": single / measured[best],
                     "over_sequential": r["sequential"] / measured[best]})
    return rows


def markdown(result: dict, source: str) -> str:
    """The models' shares of the best split as a Markdown summary."""
    lines = [f"# Wavefront split prediction ({result['date']})", "",
             f"Measurements: `{source}` ({result['devices']}); {len(result['instances'])} instances.",
             "Share of the best measured split's speed; 'pooled': splits that run the grid the same way "
             "taken as one (the median of their measurements); 'first 3': the best of the model's first "
             "three picks that are distinct executions, pooled (what the live tuner measures first).", "",
             "| model | real mean | real worst | real mean, pooled | real worst, pooled | real, first 3 | "
             "held-out synthetic mean | worst | pooled mean | pooled worst |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    pct = lambda v: "-" if v is None else f"{v:.1%}"  # noqa: E731
    for name, m in result["models"].items():
        cv = result["cross_validation"].get(name, {})
        lines.append(f"| {name} | {pct(m['mean_share'])} | {pct(m['min_share'])} | {pct(m.get('mean_share_pooled'))} "
                     f"| {pct(m.get('min_share_pooled'))} | {pct(m.get('mean_share_top3'))} | "
                     f"{pct(cv.get('mean_share'))} | {pct(cv.get('min_share'))} | {pct(cv.get('mean_share_pooled'))} "
                     f"| {pct(cv.get('min_share_pooled'))} |")
    lines += ["", "Per real case (share as measured / pooled):", "",
              "| case | " + " | ".join(result["models"]) + " |", "| --- |" + " ---: |" * len(result["models"])]
    cases = [(r["name"], r["width"]) for r in next(iter(result["models"].values()), {"rows": []})["rows"]]
    for i, (name, width) in enumerate(cases):
        cells = []
        for m in result["models"].values():
            row = m["rows"][i]
            cells.append(f"{row['share']:.1%} / {row['share_pooled']:.1%}")
        lines.append(f"| {name} {width}² | " + " | ".join(cells) + " |")
    noise = result.get("repeated_executions") or {}
    if noise.get("n"):
        lines += ["", f"Noise: {noise['n']} executions were measured more than once as different splits (a band "
                      "over the whole grid with each CPU tile); the fastest of their measurements is "
                      f"{noise['mean_fastest_over_mean']:.1%} of their mean on average, "
                      f"{noise['min_fastest_over_mean']:.1%} at worst."]
    terms = result.get("cost_model_terms")
    if terms:
        lines += ["", f"Cost model fitted on every synthetic instance: CPU cores {terms['cpu_units']}, relative "
                      f"RMS error {terms['residual']:.1%} on its training splits; costs (seconds per unit):", "",
                  "| term | cost |", "| --- | ---: |"]
        lines += [f"| {k} | {v:.3g} |" for k, v in terms["cost"].items()]
    return "\n".join(lines) + "\n"


def print_models(result: dict) -> None:
    for name, m in result["models"].items():
        cv = result["cross_validation"].get(name, {})
        if m["mean_share"] is None:
            continue
        top3 = f", best of its first 3 pooled {m['mean_share_top3']:.1%}" if m.get("mean_share_top3") else ""
        print(f"{name:>18}: real programs mean {m['mean_share']:.1%} min {m['min_share']:.1%} (pooled "
              f"{m['mean_share_pooled']:.1%} / {m['min_share_pooled']:.1%}{top3})"
              + (f"; synthetic held out mean {cv['mean_share']:.1%} min {cv['min_share']:.1%} (pooled "
                 f"{cv['mean_share_pooled']:.1%} / {cv['min_share_pooled']:.1%})" if cv else ""))


def repeated_executions(records: list) -> dict:
    """Executions measured more than once as different splits (same_execution): the fastest of
    their measurements over their mean, the noise every share carries."""
    ratios = []
    for r in records:
        groups: dict = {}
        for s, t in r["splits"]:
            groups.setdefault(same_execution(Split.of(s), r["width"], r["height"]), []).append(t)
        ratios += [min(v) / (sum(v) / len(v)) for v in groups.values() if len(v) > 1]
    return {"n": len(ratios), "mean_fastest_over_mean": sum(ratios) / len(ratios) if ratios else None,
            "min_fastest_over_mean": min(ratios) if ratios else None}


def model_results(records: list, models: list) -> dict:
    out = {"models": evaluate(records, models), "cross_validation": cross_validate(records, models),
           "repeated_executions": repeated_executions(records)}
    train = [r for r in records if r["kind"] == "synthetic"]
    if wm.COST_MODEL in models and len(train) >= 2:
        terms = wm.make(wm.COST_MODEL).fit(train).terms
        out["cost_model_terms"] = {"cpu_units": terms.cpu_units, "residual": terms.residual, "cost": terms.cost}
    return out


def write_outputs(result: dict, out: str, source: str) -> None:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
    path.with_suffix(".md").write_text(markdown(result, source))


def from_file(args, models: list) -> int:
    """The models evaluated on a stored output of this script: no device."""
    source = Path(args.source)
    try:
        stored = json.loads(source.read_text())
        records = stored["instances"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"{source}: not a wavefront_split.py output ({e})")
    started = time.perf_counter()
    result = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "source": str(source),
              "source_date": stored.get("date"), "devices": stored.get("devices", "?"), "instances_evaluated":
              [{"kind": r["kind"], "name": r["name"], "width": r["width"]} for r in records],
              "instances": [], **model_results(records, models)}
    result["instances"] = result.pop("instances_evaluated")
    result["seconds"] = time.perf_counter() - started
    write_outputs(result, args.out, str(source))
    print_models(result)
    print(f"written to {args.out} and {Path(args.out).with_suffix('.md')}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="the GPUs: a name fragment (default: every GPU, else the "
                                                       "devices other than the CPU)")
    parser.add_argument("--cpu", default=None, help="the CPU device (default: the first CPU device)")
    parser.add_argument("--out", default="benchmarks/results/wavefront_split.json")
    parser.add_argument("--quick", action="store_true", help="a small grid (for a test on PoCL)")
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds of measuring (default 300)")
    parser.add_argument("--real-sizes", default=None, metavar="N,N,...",
                        help="the real programs' grid sides (default 1024,2048; --quick: 40)")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--from", dest="source", default=None, metavar="FILE",
                        help="evaluate the models on a stored output of this script (no device)")
    args = parser.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}")
    if args.source:
        return from_file(args, models)
    grid = dict(QUICK if args.quick else FULL)
    if args.real_sizes:
        try:
            grid["real_sizes"] = [int(v) for v in args.real_sizes.split(",")]
        except ValueError:
            parser.error(f"--real-sizes takes grid sides separated by commas, not {args.real_sizes!r}")
        if any(v < 2 for v in grid["real_sizes"]):
            parser.error("--real-sizes: every side must be at least 2")
    devices = wavefront_devices(args.cpu, [args.device] if args.device else None)
    print(f"devices: {devices.describe()}", flush=True)
    start = time.perf_counter()
    deadline = start + args.time_limit
    records = []
    examples = ROOT / "examples" / "wavefront"
    for size in grid["real_sizes"]:
        for name, scalars in REAL.items():
            program = imagecl.load(examples / f"{name}.icl")
            arguments = {**wm.instance_arguments(program, size, size, scalars), **scalars}
            record = measure_instance(name, program, arguments, size, size, devices, grid,
                                      min(deadline, start + 0.45 * args.time_limit), "program", {})
            if record is None:
                print(f"{name} {size}: cut by the time limit", flush=True)
                continue
            records.append(record)
            print(f"{name} {size}x{size}: {len(record['splits'])} splits, best "
                  f"{min(t for _, t in record['splits']) * 1e3:.2f} ms, sequential {record['sequential'] * 1e3:.2f} ms",
                  flush=True)
    synthetic = interleaved([Instance(d, t, s) for d in grid["dims"] for t in grid["tsizes"] for s in grid["dsizes"]])
    for inst in synthetic:
        if time.perf_counter() > deadline:
            break
        record = measure_instance(f"synthetic-{inst.dim}-{inst.tsize}-{inst.dsize}", inst.program(), inst.arguments(),
                                  inst.dim, inst.dim, devices, grid, deadline, "synthetic",
                                  {"tsize": inst.tsize, "dsize": inst.dsize})
        if record is not None:
            records.append(record)
            print(f"synthetic dim {inst.dim} tsize {inst.tsize} dsize {inst.dsize}: best "
                  f"{min(t for _, t in record['splits']) * 1e3:.2f} ms", flush=True)
    result = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "devices": devices.describe(),
              "grid": {k: grid[k] for k in ("cpu_tiles", "gpu_tiles", "halos")}, "settings": grid,
              "instances": records, "speedups": speedups(records), **model_results(records, models)}
    result["seconds"] = time.perf_counter() - start
    wrong = sum(len(r["wrong"]) for r in records)
    write_outputs(result, args.out, args.out)
    print(f"\n{len(records)} instances measured ({sum(len(r['splits']) for r in records)} splits, "
          f"{wrong} with another output than the sequential run) in {result['seconds']:.0f} s")
    for row in result["speedups"]:
        print(f"{row['name']:>20} {row['width']:>5}: best {row['best'] * 1e3:9.2f} ms  "
              f"x{row['over_single_device']:.2f} over the best single device, x{row['over_sequential']:.2f} over "
              f"sequential  {row['best_split']}")
    print_models(result)
    print(f"written to {args.out}")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
