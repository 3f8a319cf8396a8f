"""The first sample of a search on a CPU device balances the code shape (tuner/strategies/design.py),
and the CPU peer runs tune on smaller inputs (imagecl/bench/peers.tuning_shape)."""
import numpy as np
import pytest

from imagecl.tuner import problem as problem_mod
from imagecl.tuner.problem import Parameter
from imagecl.tuner.strategies import hybrid
from imagecl.tuner.strategies.design import code_shape_levels, device_kind
from imagecl.tuner.strategies.sampling import _spread_sample


def _cpu_space(kind):
    """Like a convolution's space on a CPU: vector code (vector_x = 2) only with the fast path,
    blocked layout and px_x >= 8 (3% of the valid configurations), among many work-group shapes
    and memory options that a plain spread balances as much as vector_x."""
    params = [Parameter("wg_x", [0, 1, 2, 4, 8, 16, 32, 64]), Parameter("wg_y", [0, 1, 2, 4, 8, 16, 32, 64]),
              Parameter("px_x", [1, 2, 4, 8, 16, 32]), Parameter("px_y", [1, 2, 4, 8]),
              Parameter("interleaved", [0, 1]), Parameter("image_input", [0, 1]), Parameter("local_input", [0, 1]),
              Parameter("constant_filter", [0, 1]), Parameter("unroll", [1, 3, 9]), Parameter("interior", [0, 1]),
              Parameter("vector_x", [0, 1, 2])]

    def valid(c):
        vector = (c["interior"] == 1) & (c["interleaved"] == 0) & (c["image_input"] == 0) & (c["local_input"] == 0)
        return (c["vector_x"] == 0) | (vector & (c["px_x"] >= 8) & ((c["vector_x"] == 1) | (c["unroll"] == 9)))

    p = problem_mod.FunctionProblem(params, lambda c: 1.0 if c["vector_x"] < 2 else 0.2, valid)
    p.device_kind = kind
    return p


def _live_problem(space, device: "str | None" = "cpu"):
    """`space` as a tuning session's problem on `device` (None: a measurer without an OpenCL device)."""
    from imagecl.runtime.devices import select_device
    from imagecl.tuner.live import LiveProblem

    class Measurer:  # what LiveProblem asks of a measurer when it is made
        def stored(self):
            return {}

    Measurer.device = select_device(device) if device else None
    return LiveProblem(space, Measurer())


def test_plain_spread_often_misses_vector_code_at_small_samples():
    """The premise: vector code is rare, and the plain spread's first three draws often lack it."""
    p = _cpu_space(None)
    rows = p.sample_matrix(4000, np.random.default_rng(0))
    assert (rows[:, -1] == 2).mean() < 0.05
    missed = sum((_spread_sample(p, 3, np.random.default_rng(s))[:, -1] != 2).all() for s in range(20))
    assert missed >= 5


@pytest.mark.parametrize("n", [3, 4, 7])
def test_cpu_design_takes_every_vector_x_value_first(n):
    p = _cpu_space("CPU")
    lead = code_shape_levels(p)
    assert lead == [(10,), (10, 2)]  # vector_x, then (vector_x, px_x)
    for seed in range(20):
        rows = _spread_sample(p, n, np.random.default_rng(seed), lead=lead)
        assert len(rows) == n and p._mask_rows(rows).all() and len(np.unique(p.index(rows))) == n
        assert set(rows[:3, -1]) == {0, 1, 2}, rows  # each vector_x value in the first three draws
        if n == 7:  # the second round of vector code takes another px_x than the first
            vector = rows[rows[:, -1] == 2]
            assert len(vector) >= 2 and len(set(vector[:, 2])) == len(vector)


def test_the_design_follows_the_device_kind():
    assert code_shape_levels(_cpu_space("GPU")) == [] and code_shape_levels(_cpu_space(None)) == []
    assert code_shape_levels(_cpu_space("GPU"), code_shape=True) == [(10,), (10, 2)]
    assert code_shape_levels(_cpu_space("CPU"), code_shape=False) == []
    plain = problem_mod.FunctionProblem([Parameter("wg_x", [1, 2]), Parameter("px_x", [1, 2])], lambda c: 1.0)
    plain.device_kind = "CPU"
    assert code_shape_levels(plain) == []  # no vector_x: nothing to lead with (px_x alone is not a level)


