"""Wavefront programs: the pragma's checks (located errors), and every split of the parameter grid
against sequential NumPy references (tests/wavefront_reference.py), bit-exact for the integer
programs. Two GPUs are played by one PoCL device twice (separate buffers and swaps through the
host, as with two real devices); test_three_pocl_devices runs real separate devices."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import imagecl
import wavefront_reference as ref
from imagecl.errors import ArgumentError, ConfigError
from imagecl.runtime.devices import select_device
from imagecl.wavefront.devices import Devices
from imagecl.wavefront.executor import run_wavefront
from imagecl.wavefront.split import Split, phases, split_space

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "wavefront"


def two_gpus() -> Devices:
    device = select_device(None)
    return Devices(device, (device, device))


def inputs(name: str, width: int, height: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    if name == "needleman_wunsch":
        a = rng.integers(0, 4, width - 1).astype(np.uint8)
        b = rng.integers(0, 4, height - 1).astype(np.uint8)
        args = dict(a=a, b=b, score=np.zeros((height, width), np.int32), match=2, mismatch=-1, gap=2)
        return args, ref.needleman_wunsch(a, b, 2, -1, 2)
    if name == "lcs":
        a = rng.integers(0, 3, width).astype(np.uint8)
        b = rng.integers(0, 3, height).astype(np.uint8)
        return dict(a=a, b=b, length=np.zeros((height, width), np.int32)), ref.lcs(a, b)
    if name == "dtw":
        a = rng.standard_normal(width).astype(np.float32)
        b = rng.standard_normal(height).astype(np.float32)
        return dict(a=a, b=b, cost=np.zeros((height, width), np.float32)), ref.dtw(a, b)
    return dict(out=np.zeros((height, width), np.int32), tsize=3), ref.synthetic(width, height, 3)


@pytest.mark.parametrize("name, size", [("needleman_wunsch", (13, 9)), ("lcs", (6, 17)), ("dtw", (13, 9)),
                                        ("wavefront_synthetic", (6, 17))])
def test_every_split_matches_the_sequential_reference(name, size):
    check_every_split(name, size)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["needleman_wunsch", "lcs", "dtw", "wavefront_synthetic"])
@pytest.mark.parametrize("size", [(13, 9), (6, 17), (2, 5), (5, 2), (32, 31)])
def test_every_split_at_more_sizes(name, size):
    check_every_split(name, size)


def check_every_split(name, size):
    prog = imagecl.load(EXAMPLES / f"{name}.icl")
    args, expected = inputs(name, *size)
    devices = two_gpus()
    splits = split_space(*size, 2, cpu_tiles=(1, 3, 16), gpu_tiles=(1, 2, 5), halos=(1, 2, 3))
    assert {s.gpu_count for s in splits} == ({0, 1, 2} if size[0] > 1 else {0, 1})
    wrong = [s for s in splits if not np.array_equal(run_wavefront(prog, args, s, devices).output, expected)]
    assert not wrong, f"{len(wrong)} of {len(splits)} splits differ, e.g. {wrong[:3]}"


SEEDED = """
#pragma imcl wavefront(out)
void seeded(Image<int> out) {
    out[idx][idy] = out[idx][idy] + max(out[idx - 1][idy], out[idx][idy - 1]) + out[idx - 1][idy - 1] / 2;
}
"""


@pytest.mark.parametrize("size", [(13, 9), (6, 17)])
def test_every_split_keeps_the_outputs_given_starting_values(tmp_path, size):
    """A point that reads its own starting value: every hand-over between devices moves only the
    rectangle the next phase reads, and no point's given value or result is lost on the way."""
    path = tmp_path / "seeded.icl"
    path.write_text(SEEDED)
    prog = imagecl.load(path)
    width, height = size
    start = np.random.default_rng(1).integers(0, 10, (height, width)).astype(np.int32)
    expected = start.copy()
    for y in range(height):
        for x in range(width):
            west = expected[y, x - 1] if x > 0 else 0
            north = expected[y - 1, x] if y > 0 else 0
            north_west = expected[y - 1, x - 1] if x > 0 and y > 0 else 0
            expected[y, x] += max(west, north) + north_west // 2
    splits = split_space(width, height, 2, cpu_tiles=(1, 3, 16), gpu_tiles=(1, 2, 5), halos=(1, 2, 3))
    wrong = [s for s in splits
             if not np.array_equal(run_wavefront(prog, {"out": start}, s, two_gpus()).output, expected)]
    assert not wrong, f"{len(wrong)} of {len(splits)} splits differ, e.g. {wrong[:3]}"


