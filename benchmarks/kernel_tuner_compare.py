"""imagecl's measurement engine against Kernel Tuner, on the same device, the same kernel, the same configurations.

    python benchmarks/kernel_tuner_compare.py --device 0 --out results/        # 4096x4096, 300 configurations
    python benchmarks/kernel_tuner_compare.py --quick --out /tmp/ktc            # 512x512, 16 configurations

The kernel: 2-D convolution of a float32 image with a 9x9 float32 filter, clamped boundary
(examples/convolution9.icl; equal to scipy.ndimage.convolve(img, filt, mode='nearest')).

- imagecl measures examples/convolution9.icl with its measurement engine (imagecl.tuner.engine:
  parallel prebuilds into a fresh on-disk build cache, one build per distinct source, a worker
  process with a watchdog, each variant verified against the naive variant).
- Kernel Tuner (brute-force strategy, OpenCL backend) tunes a hand-parameterised OpenCL kernel
  (KT_KERNEL below) that is equivalent to imagecl's variants restricted to the shared subspace,
  verified against SciPy (answer=, atol).

The shared subspace (both tools measure exactly the same configurations):
    Kernel Tuner      imagecl                      default values
    block_size_x      wg_x                         1 2 4 8 16 32 64 128
    block_size_y      wg_y                         1 2 4 8 16 32 64 128
    tile_size_x       px_x   (blocked layout)      1 2 4 8
    tile_size_y       px_y                         1 2 4 8
    use_local         local_input                  0 1   (work-group tile with a 4-pixel halo)
    unroll_x          unroll of the loop over i    1 3 9 (a macro, as imagecl's code generator does)
    unroll_y          unroll of the loop over j    1 3 9
imagecl's other parameters are fixed: interleaved=0, image_input=0, constant_filter=0.
Restrictions (known statically by both tools): block_size_x*block_size_y <= the device's maximum
work-group size, and with use_local the tile (block*tile + 8)^2 floats fits the device's local
memory. With --max-configs N (default 300; 0: all), N configurations are drawn at random (seed
--seed) from the valid shared subspace; imagecl gets that list, Kernel Tuner the same list (as a
restriction that admits only those configurations, since brute force has no budget option).

Reported per tool: configurations measured (every configuration of the list the tool
processed, valid or not), valid (with a kernel time), wall seconds (the whole tuning call:
compilation, verification, benchmarking, set-up), configurations per second, and the best kernel
time (imagecl: median of >= 3 profiled launches; Kernel Tuner: mean of --kt-iterations profiled
launches, its objective; the median of its launches is in the JSON). Driver and pyopencl binary
caches are disabled (PYOPENCL_NO_CACHE, CUDA_CACHE_DISABLE, POCL_KERNEL_CACHE) so that both tools
compile cold, unless --warm-caches. Writes kernel_tuner_compare-<device>.json under --out and prints
a Markdown table.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

KT_KERNEL = r"""
// Kernel Tuner's version of examples/convolution9.icl: output[y][x] = sum_{i,j in -4..4}
// input[clamp(y - j)][clamp(x - i)] * filter[j + 4][i + 4] (scipy.ndimage.convolve, mode='nearest').
// Tunable (defined by Kernel Tuner): block_size_x, block_size_y (work-group), tile_size_x,
// tile_size_y (pixels per work-item, contiguous), use_local (stage the work-group's tile with its
// halo in local memory), unroll_x, unroll_y (unroll factors of the loops over i and j: 1, 3 or 9).
#define R 4

inline float read_clamped(__global const float* img, const int w, const int h, int x, int y)
{
    x = clamp(x, 0, w - 1);
    y = clamp(y, 0, h - 1);
    return img[y * w + x];
}

#if use_local
#define TILE_W (block_size_x * tile_size_x + 2 * R)
#define TILE_H (block_size_y * tile_size_y + 2 * R)
#define IN(xx, yy) tile[((yy) - oy) * TILE_W + (xx) - ox]
#else
#define IN(xx, yy) read_clamped(input, w, h, (xx), (yy))
#endif

