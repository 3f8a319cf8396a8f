"""Few-shot tuning from the stores' knowledge (imagecl.tuner.knowledge.fewshot and .sources): a
tune measures the configurations the knowledge model predicts fastest first, the trained model is
cached by the content of its table, predicted failures are never seeds, knowledge folders load
with their programs and device features, and the offline evaluation scores a tiny store's known
answers."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl.tuner.knowledge import device_from_json, limits_from_features, train
from imagecl.tuner.knowledge.dataset import assemble
from imagecl.tuner.knowledge.evaluate import evaluate_split, summarize
from imagecl.tuner.knowledge.fewshot import trained_model, with_knowledge
from imagecl.tuner.knowledge.sources import Knowledge, KnowledgeError, check_sources, load_source
from imagecl.tuner.live import StoreOptions
from imagecl.tuner.store import Record, RunKey, Store, text_hash

ROOT = Path(__file__).resolve().parent.parent
SOBEL = ROOT / "examples" / "sobel.icl"
FEATURES = ROOT / "benchmarks" / "results" / "knowledge" / "features-cpu.json"


@pytest.fixture(scope="module")
def device():
    text = FEATURES.read_text()
    return device_from_json(json.loads(text[text.index("{"):])["device"])


@pytest.fixture(scope="module")
def sobel():
    return imagecl.load(str(SOBEL))


def _area(config) -> int:
    # the driver's choice (0) counts as one work-item per group in these made-up timings
    return max(int(config.get("wg_x", 1)), 1) * max(int(config.get("wg_y", 1)), 1)


def _records(program, device, size: str, n: int, seed: int, time_of, driver: str = "d") -> list[Record]:
    """`n` random valid configurations of `program` at `size` (x first) with times from
    `time_of(config)` (None: failed with invalid_work_group)."""
    shape = tuple(int(v) for v in size.split("x"))
    space = program.space_for_limits(limits_from_features(device), tuple(reversed(shape)))
    h = text_hash(program.info.unit.source)
    out = []
    for c in space.random(n, seed=seed):
        t = time_of(c)
        out.append(Record(config=c, status="ok" if t is not None else "invalid_work_group", time=t,
                          program_name=program.name, program_hash=h, device=device.name, driver=driver,
                          problem_size=size))
    return out


def _small_is_fast(c):
    return 1e-3 * (1.0 + math.log2(_area(c)))


def test_model_cache_follows_the_table(sobel, device, tmp_path):
    records = _records(sobel, device, "64x64", 30, 1, _small_is_fast)
    h = records[0].program_hash
    knowledge = Knowledge(records=list(records), programs={h: sobel}, devices={device.name: device})
    first = trained_model(knowledge, cache_dir=tmp_path)
    assert not first.cached and first.train_seconds > 0 and first.cases == 1 and first.measurements == 30
    # the live model sees the launch in the device's units (the evaluation's best); a model
    # without them is another cache entry, never served in its place
    assert first.model.launch and first.model.target == "scaled"
    plain = trained_model(knowledge, cache_dir=tmp_path, launch=False)
    assert not plain.cached and not plain.model.launch and plain.key != first.key
    again = trained_model(knowledge, cache_dir=tmp_path)
    assert again.cached and again.key == first.key and again.train_seconds == first.train_seconds
    # a measurement more (or one changed) is another table: trained again, under another key
    knowledge.records.append(_records(sobel, device, "64x64", 31, 1, _small_is_fast)[-1])
    grown = trained_model(knowledge, cache_dir=tmp_path)
    assert not grown.cached and grown.key != first.key
    knowledge.records[0] = Record(**{**records[0].__dict__, "time": records[0].time * 2})
    changed = trained_model(knowledge, cache_dir=tmp_path)
    assert not changed.cached and changed.key not in (first.key, grown.key)
    # a damaged cache entry is trained again, not an error
    (tmp_path / f"{changed.key}.pickle").write_bytes(b"not a pickle")
    assert not trained_model(knowledge, cache_dir=tmp_path).cached
    assert len(list(tmp_path.glob("*.pickle"))) <= 2  # only the most recent are kept
    assert train(records, {h: sobel}, {device.name: device}).launch  # the library's default too


def _strategy(problem, budget, rng, *, seeds=(), prior=(), sample_fraction=0.3):
    raise AssertionError("not called")


def test_seeds_are_the_fastest_predicted_and_never_illegal(sobel, device, tmp_path):
    """Work-groups over 16 work-items always fail where measured and would otherwise be the
    fastest: the seeds are the fastest legal ones, and never one predicted to fail."""
    def time_of(c):
        return None if _area(c) > 16 else 1e-3 * (10.0 - math.log2(_area(c)))

    records = _records(sobel, device, "128x128", 120, 2, time_of)
    h = records[0].program_hash
    with Store(tmp_path / "k.db") as store:
        for r in records:
            store.add(RunKey(h, "sobel", device.name, "d", "128x128"), r)
        run = RunKey(h, "sobel", device.name, "d", "64x64")
        out = with_knowledge(StoreOptions(), store, run, sobel, None, (64, 64), _strategy, k=6, budget=12,
                             cache_dir=tmp_path / "cache", device_features=device)
    seeds = out.options["seeds"]
    assert len(seeds) == 6 and out.info["knowledge"]["seeds"] == 6
    space = sobel.space_for_limits(limits_from_features(device), (64, 64))
    for s in seeds:
        assert space.complete(s) == s  # valid in the target's space
        assert _area(s) <= 16  # never a configuration of the kind that failed
    assert sum(_area(s) == 16 for s in seeds) >= 4  # the fastest legal work-group size
    assert out.options["sample_fraction"] == pytest.approx(0.5)  # the first sample holds every seed
    assert out.info["knowledge"]["prior"] == len(out.options["prior"]) > 0
    assert all(o.context.get("knowledge") == 1.0 for o in out.options["prior"])
    # a caller's own seeds win: nothing is looked up
    kept = with_knowledge(StoreOptions(), None, run, sobel, None, (64, 64), _strategy, given=("seeds",),
                          device_features=device)
    assert kept.options == {} and "knowledge" not in kept.info


def test_knowledge_folder_and_bad_sources(sobel, device, tmp_path):
    folder = tmp_path / "bundle"
    (folder / "programs").mkdir(parents=True)
    shutil.copy(SOBEL, folder / "programs" / "sobel.icl")
    (folder / "programs" / "broken.icl").write_text("this is no program")
    shutil.copy(FEATURES, folder / "features-cpu.json")
    records = _records(sobel, device, "64x64", 5, 3, _small_is_fast)
    with Store(folder / "k.db") as store:
        for r in records:
            store.add(RunKey(r.program_hash, "sobel", device.name, "d", "64x64"), r)
    knowledge = load_source(folder)
    assert len(knowledge.usable()) == 5 and set(knowledge.programs) == {records[0].program_hash}
    assert set(knowledge.devices) == {device.name}
    assert len(load_source(folder / "k.db").usable()) == 5  # a store file takes its folder's sidecars
    for bad, message in ((tmp_path / "missing.db", "no such file"), (SOBEL, "results store"),
                         (tmp_path, "no results store")):
        with pytest.raises(KnowledgeError, match=message):
            load_source(bad)
    with pytest.raises(KnowledgeError, match="no such file"):
        check_sources([folder, tmp_path / "missing"])
    (tmp_path / "junk.db").write_text("not sqlite")
    with pytest.raises(KnowledgeError, match="junk.db"):
        load_source(tmp_path / "junk.db")


def test_evaluation_of_a_tiny_store_scores_known_answers(sobel, device, tmp_path):
    """Four sizes where the time depends on the work-group's width only, best at wg_x = 8: a
    held-out size's prediction is its measured optimum (share 1.0), and the speedup over its
    default is the default's time over the optimum's, computed here from the same records."""
    def time_of(c):
        return 1e-3 * (1.0 + abs(math.log2(max(c["wg_x"], 1)) - 3))

    records = []
    for i, size in enumerate(("64x64", "96x64", "128x128", "160x96")):
        space = sobel.space_for_limits(limits_from_features(device), tuple(reversed(
            [int(v) for v in size.split("x")])))
        default = space.complete(space.defaults)
        records += _records(sobel, device, size, 40, 10 + i, time_of)
        records.append(Record(config=default, status="ok", time=time_of(default), program_name="sobel",
                              program_hash=records[-1].program_hash, device=device.name, driver="d",
                              problem_size=size))
    data, skipped = assemble(records, {records[0].program_hash: sobel}, {device.name: device})
    assert skipped == 0 and len(data.cases) == 4
    results = evaluate_split(data, [0, 1, 2], [3], ["forest"])
    (case,) = results["forest"]
    rows = data.rows_of(3)
    times = np.exp(data.log_time[rows])
    default = [data.keys[r] for r in rows].index(data.default_key[3])
    assert case.share == pytest.approx(1.0) and not case.illegal
    assert case.speedup_default == pytest.approx(times[default] / times.min())
    assert summarize(results["forest"])["few_shot_share_of_oracle"] == pytest.approx(1.0)


@pytest.fixture(scope="module")
def cl_device():
    from imagecl.runtime.devices import select_device

    return select_device(None)


def test_tune_measures_the_predicted_configurations_first(sobel, cl_device, tmp_path):
    """`imagecl tune --knowledge STORE`: a store of sobel at another size on this device where
    the smallest work-groups are fastest; the tune's first measurements after the default are
    the model's top predictions (all of them small work-groups, which a spread sample of this
    space almost never is), and with --no-knowledge they are not."""
    from imagecl.features import device_features
    from imagecl.tuner.target import run_key

    features = device_features(cl_device)
    other = run_key(sobel, cl_device, (128, 128))
    records = _records(sobel, features, "128x128", 80, 4, _small_is_fast, driver=other.driver)
    knowledge_db = tmp_path / "knowledge" / "k.db"
    knowledge_db.parent.mkdir()
    with Store(knowledge_db) as store:
        for r in records:
            store.add(other, r)

    def first_measured(*flags):
        out = tmp_path / f"out{len(flags)}"
        result = subprocess.run([sys.executable, "-m", "imagecl", "tune", str(SOBEL), "--size", "64x64",
                                 "--budget", "4", "--confirm", "0", "-o", str(out), *flags],
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr
        with Store(out / "measurements.db", readonly=True) as store:
            mine = [r for r in store.records() if r.problem_size == "64x64"]
        mine.sort(key=lambda r: r.timestamp)
        return [r.config for r in mine[1:]], result.stderr  # the first is the default configuration

    seeded, stderr = first_measured("--knowledge", str(knowledge_db))
    assert "ranked first by a model of 80 measurements" in stderr
    assert len(seeded) >= 3 and all(_area(c) <= 2 for c in seeded), seeded
    plain, stderr = first_measured("--knowledge", str(knowledge_db), "--no-knowledge")
    assert "predicted fastest" not in stderr
    assert not all(_area(c) <= 2 for c in plain), plain
    # a source that is no store: refused before anything is made or measured
    bad = subprocess.run([sys.executable, "-m", "imagecl", "tune", str(SOBEL), "--size", "64x64", "--knowledge",
                          str(SOBEL), "-o", str(tmp_path / "never")], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "a knowledge source is a results store" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "never").exists()
