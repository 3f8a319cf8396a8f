"""Where a GPU tuning run's seconds go, and what the 3-D convolution's space offers (issue 23).

    python3 benchmarks/gpu_tuning_phases.py --device nvidia --out $OUT/tuning-phases.json

1. Tuning runs as benchmarks/peers.py makes them (imagecl.bench.peers.tune: a fresh store, the
   default strategy, --budget configurations, at most --seconds) for --workloads, each with the
   phase report of tuner/phases.py (worker starts, builds, launches, the slowest configurations).
   --compare-ahead names workloads tuned a second time without building ahead (tuner/pipeline.py).
2. --probe: hand-picked configurations of the 3-D convolution (work-group shapes with z, points
   per work-item along z and x, the interior fast path, vector loads, constant filter) measured
   on the full 256^3 problem, with their share of the copy rate: whether the space holds a
   variant faster than the naive one, which three tuning runs of 24 never found. Then the three
   fastest of them, and the stored H100 tuned configurations of convolution 3x3 and sobel, as
   generated and with every __global pointer restrict (outputs compared).

About 4 minutes on an H100 with the defaults (--seconds 20). --quick: the workloads' small sizes (PoCL tests).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from imagecl.bench import use_repository  # noqa: E402

use_repository(ROOT)

import imagecl  # noqa: E402
from imagecl.bench.bandwidth import copy_bandwidth  # noqa: E402
from imagecl.bench.peer_workloads import all_workloads  # noqa: E402
from imagecl.bench.peers import tune  # noqa: E402
from imagecl.runtime.devices import select_device  # noqa: E402
from imagecl.runtime.session import Session  # noqa: E402
from imagecl.tuner.engine import MeasureOptions, Measurer  # noqa: E402
from imagecl.tuner.phases import describe_phases  # noqa: E402
from imagecl.tuner.store import Store  # noqa: E402


def probe_configs(space) -> list[dict]:
    """The 3-D convolution's candidates: fast path, unrolled taps, filter in constant memory, and
    work-group shapes x points per item along x and z (vector loads where the space allows)."""
    base = {"interior": 1, "constant_filter": 1, "image_input": 0, "image_filter": 0, "local_input": 0,
            "local_filter": 0, "interleaved": 0, "vector_x": 0}
    base.update({p.name: max(p.values) for p in space.parameters if p.name.startswith("unroll_")})
    configs = [dict(base, interior=0), dict(base, constant_filter=0)]
    for wg in ((32, 4, 1), (32, 8, 1), (32, 16, 1), (32, 2, 2), (32, 4, 2), (32, 1, 8), (16, 8, 2), (32, 32, 1)):
        for px in ((1, 1, 1), (1, 1, 2), (1, 1, 4), (1, 1, 8), (1, 2, 1), (2, 1, 1), (4, 1, 1), (4, 1, 4)):
            config = dict(base, wg_x=wg[0], wg_y=wg[1], wg_z=wg[2], px_x=px[0], px_y=px[1], px_z=px[2])
            configs.append(config)
            if px[0] > 1:
                configs.extend(dict(config, vector_x=v) for v in (1, 2))
    configs.append(dict(base, wg_x=32, wg_y=4, wg_z=1, px_x=1, px_y=1, px_z=1, local_input=1))
    configs.append(dict(base, wg_x=32, wg_y=8, wg_z=1, px_x=1, px_y=1, px_z=4, local_input=1))
    for config in configs[:2]:
        config.update(wg_x=32, wg_y=4, wg_z=1, px_x=1, px_y=1, px_z=1)
    return configs  # those the space rules out are recorded as invalid_config, not measured


def probe(workload, device, quick: bool, bandwidth: float) -> dict:
    shape = workload.quick if quick else workload.full
    args = workload.make(shape, np.random.default_rng(0))
    program = imagecl.compile(workload.source, f"<{workload.key}>")
    session = Session(program, args, device)
    naive = session.time(program.plan(None), repeats=10, max_seconds=2.0).median
    moved = workload.bytes_moved(args)
    with tempfile.TemporaryDirectory(prefix="imagecl-probe-") as folder, \
            Store(Path(folder) / "probe.db") as store, \
            Measurer(program, args, store, device, MeasureOptions(timeout=30.0, repeats=5, max_repeats=10)) as m:
        configs = probe_configs(m.space)
        t = time.time()
        summary = m.measure(configs)
        records = [r for r in m.stored().values()]
    ok = sorted((r for r in records if r.time is not None), key=lambda r: r.time)
    rows = [{"config": r.config, "ms": r.time * 1e3, "copy_share": moved / r.time / bandwidth if bandwidth else None}
            for r in ok]
    failed = [{"config": r.config, "status": r.status, "error": (r.error or "")[:300]} for r in records
              if r.time is None]
    print(f"\n{workload.title} {'x'.join(map(str, shape))}: naive {naive * 1e3:.4f} ms "
          f"({moved / naive / bandwidth:.0%} of copy); {len(configs)} probed in {time.time() - t:.0f} s, "
          f"{len(failed)} failed; fastest:")
    for row in rows[:12]:
        c = row["config"]
        print(f"  {row['ms']:.4f} ms ({row['copy_share']:.0%}) wg {c['wg_x']}x{c['wg_y']}x{c['wg_z']} "
              f"px {c['px_x']}x{c['px_y']}x{c['px_z']} vector_x {c['vector_x']} interior {c['interior']} "
              f"constant {c['constant_filter']} local {c['local_input']}")
    return {"workload": workload.key, "shape": list(shape), "naive_ms": naive * 1e3, "probed": len(configs),
            "seconds": summary.seconds, "fastest": rows[:20], "failed": failed[:10]}


def with_restrict(source: str) -> str:
    """The source with every __global pointer marked restrict (the arguments are distinct buffers):
    lets the compiler keep loads in registers across a work-item's points and read const
    arrays through the read-only data cache."""
    return re.sub(r"(__global (?:const )?\w+\*) ", r"\1 restrict ", source)


def restrict_experiment(workload, configs: list[dict], device, quick: bool, bandwidth: float) -> list[dict]:
    """Each configuration's kernel as generated and with restrict pointers, timed back to back
    (profiling events, median of 30 launches after 3), outputs compared."""
    import pyopencl as cl

    from imagecl.runtime import launcher

    shape = workload.quick if quick else workload.full
    args = workload.make(shape, np.random.default_rng(0))
    program = imagecl.compile(workload.source, f"<{workload.key}>")
    session = Session(program, args, device)
    moved = workload.bytes_moved(args)
    rows = []
    for config in configs:
        try:
            plan = program.plan(dict(config), device)
            source = program.source_of(plan)
            launch = program.launch_for(plan, session.prepared)
            row = {"config": config}
            outputs = {}
            for name, text in (("generated", source), ("restrict", with_restrict(source))):
                kernel = launcher.bind(launcher.build(device, text), program.kernel_symbol, launch,
                                       session._memory(launch))
                times = []
                for i in range(33):
                    event = cl.enqueue_nd_range_kernel(session.queue, kernel, launch.global_size, launch.local_size)
                    event.wait()
                    if i >= 3:
                        times.append((event.profile.end - event.profile.start) * 1e-9)
                outputs[name] = session.download()
                row[name + "_ms"] = float(np.median(times)) * 1e3
                row[name + "_copy_share"] = moved / float(np.median(times)) / bandwidth
            row["same_output"] = all(np.allclose(outputs["generated"][k], outputs["restrict"][k], rtol=1e-5,
                                                 atol=1e-5, equal_nan=True) for k in outputs["generated"])
        except Exception as exc:  # noqa: BLE001 - an experiment: say what failed and go on
            row = {"config": config, "error": f"{type(exc).__name__}: {exc}"[:300]}
        rows.append(row)
        if "error" in row:
            print(f"  {workload.key}: {row['error']}")
        else:
            print(f"  {workload.key}: generated {row['generated_ms']:.4f} ms ({row['generated_copy_share']:.0%}), "
                  f"restrict {row['restrict_ms']:.4f} ms ({row['restrict_copy_share']:.0%}), same output "
                  f"{row['same_output']} for {json.dumps(config)}")
    return rows


def stored_configs(key: str) -> list[dict]:
    """The tuned configurations of `key` in the H100 peers results (one per tuning run)."""
    try:
        result = json.loads((ROOT / "benchmarks/results/peers-nvidia.json").read_text())
    except (OSError, ValueError):
        return []
    out = []
    for record in result.get("records", []):
        if record.get("workload") == key:
            out.extend(run["config"] for run in record["imagecl"].get("runs", []) if run.get("config"))
    return out


def tuning_run(workload, device, quick: bool, seconds: float, budget: int, ahead: bool) -> dict:
    shape = workload.quick if quick else workload.full
    args = workload.make(shape, np.random.default_rng(0))
    program = imagecl.compile(workload.source, f"<{workload.key}>")
    naive = Session(program, args, device).time(program.plan(None), repeats=5, max_seconds=2.0).median
    with tempfile.TemporaryDirectory(prefix="imagecl-phases-") as folder:
        os.environ["IMAGECL_CACHE"] = str(Path(folder) / "cache")  # no build of an earlier run reused
        started = time.time()
        info = tune(program, args, device, Path(folder) / "tuning.db", seconds, budget, naive, seed=0,
                    build_ahead=ahead)
        wall = time.time() - started
    print(f"\n{workload.title} {'x'.join(map(str, shape))}, building ahead {'on' if ahead else 'off'}: "
          f"{info.get('evaluations')} of {budget} configurations in {wall:.1f} s; best "
          f"{(info.get('tuner_seconds_of_best') or float('nan')) * 1e3:.4f} ms (naive {naive * 1e3:.4f} ms)")
    if info.get("phases"):
        print(describe_phases(info["phases"]))
    return {"workload": workload.key, "shape": list(shape), "ahead": ahead, "naive_ms": naive * 1e3,
            "wall_seconds": wall, **{k: v for k, v in info.items() if k != "finalists"}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--out", default="tuning-phases.json")
    parser.add_argument("--workloads", default="conv11,median7,conv3d")
    parser.add_argument("--compare-ahead", default="median7,conv11", help="workloads also tuned without building ahead")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--budget", type=int, default=24)
    parser.add_argument("--no-probe", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    device = select_device(args.device)
    by_key = {w.key: w for w in all_workloads()}
    result: dict = {"device": device.name.strip(), "driver": device.driver_version.strip(),
                    "command": " ".join(sys.argv), "runs": [], "probe": None}
    started = time.time()
    copy = copy_bandwidth(device, 1 << 24 if args.quick else 1 << 29)["bytes_per_second"]
    result["copy_bandwidth"] = copy
    print(f"{device.name.strip()}: copy rate {copy / 1e9:.0f} GB/s")
    out = Path(args.out)

    def save() -> None:
        result["seconds"] = time.time() - started
        out.write_text(json.dumps(result, indent=1, default=str))

    if not args.no_probe:
        result["probe"] = probe(by_key["conv3d"], device, args.quick, copy)
        save()
        print("\nrestrict pointers (the same kernels, every __global pointer restrict):")
        result["restrict"] = {}
        fastest = [row["config"] for row in result["probe"]["fastest"][:3]]
        for key, configs in (("conv3d", fastest), ("conv3", stored_configs("conv3")),
                             ("sobel", stored_configs("sobel"))):
            result["restrict"][key] = restrict_experiment(by_key[key], configs[:3], device, args.quick, copy)
            save()
    compare = [k for k in args.compare_ahead.split(",") if k]
    for key in [k for k in args.workloads.split(",") if k]:
        for ahead in ((True, False) if key in compare else (True,)):
            result["runs"].append(tuning_run(by_key[key], device, args.quick, args.seconds, args.budget, ahead))
            save()
    save()
    print(f"\nwrote {out} ({time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
