"""The split of a wavefront's anti-diagonals between the CPU and the GPUs (the seed's five
parameters), and the space of splits the tuner and the benchmark search.

A grid of W x H points has D = W + H - 1 anti-diagonals d = x + y. `band` b >= 0 puts the 2b + 1
diagonals around the middle one, m = (D - 1) // 2, on `gpu_count` GPUs (b large enough: all of
them); the diagonals before and after it run on the CPU in square tiles of side `cpu_tile`.
`gpu_tile` 1 launches one kernel per diagonal on a GPU, g > 1 one per diagonal of g x g tiles
(one work-group each). With two or more GPUs the grid's columns are cut into one strip per GPU
and `halo` h is the number of diagonals each GPU computes between two halo swaps: a GPU then
also recomputes up to h - 1 columns of its left neighbour's strip (the seed's trade-off of fewer
swaps against redundant work).

Encoding: the seed overloads band = -1 for "no GPU" and halo = -1 for "one GPU"; here the five
parameters stay separate and `canonical()` maps equivalent splits to one (no GPU: gpu_count 0,
band -1, gpu_tile 1, halo 0; one GPU: halo 0), so that no split is measured twice.
"""
from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Iterator, Mapping, Optional

from ..errors import ConfigError

FIELDS = ("cpu_tile", "band", "gpu_tile", "gpu_count", "halo")


@dataclass(frozen=True)
class Split:
    cpu_tile: int = 8
    band: int = -1
    gpu_tile: int = 1
    gpu_count: int = 0
    halo: int = 0

    def canonical(self) -> "Split":
        if self.band < 0 or self.gpu_count == 0:
            return Split(self.cpu_tile, -1, 1, 0, 0)
        return Split(self.cpu_tile, self.band, self.gpu_tile, self.gpu_count,
                     self.halo if self.gpu_count > 1 else 0)

    def as_config(self) -> dict[str, int]:
        return asdict(self)

    @staticmethod
    def of(value: Any) -> "Split":
        """A Split from a Split or a mapping of FIELDS (missing ones take the defaults);
        ConfigError names what is wrong."""
        if isinstance(value, Split):
            split = value
        elif isinstance(value, Mapping):
            unknown = sorted(set(value) - set(FIELDS))
            if unknown:
                raise ConfigError(f"unknown wavefront split parameter(s) {', '.join(map(repr, unknown))}; "
                                  f"the parameters are {', '.join(FIELDS)}")
            numbers = {}
            for key, v in value.items():
                if isinstance(v, bool) or not isinstance(v, int) and not (hasattr(v, "__index__")):
                    raise ConfigError(f"wavefront split parameter '{key}' must be an integer, not {v!r}")
                numbers[key] = int(v)
            split = Split(**{**asdict(Split()), **numbers})
            if "gpu_count" not in value and split.band >= 0:
                split = Split(split.cpu_tile, split.band, split.gpu_tile, 1, split.halo)
        else:
            raise ConfigError(f"a wavefront split is a dict of {', '.join(FIELDS)}, not {type(value).__name__}")
        if split.cpu_tile < 1 or split.gpu_tile < 1:
            raise ConfigError(f"cpu_tile and gpu_tile must be at least 1 (got {split.cpu_tile}, {split.gpu_tile})")
        if split.band < -1 or split.gpu_count < 0 or split.halo < 0:
            raise ConfigError("band must be -1 or more, gpu_count and halo 0 or more")
        if split.band >= 0 and split.gpu_count > 1 and split.halo < 1:
            raise ConfigError("a split over two or more GPUs needs halo >= 1 (diagonals between halo swaps)")
        return split.canonical()


@dataclass(frozen=True)
class Phases:
    """The diagonals of each phase for a grid: CPU [0, lo), GPUs [lo, hi], CPU (hi, D)."""

    diagonals: int
    lo: int
    hi: int

    @property
    def on_gpu(self) -> bool:
        return self.lo <= self.hi

    @property
    def whole(self) -> bool:
        """Every diagonal on the GPUs: no CPU phase."""
        return self.lo == 0 and self.hi == self.diagonals - 1


def phases(split: Split, width: int, height: int) -> Phases:
    d = width + height - 1
    if split.band < 0:
        return Phases(d, d, d - 1)
    middle = (d - 1) // 2
    return Phases(d, max(0, middle - split.band), min(d - 1, middle + split.band))


