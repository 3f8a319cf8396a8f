"""Features of programs, devices, sizes and configurations (imagecl.features, `imagecl features`).

Program features are checked against counts worked out by hand from the examples' sources."""
from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl.cli import main
from imagecl.errors import ConfigError
from imagecl.features import (CONFIG_FIELDS, DeviceFeatures, ProgramFeatures, encode_config, features_of,
                              size_features)
from imagecl.features import device as devfeat
from imagecl.runtime.devices import select_device
from imagecl.space import DeviceLimits

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LIMITS = DeviceLimits(name="test device", max_work_group_size=256, max_work_item_sizes=(256, 256, 64),
                      local_mem_size=16 * 1024)


def load(name: str):
    return imagecl.load(str(EXAMPLES / f"{name}.icl"))


def buffer(features: ProgramFeatures, name: str):
    return next(b for b in features.buffers if b.name == name)


# ---- program features ----------------------------------------------------------------------------


def test_sobel_footprint_reads_and_arithmetic():
    f = features_of(load("sobel"))
    image = buffer(f, "input")
    assert (image.footprint_low, image.footprint_high) == ([-1, -1], [1, 1])
    assert image.halo_low == image.halo_high == [1, 1]
    # eight neighbours, never the centre
    assert image.reads_per_point == 8 and image.footprint_points == 8 and image.reused
    assert image.boundary == "constant" and image.element == "float" and image.element_bytes == 4
    assert [(b.name, b.writes_per_point) for b in f.buffers if b.writes_per_point] == [("dx", 1), ("dy", 1)]
    # per output: (a-b) + 2*(c-d) + (e-f) is 3 subtractions and 2 additions, one * 2, one / 8
    assert (f.ops["add"], f.ops["mul"], f.ops["div"]) == (10, 2, 2)
    assert f.ops["transcendental"] == f.branches == 0 and f.loops == []
    s = f.summary()
    assert s["image_reads_per_point"] == 8 and s["bytes_read_per_point"] == 32 and s["bytes_written_per_point"] == 8
    assert s["max_halo"] == 1 and s["boundary_constant"] == 1


def test_convolution9_counts_weighted_by_trip_counts():
    f = features_of(load("convolution9"))
    # sum += input[..] * filter[..] in a 9 x 9 loop nest: 81 multiplications and 81 additions;
    # the subscripts' arithmetic is index arithmetic, not the filter's
    assert (f.ops["mul"], f.ops["add"]) == (81, 81)
    assert f.ops["index"] > 0 and f.ops["int_add"] == 0
    assert [(lp.keyword, lp.trip_count, lp.per_point) for lp in f.loops] == [("for", 9, 1), ("for", 9, 9)]
    assert f.loop_iterations == 9 + 81
    assert buffer(f, "input").reads_per_point == 81 and buffer(f, "input").halo_low == [4, 4]
    weights = buffer(f, "filter")
    assert (weights.kind, weights.reads_per_point, weights.shape, weights.bytes) == ("array", 81, [9, 9], 324)
    assert buffer(f, "input").boundary == "clamped"
    assert f.summary()["max_trip_count"] == 9 and f.summary()["data_dependent_loops"] == 0


def test_median_private_array_and_data_dependent_loop():
    f = features_of(load("median"))
    assert [(p.name, p.element, p.shape, p.bytes) for p in f.private_arrays] == [("window", "uchar", [25], 25)]
    loops = [(lp.keyword, lp.trip_count, lp.per_point) for lp in f.loops]
    # the insertion sort's while loop runs once per outer iteration (24) and is flagged
    assert loops == [("for", 5, 1), ("for", 5, 5), ("for", 24, 1), ("while", None, 24)]
    # while (b >= 0 && window[b] > v): two comparisons and one && per entry, counted once
    assert (f.ops["compare"], f.ops["logic"]) == (48, 24)
    # n++ 25 times; b = a - 1 and b-- 24 times each
    assert f.ops["int_add"] == 25 + 24 + 24
    assert buffer(f, "input").element_bytes == 1 and buffer(f, "input").boundary == "mirror"
    assert f.summary()["private_array_bytes"] == 25


