"""The peer-comparison harness (imagecl/bench/peers.py, run by benchmarks/peers.py): it runs end to end at tiny sizes on the
OpenCL device here, our outputs agree with SciPy's and OpenCV's (independent references), and a
peer whose output is wrong is rejected instead of timed. The GPU peers' code (CuPy, torch, OpenCV's
UMat path, Halide's GPU pipelines) is checked against SciPy on CPU stand-ins or CPU targets; the
ratios over tuning runs, the targets' marks and --merge on hand-made results."""
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
    argv = ["--device", "cpu", "--quick", "--size-scale", "0.25", "--workloads", "conv3,sobel,median3",
            "--runs", "2", "--budget", "2", "--tune-seconds", "5", "--repeats", "2", "--out", str(tmp_path),
            "--halide-schedulers", "Mullapudi2016", "--benchmarks-md", ""]
    result = peers.run(argv, extra_peers=[WrongPeer()])
    assert [r["workload"] for r in result["records"]] == ["conv3", "sobel", "median3"]
    for record in result["records"]:
        ours = record["imagecl"]
        # two independent tuning runs (seeds 0 and 1, each its own store); the tuned time is their median
        assert [run["tuning"]["seed"] for run in ours["runs"]] == [0, 1]
        times = [run["tuned_seconds"] for run in ours["runs"]]
        assert ours["naive_seconds"] > 0 and all(t > 0 for t in times)
        assert ours["tuned_seconds"] == pytest.approx(float(np.median(times)))
        assert all(run["tuning"]["budget"] == 2 and run["tuning"]["stored_before"] == 0 for run in ours["runs"])
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


def test_each_tuning_run_starts_with_empty_build_caches(tmp_path, monkeypatch):
    """Independent runs do not reuse each other's builds: inside cold_caches the processes a
    Measurer starts compile into empty PoCL (and NVIDIA) caches under the run's folder and
    imagecl's build cache is the run's own; the variables are restored afterwards, and a tuning
    run there fills them (so its worker and builders did read them)."""
    import imagecl

    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path / "shared-pocl"))
    monkeypatch.delenv("CUDA_CACHE_PATH", raising=False)
    program = imagecl.compile(_workload("conv3").source, "<conv3>")
    args = _workload("conv3").make((48, 40), np.random.default_rng(0))
    with peers.cold_caches(tmp_path / "run") as cache_dir:
        assert cache_dir == tmp_path / "run" / "builds"
        pocl = tmp_path / "run" / "pocl_cache_dir"
        assert os_environ("POCL_CACHE_DIR") == str(pocl) and pocl.is_dir() and not any(pocl.iterdir())
        assert os_environ("CUDA_CACHE_PATH") == str(tmp_path / "run" / "cuda_cache_path")
        tuning = peers.tune(program, args, None, tmp_path / "run" / "t.db", 60.0, 3, 1e-3, cache_dir=cache_dir)
        assert tuning["measured"] >= 2
        assert any(pocl.rglob("*.so")) and any(cache_dir.rglob("*"))  # compiled there, by the run's processes
    assert os_environ("POCL_CACHE_DIR") == str(tmp_path / "shared-pocl") and os_environ("CUDA_CACHE_PATH") is None


def os_environ(name):
    import os

    return os.environ.get(name)


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _runs(*seconds):
    return {"tuned_seconds": float(np.median(seconds)),
            "runs": [{"tuned_seconds": t, "tuning": {"evaluations": 4, "budget": 4}} for t in seconds]}