def test_hybrid_on_a_cpu_measures_vector_code_in_its_first_sample():
    """The default strategy's first stage (a third of a budget of 10: 3 draws) holds vector code
    on a CPU device for every seed, and the search ends on it (it is 5x faster here). The model
    is the constant one: what is checked comes before any model."""
    for seed in range(6):
        result = hybrid(_cpu_space("CPU"), 10, np.random.default_rng(seed), model="constant")
        assert any(c["vector_x"] == 2 for c, _ in result.history[:3]), result.history[:3]
        assert result.best_config["vector_x"] == 2


def test_a_small_budget_still_samples_every_vector_x_value_first():
    """A budget of 8 (what a CPU tuning run of 20 s affords) gives a first stage of 0.3 x 8 = 2
    draws; led by the code shape it takes the three CPU seeds and then 3, one per vector_x value."""
    for seed in range(4):
        result = hybrid(_cpu_space("CPU"), 8, np.random.default_rng(seed), model="constant")
        assert sorted(c["vector_x"] for c, _ in result.history[3:6]) == [0, 1, 2], result.history[:6]
        assert result.info["design_seeds"] == 3 and result.info["seeded"] == 3


def test_with_nothing_known_a_cpu_search_measures_the_cpu_seeds_first():
    """design.CPU_SEEDS (the Xeon's fastest vector-code shapes) open a CPU search that has no seeds
    and no prior; each takes the nearest listed value (px_x 64 -> 32 here) and a valid rest."""
    from imagecl.tuner.strategies.design import CPU_SEEDS, code_shape_seeds

    p = _cpu_space("CPU")
    # a problem without an imagecl space: the seeds' shapes alone
    assert code_shape_seeds(p) == [{k: v for k, v in s.items() if k != "tiles"} for s in CPU_SEEDS]
    result = hybrid(p, 8, np.random.default_rng(0), model="constant")
    first, second, third = (c for c, _ in result.history[:3])
    assert (first["vector_x"], first["interior"], first["px_x"], first["px_y"], first["wg_x"], first["wg_y"]) == \
        (2, 1, 32, 4, 1, 2)
    assert (second["vector_x"], second["px_x"], second["px_y"], second["wg_x"], second["wg_y"]) == (2, 32, 4, 4, 4)
    assert (third["vector_x"], third["px_x"], third["px_y"], third["wg_y"]) == (2, 32, 1, 8)
    # given seeds (the store's transfer, a knowledge model) win; a GPU, or a space without vector
    # code, gets none
    given = {"vector_x": 0, "px_x": 1, "px_y": 1, "wg_x": 4, "wg_y": 4}
    seeded = hybrid(_cpu_space("CPU"), 8, np.random.default_rng(0), model="constant", seeds=[given])
    assert "design_seeds" not in seeded.info and seeded.history[0][0]["vector_x"] == 0
    gpu = hybrid(_cpu_space("GPU"), 8, np.random.default_rng(0), model="constant")
    assert "design_seeds" not in gpu.info
    scalar = problem_mod.FunctionProblem([Parameter("vector_x", [0, 1]), Parameter("px_x", [1, 2])], lambda c: 1.0)
    scalar.device_kind = "CPU"
    assert code_shape_seeds(scalar) == []


def test_cpu_seeds_of_an_imagecl_space_name_the_plain_code_the_study_timed():
    """On a program's space the seeds also fix what the fixed-configuration study fixed: every
    loop with a known trip count unrolled fully, no image, constant or local-memory copy of the
    filter, and the input staged in a local-memory tile only in the seed that says so; each seed
    is a valid configuration of the space as it stands (nothing left to chance)."""
    import imagecl
    from imagecl.bench.peer_workloads import convolution_source
    from imagecl.runtime.devices import select_device
    from imagecl.tuner.strategies.design import CPU_SEEDS, code_shape_seeds

    program = imagecl.compile(convolution_source(2), "<t>")  # 5x5: a window narrower than WIDE_WINDOW
    space = program.space_for(select_device("cpu"), (256, 256))
    assert space.tile_window == {"local_input": 25}
    seeds = code_shape_seeds(_live_problem(space))
    assert len(seeds) == len(CPU_SEEDS)
    unrolls = [p.name for p in space.parameters if p.name.startswith("unroll_")]
    assert len(unrolls) == 2 and all(space.full_unroll[u] == 5 for u in unrolls)
    for seed, study in zip(seeds, CPU_SEEDS):
        assert all(seed[u] == 5 for u in unrolls), seed
        assert seed["image_input"] == seed["image_filter"] == seed["local_filter"] == seed["constant_filter"] == 0
        assert seed["local_input"] == study["tiles"] and seed["interleaved"] == 0
        assert {k: seed[k] for k in ("vector_x", "px_x", "px_y", "wg_x", "wg_y", "interior")} == \
            {k: study[k] for k in ("vector_x", "px_x", "px_y", "wg_x", "wg_y", "interior")}
        assert set(seed) == {p.name for p in space.parameters}  # the whole configuration
        assert space.valid_mask({k: np.array([v]) for k, v in seed.items()})[0], seed
        assert space.complete(seed) == seed