def test_a_tunable_decides_which_arm_counts():
    # median_select's ALGORITHM 0 is median.icl's insertion sort; 1 is a histogram
    program = load("median_select")
    sort, histogram = features_of(program, {"ALGORITHM": 0}), features_of(program, {"ALGORITHM": 1})
    median = features_of(load("median"))
    assert sort.ops == median.ops and sort.branches == median.branches == 0
    assert [(p.name, p.bytes) for p in sort.private_arrays] == [("window", 25)]
    assert [(p.name, p.bytes) for p in histogram.private_arrays] == [("hist", 256 * 4)]
    assert [(lp.trip_count, lp.per_point) for lp in histogram.loops] == [(256, 1), (5, 1), (5, 5), (None, 1)]
    # hist[..]++ 25 times; count + hist[v], count += hist[v] and v++ once (a data-dependent loop)
    assert (histogram.ops["int_add"], histogram.ops["compare"]) == (25 + 3, 1)
    assert buffer(histogram, "input").reads_per_point == 25


def test_mandelbrot_loop_flagged_and_integer_arithmetic():
    f = features_of(load("mandelbrot"))
    assert [(lp.keyword, lp.trip_count, lp.per_point) for lp in f.loops] == [("while", None, 1)]
    assert f.summary()["data_dependent_loops"] == 1 and f.loop_iterations == 1
    # step*idx, step*idy, zr*zr, zi*zi, 2*zr*zi (two); 4 * 4096 is folded
    assert (f.ops["int_mul"], f.ops["int_div"]) == (6, 3)
    assert f.ops["mul"] == f.ops["add"] == 0 and f.branches == 1
    assert f.summary()["images_read"] == 0 and f.summary()["scalars"] == 4


def test_bilateral3d_is_three_dimensional():
    f = features_of(load("bilateral3d"))
    assert f.grid_dims == 3
    image = buffer(f, "input")
    assert image.dims == 3 and image.halo_low == image.halo_high == [1, 1, 1]
    assert image.reads_per_point == 27 + 1 and image.footprint_points == 27
    assert f.ops["transcendental"] == 27  # one exp per neighbour
    assert [lp.per_point for lp in f.loops] == [1, 3, 9]
    # two divisions for gs, gr and one for sum / wsum; -0.5f is a constant
    assert f.ops["div"] == 3
    assert f.summary()["space_work_group"] == 3


def test_helper_is_counted_at_each_call_and_loops_keep_their_trip_counts():
    # unsharp passes its loop counters to a helper: the space does not unroll those loops, but
    # their trip count is still 3
    f = features_of(load("unsharp"))
    assert [(lp.trip_count, lp.per_point) for lp in f.loops] == [(3, 1), (3, 3)]
    # binomial(d) is `d == 0 ? 2.0f : 1.0f`, called twice per neighbour
    assert (f.ops["compare"], f.ops["select"]) == (18, 18)
    assert buffer(f, "input").reads_per_point == 10


def test_vector_operations_count_per_lane_and_tunables():
    program = imagecl.compile("""
        #pragma imcl grid(a, o)
        #pragma imcl tunable(T: 2, 4)
        void f(Image<float4> a, Image<float4> o) {
            float4 s = a[idx][idy];
            for (int i = 0; i < T; i++)
                s = s * 2.0f + a[idx][idy];
            o[idx][idy] = s;
        }""")
    f = features_of(program)
    # the bound is a tunable: T = 2 by default, and each float4 operation counts 4 times
    assert (f.ops["mul"], f.ops["add"]) == (2 * 4, 2 * 4)
    assert [(lp.trip_count, lp.per_point) for lp in f.loops] == [(2, 1)]
    assert f.tunables == {"T": [2, 4]} and f.summary()["tunables"] == 1
    assert buffer(f, "a").element_bytes == 16 and buffer(f, "a").reads_per_point == 1 + 2
    four = features_of(program, {"T": 4})
    assert (four.ops["mul"], four.loops[0].trip_count, buffer(four, "a").reads_per_point) == (16, 4, 5)
    with pytest.raises(ConfigError, match="one of"):
        features_of(program, {"T": 3})
    with pytest.raises(ConfigError, match="not a tunable"):
        features_of(program, {"U": 2})


