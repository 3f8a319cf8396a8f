"""Performance portability (Figure 1 of Falch & Elster 2017): the best configuration found for
one device, run on the other device, against that device's own best.

    python benchmarks/cross_device.py --out benchmarks/results

The best configurations come from earlier runs: the GPU's from the exhaustive ground truth
(ground-<benchmark>-gpu.json), the CPU's from the random-variants benchmark (variants-cpu.json).
Every configuration is measured on both devices in this run (verified against the naive variant).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

import imagecl  # noqa: E402
from imagecl.errors import ImageCLError  # noqa: E402
from imagecl.runtime.devices import select_device  # noqa: E402
from imagecl.tuner.engine import MeasureOptions, measure  # noqa: E402
from imagecl.tuner.store import Store, canonical_config  # noqa: E402

from imagecl.bench.ground_truth import BENCHMARKS  # noqa: E402

VARIANT_NAMES = {"convolution9": "convolution9.icl", "sobel": "sobel.icl", "bilateral": "bilateral.icl"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--devices", default="nvidia,cpu")
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)
    results = Path(args.results)
    cpu_runs = {r["file"]: r for r in json.loads((results / "variants-cpu.json").read_text())["records"]}
    devices = {spec: select_device(spec) for spec in args.devices.split(",")}
    table = []
    for name, (file, make, _) in BENCHMARKS.items():
        gpu_best = json.loads((results / f"ground-{name}-gpu.json").read_text())["best_config"]
        cpu_best = cpu_runs[file]["best_config"]
        prog = imagecl.load(ROOT / "examples" / file)
        arguments = make()
        row = {"benchmark": name, "configs": {"gpu_best": gpu_best, "cpu_best": cpu_best}, "times": {}}
        for spec, device in devices.items():
            with Store(Path(tempfile.mkdtemp()) / "x.db") as store:
                try:
                    measure(prog, arguments, [gpu_best, cpu_best], store, device=device,
                            options=MeasureOptions(timeout=120))
                except ImageCLError as exc:
                    print(f"{name} on {spec}: {exc}", file=sys.stderr)
                    continue
                by_key = {canonical_config(r.config): r for r in store.records()}
            space = prog.space_for(device, next(v for v in arguments.values() if isinstance(v, np.ndarray))
                                   .shape[: prog.info.grid_dims])
            for label, config in (("gpu_best", gpu_best), ("cpu_best", cpu_best)):
                try:
                    key = canonical_config(space.complete(config))
                except ImageCLError:
                    key = None
                r = by_key.get(key) if key else None
                row["times"][f"{label} on {spec}"] = r.time if r is not None and r.time is not None else None
        table.append(row)
        print(json.dumps(row), flush=True)
    lines = ["| benchmark | GPU's best on GPU | CPU's best on GPU (slowdown) | CPU's best on CPU | "
             "GPU's best on CPU (slowdown) |", "| --- | ---: | ---: | ---: | ---: |"]
    for row in table:
        t = row["times"]

        def ms(v):
            return "invalid" if v is None else f"{v * 1e3:.3f} ms"

        def ratio(a, b):
            return "-" if a is None or b is None else f"{a / b:.2f}x"

        g_on_g, c_on_g = t.get("gpu_best on nvidia"), t.get("cpu_best on nvidia")
        c_on_c, g_on_c = t.get("cpu_best on cpu"), t.get("gpu_best on cpu")
        lines.append(f"| {row['benchmark']} | {ms(g_on_g)} | {ms(c_on_g)} ({ratio(c_on_g, g_on_g)}) | {ms(c_on_c)} | "
                     f"{ms(g_on_c)} ({ratio(g_on_c, c_on_c)}) |")
    text = "\n".join(lines) + "\n"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cross_device.md").write_text(text)
    (out / "cross_device.json").write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "rows": table}, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
