"""Verification of variants against their reference (imagecl/runtime/verify.py), on PoCL.

A pixel counts as "don't care" only when both the reference and the variant leave it unwritten;
a variant that forgets a pixel must be caught even where the reference value equals what the
output held before (0 for integers, NaN for floats), and one that writes where the reference
does not is wrong too. Expected values come from NumPy, never from the code under test.
"""
from __future__ import annotations

import numpy as np
import pytest

import imagecl
from imagecl.runtime.devices import context_and_queue, select_device
from imagecl.runtime.verify import Verifier, poison_values
from imagecl.tuner.kernel import Output, TunableKernel
from imagecl.tuner.target import ProgramTarget, make_runner

# Rows with idy % 3 == 1 are written by no correct variant (a conditional write). BUG = 1 forgets
# the float output in every 4th column, where the reference is NaN (sqrt(-1)); BUG = 2 forgets the
# integer output there, where the reference is 0; BUG = 3 writes the rows the reference skips.
CONDITIONAL = """
#pragma imcl grid(a)
#pragma imcl tunable(BUG: 0, 1, 2, 3)
void f(Image<float> a, Image<float> fo, Image<int> io) {
    if (idy % 3 != 1 || BUG == 3) {
        if (BUG != 1 || idx % 4 != 3)
            fo[idx][idy] = sqrt(a[idx][idy]);
        if (BUG != 2 || idx % 4 != 3)
            io[idx][idy] = max((int)a[idx][idy], 0) * 2;
    }
}
"""
H, W = 12, 16


@pytest.fixture(scope="module")
def runner():
    """The tuner's worker-side runner of CONDITIONAL, its reference being the naive variant."""
    a = np.arange(H * W, dtype=np.float32).reshape(H, W)
    a[:, 3::4] = -1.0
    args = {"a": a, "fo": np.zeros_like(a), "io": np.zeros(a.shape, np.int32)}
    device = select_device("cpu")
    target = ProgramTarget(imagecl.compile(CONDITIONAL, "<conditional>"), args, device)
    return make_runner(target.worker_setup(), device), a


def test_the_reference_knows_which_pixels_the_naive_variant_leaves_unwritten(runner):
    runner, a = runner
    skipped = (np.arange(H) % 3 == 1)[:, None] & np.ones(W, bool)
    with np.errstate(invalid="ignore"):
        fo = np.sqrt(a)
    io = np.maximum(a.astype(np.int32), 0) * 2
    for name, expected in (("fo", fo), ("io", io)):
        ref = runner.session.verifier.outputs[name]
        assert np.array_equal(ref.unwritten, skipped)
        np.testing.assert_array_equal(ref.host[~skipped], expected[~skipped])
    assert np.isnan(fo[:, 3]).all() and (io[:, 3] == 0).all()  # what the broken variants leave out


def test_a_conditionally_writing_variant_verifies(runner):
    runner, _ = runner
    timing = runner.time({"BUG": 0, "px_x": 2}, repeats=1, verify=True, read_outputs=False)
    assert timing.problem is None and len(timing.times) == 1 and timing.times[0] > 0


@pytest.mark.parametrize("bug, output", [(1, "fo"), (2, "io")])
def test_an_unwritten_pixel_is_wrong_even_where_it_looks_right(runner, bug, output):
    runner, _ = runner
    timing = runner.time({"BUG": bug}, repeats=1, verify=True, read_outputs=False)
    assert timing.problem is not None
    assert timing.problem.startswith(f"output '{output}' differs at (0, 3)") and "left unwritten" in timing.problem
    assert "(32 of 192 values)" in timing.problem  # 8 written rows x 4 columns


def test_writing_where_the_reference_does_not_is_wrong(runner):
    runner, _ = runner
    problem = runner.time({"BUG": 3}, repeats=1, verify=True, read_outputs=False).problem
    assert problem is not None and "differs at (1, 0)" in problem and "where the reference writes nothing" in problem


