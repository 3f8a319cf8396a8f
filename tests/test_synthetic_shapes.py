"""The random inputs of `measure`/`tune --size` (runtime/synthetic.py): each image has the axes
it is declared with, whatever the grid's (a volume sampled by a 2-D grid is 3-D)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

import imagecl
from imagecl.cli import main
from imagecl.runtime.synthetic import EXTRA_EXTENT, image_shape, synthetic_arguments
from imagecl.tuner.store import Store
from test_paper_benchmarks import raycasting_reference

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_image_shape_keeps_the_images_own_axes():
    assert image_shape(2, (24, 40)) == (24, 40)
    assert image_shape(3, (24, 40)) == (24, 24, 40)  # depth: the grid's smallest extent
    assert image_shape(3, (512, 600)) == (EXTRA_EXTENT, 512, 600)
    assert image_shape(2, (5, 24, 40)) == (24, 40)  # a 2-D image read by a 3-D grid: x and y


def test_a_volume_sampled_by_a_2d_grid_gets_a_3d_random_volume_that_runs():
    prog = imagecl.load(EXAMPLES / "raycasting.icl")
    args, defaulted = synthetic_arguments(prog, (24, 40))
    assert defaulted == []
    assert args["volume"].shape == (24, 24, 40) and args["volume"].dtype == np.float32
    assert args["output"].shape == (24, 40, 4) and args["transfer"].shape == (128, 4)
    out = prog(**args, config="naive")["output"]
    reference, steps = raycasting_reference(args["volume"], args["transfer"], (24, 40))
    np.testing.assert_array_equal(out, reference)


def test_measure_a_volume_renderer_at_a_2d_size(tmp_path, capsys):
    db = tmp_path / "m.db"
    code = main(["measure", str(EXAMPLES / "raycasting.icl"), "--size", "32x24", "--random", "2",
                 "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "Traceback" not in err and "internal error" not in err
    with Store(db, readonly=True) as store:
        (run,) = store.runs()
        records = list(store.records(run))
    # a work-group over the kernel's own limit (its registers, on a GPU) is recorded as such
    assert len(records) == 2 and all(r.status in ("ok", "invalid_work_group") for r in records), \
        [(r.status, r.error) for r in records]
