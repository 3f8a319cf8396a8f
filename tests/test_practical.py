"""Practical use: our exports load unmodified in Kernel Tuner, imports keep everything, the
command line's rough edges (issue 20).

Kernel Tuner itself is the reference for the cache format: its simulation mode has to replay
our export as written, returning the times the database holds.
"""
from __future__ import annotations

import itertools
import os
import json
from pathlib import Path

import numpy as np
import pytest

from imagecl.cli import main
from imagecl.tuner.store import Record, RunKey, Store

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RUN = RunKey("abc123", "blur", "pthread-test-device", "PoCL 6", "64x32")


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    assert "internal error" not in captured.err and "Traceback" not in captured.err, captured.err
    return code, captured.out, captured.err


def _constructed_db(path: Path) -> dict[tuple[int, int], Record]:
    """Every configuration of a 2x3 space: four timed three times each, a build error, a timeout."""
    records = {}
    for i, (px, wg) in enumerate(itertools.product([1, 2], [4, 8, 16])):
        if (px, wg) == (2, 16):
            r = Record({"px_x": px, "wg_x": wg}, "build_error", None, error="clBuildProgram failed")
        elif (px, wg) == (2, 4):
            r = Record({"px_x": px, "wg_x": wg}, "timeout", None, error="timed out", limit=5.0)
        else:
            t = 1e-3 * (i + 1)
            r = Record({"px_x": px, "wg_x": wg}, "ok", t, [t, 1.5 * t, 1.25 * t], timestamp=1.7e9 + i)
        records[(px, wg)] = r
    with Store(path) as store:
        for r in records.values():
            store.add(RUN, r)
    return records


def _simulate_in_kernel_tuner(cache: Path, only_measured: bool = False) -> list[dict]:
    """Kernel Tuner's simulation mode on `cache`, with the metadata the file says it has."""
    kernel_tuner = pytest.importorskip("kernel_tuner")
    data = json.loads(cache.read_text())
    keys = data["tune_params_keys"]
    measured = {tuple(e[k] for k in keys) for e in data["cache"].values()}

    def measured_only(p):  # a random sample is not the whole product of the values
        return tuple(p[k] for k in keys) in measured

    results, _ = kernel_tuner.tune_kernel(
        data["kernel_name"], "__kernel void unused() {}", tuple(data["problem_size"]), [], data["tune_params"],
        restrictions=[measured_only] if only_measured else None, strategy="brute_force", simulation_mode=True,
        cache=str(cache), quiet=True)
    return results


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_kernel_tuner_simulation_replays_our_export_of_a_real_measurement(tmp_path, capsys):
    db, cache = tmp_path / "m.db", tmp_path / "m.kt.json"
    code, _, err = cli(capsys, "measure", EXAMPLES / "threshold.icl", "--size", "32x16", "--random", "3",
                       "--db", db, "--timeout", "30")
    assert code == 0, err
    with Store(db, readonly=True) as store:
        (run,) = store.runs()
        stored = list(store.records(run))
    code, _, err = cli(capsys, "export", "--db", db, "--format", "kernel_tuner", "-o", cache)
    assert code == 0, err
    data = json.loads(cache.read_text())
    assert data["device_name"] == run.device and data["kernel_name"] == run.program_name == "copy"
    assert data["problem_size"] == [32, 16]
    results = _simulate_in_kernel_tuner(cache, only_measured=True)
    keys = data["tune_params_keys"]
    got = {tuple(r[k] for k in keys): r for r in results}
    want = {tuple(r.config[k] for k in keys): r for r in stored}
    assert set(got) == set(want) and len(got) == 3
    for key, record in want.items():
        assert got[key]["time"] == pytest.approx(record.time * 1e3, rel=1e-12)
        assert got[key]["times"] == pytest.approx([t * 1e3 for t in record.times], rel=1e-12)
        # every timing, not only the median (a launch slower than the engine's limit on a loaded
        # machine is timed once, so the count is the record's; the constructed test has several)
        assert len(got[key]["times"]) == len(record.times) >= 1


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_kernel_tuner_simulation_sees_all_timings_and_failure_kinds(tmp_path, capsys):
    db, cache = tmp_path / "c.db", tmp_path / "c.json"
    records = _constructed_db(db)
    code, out, err = cli(capsys, "export", "--db", db, "--format", "kernel_tuner", "-o", cache)
    assert code == 0, err
    results = _simulate_in_kernel_tuner(cache)  # the whole product is in the cache: no restriction needed
    assert len(results) == 6
    for r in results:
        record = records[(r["px_x"], r["wg_x"])]
        if record.status == "ok":
            assert r["time"] == pytest.approx(record.time * 1e3) and r["times"] == pytest.approx(
                [t * 1e3 for t in record.times])
        elif record.status == "build_error":
            assert r["time"] == "CompilationFailedConfig" and r["imagecl_status"] == "build_error"
        else:
            assert r["time"] == "RuntimeFailedConfig" and r["imagecl_status"] == "timeout"
    # and back: every timing and every failure's kind survive the round trip
    back = tmp_path / "back.db"
    code, out, err = cli(capsys, "import", cache, "--db", back)
    assert code == 0, err
    with Store(back, readonly=True) as store:
        (run,) = store.runs()
        imported = {(r.config["px_x"], r.config["wg_x"]): r for r in store.records(run)}
    assert (run.program_name, run.device, run.problem_size) == ("blur", RUN.device, "64x32")
    for key, record in records.items():
        assert imported[key].status == record.status
        assert imported[key].times == pytest.approx(record.times)
        assert imported[key].time == (pytest.approx(record.time) if record.time else None)
        if record.status == "ok":
            assert imported[key].timestamp == pytest.approx(record.timestamp)


