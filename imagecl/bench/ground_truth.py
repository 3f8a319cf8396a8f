"""Exhaustive ground truth on subspaces of the paper's benchmarks, for evaluating tuners offline.

    python benchmarks/ground_truth.py --device nvidia --benchmark convolution9 --deadline 420 --out DIR
    python benchmarks/ground_truth.py --device cpu --variant cpu --benchmark sobel --out DIR

Every configuration of the chosen subspace is measured (verified, median of repeated launches)
into DIR/ground-<benchmark>-<device>.db (exported to DIR/ground-<benchmark>-<device>.kt.json.gz,
a gzipped Kernel Tuner cache file); `benchmarks/evaluate_tuners.py` then replays the
strategies on it (`imagecl simulate` does the same for one strategy). `--variant cpu` uses
problem sizes and subspaces sized for a 16-core CPU (launches of about 1-20 ms), `--variant
large` the GPU spaces with the fast-path passes (10,000 to 15,000 configurations), `--variant
cpu-fast` CPU sobel with them, `--variant cpu-large` the three CPU spaces with them (4,000 to
4,750 configurations). Source groups are measured in random order, so a pass stopped
by `--deadline` leaves a uniform sample of them. `--chunk N` warms up and times about N
configurations at a time; a pass stopped by its deadline then goes on, when run again with the
same `--out`, where it stopped (what the database holds is neither warmed up nor measured again),
so a space larger than one command's time limit is measured over several commands. `--refine F`
times every configuration within a factor F of the best again with `--refine-repeats` more
launches in `--refine-rounds` rounds that take them in turn, in the same session (timings of one
configuration drift between sessions on a CPU by more than the differences at the top, and
within a session by 5% or more between two series of launches: benchmarks/timing_noise.py).

On PoCL (CPU) the first launch of a kernel with a new local size compiles a work-group function
(about a second), which dominates a sequential pass. `--warm-up N` (default: one process per
core on a CPU, none on a GPU) first launches every configuration once in N parallel processes,
with throwaway results, which fills PoCL's on-disk kernel cache (POCL_CACHE_DIR, shared by all
processes) and our build cache; the timed pass that follows, alone on the machine, then only
loads what was compiled. Measured on 2 cores with 128 sobel configurations: 59.5 s for a cold
sequential pass, 45.5 s warm-up + 5.2 s timed pass, so a 16-core host gains about 8x.
"""
from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import sys
import tempfile
from collections import Counter
import time
from pathlib import Path
from typing import Optional

import numpy as np

import imagecl
from imagecl.cli import main as cli_main
from imagecl.errors import ConfigError
from imagecl.runtime.devices import describe, select_device
from imagecl.tuner.engine import MeasureOptions, Measurer, measure
from imagecl.tuner.store import Store, canonical_config

from . import repository

RNG = np.random.default_rng(2017)

# benchmark -> (file, arguments, subspace: parameter -> values; parameters not named keep defaults)
BENCHMARKS = {
    "convolution9": ("convolution9.icl",
                     lambda: {"input": RNG.random((4096, 4096), dtype=np.float32),
                              "filter": np.full((9, 9), 1 / 81, np.float32)},
                     {"wg_x": [8, 16, 32, 64, 128], "wg_y": [1, 2, 4, 8, 16], "px_x": [1, 2, 4], "px_y": [1, 2, 4],
                      "interleaved": [0, 1], "image_input": [0, 1], "local_input": [0, 1],
                      "unroll_convolution9_l19": [1, 9], "unroll_convolution9_l20": [1, 9]}),
    "sobel": ("sobel.icl",
              lambda: {"input": RNG.random((4096, 4096), dtype=np.float32)},
              {"wg_x": [4, 8, 16, 32, 64, 128], "wg_y": [1, 2, 4, 8, 16, 32], "px_x": [1, 2, 4, 8],
               "px_y": [1, 2, 4, 8], "interleaved": [0, 1], "image_input": [0, 1], "local_input": [0, 1]}),
    "bilateral": ("bilateral.icl",
                  lambda: {"input": RNG.integers(0, 256, (128, 128, 256)).astype(np.uint8),
                           "sigma_spatial": 1.5, "sigma_range": 30.0},
                  {"wg_x": [8, 16, 32], "wg_y": [1, 2, 4, 8], "wg_z": [1, 2, 4], "px_y": [1, 2], "px_z": [1, 2],
                   "interleaved": [0, 1], "image_input": [0, 1], "local_input": [0, 1],
                   "PRECOMPUTE_SPATIAL": [0, 1]}),
}