def test_builtins_by_kind():
    f = features_of(imagecl.compile("""
        #pragma imcl grid(a, o)
        void f(Image<float4> a, Image<float> o) {
            float4 v = a[idx][idy];
            float d = dot(v, v);
            float m = mad(d, 2.0f, 1.0f);
            float r = min(m, sqrt(d));
            o[idx][idy] = fmod(r, 3.0f) + (float)isnan(r);
        }"""))
    # dot of 4 lanes: 4 mul + 3 add; mad: 1 + 1; the final + 1
    assert (f.ops["mul"], f.ops["add"], f.ops["div"]) == (4 + 1, 3 + 1 + 1, 1)
    assert (f.ops["transcendental"], f.ops["other"], f.ops["compare"]) == (1, 1, 1)


def test_loops_that_can_leave_early_are_data_dependent():
    f = features_of(imagecl.compile("""
        #pragma imcl grid(a, o)
        void f(Image<float> a, Image<float> o) {
            float s = 0.0f;
            for (int i = 0; i < 100; i++) {
                if (s > a[idx][idy]) break;
                s += 1.0f;
            }
            for (int j = 0; j < 100; j++) {
                s *= 2.0f;
                if (s > 4.0f) j += 10;
            }
            for (int k = 0; k < 100; k++) {
                s = s - 1.0f;
            }
            o[idx][idy] = s;
        }"""))
    assert [(lp.line, lp.trip_count) for lp in f.loops] == [(5, None), (9, None), (13, 100)]
    assert f.summary()["data_dependent_loops"] == 2 and f.branches == 2
    # the first two loops count once, their control included (i < 100, i++, j < 100, j++, and
    # j += 10), the third 100 times without its control
    assert (f.ops["add"], f.ops["mul"], f.ops["int_add"]) == (1 + 100, 1, 2 + 1)
    assert f.ops["compare"] == 2 + 2 and buffer(f, "a").reads_per_point == 1


def test_vectors_have_the_same_names_and_length_for_every_example():
    names = ProgramFeatures.names()
    assert len(names) == len(set(names))
    for path in sorted(EXAMPLES.glob("*.icl")):
        f = features_of(imagecl.load(str(path)))
        vector = f.to_vector()
        assert vector.shape == (len(names),), path.name
        assert np.isfinite(vector).all(), path.name
        assert list(f.summary()) == names
        json.dumps(f.to_dict())  # JSON-ready


# ---- configuration encoding -----------------------------------------------------------------------


def test_config_encoding_shared_across_programs():
    vectors = []
    for name, shape in (("sobel", (640, 480)), ("convolution", (640, 480)), ("bilateral3d", (32, 32, 16)),
                        ("mandelbrot", (640, 480)), ("raycasting", (640, 480))):
        program = load(name)
        space = program.space_for_limits(LIMITS)
        for config in [{}] + space.random(3, seed=1):
            enc = encode_config(program, space, config, shape)
            vectors.append(enc.to_vector())
            v = enc.to_dict()
            assert v["wg_total"] == v["wg_x"] * v["wg_y"] * v["wg_z"]
            assert v["px_total"] == v["px_x"] * v["px_y"] * v["px_z"]
            assert v["parameters"] == len(space.parameters)
            if len(shape) == 2:  # no z axis: one work-item and one point deep
                assert v["wg_z"] == v["px_z"] == 1
            assert 0 <= v["idle_fraction"] < 1
    assert {len(v) for v in vectors} == {len(CONFIG_FIELDS)}


