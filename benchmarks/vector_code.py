"""Which variants PoCL turns into SIMD code: packed against scalar float instructions per workload.

    python benchmarks/vector_code.py [--device cpu] [--tuned benchmarks/results/peers-cpu.json] \
        [--out benchmarks/results/vector-code.json] [--time SCALE] [--only conv9,sobel]

For the CPU peer workloads (convolution 3x3, 9x9, 11x11, sobel, median 3x3) this builds, on a
PoCL CPU device, the naive variant, the configuration the peer harness tuned (read from a
peers JSON, when given and present), the fast path with fully unrolled taps, the same with
`vector_x=1` (vector loads and stores around the scalar body) and with `vector_x=2` (the body
as vector code, codegen/lanes.py), and counts floating-point arithmetic instructions in the
kernel object PoCL leaves in its cache (imagecl/bench/machine_code.py): packed (SIMD, 4/8/16
lanes per instruction) against scalar. Counts are of instructions in the object (both of the
kernel's paths), not executed ones. About 2-4 minutes (one build per variant).

`--time SCALE` also times each variant on the device (OpenCL profiling events, median of 5
launches after one warm-up) on the peer harness's inputs at its full size times SCALE per
side: the tuned configuration of the peers JSON against the vector-code variants at fixed
configurations, independently of what a short tuning run finds. On the 16-core host,
`--time 1` takes about 3-5 minutes (most of it the naive and scalar variants of conv11).
"""
from __future__ import annotations

import argparse
import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path

from imagecl.bench import machine_code
from imagecl.bench.peer_workloads import _example, convolution_source, median_source


def workloads() -> dict[str, tuple[str, dict]]:
    """name -> (source, the fully unrolled fast path's configuration)."""
    out = {}
    for radius in (1, 4, 5):
        n = 2 * radius + 1
        out[f"conv{n}"] = (convolution_source(radius), {f"unroll_convolution{n}_l7": n, f"unroll_convolution{n}_l8": n})
    out["sobel"] = (_example("sobel.icl"), {})
    out["median3"] = (median_source(1), {})
    return out


def variants(name: str, unrolled: dict, tuned: dict | None, lanes: bool) -> dict[str, object]:
    fast = {**unrolled, "interior": 1, "wg_x": 8, "wg_y": 4}
    out: dict[str, object] = {"naive": "naive"}
    if tuned:
        out["tuned (peers JSON)"] = tuned
    out["fast path, unrolled"] = fast
    out["vector_x=1, px_x=8"] = {**fast, "vector_x": 1, "px_x": 8}
    if lanes:
        out["vector_x=2, px_x=8"] = {**fast, "vector_x": 2, "px_x": 8}
        out["vector_x=2, px_x=16"] = {**fast, "vector_x": 2, "px_x": 16, "wg_x": 4}
        out["vector_x=2, px_x=32 (2 runs of 16)"] = {**fast, "vector_x": 2, "px_x": 32, "wg_x": 2}
    return out


def timed(workload_key: str, variants_: dict, device: str, scale: float) -> dict[str, float]:
    """Milliseconds per variant (median of 5 launches after a warm-up) on the peer inputs."""
    import numpy as np

    import imagecl
    from imagecl.bench.peer_workloads import all_workloads

    workload = next(w for w in all_workloads() if w.key == workload_key)
    shape = tuple(max(64, int(round(n * scale))) for n in workload.full)
    args = workload.make(shape, np.random.default_rng(0))
    prog = imagecl.compile(workload.source, filename=f"{workload_key}.icl")
    inputs = {k: v for k, v in args.items() if k not in workload.writes}
    out = {}
    for label, config in variants_.items():
        prog.run(inputs, device=device, config=config)
        out[label] = 1000 * float(np.median([prog.run(inputs, device=device, config=config)[1] for _ in range(5)]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="a PoCL CPU device (name fragment)")
    parser.add_argument("--tuned", type=Path, help="a peers JSON whose tuned configurations to include")
    parser.add_argument("--out", type=Path, help="write the counts here (JSON)")
    parser.add_argument("--only", help="comma-separated workloads (default all): conv3,conv9,conv11,sobel,median3")
    parser.add_argument("--time", type=float, metavar="SCALE", help="also time the variants at the full size x SCALE")
    args = parser.parse_args()
    import imagecl

    tuned = {}
    if args.tuned and args.tuned.exists():
        for record in json.loads(args.tuned.read_text()).get("records", []):
            config = (record.get("imagecl") or {}).get("config")
            if config:
                tuned[record["workload"]] = config
    rows = []
    started = time.time()
    counting = shutil.which("objdump") is not None
    if not counting:
        print("objdump (binutils) is not installed: no instruction counts, only times")
    print("| workload | variant | scalar float ops | packed float ops | of which 256-bit | 512-bit | packed share |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    chosen_workloads = {k: v for k, v in workloads().items() if not args.only or k in args.only.split(",")}
    for name, (source, unrolled) in chosen_workloads.items():
        prog = imagecl.compile(source, filename=f"{name}.icl")
        values = prog.space.parameter("vector_x").values if "vector_x" in prog.space.names else []
        for label, config in variants(name, unrolled, tuned.get(name), 2 in values).items():
            if not counting:
                rows.append({"workload": name, "variant": label, "config": config})
                continue
            mix = machine_code.pocl_instruction_mix(source, config, shape=(64, 256), device=args.device,
                                                    filename=f"{name}.icl")
            rows.append({"workload": name, "variant": label, "config": config, **asdict(mix)})
            print(f"| {name} | {label} | {mix.scalar} | {mix.packed} | {mix.packed_ymm} | {mix.packed_zmm} | "
                  f"{mix.packed_share:.0%} |", flush=True)
    if args.time:
        print(f"\nkernel milliseconds at the peer harness's full size x {args.time} per side (median of 5):")
        for name, (_, unrolled) in chosen_workloads.items():
            chosen = {label: config for label, config in
                      variants(name, unrolled, tuned.get(name), True).items() if label != "naive"}
            if name == "median3":
                continue  # no vector code for it (its body branches on pixel values)
            for label, ms in timed(name, chosen, args.device, args.time).items():
                next(r for r in rows if r["workload"] == name and r["variant"] == label)["ms"] = round(ms, 3)
                print(f"  {name:8s} {label:36s} {ms:9.2f} ms", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                        "device": args.device, "time_scale": args.time,
                                        "seconds": round(time.time() - started, 1),
                                        "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