def test_the_device_comparison_counts_like_numpy():
    import pyopencl as cl

    device = select_device("cpu")
    context, queue = context_and_queue(device)

    def count(out, ref, unwritten=None, poisoned=True):
        buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=out)
        verifier = Verifier(device, rtol=1e-3)
        verifier.add("o", "output 'o'", buffer, ref, unwritten, poisoned=poisoned)
        return verifier.mismatches(0)["o"], verifier

    ref = np.array([1.0, np.nan, np.inf, 100.0, 0.0, 7.0], np.float32)
    # within tolerance of the scale (100): 0.05; NaN only matches NaN; inf only matches inf
    out = np.array([1.05, np.nan, 5.0, 100.0, np.nan, 7.0], np.float32)
    assert count(out, ref)[0] == 2
    # the last element is unwritten by the reference: the variant must hold the poison there
    unwritten = np.array([0, 0, 0, 0, 0, 1], bool)
    n, verifier = count(out, ref, unwritten)
    (poison,) = verifier.outputs["o"].poisons
    assert n == 3 and np.isneginf(poison)  # NaN and inf occur where the reference writes
    out[-1] = poison
    assert count(out, ref, unwritten)[0] == 2
    ints = np.array([0, 3, -2], np.int16)
    assert count(np.array([0, 3, -1], np.int16), ints)[0] == 1
    assert count(ints.copy(), ints, poisoned=False)[0] == 0


def test_poison_values_ignore_what_the_reference_leaves_unwritten():
    ref = np.array([0, 1, 255, 7], np.uint8)
    (v,) = poison_values(ref, np.array([0, 0, 1, 0], bool))
    assert v == 255  # 255 is only the fill of an unwritten element, not a written value
    every = np.arange(256, dtype=np.uint8)
    assert len(poison_values(every)) == 2  # no value is free: two launches with two values
    assert poison_values(every, every == 200) == [200]  # 200 is written nowhere


# A reference kernel that writes only the even elements; MODE 1 forgets element 6, MODE 2 also
# writes the odd ones.
EVENS = """
__kernel void evens(__global const int* x, __global int* y) {
    const int i = get_global_id(0);
    if ((i % 2 == 0 && !(MODE == 1 && i == 6)) || MODE == 2)
        y[i] = x[i] + 1;
}"""


def test_a_hand_written_kernel_is_checked_on_the_device_against_a_conditional_reference(monkeypatch):
    import pyopencl as cl

    x = np.arange(16, dtype=np.int32) - 7  # x[6] + 1 == 0: the output's initial value
    k = TunableKernel(EVENS, "evens", global_size=16)
    k.add_parameter("MODE", [0, 1, 2])
    k.set_arguments([x, Output(np.zeros(16, np.int32))])
    k.set_reference_kernel(EVENS, "evens", global_size=16, defines={"MODE": 0})
    device = select_device("cpu")
    runner = make_runner(k.target(device).worker_setup(), device)
    ref = runner.verifier.outputs[1]
    assert np.array_equal(ref.unwritten, np.arange(16) % 2 == 1)
    np.testing.assert_array_equal(ref.host[::2], x[::2] + 1)
    downloads = []
    real_copy = cl.enqueue_copy
    monkeypatch.setattr(cl, "enqueue_copy", lambda queue, dest, src, **kw: (
        downloads.append(dest) if isinstance(dest, np.ndarray) and dest.size > 2 else None,  # not the two counts
        real_copy(queue, dest, src, **kw))[1])
    assert runner.time({"MODE": 0}, repeats=1, verify=True, read_outputs=False).problem is None
    assert not downloads  # a right variant's output is compared on the device, not downloaded
    forgets = runner.time({"MODE": 1}, repeats=1, verify=True, read_outputs=False).problem
    assert forgets.startswith("argument 1 differs at (6,)") and "left unwritten" in forgets
    writes_all = runner.time({"MODE": 2}, repeats=1, verify=True, read_outputs=False).problem
    assert writes_all.startswith("argument 1 differs at (1,)") and "where the reference writes nothing" in writes_all


