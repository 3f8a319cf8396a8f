"""The tuning service's cold path: a store seeded with the project's tuning knowledge, the time
to train the model from it, and the time of first Requests (compile the program, read the store,
rank the configurations with the model) for programs and sizes the server has not answered yet.

    python benchmarks/service_cold.py --out FILE [--sizes 640x480,1920x1080]

The store is a new SQLite file holding benchmarks/results/knowledge/*.db.gz, the sources of the
examples and of the synthetic stencils they were measured from (the service's `programs` table),
and the devices' features (`devices`), as a store would after servers had been sent them.
"""
from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "results" / "knowledge"
PAIRS = [("knowledge-h100-gpu.db.gz", "features-nvidia.json"), ("knowledge-h100-cpu.db.gz", "features-cpu.json"),
         ("knowledge-epyc-cpu.db.gz", "features-epyc.json")]


def seed(db: Path, tmp: Path) -> dict:
    from imagecl.bench.synthetic_stencils import knowledge_programs

    import imagecl
    from imagecl.tuned import program_key
    from imagecl.tuner.store import RunKey, Store, text_hash

    sources = {p.name: p.read_text() for p in sorted((HERE.parent / "examples").glob("*.icl"))}
    sources.update({f"{name}.icl": source for name, source in knowledge_programs()})
    count = 0
    with Store(db) as store:
        for filename, source in sources.items():
            program = imagecl.compile(source, filename=filename)
            store.add_program(text_hash(source), program_key(program.info.unit), program.name, source)
        for archive, features in PAIRS:
            plain = tmp / archive[:-3]
            with gzip.open(DATA / archive) as src, open(plain, "wb") as dst:
                shutil.copyfileobj(src, dst)
            text = (DATA / features).read_text()
            device = json.loads(text[text.index("{"):])["device"]
            with Store(plain, readonly=True) as source_store:
                for run in source_store.runs():
                    records = list(source_store.records(run))
                    store.add_many(RunKey(run.program_hash, run.program_name, run.device, run.driver,
                                          run.problem_size), records)
                    store.add_device(run.device, run.driver, {**device, "name": run.device, "driver": run.driver})
                    count += len(records)
    return {"records": count, "programs": len(sources)}


async def cold_requests(db: Path, sizes: list[tuple[int, int]]) -> dict:
    from imagecl.service import protocol
    from imagecl.service.knowledge import Knowledge

    knowledge = Knowledge(str(db), train=False)
    knowledge.start()
    started = time.perf_counter()
    knowledge.retrain()
    knowledge.wait_trained(3600)
    training = time.perf_counter() - started
    device = json.loads((DATA / "features-cpu.json").read_text())["device"]
    times: dict[str, list[float]] = {"first_request_of_a_program": [], "first_request_of_a_size": [], "warm": []}
    sources = {"predicted": 0, "measured": 0, "default": 0, "fallback": 0}
    for path in sorted((HERE.parent / "examples").glob("*.icl")):
        for i, (w, h) in enumerate(sizes):
            size = [w, h] if "3d" not in path.stem and path.stem != "raycasting" else [w // 8, h // 8, 32]
            case = protocol.case({"program": {"source": path.read_text(), "filename": path.name},
                                  "device": device, "size": size})
            try:
                t = time.perf_counter()
                body, key = await knowledge.answer(case, "request")
                times["first_request_of_a_program" if i == 0 else "first_request_of_a_size"].append(
                    time.perf_counter() - t)
            except protocol.ProtocolError as exc:  # a program with a fixed grid, say
                print(f"{path.name} {size}: {exc}", file=sys.stderr)
                continue
            sources[json.loads(body)["source"]] += 1
            t = time.perf_counter()
            assert knowledge.cached(key, "request") is not None
            times["warm"].append(time.perf_counter() - t)
    knowledge.close()

    def summary(values: list[float]) -> dict:
        return {"n": len(values), "median_ms": round(statistics.median(values) * 1e3, 3),
                "max_ms": round(max(values) * 1e3, 3)} if values else {"n": 0}

    return {"training_s": round(training, 2), "model": knowledge.model_info, "answers": sources,
            **{k: summary(v) for k, v in times.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="640x480,1920x1080", help="sizes nobody measured, WxH,...")
    parser.add_argument("--out", help="write the JSON here too")
    args = parser.parse_args()
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "service.db"
        t = time.perf_counter()
        result = {"store": seed(db, Path(tmp))}
        result["store"]["seconds"] = round(time.perf_counter() - t, 2)
        result.update(asyncio.run(cold_requests(db, sizes)))
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