def test_padded_diagonal_groups_as_on_a_gpu(monkeypatch):
    """On a GPU a diagonal runs in groups of 64 padded past its end; here groups of 4 on PoCL."""
    from imagecl.wavefront import executor

    monkeypatch.setattr(executor, "diagonal_group", lambda device: 4)
    prog = imagecl.load(EXAMPLES / "needleman_wunsch.icl")
    args, expected = inputs("needleman_wunsch", 13, 9)
    for split in (Split(cpu_tile=3, band=4, gpu_count=1), Split(cpu_tile=3, band=30, gpu_count=2, halo=2),
                  Split(cpu_tile=1, band=30, gpu_count=2, halo=3)):
        assert np.array_equal(run_wavefront(prog, args, split, two_gpus()).output, expected), split


def test_the_halo_trades_swaps_for_redundant_points():
    """More halo, fewer swaps: the launches of a two-GPU band fall as the halo grows (each swap
    period restarts the diagonals), and the result stays exact."""
    prog = imagecl.load(EXAMPLES / "wavefront_synthetic.icl")
    args, expected = inputs("wavefront_synthetic", 20, 20)
    counts = []
    for halo in (1, 2, 5):
        result = run_wavefront(prog, args, Split(cpu_tile=4, band=30, gpu_tile=1, gpu_count=2, halo=halo),
                               two_gpus())
        assert np.array_equal(result.output, expected)
        counts.append(result.launches)
    assert counts[0] == counts[1] == counts[2]  # one launch per diagonal and GPU either way


def test_phases_cover_the_middle_diagonals():
    assert phases(Split(band=-1), 10, 10) == phases(Split(band=-1, gpu_count=1), 10, 10)
    p = phases(Split(band=2, gpu_count=1), 10, 10)  # 19 diagonals, middle 9
    assert (p.lo, p.hi) == (7, 11)
    p = phases(Split(band=100, gpu_count=1), 10, 7)
    assert (p.lo, p.hi) == (0, 15)


def test_prog_call_runs_a_forced_split_and_the_sequential_one():
    prog = imagecl.load(EXAMPLES / "needleman_wunsch.icl")
    args, expected = inputs("needleman_wunsch", 11, 8)
    for split in ({"cpu_tile": 2, "band": 3, "gpu_tile": 1}, Split(cpu_tile=5), "naive"):
        kwargs = {"config": split} if isinstance(split, str) else {"split": split}
        assert np.array_equal(prog(**args, **kwargs)["score"], expected)
    assert np.array_equal(prog(**args)["score"], expected)
    outputs, seconds = prog.run(args, split={"cpu_tile": 4})
    assert np.array_equal(outputs["score"], expected) and seconds > 0
    assert np.array_equal(args["score"], np.zeros((8, 11), np.int32))  # the caller's output is not written


def test_bad_splits_are_refused_with_a_reason():
    prog = imagecl.load(EXAMPLES / "lcs.icl")
    args, _ = inputs("lcs", 8, 8)
    with pytest.raises(ConfigError, match="unknown wavefront split parameter"):
        prog(**args, split={"tile": 3})
    with pytest.raises(ConfigError, match="at least 1"):
        prog(**args, split={"cpu_tile": 0})
    with pytest.raises(ConfigError, match="GPU"):
        prog(**args, split={"band": 2, "gpu_count": 9, "halo": 1})
    with pytest.raises(ConfigError, match="halo"):
        run_wavefront(prog, args, Split(band=3, gpu_count=2, halo=5), two_gpus())
    with pytest.raises(ArgumentError, match="NumPy arrays only"):
        prog(**args, returns="device")
    with pytest.raises(ArgumentError, match="grid"):
        prog(a=args["a"], b=args["b"])


SOURCES = {
    "east": ("void f(Image<int> out) {\n    out[idx][idy] = out[idx+1][idy] + 1;\n}\n", 2, 21, "offset (+1, +0)"),
    "two_back": ("void f(Image<int> out) {\n    out[idx][idy] = out[idx-2][idy];\n}\n", 2, 21, "offset (-2, +0)"),
    "computed": ("void f(Image<int> out, int k) {\n    out[idx][idy] = out[idx-k][idy];\n}\n", 2, 21,
                 "computed position"),
    "transposed": ("void f(Image<int> out) {\n    out[idx][idy] = out[idy][idx];\n}\n", 2, 21, "computed position"),
    "shifted_write": ("void f(Image<int> out) {\n    out[idx+1][idy] = 1;\n}\n", 2, 5, "written at [idx][idy]"),
    "second_output": ("void f(Image<int> out, Image<int> other) {\n    out[idx][idy] = out[idx-1][idy];\n"
                      "    other[idx][idy] = 1;\n}\n", 3, 5, "writes only its output 'out'"),
}


@pytest.mark.parametrize("case", sorted(SOURCES))
def test_other_dependences_on_the_output_are_located_errors(case):
    body, line, column, message = SOURCES[case]
    with pytest.raises(imagecl.CompileError) as info:
        imagecl.compile("#pragma imcl wavefront(out)\n" + body, "w.icl")
    assert message in str(info.value)
    assert (info.value.line, info.value.column) == (line + 1, column), str(info.value)