def test_config_encoding_derived_launch_quantities():
    program = load("convolution")
    space = program.space_for_limits(LIMITS)
    v = encode_config(program, space, {"wg_x": 16, "wg_y": 4, "px_x": 2, "local_input": 1,
                                       "unroll_convolution_l15": 5, "unroll_convolution_l16": 5},
                      (640, 480)).to_dict()
    assert v["work_items"] == 320 * 480 and v["work_groups"] == (320 // 16) * (480 // 4)
    assert v["idle_fraction"] == 0
    # the tile: (16 work-items * 2 points + 2 halo each side) x (4 + 2 + 2) floats
    assert v["local_mem_bytes"] == (16 * 2 + 4) * (4 + 4) * 4
    assert v["local_mem_fraction"] == v["local_mem_bytes"] / LIMITS.local_mem_size
    assert (v["local_images"], v["local_images_fraction"], v["image_images"]) == (1, 1, 0)
    assert (v["unroll_loops"], v["unroll_full_fraction"]) == (2, 1)
    assert v["unroll_log2_mean"] == pytest.approx(math.log2(5))
    # a grid that no work-group size divides: the launch rounds up and some slots idle
    odd = encode_config(program, space, {"wg_x": 16, "wg_y": 16}, (100, 100)).to_dict()
    assert odd["work_items"] == 112 * 112 and odd["idle_fraction"] == pytest.approx(1 - 100 * 100 / (112 * 112))


def test_config_encoding_of_data_dependent_loops():
    # unsharp's loops pass their counters to a helper, so the space unrolls them partially, as
    # loops of unknown trip count (factors 1..16), although they run 3 times
    program = load("unsharp")
    space = program.space_for_limits(LIMITS)
    unroll = [p.name for p in space.parameters if p.kind == "unroll"]
    assert len(unroll) == 2 and all(space.parameter(p).values == [1, 2, 4, 8, 16] for p in unroll)
    v = encode_config(program, space, {unroll[0]: 4, unroll[1]: 16}, (64, 64)).to_dict()
    assert v["dynamic_unroll_log2_mean"] == 3 and v["unroll_log2_mean"] == 3 and v["unroll_log2_max"] == 4
    assert v["unroll_full_fraction"] == 0


def test_config_encoding_rejects_configurations_outside_the_space():
    program = load("sobel")
    space = program.space_for_limits(LIMITS)
    with pytest.raises(ConfigError):
        encode_config(program, space, {"wg_x": 3}, (64, 64))
    with pytest.raises(ConfigError):
        encode_config(program, space, {"nonsense": 1}, (64, 64))


def test_size_features():
    s = size_features((640, 480))
    assert (s["width"], s["height"], s["depth"], s["points"]) == (640, 480, 1, 640 * 480)
    assert s["log2_points"] == pytest.approx(math.log2(640 * 480))
    assert size_features((4, 4, 8))["depth"] == 8


# ---- device features ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pocl():
    return select_device("cpu")


def test_device_features_from_queries(pocl):
    f = devfeat.device_features(pocl, measure=False)
    assert f.type == "CPU" and f.compute_units >= 1 and f.max_clock_mhz > 0
    assert f.local_mem_bytes > 0 and f.global_mem_bytes > f.local_mem_bytes
    assert f.max_work_group_size >= 1 and len(f.max_work_item_sizes) == 3
    assert f.preferred_vector_widths["float"] >= 1
    assert f.copy_bandwidth_gbs is None and f.peak_gflops is None
    vector = f.to_vector()
    assert vector.shape == (len(DeviceFeatures.names()),)
    s = f.summary()
    assert s["is_cpu"] == 1 and s["is_gpu"] == 0 and s["is_pocl"] == 1
    assert math.isnan(s["copy_bandwidth_gbs"]) and f.to_dict()["summary"]["copy_bandwidth_gbs"] is None
    json.dumps(f.to_dict(), allow_nan=False)


def _numpy_copy_bandwidth(nbytes: int = 16 * 2**20) -> float:
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - start)
    return 2 * nbytes / statistics.median(times) / 1e9


