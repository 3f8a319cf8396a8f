"""Cases of test_multidevice.py, run in a worker process whose PoCL exposes several devices
(multidevice_worker.py). Each raises AssertionError when the split run is wrong. Devices are
named by index: PoCL's devices of one kind share a name."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import ndimage

import imagecl
from imagecl.errors import ArgumentError, DeviceError, ImageCLError
from imagecl.runtime import multidevice

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
_LOADED: dict = {}


def load(name: str) -> imagecl.Program:
    if name not in _LOADED:
        _LOADED[name] = imagecl.load(EXAMPLES / f"{name}.icl")
    return _LOADED[name]


def all_devices() -> list[int]:
    from imagecl.runtime.devices import list_devices

    return [d.index for d in list_devices()]


def uneven(count: int) -> list[float]:
    weights = np.array([0.27, 0.41, 0.32, 0.2][:count]) if count > 1 else np.array([1.0])
    return list(weights / weights.sum())


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---- one run across devices: every family of variants ----------------------------------------------------

CONV9_FAMILIES = {
    "naive": "naive",
    "work-group": {"wg_x": 8, "wg_y": 4},
    "local tiles": {"wg_x": 8, "wg_y": 4, "local_input": 1, "local_filter": 1},
    "image memory": {"wg_x": 8, "wg_y": 2, "image_input": 1, "image_filter": 1},
    "coarsened": {"wg_x": 4, "wg_y": 2, "px_x": 2, "px_y": 4},
    "coarsened local": {"wg_x": 4, "wg_y": 4, "px_y": 2, "local_input": 1},
    "interleaved local": {"wg_x": 4, "wg_y": 4, "px_y": 2, "interleaved": 1, "local_input": 1},
    "interleaved image": {"wg_x": 4, "wg_y": 2, "px_y": 4, "interleaved": 1, "image_input": 1},
    "fast path local": {"wg_x": 4, "wg_y": 4, "px_y": 2, "interior": 1, "local_input": 1},
    "vector_x": {"wg_x": 2, "wg_y": 4, "px_x": 4, "px_y": 2, "interior": 1, "vector_x": 1},
    "vector_x image": {"wg_x": 4, "wg_y": 2, "px_x": 2, "interior": 1, "vector_x": 1, "image_input": 1},
    "constant unrolled": {"wg_x": 8, "wg_y": 8, "constant_filter": 1, "unroll_convolution9_l19": 3},
}


def _conv9_case():
    img = rng(1).random((61, 64), dtype=np.float32)
    filt = rng(2).random((9, 9), dtype=np.float32)
    reference = ndimage.convolve(img.astype(np.float64), filt.astype(np.float64), mode="nearest")
    return img, filt, reference


def conv9_families() -> None:
    prog = load("convolution9")
    img, filt, reference = _conv9_case()
    devices = all_devices()
    for family, config in CONV9_FAMILIES.items():
        single = prog(input=img, filter=filt, device=devices[0], config=config)["output"]
        split = prog(input=img, filter=filt, devices=devices, shares=uneven(len(devices)), config=config)["output"]
        assert np.array_equal(split, single), f"{family}: differs from one device by {np.abs(split - single).max()}"
        np.testing.assert_allclose(split, reference, rtol=1e-4, atol=1e-4, err_msg=family)


def conv9_own_variant_per_device() -> None:
    prog = load("convolution9")
    img, filt, reference = _conv9_case()
    devices = all_devices()
    configs = [CONV9_FAMILIES[f] for f in ("local tiles", "vector_x", "interleaved image", "naive")][:len(devices)]
    split = prog(input=img, filter=filt, devices=devices, shares=uneven(len(devices)), config=configs)["output"]
    np.testing.assert_allclose(split, reference, rtol=1e-4, atol=1e-4)


def gpus_start_together() -> None:
    """GPUs' allocations and upload plans are made before their threads start, and the threads
    released by one barrier (in iterate, at the first uploads and again at the last downloads);
    PoCL's devices stand in for GPUs here (with two devices only: three PoCL devices started
    together meet a PoCL 3.1 assertion)."""
    import pyopencl as cl

    prog = load("convolution9")
    img, filt, reference = _conv9_case()
    devices = all_devices()[:2]
    made, waits = [], []

    class Counted(multidevice.threading.Barrier):
        def __init__(self, parties, *args, **kwargs):
            made.append(parties)
            super().__init__(parties, *args, **kwargs)

        def wait(self, *args, **kwargs):
            waits.append(self.parties)
            return super().wait(*args, **kwargs)

    saved = multidevice._gpu_type, multidevice.threading.Barrier
    multidevice._gpu_type = lambda: cl.device_type.CPU
    multidevice.threading.Barrier = Counted
    try:
        for family in ("local tiles", "vector_x", "image memory"):
            config = CONV9_FAMILIES[family]
            single = prog(input=img, filter=filt, device=devices[0], config=config)["output"]
            split, ran = multidevice.run(prog, {"input": img, "filter": filt}, devices, uneven(2), config)
            assert np.array_equal(split["output"], single), family
            np.testing.assert_allclose(split["output"], reference, rtol=1e-4, atol=1e-4, err_msg=family)
            assert all(t[0] <= t[1] <= t[2] for t in ran.host_times), ran.host_times
        # one device with rows: nothing to start together
        multidevice.run(prog, {"input": img, "filter": filt}, devices, [1.0, 0.0], "naive")
        assert made == [2, 2, 2] and waits == [2] * 6, (made, waits)
        # iterating: the first uploads and the last downloads released together (two waits a thread)
        life = load("conway")
        board = (rng(19).random((37, 29)) < 0.4).astype(np.int8)
        expected = board
        for _ in range(6):
            expected = life_step(expected)
        for h in (1, 4):
            got = life.iterate(6, input=board, devices=devices, shares=uneven(2), h=h)["output"]
            assert np.array_equal(got, expected), h
        assert made == [2] * 5 and waits == [2] * 14, (made, waits)
    finally:
        multidevice._gpu_type, multidevice.threading.Barrier = saved


def conv9_tuned_variant_per_device() -> None:
    """Without config=, each device runs the configuration tuned for it (the registry's, keyed by
    the device and driver: identical devices share one)."""
    from imagecl import tuned
    from imagecl.runtime.devices import device_key, select_device

    prog = imagecl.load(EXAMPLES / "convolution9.icl")
    img, filt, reference = _conv9_case()
    devices = all_devices()
    recorded = {}
    for index, family in zip(devices, ("coarsened local", "vector_x", "image memory")):
        key = device_key(select_device(index))
        if key not in recorded:
            space = prog.space_for(index, img.shape)
            recorded[key] = space.complete(CONV9_FAMILIES[family])
            tuned.record(prog, select_device(index), recorded[key], img.shape, seconds=1.0)
    try:
        _, ran = multidevice.run(prog, {"input": img, "filter": filt}, devices, uneven(len(devices)))
        assert ran.configs == [recorded[device_key(select_device(i))] for i in devices], ran.configs
        for (began, enqueued, done), kernel in zip(ran.host_times, ran.kernel_seconds):
            # the host's span of each device's run holds its kernel (device clocks differ from the
            # host's, so 1 ms of slack)
            assert 0 <= began <= enqueued <= done and done - began >= kernel - 1e-3, ran.host_times
        split = prog(input=img, filter=filt, devices=devices, shares=uneven(len(devices)))["output"]
        np.testing.assert_allclose(split, reference, rtol=1e-4, atol=1e-4)
    finally:
        tuned.remove(prog.name)


BOUNDARY = """
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:{mode})
void reach(Image<int> input, Image<int> output) {{
    int s = 0;
    for (int j = -3; j <= 2; j++) {{
        s += input[idx][idy + j] * (j + 5) + input[idx + 1][idy + j];
    }}
    output[idx][idy] = s;
}}
"""
NUMPY_PAD = {"constant": "constant", "clamped": "edge", "wrap": "wrap", "mirror": "reflect", "reflect": "symmetric"}


def reach_reference(img: np.ndarray, mode: str) -> np.ndarray:
    h, w = img.shape
    padded = np.pad(img.astype(np.int64), ((3, 2), (0, 1)), mode=NUMPY_PAD[mode])
    out = np.zeros((h, w), np.int64)
    for j in range(-3, 3):
        out += padded[3 + j:3 + j + h, :w] * (j + 5) + padded[3 + j:3 + j + h, 1:w + 1]
    return out.astype(np.int32)


def boundary_modes_and_thin_bands() -> None:
    devices = all_devices()
    for mode in NUMPY_PAD:
        prog = imagecl.compile(BOUNDARY.format(mode=mode))
        for height, shares in ((29, uneven(len(devices))), (13, [1 / 13, 11 / 13, 1 / 13][:len(devices)])):
            if abs(sum(shares) - 1) > 1e-9:
                shares = [1 / 13, 12 / 13]
            img = rng(height).integers(-50, 50, (height, 17)).astype(np.int32)
            expected = reach_reference(img, mode)
            for config in ("naive", {"wg_x": 4, "wg_y": 4, "local_input": 1},
                           {"wg_x": 4, "wg_y": 2, "px_y": 2, "interior": 1}):
                got = prog(input=img, devices=devices, shares=shares, config=config)["output"]
                assert np.array_equal(got, expected), f"{mode}, height {height}, {config}"


def band_with_zero_share() -> None:
    devices = all_devices()
    prog = imagecl.compile(BOUNDARY.format(mode="wrap"))
    img = rng(3).integers(-50, 50, (20, 9)).astype(np.int32)
    shares = [0.0] * len(devices)
    shares[-1] = 1.0
    got = prog(input=img, devices=devices, shares=shares)["output"]
    assert np.array_equal(got, reach_reference(img, "wrap"))
    _, ran = multidevice.run(prog, {"input": img}, devices, shares)
    assert ran.host_times[:-1] == [(0.0, 0.0, 0.0)] * (len(devices) - 1)  # no rows: no run
    began, enqueued, done = ran.host_times[-1]
    assert 0 <= began <= enqueued <= done


def integer_programs_bit_exact() -> None:
    devices = all_devices()
    board = (rng(4).random((37, 23)) < 0.4).astype(np.int8)
    life = load("conway")
    got = life(input=board, devices=devices, shares=uneven(len(devices)))["output"]
    assert np.array_equal(got, life_step(board))
    median = load("median")
    img = rng(5).integers(0, 256, (33, 26)).astype(np.uint8)
    expected = ndimage.median_filter(img, size=5, mode="mirror")
    for config in ("naive", {"wg_x": 4, "wg_y": 4, "local_input": 1}, {"wg_x": 2, "wg_y": 2, "px_y": 2}):
        got = median(input=img, devices=devices, shares=uneven(len(devices)), config=config)["output"]
        assert np.array_equal(got, expected), config


def several_outputs_and_caller_outputs() -> None:
    devices = all_devices()
    sobel = load("sobel")
    img = rng(6).random((31, 40), dtype=np.float32)
    single = sobel(input=img, device=devices[0])
    split = sobel(input=img, devices=devices, shares=uneven(len(devices)))
    for name in ("dx", "dy"):
        assert np.array_equal(split[name], single[name]), name
    padded = np.pad(img, 1)
    dx = ((padded[:-2, 2:] - padded[:-2, :-2]) + 2 * (padded[1:-1, 2:] - padded[1:-1, :-2])
          + (padded[2:, 2:] - padded[2:, :-2])) / 8
    np.testing.assert_allclose(split["dx"], dx, rtol=1e-5, atol=1e-6)
    laplace = load("laplace")  # its output is not of the grid: the caller passes it
    mask = rng(7).integers(-2, 3, (5, 5)).astype(np.int32)
    img = rng(8).random((27, 19), dtype=np.float32) * 50
    out = np.full_like(img, 7.0)
    single = laplace(input=img, output=out, mask=mask, device=devices[0])["output"]
    split = laplace(input=img, output=out, mask=mask, devices=devices, shares=uneven(len(devices)))["output"]
    assert np.array_equal(split, single)
    assert (out == 7.0).all()
    taller = np.full((img.shape[0] + 4, img.shape[1] + 2), 7.0, np.float32)  # rows and columns past the grid
    single = laplace(input=img, output=taller, mask=mask, device=devices[0])["output"]
    split = laplace(input=img, output=taller, mask=mask, devices=devices, shares=uneven(len(devices)))["output"]
    assert np.array_equal(split, single) and (split[-4:] == 7.0).all()


def arrays_in_any_order() -> None:
    """Caller arrays not in C order (a Fortran-ordered input and output, a transposed view, a
    read-only input) on one device and on several give the single-device call's output, in a new
    array; the caller's arrays are never written."""
    devices = all_devices()
    conv = load("convolution9")
    img = rng(9).random((40, 48), dtype=np.float32)
    filt = rng(10).random((9, 9), dtype=np.float32)
    expected = conv(input=img, filter=filt, device=devices[0])["output"]
    fortran_in = np.asfortranarray(img)
    transposed = np.ascontiguousarray(img.T).T  # the same values through a transposed view
    readonly = img.copy()
    readonly.flags.writeable = False
    for given in (fortran_in, transposed, readonly):
        for chosen in ([devices[0]], devices):
            out = np.asfortranarray(np.full_like(img, 5.0))
            got = conv(input=given, filter=filt, output=out, devices=chosen, shares=uneven(len(chosen)))["output"]
            np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
            assert (out == 5.0).all() and got is not out


