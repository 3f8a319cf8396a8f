"""The benchmark scripts use the installed package only: none edits sys.path, the harnesses the
tests need live in imagecl/bench/, no test imports a script, and the scripts start."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


def test_no_script_edits_sys_path():
    assert SCRIPTS
    editing = [p.name for p in SCRIPTS if re.search(r"sys\.path\.(insert|append)", p.read_text())]
    assert editing == []


def test_no_test_imports_a_benchmark_script():
    # the folder named on the line of the import machinery or on the line before it
    loader = r"(spec_from_file_location|sys\.path\.(insert|append)|runpy)"
    pattern = re.compile(loader + r"[^\n]*benchmarks|\"benchmarks\"[^\n]*\n[^\n]*" + loader)
    offenders = [p.name for p in (ROOT / "tests").glob("test_*.py")
                 if p.name != Path(__file__).name and pattern.search(p.read_text())]
    assert offenders == []


def _help(script: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


@pytest.mark.parametrize("name", ["peers", "ground_truth"])
def test_scripts_start_from_any_folder(name, tmp_path):
    done = _help(ROOT / "benchmarks" / f"{name}.py", tmp_path)
    assert done.returncode == 0 and "usage:" in done.stdout and "Traceback" not in done.stderr, done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_every_script_starts(script, tmp_path):
    done = _help(script, tmp_path)
    assert done.returncode == 0 and "usage:" in done.stdout, done.stderr


def test_the_harnesses_find_the_checkout(tmp_path, monkeypatch):
    from imagecl.bench import repository
    from imagecl.errors import ImageCLError

    monkeypatch.delenv("IMAGECL_REPOSITORY", raising=False)
    monkeypatch.chdir(ROOT / "tests")
    assert repository() == ROOT
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ImageCLError, match="IMAGECL_REPOSITORY"):
        repository()
    monkeypatch.setenv("IMAGECL_REPOSITORY", str(ROOT))
    assert repository() == ROOT
