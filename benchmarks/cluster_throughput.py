"""Measurement on a local Dask cluster (tuner/cluster.py): configurations per second of the
in-process engine, of each device worker alone and of all of them together, and a short tuning
run whose measurements are spread over the workers.

    python3 benchmarks/cluster_throughput.py --devices nvidia,cpu --tune-workers 2 --out $OUT/cluster.json
    python3 benchmarks/cluster_throughput.py --devices nvidia:0,nvidia:1 --out $OUT/cluster.json  # two GPUs

About 5 minutes on the H100 host: four throughput runs of at most --seconds (40) each, plus
cluster starts, and a 30-measurement tuning run.

`--devices` names the workers' devices (imagecl device names or indices; `NAME:K` is the K-th
device that NAME selects, from 0; a name already taken picks the next device that matches it). The same random sample of the paper's convolution space
(examples/convolution9.icl, 9x9 filter, --size) is measured by each device alone, then by all
together, each run cold: a fresh build cache and store, so every worker builds what it measures.
With mixed devices (GPU and CPU) each configuration is measured once, on whichever worker takes
it, and stored under that device; with devices of one kind the speed-up of two workers over one
is the question (the target: 1.8x or more). The tuning run uses the workers of the first
device's kind (a tuning run never compares times of different devices); the JSON lists which
worker measured which configuration.

The images travel as a recipe (the workers generate them again, tuner/cluster.py);
`--ship-images` sends them with every task instead, as before, for a before/after comparison on
the same host. Each run reports the bytes of setup a task carries and the median time from a
task's submission to its start on a worker.

Needs dask's `distributed` (pyproject.toml); a host without a package registry installs it
from wheels carried along: `pip install --no-index --find-links WHEELS distributed`.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

import imagecl  # noqa: E402
from imagecl.runtime.devices import _all_devices, select_device  # noqa: E402
import imagecl.tuner.cluster as cluster_module  # noqa: E402
from imagecl.runtime.synthetic import synthetic_arguments  # noqa: E402
from imagecl.tuner.cluster import ClusterMeasurer, ClusterSpec, Synthetic, open_client, worker_counts  # noqa: E402
from imagecl.tuner.engine import MeasureOptions, Measurer  # noqa: E402
from imagecl.tuner.session import SessionOptions, run_session  # noqa: E402
from imagecl.tuner.store import Store  # noqa: E402


# every run cold, whatever ran before it: the drivers' own caches of built kernels are off too
# (the NVIDIA driver's, PoCL's and pyopencl's); the workers inherit these
COLD = {"CUDA_CACHE_DISABLE": "1", "POCL_KERNEL_CACHE": "0", "PYOPENCL_NO_CACHE": "1"}


def device_indices(specs: list[str]) -> list[int]:
    """Distinct device indices for the names or indices given, in order."""
    devices = _all_devices()
    taken: list[int] = []
    for spec in specs:
        name, _, nth = spec.strip().rpartition(":")
        if spec.strip().isdigit():
            index = int(spec)
        elif name and nth.isdigit():
            first = select_device(name)
            kind = [i for i, d in enumerate(devices) if (d.name, d.platform.name) == (first.name, first.platform.name)]
            if int(nth) >= len(kind):
                sys.exit(f"--devices {spec}: there are {len(kind)} devices like '{name}' ({first.name.strip()})")
            index = kind[int(nth)]
        else:
            first = select_device(spec)  # the kind the name selects (e.g. "cpu", "nvidia")
            kind = (first.name, first.platform.name)
            index = next((i for i, d in enumerate(devices) if (d.name, d.platform.name) == kind and i not in taken),
                         None)
            if index is None:
                sys.exit(f"--devices: no further device like '{spec}' ({first.name.strip()})")
        if index in taken or not 0 <= index < len(devices):
            sys.exit(f"--devices: device {index} given twice or out of range ({len(devices)} devices)")
        taken.append(index)
    return taken


def measure_run(label: str, indices: list[int], prog, inputs: dict, recipe: Synthetic | None, configs: list[dict],
                timeout: float, scratch: Path, seconds: float) -> dict:
    """Measure `configs` cold on workers pinned to `indices` (stopping after `seconds`: a slow
    device's rate needs no full run); configurations/s and who did what."""
    os.environ["IMAGECL_CACHE"] = tempfile.mkdtemp(prefix=f"cache-{label}-", dir=scratch)  # the workers inherit it
    with open_client(ClusterSpec(local_workers=len(indices)), indices) as client:
        ready = time.time()
        with Store(scratch / f"{label}.db") as store:
            cluster = ClusterMeasurer(client, prog, inputs, store, device=indices[0], any_device=True,
                                      options=MeasureOptions(timeout=timeout, deadline=seconds), synthetic=recipe)
            summary = cluster.measure(configs)
            seconds = time.time() - ready
            devices = {}
            for run in store.runs():
                devices[run.device] = sum(1 for _ in store.records(run))
    rate = summary.measured / seconds if seconds > 0 else 0.0
    waits = sorted(cluster.task_waits)
    wait = waits[len(waits) // 2] if waits else None
    print(f"{label:>24}: {summary.measured} configurations in {seconds:.1f} s = {rate:.1f}/s "
          f"({dict(summary.statuses)}); per worker {worker_counts(cluster.measured_by)}; "
          f"{len(waits)} tasks, {cluster.task_bytes} B of setup each, median "
          f"{(wait or 0) * 1e3:.0f} ms from submission to start", flush=True)
    return {"label": label, "devices": [_all_devices()[i].name.strip() for i in indices],
            "measured": summary.measured, "seconds": seconds, "per_second": rate,
            "statuses": dict(summary.statuses), "per_worker": worker_counts(cluster.measured_by),
            "stored_per_device": devices, "build_seconds_on_workers": summary.build_seconds,
            "tasks": len(waits), "setup_bytes_per_task": cluster.task_bytes, "median_task_wait_seconds": wait,
            "task_wait_seconds": waits, "builders_per_worker": cluster.builders,
            "builder_pools_started_per_worker": cluster.pool_starts}


def engine_run(index: int, prog, inputs: dict, configs: list[dict], timeout: float, scratch: Path,
               seconds: float) -> dict:
    """The same sample measured cold by the in-process engine (builders on every core but one)."""
    os.environ["IMAGECL_CACHE"] = tempfile.mkdtemp(prefix="cache-engine-", dir=scratch)
    start = time.time()
    with Store(scratch / "engine.db") as store:
        with Measurer(prog, inputs, store, device=index, options=MeasureOptions(timeout=timeout, deadline=seconds)) \
                as measurer:
            summary = measurer.measure(configs)
    elapsed = time.time() - start
    rate = summary.measured / elapsed if elapsed > 0 else 0.0
    print(f"{'in-process engine':>24}: {summary.measured} configurations in {elapsed:.1f} s = {rate:.1f}/s "
          f"({dict(summary.statuses)})", flush=True)
    return {"label": "in-process engine", "devices": [_all_devices()[index].name.strip()],
            "measured": summary.measured, "seconds": elapsed, "per_second": rate,
            "statuses": dict(summary.statuses), "phases": summary.phases}


def tune_run(indices: list[int], prog, inputs: dict, recipe: Synthetic | None, budget: int, timeout: float,
             scratch: Path, workers: int = 0) -> dict:
    """A tuning run on the workers of the first device's kind, a batch of proposals per worker
    (`workers` more than there are such devices: the extra ones share the first device)."""
    first = _all_devices()[indices[0]]
    same = [i for i in indices if (_all_devices()[i].name, _all_devices()[i].driver_version)
            == (first.name, first.driver_version)]
    shared = workers > len(same)
    same = (same + [same[0]] * workers)[:workers] if workers else same
    os.environ["IMAGECL_CACHE"] = tempfile.mkdtemp(prefix="cache-tune-", dir=scratch)
    with open_client(ClusterSpec(local_workers=len(same)), same) as client:
        start = time.time()
        with Store(scratch / "tune.db") as store:
            cluster = ClusterMeasurer(client, prog, inputs, store, device=same[0],
                                      options=MeasureOptions(timeout=timeout, prebuild=False), synthetic=recipe)
            result = run_session(cluster, SessionOptions(budget=budget, seed=0, transfer=False))
        seconds = time.time() - start
    print(f"tuning on {len(same)} worker(s) of {first.name.strip()}: best {result.best_time * 1e3:.4f} ms after "
          f"{result.evaluations} measurements in {seconds:.1f} s; per worker {worker_counts(cluster.measured_by)}",
          flush=True)
    return {"workers": len(same), "device": first.name.strip(), "budget": budget, "seconds": seconds,
            "workers_share_a_device": shared,
            "best_seconds": result.best_time, "best_config": result.best_config, "evaluations": result.evaluations,
            "per_worker": worker_counts(cluster.measured_by),
            "measured_by": [{"config": json.loads(k), "worker": w} for k, w in cluster.measured_by]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", default="0,1", help="the workers' devices, e.g. nvidia,cpu or nvidia,nvidia")
    parser.add_argument("--size", type=int, default=4096, help="image width and height (default 4096)")
    parser.add_argument("--configs", type=int, default=300, help="random valid configurations measured per run")
    parser.add_argument("--budget", type=int, default=30, help="the tuning run's budget")
    parser.add_argument("--seconds", type=float, default=40.0,
                        help="each throughput run stops after this long (default 40; its rate is what it measured)")
    parser.add_argument("--tune-workers", type=int, default=0,
                        help="workers of the tuning run (default: one per device of the first one's kind; more: "
                             "the extra ones share the first device, which shows the spread, not a speed-up)")
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="the JSON report")
    parser.add_argument("--ship-images", action="store_true",
                        help="send the images with every task, as before issue 21 (a baseline to compare with)")
    args = parser.parse_args(argv)
    os.environ.update(COLD)
    indices = device_indices([s for s in args.devices.split(",") if s.strip()])
    prog = imagecl.load(ROOT / "examples" / "convolution9.icl")
    # synthetic inputs, as the command line's: the workers make the image again from the recipe
    recipe = Synthetic((args.size, args.size), {"filter": np.full((9, 9), 1 / 81, np.float32)}, args.seed)
    inputs, _ = synthetic_arguments(prog, recipe.grid_shape, recipe.given, seed=recipe.seed)
    if args.ship_images:
        cluster_module.SMALL_ARGUMENTS = 1 << 62
        recipe = None
    configs = prog.space_for(_all_devices()[indices[0]], (args.size, args.size)).random(args.configs, seed=args.seed)
    scratch = Path(tempfile.mkdtemp(prefix="cluster-throughput-"))
    started = time.time()
    runs = [engine_run(indices[0], prog, inputs, configs, args.timeout, scratch, args.seconds)]
    runs += [measure_run(f"{_all_devices()[i].name.strip()[:16]}#{i} alone", [i], prog, inputs, recipe, configs,
                        args.timeout, scratch, args.seconds) for i in indices]
    if len(indices) > 1:
        runs.append(measure_run("all together", indices, prog, inputs, recipe, configs, args.timeout, scratch,
                                args.seconds))
    report = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "program": "convolution9.icl",
              "size": args.size, "configs": len(configs), "devices": args.devices, "runs": runs,
              "images_with_every_task": args.ship_images}
    if len(indices) > 1:
        report["together_over_first_alone"] = runs[-1]["per_second"] / max(runs[1]["per_second"], 1e-9)
        print(f"all together / first device alone: {report['together_over_first_alone']:.2f}x", flush=True)
    report["first_worker_over_engine"] = runs[1]["per_second"] / max(runs[0]["per_second"], 1e-9)
    print(f"first device's worker / in-process engine: {report['first_worker_over_engine']:.2f}x", flush=True)
    report["tuning"] = tune_run(indices, prog, inputs, recipe, args.budget, args.timeout, scratch, args.tune_workers)
    report["seconds"] = time.time() - started
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    print(f"wrote {args.out} ({report['seconds']:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
