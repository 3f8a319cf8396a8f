"""`imagecl tune` for real (not replayed), against the exhaustive ground truth's best (issue 5).

    python benchmarks/live_tuning.py --device gpu --out DIR   (the first NVIDIA device)
    python benchmarks/live_tuning.py --device cpu --out DIR   (PoCL)
    python benchmarks/live_tuning.py --device gpu-transfer --out DIR
    python benchmarks/live_tuning.py --device cpu-large --only sobel --only bilateral --out DIR

`--device cpu-large` tunes the three programs at the sizes of the CPU ground truths (`--variant
cpu-large`), with 1% of their subspaces as the budget and three random streams each, and times
the tuned configuration together with the ground truth's 3 fastest, in interleaved rounds, in
the same process (`_alongside`): on the 16-core Xeon, timings drift between sessions by more
than the 2% the tuner is held to. Then bilateral and convolution are tuned into one database and
sobel, three times, starts from their best configurations (transfer). `--only` picks cases by
name, to spread a set over commands.

`--device gpu-transfer` tunes sobel and bilateral into one database, then convolution with their
best configurations as its first measurements (transfer seeds) and without (cold), three times
each with different random streams, in the same session.

For each case, `imagecl tune` searches the program's WHOLE space (millions of configurations
for convolution; the ground truths cover subspaces of it) with the default tuner and a budget of
measurements, then the best configuration of the matching ground truth
(benchmarks/results/ground-*.json) is measured in the same machine session with
`imagecl measure`, so that the two times are comparable even on a device whose timings drift
between sessions (the CPU). The problem-size case tunes sobel at 2048x2048 first, then at
4096x4096 into the same database: the second run trains its model on the first run's
measurements too (the problem size is a model input, section 5.4 of Falch & Elster), and is
compared with a cold run at 4096x4096 with the same budget.

Writes DIR/live-<device>.json and prints one line per case.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"

# (name, program, size, budget, ground truth whose best is measured alongside, database group[, tune options])
CASES = {
    "gpu": [("convolution9", "convolution9.icl", "4096x4096", 100, "ground-convolution9-gpu-large", None),
            ("sobel cold", "sobel.icl", "4096x4096", 60, "ground-sobel-gpu-large", None),
            ("sobel 2048 (first size)", "sobel.icl", "2048x2048", 60, None, "sizes"),
            ("sobel with 2048's data", "sobel.icl", "4096x4096", 60, "ground-sobel-gpu-large", "sizes")],
    "cpu": [("sobel", "sobel.icl", "2048x2048", 40, "ground-sobel-cpu", None),
            ("convolution9", "convolution9.icl", "1024x1024", 40, "ground-convolution9-cpu", None)],
    # transfer: sobel and bilateral tuned into one database, then convolution starts from their
    # best configurations; three random streams with and without, in the same session
    "gpu-transfer": [("sobel (shared database)", "sobel.icl", "4096x4096", 60, None, "shared"),
                     ("bilateral (shared database)", "bilateral.icl", "256x128x128", 60, None, "shared")]
    + [(f"convolution9 {kind} seed {seed}", "convolution9.icl", "4096x4096", 100, "ground-convolution9-gpu-large",
        "shared" if kind == "transfer" else None, ("--seed", str(seed)))
       for seed in (0, 1, 2) for kind in ("transfer", "cold")],
    # the CPU ground truths' programs and sizes, with 1% of their subspace as the budget, three
    # random streams each; the tuned configuration is compared with the ground truth's 3 best
    # timed alongside it in interleaved rounds (`_alongside`): sessions on this CPU differ by more
    # than the target
    "cpu-large": [(f"{name} seed {seed}", f"{name}.icl", size, budget, f"ground-{name}-cpu-large", None,
                   ("--seed", str(seed)))
                  for name, size, budget in (("sobel", "2048x2048", 40), ("bilateral", "64x32x16", 44),
                                             ("convolution9", "1024x1024", 48))
                  for seed in (0, 1, 2)]
    # transfer on the CPU: bilateral and convolution tuned into one database, then sobel from their best
    + [("bilateral (shared database)", "bilateral.icl", "64x32x16", 44, None, "cpu-shared"),
       ("convolution9 (shared database)", "convolution9.icl", "1024x1024", 48, None, "cpu-shared")]
    + [(f"sobel transfer seed {seed}", "sobel.icl", "2048x2048", 40, "ground-sobel-cpu-large", "cpu-shared",
        ("--seed", str(seed))) for seed in (0, 1, 2)],
    # plumbing check on any machine: tiny sizes and budgets, no claim
    "smoke": [("sobel 128 (first size)", "sobel.icl", "128x128", 5, None, "sizes"),
              ("sobel with 128's data", "sobel.icl", "256x256", 5, "ground-sobel-cpu", "sizes"),
              ("bilateral (shared database)", "bilateral.icl", "16x8x8", 4, None, "sizes"),
              ("sobel with bilateral's best", "sobel.icl", "128x128", 5, None, "sizes", ("--seed", "1"))],
}


def _cli(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "imagecl", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


def _device_option(device) -> list[str]:
    return ["--device", device] if device else []


def _best_of_ground_truth(name: str, device: str, size: str, out: Path, timeout: float) -> dict:
    """The ground truth's best configuration, measured now."""
    truth = json.loads((RESULTS / f"{name}.json").read_text())
    config, program = truth["best_config"], truth["benchmark"] + ".icl"
    configs = out / f"{name}-best.json"
    configs.write_text(json.dumps([config]))
    db = out / f"{name}-best.db"
    done = _cli("measure", str(ROOT / "examples" / program), "--size", size, *_device_option(device),
                "--configs", str(configs), "--db", str(db), timeout=timeout)
    if done.returncode != 0:
        return {"error": done.stderr[-2000:]}
    records = json.loads(_cli("results", "--db", str(db), "--json", timeout=60).stdout)
    ok = [r for r in records if r["time"] is not None]
    return {"config": config, "seconds": ok[0]["time"] if ok else None,
            "recorded_ms": truth["best_ms"]}