THREE_D = """
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:clamped)
void slab(Image<int> input, Image<int> output) {
    int s = 0;
    for (int k = -2; k <= 1; k++) {
        s += input[idx][idy][idz + k] * (k + 3) + input[idx][idy + 1][idz + k];
    }
    output[idx][idy][idz] = s;
}
"""


def three_d() -> None:
    devices = all_devices()
    prog = imagecl.compile(THREE_D)
    vol = rng(9).integers(-20, 20, (15, 9, 10)).astype(np.int32)
    d, h, w = vol.shape
    padded = np.pad(vol.astype(np.int64), ((2, 1), (0, 1), (0, 0)), mode="edge")
    expected = np.zeros(vol.shape, np.int64)
    for k in range(-2, 2):
        expected += padded[2 + k:2 + k + d, :h] * (k + 3) + padded[2 + k:2 + k + d, 1:h + 1]
    for config in ("naive", {"wg_x": 2, "wg_y": 2, "wg_z": 2, "px_z": 2, "local_input": 1},
                   {"wg_x": 2, "wg_y": 2, "wg_z": 2, "px_z": 2, "interleaved": 1, "interior": 1},
                   {"wg_x": 2, "wg_y": 2, "wg_z": 2, "image_input": 1}):
        got = prog(input=vol, devices=devices, shares=uneven(len(devices)), config=config)["output"]
        assert np.array_equal(got, expected), config
    bilateral = load("bilateral3d")
    vol = rng(10).random((9, 8, 7), dtype=np.float32)
    single = bilateral(input=vol, sigma_spatial=1.5, sigma_range=0.3, device=devices[0])["output"]
    split = bilateral(input=vol, sigma_spatial=1.5, sigma_range=0.3, devices=devices,
                      shares=uneven(len(devices)))["output"]
    assert np.array_equal(split, single)


