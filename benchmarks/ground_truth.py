"""Exhaustive ground truth on subspaces of the paper's benchmarks, for evaluating tuners offline.

The harness lives in the package (imagecl/bench/ground_truth.py, its documentation and options there):
this script runs it on this checkout.

    python benchmarks/ground_truth.py --help
"""
import sys
from pathlib import Path

from imagecl.bench import use_repository
from imagecl.bench.ground_truth import main

if __name__ == "__main__":
    use_repository(Path(__file__).resolve().parent.parent)
    sys.exit(main())