def test_measured_once_cached_and_plausible(pocl, tmp_path, monkeypatch):
    cache = tmp_path / "features.json"
    start = time.perf_counter()
    first = devfeat.device_features(pocl, cache_dir=cache)
    assert time.perf_counter() - start < 10  # about 1.5 s with the build, shared machine included
    reference = _numpy_copy_bandwidth()
    # the same memory, read and written by the same cores: within a plausible factor of NumPy
    assert reference / 8 < first.copy_bandwidth_gbs < reference * 8, (first.copy_bandwidth_gbs, reference)
    # no more than every core doing 16-lane multiply-adds on two units at the reported clock
    ceiling = first.compute_units * first.max_clock_mhz * 1e-3 * 2 * 2 * 16
    assert 0.05 < first.peak_gflops < ceiling
    stored = json.loads(cache.read_text())[first.key]
    assert stored["copy_bandwidth_gbs"] == first.copy_bandwidth_gbs

    def no_measurement(device, repeats=5):
        raise AssertionError("measured again although cached")

    monkeypatch.setattr(devfeat, "measure_device", no_measurement)
    second = devfeat.device_features(pocl, cache_dir=cache)
    assert (second.copy_bandwidth_gbs, second.peak_gflops) == (first.copy_bandwidth_gbs, first.peak_gflops)


@pytest.mark.parametrize("damage", ["{not json", "[1, 2]", "\xff\xfe", "entry"])
def test_damaged_cache_is_measured_again(pocl, tmp_path, monkeypatch, damage):
    cache = tmp_path / "features.json"
    key = devfeat.query(pocl).key
    if damage == "entry":  # valid JSON, but this device's entry is not usable; another's is kept
        cache.write_text(json.dumps({key: {"version": devfeat.MEASUREMENT_VERSION, "copy_bandwidth_gbs": "fast",
                                           "peak_gflops": -1},
                                     "other | device | 1.0": {"version": devfeat.MEASUREMENT_VERSION,
                                                              "copy_bandwidth_gbs": 1.0, "peak_gflops": 2.0}}))
    else:
        cache.write_bytes(damage.encode("latin-1"))
    calls = []

    def fake(device, repeats=5):
        calls.append(device)
        return {"version": devfeat.MEASUREMENT_VERSION, "copy_bandwidth_gbs": 12.5, "peak_gflops": 34.0}

    monkeypatch.setattr(devfeat, "measure_device", fake)
    f = devfeat.device_features(pocl, cache_dir=cache)
    assert len(calls) == 1 and (f.copy_bandwidth_gbs, f.peak_gflops) == (12.5, 34.0)
    data = json.loads(cache.read_text())
    assert data[key]["copy_bandwidth_gbs"] == 12.5
    assert ("other | device | 1.0" in data) == (damage == "entry")
    assert not list(tmp_path.glob("*.tmp"))


def test_a_failed_measurement_is_a_clear_error(pocl, tmp_path, monkeypatch):
    import pyopencl as cl

    def out_of_resources(*args):
        raise cl.RuntimeError("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")

    monkeypatch.setattr(devfeat, "_bandwidth", out_of_resources)
    with pytest.raises(imagecl.errors.DeviceError, match="--no-measure"):
        devfeat.device_features(pocl, cache_dir=tmp_path / "features.json")
    assert not (tmp_path / "features.json").exists()