def three_d_iterate() -> None:
    devices = all_devices()
    prog = imagecl.compile(THREE_D)
    vol = rng(19).integers(-3, 4, (13, 6, 5)).astype(np.int32)
    expected = vol
    for _ in range(3):
        expected = prog(input=expected, device=devices[0])["output"]
    for h in (1, 2, 3):
        got = prog.iterate(3, input=vol, devices=devices, shares=uneven(len(devices)), h=h,
                           config={"wg_x": 2, "wg_y": 2, "wg_z": 2, "px_z": 2, "local_input": 1})["output"]
        assert np.array_equal(got, expected), h


GATHER = """
#pragma imcl grid(index, output)
void gather(Image<int> index, Image<float> table, Image<float> output) {
    output[idx][idy] = table[idx][index[idx][idy]];
}
"""


def data_dependent_reads() -> None:
    devices = all_devices()
    prog = imagecl.compile(GATHER)
    reach = multidevice.reaches(prog)
    assert reach["table"].whole and not reach["index"].whole
    table = rng(11).random((50, 12), dtype=np.float32)
    index = rng(12).integers(0, 50, (21, 12)).astype(np.int32)
    got = prog(index=index, table=table, devices=devices, shares=uneven(len(devices)))["output"]
    assert np.array_equal(got, table[index, np.arange(12)[None, :]])


