"""Whole calls whose outputs are large, one GPU and two: what the host's handling of new output
pages costs. Run it with one checkout and then another on the same machine to compare them.

    PYTHONPATH=$PWD python3 benchmarks/call_pages.py --out $OUT/call_pages.json

Calls (NumPy in and out, median of --repeats after a warm-up): convolution9 at 8192² on GPU 0
alone (`prog(...)`) and split in halves over two GPUs (`devices=`), and 64 heat steps at 4096²
(`prog.iterate`) on one GPU and on two (h 8).
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import imagecl
from imagecl.bench.wall import wall_times
from imagecl.runtime import multidevice

ROOT = Path(__file__).resolve().parent.parent


def timed(call, repeats: int) -> dict:
    runs = wall_times(call, repeats)
    return {"median_s": statistics.median(runs), "runs": runs}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--label", default="")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    gpus = [d for d in multidevice.resolve_devices(["0", "1"])]
    rng = np.random.default_rng(0)
    conv = imagecl.load(ROOT / "examples" / "convolution9.icl")
    heat = imagecl.load(ROOT / "examples" / "heat.icl")
    image = rng.random((8192, 8192), dtype=np.float32)
    taps = rng.random((9, 9), dtype=np.float32)
    u = rng.random((4096, 4096), dtype=np.float32)
    rows = {
        "convolution9 8192 one GPU": timed(lambda: conv(input=image, filter=taps, device=gpus[0]), args.repeats),
        "convolution9 8192 two GPUs": timed(lambda: conv(input=image, filter=taps, devices=gpus, shares=[0.5, 0.5]),
                                            args.repeats),
        "heat 4096 x64 one GPU": timed(lambda: heat.iterate(64, u, alpha=0.2, devices=gpus[:1]), args.repeats),
        "heat 4096 x64 two GPUs": timed(lambda: heat.iterate(64, u, alpha=0.2, devices=gpus, shares=[0.5, 0.5], h=8),
                                        args.repeats),
    }
    for k, v in rows.items():
        print(f"{args.label:8s} {k:28s} {v['median_s'] * 1e3:8.2f} ms", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "host": platform.node(),
                               "label": args.label, "imagecl": str(Path(imagecl.__file__).parent),
                               "devices": [d.name.strip() for d in gpus], "command": " ".join(sys.argv),
                               "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
