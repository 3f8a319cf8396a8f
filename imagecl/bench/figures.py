"""The evaluation figures that BENCHMARKS.md's tables had without a picture, drawn from the
committed raw results (nothing is measured here):

  variants.png      issue 3: each benchmark's best random variant against its naive variant,
                    per device (variants-gpu.json, variants-cpu.json)
  cross_device.png  Figure 1 of the paper: each device's best configuration on both devices,
                    relative to the best on that device (cross_device.json)

    python benchmarks/figures.py [--results benchmarks/results] [--out benchmarks/results]

The drawing lives in the package (tests use it); benchmarks/figures.py runs it on the checkout.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Optional

from imagecl.bench import repository
from imagecl.plots import pyplot, save_figure

DEVICES = {"gpu": "GPU (H200)", "cpu": "CPU (PoCL)"}


def variants_figure(records: dict[str, list[dict]], path: Path) -> None:
    """Speed-up of the best measured variant over the naive one, a bar per device and benchmark."""
    plt = pyplot()
    names = list(dict.fromkeys(r["benchmark"] for rows in records.values() for r in rows))
    fig, ax = plt.subplots(figsize=(8.5, 4.0), constrained_layout=True)
    width = 0.8 / max(1, len(records))
    for k, (device, rows) in enumerate(records.items()):
        by_name = {r["benchmark"]: r for r in rows}
        xs, ys = [], []
        for i, name in enumerate(names):
            r = by_name.get(name)
            if r and r.get("naive_ms") and r.get("best_ms"):
                xs.append(i + (k - (len(records) - 1) / 2) * width)
                ys.append(r["naive_ms"] / r["best_ms"])
        bars = ax.bar(xs, ys, width, label=DEVICES.get(device, device))
        ax.bar_label(bars, fmt="%.2fx", fontsize=7)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
    ax.set(ylabel="naive time / best variant's time", title="Best of a few hundred random variants against the naive one")
    ax.legend()
    save_figure(fig, path)


def cross_ratios(rows: list[dict]) -> dict[tuple[str, str, str], Optional[float]]:
    """(device, whose best, benchmark) -> time as a multiple of that device's own best (None:
    it cannot run there)."""
    ratios: dict[tuple[str, str, str], Optional[float]] = {}
    for r in rows:
        for device, own_source in (("nvidia", "gpu_best"), ("cpu", "cpu_best")):
            own = r["times"].get(f"{own_source} on {device}")
            for source in ("gpu_best", "cpu_best"):
                value = r["times"].get(f"{source} on {device}")
                ratios[(device, source, r["benchmark"])] = value / own if value and own else None
    return ratios


def cross_device_figure(rows: list[dict], path: Path) -> None:
    """Each device's best configuration run on both devices, as a multiple of the best time on
    that device (1 = the device's own best); 'cannot run' where the kernel's limits refuse it."""
    plt = pyplot()
    ratios = cross_ratios(rows)
    top = max((v for v in ratios.values() if v), default=2.0)
    names = [r["benchmark"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.8), constrained_layout=True, sharey=True)
    for ax, (device, label) in zip(axes, (("nvidia", "on the GPU"), ("cpu", "on the CPU"))):
        for k, (source, colour) in enumerate((("gpu_best", "tab:green"), ("cpu_best", "tab:blue"))):
            label: Optional[str] = f"{source[:3].upper()}'s best"  # on the first bar drawn
            for i, name in enumerate(names):
                x = i + (k - 0.5) * 0.38
                ratio = ratios[(device, source, name)]
                if ratio is None:
                    ax.text(x, 1.05, "cannot\nrun", ha="center", va="bottom", fontsize=7, color=colour)
                    continue
                ax.bar(x, ratio, 0.38, color=colour, label=label)
                label = None
                ax.text(x, ratio, f"{ratio:.2f}x", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(names)), names)
        ax.set_yscale("log")
        ax.set_ylim(0.5, max(2.0, top * 2.5))
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set(title=label, ylabel="time / this device's best")
        ax.legend(loc="upper left", fontsize=8)
    fig.suptitle("Performance portability: one device's best configuration on the other")
    save_figure(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=None, help="default: benchmarks/results of the checkout")
    parser.add_argument("--out", type=Path, default=None, help="default: --results")
    args = parser.parse_args()
    if args.results is None:
        args.results = repository() / "benchmarks" / "results"
    if args.out is None:
        args.out = args.results
    records = {}
    for device in DEVICES:
        source = args.results / f"variants-{device}.json"
        if source.is_file():
            records[device] = json.loads(source.read_text())["records"]
    written = []
    if records:
        variants_figure(records, args.out / "variants.png")
        written.append(args.out / "variants.png")
    cross = args.results / "cross_device.json"
    if cross.is_file():
        cross_device_figure(json.loads(cross.read_text())["rows"], args.out / "cross_device.png")
        written.append(args.out / "cross_device.png")
    for path in written:
        print(path)
    if not written:
        raise SystemExit(f"no raw results in {args.results}")