def test_ratio_over_runs_is_the_median_with_its_range():
    from imagecl.bench.peer_runs import ratio_summary, run_times

    # the peer takes 6 ms; three runs tuned to 2, 3 and 1.5 ms: ratios 3, 2, 4 -> median 3, range 2-4
    summary = ratio_summary(0.006, run_times(_runs(0.002, 0.003, 0.0015)))
    assert (summary.median, summary.low, summary.high, summary.runs) == pytest.approx((3.0, 2.0, 4.0, 3))
    assert summary.text() == "3.00x (2.00-4.00x over 3 runs)"
    # not the best run: a lucky run does not move the median
    assert ratio_summary(0.006, [0.003, 0.003, 0.0001]).median == pytest.approx(2.0)
    # a run whose tuning found nothing is left out; a record from before the runs counts as one run
    assert run_times({"runs": [{"tuned_seconds": None}, {"tuned_seconds": 0.002}]}) == [0.002]
    assert run_times({"tuned_seconds": 0.004}) == [0.004]
    assert ratio_summary(0.006, []) is None


def test_gpu_targets_are_marked_met_or_missed():
    result = {"device_kind": "nvidia", "copy_bandwidth": {"bytes_per_second": 1e12}}
    record = {"family": "sobel", "memory_bound": True, "bytes": 3 * 10 ** 9,
              "imagecl": _runs(0.01, 0.012, 0.009),
              "peers": [{"peer": "cupyx.scipy.ndimage", "status": "ok", "seconds": 0.015},
                        {"peer": "Halide GPU", "status": "ok", "seconds": 0.011},
                        {"peer": "PyTorch conv2d", "status": "error", "reason": "x"}]}
    assert peers_report.targets(result, record) == [
        "MISSED: 2x faster than cupyx (1.50x (1.25-1.67x over 3 runs))",
        "met: faster than Halide's best GPU schedule (1.10x (0.92-1.22x over 3 runs))",
        "MISSED: >= 90% of copy bandwidth (30%)"]
    record["peers"][0]["seconds"] = 0.03
    record["peers"][1]["seconds"] = 0.009
    record["bytes"] = 9.5 * 10 ** 9
    assert peers_report.targets(result, record) == [
        "met: 2x faster than cupyx (3.00x (2.50-3.33x over 3 runs))",
        "MISSED: faster than Halide's best GPU schedule (0.90x (0.75-1.00x over 3 runs))",
        "met: >= 90% of copy bandwidth (95%)"]


def test_cpu_targets_are_marked_met_or_missed():
    result = {"device_kind": "cpu", "copy_bandwidth": {"bytes_per_second": 1e11}}
    record = {"family": "convolution", "memory_bound": False, "bytes": 1,
              "imagecl": _runs(0.010, 0.011, 0.013),
              "peers": [{"peer": "SciPy ndimage", "status": "ok", "seconds": 0.1},
                        {"peer": "OpenCV", "status": "ok", "seconds": 0.0095},
                        {"peer": "Halide (autoscheduled)", "status": "ok", "seconds": 0.012}]}
    # OpenCV 9.5 ms, ours 11 ms (median): 1.16x its time, within 1.2x; Halide 12 ms: faster
    assert peers_report.targets(result, record) == [
        "met: faster than Halide's best autoscheduler (1.09x (0.92-1.20x over 3 runs))",
        "met: within 1.2x of OpenCV (1.16x its time; speed ratio 0.86x (0.73-0.95x over 3 runs))",
        "met: faster than SciPy (9.09x (7.69-10.00x over 3 runs))"]
    record["peers"][1]["seconds"] = 0.009  # 1.22x its time
    record["peers"][2]["seconds"] = 0.0105
    notes = peers_report.targets(result, record)
    assert notes[0].startswith("MISSED: faster than Halide's best autoscheduler (0.95x")
    assert notes[1].startswith("MISSED: within 1.2x of OpenCV (1.22x its time")
    record["peers"][1]["status"] = "n/a"  # OpenCV without the operation: no OpenCV target
    notes = peers_report.targets(result, record)
    assert [n.split(":")[1].strip()[:12] for n in notes] == ["faster than ", "faster than "]
    assert peers_report.targets(result, {**record, "imagecl": {"runs": [{"tuned_seconds": None}]}}) == [
        "MISSED: no tuned time"]


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