def _alongside(benchmark: str, configuration: dict, device) -> dict:
    """The tuned configuration and the CPU ground truth's 3 fastest (`ground_truth.py --variant
    cpu-large`), measured now in one process and confirmed together (15 more launches each in 5
    interleaved rounds, `Measurer.retime`) on the ground truth's own inputs: the ratio of the
    tuned one to the fastest of the others."""
    import tempfile

    from imagecl.runtime.devices import select_device
    from imagecl.tuner.engine import MeasureOptions, Measurer
    from imagecl.tuner.store import Store, canonical_config
    from timing_noise import benchmark_setup, recorded_configs

    dev = select_device(device)
    prog, arguments, space = benchmark_setup(benchmark, dev)
    top = recorded_configs(RESULTS, benchmark, (0, 1, 2))
    configs = [space.complete(c) for c in [configuration, *top]]
    with tempfile.TemporaryDirectory(prefix="imagecl-alongside-") as tmp, Store(Path(tmp) / "a.db") as store, \
            Measurer(prog, arguments, store, dev, MeasureOptions(timeout=60, prebuild=False)) as measurer:
        measurer.measure(configs)
        confirmed = measurer.retime(configs, 15, 5)
    times = [confirmed[k].time if k in confirmed else None for k in map(canonical_config, configs)]
    others = [t for t in times[1:] if t is not None]
    return {"tuned_seconds": times[0], "ground_truth_top3_seconds": times[1:], "ground_truth_top3": top,
            "tuned_over_best_of_top3": times[0] / min(others) if times[0] and others else None}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", required=True, choices=sorted(CASES), help="nvidia/gpu or cpu")
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per tuning run")
    parser.add_argument("--only", action="append", metavar="TEXT",
                        help="only the cases whose name contains TEXT (repeatable): a long set over several commands")
    args = parser.parse_args(argv)
    device = {"gpu": "nvidia", "gpu-transfer": "nvidia", "cpu": "cpu", "cpu-large": "cpu", "smoke": None}[args.device]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, program, size, budget, truth, group, *extra in CASES[args.device]:
        if args.only and not any(text in name for text in args.only):
            continue
        options = list(extra[0]) if extra else []
        tag = name.split()[0] + "-" + size
        db = out / (f"live-{group}.db" if group else f"live-{tag}-{len(rows)}.db")
        start = time.time()
        try:
            done = _cli("tune", str(ROOT / "examples" / program), "--size", size, *_device_option(device),
                        "--budget", str(budget), "--db", str(db), "-o", str(out / f"live-{tag}-{len(rows)}"),
                        *options, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            rows.append({"case": name, "error": f"no result within {args.timeout:.0f} s"})
            print(json.dumps(rows[-1]), flush=True)
            continue
        row = {"case": name, "program": program, "size": size, "budget": budget, "seconds": time.time() - start}
        if done.returncode != 0:
            row["error"] = done.stderr[-2000:]
        else:
            stem = Path(program).stem
            description = json.loads((out / f"live-{tag}-{len(rows)}" / f"{stem}.json").read_text())
            row.update(tuned_seconds=description["measured_seconds"], configuration=description["configuration"],
                       log=[line for line in done.stderr.splitlines()
                            if line.startswith(("using", "confirmed", "starting from"))] + done.stdout.splitlines()[:1])
            if truth and args.device == "cpu-large":
                row["alongside"] = _alongside(Path(program).stem, description["configuration"], device)
                row["tuned_over_ground_truth_best"] = row["alongside"]["tuned_over_best_of_top3"]
            elif truth:
                row["ground_truth_best"] = _best_of_ground_truth(truth, device, size, out, args.timeout)
                best = row["ground_truth_best"].get("seconds")
                if best:
                    row["tuned_over_ground_truth_best"] = row["tuned_seconds"] / best
        rows.append(row)
        print(json.dumps(row), flush=True)
        _write_report(out, args.device, rows)  # after every case: a run cut short keeps what it has
    _write_report(out, args.device, rows)
    return 0


def _write_report(out: Path, device: str, rows: list) -> None:
    report = {"device": device, "date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv), "cases": rows}
    (out / f"live-{device}.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    sys.exit(main())