@pytest.mark.parametrize("pragmas, message", [
    ("#pragma imcl wavefront(out)\n#pragma imcl boundary_cond(out:clamped)", "constant boundary"),
    ("#pragma imcl wavefront(out)\n#pragma imcl grid_size(4, 4)", "drop pragma 'grid_size'"),
    ("#pragma imcl wavefront(outt)", "unknown image 'outt'; did you mean 'out'"),
    ("#pragma imcl wavefront(out, inp)", "takes one image"),
    ("#pragma imcl wavefront(out)\n#pragma imcl grid(inp)", "one of the grid's images"),
    ("#pragma imcl wavefront(inp)", "never written"),
    ("#pragma imcl wavefront(out)\n#pragma imcl image_mem(inp)", "not supported in a wavefront"),
])
def test_wavefront_pragma_errors(pragmas, message):
    source = pragmas + "\nvoid f(Image<int> inp, Image<int> out) {\n    out[idx][idy] = out[idx-1][idy] + inp[idx][idy];\n}\n"
    with pytest.raises(imagecl.CompileError) as info:
        imagecl.compile(source, "w.icl")
    assert message in str(info.value) and info.value.line >= 1


def test_reading_the_output_without_the_pragma_is_a_race_with_a_hint():
    with pytest.raises(imagecl.CompileError) as info:
        imagecl.compile("#pragma imcl grid(out)\nvoid f(Image<int> out) {\n    out[idx][idy] = out[idx-1][idy];\n}\n",
                        "w.icl")
    assert "data race" in str(info.value) and "wavefront(out)" in str(info.value)
    assert (info.value.line, info.value.column) == (3, 21)


def test_three_pocl_devices():
    """One CPU and two 'GPUs' that are separate PoCL devices (each its own context and queue)."""
    script = f"""
import json, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
import numpy as np, imagecl
from test_wavefront import inputs, EXAMPLES
from imagecl.wavefront.devices import wavefront_devices
from imagecl.wavefront.executor import run_wavefront
from imagecl.wavefront.split import split_space
devices = wavefront_devices()
prog = imagecl.load(EXAMPLES / "needleman_wunsch.icl")
args, expected = inputs("needleman_wunsch", 12, 10)
splits = split_space(12, 10, 2, cpu_tiles=(1, 4), gpu_tiles=(1, 3), halos=(1, 3))
wrong = [str(s) for s in splits if not np.array_equal(run_wavefront(prog, args, s, devices).output, expected)]
print(json.dumps({{"devices": len({{d.int_ptr for d in (devices.cpu,) + devices.gpus}}), "splits": len(splits),
                  "wrong": wrong}}))
"""
    env = {**os.environ, "POCL_DEVICES": "pthread pthread pthread"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["devices"] == 3 and report["splits"] > 20 and report["wrong"] == []


@pytest.mark.parametrize("dsize", [1, 4])
def test_generated_synthetic_instances_match_their_reference(dsize):
    from imagecl.wavefront.synthetic import Instance, data_bytes

    instance = Instance(11, 4, dsize)
    prog = instance.program()
    assert data_bytes(prog) == 4 * dsize
    expected = ref.synthetic(11, 11, 4) if dsize == 1 else ref.synthetic_float4(11, 11, 4)
    for split in (Split(cpu_tile=3), Split(cpu_tile=2, band=4, gpu_tile=3, gpu_count=2, halo=2),
                  Split(cpu_tile=1, band=30, gpu_count=1)):
        assert np.array_equal(run_wavefront(prog, instance.arguments(), split, two_gpus()).output, expected)


def test_a_wavefront_program_has_no_variant_space():
    prog = imagecl.load(EXAMPLES / "lcs.icl")
    with pytest.raises(ConfigError, match="wavefront program"):
        prog.space
    with pytest.raises(ConfigError, match="wavefront program"):
        prog.build(size=(8, 8))


def test_the_source_of_a_wavefront_program_holds_its_three_kernels():
    prog = imagecl.load(EXAMPLES / "needleman_wunsch.icl")
    source = prog.opencl_source()
    assert all(f"__kernel void {k}(" in source for k in ("imcl_wf_diagonal", "imcl_wf_cpu_tiles",
                                                          "imcl_wf_gpu_tiles"))
    # PoCL runs a work-group's work-items one after another, which hides a missing barrier: check the text
    tiles = source[source.index("__kernel void imcl_wf_gpu_tiles("):]
    loop = tiles[tiles.index("for (int imcl_s"):]
    assert "barrier(CLK_GLOBAL_MEM_FENCE);" in loop[: loop.index("\n    }")]
    done = subprocess.run([sys.executable, "-m", "imagecl", "compile", str(EXAMPLES / "lcs.icl")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "imcl_wf_gpu_tiles" in done.stdout, done.stderr
