"""A shared results database for hand-written kernels (TunableKernel.tune), as `imagecl tune`
has for .icl programs: the best configurations of other kernels tuned on the device start the
search (`seeds`, their shared parameters only), and the same kernel's measurements at other
global sizes train the model (`prior`).

Kernel A is test_kernel_tuner's `scale` (parameters WPT, WG), tuned once for the module into a
database that each test copies; kernel B, `shift`, shares WG only (its other parameter is VW).
The expected seeds are worked out here from A's stored times, not by the code under test.
"""
from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from imagecl.errors import ArgumentError
from imagecl.tuner.kernel import Output, TunableKernel
from imagecl.tuner.store import Store
from imagecl.tuner.strategies import random_search

from test_kernel_tuner import scale_kernel

SHIFT = """
__kernel void shift(__global const float* x, __global float* y, const float b, const int n)
{
    const int base = get_global_id(0) * VW;
    for (int v = 0; v < VW; v++)
        if (base + v < n)
            y[base + v] = x[base + v] + b;
}
"""


def shift_kernel(n: int = 64) -> TunableKernel:
    x = np.linspace(-2, 2, n, dtype=np.float32)
    k = TunableKernel(SHIFT, "shift", global_size=n, local_size=1)
    k.add_parameter("VW", [1, 2])
    k.add_parameter("WG", [1, 2, 4, 8, 16], define=False)
    k.div_global_size(["VW"])
    k.mul_local_size(["WG"])
    k.set_arguments([x, Output(np.zeros(n, np.float32)), np.float32(0.5), np.int32(n)])
    k.set_reference({1: x + np.float32(0.5)})
    return k


@pytest.fixture(scope="module")
def scale_db(tmp_path_factory) -> Path:
    """Kernel A's every valid configuration measured (exhaustive, 11 of them)."""
    db = tmp_path_factory.mktemp("scale") / "a.db"
    k, _ = scale_kernel()
    k.tune(device="cpu", strategy="exhaustive", store=db, confirm=0)
    return db


def _copy(db: Path, tmp_path: Path) -> Path:
    shutil.copy(db, tmp_path / "shared.db")
    return tmp_path / "shared.db"


def _expected_seeds(db: Path, per_program: int = 3) -> list[dict]:
    """A's fastest successful configurations, each differing from the ones before it in both of
    its parameters (what a seed is, written out on the raw table)."""
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT config, time FROM measurements WHERE program_name = 'scale' AND status = 'ok'"
                           " ORDER BY time, id").fetchall()
    chosen: list[dict] = []
    for config, _ in rows:
        c = json.loads(config)
        if all(c["WPT"] != o["WPT"] and c["WG"] != o["WG"] for o in chosen):
            chosen.append(c)
        if len(chosen) == per_program:
            break
    return chosen


def _records(db: Path, name: str, size: str) -> int:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT COUNT(*) FROM measurements WHERE program_name = ? AND problem_size = ?",
                           (name, size)).fetchone()[0]


def test_another_kernel_starts_from_the_best_configurations_of_the_first(scale_db, tmp_path):
    db = _copy(scale_db, tmp_path)
    seeds = _expected_seeds(db)
    assert len(seeds) == 3 and len({s["WG"] for s in seeds}) == 3
    result = shift_kernel().tune(device="cpu", strategy="hybrid", budget=10, store=db, seed=0, confirm=0)
    # the first sample holds round(0.3 * 10) = 3 configurations: the three seeds' work-group sizes, in order;
    # WPT is not one of B's parameters and VW is drawn
    first = [c for c, _ in result.history[:3]]
    assert [c["WG"] for c in first] == [s["WG"] for s in seeds]
    assert all(set(c) == {"VW", "WG"} for c in first)
    assert result.info["transfer"] == {"seeds": 3, "programs": ["scale"]} and result.info["seeded"] == 3
    assert result.info["prior"] == {"measurements": 0, "sizes": []}


def test_transfer_false_tunes_cold(scale_db, tmp_path):
    db = _copy(scale_db, tmp_path)
    result = shift_kernel().tune(device="cpu", strategy="ml", budget=6, store=db, seed=0, confirm=0, transfer=False)
    assert "transfer" not in result.info and result.info["seeded"] == 0
    with pytest.raises(ArgumentError, match="transfer is True or False"):
        shift_kernel().tune(device="cpu", store=db, transfer="no")