@pytest.mark.parametrize("key", ["conv3", "conv9", "sobel", "harris", "median3", "conv3d"])
def test_gpu_peers_compute_the_workload_on_cpu_stand_ins(monkeypatch, key):
    """The GPU peers' code, run on stand-ins (NumPy/SciPy for CuPy, CPU tensors for CUDA ones),
    gives SciPy's result (which the harness test shows equal to ours): the boundary modes, filter
    flips and output names of CuPyPeer and TorchPeer are right before a GPU ever runs them."""
    for name, module in _cupy_stand_in().items():
        monkeypatch.setitem(sys.modules, name, module)
    workload = _workload(key)
    args = workload.make((10, 12, 14) if key == "conv3d" else (40, 48), np.random.default_rng(1))
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


# ---- the merge of calls that split the workload list ----------------------------------------------------
def _part(workloads, device="NVIDIA H100", kind="nvidia", seconds=100.0, bandwidth=3e12):
    return {"date": "2026-11-24 04:00 UTC", "device_kind": kind, "tag": kind, "quick": False, "partial": False,
            "command": "python benchmarks/peers.py --workloads " + ",".join(workloads), "seconds": seconds,
            "tune_seconds": 40, "runs": 3, "budget": 40, "repeats": 10, "note": None,
            "copy_bandwidth": {"bytes_per_second": bandwidth},
            "machine": {"opencl_device": device, "opencl_platform": "NVIDIA CUDA", "opencl_driver": "1",
                        "compute_units": 132, "load_average": [0.1], "cpu": "x", "cpu_cores": 16,
                        "peers": {"cupyx.scipy.ndimage": {"version": "14", "missing": None, "timing": "events"}}},
            "records": [{"workload": w, "title": w, "family": "convolution", "size": [64, 64], "memory_bound": False,
                         "bytes": 1, "imagecl": {"naive_seconds": 0.02, **_runs(0.01, 0.011, 0.012)},
                         "peers": [{"peer": "cupyx.scipy.ndimage", "status": "ok", "seconds": 0.03}]}
                        for w in workloads]}


def test_merge_joins_the_calls_of_one_device(tmp_path):
    first, second = tmp_path / "p1.json", tmp_path / "p2.json"
    first.write_text(json.dumps(_part(["conv3", "conv9"], seconds=100)))
    second.write_text(json.dumps(_part(["sobel"], seconds=50, bandwidth=3.1e12)))
    result = peers.run(["--merge", str(first), str(second), "--out", str(tmp_path / "all.json"),
                        "--benchmarks-md", ""])
    assert [r["workload"] for r in result["records"]] == ["conv3", "conv9", "sobel"]
    assert result["seconds"] == 150 and result["merged_from"] == 2
    assert result["copy_bandwidth"]["bytes_per_second"] == 3.1e12
    saved = json.loads((tmp_path / "all.json").read_text())
    assert [r["workload"] for r in saved["records"]] == ["conv3", "conv9", "sobel"]
    table = (tmp_path / "all.md").read_text()
    assert "| sobel |" in table and "met: 2x faster than cupyx (2.73x (2.50-3.00x over 3 runs))" in table
    assert result["partial"] is False

    # a call stopped before one of its workloads is partial, unless a later call measured that one
    stopped = _part(["conv3"], seconds=30)
    stopped.update(partial=True, command="python benchmarks/peers.py --workloads conv3,conv11")
    assert peers_report.merge_results([stopped, _part(["conv9"])])["partial"] is True
    assert peers_report.merge_results([stopped, _part(["conv11"])])["partial"] is False
    stopped["workloads"] = ["conv3", "median3"]  # recorded: the command is not read
    assert peers_report.merge_results([stopped, _part(["conv11"])])["partial"] is True
    # the inputs are never overwritten, and results of two devices are never joined
    with pytest.raises(SystemExit):
        peers.run(["--merge", str(first), str(second), "--out", str(first), "--benchmarks-md", ""])
    assert json.loads(first.read_text())["records"][0]["workload"] == "conv3"
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"records": []}))
    with pytest.raises(SystemExit):
        peers.run(["--merge", str(first), str(foreign), "--out", str(tmp_path / "x.json"), "--benchmarks-md", ""])
    # a peer missing in the first call and run in a later one is described as it ran
    absent, present = _part(["conv3"]), _part(["sobel"])
    absent["machine"]["peers"]["Halide GPU"] = {"version": None, "missing": "halide is not installed",
                                                "timing": "wall clock"}
    present["machine"]["peers"]["Halide GPU"] = {"version": "21.0.0", "missing": None, "timing": "wall clock"}
    joined = peers_report.merge_results([absent, present])
    assert joined["machine"]["peers"]["Halide GPU"]["version"] == "21.0.0"
    assert peers_report.merge_results([present, absent])["machine"]["peers"]["Halide GPU"]["version"] == "21.0.0"
    with pytest.raises(ValueError, match="different devices"):
        peers_report.merge_results([_part(["conv3"]), _part(["sobel"], kind="cpu")])
    with pytest.raises(ValueError, match="different OpenCL devices"):
        peers_report.merge_results([_part(["conv3"]), _part(["sobel"], device="NVIDIA H200")])