def test_import_maps_kernel_tuner_and_t4_failure_kinds(tmp_path, capsys):
    entry = {"time": 2.0, "times": [2.0, 3.0], "timestamp": "2024-01-02T03:04:05+00:00"}
    kt = {"device_name": "A100", "kernel_name": "k", "problem_size": [256, 128], "tune_params_keys": ["x"],
          "tune_params": {"x": [1, 2, 3, 4]},
          "cache": {"1": {"x": 1, **entry}, "2": {"x": 2, "time": "InvalidConfig"},
                    "3": {"x": 3, "time": "CompilationFailedConfig"}, "4": {"x": 4, "time": "RuntimeFailedConfig"}}}
    t4 = {"schema_version": "1.0.0", "results": [
        {"configuration": {"x": 1}, "invalidity": "correct", "times": {"runtimes": [2.0, 3.0]},
         "measurements": [{"name": "time", "value": 2.0, "unit": "ms"}]},
        {"configuration": {"x": 2}, "invalidity": "constraints", "measurements": []},
        {"configuration": {"x": 3}, "invalidity": "compile", "measurements": []},
        {"configuration": {"x": 4}, "invalidity": "runtime", "measurements": []},
        {"configuration": {"x": 5}, "invalidity": "timeout", "measurements": []},
        {"configuration": {"x": 6}, "invalidity": "correctness", "correctness": 0, "measurements": []}]}
    want = {1: "ok", 2: "invalid_config", 3: "build_error", 4: "error", 5: "timeout", 6: "wrong_output"}
    for name, data in (("kt.json", kt), ("t4.json", t4)):
        (tmp_path / name).write_text(json.dumps(data))
        db = tmp_path / f"{name}.db"
        code, _, err = cli(capsys, "import", tmp_path / name, "--db", db)
        assert code == 0, err
        with Store(db, readonly=True) as store:
            got = {r.config["x"]: r for r in store.records()}
        assert {x: r.status for x, r in got.items()} == {x: s for x, s in want.items() if x in got}
        assert len(got) == (4 if name == "kt.json" else 6)
        assert got[1].time == pytest.approx(2e-3) and got[1].times == pytest.approx([2e-3, 3e-3])
    with Store(tmp_path / "kt.json.db", readonly=True) as store:
        (run,) = store.runs()
        first = next(r for r in store.records() if r.config["x"] == 1)
    assert run.problem_size == "256x128" and run.device == "A100"
    assert first.timestamp == pytest.approx(1704164645.0)


def test_import_is_one_transaction(tmp_path, capsys, monkeypatch):
    """All of a file or nothing: a failure at the 3rd record leaves none stored (one commit per
    record, as before, kept two and took 25 s for 4,362 records)."""
    kt = {"device_name": "d", "kernel_name": "k", "problem_size": 8, "tune_params_keys": ["x"],
          "tune_params": {"x": list(range(10))},
          "cache": {str(x): {"x": x, "time": 1.0 + x} for x in range(10)}}
    (tmp_path / "kt.json").write_text(json.dumps(kt))
    import imagecl.tuner.store as store_module

    original, calls = store_module._row, []

    def failing_row(run, record):  # the 3rd record fails after two were written in the transaction
        calls.append(record)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return original(run, record)

    monkeypatch.setattr(store_module, "_row", failing_row)
    assert cli(capsys, "import", tmp_path / "kt.json", "--db", tmp_path / "k.db")[0] == 130
    monkeypatch.setattr(store_module, "_row", original)
    with Store(tmp_path / "k.db", readonly=True) as store:
        assert list(store.records()) == []
    code, out, err = cli(capsys, "import", tmp_path / "kt.json", "--db", tmp_path / "k.db")
    assert code == 0, err
    with Store(tmp_path / "k.db", readonly=True) as store:
        assert sorted(r.time for r in store.records()) == pytest.approx([(1.0 + x) * 1e-3 for x in range(10)])
    # its progress, on standard error (stdout keeps the summary): a line per tenth of the records
    lines = [line for line in err.splitlines() if line.startswith("importing:")]
    assert len(lines) == 10 and lines[-1].startswith("importing: 100%") and "10/10" in lines[-1]
    assert "importing" not in out and out.startswith("stored 10 measurements")