@pytest.mark.parametrize("key, window, values", [("conv9", 81, 2), ("conv11", 121, 2), ("median7", 49, 322),
                                                 ("median5", 25, 116), ("median3", 9, 27), ("sobel", 9, 9)])
def test_a_wide_window_leads_with_the_first_seed_staged(key, window, values):
    """A 2-D program that reads a window of 7x7 or more of its input starts from CPU_SEEDS[0]'s
    shape with the input staged in local memory, then CPU_SEEDS as they are; a narrower window
    starts from CPU_SEEDS. Before them, a program whose vector code keeps more than
    MANY_LANE_VALUES values (the medians' selection networks) starts from one run of 16 points a
    call, staged where the window is wide. The window is the footprint's box and the values the
    lane analysis's varying symbols, both counted by the compiler."""
    import imagecl
    from imagecl.bench.peer_workloads import all_workloads
    from imagecl.bench.seed_configs import with_tunables
    from imagecl.runtime.devices import select_device
    from imagecl.tuner.strategies.design import (CPU_SEEDS, MANY_LANE_VALUES, ONE_RUN_SEED, WIDE_WINDOW,
                                                 code_shape_seeds)

    workload = next(w for w in all_workloads() if w.key == key)
    program = imagecl.compile(workload.source, f"<{key}>")
    space = program.space_for(select_device("cpu"), (256, 256))
    assert max(space.tile_window.values()) == window and space.lane_values == values
    seeds = code_shape_seeds(_live_problem(space))
    shape = ("vector_x", "px_x", "px_y", "wg_x", "wg_y", "interior")
    studied = [{k: s[k] for k in shape} for s in CPU_SEEDS]
    wide = window >= WIDE_WINDOW
    many = values > MANY_LANE_VALUES
    one_run = {k: ONE_RUN_SEED[k] for k in shape}
    assert [{k: s[k] for k in shape} for s in seeds] == \
        ([one_run] if many else []) + ([studied[0]] if wide else []) + studied
    assert [s["local_input"] for s in seeds] == \
        ([int(wide)] if many else []) + ([1] if wide else []) + [s["tiles"] for s in CPU_SEEDS]
    # each seed names the compiler's configuration; with some value of the program's own tunables
    # (the median's algorithm) it is valid
    for seed in seeds:
        assert with_tunables(space, seed) is not None, seed


@pytest.mark.parametrize("key", ["conv3d", "bilateral"])
def test_cpu_seeds_of_a_3d_space_stage_the_input_and_name_every_axis(key):
    """A 3-D grid takes CPU_SEEDS_3D: every seed stages its input in local memory (direct reads
    leave the border work-groups, most of them at 128^3, to the scalar path) and names its points
    and work-group along z; each is a whole, valid configuration of the program's space."""
    import imagecl
    from imagecl import choices as ch
    from imagecl.bench.peer_workloads import all_workloads
    from imagecl.runtime.devices import select_device
    from imagecl.tuner.strategies.design import CPU_SEEDS_3D, code_shape_seeds

    workload = next(w for w in all_workloads() if w.key == key)
    program = imagecl.compile(workload.source, f"<{key}>")
    space = program.space_for(select_device("cpu"), (128, 128, 128))
    seeds = code_shape_seeds(_live_problem(space))
    assert len(seeds) == len(CPU_SEEDS_3D)
    shape = ("vector_x", "px_x", "px_y", "px_z", "wg_x", "wg_y", "wg_z", "interior")
    for seed, study in zip(seeds, CPU_SEEDS_3D):
        assert {k: seed[k] for k in shape} == {k: study[k] for k in shape}
        assert seed["local_input"] == 1 and seed["image_input"] == 0
        assert all(seed[p.name] == space.full_unroll[p.name] for p in space.parameters if p.name in space.full_unroll)
        # the compiler's whole configuration; the program's own tunables (bilateral's) are drawn
        assert set(seed) == {p.name for p in space.parameters if p.family is not ch.TUNABLE}
        whole = space.complete(seed)
        assert {k: whole[k] for k in seed} == seed
        assert space.valid_mask({k: np.array([v]) for k, v in whole.items()})[0], seed


