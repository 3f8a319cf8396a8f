"""Hash the OpenCL source of every example at sampled configurations, to show that a refactor of
the compiler leaves the generated code unchanged (compare two runs' JSON with `--compare`).

    python scripts/variant_hashes.py -o before.json            # on the old code
    python scripts/variant_hashes.py --compare before.json     # on the new code: lists every change
    python scripts/variant_hashes.py --at before.json --compare before.json
        # the configurations `before.json` hashed, on the new code: for a change that alters the
        # space (a new value), where the same seed would sample other configurations
    python scripts/variant_hashes.py --samples 20 --timing   # also: milliseconds per distinct source
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Optional

import imagecl
from imagecl.codegen.variant import VariantPlan
from imagecl.space import DeviceLimits

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# two device shapes: a GPU-like one and a CPU-like one (no images, large work-groups)
LIMITS = {
    "gpu": DeviceLimits(name="gpu-like", max_work_group_size=1024, max_work_item_sizes=(1024, 1024, 64),
                        local_mem_size=48 * 1024),
    "cpu": DeviceLimits(name="cpu-like", max_work_group_size=4096, max_work_item_sizes=(4096, 4096, 4096),
                        local_mem_size=256 * 1024, image_support=False, image2d_max=(0, 0), image3d_max=(0, 0, 0)),
}


def hashes(samples: int, seed: int, at: Optional[dict] = None,
           timing: Optional[dict] = None) -> dict[str, str]:
    """Every example's source hashes; `timing` gets, per example, (distinct sources, seconds spent
    generating them): the time inside Program.source_of only, which caches what it generated."""
    out: dict[str, str] = {}
    for path in sorted(EXAMPLES.glob("*.icl")):
        prog = imagecl.load(path)
        spent = 0.0
        out[f"{path.stem}/naive"] = _naive(prog)
        for kind, limits in LIMITS.items():
            space = prog.space_for_limits(limits)
            if at is None:
                configs = space.random(samples, seed=seed)
            else:
                prefix = f"{path.stem}/{kind}/"
                configs = [json.loads(k[len(prefix):]) for k in at if k.startswith(prefix)]
            for config in configs:
                full = space.complete(config)
                lines = ["configuration: " + ", ".join(f"{k}={v}" for k, v in sorted(full.items()))]
                plan = space.plan(full)
                start = time.perf_counter()
                source = prog.source_of(plan, lines)
                spent += time.perf_counter() - start
                key = f"{path.stem}/{kind}/{json.dumps(full, sort_keys=True)}"
                out[key] = hashlib.sha256(source.encode()).hexdigest()
        if timing is not None:
            timing[path.stem] = (len(prog.__dict__.get("_sources", {})), spent)
    return out


def _naive(prog) -> str:
    return hashlib.sha256(prog.source_of(VariantPlan.naive(prog.info), []).encode()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=300, help="configurations per example and device shape")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("-o", "--output", help="write the hashes here (JSON)")
    ap.add_argument("--compare", metavar="FILE", help="compare with an earlier run's JSON")
    ap.add_argument("--at", metavar="FILE", help="hash the configurations an earlier run's JSON holds, not a sample")
    ap.add_argument("--timing", action="store_true", help="print the time per distinct source, per example")
    args = ap.parse_args()
    timing: dict = {}
    found = hashes(args.samples, args.seed, json.loads(Path(args.at).read_text()) if args.at else None, timing)
    if args.timing:
        for name, (count, spent) in timing.items():
            print(f"{name:16s} {count:6d} sources {1000 * spent / max(count, 1):7.2f} ms/source")
        count, spent = sum(c for c, _ in timing.values()), sum(s for _, s in timing.values())
        print(f"{'all':16s} {count:6d} sources {1000 * spent / max(count, 1):7.2f} ms/source ({spent:.1f} s)")
    if args.output:
        Path(args.output).write_text(json.dumps(found, indent=0, sort_keys=True))
    print(f"{len(found)} sources hashed")
    return compare(Path(args.compare), found) if args.compare else 0


def compare(earlier: Path, found: dict[str, str]) -> int:
    """Print what differs from an earlier run's JSON (changed, only before, only now, a few keys
    of each); 1 if anything does."""
    before = json.loads(earlier.read_text())
    changed = sorted(k for k in before.keys() & found.keys() if before[k] != found[k])
    missing = sorted(before.keys() - found.keys())
    new = sorted(found.keys() - before.keys())
    for label, keys in (("changed", changed), ("only before", missing), ("only now", new)):
        print(f"{label}: {len(keys)}")
        for k in keys[:20]:
            print("   ", k)
    return 1 if changed or missing or new else 0


if __name__ == "__main__":
    sys.exit(main())
