"""Measured data for the knowledge models: many programs, several sizes, one device per database.

    python benchmarks/knowledge_data.py --device nvidia --sizes 512x512,1024x1024,2048x2048 \\
        --per-run 120 --synthetic 16 --db OUT/knowledge-gpu.db --deadline 540

For every (program, size) it measures the program's default configuration and a random sample of
`--per-run` valid configurations (the same seed for every size, so that sizes can be compared
configuration by configuration) with `imagecl measure`, into one results database. Programs are
the examples named in PROGRAMS (scalars set to meaningful values), `--synthetic N` stencils of
imagecl.bench.synthetic_stencils and `--rich N` more with its rank reductions and second outputs
(generated from seed + 1). Runs go size by size, so a pass stopped by `--deadline` still
covers every program at the first sizes; rerunning the same command resumes (the store skips what
it holds). The models of issue 17 train on these databases; the best measured configuration of a
run is its oracle.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import imagecl
from imagecl.cli import main as cli_main, parse_size

ROOT = Path(__file__).resolve().parent.parent

# program -> scalar assignments (synthetic inputs give every image and array random data)
PROGRAMS: dict[str, list[str]] = {
    "sobel.icl": [],
    "convolution.icl": [],
    "convolution9.icl": [],
    "box_blur.icl": [],
    "median.icl": [],
    "median_select.icl": [],
    "laplace.icl": [],
    "harris.icl": ["k=0.04"],
    "conway.icl": [],
    "threshold.icl": ["above=255", "below=0"],
    "unsharp.icl": ["amount=1.5"],
    "add.icl": [],
    "mandelbrot.icl": ["xmin=-8192", "ymin=-6144", "step=6", "maxiter=64"],
}


def _programs(synthetic: int, seed: int, folder: Path, rich: int = 0) -> list[tuple[Path, list[str]]]:
    from imagecl.bench.synthetic_stencils import generate

    programs = [(ROOT / "examples" / name, scalars) for name, scalars in PROGRAMS.items()]
    for name, source in generate(synthetic, seed) + (generate(rich, seed + 1, rich=True) if rich else []):
        path = folder / f"{name}.icl"
        path.write_text(source)
        programs.append((path, []))
    return programs


def _configs(path: Path, size: str, device: str, count: int, seed: int) -> list[dict]:
    program = imagecl.load(str(path))
    space = program.space_for(device, parse_size(size))
    configs = [space.complete(space.defaults)]
    configs += space.random(count, seed=seed)
    return configs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", required=True)
    parser.add_argument("--sizes", required=True, help="comma-separated WxH sizes")
    parser.add_argument("--per-run", type=int, default=100, help="random configurations per program and size")
    parser.add_argument("--synthetic", type=int, default=16, help="synthetic stencil programs")
    parser.add_argument("--rich", type=int, default=0,
                        help="further synthetic programs with rank reductions and second outputs (seed + 1)")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--only", help="comma-separated program file names to keep")
    parser.add_argument("--shard", help="K/N: every N-th program from the K-th (0-based), for parallel warm-up "
                                        "passes that fill PoCL's kernel cache before a timed pass")
    parser.add_argument("--db", required=True)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--deadline", type=float, default=float("inf"), help="seconds; stop starting new runs after")
    args = parser.parse_args()
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        programs = _programs(args.synthetic, args.seed, Path(tmp), args.rich)
        if args.only:
            keep = set(args.only.split(","))
            programs = [(p, s) for p, s in programs if p.name in keep]
        if args.shard:
            k, n = (int(v) for v in args.shard.split("/"))
            programs = programs[k::n]
        for size in args.sizes.split(","):
            for path, scalars in programs:
                if time.monotonic() - start > args.deadline:
                    print(f"deadline reached after {time.monotonic() - start:.0f} s", flush=True)
                    return
                configs = _configs(path, size, args.device, args.per_run, args.seed)
                config_file = Path(tmp) / "configs.json"
                config_file.write_text(json.dumps(configs))
                began = time.monotonic()
                code = cli_main(["measure", str(path), *scalars, "--size", size, "--device", args.device,
                                 "--configs", str(config_file), "--db", args.db, "--timeout", str(args.timeout)])
                print(f"{path.name} {size}: exit {code}, {len(configs)} configurations, "
                      f"{time.monotonic() - began:.1f} s", flush=True)


if __name__ == "__main__":
    main()
