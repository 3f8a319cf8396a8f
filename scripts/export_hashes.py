"""Hash what `imagecl tune` exports (OpenCL source, JSON description without its date, C header and
C wrapper) for every example at sampled configurations on the default device, to show that a
refactor of imagecl/export.py, imagecl/host_wrapper.py or the templates changes no byte.

    python scripts/export_hashes.py -o before.json            # on the old code
    python scripts/export_hashes.py --compare before.json     # on the new code: lists every change
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
from pathlib import Path

import imagecl
from imagecl.export import export_tuned
from variant_hashes import compare  # this folder's: the same report for both kinds of hash

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def hashes(samples: int, seed: int) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted(EXAMPLES.glob("*.icl")):
        program = imagecl.load(path)
        configs = [{}] + list(program.space_for(None).random(samples, seed=seed))
        for i, config in enumerate(configs):
            with tempfile.TemporaryDirectory() as folder:
                for file in export_tuned(program, config, folder, None, measured=1.5e-3, predicted=2e-3):
                    text = file.read_text()
                    if file.suffix == ".json":
                        text = re.sub(r'"date": "[^"]*"', '"date": null', text)
                    key = f"{path.stem}/{i}/{json.dumps(config, sort_keys=True)}/{file.name}"
                    out[key] = hashlib.sha256(text.encode()).hexdigest()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=12, help="configurations per example, besides the default one")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("-o", "--output", help="write the hashes here (JSON)")
    ap.add_argument("--compare", metavar="FILE", help="compare with an earlier run's JSON")
    args = ap.parse_args()
    found = hashes(args.samples, args.seed)
    if args.output:
        Path(args.output).write_text(json.dumps(found, indent=0, sort_keys=True))
    print(f"{len(found)} files hashed")
    return compare(Path(args.compare), found) if args.compare else 0


if __name__ == "__main__":
    sys.exit(main())
