"""Tuning wavefront splits: the models pick good splits from synthetic records whose timings follow
a known law, the live tuner finds the best split it measures and records it for prog(...), and
`imagecl tune` / `imagecl run` work on wavefront programs."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl.runtime.devices import select_device
from imagecl.wavefront import model as wm
from imagecl.wavefront.devices import Devices
from imagecl.wavefront.split import Split
from imagecl.wavefront.split import split_space

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "wavefront"


def law(features: wm.Features, split: Split) -> float:
    """A made-up system: the GPU pays off with more work per point, tiles of 32 are best on the CPU,
    a second GPU helps big grids, a halo of 4 is best."""
    share = wm.gpu_share(split, features.width, features.height)
    gpu_good = math.log10(features.work * 1e9 + 1) - 1.5  # > 0: the GPU wins
    t = 1.0 + abs(math.log2(split.cpu_tile / 32)) * 0.2
    t *= math.exp(-gpu_good * share)
    if split.gpu_count == 2:
        t *= 0.8 if features.width >= 512 else 1.3
        t *= 1.0 + 0.1 * abs(math.log2(split.halo / 4))
    t *= 1.0 + 0.05 * (split.gpu_tile != 1) * share
    return t * features.width * features.height * features.work


def records(dims, works):
    out = []
    for dim in dims:
        for work in works:
            f = wm.Features(dim, dim, work, 4)
            splits = split_space(dim, dim, 2)
            out.append({"kind": "synthetic", "width": dim, "height": dim, "work": work, "data": 4,
                        "splits": [[s.as_config(), law(f, s)] for s in splits]})
    return out


@pytest.mark.parametrize("name", ["gradient_boosting", "random_forest", "seed_trees"])
def test_models_find_the_fast_splits_of_a_known_law(name):
    train = records([128, 384, 1024], [1e-9, 1e-8, 1e-7, 1e-6])
    model = wm.make(name).fit(train)
    shares = []
    for dim, work in [(256, 3e-8), (768, 3e-7), (1536, 5e-9), (700, 2e-6)]:
        f = wm.Features(dim, dim, work, 4)
        measured = {s: law(f, s) for s in split_space(dim, dim, 2)}
        shares.append(wm.share(model.choose(f, list(measured), gpus=2), measured))
    assert min(shares) > 0.75 and sum(shares) / len(shares) > 0.85, shares
    if name != "seed_trees":  # the performance models rank every candidate
        f = wm.Features(768, 768, 3e-7, 4)
        ranked = model.rank(f, split_space(768, 768, 2), gpus=2)
        assert law(f, ranked[0]) < law(f, ranked[-1])


def test_a_model_that_ignores_the_instance_does_worse():
    """The features matter: the same model with the work per point hidden picks worse splits."""
    train = records([128, 1024], [1e-9, 1e-6])
    blind = [{**r, "work": 1e-8} for r in train]
    seeing_model = wm.make("gradient_boosting").fit(train)
    blind_model = wm.make("gradient_boosting").fit(blind)
    seeing, not_seeing = [], []
    for work in (1e-9, 1e-6):
        f = wm.Features(512, 512, work, 4)
        measured = {s: law(f, s) for s in split_space(512, 512, 2)}
        seeing.append(wm.share(seeing_model.choose(f, list(measured), gpus=2), measured))
        not_seeing.append(wm.share(blind_model.choose(wm.Features(512, 512, 1e-8, 4), list(measured), gpus=2),
                                   measured))
    seeing, not_seeing = min(seeing), min(not_seeing)
    assert seeing > not_seeing


def test_live_tuner_measures_within_budget_checks_outputs_and_records(tmp_path, monkeypatch):
    from imagecl import tuned
    from imagecl.wavefront.tune import tune_split

    monkeypatch.setenv("IMAGECL_TUNED", str(tmp_path / "registry"))
    prog = imagecl.load(EXAMPLES / "lcs.icl")
    args = wm.instance_arguments(prog, 40, 30, {})
    device = select_device(None)
    devices = Devices(device, (device, device))
    best, measured, ranked = tune_split(prog, args, devices, budget=6, repeats=1)
    assert len(measured.seconds) == 6 and not measured.wrong and ranked == []
    assert measured.seconds[best] == min(measured.seconds.values())
    tuned.record(prog, device, best.as_config(), (30, 40), measured.seconds[best])
    assert tuned.lookup(prog, device, (40, 30)).configuration == best.as_config()


def test_tuner_seeded_by_a_training_file(tmp_path):
    from imagecl.wavefront.tune import tune_split

    path = tmp_path / "train.json"
    path.write_text(json.dumps({"grid": {"cpu_tiles": [8, 32, 128], "gpu_tiles": [1, 16], "halos": [1, 4, 16]},
                                "instances": records([32, 64], [1e-9, 1e-7])}))
    prog = imagecl.load(EXAMPLES / "wavefront_synthetic.icl")
    args = {"out": np.zeros((24, 24), np.int32), "tsize": 5}
    device = select_device(None)
    best, measured, ranked = tune_split(prog, args, Devices(device, (device,)), budget=3, training=str(path),
                                        repeats=1)
    assert ranked and ranked[0] in measured.seconds and len(measured.seconds) == 3


def test_imagecl_tune_and_run_on_a_wavefront_program(tmp_path):
    env = {"IMAGECL_TUNED": str(tmp_path / "registry")}
    import os

    env = {**os.environ, **env}
    cli = [sys.executable, "-m", "imagecl"]
    done = subprocess.run(cli + ["tune", str(EXAMPLES / "needleman_wunsch.icl"), "match=2", "mismatch=-1", "gap=1",
                                 "--size", "30x20", "--budget", "4", "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "best split" in done.stdout and "recorded in" in done.stdout
    summary = json.loads((tmp_path / "out" / "needleman_wunsch.wavefront.json").read_text())
    assert len(summary["measured"]) == 4 and Split.of(summary["best"])
    rng = np.random.default_rng(0)
    np.save(tmp_path / "a.npy", rng.integers(0, 4, 29).astype(np.uint8))
    np.save(tmp_path / "b.npy", rng.integers(0, 4, 19).astype(np.uint8))
    np.save(tmp_path / "s.npy", np.zeros((20, 30), np.int32))
    done = subprocess.run(cli + ["run", str(EXAMPLES / "needleman_wunsch.icl"), f"a={tmp_path / 'a.npy'}",
                                 f"b={tmp_path / 'b.npy'}", f"score={tmp_path / 's.npy'}", "match=2", "mismatch=-1",
                                 "gap=1", "-o", f"score={tmp_path / 'out.npy'}"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    import wavefront_reference as ref

    expected = ref.needleman_wunsch(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"), 2, -1, 1)
    assert np.array_equal(np.load(tmp_path / "out.npy"), expected)


def test_prog_uses_the_model_of_a_training_file_once_per_size(tmp_path, monkeypatch):
    from imagecl.wavefront import model as model_module

    path = tmp_path / "train.json"
    path.write_text(json.dumps({"grid": {"cpu_tiles": [8, 32], "gpu_tiles": [1], "halos": [1]},
                                "instances": records([32, 64], [1e-9, 1e-6])}))
    monkeypatch.setenv(wm.TRAINING_ENV, str(path))
    calls = []
    real = model_module.work_per_point
    monkeypatch.setattr(model_module, "work_per_point", lambda *a, **k: calls.append(1) or real(*a, **k))
    prog = imagecl.load(EXAMPLES / "lcs.icl")
    args = wm.instance_arguments(prog, 20, 16, {})
    import wavefront_reference as ref

    for _ in range(2):
        assert np.array_equal(prog(**args)["length"], ref.lcs(args["a"][:20], args["b"][:16]))
    assert len(calls) == 1


@pytest.mark.slow
def test_the_benchmark_runs_quick_on_pocl(tmp_path):
    import os

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "wavefront_split.py"
    env = {**os.environ, "POCL_DEVICES": "pthread pthread pthread", "IMAGECL_TUNED": str(tmp_path / "registry")}
    done = subprocess.run([sys.executable, str(script), "--quick", "--time-limit", "40", "--models",
                           "gradient_boosting,seed_trees", "--out", str(tmp_path / "w.json")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    data = json.loads((tmp_path / "w.json").read_text())
    assert data["instances"] and all(not r["wrong"] for r in data["instances"])
    assert {"gradient_boosting", "seed_trees"} <= set(data["models"])
