"""Tuning hand-written OpenCL kernels (imagecl.tuner.kernel) on PoCL.

The kernels are tiny and the spaces small; the sources are few (a build costs ~1 s on PoCL) and
the build cache is shared between tests, so most configurations are built once for the module.
References are computed with NumPy, never by the code under test.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl.errors import ArgumentError, ConfigError, ImageCLError
from imagecl.space import DeviceLimits
from imagecl.tuner.engine import measure
from imagecl.tuner.kernel import InOut, KernelError, Output, TunableKernel
from imagecl.runtime.session import output_mismatch
from imagecl.tuner.kernelrun import poison_values
from imagecl.tuner.store import Store

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "handwritten"

# y = a * x, WPT elements per work-item. With -DBUG=1 the WPT == 4 variant forgets the last
# element of every chunk (it leaves it unwritten).
SCALE = """
#ifndef BUG
#define BUG 0
#endif
__kernel void scale(__global const float* x, __global float* y, const float a, const int n)
{
    const int base = get_global_id(0) * WPT;
    for (int w = 0; w < WPT; w++) {
        if (BUG && WPT == 4 && w == WPT - 1)
            continue;
        if (base + w < n)
            y[base + w] = a * x[base + w];
    }
}
"""
N = 48


def scale_kernel(bug: bool = False, wpt=(1, 2, 4), wg=(1, 2, 4, 8)) -> tuple[TunableKernel, np.ndarray]:
    x = np.linspace(-3, 5, N, dtype=np.float32)
    x[3::4] = 0.0  # where the buggy variant writes nothing the answer is the initial 0: only poisoning catches it
    k = TunableKernel(SCALE, "scale", global_size=N, local_size=1, build_options=["-DBUG=1"] if bug else [])
    k.add_parameter("WPT", list(wpt))
    k.add_parameter("WG", list(wg), define=False)  # only shapes the launch: configurations share builds
    k.div_global_size(["WPT"])
    k.mul_local_size(["WG"])
    k.set_arguments([x, Output(np.zeros(N, np.float32)), np.float32(1.5), np.int32(N)])
    expected = (np.float32(1.5) * x).astype(np.float32)
    k.set_reference({1: expected})
    return k, expected


def valid_by_hand(wpt, wg, max_wg=4096) -> list[dict]:
    """The space's valid configurations, from the rules written out independently."""
    out = []
    for p in wpt:
        for g in wg:
            if N % p == 0 and (N // p) % g == 0 and g <= max_wg:
                out.append({"WPT": p, "WG": g})
    return out


def test_constraints_and_size_rules_shape_the_space():
    k, _ = scale_kernel(wpt=(1, 2, 4, 5), wg=(1, 2, 3, 4, 8, 16))
    k.add_constraint(lambda WPT, WG: WPT * WG <= 32)
    space = k.space("cpu")
    cols = space.enumerate()
    got = sorted(zip(cols["WPT"].tolist(), cols["WG"].tolist()))
    want = sorted((c["WPT"], c["WG"]) for c in valid_by_hand((1, 2, 4, 5), (1, 2, 3, 4, 8, 16))
                  if c["WPT"] * c["WG"] <= 32)
    assert got == want and (5, 1) not in got  # 48 / 5 is not a whole global size
    assert k.sizes({"WPT": 4, "WG": 3}) == ((12,), (3,))
    # the device's work-group limit is a static constraint too
    small = k._space(DeviceLimits(max_work_group_size=4, max_work_item_sizes=(4, 4, 4)))
    assert all(v <= 4 for v in small.enumerate()["WG"])
    # constraints as expression strings, and in CLTune's (function, names) form
    k.add_constraint("WPT != 2")
    k.add_constraint(lambda p: p != 1, ["WPT"])
    assert set(k.space("cpu").enumerate()["WPT"].tolist()) == {4}


def test_statically_invalid_configurations_are_recorded_not_built(tmp_path):
    k, _ = scale_kernel()
    with Store(tmp_path / "s.db") as store:
        summary = measure(k.target("cpu"), None, [{"WPT": 4, "WG": 8}, {"WPT": 3, "WG": 1}], store)
        records = {(r.config["WPT"], r.config["WG"]): r for r in store.records()}
    assert summary.measured == 0  # nothing was built or launched
    assert records[(4, 8)].status == "invalid_config" and "local size divides the global size" in records[(4, 8)].error
    assert records[(3, 1)].status == "invalid_config" and "'WPT' must be one of" in records[(3, 1)].error


@pytest.mark.parametrize("strategy", ["exhaustive", "random", "annealing", "pso", "ml"])
def test_every_strategy_finds_a_verified_best(strategy, tmp_path):
    k, _ = scale_kernel()
    budget = 12 if strategy != "exhaustive" else None
    result = k.tune(device="cpu", strategy=strategy, budget=budget, store=tmp_path / "t.db", seed=1)
    valid = valid_by_hand((1, 2, 4), (1, 2, 4, 8))
    assert result.best_config in valid
    assert result.strategy == strategy and result.best_time > 0
    measured = [t for _, t in result.history if t is not None]
    # the 4 fastest were timed again (confirm=4): the result is the fastest of them after that
    fastest = [dict(c) for c, t in sorted(((c, t) for c, t in result.history if t is not None), key=lambda x: x[1])]
    assert result.info["confirmed"] == min(4, len(measured)) and result.best_config in fastest[:4]
    assert result.statuses.get("ok") == len(measured) and set(result.statuses) == {"ok"}
    if strategy == "random":  # without confirmation the result is the search's own fastest
        plain = k.tune(device="cpu", strategy=strategy, budget=budget, store=tmp_path / "u.db", seed=1, confirm=0)
        assert plain.best_time == min(t for _, t in plain.history if t is not None)
    if strategy == "exhaustive":
        assert result.evaluations == len(valid)
    else:
        assert result.evaluations <= 12


def test_the_reference_catches_a_wrong_variant_even_where_unwritten_values_look_right(tmp_path):
    k, expected = scale_kernel(bug=True)
    with Store(tmp_path / "w.db") as store:
        result = k.tune(device="cpu", strategy="exhaustive", store=tmp_path / "w.db")
        records = list(store.records())
    wrong = [r for r in records if r.status == "wrong_output"]
    assert {r.config["WPT"] for r in wrong} == {4} and len(wrong) == len(valid_by_hand((4,), (1, 2, 4, 8)))
    assert "argument 1 differs at (3,)" in wrong[0].error
    assert result.best_config["WPT"] != 4 and result.statuses["wrong_output"] == len(wrong)
    # the unwritten elements hold the initial zeros, which equal the expected values there
    assert np.all(expected[3::4] == 0)


def test_integer_outputs_are_poisoned_and_a_hanging_variant_times_out(tmp_path):
    source = """
    __kernel void twice(__global const int* x, __global int* y) {
        const int i = get_global_id(0);
        if (SKIP != 1 || i % 4 != 3)
            y[i] = 2 * x[i];
        int v = x[i];
        while (SKIP == 2 && v >= 0) {   /* never ends: v stays non-negative */
            v = (v * 3 + 1) & 0x7fffffff;
            y[i] = v;
        }
    }"""
    x = np.arange(16, dtype=np.int32)
    x[3::4] = 0  # the skipped elements' expected value is the initial 0
    k = TunableKernel(source, "twice", global_size=16)
    k.add_parameter("SKIP", [0, 1, 2])
    k.set_arguments([x, Output(np.zeros(16, np.int32))])
    k.set_reference({1: 2 * x})
    result = k.tune(device="cpu", strategy="exhaustive", store=tmp_path / "i.db", timeout=6)
    assert result.statuses == {"ok": 1, "wrong_output": 1, "timeout": 1} and result.best_config == {"SKIP": 0}
    assert "argument 1 differs at (3,)" in result.errors["wrong_output"]
    assert "killed" in result.errors["timeout"]


def test_a_corrected_reference_is_a_new_run(tmp_path):
    k, expected = scale_kernel(wpt=(1,), wg=(1,))
    k.set_reference({1: expected + 1})  # a wrong reference: every variant fails against it
    with pytest.raises(ImageCLError, match="no configuration of 'scale' ran correctly"):
        k.tune(device="cpu", strategy="exhaustive", store=tmp_path / "c.db")
    k.set_reference({1: expected})
    assert k.tune(device="cpu", strategy="exhaustive", store=tmp_path / "c.db").statuses == {"ok": 1}


def test_a_kernel_without_parameters_is_timed_unverified_when_asked(tmp_path):
    k = TunableKernel(SCALE, "scale", global_size=N, build_options=["-DWPT=1"])
    x = np.ones(N, np.float32)
    k.set_arguments([x, Output(x.copy()), np.float32(2), np.int32(N)])
    result = k.tune(device="cpu", verify=False, store=tmp_path / "u.db")
    assert result.best_config == {} and result.best_time > 0 and result.statuses == {"ok": 1}
    assert result.global_size == (N,) and result.local_size is None
    with Store(tmp_path / "u.db") as store:
        (record,) = list(store.records())
    assert record.status == "ok" and not record.verified  # timed, but never compared with anything


def test_poison_values_never_match_the_reference():
    ints = np.arange(256, dtype=np.uint8)  # every value present: two different poisons
    assert len(poison_values(ints)) == 2 and poison_values(ints)[0] != poison_values(ints)[1]
    some = np.array([0, 5, np.iinfo(np.int32).max], np.int32)
    (v,) = poison_values(some)
    assert v not in some
    floats = np.array([1.0, np.nan], np.float32)
    (f,) = poison_values(floats)
    assert np.isinf(f)
    assert poison_values(np.array([1.0], np.float32))[0] != poison_values(np.array([1.0], np.float32))[0]  # NaN
    ref = np.array([1.0, 2.0, 1000.0], np.float32)
    assert output_mismatch(ref + np.float32(1e-3), ref, 1e-4, 1000.0) is None  # within tolerance of the scale
    assert "differs at (1,)" in output_mismatch(np.array([1.0, 2.5, 1000.0], np.float32), ref, 1e-4, 1000.0)
    assert output_mismatch(np.array([1, 3], np.int32), np.array([1, 2], np.int32), 0.5, 0.0) is not None  # ints exact


def test_the_result_reproduces_the_output_with_plain_pyopencl(tmp_path):
    import pyopencl as cl

    k, expected = scale_kernel()
    result = k.tune(device="cpu", strategy="random", budget=4, store=tmp_path / "p.db", seed=3)
    cl_path, json_path = result.save(tmp_path / "out")
    assert cl_path.read_text() == result.source and f"#define WPT {result.best_config['WPT']}" in result.source
    device = imagecl.select_device("cpu")
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    program = cl.Program(ctx, cl_path.read_text()).build()
    x = np.linspace(-3, 5, N, dtype=np.float32)
    x[3::4] = 0.0
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    yb = cl.Buffer(ctx, mf.READ_WRITE, x.nbytes)
    program.scale(queue, result.global_size, result.local_size, xb, yb, np.float32(1.5), np.int32(N))
    y = np.empty_like(x)
    cl.enqueue_copy(queue, y, yb)
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    assert result.global_size == (N // result.best_config["WPT"],) and result.local_size == (result.best_config["WG"],)


def test_a_rerun_with_the_same_store_measures_nothing_again(tmp_path):
    db = tmp_path / "r.db"
    k, _ = scale_kernel()
    # without the confirmation: its re-timed medians can reorder the top, and the rerun then
    # confirms (times again) a contender that the first run did not
    first = k.tune(device="cpu", strategy="exhaustive", store=db, confirm=0)
    with Store(db) as store:
        before = {(r.config["WPT"], r.config["WG"]): r.timestamp for r in store.records()}
    k2, _ = scale_kernel()  # a new object for the same kernel and problem: the same run in the store
    again = k2.tune(device="cpu", strategy="exhaustive", store=db, confirm=0)
    with Store(db) as store:
        after = {(r.config["WPT"], r.config["WG"]): r.timestamp for r in store.records()}
    assert after == before
    assert again.best_config == first.best_config and again.best_time == first.best_time


def test_a_kernel_that_fails_to_build_for_some_values_is_classified_and_skipped(tmp_path):
    source = SCALE.replace("__kernel", "#if WPT == 8\nthis is not OpenCL;\n#endif\n__kernel", 1)
    k = TunableKernel(source, "scale", global_size=N, local_size=2)
    k.add_parameter("WPT", [1, 2, 8])
    k.div_global_size(["WPT"])
    x = np.ones(N, np.float32)
    k.set_arguments([x, Output(np.zeros(N, np.float32)), np.float32(2.0), np.int32(N)])
    k.set_reference({1: 2 * x})
    result = k.tune(device="cpu", strategy="exhaustive", store=tmp_path / "b.db")
    assert result.statuses == {"ok": 2, "build_error": 1}
    assert "unknown type name 'this'" in result.errors["build_error"]  # the build log
    assert result.best_config["WPT"] in (1, 2)


def test_inout_arguments_start_from_their_data_every_launch(tmp_path):
    source = """
    __kernel void acc(__global const float* x, __global float* y) {
        const int i = get_global_id(0) * WPT;
        for (int w = 0; w < WPT; w++) y[i + w] += x[i + w];
    }"""
    k = TunableKernel(source, "acc", global_size=16)
    k.add_parameter("WPT", [1, 2])
    k.div_global_size(["WPT"])
    x, y = np.arange(16, dtype=np.float32), np.full(16, 10.0, np.float32)
    k.set_arguments([x, InOut(y)])
    k.set_reference({1: x + y})  # right only if y is restored before every (repeated) launch
    result = k.tune(device="cpu", strategy="exhaustive", store=tmp_path / "io.db", repeats=3)
    assert result.statuses == {"ok": 2}


def test_the_gemm_example_tunes_against_a_reference_kernel(tmp_path):
    n = 32
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    k = TunableKernel(EXAMPLES / "matmul.cl", "gemm", global_size=(n, n), local_size=(1, 1))
    k.add_parameter("TS", [8, 16])
    k.add_parameter("WPT", [2])
    k.add_parameter("VW", [1, 4])
    k.add_constraint(lambda TS, WPT: TS % WPT == 0)
    k.set_local_memory_usage(lambda TS: 2 * TS * TS * 4)
    k.mul_local_size(["TS", "TS"])
    k.div_local_size([1, "WPT"])
    k.div_global_size([1, "WPT"])
    c = np.zeros((n, n), np.float32)
    k.set_arguments([np.int32(n), np.int32(n), np.int32(n), a, b, Output(c)])
    k.set_reference_kernel(EXAMPLES / "matmul_reference.cl", "gemm_naive", global_size=(n, n))
    result = k.tune(device="cpu", strategy="exhaustive", store=tmp_path / "g.db")
    assert result.statuses == {"ok": 4}
    ts, wpt = result.best_config["TS"], result.best_config["WPT"]
    assert result.local_size == (ts, ts // wpt) and result.global_size == (n, n // wpt)
    # the reference kernel itself agrees with NumPy (the variants were checked against it)
    import pyopencl as cl

    device = imagecl.select_device("cpu")
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    prog = cl.Program(ctx, result.source).build()
    mf = cl.mem_flags
    ab = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    bb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
    cb = cl.Buffer(ctx, mf.READ_WRITE, c.nbytes)
    prog.gemm(queue, result.global_size, result.local_size, np.int32(n), np.int32(n), np.int32(n), ab, bb, cb)
    cl.enqueue_copy(queue, c, cb)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_api_mistakes_get_clear_errors():
    with pytest.raises(KernelError, match="no kernel named 'scael'; did you mean 'scale'"):
        TunableKernel(SCALE, "scael", global_size=N)
    with pytest.raises(KernelError, match="no such file"):
        TunableKernel("missing.cl", "k", global_size=N)
    with pytest.raises(KernelError, match="global_size is a tuple"):
        TunableKernel(SCALE, "scale", global_size=(0,))
    k = TunableKernel(SCALE, "scale", global_size=N, local_size=1)
    with pytest.raises(KernelError, match="'WPT' lists a value twice"):
        k.add_parameter("WPT", [1, 1])
    with pytest.raises(KernelError, match="values are integers"):
        k.add_parameter("WPT", [1, 2.5])
    k.add_parameter("WPT", [1, 2])
    with pytest.raises(KernelError, match="defined twice"):
        k.add_parameter("WPT", [4])
    with pytest.raises(KernelError, match="uses 'WTP', which is not a parameter; did you mean 'WPT'"):
        k.add_constraint(lambda WTP: WTP > 1)
    with pytest.raises(KernelError, match="uses 'WTP'"):
        k.add_constraint("WTP > 1")
    with pytest.raises(KernelError, match="needs 1 factors"):
        k.div_global_size(["WPT", 1])
    with pytest.raises(KernelError, match="'WP' is not a parameter; did you mean 'WPT'"):
        k.div_global_size(["WP"])
    with pytest.raises(ArgumentError, match="takes 4 arguments, 2 given"):
        k.set_arguments([np.ones(4, np.float32), np.ones(4, np.float32)])
    x = np.ones(N, np.float32)
    with pytest.raises(ArgumentError, match=r"a Python float does not say its C type; pass a NumPy scalar"):
        k.set_arguments([x, Output(x.copy()), 1.5, np.int32(N)])
    with pytest.raises(ArgumentError, match=r"argument 1 .* reads float32 elements, the array holds float64"):
        k.set_arguments([x, Output(np.zeros(N)), np.float32(1), np.int32(N)])
    with pytest.raises(ArgumentError, match="marked out but the kernel declares it read-only"):
        k.set_arguments([Output(x), x.copy(), np.float32(1), np.int32(N)])
    with pytest.raises(ArgumentError, match="takes int32, got int64"):
        k.set_arguments([x, Output(x.copy()), np.float32(1), np.int64(N)])
    k.set_arguments([x, Output(x.copy()), np.float32(1), np.int32(N)])
    with pytest.raises(ArgumentError, match="no reference"):
        k.tune(device="cpu")
    with pytest.raises(ArgumentError, match="argument 2 is a scalar"):
        k.set_reference({2: x})
    with pytest.raises(ArgumentError, match="has 3 elements, the argument 48"):
        k.set_reference({1: np.ones(3)})
    k.set_reference({1: x})
    with pytest.raises(ArgumentError, match="unknown strategy 'anealing'; did you mean 'annealing'"):
        k.tune(device="cpu", strategy="anealing")
    with pytest.raises(ArgumentError, match="budget is a positive number"):
        k.tune(device="cpu", strategy="random", budget=0)
    k.add_constraint(lambda WPT: WPT > 8)
    with pytest.raises(ConfigError, match=r"no configuration of 'scale' is valid .*\n.*WPT > 8: rejects 2 of 2"):
        k.tune(device="cpu")
    bad = TunableKernel(SCALE, "scale", global_size=N)
    bad.add_parameter("WPT", [0, 1])
    bad.add_constraint(lambda WPT: N % WPT == 0)
    with pytest.raises(ConfigError, match="raised ZeroDivisionError for WPT=0"):
        bad.space("cpu")
    assert issubclass(KernelError, ImageCLError)


def scale_kernel_script(tmp_path, name: str) -> str:
    """Python source that defines the SCALE kernel with its WPT parameter as `name` (for the tests
    that run user scripts in a subprocess); writes scale.cl into tmp_path."""
    (tmp_path / "scale.cl").write_text(SCALE)
    return f"""
import numpy as np
from imagecl import TunableKernel, Output
{name} = TunableKernel({str(tmp_path / 'scale.cl')!r}, "scale", global_size={N}, local_size=1)
{name}.add_parameter("WPT", [1, 2])
{name}.div_global_size(["WPT"])
x = np.arange({N}, dtype=np.float32)
{name}.set_arguments([x, Output(np.zeros({N}, np.float32)), np.float32(2), np.int32({N})])
{name}.set_reference({{1: 2 * x}})
"""


def test_a_plain_script_without_a_main_guard_tunes(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "plain.py"
    script.write_text(scale_kernel_script(tmp_path, "k") + f"""
r = k.tune(device="cpu", strategy="exhaustive", store={str(tmp_path / 'p.db')!r})
print("BEST", r.best_config["WPT"], r.statuses)
""")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "BEST" in done.stdout and "{'ok': 2}" in done.stdout
    assert done.stdout.count("BEST") == 1  # the script ran once, not again in the worker processes


def test_the_tune_kernel_command(tmp_path):
    import subprocess
    import sys

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "imagecl", *args], capture_output=True, text=True, timeout=300)

    spec = tmp_path / "spec.py"
    spec.write_text(scale_kernel_script(tmp_path, "kernel"))
    done = cli("tune-kernel", str(spec), "--device", "cpu", "--strategy", "exhaustive", "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "scale.cl").is_file() and '"WPT"' in (tmp_path / "out" / "scale.json").read_text()
    broken = tmp_path / "broken.py"
    broken.write_text("from imagecl import TunableKernel\n\nkernel = TunableKernel('k.cl' + 1, 'k', 4)\n")
    done = cli("tune-kernel", str(broken), "-o", str(tmp_path / "x"))
    assert done.returncode != 0 and "broken.py:3: TypeError" in done.stderr and "Traceback" not in done.stderr
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    done = cli("tune-kernel", str(empty), "-o", str(tmp_path / "x"))
    assert done.returncode != 0 and "must define `kernel`, a TunableKernel" in done.stderr


def test_a_kernel_tuned_into_a_postgres_store_is_resumed_from_it(pg_server):
    """store= takes a PostgreSQL URL (a store shared by several machines); a second tuning finds
    every configuration there and measures nothing again."""
    url = pg_server.new_database()
    k, _ = scale_kernel(wpt=(1, 2), wg=(1, 2))
    first = k.tune(device="cpu", strategy="exhaustive", store=url, confirm=0)
    with Store(url, readonly=True) as store:
        stored = list(store.records())
    assert first.evaluations == len(stored) == len(valid_by_hand((1, 2), (1, 2)))
    again = k.tune(device="cpu", strategy="exhaustive", store=url, confirm=0)
    assert again.best_config == first.best_config
    with Store(url, readonly=True) as store:
        assert [r.timestamp for r in store.records()] == [r.timestamp for r in stored]  # none measured again
