"""benchmarks/figures.py (imagecl.bench.figures) draws the evaluation figures from the committed raw results."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_figures_from_the_committed_results(tmp_path):
    pytest.importorskip("matplotlib")
    from PIL import Image

    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "figures.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name in ("variants.png", "cross_device.png"):
        with Image.open(tmp_path / name) as image:
            assert image.format == "PNG" and image.size[0] > 600 and image.size[1] > 300
            assert len(np.unique(np.asarray(image.convert("L")))) > 10  # something is drawn


def test_cross_device_ratios_are_relative_to_each_devices_own_best():
    from imagecl.bench.figures import cross_ratios

    rows = json.loads((ROOT / "benchmarks" / "results" / "cross_device.json").read_text())["rows"]
    ratios = cross_ratios(rows)
    assert ratios[("nvidia", "gpu_best", "sobel")] == 1.0 and ratios[("cpu", "cpu_best", "sobel")] == 1.0
    assert ratios[("nvidia", "cpu_best", "sobel")] == pytest.approx(0.0010919360000000002 / 6.5696e-05)
    assert ratios[("cpu", "gpu_best", "sobel")] == pytest.approx(0.014705309000000001 / 0.018047302)
    assert ratios[("nvidia", "cpu_best", "convolution9")] is None  # cannot run there
