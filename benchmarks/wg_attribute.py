"""Does a local-memory variant of at most 256 work-items lose speed when its source no longer
fixes the work-group size (reqd_work_group_size; codegen.variant.compiles_work_group)? Times the
same configurations built both ways, in one process, in interleaved rounds (issue 21).

    python3 benchmarks/wg_attribute.py --device nvidia --out $OUT/wg_attribute.json

By default: the best configuration of the first exhaustive call on the H100
(benchmarks/results/exhaustive-h100-call1.json) and a seeded sample of the paper space's
local-memory configurations of at most 256 work-items, on convolution9.icl at 4096x4096.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

import imagecl  # noqa: E402
from imagecl.bench.paper_space import paper_space  # noqa: E402
from imagecl.cli import parse_size  # noqa: E402
from imagecl.codegen import variant  # noqa: E402
from imagecl.codegen.variant import VariantPlan  # noqa: E402
from imagecl.runtime.devices import describe, select_device  # noqa: E402
from imagecl.runtime.session import Session  # noqa: E402
from imagecl.runtime.synthetic import synthetic_arguments  # noqa: E402


# the best configuration of the first exhaustive call on the H100 (0.376 ms;
# benchmarks/results/exhaustive-h100-call1.json), here so that the script needs no results folder
CALL1_BEST = {"wg_x": 32, "wg_y": 4, "px_x": 1, "px_y": 2, "interleaved": 0, "image_input": 1, "image_filter": 0,
              "local_input": 1, "local_filter": 0, "constant_filter": 1, "unroll_convolution9_l19": 1,
              "unroll_convolution9_l20": 1, "interior": 0, "vector_x": 0}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--size", default="4096x4096")
    parser.add_argument("--sample", type=int, default=40, help="random local-memory configurations besides the best")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5, help="timed launches per round and build")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    t0 = time.time()
    device = select_device(args.device)
    prog = imagecl.load(ROOT / "examples" / "convolution9.icl")
    shape = parse_size(args.size)
    arguments, _ = synthetic_arguments(prog, shape, {}, seed=args.seed, device=device)
    space = prog.space_for(device, shape)
    best = dict(CALL1_BEST)
    rng = np.random.default_rng(args.seed)
    small_local = [c for c in paper_space(prog) if c["local_input"] and c["wg_x"] * c["wg_y"] <= 256
                   and c["wg_x"] * c["wg_y"] >= 32 and c["px_x"] * c["px_y"] <= 8]
    configs = [best] + [small_local[i] for i in rng.choice(len(small_local), args.sample, replace=False)]
    session = Session(prog, arguments, device)
    session.set_reference_from(VariantPlan.naive(prog.info))
    rows = []
    for config in configs:
        try:
            full = space.complete(config)
        except imagecl.ImageCLError as exc:
            rows.append({"config": config, "error": str(exc)[:200]})
            continue
        plan = space.plan(full)
        variant.COMPILED_WG_ABOVE = 0
        fixed_source = "reqd_work_group_size" in prog.source_of(plan)
        variant.COMPILED_WG_ABOVE = 256
        assert fixed_source and "reqd_work_group_size" not in prog.source_of(plan), "the two builds do not differ"
        times = {"fixed": [], "launch_time": []}
        try:
            for r in range(args.rounds):
                for kind in (("fixed", "launch_time") if r % 2 == 0 else ("launch_time", "fixed")):
                    variant.COMPILED_WG_ABOVE = 0 if kind == "fixed" else 256  # the old rule, then the new
                    timing = session.time(plan, repeats=args.repeats, verify=r == 0, read_outputs=False)
                    if timing.problem:
                        raise RuntimeError(f"{kind}: {timing.problem}")
                    times[kind].extend(timing.times)
        except Exception as exc:  # noqa: BLE001 - a variant that fails one way is reported, not fatal
            rows.append({"config": full, "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
            continue
        finally:
            variant.COMPILED_WG_ABOVE = 256
        fixed, free = float(np.median(times["fixed"])), float(np.median(times["launch_time"]))
        rows.append({"config": full, "fixed_ms": fixed * 1e3, "launch_time_ms": free * 1e3, "ratio": free / fixed})
    ok = [r for r in rows if "ratio" in r]
    ratios = np.array([r["ratio"] for r in ok])
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "device": describe(device).__dict__,
        "size": args.size, "configurations": len(rows), "measured": len(ok),
        "best_config_row": rows[0],
        "ratio_launch_time_over_fixed": {"geomean": float(np.exp(np.log(ratios).mean())) if len(ok) else None,
                                         "min": float(ratios.min()) if len(ok) else None,
                                         "max": float(ratios.max()) if len(ok) else None},
        "rows": rows, "seconds": time.time() - t0, "command": " ".join(sys.argv),
    }
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1, default=str))
    b = rows[0]
    print(f"best of call 1: " + (f"fixed {b['fixed_ms']:.4f} ms, launch-time {b['launch_time_ms']:.4f} ms "
                                 f"(ratio {b['ratio']:.3f})" if "ratio" in b else b.get("error", "")))
    r = result["ratio_launch_time_over_fixed"]
    print(f"{len(ok)} of {len(rows)} configurations: launch-time / fixed work-group size, geomean {r['geomean']:.3f}, "
          f"min {r['min']:.3f}, max {r['max']:.3f}; {result['seconds']:.1f} s" if ok else "nothing measured")
    return 0


if __name__ == "__main__":
    sys.exit(main())
