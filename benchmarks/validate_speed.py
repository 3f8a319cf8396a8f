"""Checking and recording the paper's convolution space without a device: configurations one at a
time (`Space.complete`, a commit per invalid record, a commit per result) against all at once
(`tuner.validate.complete_many`, one transaction per batch) (issue 21).

    python3 benchmarks/validate_speed.py [--sample N]

The one-at-a-time figures are timed on a sample of N configurations (records) and scaled to the
whole space; the all-at-once ones on all of it. Space: benchmarks/exhaustive.py's, on a device
with an H200's limits at 4096x4096. The store is a temporary SQLite file.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

import imagecl  # noqa: E402
from imagecl.bench.paper_space import H200, paper_space  # noqa: E402
from imagecl.errors import ConfigError  # noqa: E402
from imagecl.tuner.store import Record, RunKey, Store  # noqa: E402
from imagecl.tuner.validate import complete_many  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=3000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    prog = imagecl.load(ROOT / "examples" / "convolution9.icl")
    space = prog.space_for_limits(H200, (4096, 4096))
    configs = paper_space(prog)
    n = len(configs)
    run = RunKey("h", "convolution9", "d", "v", "4096x4096")

    t = time.perf_counter()
    got = complete_many(space, configs)
    batch_check = time.perf_counter() - t
    invalid = [Record(c, "invalid_config", None, error=e) for c, (f, e) in zip(configs, got) if f is None]
    valid = n - len(invalid)

    t = time.perf_counter()
    for config in configs[: args.sample]:
        try:
            space.complete(config)
        except ConfigError:
            pass
    single_check = (time.perf_counter() - t) / args.sample * n

    ok = Record({"wg_x": 1}, "ok", 1e-3, [1e-3] * 3, 0.01, None, True, "s")
    with tempfile.TemporaryDirectory() as d, Store(Path(d) / "a.db") as store:
        t = time.perf_counter()
        store.add_many(run, invalid)
        batch_store_invalid = time.perf_counter() - t
        t = time.perf_counter()
        for i in range(args.sample // 10):
            store.add(run, Record({"wg_x": i}, ok.status, ok.time, ok.times, ok.spread, None, True, "s"))
        per_commit = (time.perf_counter() - t) / (args.sample // 10)
    result = {
        "configurations": n, "invalid": len(invalid), "valid": valid,
        "check_one_at_a_time_s": single_check, "check_all_at_once_s": batch_check,
        "store_invalid_one_commit_each_s": per_commit * len(invalid),
        "store_invalid_one_transaction_s": batch_store_invalid,
        "store_results_one_commit_each_s": per_commit * valid, "commit_ms": per_commit * 1e3,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    print(f"{n:,} configurations, {len(invalid):,} invalid: checking {single_check:.1f} s one at a time "
          f"(sampled), {batch_check:.1f} s all at once; storing the invalid ones {per_commit * len(invalid):.1f} s "
          f"with a commit each, {batch_store_invalid:.2f} s in one transaction; a commit per result would cost "
          f"{per_commit * valid:.1f} s over the {valid:,} valid ones ({per_commit * 1e3:.2f} ms each)")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