# CPU-sized variants: problem sizes that make one launch about 1-20 ms on a 16-core CPU (on 2
# cores here, the slow configurations take about 100-300 ms at these sizes), and
# subspaces of one to a few thousand configurations (work-groups up to 512 items: PoCL runs a
# work-group as a loop on one core, so wider ones only matter through vectorisation)
CPU_BENCHMARKS = {
    "convolution9": ("convolution9.icl",
                     lambda: {"input": RNG.random((1024, 1024), dtype=np.float32),
                              "filter": np.full((9, 9), 1 / 81, np.float32)},
                     {"wg_x": [8, 16, 32, 64], "wg_y": [1, 2, 4], "px_x": [1, 2, 4], "px_y": [1, 2, 4],
                      "interleaved": [0, 1], "image_input": [0, 1], "local_input": [0, 1],
                      "unroll_convolution9_l19": [1, 9]}),
    "sobel": ("sobel.icl",
              lambda: {"input": RNG.random((2048, 2048), dtype=np.float32)},
              {"wg_x": [8, 16, 32, 64, 128], "wg_y": [1, 2, 4, 8], "px_x": [1, 2, 4],
               "px_y": [1, 2, 4, 8], "interleaved": [0, 1], "image_input": [0, 1], "local_input": [0, 1]}),
    "bilateral": ("bilateral.icl",
                  lambda: {"input": RNG.integers(0, 256, (16, 32, 64)).astype(np.uint8),
                           "sigma_spatial": 1.5, "sigma_range": 30.0},
                  {"wg_x": [8, 16, 32], "wg_y": [1, 2, 4], "wg_z": [1, 2, 4], "px_y": [1, 2], "px_z": [1, 2],
                   "interleaved": [0, 1], "image_input": [0, 1], "local_input": [0, 1],
                   "PRECOMPUTE_SPATIAL": [0, 1]}),
}
# The tuner's own spaces on a GPU: the subspaces above plus the fast-path passes (`interior`,
# `vector_x`) that every stencil's space now has, and more sizes, 10,000 to 17,000 configurations
# each (statically valid on the H200), so that 1% of the space is 100 to 170 measurements
LARGE_BENCHMARKS = {
    "convolution9": (BENCHMARKS["convolution9"][0], BENCHMARKS["convolution9"][1],
                     {"wg_x": [8, 16, 32, 64, 128], "wg_y": [1, 2, 4, 8], "px_x": [1, 2, 4, 8], "px_y": [1, 2, 4, 8],
                      "interleaved": [0, 1], "image_input": [0, 1], "local_input": [0, 1],
                      "unroll_convolution9_l19": [1, 9], "interior": [0, 1], "vector_x": [0, 1]}),
    "sobel": (BENCHMARKS["sobel"][0], BENCHMARKS["sobel"][1],
              {"wg_x": [4, 8, 16, 32, 64, 128], "wg_y": [1, 2, 4, 8, 16, 32], "px_x": [1, 2, 4, 8, 16],
               "px_y": [1, 2, 4, 8, 16], "interleaved": [0, 1], "image_input": [0, 1], "local_input": [0, 1],
               "interior": [0, 1], "vector_x": [0, 1]}),
    "bilateral": (BENCHMARKS["bilateral"][0], BENCHMARKS["bilateral"][1],
                  {"wg_x": [8, 16, 32], "wg_y": [1, 2, 4, 8], "wg_z": [1, 2, 4], "px_x": [1, 2], "px_y": [1, 2],
                   "px_z": [1, 2], "interleaved": [0, 1], "image_input": [0, 1], "local_input": [0, 1],
                   "PRECOMPUTE_SPATIAL": [0, 1], "interior": [0, 1], "vector_x": [0, 1]}),
}
# The CPU sobel subspace with the fast-path passes, which the first CPU subspaces held at 0: a
# live run found them worth 2.4x on the 16-core Xeon (benchmarks/live_tuning.py)
CPU_FAST_BENCHMARKS = {
    "sobel": (CPU_BENCHMARKS["sobel"][0], CPU_BENCHMARKS["sobel"][1],
              {"wg_x": [8, 16, 32, 64], "wg_y": [1, 2], "px_x": [1, 2, 4, 8], "px_y": [1, 2, 4, 8],
               "interleaved": [0, 1], "image_input": [0, 1], "local_input": [0, 1], "interior": [0, 1],
               "vector_x": [0, 1]}),
}
# The CPU spaces with the fast-path passes, 4,000 to 5,000 configurations each on PoCL 5 (1% of
# the space: 40 to 50 measurements), measured in chunks (--chunk) over several commands
_FAST = {"interior": [0, 1], "vector_x": [0, 1], "interleaved": [0, 1], "image_input": [0, 1], "local_input": [0, 1]}
CPU_LARGE_BENCHMARKS = {
    "convolution9": (CPU_BENCHMARKS["convolution9"][0], CPU_BENCHMARKS["convolution9"][1],
                     {"wg_x": [8, 16, 32, 64], "wg_y": [1, 2, 4], "px_x": [1, 2, 4, 8], "px_y": [1, 2, 4],
                      "unroll_convolution9_l19": [1, 9], **_FAST}),
    "sobel": (CPU_BENCHMARKS["sobel"][0], CPU_BENCHMARKS["sobel"][1],
              {"wg_x": [8, 16, 32, 64, 128], "wg_y": [1, 2, 4], "px_x": [1, 2, 4, 8], "px_y": [1, 2, 4, 8], **_FAST}),
    "bilateral": (CPU_BENCHMARKS["bilateral"][0], CPU_BENCHMARKS["bilateral"][1],
                  {"wg_x": [8, 16, 32], "wg_y": [1, 2, 4], "wg_z": [1, 2], "px_x": [1, 2], "px_y": [1, 2],
                   "px_z": [1, 2], "PRECOMPUTE_SPATIAL": [0, 1], **_FAST}),
}
VARIANTS = {"gpu": BENCHMARKS, "cpu": CPU_BENCHMARKS, "large": LARGE_BENCHMARKS, "cpu-fast": CPU_FAST_BENCHMARKS,
            "cpu-large": CPU_LARGE_BENCHMARKS}