def test_host_work_runs_once_while_a_checked_launch_is_on_the_device():
    """`meanwhile` (the next variant's host work) runs once per checked launch, after the launch
    and its comparison are queued and before their result is read; with two poison passes the
    second pass is still checked."""
    import pyopencl as cl

    device = select_device("cpu")
    context, queue = context_and_queue(device)
    every = np.arange(256, dtype=np.uint8)  # every value occurs: two passes with two poisons
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, every.nbytes)
    verifier = Verifier(device)
    verifier.add("o", "output 'o'", buffer, every)
    assert verifier.passes == 2
    calls = []

    def launch(data):
        def enqueue():
            calls.append("launch")
            return cl.enqueue_copy(queue, buffer, data, is_blocking=False)
        return enqueue

    event, problem = verifier.checked_launch(lambda: None, launch(every), lambda: calls.append("meanwhile"))
    assert problem is None and calls == ["launch", "meanwhile", "launch"]
    wrong = every.copy()
    wrong[200] = 7
    calls.clear()
    event, problem = verifier.checked_launch(lambda: None, launch(wrong), lambda: calls.append("meanwhile"))
    assert problem is not None and problem.startswith("output 'o' differs at (200,)")
    assert calls == ["launch", "meanwhile"]


def test_a_variant_prepared_ahead_is_timed_without_planning_its_launch_again(runner, monkeypatch):
    """The worker prepares the next configuration while the current one's checked launch runs
    (tuner/worker.py `_ahead`): its launch is then ready when its turn comes."""
    from imagecl.tuner.worker import _ahead

    runner, _ = runner
    program = runner.session.program
    planned = []
    real = program._new_launch
    monkeypatch.setattr(program, "_new_launch", lambda plan, prepared: (planned.append(plan), real(plan, prepared))[1])
    current, after = {"BUG": 0, "px_x": 4, "px_y": 2}, {"BUG": 0, "px_x": 2, "px_y": 4}
    timing = runner.time(current, repeats=1, verify=True, read_outputs=False, meanwhile=_ahead(runner, after))
    assert timing.problem is None and len(planned) == 2  # the current launch, then the next one's meanwhile
    timing = runner.time(after, repeats=1, verify=True, read_outputs=False)
    assert timing.problem is None and len(planned) == 2  # nothing planned again
    assert _ahead(runner, None) is None
    _ahead(runner, {"BUG": 0, "px_x": 3})()  # not a configuration of the space: left to its own measurement


def test_a_groups_later_configurations_do_not_read_the_build_cache_again(runner, tmp_path):
    """The worker loads a source's binary (or builds it) for the first configuration of its group;
    the others launch the loaded program (tuner/worker.py), until the group's program is dropped."""
    from imagecl.runtime import launcher
    from imagecl.tuner.buildcache import BuildCache
    from imagecl.tuner.worker import _measure_one

    runner, _ = runner
    device = runner.device
    cache = BuildCache(tmp_path / "cache")
    reads = []
    real_get = cache.get
    cache.get = lambda key: (reads.append(key), real_get(key))[1]
    first, second = {"BUG": 0, "wg_x": 4, "wg_y": 2, "px_y": 8}, {"BUG": 0, "wg_x": 2, "wg_y": 4, "px_y": 8}
    source, options = runner.build_input(first)
    assert runner.build_input(second) == (source, options)  # the work-group size is launch-only here
    launcher.forget(device, source, options)
    results = [_measure_one(c, runner, device, cache, 1, 1, 0.1, {}, float("inf")) for c in (first, second)]
    assert [r["status"] for r in results] == ["ok", "ok"]
    assert len(reads) == 1 and cache.get(reads[0]) is not None  # read once (a miss), built, then kept
    launcher.forget(device, source, options)  # the group is done: the next one loads it again
    assert _measure_one(second, runner, device, cache, 1, 1, 0.1, {}, float("inf"))["status"] == "ok"
    assert len(reads) == 3