def diagonal_box(dlo: int, dhi: int, width: int, height: int) -> tuple[int, int, int, int]:
    """The smallest rectangle holding the points of diagonals [dlo, dhi] of a W x H grid, as
    columns [x0, x1) and rows [y0, y1) (empty when x0 >= x1 or y0 >= y1)."""
    return (max(0, dlo - (height - 1)), min(width - 1, dhi) + 1,
            max(0, dlo - (width - 1)), min(height - 1, dhi) + 1)


def strips(width: int, count: int) -> list[tuple[int, int]]:
    """Columns [c0, c1) of each GPU: as equal as integers allow."""
    edges = [width * j // count for j in range(count + 1)]
    return list(zip(edges[:-1], edges[1:]))


def check_for(split: Split, width: int, height: int, gpus: int) -> None:
    """ConfigError when the split cannot run on this grid with `gpus` GPUs."""
    if split.gpu_count > gpus:
        raise ConfigError(f"the split uses {split.gpu_count} GPU(s); {gpus} are available")
    if split.gpu_count > width:
        raise ConfigError(f"{split.gpu_count} GPUs cannot share {width} columns")
    if split.gpu_count > 1:
        narrowest = min(c1 - c0 for c0, c1 in strips(width, split.gpu_count))
        if split.halo > narrowest:
            raise ConfigError(f"halo {split.halo} is wider than the narrowest GPU strip ({narrowest} columns)")


def legal_splits(candidates: Iterable[Split], width: int, height: int, gpus: int) -> list[Split]:
    """The candidates that can run on this grid with `gpus` GPUs (check_for; the system's count: a
    default taken from the candidates would let every candidate pass)."""
    out = []
    for s in candidates:
        try:
            check_for(s, width, height, gpus)
        except ConfigError:
            continue
        out.append(s)
    return out


def same_execution(split: Split, width: int, height: int) -> tuple:
    """A key equal for splits that run this grid the same way: the band by the diagonals it covers
    (bands wider than the grid are one), and with the whole grid on the GPUs no CPU tile, which is
    never used (measuring such splits apart only measures noise)."""
    s = split.canonical()
    ph = phases(s, width, height)
    cpu_tile = 0 if ph.whole else s.cpu_tile
    return (cpu_tile, ph.lo, ph.hi, s.gpu_tile, s.gpu_count, s.halo)


def band_values(width: int, height: int) -> list[int]:
    """-1 (no GPU), then bands covering about 1/8, 1/4, 1/2, 3/4 and all of the diagonals (3/4:
    the CPU takes the short diagonals at both ends, where a GPU pays a launch for a few points)."""
    d = width + height - 1
    half = (d - 1) // 2 + 1
    values = {-1, half, max(0, half * 3 // 4)}
    for fraction in (8, 4, 2):
        values.add(max(0, half // fraction))
    return sorted(values)


def split_space(width: int, height: int, gpus: int, cpu_tiles=(8, 32, 128), gpu_tiles=(1, 16),
                halos=(1, 4, 16), bands: Optional[list[int]] = None) -> list[Split]:
    """Every canonical split of this grid with up to `gpus` GPUs, each once. The CPU tiles include
    one tile of the whole grid without a GPU: the sequential run, the best split of small or very
    fine-grained grids (with a GPU band, a sequential CPU part is never worth measuring). A band
    over the whole grid comes with the first CPU tile only (same_execution)."""
    bands = band_values(width, height) if bands is None else bands
    whole = max(width, height)
    cpu_tiles = sorted({t for t in cpu_tiles if t < whole} | {whole})
    seen: dict[Split, None] = {}
    for cpu_tile, band, gpu_tile, count, halo in itertools.product(
            cpu_tiles, bands, gpu_tiles, range(0, gpus + 1), halos):
        if (count > 1 and halo < 1) or (cpu_tile == whole and band >= 0 and count > 0):
            continue
        if count > 0 and band >= 0 and cpu_tile != cpu_tiles[0] and \
                phases(Split(band=band, gpu_count=1), width, height).whole:
            continue  # no CPU phase: the CPU tile changes nothing, one of them is the split
        seen.setdefault(Split(cpu_tile, band, gpu_tile, count, halo).canonical(), None)
    return legal_splits(seen, width, height, gpus)


def iter_fields(split: Split) -> Iterator[tuple[str, int]]:
    return iter(asdict(split).items())
