"""The peer-comparison harness (imagecl/bench/peers.py, run by benchmarks/peers.py): it runs end to end at tiny sizes on the
OpenCL device here, our outputs agree with SciPy's and OpenCV's (independent references), and a
peer whose output is wrong is rejected instead of timed."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

pytest.importorskip("scipy")
from imagecl.bench import peer_impls, peers, peers_report  # noqa: E402
from imagecl.bench.peer_workloads import all_workloads  # noqa: E402


class WrongPeer(peer_impls.Peer):
    """Returns SciPy's correct result with one pixel changed: the check must refuse it."""
    name, module = "wrong on purpose", "numpy"

    def prepare(self, workload, args):
        run = peer_impls.SciPyPeer().prepare(workload, args)

        def fetch():
            outputs = {k: np.array(v, copy=True) for k, v in run.fetch().items()}
            first = next(iter(outputs.values()))
            first[3, 5] += 1
            return outputs
        return peer_impls.PeerRun(run.time_once, fetch)


def _workload(key):
    return next(w for w in all_workloads() if w.key == key)


def test_check_output_tolerances():
    w = _workload("conv3")
    ref = {"output": np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8)}
    assert peers.check_output({"output": ref["output"] + 1e-6}, ref, w) is None
    assert "differs at (2, 3)" in peers.check_output({"output": ref["output"] + (np.arange(64) == 19).reshape(8, 8)
                                                      * 0.01}, ref, w)
    assert "shape" in peers.check_output({"output": ref["output"][:4]}, ref, w)
    assert "no output" in peers.check_output({}, ref, w)
    ints = {"output": np.full((4, 4), 100, np.uint8)}
    assert peers.check_output({"output": ints["output"] + 1}, ints, _workload("median3")) is not None
    assert peers.check_output({"output": ints["output"] + 1}, ints, _workload("bilateral")) is None  # 1 level
    assert peers.check_output({"output": ints["output"] + 2}, ints, _workload("bilateral")) is not None


def test_harness_end_to_end_rejects_a_wrong_peer(tmp_path):
    markdown = tmp_path / "BENCHMARKS.md"
    markdown.write_text("# Benchmarks\n\nkept text\n")
    argv = ["--device", "cpu", "--quick", "--size-scale", "0.25", "--only", "conv3,sobel,median3",
            "--tune-seconds", "1", "--repeats", "2", "--out", str(tmp_path), "--halide-schedulers", "Mullapudi2016",
            "--benchmarks-md", ""]
    result = peers.run(argv, extra_peers=[WrongPeer()])
    assert [r["workload"] for r in result["records"]] == ["conv3", "sobel", "median3"]
    for record in result["records"]:
        ours = record["imagecl"]
        assert ours["naive_seconds"] > 0 and ours["tuned_seconds"] > 0
        status = {p["peer"]: p for p in record["peers"]}
        # our output equals SciPy's (same boundary semantics), so SciPy's time counts
        assert status["SciPy ndimage"]["status"] == "ok", status["SciPy ndimage"]
        if status["OpenCV"]["status"] != "missing":
            assert status["OpenCV"]["status"] == "ok", status["OpenCV"]
        if status["Halide (autoscheduled)"]["status"] != "missing":
            assert status["Halide (autoscheduled)"]["status"] == "ok", status["Halide (autoscheduled)"]
        wrong = status["wrong on purpose"]
        assert wrong["status"] == "wrong output" and "differs at (3, 5)" in wrong["reason"]
        assert "seconds" not in wrong
    assert result["copy_bandwidth"]["bytes_per_second"] > 1e8
    saved = json.loads((tmp_path / "peers-cpu-quick.json").read_text())
    assert saved["command"].startswith("python benchmarks/peers.py --device cpu") and saved["partial"] is False
    assert (tmp_path / "peers-cpu-quick.png").stat().st_size > 1000 or not _has_matplotlib()
    table = (tmp_path / "peers-cpu-quick.md").read_text()
    assert "| convolution 3x3 |" in table and "wrong output: output 'output' differs" in table

    # the BENCHMARKS.md section skips quick runs; a full-size run's JSON is what it shows
    saved["quick"] = False
    saved["tag"] = "cpu"
    (tmp_path / "peers-cpu.json").write_text(json.dumps(saved))
    peers_report.update_benchmarks_md(tmp_path, markdown)
    peers_report.update_benchmarks_md(tmp_path, markdown)  # idempotent: one section, replaced
    text = markdown.read_text()
    assert text.count(peers_report.BEGIN) == 1 and "kept text" in text
    assert "| sobel (dx, dy) |" in text and "faster than SciPy" in text


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_targets_say_when_missed():
    result = {"device_kind": "nvidia", "copy_bandwidth": {"bytes_per_second": 1e12}}
    record = {"family": "sobel", "memory_bound": True, "bytes": 3 * 10 ** 9,
              "imagecl": {"tuned_seconds": 0.01},
              "peers": [{"peer": "cupyx.scipy.ndimage", "status": "ok", "seconds": 0.015}]}
    notes = peers_report.targets(result, record)
    assert notes == ["MISSED: 2x faster than cupyx (1.50x)", "MISSED: >= 70% of copy bandwidth (30%)"]
    record["peers"][0]["seconds"] = 0.03
    record["bytes"] = 8 * 10 ** 9
    assert peers_report.targets(result, record) == ["met: 2x faster than cupyx (3.00x)",
                                                    "met: >= 70% of copy bandwidth (80%)"]