# Integer outputs of a floating-point computation may be one apart between correct variants
# (passes/rounding.py). SHIFT 1 moves one pixel by one unit, as a different `exp` may near a
# rounding boundary; SHIFT 2 truncates instead of rounding, which moves about half of them.
ROUNDED = """
#pragma imcl grid(a)
#pragma imcl tunable(SHIFT: 0, 1, 2)
void f(Image<uchar> a, Image<uchar> o) {
    float v = (float)a[idx][idy] * 0.7f + 0.35f;
    if (SHIFT == 1 && idx == 5 && idy == 3)
        v += 1.0f;
    o[idx][idy] = SHIFT == 2 ? (uchar)v : convert_uchar_sat(v + 0.5f);
}
"""
# the same one-unit change in a program with no floating point is a wrong result
EXACT = """
#pragma imcl grid(a)
#pragma imcl tunable(SHIFT: 0, 1)
void f(Image<uchar> a, Image<uchar> o) {
    int v = a[idx][idy] / 2;
    if (SHIFT == 1 && idx == 5 && idy == 3)
        v += 1;
    o[idx][idy] = v;
}
"""


def _runner_of(source: str, shape=(40, 50)):
    a = np.random.default_rng(7).integers(0, 256, shape, dtype=np.uint8)
    device = select_device("cpu")
    program = imagecl.compile(source, "<rounded>")
    target = ProgramTarget(program, {"a": a, "o": np.zeros_like(a)}, device)
    return program, make_runner(target.worker_setup(), device)


def test_which_outputs_hold_rounded_floating_point_results():
    assert imagecl.compile(ROUNDED, "<r>").rounded_outputs == {"o"}
    assert imagecl.compile(EXACT, "<e>").rounded_outputs == frozenset()
    assert imagecl.load("../examples/bilateral.icl").rounded_outputs == {"output"}
    for exact in ("median", "conway"):  # integer programs stay exact
        assert imagecl.load(f"../examples/{exact}.icl").rounded_outputs == frozenset()
    # a float output is checked within its tolerance, not by units
    assert imagecl.load("../examples/convolution9.icl").rounded_outputs == frozenset()


def test_a_rounded_output_may_be_one_apart_on_a_few_pixels_only():
    _, runner = _runner_of(ROUNDED)
    assert runner.time({"SHIFT": 1}, repeats=1, verify=True, read_outputs=False).problem is None
    problem = runner.time({"SHIFT": 2}, repeats=1, verify=True, read_outputs=False).problem
    a = np.random.default_rng(7).integers(0, 256, (40, 50), dtype=np.uint8).astype(np.float32)
    v = a * np.float32(0.7) + np.float32(0.35)
    moved = int((np.floor(v) != np.floor(v + np.float32(0.5))).sum())  # NumPy: what truncation moves
    assert moved > 200
    assert problem is not None and f"({moved} of 2000 values; {moved} values one apart" in problem


def test_an_integer_program_is_checked_exactly():
    _, runner = _runner_of(EXACT)
    problem = runner.time({"SHIFT": 1}, repeats=1, verify=True, read_outputs=False).problem
    assert problem is not None and "differs at (3, 5)" in problem and "(1 of 2000 values)" in problem


def test_the_device_counts_rounded_outputs_like_numpy():
    import pyopencl as cl

    device = select_device("cpu")
    context, queue = context_and_queue(device)
    rng = np.random.default_rng(3)
    ref = rng.integers(2, 250, 3000).astype(np.uint8)
    ref[:2] = (0, 255)  # poison_values then picks 254, one below a reference value

    def count(out, poisoned=True):
        buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=out)
        verifier = Verifier(device)
        verifier.add("o", "output 'o'", buffer, ref, poisoned=poisoned, rounded=True)
        return verifier.mismatches(0)["o"], verifier

    n, verifier = count(ref.copy())
    assert n == 0 and verifier.outputs["o"].allowance == 3 and verifier.outputs["o"].poisons == [254]
    out = ref.copy()
    out[[10, 20, 30]] += 1  # three one apart: within the allowance
    assert count(out)[0] == 0
    out[40] -= 1  # four: beyond it, and then every one of them counts
    assert count(out)[0] == 4
    out = ref.copy()
    out[1] = 254  # the poison, one below the reference's 255: a forgotten element, not a rounding
    assert count(out)[0] == 1
    assert count(out, poisoned=False)[0] == 0  # restored, not poisoned: 254 is just one apart
    out[50] += 2  # two apart is never a rounding
    assert count(out, poisoned=False)[0] == 1