def test_counted_reports_as_the_consumer_takes_items():
    from imagecl.progress import counted

    seen = []
    items = counted(iter("abcd"), 4, lambda done, total: seen.append((done, total)))
    assert next(items) == "a" and seen == []  # reported once taken, not ahead of the consumer
    assert list(items) == ["b", "c", "d"] and seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_t4_export_writes_its_metadata_beside_the_results(tmp_path, capsys):
    jsonschema = pytest.importorskip("jsonschema")
    kernel_tuner = pytest.importorskip("kernel_tuner")
    db = tmp_path / "c.db"
    records = _constructed_db(db)
    code, out, err = cli(capsys, "export", "--db", db, "--format", "t4", "-o", tmp_path / "blur.json")
    assert code == 0, err
    meta_path = tmp_path / "blur_metadata.json"
    assert str(meta_path) in out
    schemas = Path(kernel_tuner.__file__).parent / "schema" / "T4" / "1.0.0"
    results, meta = json.loads((tmp_path / "blur.json").read_text()), json.loads(meta_path.read_text())
    jsonschema.validate(results, json.loads((schemas / "results-schema.json").read_text()))
    jsonschema.validate(meta, json.loads((schemas / "metadata-schema.json").read_text()))
    m = meta["metadata"]
    assert (m["device_name"], m["kernel_name"], m["problem_size"]) == (RUN.device, "blur", [64, 32])
    stamps = sorted(r.timestamp for r in records.values() if r.timestamp)
    assert m["timestamps"]["first"].startswith("2023-11-14T22:13:20")  # 1.7e9 s, the earliest record
    assert len(stamps) == 4
    ok = [r for r in results["results"] if r["invalidity"] == "correct"]
    assert sorted(len(r["times"]["runtimes"]) for r in ok) == [3, 3, 3, 3]
    # the metadata file is an output too: it may not overwrite an input, here the database
    db_named = tmp_path / "y_metadata.json"
    db_named.write_bytes(db.read_bytes())
    before = db_named.read_bytes()
    code, _, err = cli(capsys, "export", "--db", db_named, "--format", "t4", "-o", tmp_path / "y.json")
    assert code == 1 and "would overwrite" in err and db_named.read_bytes() == before
    assert not (tmp_path / "y.json").exists()


# ---- the command line's rough edges ----------------------------------------------------------------