# ---- the new peers, checked against SciPy on the CPU ---------------------------------------------------
def _scipy_reference(workload, args):
    run = peer_impls.SciPyPeer().prepare(workload, args)
    run.time_once()
    return {k: np.array(v) for k, v in run.fetch().items()}


def test_ours_equals_scipy_on_the_3d_convolution():
    """The new 3-D workload: our program computes SciPy's convolve(mode='nearest') (an
    independent reference), so every peer checked against ours is checked against SciPy's."""
    import imagecl

    workload = _workload("conv3d")
    args = workload.make((6, 7, 9), np.random.default_rng(3))
    ours = imagecl.compile(workload.source, "<conv3d>")(input=args["input"], filter=args["filter"])
    assert peers.check_output(ours, _scipy_reference(workload, args), workload) is None


@pytest.mark.parametrize("key", ["conv3", "conv9", "sobel", "harris", "median3", "median5"])
def test_opencv_umat_peer_computes_the_workload(key):
    """OpenCV's OpenCL peer's calls (UMat in and out, filter flip, borders, scale) give SciPy's
    result; without OpenCL here UMat runs OpenCV's CPU code, the same calls."""
    pytest.importorskip("cv2")
    from imagecl.bench.peer_opencv_ocl import OpenCVOCLPeer

    workload = _workload(key)
    args = workload.make((40, 48), np.random.default_rng(1))
    peer = OpenCVOCLPeer(vendor=None, use_opencl=False)
    assert peer.missing() is None
    run = peer.prepare(workload, args)
    assert run.time_once() >= 0
    assert peers.check_output(run.fetch(), _scipy_reference(workload, args), workload) is None


def test_opencv_umat_peer_says_what_it_does_not_offer(monkeypatch):
    import types

    pytest.importorskip("cv2")
    from imagecl.bench.peer_opencv_ocl import OpenCVOCLPeer

    peer = OpenCVOCLPeer(vendor=None, use_opencl=False)
    for key, why in [("median7", "3 and 5 only"), ("conv3d", "2-D only"), ("bilateral", "2-D only")]:
        workload = _workload(key)
        with pytest.raises(peer_impls.NotOffered, match=why):
            peer.prepare(workload, workload.make(workload.quick, np.random.default_rng(0)))
    # OpenCV's OpenCL device must be the wanted vendor's (PoCL's CPU device is not the GPU)
    device = types.SimpleNamespace(name=lambda: "cpu-haswell", vendorName=lambda: "AuthenticAMD",
                                   version=lambda: "OpenCL 3.0 PoCL")
    ocl = types.SimpleNamespace(haveOpenCL=lambda: True, useOpenCL=lambda: True, setUseOpenCL=lambda on: None,
                                Device=types.SimpleNamespace(getDefault=lambda: device))
    monkeypatch.setitem(sys.modules, "cv2", types.SimpleNamespace(ocl=ocl, __version__="5"))
    monkeypatch.setenv("OPENCV_OPENCL_DEVICE", ":GPU:")  # the peer's default stays out of this process
    problem = OpenCVOCLPeer(vendor="NVIDIA").missing()
    assert problem.startswith("not offered: OpenCV's OpenCL device is cpu-haswell") and "NVIDIA GPU" in problem
    ocl.useOpenCL = lambda: False
    assert "no usable OpenCL device" in OpenCVOCLPeer(vendor="NVIDIA").missing()


