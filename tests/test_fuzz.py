"""The checker under fuzzing (scripts/fuzz.py): every case ends in success or a located error,
never an internal error or a hang, and every accepted program builds on PoCL."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import fuzz  # noqa: E402

from imagecl.runtime.devices import select_device  # noqa: E402


def _explain(report: fuzz.Report) -> str:
    lines = [str(report.summary())]
    for case, outcome in report.failures[:5]:
        lines.append(f"--- {outcome.kind}: {case.name}: {outcome.detail}\n{case.source[:3000]}")
    return "\n".join(lines)


def test_every_case_is_accepted_or_a_located_error():
    report = fuzz.run(300, seed=11)
    assert report.counts["tried"] == 300
    assert report.counts["internal"] == 0 and report.counts["hang"] == 0, _explain(report)
    assert report.counts["error"] + report.counts["accepted"] == 300
    # the cases reach both sides of the checker
    assert report.counts["error"] >= 100 and report.counts["accepted"] >= 50, report.summary()


def test_every_accepted_case_builds():
    report = fuzz.run(45, seed=12, device=select_device(None))
    assert report.counts["wrong"] == 0, _explain(report)
    assert report.counts["builds"] == report.counts["accepted"] >= 10, report.summary()


@pytest.mark.slow
def test_thousands_of_cases():
    report = fuzz.run(3000, seed=13, device=select_device(None))
    assert not report.failures, _explain(report)


def test_cases_are_deterministic_and_varied():
    first = [c.source for c in fuzz.cases(40, seed=5)]
    assert first == [c.source for c in fuzz.cases(40, seed=5)]
    assert first != [c.source for c in fuzz.cases(40, seed=6)]
    assert len(set(first)) >= 35
    names = " ".join(c.name for c in fuzz.cases(300, seed=5))
    for kind in ("delete", "duplicate", "replace_name", "rename", "literal", "swap_names", "wrap", "pragma",
                 "helper", "generated"):
        assert kind in names


def test_generated_programs_are_mostly_valid():
    """The grammar's programs reach the code generator, not only the checker's errors."""
    import random

    import imagecl

    rng = random.Random(3)
    accepted = 0
    for _ in range(40):
        try:
            imagecl.compile(fuzz._Generator(rng).program())
            accepted += 1
        except imagecl.CompileError:
            pass
    assert accepted >= 20


def test_harness_reports_internal_errors_and_hangs(monkeypatch):
    import imagecl

    case = fuzz.Case("x", "void f() {}")
    monkeypatch.setattr(imagecl, "compile", lambda *a, **k: {}["boom"])
    assert fuzz.check(case)[0].kind == "internal"

    def slow(*a, **k):
        while True:
            pass

    monkeypatch.setattr(imagecl, "compile", slow)
    outcome, _ = fuzz.check(case, limit_s=0.2)
    assert outcome.kind == "hang"

    def unlocated(*a, **k):
        raise imagecl.CompileError("no position")

    monkeypatch.setattr(imagecl, "compile", unlocated)
    assert fuzz.check(case)[0].kind == "internal"


def test_harness_reports_programs_that_do_not_build(monkeypatch):
    import imagecl

    prog = imagecl.compile("#pragma imcl grid(a)\nvoid f(Image<float> a) { a[idx][idy] = 1.0f; }\n")
    monkeypatch.setattr(type(prog), "opencl_source", lambda self, *a, **k: "this is not C")
    why = fuzz.build(prog, select_device(None), seed=1)
    assert why is not None and "BuildError" in why