def subspace_configs(prog, space, grid: dict) -> list[dict]:
    names = list(grid)
    configs = []
    for values in itertools.product(*(grid[n] for n in names)):
        config = dict(zip(names, values))
        try:
            configs.append(space.complete(config))
        except ConfigError:
            continue  # statically invalid on this device: not part of the ground truth
    return configs


def _source_groups(space, configs: list[dict]) -> list[list[dict]]:
    """Configurations sharing an OpenCL source (differing only in launch-only parameters)."""
    groups: dict[tuple, list[dict]] = {}
    for config in configs:
        key = tuple(sorted((k, v) for k, v in config.items() if k not in space.launch_only))
        groups.setdefault(key, []).append(config)
    return list(groups.values())


def _warm_child(variant: str, name: str, device: Optional[str], configs: list[dict], deadline: float,
                timeout: float, db: str) -> None:
    """One warm-up process: launch each configuration once (results thrown away)."""
    file, make, _ = VARIANTS[variant][name]
    prog = imagecl.load(repository() / "examples" / file)
    with Store(db) as store:
        measure(prog, make(), configs, store, device=select_device(device),
                options=MeasureOptions(timeout=timeout, repeats=1, max_repeats=1, build_workers=1,
                                       deadline=deadline))


def warm_up(variant: str, name: str, device: Optional[str], space, configs: list[dict], processes: int,
            deadline: float, timeout: float) -> float:
    """Launch every configuration once in `processes` parallel processes; returns the seconds.

    Each process takes whole source groups (balanced by size), so no source is built twice.
    """
    start = time.time()
    bins: list[list[dict]] = [[] for _ in range(processes)]
    for group in sorted(_source_groups(space, configs), key=len, reverse=True):
        min(bins, key=len).extend(group)
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="imagecl-warm-") as tmp:
        children = [ctx.Process(target=_warm_child, args=(variant, name, device, part, deadline, timeout,
                                                          os.path.join(tmp, f"warm{i}.db")))
                    for i, part in enumerate(bins) if part]
        for child in children:
            child.start()
        for child in children:
            child.join()
    return time.time() - start


def _chunks(space, configs: list[dict], size: int) -> list[list[dict]]:
    """`configs` in chunks of about `size`, whole source groups each, in the order given."""
    chunks: list[list[dict]] = [[]]
    for group in _source_groups(space, configs):
        if len(chunks[-1]) >= size:
            chunks.append([])
        chunks[-1].extend(group)
    return [c for c in chunks if c]


