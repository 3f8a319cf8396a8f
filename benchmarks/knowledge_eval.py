"""Zero-shot validation of the knowledge models (issue 17; OmniTune's Table 1 schemes).

    python benchmarks/knowledge_eval.py --out benchmarks/results/knowledge/eval.json \\
        [--db extra.db --features extra-features.json ...] [--methods j48,forest,forest/scaled,boosting,...] \\
        [--schemes "leave one device out" --split DEVICE ...] [--jobs N]

Loads the knowledge folder benchmarks/results/knowledge (the H100 host's GPU and CPU stores, the
H200's, the 2-core EPYC's small one; their devices' features; the sources of the 13 examples and
the 40 synthetic stencils measured, `imagecl.bench.synthetic_stencils.KNOWLEDGE_SETS`), and
any further `--db` with its device's `imagecl features` JSON, and runs five schemes: 10-fold over
cases, synthetic-train/real-test, leave one device out, one program out, one size out. Candidates
of a held-out case are its measured configurations; the oracle is the best of them. `--jobs N`
evaluates N splits at once (one process each; the results are the same as with one).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from imagecl.tuner.knowledge.dataset import assemble
from imagecl.tuner.knowledge.evaluate import evaluate_split, results_json, summarize
from imagecl.bench.knowledge_cases import knowledge_folder, load as load_folder, schemes

ROOT = Path(__file__).resolve().parent.parent
DATA = knowledge_folder(ROOT)


def load(extra: list[tuple[str, str]], folder: Path = DATA):
    """The knowledge folder and the further stores (imagecl.bench.knowledge_cases.load), with this
    checkout's examples."""
    return load_folder(extra, folder, ROOT / "examples")


def name_cases(results: dict, data) -> dict:
    """Each case's program, device and size beside its index."""
    for method in results.values():
        for case in method["cases"]:
            c = data.cases[int(case["case"])]
            case.update(case=int(case["case"]), program=c.program_name, device=c.device, size=c.size)
    return results


# what the split workers evaluate: set before they are forked, so that the table is not sent to each
_WORK: dict = {}


def _evaluate(task: tuple) -> tuple:
    scheme, index, label, train, test = task
    return scheme, index, label, evaluate_split(_WORK["data"], train, test, _WORK["methods"], _WORK["seed"])


def _print_summary(scheme: str, splits: int, pooled: dict, seconds: float) -> None:
    print(f"\n{scheme} ({splits} splits, {seconds:.0f} s)")
    for m, results in pooled.items():
        s = summarize(results)
        print(f"  {m:12s} oracle share {s['share_of_oracle']:.3f} (min {s['min_share_of_oracle']:.2f})  "
              f"x default {s['speedup_over_default']:.2f}  x best single {s['speedup_over_best_single']:.2f}  "
              f"illegal {s['illegal_share']:.3f}  top-10 {s['few_shot_share_of_oracle']:.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--db", action="append", default=[], help="a further results store (with --features)")
    parser.add_argument("--features", action="append", default=[], help="its device's `imagecl features` JSON")
    parser.add_argument("--methods", default="j48,forest,boosting,bagged_nn")
    parser.add_argument("--schemes", help="comma-separated subset of the scheme names")
    parser.add_argument("--split", action="append", default=[],
                        help="only this split (its label: a device, program or size held out; repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="splits evaluated at once, one process each")
    parser.add_argument("--folder", default=str(DATA), help="the knowledge folder (default: the shipped one)")
    args = parser.parse_args()
    if len(args.db) != len(args.features):
        parser.error("give one --features per --db")
    if args.jobs < 1:
        parser.error("--jobs: at least 1")
    methods = args.methods.split(",")
    start = time.monotonic()
    knowledge = load(list(zip(args.db, args.features)), Path(args.folder))
    data, skipped = assemble(knowledge.records, knowledge.programs, knowledge.devices)
    synthetic, devices = knowledge.synthetic, knowledge.devices
    print(f"{len(data.keys)} measurements ({int(data.ok.sum())} ok) in {len(data.cases)} cases; "
          f"{skipped} records of unknown programs or devices left out", flush=True)
    report = {"date": time.strftime("%Y-%m-%d"), "devices": sorted(devices), "measurements": len(data.keys),
              "ok": int(data.ok.sum()), "cases": len(data.cases), "methods": methods, "schemes": {}}
    wanted = set(args.schemes.split(",")) if args.schemes else None
    planned = {k: v for k, v in schemes(data, synthetic, args.seed).items() if not wanted or k in wanted}
    unknown = set(args.split) - {label for splits in planned.values() for label, _, _ in splits}
    if unknown:
        parser.error(f"--split: no split of the chosen schemes is named {', '.join(sorted(unknown))}")
    tasks = [(scheme, i, label, train, test) for scheme, splits in planned.items()
             for i, (label, train, test) in enumerate(splits)
             if train and test and (not args.split or label in args.split)]
    expected = {scheme: sum(1 for t in tasks if t[0] == scheme) for scheme in planned}
    finished: dict[str, dict[int, tuple[str, dict]]] = {scheme: {} for scheme in planned}
    entries: dict[str, dict] = {}
    _WORK.update(data=data, methods=methods, seed=args.seed)
    pool = ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) if args.jobs > 1 else None
    try:
        done = (f.result() for f in as_completed([pool.submit(_evaluate, t) for t in tasks])) if pool \
            else map(_evaluate, tasks)
        for scheme, index, label, results in done:
            finished[scheme][index] = (label, results)
            pooled: dict[str, list] = {}
            for i in sorted(finished[scheme]):  # in the splits' order, however they finished
                for m, r in finished[scheme][i][1].items():
                    pooled.setdefault(m, []).extend(r)
            entries[scheme] = {"splits": [finished[scheme][i][0] for i in sorted(finished[scheme])],
                               "all_splits": [s[0] for s in planned[scheme]],
                               **name_cases(results_json(pooled), data)}
            # written after every split, so that a run stopped early keeps what it finished
            report["schemes"] = {k: entries[k] for k in planned if k in entries}
            Path(args.out).write_text(json.dumps(report, indent=1, default=float))
            if len(finished[scheme]) == expected[scheme]:
                _print_summary(scheme, len(planned[scheme]), pooled, time.monotonic() - start)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    Path(args.out).write_text(json.dumps(report, indent=1, default=float))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
