"""Exhaustive ground truth on subspaces of the paper's benchmarks, for evaluating tuners offline.

    python benchmarks/ground_truth.py --device nvidia --benchmark convolution9 --deadline 420 --out DIR

Every configuration of the chosen subspace is measured (verified, median of repeated launches)
into DIR/ground-<benchmark>-<device>.db; `benchmarks/evaluate_tuners.py` then replays the
strategies on it (`imagecl simulate` does the same for one strategy).
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import imagecl  # noqa: E402
from imagecl.errors import ConfigError  # noqa: E402
from imagecl.runtime.devices import describe, select_device  # noqa: E402
from imagecl.tuner.engine import MeasureOptions, measure  # noqa: E402
from imagecl.tuner.store import Store  # noqa: E402

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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--benchmark", action="append", choices=sorted(BENCHMARKS), required=True)
    parser.add_argument("--deadline", type=float, default=420.0, help="seconds of measuring per benchmark")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)
    device = select_device(args.device)
    info = describe(device)
    tag = "gpu" if info.kind == "GPU" else "cpu"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.benchmark:
        file, make, grid = BENCHMARKS[name]
        prog = imagecl.load(ROOT / "examples" / file)
        arguments = make()
        first = next(v for v in arguments.values() if isinstance(v, np.ndarray))
        space = prog.space_for(device, first.shape[: prog.info.grid_dims])
        configs = subspace_configs(prog, space, grid)
        start = time.time()
        with Store(out / f"ground-{name}-{tag}.db") as store:
            summary = measure(prog, arguments, configs, store, device=device,
                              options=MeasureOptions(timeout=args.timeout, deadline=args.deadline))
        report = {"benchmark": name, "device": info.name, "subspace": grid, "configs": len(configs),
                  "measured": summary.measured, "statuses": dict(summary.statuses),
                  "seconds": time.time() - start, "complete": not summary.stopped_early,
                  "best_ms": summary.best_time * 1e3 if summary.best_time else None,
                  "best_config": summary.best_config, "date": time.strftime("%Y-%m-%d")}
        (out / f"ground-{name}-{tag}.json").write_text(json.dumps(report, indent=1))
        print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