def test_a_device_of_the_same_name_and_driver_but_another_size_is_measured_for_itself(pocl, tmp_path, monkeypatch):
    """A cache in a home folder shared by a 16- and a 32-core VM, whose PoCL devices have one name
    and driver: the other size's rates (and those cached before sizes were) are not this one's."""
    from imagecl.runtime.devices import device_key, legacy_device_key

    cache = tmp_path / "features.json"
    units = int(pocl.max_compute_units)
    assert devfeat.query(pocl).key == device_key(pocl) == f"{legacy_device_key(pocl)} | {units} compute units"
    theirs = {"version": devfeat.MEASUREMENT_VERSION, "copy_bandwidth_gbs": 999.0, "peak_gflops": 999.0}
    cache.write_text(json.dumps({f"{legacy_device_key(pocl)} | {2 * units} compute units": theirs,
                                 legacy_device_key(pocl): theirs}))
    monkeypatch.setattr(devfeat, "measure_device", lambda device, repeats=5: {
        "version": devfeat.MEASUREMENT_VERSION, "copy_bandwidth_gbs": 3.0, "peak_gflops": 4.0})
    assert devfeat.device_features(pocl, cache_dir=cache).copy_bandwidth_gbs == 3.0
    assert len(json.loads(cache.read_text())) == 3  # the other size's entry is kept, for the other VM


def test_measurements_of_an_older_method_are_measured_again(pocl, tmp_path, monkeypatch):
    cache = tmp_path / "features.json"
    key = devfeat.query(pocl).key
    cache.write_text(json.dumps({key: {"version": devfeat.MEASUREMENT_VERSION - 1, "copy_bandwidth_gbs": 1.0,
                                       "peak_gflops": 1.0}}))
    monkeypatch.setattr(devfeat, "measure_device", lambda device, repeats=5: {
        "version": devfeat.MEASUREMENT_VERSION, "copy_bandwidth_gbs": 3.0, "peak_gflops": 4.0})
    assert devfeat.device_features(pocl, cache_dir=cache).copy_bandwidth_gbs == 3.0


# ---- command line ---------------------------------------------------------------------------------


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_prints_json(capsys):
    code, out, err = run_cli(capsys, "features", str(EXAMPLES / "convolution.icl"), "--size", "64x48",
                             "--device", "cpu", "--no-measure", "--config", '{"wg_x": 8, "px_y": 2}')
    assert code == 0, err
    data = json.loads(out)
    assert set(data) == {"program", "device", "size", "config"}
    assert data["program"]["summary"]["ops_mul"] == 25
    assert data["device"]["type"] == "CPU" and data["device"]["copy_bandwidth_gbs"] is None
    assert (data["size"]["width"], data["size"]["height"]) == (64, 48)
    assert data["config"]["wg_x"] == 8 and data["config"]["work_items"] == 64 * 24
    code, out, err = run_cli(capsys, "features", str(EXAMPLES / "bilateral3d.icl"), "--size", "16x8x4",
                             "--device", "cpu", "--no-measure")
    assert code == 0, err
    data = json.loads(out)
    assert data["size"]["depth"] == 4 and "config" not in data and data["program"]["grid_dims"] == 3


FIXED_GRID = """
#pragma imcl grid_size(100, 50)
void f(float* out, int n) {
    int i = idx + idy * 100;
    out[i] = (float)(i * n);
}
"""


def test_cli_fixed_grid_size_is_the_size(capsys, tmp_path):
    (tmp_path / "fixed.icl").write_text(FIXED_GRID)
    code, out, err = run_cli(capsys, "features", str(tmp_path / "fixed.icl"), "--device", "cpu", "--no-measure",
                             "--config", '{"wg_x": 8, "wg_y": 2}')
    assert code == 0, err
    data = json.loads(out)
    assert (data["size"]["width"], data["size"]["height"]) == (100, 50)
    assert data["config"]["points"] == 5000 and data["config"]["work_items"] == 104 * 50
    out_buffer = data["program"]["buffers"][0]
    assert (out_buffer["kind"], out_buffer["writes_per_point"]) == ("pointer", 1)
    # idy * 100 and i * n: the index is computed outside the subscript, so it is arithmetic
    assert (data["program"]["ops"]["int_mul"], data["program"]["ops"]["int_add"]) == (2, 1)


