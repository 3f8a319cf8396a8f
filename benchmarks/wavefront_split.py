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
is not counted), the best of two (three with --quick, whose runs are short enough to be noisy). The sequential baseline is the CPU device computing the whole
grid as one tile (one work-item, row-major: compiled C on one core). Every split's output is
compared bit for bit with the sequential run's (a real program's) or the first split's (a
synthetic instance's, whose sequential run would take longer than all its splits). The input
arrays are uploaded before the clock starts; the output's transfers are timed.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import imagecl
from imagecl.wavefront import model as wm
from imagecl.wavefront.api import sequential
from imagecl.wavefront.devices import wavefront_devices
from imagecl.wavefront.split import Split, split_space
from imagecl.wavefront.synthetic import Instance
from imagecl.wavefront.tune import measure_splits

ROOT = Path(__file__).resolve().parent.parent

FULL = {"dims": [256, 1024, 2560], "tsizes": [1, 16, 128, 512], "dsizes": [1, 4],
        "real_sizes": [1024, 2048], "cpu_tiles": [8, 32, 128], "gpu_tiles": [1, 16], "halos": [1, 4, 16],
        "repeats": 2}
QUICK = {"dims": [24, 48], "tsizes": [1, 200], "dsizes": [1, 4], "real_sizes": [40],
         "cpu_tiles": [4, 16], "gpu_tiles": [1, 4], "halos": [1, 4], "repeats": 3}
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
                              sequential_reference=kind == "program")
    if len(measured.seconds) < len(splits):
        return None  # cut by the time limit: an incomplete space would flatter the prediction
    scalars = {k: v for k, v in arguments.items() if k not in program.info.arrays}
    record = {"kind": kind, "name": name, "width": width, "height": height,
              "work": wm.work_per_point(program, scalars, devices), "data": wm.data_per_point(program),
              "splits": [[s.as_config(), t] for s, t in measured.seconds.items()],
              "wrong": [s.as_config() for s in measured.wrong], "seconds_measuring": time.perf_counter() - started,
              **extra}
    if kind == "program":  # the sequential run is a split of the space (one tile of the whole grid)
        record["sequential"] = measured.seconds[sequential(width, height)]
    return record


def evaluate(records, models):
    """Each model trained on the synthetic records, asked for each real record's split."""
    train = [r for r in records if r["kind"] == "synthetic"]
    real = [r for r in records if r["kind"] == "program"]
    out = {}
    for name in models:
        if len(train) < 2:
            break
        started = time.perf_counter()
        model = wm.make(name).fit(train)
        rows = []
        for r in real:
            measured = {Split.of(s): t for s, t in r["splits"]}
            features = wm.Features(r["width"], r["height"], r["work"], r["data"])
            choice = model.choose(features, list(measured))
            row = {"name": r["name"], "width": r["width"], "split": choice.as_config(),
                   "share": wm.share(choice, measured)}
            if hasattr(model, "rank"):  # what the live tuner reaches measuring the model's first three
                top = model.rank(features, list(measured))[:3]
                row["share_top3"] = min(measured.values()) / min(measured[s] for s in top)
            rows.append(row)
        shares = [row["share"] for row in rows]
        top3 = [row["share_top3"] for row in rows if "share_top3" in row]
        out[name] = {"rows": rows, "mean_share": sum(shares) / len(shares) if shares else None,
                     "mean_share_top3": sum(top3) / len(top3) if top3 else None,
                     "min_share": min(shares) if shares else None, "seconds": time.perf_counter() - started}
    return out


def cross_validate(records, models, folds=4):
    """Synthetic instances held out by fold: the share of the best split each model reaches."""
    train = [r for r in records if r["kind"] == "synthetic"]
    out = {}
    if len(train) < folds:
        return out
    for name in models:
        shares = []
        for k in range(folds):
            held = [r for i, r in enumerate(train) if i % folds == k]
            model = wm.make(name).fit([r for i, r in enumerate(train) if i % folds != k])
            for r in held:
                measured = {Split.of(s): t for s, t in r["splits"]}
                choice = model.choose(wm.Features(r["width"], r["height"], r["work"], r["data"]), list(measured))
                shares.append(wm.share(choice, measured))
        out[name] = {"mean_share": sum(shares) / len(shares), "min_share": min(shares), "n": len(shares)}
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="the GPUs: a name fragment (default: every GPU, else the "
                                                       "devices other than the CPU)")
    parser.add_argument("--cpu", default=None, help="the CPU device (default: the first CPU device)")
    parser.add_argument("--out", default="benchmarks/results/wavefront_split.json")
    parser.add_argument("--quick", action="store_true", help="a small grid (for a test on PoCL)")
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds of measuring (default 300)")
    parser.add_argument("--models", default=",".join(wm.PERF_MODELS + (wm.SEED_MODEL,)))
    args = parser.parse_args(argv)
    grid = QUICK if args.quick else FULL
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
    models = [m for m in args.models.split(",") if m]
    result = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "devices": devices.describe(),
              "grid": {k: grid[k] for k in ("cpu_tiles", "gpu_tiles", "halos")}, "settings": grid,
              "instances": records, "speedups": speedups(records), "models": evaluate(records, models),
              "cross_validation": cross_validate(records, models), "seconds": time.perf_counter() - start}
    wrong = sum(len(r["wrong"]) for r in records)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"\n{len(records)} instances measured ({sum(len(r['splits']) for r in records)} splits, "
          f"{wrong} with another output than the sequential run) in {result['seconds']:.0f} s")
    for row in result["speedups"]:
        print(f"{row['name']:>20} {row['width']:>5}: best {row['best'] * 1e3:9.2f} ms  "
              f"x{row['over_single_device']:.2f} over the best single device, x{row['over_sequential']:.2f} over "
              f"sequential  {row['best_split']}")
    for name, m in result["models"].items():
        cv = result["cross_validation"].get(name, {})
        if m["mean_share"] is None:
            continue
        top3 = f" (best of its first 3: {m['mean_share_top3']:.1%})" if m.get("mean_share_top3") else ""
        print(f"{name:>18}: real programs mean {m['mean_share']:.1%} min {m['min_share']:.1%}{top3}"
              + (f"; synthetic held out mean {cv['mean_share']:.1%} min {cv['min_share']:.1%}" if cv else ""))
    print(f"written to {args.out}")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
