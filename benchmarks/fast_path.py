"""The interior fast path and vectorised runs (codegen/interior.py) against the same variants without them.

    python benchmarks/fast_path.py --device nvidia --out benchmarks/results
    python benchmarks/fast_path.py --device cpu --out benchmarks/results

Memory-bound filters at issue 6's sizes (float 8192x8192; median uchar 3072x3072): sobel,
convolution 3x3 and 9x9, median 5x5 (sort), box blur 5x5 (uchar). For each, a set of base
configurations (a grid over the usual good corner -- wide work-groups, little coarsening along
x, local memory on/off -- and random points of the space) is measured three ways: as drawn
with `interior=0`, with `interior=1`, and with `interior=1, vector_x=1` where that is valid.
Every variant is verified against the naive variant on the device before its time counts.
Also measured: copy bandwidth, both a STREAM-like copy kernel (float4 per work-item) and the
driver's buffer copy, counting bytes read plus written. Writes `fast-path-<gpu|cpu>.json` and
a Markdown table under --out. Sources are built in parallel processes first (the tuner's build
cache), so the wall time is mostly launches; --budget bounds the measuring per benchmark.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

import imagecl  # noqa: E402
from imagecl.errors import ImageCLError  # noqa: E402
from imagecl.runtime import launcher  # noqa: E402
from imagecl.runtime.devices import _all_devices, describe, select_device  # noqa: E402
from imagecl.runtime.session import Session  # noqa: E402
from imagecl.bench.bandwidth import copy_bandwidth  # noqa: E402
from imagecl.bench.peer_workloads import convolution_source  # noqa: E402

RNG = np.random.default_rng(6)


@dataclass
class Benchmark:
    name: str
    load: Callable[[], imagecl.Program]
    make: Callable[[float], dict]  # scale -> arguments
    bytes_moved: Callable[[dict], int]  # bytes read once + written once


def _side(n: int, scale: float) -> int:
    return max(64, int(n * scale) // 64 * 64)


def _float(n: int, scale: float) -> np.ndarray:
    return RNG.random((_side(n, scale), _side(n, scale)), dtype=np.float32)


def _uchar(n: int, scale: float) -> np.ndarray:
    return RNG.integers(0, 256, (_side(n, scale), _side(n, scale))).astype(np.uint8)


def _example(name: str) -> Callable[[], imagecl.Program]:
    return lambda: imagecl.load(ROOT / "examples" / name)


BENCHMARKS = [
    Benchmark("sobel", _example("sobel.icl"), lambda s: {"input": _float(8192, s)},
              lambda a: 3 * a["input"].nbytes),
    Benchmark("convolution 3x3", lambda: imagecl.compile(convolution_source(1), "convolution3.icl"),
              lambda s: {"input": _float(8192, s), "filter": np.full((3, 3), 1 / 9, np.float32)},
              lambda a: 2 * a["input"].nbytes),
    Benchmark("convolution 9x9", _example("convolution9.icl"),
              lambda s: {"input": _float(8192, s), "filter": np.full((9, 9), 1 / 81, np.float32)},
              lambda a: 2 * a["input"].nbytes),
    Benchmark("median 5x5", _example("median.icl"), lambda s: {"input": _uchar(3072, s)},
              lambda a: 2 * a["input"].nbytes),
    Benchmark("box blur 5x5", _example("box_blur.icl"), lambda s: {"input": _uchar(8192, s)},
              lambda a: 2 * a["input"].nbytes),
]

def copy_bandwidths(device, nbytes: int) -> dict:
    """Bytes per second (read + written) of a copy kernel and of the driver's buffer copy."""
    measured = copy_bandwidth(device, nbytes)
    return {"copy_kernel": measured["bytes_per_second"], "buffer_copy": measured["buffer_copy_bytes_per_second"]}


