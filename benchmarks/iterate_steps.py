"""What one more step of `prog.iterate` costs on one device, against the step's kernel alone.

    PYTHONPATH=$PWD python3 benchmarks/iterate_steps.py --device 0 --size 4096x4096 --out $OUT/iterate_steps.json

For heat (float) and Conway (bytes) it times `iterate(n)` on one device for several n (median of
--repeats calls after a warm-up, NumPy in and out) and fits time = a + b * n: b is a step's cost,
a the call's own (the copies in and out). The step's kernel is timed alone through profiling
events, with the same configuration, so b - kernel is what a step costs beyond its kernel (the
host's launch, and anything the runtime does between steps). cProfile of the largest n says
where the host's time goes.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import platform
import pstats
import sys
import time
from pathlib import Path

import numpy as np

import imagecl
from imagecl.bench.wall import wall_median
from imagecl.runtime import multidevice
from imagecl.runtime.session import Session

ROOT = Path(__file__).resolve().parent.parent


def arguments(name: str, shape: tuple[int, int], rng: np.random.Generator) -> dict:
    if name == "heat":
        return {"input": rng.random(shape, dtype=np.float32), "alpha": 0.2}
    return {"input": (rng.random(shape) < 0.4).astype(np.int8)}


def measure(name: str, device, shape: tuple[int, int], steps: list[int], repeats: int) -> dict:
    prog = imagecl.load(ROOT / "examples" / f"{name}.icl")
    args = arguments(name, shape, np.random.default_rng(0))
    # the naive variant in every call, as the kernel's own timing below (not a tuned record's)
    seconds = {n: wall_median(lambda n=n: multidevice.iterate(prog, n, args, [device], config="naive"), repeats)
               for n in steps}
    slope, intercept = np.polyfit(steps, [seconds[n] for n in steps], 1)
    session = Session(prog, dict(args), device)
    kernel = session.time(prog.plan(None), repeats=max(repeats, 3)).median
    profile = cProfile.Profile()
    profile.enable()
    multidevice.iterate(prog, max(steps), args, [device], config="naive")
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(12)
    return {"program": name, "size": list(reversed(shape)), "seconds": {str(n): s for n, s in seconds.items()},
            "step_s": float(slope), "call_s": float(intercept), "kernel_s": kernel,
            "beyond_kernel_s": float(slope) - kernel, "profile": text.getvalue()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="0")
    parser.add_argument("--size", default="4096x4096")
    parser.add_argument("--steps", default="1,17,65")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    device = multidevice.resolve_devices([args.device])[0]
    w, h = (int(v) for v in args.size.lower().split("x"))
    steps = [int(n) for n in args.steps.split(",")]
    rows = []
    for name in ("heat", "conway"):
        row = measure(name, device, (h, w), steps, args.repeats)
        rows.append(row)
        print(f"{name} {w}x{h}: a step {row['step_s'] * 1e3:.3f} ms (its kernel {row['kernel_s'] * 1e3:.3f} ms), "
              f"the call {row['call_s'] * 1e3:.1f} ms", flush=True)
        print(row["profile"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                               "host": platform.node(), "device": device.name.strip(), "command": " ".join(sys.argv),
                               "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
