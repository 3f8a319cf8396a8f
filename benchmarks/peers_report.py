"""Tables, plots and the BENCHMARKS.md section of the peer comparison (peers.py's results).

The harness lives in the package (imagecl/bench/peers_report.py, its documentation and options there):
this script runs it on this checkout.

    python benchmarks/peers_report.py --help
"""
import sys
from pathlib import Path

from imagecl.bench import use_repository
from imagecl.bench.peers_report import main

if __name__ == "__main__":
    use_repository(Path(__file__).resolve().parent.parent)
    sys.exit(main())