def test_other_sizes_of_the_same_kernel_train_the_model_and_are_no_other_program(scale_db, tmp_path):
    db = _copy(scale_db, tmp_path)
    shift_kernel(64).tune(device="cpu", strategy="random", budget=4, store=db, seed=0, confirm=0)
    measured = _records(db, "shift", "64")
    assert measured == 4
    seen: dict = {}

    def spy(problem, budget, rng, *, prior=(), seeds=()):
        seen.update(context=dict(problem.context), prior=list(prior), seeds=list(seeds))
        return random_search(problem, budget, rng)

    result = shift_kernel(128).tune(device="cpu", strategy=spy, budget=3, store=db, seed=1, confirm=0)
    # shift at 64 is the same kernel: its measurements are a prior (with the size as a model input), not seeds
    assert result.info["prior"] == {"measurements": measured, "sizes": ["64"]}
    assert result.info["transfer"] == {"seeds": 3, "programs": ["scale"]}
    assert seen["context"] == {"size_0": 128.0}
    with sqlite3.connect(db) as con:
        stored = con.execute("SELECT config, time FROM measurements WHERE program_name = 'shift'"
                             " AND problem_size = '64' AND status = 'ok'").fetchall()
    assert sorted((json.dumps(o.config, sort_keys=True), o.time) for o in seen["prior"]) == \
        sorted((json.dumps(json.loads(c), sort_keys=True), t) for c, t in stored)
    assert all(o.context == {"size_0": 64.0} for o in seen["prior"])
    assert seen["seeds"] == _expected_seeds(db)
    with Store(db) as store:  # the two sizes are two runs of one family
        runs = {r.problem_size: r for r in store.runs() if r.program_name == "shift"}
    assert set(runs) == {"64", "128"} and runs["64"].family == runs["128"].family
    assert runs["64"].program_hash != runs["128"].program_hash
    # a kernel timed without verification is another family: verified measurements never train it
    unverified = shift_kernel(32).tune(device="cpu", strategy="ml", budget=4, store=db, confirm=0, verify=False)
    assert unverified.info["prior"] == {"measurements": 0, "sizes": []}


def test_seeds_and_prior_given_by_the_caller_win_over_the_store(scale_db, tmp_path):
    db = _copy(scale_db, tmp_path)
    mine = {"VW": 2, "WG": 16}
    result = shift_kernel().tune(device="cpu", strategy="ml", budget=5, store=db, seed=0, confirm=0,
                                 strategy_options={"seeds": [mine], "prior": []})
    assert result.history[0][0] == mine and result.info["seeded"] == 1
    assert "transfer" not in result.info and "prior" not in result.info


SPEC = """
import numpy as np
from imagecl import TunableKernel
from imagecl.tuner.kernel import Output

x = np.linspace(-2, 2, 64, dtype=np.float32)
kernel = TunableKernel({source!r}, "shift", global_size=64, local_size=1)
kernel.add_parameter("VW", [1, 2])
kernel.add_parameter("WG", [1, 2, 4, 8, 16], define=False)
kernel.div_global_size(["VW"])
kernel.mul_local_size(["WG"])
kernel.set_arguments([x, Output(np.zeros(64, np.float32)), np.float32(0.5), np.int32(64)])
kernel.set_reference({{1: x + np.float32(0.5)}})
"""


def test_the_tune_kernel_command_says_what_it_took_from_the_database(scale_db, tmp_path):
    db = _copy(scale_db, tmp_path)
    spec = tmp_path / "spec.py"
    spec.write_text(SPEC.format(source=SHIFT))

    def cli(*extra):
        return subprocess.run([sys.executable, "-m", "imagecl", "tune-kernel", str(spec), "--device", "cpu",
                               "--strategy", "ml", "--budget", "5", "--confirm", "0", "--db", str(db), *extra,
                               "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)

    done = cli("--no-transfer")
    assert done.returncode == 0, done.stderr
    assert "starting from" not in done.stderr
    done = cli()
    assert done.returncode == 0, done.stderr
    assert f"starting from 3 configurations of 1 other program tuned on this device (scale) from {db}" in done.stderr
