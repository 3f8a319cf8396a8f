"""`imagecl results --plot FILE.png`: a run's measured times against each parameter, and its
tuning curve (the best time so far against the number of measurements, in the order they were
stored). matplotlib is optional (the `plot` extra); without it the message says how to get it."""
from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from .errors import ImageCLError
from .outputs import write_atomic


def best_so_far(times: Sequence[Optional[float]]) -> list[Optional[float]]:
    """The fastest successful time after each measurement (None until one succeeded)."""
    best: Optional[float] = None
    curve = []
    for t in times:
        if t is not None and (best is None or t < best):
            best = t
        curve.append(best)
    return curve


def plot_run(path: str | Path, title: str, names: Sequence[str], measurements: Sequence[Mapping[str, Any]]) -> None:
    """Write the plot of one run's `measurements` ({"config", "time_seconds"}, in measurement order) to `path`
    (its format from the name's suffix, as matplotlib knows them: .png, .svg, .pdf)."""
    plt = pyplot("--plot")
    suffix = Path(path).suffix.lower().lstrip(".")
    formats = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    if suffix not in formats:
        raise ImageCLError(f"{path}: --plot writes {', '.join(sorted(formats))} files; name one of these")
    times = [m.get("time_seconds") for m in measurements]
    ok = [(m["config"], t * 1e3) for m, t in zip(measurements, times) if t is not None]
    shown = [n for n in names if len({c.get(n) for c, _ in ok}) > 1] or list(names)[:1]
    columns = min(3, max(1, len(shown)))
    rows = math.ceil(len(shown) / columns) + 1
    fig = plt.figure(figsize=(4.2 * columns, 3.2 * rows), constrained_layout=True)
    grid = fig.add_gridspec(rows, columns)
    curve_axes = fig.add_subplot(grid[0, :])
    curve = best_so_far(times)
    steps = [i + 1 for i, b in enumerate(curve) if b is not None]
    curve_axes.step(steps, [curve[i - 1] * 1e3 for i in steps], where="post", color="tab:blue", label="best so far")
    curve_axes.scatter([i + 1 for i, t in enumerate(times) if t is not None], [t * 1e3 for t in times if t is not None],
                       s=8, color="tab:gray", alpha=0.5, label="each measurement")
    curve_axes.set(xlabel="measurements", ylabel="time (ms)", title=f"{title}: tuning curve")
    if ok:
        curve_axes.set_yscale("log")
    curve_axes.legend(loc="upper right")
    for i, name in enumerate(shown):
        ax = fig.add_subplot(grid[1 + i // columns, i % columns])
        ax.scatter([c.get(name) for c, _ in ok], [t for _, t in ok], s=8, alpha=0.6)
        ax.set(xlabel=name, ylabel="time (ms)")
        if ok:
            ax.set_yscale("log")
    save_figure(fig, path)


def pyplot(what: str = "plotting") -> Any:
    """matplotlib.pyplot drawing off-screen (Agg), or an ImageCLError saying how to install it."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display needed, and none opened
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImageCLError(f"{what} needs matplotlib: pip install 'imagecl[plot]' (or pip install matplotlib)") \
            from None
    return plt


def save_figure(fig: Any, path: str | Path, dpi: int = 110) -> None:
    """Write `fig` to `path` (format from the suffix) through a temporary file, and close it."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format=Path(path).suffix.lower().lstrip("."), dpi=dpi)
    plt.close(fig)
    write_atomic(path, buffer.getvalue())


__all__ = ["best_so_far", "plot_run", "pyplot", "save_figure"]
