"""One grid split across several devices, and iterated programs (imagecl/runtime/multidevice.py).

PoCL exposes several CPU devices when POCL_DEVICES is set before it is first loaded, so the
split runs go to worker processes (multidevice_worker.py): three 'pthread' devices, and a mixed
'pthread' + 'basic' pair. Each case (multidevice_cases.py) compares the split result with a
single-device run and with an independent NumPy/SciPy reference."""
from __future__ import annotations

import numpy as np
import pytest

from imagecl.errors import ArgumentError
from imagecl.runtime import multidevice
from multidevice_worker import Worker


@pytest.fixture(scope="module")
def three():
    worker = Worker("pthread pthread pthread")
    yield worker
    worker.close()


@pytest.fixture(scope="module")
def mixed():
    worker = Worker("pthread basic")
    yield worker
    worker.close()


@pytest.mark.parametrize("case", [
    "conv9_families", "conv9_own_variant_per_device", "conv9_tuned_variant_per_device",
    "boundary_modes_and_thin_bands", "band_with_zero_share", "integer_programs_bit_exact",
    "several_outputs_and_caller_outputs", "three_d", "data_dependent_reads", "shrunk_halo_is_caught",
    "tuned_split_is_used", "conway_iterate", "wrapped_iterate", "heat_iterate", "tuned_h_is_used", "errors",
])
def test_three_pthread_devices(three, case):
    three.run(case)


@pytest.mark.parametrize("case", ["conv9_families", "conv9_tuned_variant_per_device", "integer_programs_bit_exact",
                                  "conway_iterate", "heat_iterate"])
def test_mixed_pthread_and_basic(mixed, case):
    mixed.run(case)


# ---- the pieces, without devices ------------------------------------------------------------------------


def test_split_rows_follow_shares_and_granule():
    assert multidevice.split_rows([0.25, 0.75], 40) == [(0, 10), (10, 40)]
    assert multidevice.split_rows([0.3, 0.3, 0.4], 10, granule=4) == [(0, 4), (4, 8), (8, 10)]
    assert multidevice.split_rows([0.0, 1.0], 7) == [(0, 0), (0, 7)]
    assert multidevice.split_rows([1.0, 0.0], 7) == [(0, 7), (7, 7)]


def test_check_shares_refuses_bad_fractions():
    assert multidevice.check_shares([0.5, 0.5], 2) == [0.5, 0.5]
    for bad in ([0.5, 0.6], [1.0], [float("nan"), 1.0], [-0.1, 1.1], None):
        with pytest.raises(ArgumentError):
            multidevice.check_shares(bad, 2)


@pytest.mark.parametrize("mode,rows,expected", [
    ("constant", [0, 1], [0, 1, 2, 3]),
    ("clamped", [0], [0, 1, 2]),
    ("wrap", [0], [0, 1, 2, 8, 9]),
    ("mirror", [0], [0, 1, 2]),
    ("reflect", [9], [7, 8, 9]),
])
def test_needed_rows_follow_the_boundary(mode, rows, expected):
    reach = multidevice.Reach(2, 2, mode, False)
    got = multidevice.needed_rows(np.array(rows), reach, 10)
    assert got.tolist() == expected


def test_runs():
    assert multidevice.runs(np.array([0, 1, 2, 5, 6, 9])) == [(0, 3), (5, 7), (9, 10)]
    assert multidevice.runs(np.array([], dtype=int)) == []


def test_banded_source_takes_the_group_origin_from_global_ids():
    src = "const int imcl_lo1 = get_group_id(1) * get_local_size(1) * 2 - 4;"
    assert multidevice.banded_source(src) == "const int imcl_lo1 = (get_global_id(1) - get_local_id(1)) * 2 - 4;"


def test_round_rows_widen_by_the_reach_per_step():
    reach = {"input": multidevice.Reach(1, 2, "constant", False)}
    sets = multidevice.round_rows((10, 20), 3, reach, ["input"], 40)
    assert [(int(s.min()), int(s.max()) + 1) for s in sets] == [(7, 26), (8, 24), (9, 22), (10, 20)]
