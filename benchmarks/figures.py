"""The evaluation figures drawn from the committed raw results (issue 20).

The drawing lives in the package (imagecl/bench/figures.py, its documentation and options there):
this script runs it on this checkout.

    python benchmarks/figures.py --help
"""
from pathlib import Path

from imagecl.bench import use_repository
from imagecl.bench.figures import main

if __name__ == "__main__":
    use_repository(Path(__file__).resolve().parent.parent)
    main()