class _Event:
    """A CUDA event stand-in: records the wall clock."""

    def __init__(self, *args, **kwargs):
        self.t = 0.0

    def record(self):
        import time
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


def _cupy_stand_in():
    """NumPy and SciPy in CuPy's place: the CuPy peer's own code (its calls, boundary modes and
    output arrays) runs without a GPU; cupyx.scipy.ndimage mirrors scipy.ndimage's interface."""
    import types

    from scipy import ndimage

    cupy = types.ModuleType("cupy")
    cupy.asarray, cupy.asnumpy, cupy.empty_like = np.asarray, np.asarray, np.empty_like
    cupy.cuda = types.SimpleNamespace(Event=_Event, get_elapsed_time=lambda a, b: a.elapsed_time(b))
    cupyx = types.ModuleType("cupyx")
    cupyx_scipy = types.ModuleType("cupyx.scipy")
    cupyx_scipy.ndimage = ndimage
    cupyx.scipy = cupyx_scipy
    return {"cupy": cupy, "cupyx": cupyx, "cupyx.scipy": cupyx_scipy, "cupyx.scipy.ndimage": ndimage}


@pytest.mark.parametrize("key", ["conv3", "conv9", "sobel", "harris", "median3"])
def test_gpu_peers_compute_the_workload_on_cpu_stand_ins(monkeypatch, key):
    """The GPU peers' code, run on stand-ins (NumPy/SciPy for CuPy, CPU tensors for CUDA ones),
    gives SciPy's result (which the harness test shows equal to ours): the boundary modes, filter
    flips and output names of CuPyPeer and TorchPeer are right before a GPU ever runs them."""
    for name, module in _cupy_stand_in().items():
        monkeypatch.setitem(sys.modules, name, module)
    workload = _workload(key)
    args = workload.make((40, 48), np.random.default_rng(1))
    expected_run = peer_impls.SciPyPeer().prepare(workload, args)
    expected_run.time_once()
    expected = {k: np.array(v) for k, v in expected_run.fetch().items()}
    candidates = [peer_impls.CuPyPeer()]
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        monkeypatch.setattr(torch.Tensor, "cuda", lambda self: self)
        monkeypatch.setattr(torch.cuda, "Event", _Event)
        real_ones = torch.ones
        monkeypatch.setattr(torch, "ones", lambda *a, device=None, **k: real_ones(*a, **k))
    candidates.append(peer_impls.TorchPeer())
    for peer in candidates:
        try:
            run = peer.prepare(workload, args)
        except peer_impls.NotOffered as exc:
            assert key == "median3" and peer.name == "PyTorch conv2d", exc
            continue
        assert run.time_once() >= 0
        problem = peers.check_output(run.fetch(), expected, workload)
        assert problem is None, f"{peer.name}: {problem}"