def shrunk_halo_is_caught() -> None:
    """The halo is what makes the result right: one row less of it and the checks above fail."""
    real = multidevice.reaches

    def shrunk(program):
        return {n: multidevice.Reach(max(0, r.low - 1), max(0, r.high - 1), r.mode, r.whole)
                for n, r in real(program).items()}

    multidevice.reaches = shrunk
    try:
        prog = imagecl.compile(BOUNDARY.format(mode="clamped"))
        img = rng(13).integers(-50, 50, (29, 17)).astype(np.int32)
        got = prog(input=img, devices=all_devices(), shares=uneven(len(all_devices())))["output"]
        assert not np.array_equal(got, reach_reference(img, "clamped"))
    finally:
        multidevice.reaches = real


def tuned_split_is_used() -> None:
    from imagecl import splits
    from imagecl.runtime.devices import select_device

    devices = all_devices()
    prog = imagecl.compile(BOUNDARY.format(mode="mirror"))
    img = rng(14).integers(-50, 50, (40, 8)).astype(np.int32)
    chosen = [select_device(d) for d in devices]
    shares = [0.0] * len(devices)
    shares[0], shares[-1] = 0.25, 0.75
    splits.record(prog, chosen, (8, 40), shares, h=3, seconds=0.1)
    out, ran = multidevice.run(prog, {"input": img}, devices)
    assert ran.bands[0] == (0, 10) and ran.bands[-1] == (10, 40), ran.bands
    assert np.array_equal(out["output"], reach_reference(img, "mirror"))
    assert splits.lookup(prog, chosen, (8, 40)).h == 3
    assert splits.lookup(prog, chosen[:-1], (8, 40)) is None  # another set of devices


