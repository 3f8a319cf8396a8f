"""benchmarks/knowledge_eval.py on a tiny knowledge folder: splits evaluated in parallel give the
same report as one at a time, `--split` runs only the named splits, and an unknown split name is
a usage error."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import imagecl
from imagecl.tuner.knowledge import device_from_json, limits_from_features
from imagecl.tuner.store import Record, RunKey, Store, text_hash

ROOT = Path(__file__).resolve().parent.parent
SOBEL = ROOT / "examples" / "sobel.icl"
FEATURES = ROOT / "benchmarks" / "results" / "knowledge" / "features-cpu.json"
SIZES = ("64x64", "96x64", "128x128")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Sobel at three sizes on one CPU, time best at wg_x = 8."""
    out = tmp_path_factory.mktemp("knowledge")
    (out / "programs").mkdir()
    shutil.copy(SOBEL, out / "programs" / "sobel.icl")
    shutil.copy(FEATURES, out / "features-cpu.json")
    text = FEATURES.read_text()
    device = device_from_json(json.loads(text[text.index("{"):])["device"])
    sobel = imagecl.load(str(SOBEL))
    h = text_hash(SOBEL.read_text())
    with Store(out / "k.db") as store:
        for i, size in enumerate(SIZES):
            shape = tuple(int(v) for v in size.split("x"))
            space = sobel.space_for_limits(limits_from_features(device), tuple(reversed(shape)))
            for c in [space.complete(space.defaults)] + space.random(30, seed=i):
                t = 1e-3 * (1.0 + abs(math.log2(max(c["wg_x"], 1)) - 3))
                store.add(RunKey(h, "sobel", device.name, "d", size),
                          Record(config=c, status="ok", time=t, program_name="sobel", program_hash=h,
                                 device=device.name, driver="d", problem_size=size))
    return out


def _run(folder: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "knowledge_eval.py"), "--folder", str(folder),
                           "--out", str(out), "--methods", "forest", "--schemes", "leave one size out", *extra],
                          capture_output=True, text=True, timeout=300)


def test_parallel_splits_give_the_same_report(folder, tmp_path):
    one, two = _run(folder, tmp_path / "one.json"), _run(folder, tmp_path / "two.json", "--jobs", "3")
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("one.json", "two.json"))
    scheme = a["schemes"]["leave one size out"]
    assert scheme["splits"] == sorted(SIZES) and len(scheme["forest"]["cases"]) == 3
    assert a["schemes"] == b["schemes"]
    assert scheme["forest"]["summary"]["share_of_oracle"] > 0.9  # wg_x = 8 is learnt from the other sizes


def test_only_the_named_splits_and_unknown_names_refused(folder, tmp_path):
    done = _run(folder, tmp_path / "only.json", "--split", "96x64")
    assert done.returncode == 0, done.stderr
    scheme = json.loads((tmp_path / "only.json").read_text())["schemes"]["leave one size out"]
    assert scheme["splits"] == ["96x64"] and [c["size"] for c in scheme["forest"]["cases"]] == ["96x64"]
    bad = _run(folder, tmp_path / "bad.json", "--split", "99x99")
    assert bad.returncode == 2 and "--split: no split of the chosen schemes is named 99x99" in bad.stderr
    assert not (tmp_path / "bad.json").exists()
