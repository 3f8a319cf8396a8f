"""Experiment only: benchmarks/replay_options.py with the recorded failures left out of each space,
as if the tuner knew every configuration that fails (on the H200, all of them exceed the kernels'
work-group limit of 256). Same arguments as replay_options.py; run from benchmarks/results:

    python walk/experiments/without_failures.py ground-convolution9-gpu-large.kt.json.gz --seed-sets 0,1,2,3
"""
import sys
from pathlib import Path
ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
import replay_options as R  # noqa: E402
from imagecl.tuner.simulate import load_problem  # noqa: E402
from imagecl.tuner.problem import ReplayProblem  # noqa: E402


def without_failures(path):
    p = load_problem(path)
    return ReplayProblem(p.parameters, {k: t for k, t in p.records.items() if t is not None}, p.context)


R.load_problem = without_failures
sys.exit(R.main())