# ---- iterating -------------------------------------------------------------------------------------------


def life_step(board: np.ndarray, wrap: bool = False) -> np.ndarray:
    b = board.astype(np.int32)
    if wrap:
        count = sum(np.roll(np.roll(b, dy, 0), dx, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1)) - b
    else:
        p = np.pad(b, 1)
        count = sum(p[1 + dy:1 + dy + b.shape[0], 1 + dx:1 + dx + b.shape[1]]
                    for dy in (-1, 0, 1) for dx in (-1, 0, 1)) - b
    return ((count == 3) | ((b == 1) & (count == 2))).astype(np.int8)


def conway_iterate() -> None:
    devices = all_devices()
    life = load("conway")
    board = (rng(15).random((40, 33)) < 0.4).astype(np.int8)
    sequential, expected = [board], [board]
    for _ in range(7):
        sequential.append(life(input=sequential[-1], device=devices[0])["output"])
        expected.append(life_step(expected[-1]))
    assert np.array_equal(sequential[-1], expected[-1])
    for h in (1, 2, 3):
        for shares in (uneven(len(devices)), [0.05, 0.9, 0.05][:len(devices)] if len(devices) == 3 else [0.05, 0.95]):
            got = life.iterate(7, input=board, devices=devices, shares=shares, h=h)["output"]
            assert np.array_equal(got, sequential[-1]), (h, shares)
    for n in (0, 1, 4):
        got = life.iterate(n, board, devices=devices, h=2)["output"]
        assert np.array_equal(got, expected[n]), n
    got = life.iterate(5, board, devices=devices[-1:], h=2)["output"]  # one device too
    assert np.array_equal(got, expected[5])


WRAP_LIFE = (EXAMPLES / "conway.icl").read_text().replace("boundary_cond(input:constant)",
                                                          "boundary_cond(input:wrap)")


def wrapped_iterate() -> None:
    devices = all_devices()
    life = imagecl.compile(WRAP_LIFE)
    board = (rng(16).random((30, 17)) < 0.4).astype(np.int8)
    expected = board
    for _ in range(6):
        expected = life_step(expected, wrap=True)
    for h in (1, 2, 3):
        got = life.iterate(6, input=board, devices=devices, shares=uneven(len(devices)), h=h)["output"]
        assert np.array_equal(got, expected), h


HEAT_CONFIGS = ("naive", {"wg_x": 4, "wg_y": 4, "local_input": 1}, {"wg_x": 4, "wg_y": 2, "image_input": 1},
                {"wg_x": 4, "wg_y": 2, "px_y": 2, "interior": 1, "local_input": 1},
                {"wg_x": 2, "wg_y": 2, "px_y": 4, "interleaved": 1})