@pytest.mark.parametrize("key", ["conv3", "sobel", "harris", "median3", "conv3d"])
def test_halide_gpu_peer_computes_the_workload_on_a_cpu_target(key):
    """The GPU peer's algorithms and hand schedules' structure (outputs tiled, the median's steps
    per point) run on a CPU target, where gpu_tile becomes a parallel tile: SciPy's result.
    Anderson2021 refuses a CPU target and is recorded as failed, not fatal."""
    hl = pytest.importorskip("halide")
    from imagecl.bench.peer_halide_gpu import HalideGPUPeer

    workload = _workload(key)
    args = workload.make((20, 40, 48) if key == "conv3d" else (40, 48), np.random.default_rng(1))
    peer = HalideGPUPeer(target=hl.get_host_target())
    assert peer.missing() is None
    run, seconds, problem = peers.first_that_passes(peer.prepare(workload, args), _scipy_reference(workload, args),
                                                    workload, peer.notes[key])
    assert problem is None and seconds > 0
    assert {run.label, *(a.label for a in run.alternatives)} == {"gpu_tile 16x16", "gpu_tile 32x8"}
    notes = peer.notes[key]
    assert "does not support GPU" in notes["Anderson2021"]["error"]
    assert notes["chosen"] in ("gpu_tile 16x16", "gpu_tile 32x8") and notes[notes["chosen"]]["seconds"] > 0


@pytest.mark.parametrize("schedule", ["gpu_tile 16x16", "gpu_tile 32x8", "Anderson2021"])
def test_halide_gpu_pipelines_compile_for_cuda(schedule):
    """The GPU schedules build for a host-cuda target (Halide compiles the PTX without a GPU; only
    running needs one): the gpu_tile calls, the 3-D block and Anderson2021's parameters are valid."""
    hl = pytest.importorskip("halide")
    from imagecl.bench.peer_halide import load_plugins
    from imagecl.bench.peer_halide_gpu import compile_schedule

    if schedule not in _TILES_OR_PLUGINS(hl, load_plugins):
        pytest.skip(f"no {schedule} plugin in this halide package")
    from imagecl.bench.peer_halide_gpu import cuda_capability_feature

    cuda = hl.get_host_target().with_feature(hl.TargetFeature.CUDA).with_feature(cuda_capability_feature(hl, 90))
    for key in ("conv3", "conv3d") if schedule == "Anderson2021" else ("conv3", "median3", "conv3d", "bilateral"):
        workload = _workload(key)
        compiled = compile_schedule(hl, workload, workload.make(workload.quick, np.random.default_rng(0)),
                                    schedule, cuda, 132)
        assert compiled.buffers and set(compiled.outputs) == {"output"}


def _TILES_OR_PLUGINS(hl, load_plugins):
    return {"gpu_tile 16x16", "gpu_tile 32x8", *load_plugins(hl)}


