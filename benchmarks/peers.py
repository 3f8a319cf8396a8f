"""ImageCL's tuned kernels against the libraries a user would otherwise call (issue 6).

The harness lives in the package (imagecl/bench/peers.py, its documentation and options there):
this script runs it on this checkout.

    python benchmarks/peers.py --help
"""
import sys
from pathlib import Path

from imagecl.bench import use_repository
from imagecl.bench.peers import main

if __name__ == "__main__":
    use_repository(Path(__file__).resolve().parent.parent)
    sys.exit(main())