def heat_reference(u: np.ndarray, alpha: float, n: int) -> np.ndarray:
    u = u.astype(np.float64)
    for _ in range(n):
        p = np.pad(u, 1, mode="edge")
        u = u + alpha * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u)
    return u


def heat_iterate() -> None:
    devices = all_devices()
    heat = load("heat")
    u = rng(17).random((35, 24), dtype=np.float32)
    expected = heat_reference(u, 0.2, 7)
    for config in HEAT_CONFIGS:
        state = u
        for _ in range(7):
            state = heat(input=state, alpha=0.2, device=devices[0], config=config)["output"]
        kept = u.copy()
        for h in (1, 2, 3):
            got = heat.iterate(7, input=u, alpha=0.2, devices=devices, shares=uneven(len(devices)), h=h,
                               config=config)["output"]
            assert np.array_equal(got, state), (config, h, np.abs(got - state).max())
            # the first round reads the caller's array; the result is new memory, never that array
            assert np.array_equal(u, kept) and not np.shares_memory(got, u)
        np.testing.assert_allclose(state, expected, rtol=1e-5, atol=1e-5)


def tuned_h_is_used() -> None:
    from imagecl import splits
    from imagecl.runtime.devices import select_device

    devices = all_devices()
    life = imagecl.compile(WRAP_LIFE)
    board = (rng(18).random((24, 10)) < 0.4).astype(np.int8)
    splits.record(life, [select_device(d) for d in devices], (10, 24), uneven(len(devices)), h=4)
    got = life.iterate(9, input=board, devices=devices)["output"]
    expected = board
    for _ in range(9):
        expected = life_step(expected, wrap=True)
    assert np.array_equal(got, expected)


# ---- bad input -----------------------------------------------------------------------------------------


def _refused(call, error, *words):
    try:
        call()
    except error as exc:
        text = str(exc)
        assert all(w in text for w in words), text
        return
    raise AssertionError(f"no {error.__name__} for {call}")


FIXED = """
#pragma imcl grid_size(16, 16)
void fill(Image<int> output) { output[idx][idy] = idx; }
"""
SHIFTED = """
#pragma imcl grid(input)
void shift(Image<int> input, Image<int> output) { output[idx][idy + 1] = input[idx][idy]; }
"""


def errors() -> None:
    devices = all_devices()
    conv = load("convolution9")
    img = np.zeros((20, 20), np.float32)
    filt = np.zeros((9, 9), np.float32)
    run = lambda **kw: conv(input=img, filter=filt, **kw)  # noqa: E731
    _refused(lambda: run(devices=[devices[0], "no such device"]), DeviceError, "no such device")
    _refused(lambda: run(devices=[devices[0], devices[0]]), ArgumentError, "twice")
    _refused(lambda: run(devices=[]), ArgumentError, "non-empty")
    _refused(lambda: run(devices=devices, shares=[0.5] * len(devices) if len(devices) > 2 else [0.5, 0.4]),
             ArgumentError, "sum to 1")
    _refused(lambda: run(devices=devices, shares=[1.0]), ArgumentError, "fractions for")
    _refused(lambda: run(devices=devices[:2], shares=[1.5, -0.5]), ArgumentError, "non-negative")
    _refused(lambda: run(devices=devices[:2], shares="half"), ArgumentError, "one fraction per device")
    _refused(lambda: run(shares=[1.0]), ArgumentError, "devices=")
    _refused(lambda: run(devices=devices, device=0), ArgumentError, "device=")
    _refused(lambda: run(devices=devices, returns="device"), ArgumentError, "returns=")
    _refused(lambda: run(devices=devices, timeout=5), ArgumentError, "timeout=")
    _refused(lambda: run(devices=devices, config=["naive"]), ArgumentError, "configurations for")
    _refused(lambda: imagecl.compile(FIXED)(devices=devices), ArgumentError, "fixed grid_size")
    _refused(lambda: imagecl.compile(SHIFTED)(np.zeros((8, 8), np.int32), output=np.zeros((8, 8), np.int32),
                                              devices=devices), ArgumentError, "cannot be split")
    _refused(lambda: load("sobel").iterate(2, np.zeros((8, 8), np.float32), devices=devices), ArgumentError, "feed=")
    _refused(lambda: load("heat").iterate(-1, np.zeros((8, 8), np.float32), alpha=0.1), ArgumentError, "n >= 0")
    _refused(lambda: load("heat").iterate(2, np.zeros((8, 8), np.float32), alpha=0.1, devices=devices, h=0),
             ArgumentError, "h=")
    _refused(lambda: load("heat").iterate(2, np.zeros((8, 8), np.float32), alpha=0.1, feed={"input": "output"}),
             ArgumentError, "feed=")
    _refused(lambda: load("heat").iterate(2, np.zeros((8, 8), np.float32), alpha=0.1,
                                          output=np.zeros((8, 8), np.float32)), ArgumentError, "leave it out")
    assert issubclass(DeviceError, ImageCLError)