def test_device_kind_of_an_opencl_device():
    from imagecl.runtime.devices import select_device

    assert device_kind(select_device("cpu")) == "CPU"
    assert device_kind(None) is None and device_kind(object()) is None


def test_cpu_peer_runs_tune_on_about_a_million_elements():
    from imagecl.bench.peers import tuning_shape

    assert tuning_shape((4096, 4096), None, cpu=True) == (1024, 1024)
    assert tuning_shape((8192, 8192), None, cpu=True) == (1024, 1024)
    assert tuning_shape((128, 128, 128), None, cpu=True) == (102, 102, 102)
    assert tuning_shape((1024, 1024), None, cpu=True) is None  # small enough: tuned as timed
    assert tuning_shape((4096, 4096), None, cpu=False) is None  # a GPU: as timed unless asked
    assert tuning_shape((4096, 4096), 0.5, cpu=False) == (2048, 2048)
    assert tuning_shape((64, 64), 0.1, cpu=True) == (16, 16)  # at least 16 a side
    assert tuning_shape((4096, 4096), 1.0, cpu=True) is None


def test_a_live_problem_knows_its_device_kind():
    """A tuning session's problem carries its device's kind, which turns the design on."""
    import imagecl
    from imagecl.bench.peer_workloads import convolution_source

    space = imagecl.compile(convolution_source(1), "<t>").space
    assert _live_problem(space).device_kind == "CPU"
    assert _live_problem(space, None).device_kind is None


def test_cpu_peer_run_tunes_on_the_smaller_inputs_and_times_at_the_full_size(tmp_path):
    """--tune-scale 0.5: each run's search measures 32x32 inputs (the tuning store's problem
    size), proposing 2 configurations at a time (--tune-batch 2, built in parallel), and its
    finalists are timed, checked, at the record's 64x64."""
    from imagecl.bench import peers

    argv = ["--device", "cpu", "--quick", "--size-scale", "0.25", "--workloads", "conv3", "--runs", "1",
            "--budget", "3", "--tune-seconds", "60", "--repeats", "2", "--tune-scale", "0.5", "--tune-batch", "2", "--out", str(tmp_path),
            "--halide-schedulers", "Mullapudi2016", "--benchmarks-md", ""]
    record = peers.run(argv)["records"][0]
    ours = record["imagecl"]
    assert record["size"] == [64, 64] and ours["tuning_size"] == [32, 32]
    run = ours["runs"][0]
    assert run["tuning"]["problem_size"] == "32x32" and run["tuned_seconds"] > 0 and "rejected" not in ours
    assert run["tuning"]["batch"] == 2 and run["tuning"]["evaluations"] == 3


def test_a_batch_stopped_by_the_deadline_ends_the_search_cleanly():
    """With batches (a cluster, or peers' --tune-batch), a deadline that stops a batch before it
    is measured ends the search (BudgetExhausted), keeps what was measured, and drops the rest."""
    from imagecl.tuner.strategies import BudgetExhausted, Session

    class Late(problem_mod.FunctionProblem):
        calls = 0

        def evaluate_many(self, configs):
            Late.calls += 1
            if Late.calls > 1:  # the deadline passes after the first batch
                raise BudgetExhausted
            return super().evaluate_many(configs)

    p = Late([Parameter("a", [1, 2, 3, 4])], lambda c: float(c["a"]))
    p.batch = 2
    session = Session(p, 10)
    session.measure([1])
    session.measure([2])  # the first batch: measured
    session.measure([3])
    with pytest.raises(BudgetExhausted):
        session.measure([4])
    result = session.result()
    assert [t for _, t in result.history] == [1.0, 2.0] and result.best_time == 1.0
