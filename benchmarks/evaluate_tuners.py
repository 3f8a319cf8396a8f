"""The paper's evaluation, on our own exhaustive data (issue 5).

The harness lives in the package (imagecl/bench/evaluate_tuners.py, its documentation and options there):
this script runs it on this checkout.

    python benchmarks/evaluate_tuners.py --help
"""
import sys
from pathlib import Path

from imagecl.bench import use_repository
from imagecl.bench.evaluate_tuners import main

if __name__ == "__main__":
    use_repository(Path(__file__).resolve().parent.parent)
    sys.exit(main())