# ---- the system model (test_system_model.py, two devices) ---------------------------------------------------


def system_model_calibrates_and_caches() -> None:
    """Calibrated on two tiny synthetic programs, cached, and reloaded without measuring again."""
    import tempfile

    from imagecl.runtime import system_model

    devices = multidevice.resolve_devices([0, 1])
    instances = [system_model.Instance(48, 40, 1), system_model.Instance(48, 40, 1, steps=3)]
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "models.json"
        model = system_model.load_or_calibrate(devices, cache, instances=instances, repeats=1)
        # one run: every share of the sweep; iterated: the splits at h 1 and 4, each device alone at h 1
        splits = sum(1 for s in system_model.CALIBRATION_SHARES if 0 < s < 1)
        alone = len(system_model.CALIBRATION_SHARES) - splits
        assert len(model.samples) == len(system_model.CALIBRATION_SHARES) + 2 * splits + alone
        assert all(s.seconds > 0 for s in model.samples) and {s.steps for s in model.samples} == {None, 3}
        assert all(np.isfinite(v) and v >= 0 for v in model.terms.vector())
        assert model.fit_error == system_model.fit_error(model.terms, model.samples)
        assert cache.is_file()

        def refuse(*args, **kwargs):
            raise AssertionError("a cached model was measured again")

        measure, system_model.measure = system_model.measure, refuse
        try:
            again = system_model.load_or_calibrate(devices, cache, instances=instances, repeats=1)
            assert again.terms == model.terms and len(again.samples) == len(model.samples)
            # PoCL's two devices share a key: they keep the calibration's order
            assert again.terms_for(devices[::-1]) == model.terms
        finally:
            system_model.measure = measure


def tune_uses_the_system_model() -> None:
    """split_tuning.tune predicts with the system's terms (no split of the program measured for
    the prediction), then refines by measuring: a costly co-running term keeps the prediction on
    one device, and the refinement still times the splits around it."""
    from imagecl.runtime import split_tuning, system_model

    prog = load("heat")
    devices = multidevice.resolve_devices([0, 1])
    args = {"input": rng(5).random((40, 48), dtype=np.float32), "alpha": 0.2}
    costly = system_model.Terms([10.0, 10.0], [0.0, 0.0])
    found = split_tuning.tune(prog, args, devices, repeats=1, system=costly)
    assert sorted(found.predicted) == [0.0, 1.0]
    assert found.predicted_model_seconds == pytest_approx(min(p.wall for p in found.profiles))
    assert len(found.measured) >= 3 and found.best is not None
    # the prediction (shares and h) is the system model's, whatever the analytic model says
    seen = []

    def predict(terms, profiles, steps=None, depth=0, hs=(1, 2, 4, 8), step=None, groups=None):
        seen.append((terms, len(profiles), steps, depth, groups))
        return system_model.Prediction([0.3, 0.7], 2, 1.0, 2.0)

    free = system_model.Terms([0.0, 0.0], [0.0, 0.0])
    real, system_model.predict = system_model.predict, predict
    try:
        found = split_tuning.tune(prog, args, devices, repeats=1, iterate=4, system=free)
    finally:
        system_model.predict = real
    # heat reads one row either side; devices of one key are one group
    assert seen == [(free, 2, 4, 2, system_model.groups_of(multidevice.resolve_devices(devices)))]
    assert found.predicted == [0.3, 0.7] and found.measured[0].shares == [0.3, 0.7] and found.measured[0].h == 2
    assert found.best.h in (1, 2, 4, 8) and len(found.measured) > 3


def pytest_approx(value: float):
    import pytest

    return pytest.approx(value, rel=1e-6)