@pytest.mark.parametrize("argv, message", [
    (["missing.icl"], "no such file"),
    (["{ex}/sobel.icl", "--size", "64"], "--size"),
    (["{ex}/sobel.icl", "--size", "8x8x8"], "dimensions"),
    (["{ex}/sobel.icl", "--config", '{"wg_x": 8}'], "give the size (--size)"),
    (["{tmp}/fixed.icl", "--size", "64x64"], "fixed grid of 100x50"),
    (["{ex}/sobel.icl", "--size", "8x8", "--config", "{bad"], "not valid JSON"),
    (["{ex}/sobel.icl", "--size", "8x8", "--config", '{"wg_q": 8}'], "not a tuning parameter"),
    (["{ex}/sobel.icl", "--size", "8x8", "--config", '{"wg_x": 3}'], "must be one of"),
    (["{ex}/sobel.icl", "--device", "no such device"], "no OpenCL device matches"),
    (["{tmp}/broken.icl"], "broken.icl:3:19: error: use of undeclared identifier"),
])
def test_cli_rejects_bad_input(capsys, tmp_path, argv, message):
    (tmp_path / "fixed.icl").write_text(FIXED_GRID)
    (tmp_path / "broken.icl").write_text("#pragma imcl grid(a)\nvoid f(Image<float> a) {\n    a[idx][idy] = b;\n}\n")
    argv = [a.replace("{ex}", str(EXAMPLES)).replace("{tmp}", str(tmp_path)) for a in argv]
    code, out, err = run_cli(capsys, "features", *argv, "--no-measure")
    assert code == 1 and out == ""
    assert message in err and "Traceback" not in err and "internal error" not in err


def test_every_vector_field_is_documented():
    doc = (Path(__file__).resolve().parent.parent / "docs" / "features.md").read_text()
    for name in ProgramFeatures.names() + DeviceFeatures.names() + list(CONFIG_FIELDS):
        # a family of names may be documented as `prefix_x`/`_y`/`_z`
        prefix, suffix = name.rsplit("_", 1) if "_" in name else (name, "")
        assert f"`{name}`" in doc or (f"`{prefix}_" in doc and f"`_{suffix}`" in doc), name


def test_columnar_encoding_of_a_whole_space_agrees_with_code_generation():
    from imagecl.codegen.variant import VariantPlan, launch_geometry, tile_bytes_at_launch
    from imagecl.features import encode_columns

    program = load("convolution")
    space = program.space_for_limits(LIMITS)
    sample = space.random(300, seed=2)
    columns = {name: np.array([c[name] for c in sample]) for name in space.names}
    rows = encode_columns(program, space, columns, (100, 75))
    count = len(sample)
    assert rows.shape == (count, len(CONFIG_FIELDS)) and np.isfinite(rows).all()
    field = {name: j for j, name in enumerate(CONFIG_FIELDS)}
    rng = np.random.default_rng(0)
    for i in rng.choice(count, 100, replace=False):
        config = {k: int(v[i]) for k, v in columns.items()}
        plan = VariantPlan.from_config(program.info, config)
        global_size, local_size = launch_geometry(program.info, plan, (100, 75))
        assert rows[i, field["work_items"]] == global_size[0] * global_size[1]
        if local_size is None:  # the driver's choice: counted as work-groups of one work-item
            local_size = (1, 1)
        assert rows[i, field["work_groups"]] == (global_size[0] // local_size[0]) * (global_size[1] // local_size[1])
        analysis = program.analysis_for({})
        tiles = tile_bytes_at_launch(program.info, plan, analysis, "input") if config["local_input"] else 0
        assert rows[i, field["local_mem_bytes"]] == tiles + 100 * config.get("local_filter", 0)
    with pytest.raises(ConfigError):
        encode_columns(program, space, {"wg_x": np.array([1])}, (100, 75))