def _best_of(records) -> dict:
    best = min((r for r in records if r.time is not None), key=lambda r: r.time)
    return {"best_after_ms": best.time * 1e3, "best_config": best.config}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--benchmark", action="append", choices=sorted(BENCHMARKS), required=True)
    parser.add_argument("--deadline", type=float, default=420.0, help="seconds of measuring per benchmark")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="gpu",
                        help="problem sizes and subspaces: gpu (the original) or cpu (sized for a 16-core CPU)")
    parser.add_argument("--warm-up", type=int, default=None, metavar="N",
                        help="parallel warm-up processes before the timed pass (default: one per core on a CPU "
                             "device, 0 on a GPU)")
    parser.add_argument("--warm-up-deadline", type=float, default=180.0, help="seconds for the warm-up pass")
    parser.add_argument("--chunk", type=int, default=None, metavar="N",
                        help="warm up and time about N configurations at a time (default: all at once), so a "
                             "pass stopped by --deadline leaves whole chunks; a rerun with the same --out goes on "
                             "where it stopped")
    parser.add_argument("--limit", type=int, default=None, help="only the first N configurations (for testing)")
    parser.add_argument("--refine", type=float, default=None, metavar="FACTOR",
                        help="after the pass, time every configuration within FACTOR of the best again with "
                             "--refine-repeats more launches (the median of all is stored): the order of the "
                             "top, which decides a tuner's slowdown, is then not a draw of launch noise")
    parser.add_argument("--refine-repeats", type=int, default=15)
    parser.add_argument("--refine-rounds", type=int, default=5,
                        help="rounds the refined configurations take in turn (Measurer.retime)")
    parser.add_argument("--suffix", default="", help="appended to the output names (ground-NAME-DEVICE-SUFFIX)")
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)
    if args.refine_repeats < 1 or args.refine_rounds < 1:
        parser.error("--refine-repeats and --refine-rounds need positive numbers")
    device = select_device(args.device)
    info = describe(device)
    tag = "gpu" if info.kind == "GPU" else "cpu"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    processes = args.warm_up if args.warm_up is not None else (os.cpu_count() or 1) if tag == "cpu" else 0
    for name in args.benchmark:
        file, make, grid = VARIANTS[args.variant][name]
        prog = imagecl.load(repository() / "examples" / file)
        arguments = make()
        first = next(v for v in arguments.values() if isinstance(v, np.ndarray))
        space = prog.space_for(device, first.shape[: prog.info.grid_dims])
        configs = subspace_configs(prog, space, grid)
        # source groups in random order: a run stopped by its deadline leaves a uniform sample of them
        groups = _source_groups(space, configs)
        configs = [c for i in np.random.default_rng(0).permutation(len(groups)) for c in groups[i]][: args.limit]
        start = time.time()
        stem = f"ground-{name}-{tag}" + (f"-{args.suffix}" if args.suffix else "")
        refined: dict = {}
        warm, summaries = 0.0, []
        with Store(out / f"{stem}.db") as store, \
                Measurer(prog, arguments, store, device,
                         MeasureOptions(timeout=args.timeout, deadline=args.deadline)) as measurer:
            # what an earlier, interrupted pass stored is neither warmed up nor measured again
            done = store.done_keys(measurer.run)
            todo = [c for c in configs if canonical_config(c) not in done]
            for chunk in _chunks(space, todo, args.chunk or len(todo) or 1):
                left = args.deadline - (time.time() - start)
                if left <= 0:
                    break
                if processes > 0:
                    warm += warm_up(args.variant, name, args.device, space, chunk, processes,
                                    min(args.warm_up_deadline, left), args.timeout)
                measurer.options.deadline = max(1.0, args.deadline - (time.time() - start))
                summaries.append(measurer.measure(chunk))
            stored = measurer.stored()
            missing = sum(canonical_config(c) not in stored for c in configs)
            ok = [r for r in stored.values() if r.time is not None] if args.refine else []
            if ok:
                t = time.time()
                best = min(r.time for r in ok)
                top = [r.config for r in ok if r.time <= args.refine * best]
                updated = measurer.retime(top, args.refine_repeats, args.refine_rounds)  # keys as in `stored`
                refined = {"factor": args.refine, "repeats": args.refine_repeats, "rounds": args.refine_rounds,
                           "configs": len(updated),
                           "seconds": time.time() - t, "best_before_ms": best * 1e3,
                           **_best_of({**stored, **updated}.values())}
            everything = _best_of(stored.values()) if any(r.time is not None for r in stored.values()) else {}
            statuses = Counter(r.status for r in stored.values())
        earlier = json.loads((out / f"{stem}.json").read_text()) if (out / f"{stem}.json").exists() else {}
        report = {"benchmark": name, "device": info.name, "subspace": grid, "configs": len(configs),
                  "measured": len(configs) - missing, "measured_now": sum(x.measured for x in summaries),
                  "statuses": dict(statuses), "refined": refined,
                  "seconds": time.time() - start + earlier.get("seconds", 0.0) * bool(done),
                  "passes": earlier.get("passes", 0) * bool(done) + 1,
                  "warm_up_processes": processes, "warm_up_seconds": warm, "variant": args.variant,
                  "complete": missing == 0,
                  "best_ms": refined["best_after_ms"] if refined else everything.get("best_after_ms"),
                  "best_config": refined["best_config"] if refined else everything.get("best_config"),
                  "date": time.strftime("%Y-%m-%d")}
        (out / f"{stem}.json").write_text(json.dumps(report, indent=1))
        # the Kernel Tuner cache export that evaluate_tuners.py and other tools replay
        cli_main(["export", "--db", str(out / f"{stem}.db"), "--format", "kernel_tuner",
                  "-o", str(out / f"{stem}.kt.json.gz")])
        print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
