"""How reproducible are launch times on a CPU device, and what makes them more so?

    python benchmarks/timing_noise.py --study settings --device cpu --launches 30 --rounds 2 --out DIR
    python benchmarks/timing_noise.py --study protocols --device cpu --repeats 4 --out DIR

`--study settings`: for each CPU ground truth (`ground_truth.py --variant cpu-large`), its 3
fastest recorded configurations and its median one are launched `--launches` times each, in
one process per PoCL setting, the settings taking turns for `--rounds` rounds (so a drift of
the machine shows as a difference between rounds, not between settings):

- `default`: PoCL as installed (one worker thread per core);
- `cu-1`: POCL_CPU_MAX_CU_COUNT one less than the cores, leaving a core to the host thread
  and the system, whose preemption of one worker otherwise holds up the whole launch;
- `affinity`: POCL_AFFINITY=1, worker threads pinned to cores.

Writes DIR/timing-noise-settings.json with every launch time, then prints per setting and
configuration the median, minimum, 10th/90th percentiles and the relative spread
(p90 - p10) / median.

`--study protocols`: how the contenders' order comes out of a confirmation (`Measurer.retime`,
15 more launches each) when they are timed one after the other (`rounds=1`, as before) and in
5 rounds that take them in turn (`rounds=5`, the default now). For each ground truth its 4
fastest recorded configurations are measured afresh and confirmed, `--repeats` times per
protocol, the protocols taking turns; the less the ratios between the contenders vary from one
repetition to the next, the more an order the protocol reports can be trusted. Writes
DIR/timing-noise-protocols.json and prints, per protocol, the spread of those ratios and how
often the repetitions agree on the winner.

Why: the tuner's target (within 2% of the best) is only checkable where one configuration's
timing varies by less than that between measurements.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

SETTINGS = ("default", "cu-1", "affinity")
NAMES = ("sobel", "bilateral", "convolution9")


def _environment(setting: str) -> dict:
    env = dict(os.environ)
    if setting == "cu-1":
        env["POCL_CPU_MAX_CU_COUNT"] = str(max(1, (os.cpu_count() or 2) - 1))
    elif setting == "affinity":
        env["POCL_AFFINITY"] = "1"
    return env


def recorded_configs(results: Path, name: str, ranks: tuple = (0, 1, 2, "median")) -> list[dict]:
    """Configurations of a recorded CPU ground truth by their rank (0: the fastest)."""
    cache = json.loads(gzip.open(results / f"ground-{name}-cpu-large.kt.json.gz").read())
    keys = cache["tune_params_keys"]
    rows = sorted((v["time"], k) for k, v in cache["cache"].items() if isinstance(v.get("time"), (int, float)))
    chosen = [rows[len(rows) // 2 if rank == "median" else rank] for rank in ranks]
    return [{p: cache["cache"][k][p] for p in keys} for _, k in chosen]


def benchmark_setup(name: str, device) -> tuple:
    """The program, inputs and space of a CPU ground truth (`ground_truth.py --variant cpu-large`)."""
    import imagecl
    from imagecl.bench.ground_truth import VARIANTS

    file, make, _ = VARIANTS["cpu-large"][name]
    prog = imagecl.load(ROOT / "examples" / file)
    arguments = make()
    first = next(v for v in arguments.values() if isinstance(v, np.ndarray))
    return prog, arguments, prog.space_for(device, first.shape[: prog.info.grid_dims])


def child(setting: str, device: str, launches: int, results: Path) -> dict:
    from imagecl.runtime.devices import select_device
    from imagecl.tuner.engine import MeasureOptions, Measurer
    from imagecl.tuner.store import Store, canonical_config

    dev = select_device(device)
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="imagecl-noise-") as tmp:
        for name in NAMES:
            prog, arguments, space = benchmark_setup(name, dev)
            configs = [space.complete(c) for c in recorded_configs(results, name)]
            options = MeasureOptions(timeout=60, repeats=launches, max_repeats=launches, prebuild=False)
            with Store(Path(tmp) / f"{name}.db") as store, Measurer(prog, arguments, store, dev, options) as m:
                m.measure(configs)
                stored = m.stored()
            records = [stored.get(canonical_config(c)) for c in configs]
            out[name] = [list(r.times) if r is not None and r.time is not None else None for r in records]
    return out


def protocols(device: str, repetitions: int, results: Path) -> dict:
    """{benchmark: {protocol: [[confirmed seconds of the 4 contenders] per repetition]}}."""
    from imagecl.runtime.devices import select_device
    from imagecl.tuner.engine import MeasureOptions, Measurer
    from imagecl.tuner.store import Store, canonical_config

    dev = select_device(device)
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="imagecl-noise-") as tmp:
        for name in NAMES:
            prog, arguments, space = benchmark_setup(name, dev)
            configs = [space.complete(c) for c in recorded_configs(results, name, (0, 1, 2, 3))]
            out[name] = {"sequential": [], "interleaved": []}
            for repetition in range(repetitions):
                for protocol, rounds in (("sequential", 1), ("interleaved", 5)):
                    db = Path(tmp) / f"{name}-{protocol}-{repetition}.db"
                    with Store(db) as store, Measurer(prog, arguments, store, dev,
                                                      MeasureOptions(timeout=60, prebuild=False)) as m:
                        m.measure(configs)
                        updated = m.retime(configs, 15, rounds)
                    out[name][protocol].append([updated[canonical_config(c)].time if canonical_config(c) in updated
                                                else None for c in configs])
    return out


def _protocol_summary(report: dict) -> list[str]:
    lines = [f"{'benchmark':13} {'protocol':12} {'sd of log ratio to #1':>22} {'same winner':>12}  ratios"]
    for name, by_protocol in report.items():
        for protocol, reps in by_protocol.items():
            reps = [r for r in reps if None not in r]
            ratios = np.array([[t / r[0] for t in r[1:]] for r in reps])
            sd = float(np.mean(np.std(np.log(ratios), axis=0, ddof=1))) if len(reps) > 1 else float("nan")
            winners = [int(np.argmin(r)) for r in reps]
            agree = max(winners.count(w) for w in set(winners)) / len(winners) if winners else 0.0
            shown = " | ".join(" ".join(f"{x:.3f}" for x in row) for row in ratios)
            lines.append(f"{name:13} {protocol:12} {100 * sd:21.1f}% {100 * agree:11.0f}%  {shown}")
    return lines


def _stats(times: list[float]) -> dict:
    t = np.array(times) * 1e3
    p10, p50, p90 = np.percentile(t, [10, 50, 90])
    return {"median_ms": p50, "min_ms": t.min(), "p10_ms": p10, "p90_ms": p90, "spread": (p90 - p10) / p50}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", choices=("settings", "protocols"), default="settings")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=4, help="repetitions of each protocol (--study protocols)")
    parser.add_argument("--launches", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--child", choices=SETTINGS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.device, args.launches, Path(args.results))))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.study == "protocols":
        report = {"device": args.device, "repeats": args.repeats, "date": time.strftime("%Y-%m-%d"),
                  "protocols": protocols(args.device, args.repeats, Path(args.results))}
        (out / "timing-noise-protocols.json").write_text(json.dumps(report))
        print("\n".join(_protocol_summary(report["protocols"])))
        return 0
    runs = []
    for round_ in range(args.rounds):
        for setting in SETTINGS:
            started = time.time()
            done = subprocess.run([sys.executable, __file__, "--child", setting, "--device", args.device,
                                   "--launches", str(args.launches), "--results", args.results],
                                  env=_environment(setting), capture_output=True, text=True)
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
                return 1
            runs.append({"round": round_, "setting": setting, "seconds": time.time() - started,
                         "times": json.loads(done.stdout.strip().splitlines()[-1])})
    report = {"device": args.device, "launches": args.launches, "date": time.strftime("%Y-%m-%d"), "runs": runs}
    (out / "timing-noise-settings.json").write_text(json.dumps(report))
    print(f"{'round':>5} {'setting':9} {'benchmark':13} {'config':>6} {'median':>8} {'min':>8} {'p10':>8} "
          f"{'p90':>8} {'spread':>7}")
    for run in runs:
        for name, per_config in run["times"].items():
            for i, times in enumerate(per_config):
                if times is None:
                    continue
                s = _stats(times)
                label = ("top1", "top2", "top3", "median")[i]
                print(f"{run['round']:>5} {run['setting']:9} {name:13} {label:>6} {s['median_ms']:8.3f} "
                      f"{s['min_ms']:8.3f} {s['p10_ms']:8.3f} {s['p90_ms']:8.3f} {100 * s['spread']:6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
