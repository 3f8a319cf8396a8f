"""Writes synthetic stencil programs (imagecl.bench.synthetic_stencils) to a folder.

    python benchmarks/synthetic_stencils.py --count 24 --seed 1 --out DIR
"""
from __future__ import annotations

import argparse
from pathlib import Path

from imagecl.bench.synthetic_stencils import generate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=24)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True, help="folder for the .icl files (created)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, source in generate(args.count, args.seed):
        (out / f"{name}.icl").write_text(source)
    print(f"{args.count} programs in {out}")


if __name__ == "__main__":
    main()
