"""benchmarks/knowledge_table.py: the evaluation's Markdown tables, from a hand-made report whose
figures are known."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _case(share, default, single, illegal, few, device):
    return {"case": 0, "share": share, "speedup_default": default, "speedup_single": single, "illegal": illegal,
            "share_few_shot": few, "within_noise": False, "program": "p", "device": device, "size": "8x8"}


def test_table_figures_from_a_known_report(tmp_path):
    cases = [_case(1.0, 4.0, 1.0, False, 1.0, "A"), _case(0.25, 1.0, 0.5, True, 0.5, "A"),
             _case(0.5, 2.0, 2.0, False, 1.0, "B"), _case(0.85, 8.0, 4.0, False, float("nan"), "B")]
    report = {"schemes": {"leave one device out": {"splits": ["A", "B"], "all_splits": ["A", "B", "C"],
                                                   "forest": {"summary": {}, "cases": cases}}}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "knowledge_table.py"), str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| leave one device out")]
    # mean .65, median .675, worst .25; one case of four under .5; x default (4*1*2*8)^(1/4) = 2.83;
    # x best single (1*.5*2*4)^(1/4) = 1.41; one illegal; best of top 10 over the three known: .833
    assert rows[0] == ("| leave one device out | 2/3 | forest | 4 | 0.650 / 0.675 / 0.25 | 0.250 | 2.83 | 1.41 "
                       "| 0.250 | 0.833 |")
    assert rows[1] == "| leave one device out | A | forest | 2 | 0.625 / 0.25 | 0.500 | 0.500 | 0.750 |"
    assert rows[2] == "| leave one device out | B | forest | 2 | 0.675 / 0.50 | 0.000 | 0.000 | 1.000 |"
