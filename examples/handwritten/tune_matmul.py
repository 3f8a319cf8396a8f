"""Tune the hand-written tiled GEMM of matmul.cl (CLTune's example kernel, in spirit) from Python.

    python examples/handwritten/tune_matmul.py --device cpu --size 256 --strategy ml --budget 30 --out results/
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from imagecl.tuner.kernel import Output, TunableKernel

HERE = Path(__file__).resolve().parent


def gemm_kernel(n: int, seed: int = 0) -> TunableKernel:
    rng = np.random.default_rng(seed)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    k = TunableKernel(HERE / "matmul.cl", "gemm", global_size=(n, n), local_size=(1, 1))
    k.add_parameter("TS", [8, 16, 32, 64])     # tile size
    k.add_parameter("WPT", [1, 2, 4, 8])       # rows per work-item
    k.add_parameter("VW", [1, 2, 4])           # vector width of B's loads
    k.add_constraint(lambda TS, WPT: TS % WPT == 0)
    k.add_constraint(lambda TS: n % TS == 0)
    k.add_constraint(lambda TS, VW: TS % VW == 0)
    k.set_local_memory_usage(lambda TS: 2 * TS * TS * 4)   # As and Bs
    k.mul_local_size(["TS", "TS"])             # a TS x TS/WPT work-group ...
    k.div_local_size([1, "WPT"])
    k.div_global_size([1, "WPT"])              # ... and n x n/WPT work-items
    k.set_arguments([np.int32(n), np.int32(n), np.int32(n), a, b, Output(np.zeros((n, n), np.float32))])
    k.set_reference({5: a @ b}, tolerance=1e-4)
    return k


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--strategy", default="ml")
    parser.add_argument("--budget", type=int, default=None, help="default: every valid configuration (exhaustive)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="tuned-gemm", help="directory for the tuned kernel and a JSON summary")
    args = parser.parse_args()
    k = gemm_kernel(args.size, args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    space = k.space(args.device)
    print(space.describe())
    start = time.time()
    result = k.tune(device=args.device, strategy=args.strategy, budget=args.budget, store=out / "gemm.db",
                    seed=args.seed)
    seconds = time.time() - start
    result.save(out)
    flops = 2.0 * args.size ** 3
    summary = {**result.to_json(), "size": args.size, "valid_configurations": space.count_valid(),
               "tuning_seconds": seconds, "gflops": flops / result.best_time / 1e9, "errors": result.errors}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"best {result.best_config}: {result.best_time * 1e3:.4f} ms ({summary['gflops']:.1f} GFLOP/s), "
          f"global {result.global_size}, local {result.local_size}; {result.evaluations} measured "
          f"({result.statuses}) in {seconds:.1f} s; wrote {out}")


if __name__ == "__main__":
    main()