def base_configs(space, gpu: bool, random_count: int, seed: int) -> list[dict]:
    """Structured configurations of the good corner, then random ones; all with the passes off."""
    names = set(space.names)
    wgs = [(32, 4), (64, 2), (128, 1), (32, 8), (16, 16)] if gpu else [(16, 4), (64, 1), (8, 8)]
    pxs = [(1, 1), (2, 1), (4, 1), (8, 1), (4, 2), (8, 2)] if gpu else [(4, 1), (8, 1), (8, 4), (16, 2)]
    local = [name for name in names if name.startswith("local_")]
    out: list[dict] = []
    for use_local in ([0, 1] if local and gpu else [0]):
        for px in pxs:
            for wg in wgs:
                cfg = {"wg_x": wg[0], "wg_y": wg[1], "px_x": px[0], "px_y": px[1]}
                cfg.update({name: use_local for name in local})
                # full unrolling of short (filter) loops: what makes register tiles constant-indexed
                for p in space.parameters:
                    if p.kind == "unroll" and max(p.values) <= 9:
                        cfg[p.name] = max(p.values)
                out.append(cfg)
    for cfg in space.random(random_count, seed=seed):
        out.append({k: v for k, v in cfg.items() if k not in ("interior", "vector_x")})
    unique, seen = [], set()
    for cfg in out:
        key = json.dumps(cfg, sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append(cfg)
    return unique


def with_passes(space, base: dict) -> list[tuple[str, dict]]:
    """(label, complete configuration) for the base without and with the passes, where valid."""
    out = []
    for label, extra in (("off", {"interior": 0, "vector_x": 0}), ("interior", {"interior": 1, "vector_x": 0}),
                         ("interior+vector", {"interior": 1, "vector_x": 1})):
        cfg = dict(base, **{k: v for k, v in extra.items() if k in space.names})
        try:
            out.append((label, space.complete(cfg)))
        except ImageCLError:
            continue
    return out


def prebuild_sources(device, prog, plans: list, workers: int) -> None:
    """Build every distinct source in parallel processes and hand the binaries to the launcher."""
    from imagecl.tuner.buildcache import BuildCache, build_key, prebuild

    cache = BuildCache(Path(tempfile.mkdtemp(prefix="imcl-fast-path-")))
    sources = list(dict.fromkeys(prog.source_of(plan) for plan in plans))
    index = list(_all_devices()).index(device)
    name, driver = device.name.strip(), device.driver_version.strip()
    prebuild(cache, index, name, driver, sources, workers=workers)
    for source in sources:
        binary = cache.get(build_key(source, (), name, driver))
        if binary is not None:
            launcher.preload(device, source, binary)


def run_benchmark(bench: Benchmark, device, gpu: bool, budget: float, scale: float, random_count: int,
                  seed: int, workers: int) -> dict:
    prog = bench.load()
    args = bench.make(scale)
    session = Session(prog, args, device)
    naive = session.time(prog.plan(None), repeats=5, max_seconds=5.0)
    session.set_reference_from(prog.plan(None))
    space = prog.space_for(device, session.grid_shape)
    bases = base_configs(space, gpu, random_count, seed)
    groups = [with_passes(space, b) for b in bases]
    plans = [prog.plan(cfg, device) for group in groups for _, cfg in group]
    t0 = time.time()
    prebuild_sources(device, prog, plans, workers)
    build_seconds = time.time() - t0
    record = {"benchmark": bench.name, "grid": list(reversed(session.grid_shape)), "bytes": bench.bytes_moved(args),
              "naive_ms": naive.median * 1e3, "build_seconds": build_seconds, "bases": len(bases),
              "measured": 0, "failures": {}, "wrong": [], "pairs": []}
    best: dict[str, Optional[tuple[float, dict]]] = {"off": None, "interior": None, "interior+vector": None}
    start = time.time()
    repeats = 5 if gpu else 2
    for group in groups:
        if time.time() - start > budget:
            record["stopped_early"] = True
            break
        times = {}
        for label, cfg in group:
            try:
                timing = session.time(prog.plan(cfg, device), repeats=repeats, max_seconds=2.0, verify=True)
            except ImageCLError as exc:
                kind = type(exc).__name__
                record["failures"][kind] = record["failures"].get(kind, 0) + 1
                continue
            if timing.problem:
                record["wrong"].append({"config": cfg, "problem": timing.problem})
                continue
            record["measured"] += 1
            times[label] = timing.median
            if best[label] is None or timing.median < best[label][0]:
                best[label] = (timing.median, cfg)
        if len(times) > 1:
            record["pairs"].append({"base": group[0][1], **{k: v * 1e3 for k, v in times.items()}})
    record["measure_seconds"] = time.time() - start
    for label, entry in best.items():
        if entry is None:
            record[label] = None
            continue
        again = session.time(prog.plan(entry[1], device), repeats=10 if gpu else 3, read_outputs=False,
                             max_seconds=5.0)
        ms = again.median * 1e3
        record[label] = {"ms": ms, "config": entry[1], "gb_per_s": record["bytes"] / (ms * 1e-3) / 1e9}
    for label in ("interior", "interior+vector"):
        ratios = [p["off"] / p[label] for p in record["pairs"] if "off" in p and label in p]
        record[f"median_speedup_{label}"] = float(np.median(ratios)) if ratios else None
    return record


def markdown(records: list[dict], info, bandwidth: dict) -> str:
    copy = bandwidth["copy_kernel"]
    lines = [f"Device: {info.name} ({info.platform}, driver {info.driver}); copy kernel {copy / 1e9:.0f} GB/s, "
             f"buffer copy {bandwidth['buffer_copy'] / 1e9:.0f} GB/s (read + write).", "",
             "| benchmark | grid | naive ms | best off ms | best interior ms | best interior+vector ms | "
             "best: GB/s, % of copy kernel | median paired speed-up (interior, +vector) | measured (failed, wrong) |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]

    def ms(entry):
        return f"{entry['ms']:.3f}" if entry else "-"

    for r in records:
        entries = [r[k] for k in ("off", "interior", "interior+vector") if r.get(k)]
        top = min(entries, key=lambda e: e["ms"]) if entries else None
        share = f"{top['gb_per_s']:.0f}, {100 * top['gb_per_s'] * 1e9 / copy:.0f}%" if top else "-"
        speed = ", ".join(f"{r[k]:.2f}x" if r.get(k) else "-"
                          for k in ("median_speedup_interior", "median_speedup_interior+vector"))
        failed = sum(r["failures"].values())
        lines.append(f"| {r['benchmark']} | {'x'.join(map(str, r['grid']))} | {r['naive_ms']:.3f} | {ms(r['off'])} | "
                     f"{ms(r['interior'])} | {ms(r['interior+vector'])} | {share} | {speed} | "
                     f"{r['measured']} ({failed}, {len(r['wrong'])}) |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="device fragment, e.g. nvidia or cpu")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds of measuring per benchmark (default 45 on a GPU, 35 on a CPU)")
    parser.add_argument("--random", type=int, default=None, help="random base configurations (default 30 GPU, 4 CPU)")
    parser.add_argument("--deadline", type=float, default=330.0,
                        help="seconds for the whole run: later benchmarks get less measuring time if it runs late")
    parser.add_argument("--scale", type=float, default=1.0, help="scale the image sides (quick local runs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=0, help="build processes (default: all cores)")
    parser.add_argument("--only", default=None, help="comma-separated benchmark names")
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)

    device = select_device(args.device)
    info = describe(device)
    gpu = info.kind == "GPU"
    budget = args.budget if args.budget is not None else (40.0 if gpu else 35.0)
    random_count = args.random if args.random is not None else (30 if gpu else 4)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    bandwidth = copy_bandwidths(device, int((256 << 20) * min(1.0, max(args.scale, 1 / 16))))
    records: list[dict] = []
    table = ""
    wall = time.time()
    chosen = [b for b in BENCHMARKS if not args.only or b.name in args.only.split(",")]
    for i, bench in enumerate(chosen):
        # what is left of the deadline, shared by the remaining benchmarks, less their setup and builds
        share = (args.deadline - (time.time() - wall)) / (len(chosen) - i) - 20.0
        print(f"[{info.name}] {bench.name} ...", file=sys.stderr, flush=True)
        try:
            r = run_benchmark(bench, device, gpu, max(5.0, min(budget, share)), args.scale, random_count, args.seed,
                              args.workers or (os.cpu_count() or 2))
        except ImageCLError as exc:
            print(f"  failed: {exc}", file=sys.stderr)
            continue
        records.append(r)
        print(f"  naive {r['naive_ms']:.3f} ms; best off {r['off'] and round(r['off']['ms'], 3)}, interior "
              f"{r['interior'] and round(r['interior']['ms'], 3)}, +vector "
              f"{r['interior+vector'] and round(r['interior+vector']['ms'], 3)} ms; {r['measured']} measured, "
              f"build {r['build_seconds']:.0f} s, measure {r['measure_seconds']:.0f} s", file=sys.stderr, flush=True)
        table = write_results(out, "gpu" if gpu else "cpu", info, bandwidth, records, time.time() - wall)
    print(table)
    return 0


def write_results(out: Path, tag: str, info, bandwidth: dict, records: list[dict], seconds: float) -> str:
    """Write the JSON and the Markdown table so far (after every benchmark: a cut-off run keeps them)."""
    result = {"date": time.strftime("%Y-%m-%d"), "device": info.__dict__, "bandwidth": bandwidth,
              "command": " ".join(sys.argv), "wall_seconds": seconds, "records": records}
    (out / f"fast-path-{tag}.json").write_text(json.dumps(result, indent=1))
    table = markdown(records, info, bandwidth)
    (out / f"fast-path-{tag}.md").write_text(table + "\n")
    return table


if __name__ == "__main__":
    sys.exit(main())