def test_halide_gpu_peer_without_a_gpu_is_not_offered(monkeypatch):
    """No CUDA or OpenCL GPU: the peer says so (the harness reports it, the run goes on)."""
    hl = pytest.importorskip("halide")
    from imagecl.bench.peer_halide_gpu import HalideGPUPeer

    monkeypatch.setattr(hl, "host_supports_target_device", lambda target: False)
    monkeypatch.setenv("HL_OCL_DEVICE_TYPE", "gpu")
    peer = HalideGPUPeer()
    problem = peer.missing()
    assert problem.startswith("not offered: halide finds no GPU device") and "CUDA: no device" in problem
    workload = _workload("conv3")
    with pytest.raises(peer_impls.NotOffered, match="no GPU device"):
        peer.prepare(workload, workload.make(workload.quick, np.random.default_rng(0)))


def test_halide_cpu_peer_tries_every_autoscheduler_and_keeps_each_time():
    hl = pytest.importorskip("halide")  # noqa: F841
    from imagecl.bench.peer_halide import HalidePeer

    workload = _workload("conv3d")
    args = workload.make((12, 16, 20), np.random.default_rng(2))
    peer = HalidePeer(2, ("Mullapudi2016", "Li2018", "Anderson2021"))
    run, _, problem = peers.first_that_passes(peer.prepare(workload, args), _scipy_reference(workload, args),
                                              workload, peer.notes["conv3d"])
    assert problem is None
    for alternative in run.alternatives:  # every schedule computes SciPy's result, not only the fastest
        alternative.time_once()
        assert peers.check_output(alternative.fetch(), _scipy_reference(workload, args), workload) is None
    notes = peer.notes["conv3d"]
    assert notes["Mullapudi2016"]["seconds"] > 0 and notes["Li2018"]["seconds"] > 0
    assert notes["Anderson2021"]["error"].startswith("not offered: Anderson2021 schedules GPU targets only")
    assert notes["chosen"] in ("Mullapudi2016", "Li2018")


def test_the_fastest_schedule_that_passes_the_check_is_the_one_timed():
    """A peer with several schedules (Halide): a faster schedule with a wrong output is passed
    over, and said; with none right the peer is 'wrong output'."""
    workload = _workload("conv3")
    good = {"output": np.ones((4, 4), np.float32)}
    bad = {"output": np.zeros((4, 4), np.float32)}

    def run(label, outputs, seconds):
        return peer_impls.PeerRun(lambda: seconds, lambda: outputs, label=label)

    fastest = run("fast but wrong", bad, 0.001)
    fastest.alternatives = [run("right", good, 0.002), run("also right", good, 0.003)]
    notes: dict = {}
    chosen, seconds, problem = peers.first_that_passes(fastest, good, workload, notes)
    assert (chosen.label, seconds, problem, notes["chosen"]) == ("right", 0.002, None, "right")
    assert "differs" in notes["fast but wrong"]["wrong_output"]
    wrong = run("wrong", bad, 0.001)
    wrong.alternatives = [run("wrong too", bad, 0.002)]
    _, _, problem = peers.first_that_passes(wrong, good, workload, {})
    assert problem.startswith("output 'output' differs")


def test_halide_cuda_target_uses_the_devices_capability():
    """An H100 (9.0) gets the newest capability this Halide knows at or below it, not sm_20 PTX."""
    hl = pytest.importorskip("halide")
    from imagecl.bench.peer_halide_gpu import cuda_capability_feature

    known = sorted(int(n[len("CUDACapability"):]) for n in dir(hl.TargetFeature) if n.startswith("CUDACapability"))
    assert cuda_capability_feature(hl, 90) == getattr(hl.TargetFeature, f"CUDACapability{known[-1]}")
    assert cuda_capability_feature(hl, 75) == hl.TargetFeature.CUDACapability75
    assert cuda_capability_feature(hl, 20) is None and cuda_capability_feature(hl, None) is None