#define TAP(i, j) sum += IN(x - (i), y - (j)) * filter[((j) + R) * 9 + (i) + R]

#if unroll_x == 9
#define ROW(j) { TAP(-4, j); TAP(-3, j); TAP(-2, j); TAP(-1, j); TAP(0, j); TAP(1, j); TAP(2, j); TAP(3, j); TAP(4, j); }
#elif unroll_x == 3
#define ROW(j) for (int ui = 0; ui < 9; ui += 3) { TAP(ui - 4, j); TAP(ui - 3, j); TAP(ui - 2, j); }
#else
#define ROW(j) for (int i = -R; i <= R; i++) { TAP(i, j); }
#endif

#if unroll_y == 9
#define CONVOLVE { ROW(-4) ROW(-3) ROW(-2) ROW(-1) ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) }
#elif unroll_y == 3
#define CONVOLVE for (int uj = 0; uj < 9; uj += 3) { ROW(uj - 4) ROW(uj - 3) ROW(uj - 2) }
#else
#define CONVOLVE for (int j = -R; j <= R; j++) { ROW(j) }
#endif

__kernel void convolution9(__global float* output, __global const float* input,
                           __global const float* filter, const int w, const int h)
{
    const int gx = get_global_id(0);
    const int gy = get_global_id(1);
#if use_local
    __local float tile[TILE_H * TILE_W];
    const int ox = get_group_id(0) * (block_size_x * tile_size_x) - R;
    const int oy = get_group_id(1) * (block_size_y * tile_size_y) - R;
    for (int ty = get_local_id(1); ty < TILE_H; ty += block_size_y)
        for (int tx = get_local_id(0); tx < TILE_W; tx += block_size_x)
            tile[ty * TILE_W + tx] = read_clamped(input, w, h, ox + tx, oy + ty);
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    for (int ky = 0; ky < tile_size_y; ky++)
    for (int kx = 0; kx < tile_size_x; kx++)
    {
        const int x = gx * tile_size_x + kx;
        const int y = gy * tile_size_y + ky;
        if (x < w && y < h) {
            float sum = 0.0f;
            CONVOLVE
            output[y * w + x] = sum;
        }
    }
}
"""

KT_PARAMS = ("block_size_x", "block_size_y", "tile_size_x", "tile_size_y", "use_local", "unroll_x", "unroll_y")
UNROLL_VALUES = (1, 3, 9)


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one value")
    return values


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, got {text!r}") from None
    return w, h


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--device", default=None,
                   help="OpenCL device: index into imagecl's device list or a name fragment (default: first GPU)")
    p.add_argument("--size", type=_size, default=None, help="image WIDTHxHEIGHT (default 4096x4096; --quick 512x512)")
    p.add_argument("--quick", action="store_true", help="a small image and few configurations (a smoke test)")
    p.add_argument("--max-configs", type=int, default=None,
                   help="measure this many configurations, drawn at random from the shared subspace "
                        "(default 300; --quick 16; 0: all of it)")
    p.add_argument("--seed", type=int, default=0, help="seed of the data and of the configuration sample")
    p.add_argument("--block-x", type=_ints, default=[1, 2, 4, 8, 16, 32, 64, 128])
    p.add_argument("--block-y", type=_ints, default=[1, 2, 4, 8, 16, 32, 64, 128])
    p.add_argument("--tile-x", type=_ints, default=[1, 2, 4, 8])
    p.add_argument("--tile-y", type=_ints, default=[1, 2, 4, 8])
    p.add_argument("--local", type=_ints, default=[0, 1], help="use_local / local_input values")
    p.add_argument("--unroll", type=_ints, default=list(UNROLL_VALUES), help="unroll factors (of 1, 3, 9)")
    p.add_argument("--kt-iterations", type=int, default=7, help="Kernel Tuner's launches per configuration "
                   "(its default, 7)")
    p.add_argument("--timeout", type=float, default=60.0, help="imagecl's per-configuration watchdog, seconds")
    p.add_argument("--order", default="imagecl,kernel_tuner",
                   help="which tool runs first (comma-separated; leave one out to run only the other)")
    p.add_argument("--warm-caches", action="store_true",
                   help="leave the driver's and pyopencl's binary caches on (by default both tools compile cold)")
    p.add_argument("--verbose", action="store_true", help="Kernel Tuner prints every configuration")
    p.add_argument("--out", default="benchmarks/results", help="directory for the JSON, the store and caches")
    args = p.parse_args(argv)
    if args.size is None:
        args.size = (512, 512) if args.quick else (4096, 4096)
    if args.max_configs is None:
        args.max_configs = 16 if args.quick else 300
    if any(u not in UNROLL_VALUES for u in args.unroll):
        p.error(f"--unroll values must be among {UNROLL_VALUES} (the divisors of 9 imagecl offers)")
    if any(v not in (0, 1) for v in args.local):
        p.error("--local values are 0 and 1")
    order = [t.strip() for t in args.order.split(",") if t.strip()]
    if not order or any(t not in ("imagecl", "kernel_tuner") for t in order):
        p.error("--order lists 'imagecl' and/or 'kernel_tuner'")
    args.order = order
    return args


# ---- the shared subspace ----------------------------------------------------------------------


def shared_configs(args, max_wg: int, local_bytes: int) -> tuple[list[tuple], int]:
    """(configurations as tuples in KT_PARAMS order, size of the valid shared subspace)."""
    import numpy as np

    values = [args.block_x, args.block_y, args.tile_x, args.tile_y, args.local, args.unroll, args.unroll]
    valid = []
    for c in itertools.product(*values):
        bx, by, tx, ty, local, _, _ = c
        if bx * by > max_wg:
            continue
        if local and (bx * tx + 8) * (by * ty + 8) * 4 > local_bytes:
            continue
        valid.append(c)
    if args.max_configs and args.max_configs < len(valid):
        rng = np.random.default_rng(args.seed)
        chosen = sorted(rng.choice(len(valid), size=args.max_configs, replace=False).tolist())
        return [valid[i] for i in chosen], len(valid)
    return valid, len(valid)


def kt_restrictions(args, max_wg: int, local_bytes: int) -> list[str]:
    return [f"block_size_x*block_size_y<={max_wg}",
            f"use_local==0 or (block_size_x*tile_size_x+8)*(block_size_y*tile_size_y+8)*4<={local_bytes}"]


# ---- imagecl ------------------------------------------------------------------------------------


def run_imagecl(args, device, configs: list[tuple], img, filt, out: Path) -> dict:
    import imagecl
    from imagecl.tuner.engine import MeasureOptions, measure
    from imagecl.tuner.store import Store

    prog = imagecl.load(str(ROOT / "examples" / "convolution9.icl"))
    h, w = img.shape
    space = prog.space_for(device, (h, w))
    unroll_i = unroll_j = None
    for p in space.parameters:
        if p.kind == "unroll" and "over 'i'" in p.description:
            unroll_i = p.name
        elif p.kind == "unroll" and "over 'j'" in p.description:
            unroll_j = p.name
    if unroll_i is None or unroll_j is None:
        raise SystemExit("imagecl's space of convolution9.icl has no unroll parameters for the loops over i and j")
    fixed = {n: 0 for n in ("interleaved", "image_input", "constant_filter") if n in space.names}
    icl_configs = [dict(fixed, wg_x=bx, wg_y=by, px_x=tx, px_y=ty, local_input=local,
                        **{unroll_i: ux, unroll_j: uy})
                   for bx, by, tx, ty, local, ux, uy in configs]
    db = out / "imagecl-compare.sqlite"
    build_cache = out / "imagecl-build-cache"
    for path in (db, Path(str(db) + "-wal"), Path(str(db) + "-shm")):
        path.unlink(missing_ok=True)
    shutil.rmtree(build_cache, ignore_errors=True)  # compile cold, like Kernel Tuner

    t0 = time.perf_counter()
    with Store(str(db)) as store:
        summary = measure(prog, {"input": img, "filter": filt}, icl_configs, store, device=device,
                          options=MeasureOptions(timeout=args.timeout, cache_dir=build_cache))
    wall = time.perf_counter() - t0
    processed = sum(summary.statuses.values())  # every configuration it processed has one status
    valid = int(summary.statuses.get("ok", 0))
    best_config = None
    if summary.best_config is not None:
        b = summary.best_config
        best_config = {"block_size_x": b["wg_x"], "block_size_y": b["wg_y"], "tile_size_x": b["px_x"],
                       "tile_size_y": b["px_y"], "use_local": b["local_input"], "unroll_x": b[unroll_i],
                       "unroll_y": b[unroll_j]}
    times = {}
    with Store(str(db)) as store:
        for r in store.records():
            if r.time is not None:
                c = r.config
                key = (c["wg_x"], c["wg_y"], c["px_x"], c["px_y"], c["local_input"], c[unroll_i], c[unroll_j])
                times[key] = r.time * 1e3
    return {
        "tool": "imagecl", "version": imagecl.__version__,
        "configs": processed, "valid": valid, "invalid": processed - valid,
        "statuses": dict(summary.statuses), "skipped": summary.skipped,
        "stopped_early": bool(getattr(summary, "stopped_early", False)), "wall_s": wall, "engine_seconds": summary.seconds,
        "build_seconds": summary.build_seconds, "distinct_sources": summary.sources,
        "configs_per_s": processed / wall if wall > 0 else 0.0,
        "best_ms": summary.best_time * 1e3 if summary.best_time is not None else None,
        "best_config": best_config, "best_time_statistic": "median of >= 3 profiled launches after 1 warm-up",
        "parameter_names": {"block_size_x": "wg_x", "block_size_y": "wg_y", "tile_size_x": "px_x",
                            "tile_size_y": "px_y", "use_local": "local_input", "unroll_x": unroll_i,
                            "unroll_y": unroll_j, **{k: f"fixed {v}" for k, v in fixed.items()}},
        "_times_ms": times,
    }


# ---- Kernel Tuner -------------------------------------------------------------------------------


def run_kernel_tuner(args, platform_index: int, device_index: int, configs: list[tuple], sampled: bool,
                     max_wg: int, local_bytes: int, img, filt, reference, out: Path) -> dict:
    import numpy as np
    import kernel_tuner

    h, w = img.shape
    tune_params = {
        "block_size_x": list(args.block_x), "block_size_y": list(args.block_y),
        "tile_size_x": list(args.tile_x), "tile_size_y": list(args.tile_y),
        "use_local": list(args.local), "unroll_x": list(args.unroll), "unroll_y": list(args.unroll),
    }
    if sampled:
        chosen = frozenset(configs)

        # a def, not a lambda: Kernel Tuner rewrites lambdas into strings, which loses the closure
        def in_sample(p):
            return (p["block_size_x"], p["block_size_y"], p["tile_size_x"], p["tile_size_y"], p["use_local"],
                    p["unroll_x"], p["unroll_y"]) in chosen

        restrictions = in_sample
    else:
        restrictions = kt_restrictions(args, max_wg, local_bytes)
    output = np.zeros_like(img)
    arguments = [output, img, filt, np.int32(w), np.int32(h)]
    answer = [reference, None, None, None, None]
    cache = out / "kernel_tuner-cache.json"
    cache.unlink(missing_ok=True)  # a fresh run, never resumed from an earlier one

    t0 = time.perf_counter()
    results, env = kernel_tuner.tune_kernel(
        "convolution9", KT_KERNEL, (w, h), arguments, tune_params,
        grid_div_x=["block_size_x", "tile_size_x"], grid_div_y=["block_size_y", "tile_size_y"],
        restrictions=restrictions, answer=answer, atol=1e-4, lang="OpenCL",
        device=device_index, platform=platform_index, strategy="brute_force",
        iterations=args.kt_iterations, cache=str(cache), quiet=not args.verbose, verbose=args.verbose)
    wall = time.perf_counter() - t0

    errors: dict[str, int] = {}
    valid = []
    times = {}
    for r in results:
        t = r.get("time")
        if isinstance(t, (int, float)) and not isinstance(t, str) and np.isfinite(t):
            valid.append(r)
            times[tuple(int(r[n]) for n in KT_PARAMS)] = float(t)
        else:
            kind = type(t).__name__  # InvalidConfig, CompilationFailedConfig, RuntimeFailedConfig
            errors[kind] = errors.get(kind, 0) + 1
    best = min(valid, key=lambda r: r["time"]) if valid else None
    measured = {tuple(int(r[n]) for n in KT_PARAMS) for r in results}
    missing = [c for c in configs if c not in measured]
    if len(results) != len(configs) or missing:
        print(f"warning: Kernel Tuner measured {len(results)} configurations, the shared list has {len(configs)} "
              f"({len(missing)} of the list missing)", file=sys.stderr)
    sum_ms = lambda key: sum(float(r.get(key) or 0) for r in results)  # noqa: E731
    return {
        "tool": "Kernel Tuner", "version": getattr(kernel_tuner, "__version__", None) or _dist_version("kernel_tuner"),
        "configs": len(results), "valid": len(valid), "invalid": len(results) - len(valid),
        "invalid_kinds": errors, "wall_s": wall, "configs_per_s": len(results) / wall if wall > 0 else 0.0,
        "compile_s": sum_ms("compile_time") / 1e3, "verification_s": sum_ms("verification_time") / 1e3,
        "benchmark_s": sum_ms("benchmark_time") / 1e3,
        "best_ms": float(best["time"]) if best else None,
        "best_median_ms": float(np.median(best["times"])) if best and best.get("times") else None,
        "best_config": {n: int(best[n]) for n in KT_PARAMS} if best else None,
        "best_time_statistic": f"mean of {args.kt_iterations} profiled launches (Kernel Tuner's 'time')",
        "iterations": args.kt_iterations, "restrictions": "the sampled list" if sampled else
        kt_restrictions(args, max_wg, local_bytes),
        "env": {k: v for k, v in env.items() if isinstance(v, (str, int, float, bool, type(None)))},
        "_times_ms": times,
    }


def _dist_version(name: str):
    try:
        from importlib.metadata import version
        return version(name.replace("_", "-"))
    except Exception:  # noqa: BLE001
        return None


# ---- report -------------------------------------------------------------------------------------


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def markdown(device_name: str, rows: list[dict]) -> str:
    lines = ["| device | tool | configs measured | valid | invalid | wall s | configs/s | best ms | best config |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        cfg = r.get("best_config")
        shown = ("bx{block_size_x} by{block_size_y} tx{tile_size_x} ty{tile_size_y} local{use_local} "
                 "ux{unroll_x} uy{unroll_y}".format(**cfg)) if cfg else "-"
        lines.append(f"| {device_name} | {r['tool']} | {r['configs']} | {r['valid']} | {r['invalid']} | "
                     f"{r['wall_s']:.1f} | {r['configs_per_s']:.2f} | {_fmt(r['best_ms'], '.4f')} | {shown} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    if not args.warm_caches:  # before pyopencl loads any driver
        os.environ["PYOPENCL_NO_CACHE"] = "1"
        os.environ["CUDA_CACHE_DISABLE"] = "1"
        os.environ["POCL_KERNEL_CACHE"] = "0"

    import numpy as np
    import pyopencl as cl
    from scipy import ndimage

    from imagecl.runtime.devices import describe, select_device

    device = select_device(args.device)
    info = describe(device)
    platforms = cl.get_platforms()
    platform_index = next(i for i, p in enumerate(platforms) if p.int_ptr == device.platform.int_ptr)
    device_index = next(i for i, d in enumerate(platforms[platform_index].get_devices())
                        if d.int_ptr == device.int_ptr)
    max_wg, local_bytes = int(device.max_work_group_size), int(device.local_mem_size)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    w, h = args.size
    rng = np.random.default_rng(args.seed)
    img = rng.random((h, w), dtype=np.float32)
    filt = rng.random((9, 9), dtype=np.float32)
    filt /= filt.sum()
    reference = ndimage.convolve(img, filt, mode="nearest")

    configs, shared_size = shared_configs(args, max_wg, local_bytes)
    sampled = len(configs) < shared_size
    print(f"[{info.name}] {w}x{h} image, 9x9 filter; shared subspace {shared_size} valid configurations, "
          f"measuring {len(configs)}{' (random sample)' if sampled else ''} with each tool", file=sys.stderr,
          flush=True)

    # the two programs compute the same thing: imagecl's naive variant against SciPy
    import imagecl
    naive = imagecl.load(str(ROOT / "examples" / "convolution9.icl")).run(
        {"input": img, "filter": filt}, device=device)[0]["output"]
    naive_error = float(np.abs(naive - reference).max())
    if naive_error > 1e-4:
        raise SystemExit(f"imagecl's output differs from scipy.ndimage.convolve(mode='nearest') by {naive_error}")

    rows = []
    for tool in args.order:
        print(f"[{info.name}] {tool} ...", file=sys.stderr, flush=True)
        if tool == "imagecl":
            r = run_imagecl(args, device, configs, img, filt, out)
        else:
            r = run_kernel_tuner(args, platform_index, device_index, configs, sampled, max_wg, local_bytes,
                                 img, filt, reference, out)
        print(f"  {r['configs']} configurations ({r['valid']} valid) in {r['wall_s']:.1f} s = "
              f"{r['configs_per_s']:.2f}/s; best {_fmt(r['best_ms'], '.4f')} ms", file=sys.stderr, flush=True)
        rows.append(r)

    # each tool's best configuration as timed by the other (both measured every configuration)
    if len(rows) == 2:
        for a, b in (rows, rows[::-1]):
            cfg = a.get("best_config")
            key = tuple(cfg[n] for n in KT_PARAMS) if cfg else None
            a["best_config_time_by_other_ms"] = b["_times_ms"].get(key) if key else None

    table = markdown(info.name, rows)
    record = {
        "benchmark": "convolution 9x9, clamped boundary (examples/convolution9.icl)",
        "device": {"name": info.name, "platform": info.platform, "driver": info.driver, "kind": info.kind,
                   "compute_units": info.compute_units, "max_work_group_size": max_wg,
                   "local_memory": local_bytes, "platform_index": platform_index, "device_index": device_index},
        "host": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()},
        "image": [w, h], "seed": args.seed, "cold_compile": not args.warm_caches,
        "naive_vs_scipy_max_abs_error": naive_error,
        "shared_space": {"parameters": {"block_size_x": args.block_x, "block_size_y": args.block_y,
                                        "tile_size_x": args.tile_x, "tile_size_y": args.tile_y,
                                        "use_local": args.local, "unroll_x": args.unroll, "unroll_y": args.unroll},
                         "restrictions": kt_restrictions(args, max_wg, local_bytes),
                         "valid": shared_size, "measured": len(configs), "sampled": sampled},
        "configs": [dict(zip(KT_PARAMS, c)) for c in configs],
        "results": [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows],
        "per_config_ms": {r["tool"]: [r["_times_ms"].get(c) for c in configs] for r in rows},
        "table": table,
    }
    safe = "".join(ch if ch.isalnum() else "_" for ch in info.name).strip("_")[:60]
    path = out / f"kernel_tuner_compare-{safe}.json"
    path.write_text(json.dumps(record, indent=1))
    print(table)
    print(f"\nwritten: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