def test_simulate_help_exits_0_and_o_is_not_option(tmp_path, capsys):
    import subprocess
    import sys

    helped = subprocess.run([sys.executable, "-m", "imagecl", "simulate", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "--max-evals" in helped.stdout and "--option" in helped.stdout
    assert "-o KEY" not in helped.stdout
    db = tmp_path / "c.db"
    _constructed_db(db)
    code, _, err = cli(capsys, "simulate", db, "--repeats", "1", "-o", "threshold=0.1")
    assert code == 1 and "--option KEY=VALUE" in err and "--output" in err
    code, out, err = cli(capsys, "simulate", db, "--strategy", "annealing", "--max-evals", "3", "--repeats", "1",
                         "--option", "temperature=0.5", "--json")
    assert code == 0, err
    assert json.loads(out)["options"] == {"temperature": 0.5}


def test_config_takes_the_json_description_tune_writes(tmp_path, capsys):
    import imagecl
    from imagecl.export import describe_variant

    program = imagecl.load(EXAMPLES / "sobel.icl")
    config = {"wg_x": 8, "wg_y": 4, "px_x": 2, "px_y": 1, "interleaved": 1, "image_input": 0, "local_input": 0,
              "interior": 1, "vector_x": 0}
    description = tmp_path / "sobel.json"
    description.write_text(json.dumps(describe_variant(program, config, "cpu", (32, 64), measured=1e-4)))
    code, from_description, err = cli(capsys, "compile", EXAMPLES / "sobel.icl", "--config", f"@{description}")
    assert code == 0, err
    code, direct, err = cli(capsys, "compile", EXAMPLES / "sobel.icl", "--config", json.dumps(config))
    assert code == 0, err
    code, default, err = cli(capsys, "compile", EXAMPLES / "sobel.icl")
    assert from_description == direct and direct != default


# ---- the OpenCL compiler's chatter -------------------------------------------------------------------

WARNING_KERNEL = """#warning imagecl-test-{token}
__kernel void scale(__global const float* x, __global float* y) {{ int i = get_global_id(0); y[i] = 2.0f * x[i]; }}
"""


def test_build_warnings_stay_out_of_api_output_unless_asked(capfd, monkeypatch, recwarn):
    import uuid

    from imagecl.runtime.devices import select_device
    from imagecl.runtime.launcher import build

    device = select_device("cpu")
    monkeypatch.delenv("IMAGECL_BUILD_LOG", raising=False)
    token = uuid.uuid4().hex
    build(device, WARNING_KERNEL.format(token=token))
    out, err = capfd.readouterr()
    assert out == "" and err == "", err  # PoCL's "1 warning generated." and pyopencl's CompilerWarning
    assert not [w for w in recwarn if "compiler output" in str(w.message).lower()
                or "non-empty" in str(w.message).lower()]
    monkeypatch.setenv("IMAGECL_BUILD_LOG", "1")
    token = uuid.uuid4().hex
    build(device, WARNING_KERNEL.format(token=token))
    out, err = capfd.readouterr()
    # (PoCL's log can be a previous build's: its text, not the token, is what is shown)
    assert out == "" and "build log" in err and "warning" in err


def test_build_warnings_stay_out_of_tune_kernel_unless_verbose(tmp_path):
    import subprocess
    import sys
    import uuid

    def tune(verbose: bool) -> subprocess.CompletedProcess:
        token = uuid.uuid4().hex  # a new source: no build cache skips the build
        spec = tmp_path / f"spec_{token}.py"
        spec.write_text(
            "import numpy as np\nfrom imagecl.tuner.kernel import TunableKernel, Output\n"
            f"SRC = {WARNING_KERNEL.format(token=token)!r}\n"
            "x = np.arange(64, dtype=np.float32)\n"
            "kernel = TunableKernel(SRC, 'scale', global_size=64, local_size=1)\n"
            "kernel.add_parameter('WG', [1, 2], define=False)\nkernel.mul_local_size(['WG'])\n"
            "kernel.set_arguments([x, Output(np.zeros(64, np.float32))])\nkernel.set_reference({1: 2 * x})\n")
        env = {k: v for k, v in os.environ.items() if k != "IMAGECL_BUILD_LOG"}
        result = subprocess.run([sys.executable, "-m", "imagecl", "tune-kernel", str(spec), "--strategy", "exhaustive",
                                 "--confirm", "0", "--device", "cpu", "-o", str(tmp_path / token)]
                                + (["--verbose"] if verbose else []), capture_output=True, text=True, env=env)
        assert result.returncode == 0, result.stderr
        return result, token

    quiet, token = tune(False)
    said = quiet.stderr.lower()
    assert "generated" not in said and "compilerwarning" not in said and "build log" not in said, quiet.stderr
    loud, token = tune(True)
    assert "build log" in loud.stderr and "warning:" in loud.stderr and "warning:" not in loud.stdout


def test_devices_json_lists_the_devices_with_their_limits(capsys):
    import pyopencl as cl

    code, out, err = cli(capsys, "devices", "--json")
    assert code == 0, err
    listed = json.loads(out)
    reference = [d for p in cl.get_platforms() for d in p.get_devices()]  # pyopencl, queried independently
    assert [d["index"] for d in listed] == list(range(len(reference)))
    for entry, device in zip(listed, reference):
        assert entry["name"] == device.name.strip()
        assert entry["local_memory"] == device.local_mem_size and entry["compute_units"] == device.max_compute_units
        assert entry["max_work_group_size"] == device.max_work_group_size
        assert entry["image_support"] is bool(device.image_support)
        assert entry["global_memory"] == device.global_mem_size


# ---- progress ----------------------------------------------------------------------------------------


def test_progress_without_a_terminal_prints_tenths_with_time_left_on_stderr(capsys):
    from types import SimpleNamespace

    from imagecl.progress import Progress

    progress = Progress("measuring")
    summary = SimpleNamespace(statuses={"ok": 3, "timeout": 1}, best_time=2.5e-3)
    for done in range(1, 41):
        progress(done, 40, summary)
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 11  # the first result, then one line per tenth, not one per configuration
    assert lines[-1].startswith("measuring: 100%") and "40/40" in lines[-1]
    assert "<" in lines[0] and "failed 1, best 2.5000 ms" in lines[0]  # tqdm's [elapsed<left]


def test_progress_on_a_terminal_is_a_tqdm_bar(capsys, monkeypatch):
    import imagecl.progress as progress_module

    monkeypatch.setattr(progress_module, "_is_terminal", lambda stream: True)
    progress = progress_module.Progress("tuning")
    for done in range(1, 6):
        progress(done, 5, None)
    out, err = capsys.readouterr()
    assert out == "" and "tuning: 100%" in err and "5/5" in err and "\r" in err


def test_simulate_json_stdout_stays_json_with_progress_on_stderr(tmp_path, capsys):
    db = tmp_path / "c.db"
    _constructed_db(db)
    code, out, err = cli(capsys, "simulate", db, "--strategy", "random", "--max-evals", "2", "--repeats", "4",
                         "--json")
    assert code == 0, err
    assert len(json.loads(out)["repeats"]) == 4
    assert "simulating random: 100%" in err and "4/4" in err


# ---- plots -------------------------------------------------------------------------------------------


def test_best_so_far_is_the_running_minimum_of_successes():
    from imagecl.plots import best_so_far

    assert best_so_far([None, 3.0, 4.0, None, 1.0, 2.0]) == [None, 3.0, 3.0, 3.0, 1.0, 1.0]


def test_results_plot_writes_an_image_and_refuses_the_database(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from PIL import Image

    db = tmp_path / "c.db"
    _constructed_db(db)
    code, out, err = cli(capsys, "results", "--db", db, "--plot", tmp_path / "p.png", "--json")
    assert code == 0, err
    assert len(json.loads(out)) == 6 and "plotted 6 measurements (4 timed)" in err
    with Image.open(tmp_path / "p.png") as image:
        assert image.format == "PNG" and image.size[0] > 300 and image.size[1] > 300
        assert len(np.unique(np.asarray(image.convert("L")))) > 10  # something is drawn
    before = db.read_bytes()
    code, _, err = cli(capsys, "results", "--db", db, "--plot", db)
    assert code == 1 and "would overwrite" in err and db.read_bytes() == before
    code, _, err = cli(capsys, "results", "--db", db, "--plot", tmp_path / "p.xyz")
    assert code == 1 and "png" in err and not (tmp_path / "p.xyz").exists()


# ---- the distribution --------------------------------------------------------------------------------


def test_sdist_ships_the_examples_grammar_and_templates(tmp_path):
    """The sdist (setuptools, offline); scripts/check_dist.py also builds the wheel and runs it
    installed on its own, which needs the package index for pip's isolated build."""
    import subprocess
    import sys
    import tarfile

    import shutil

    root = Path(__file__).resolve().parent.parent
    # a clean copy: an earlier build's *.egg-info/SOURCES.txt would add its files to the sdist
    clean = tmp_path / "src"
    shutil.copytree(root, clean, ignore=shutil.ignore_patterns(".venv", "build", "dist", "*.egg-info", "__pycache__",
                                                                 "benchmarks", ".git", ".hypothesis", "out"))
    built = subprocess.run([sys.executable, "-c", "import setuptools.build_meta as b, sys; print(b.build_sdist(sys.argv[1]))",
                            str(tmp_path)], cwd=clean, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    with tarfile.open(tmp_path / built.stdout.strip().splitlines()[-1]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    examples = {p.relative_to(root).as_posix() for p in (root / "examples").rglob("*.icl")}
    assert examples and examples <= names
    assert {"grammar/imagecl.lark", "templates/kernel.cl.j2", "README.md", "examples/data/shapes.png"} <= names
    assert not [n for n in names if "__pycache__" in n or n.startswith(".venv")]


def test_commands_other_than_serve_run_without_the_web_framework(tmp_path):
    """The GPU hosts install only what measuring needs: building the parser must not import the
    service's web framework (it did, and `imagecl tune` ended in ModuleNotFoundError there)."""
    import subprocess
    import sys

    example = Path(__file__).resolve().parent.parent / "examples" / "sobel.icl"
    # a finder that refuses the framework, as on a machine without it
    code = ("import sys\n"
            "class Refuse:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('starlette', 'uvicorn'):\n"
            "            raise ModuleNotFoundError(name)\n"
            "sys.meta_path.insert(0, Refuse())\n"
            "from imagecl.cli import main\n"
            f"sys.exit(main(['check', {str(example)!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ok: kernel 'sobel'" in done.stdout