def test_halide_gpu_timing_batches_fast_kernels():
    """A fast schedule's timing spans about 2 ms of back-to-back calls, then one wait for the
    device, divided by their number; a slow one is one call."""
    import types

    from imagecl.bench.peer_halide_gpu import Compiled, DeviceRunner
    from imagecl.bench.peer_timing import MAX_BATCH

    calls = []
    synced = []
    pipeline = types.SimpleNamespace(realize=lambda buffers: calls.append(buffers))
    buffer = types.SimpleNamespace(device_sync=lambda: synced.append(1))
    runner = DeviceRunner(Compiled(pipeline, {}, [buffer], {}), types.SimpleNamespace(has_gpu_feature=lambda: False))
    runner.set_batch(0.0005)
    assert runner.batch == 4
    assert runner.once() >= 0 and len(calls) == 4 and len(synced) == 1 and calls[0] is buffer
    runner.set_batch(1e-7)
    assert runner.batch == MAX_BATCH
    runner.set_batch(0.01)
    assert runner.batch == 1


def test_batch_is_calibrated_after_the_compiling_first_call(monkeypatch):
    """OpenCV's OpenCL peer: the first call compiles its kernels (slow); the batch comes from the
    calls after it, so a fast kernel is still timed over a batch."""
    from imagecl.bench import peer_timing

    now = [0.0]
    monkeypatch.setattr(peer_timing.time, "perf_counter", lambda: now[0])
    durations = iter([0.05] + [0.0002] * 100)  # a compiling first call, then 0.2 ms calls

    def call():
        now[0] += next(durations)

    waits = []
    timer = peer_timing.BatchedTimer(call, lambda: waits.append(1)).calibrated()
    assert timer.batch == 10 and len(waits) == 3
    assert timer.once() == pytest.approx(0.0002) and len(waits) == 4


def test_the_report_says_each_halide_schedule():
    notes = {"Adams2019": {"seconds": 0.002, "compile_seconds": 9.0},
             "Li2018": {"seconds": 0.001, "wrong_output": "output 'output' differs at (0, 0)"},
             "Anderson2021": {"error": "not offered: Anderson2021 schedules GPU targets only"},
             "gpu_tile 16x16": {"error": "HalideError: Error: out of shared memory\nmore"}, "chosen": "Adams2019"}
    text = ", ".join(peers_report._schedule_text(k, v) for k, v in notes.items() if isinstance(v, dict))
    assert text == ("Adams2019 2.0 ms, Li2018 1.0 ms (wrong output), Anderson2021 n/a (Anderson2021 schedules GPU "
                    "targets only), gpu_tile 16x16 failed (HalideError: Error: out of shared memory)")


@pytest.mark.parametrize("count", [9, 25, 49, 10, 3])
def test_selection_network_leaves_the_rank_th_smallest_in_place(count):
    """Against NumPy's partition: many random windows (with ties), at the lowest, middle and highest rank."""
    from imagecl.bench.peer_workloads import selection_network

    rng = np.random.default_rng(count)
    windows = rng.integers(0, 12, (4000, count))
    for rank in sorted({count // 2, 0, count - 1}):
        w = windows.T.copy()
        for a, b, low, high in selection_network(count, rank):
            lo, hi = np.minimum(w[a], w[b]), np.maximum(w[a], w[b])
            w[a], w[b] = lo, hi
        np.testing.assert_array_equal(w[rank], np.partition(windows, rank, axis=1)[:, rank])
    # pruned: fewer compare-exchanges than a full sort of the next power of two
    assert len(selection_network(count, count // 2)) < {3: 5, 9: 63, 10: 63, 25: 191, 49: 543}[count]


def test_the_median_workload_selection_arm_equals_scipy_without_vector_code():
    from scipy import ndimage

    import imagecl
    from imagecl.bench.peer_workloads import median_source

    prog = imagecl.compile(median_source(3), filename="median7.icl")
    image = np.random.default_rng(2).integers(0, 256, (23, 31), dtype=np.uint8)
    got = prog(input=image, config={"ALGORITHM": 3})["output"]
    np.testing.assert_array_equal(got, ndimage.median_filter(image, size=7, mode="nearest"))
