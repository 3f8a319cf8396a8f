"""The seed's synthetic wavefront instances: a grid of `dim` x `dim` points, `tsize` rounds of
integer work per point and `dsize` 4-byte words of data per point (the output's pixel: int or
float4, the pixel types the language has),
and the features that describe any wavefront program's instance to the split model."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

DSIZES = (1, 4)
_PIXEL = {1: "int", 4: "float4"}


def synthetic_source(dsize: int) -> str:
    """The synthetic wavefront program whose pixel holds `dsize` words (1: int; 4: float4, whose
    lanes hold integers below 2^24, so that every split stays bit-exact)."""
    if dsize not in DSIZES:
        raise ValueError(f"dsize is one of {DSIZES}")
    pixel = _PIXEL[dsize]
    if dsize == 1:
        mix, make = "(uint)w + 3u * (uint)n + 7u * (uint)nw", "(int)(v >> 1)"
    else:
        mix = "(uint)w.x + 3u * (uint)n.x + 7u * (uint)nw.x"
        make = "(float4)((float)(v >> 8), n.x, nw.x, w.x)"
    return f"""// The synthetic wavefront (imagecl/wavefront/synthetic.py): {dsize} int(s) of data per point,
// `tsize` rounds of work per point.
#pragma imcl wavefront(out)

void wavefront_synthetic_{dsize}(Image<{pixel}> out, int tsize) {{
    {pixel} w = out[idx - 1][idy];
    {pixel} n = out[idx][idy - 1];
    {pixel} nw = out[idx - 1][idy - 1];
    uint v = {mix} + (uint)(idx * 31 + idy);
    for (int i = 0; i < tsize; i++)
        v = v * 1664525u + 1013904223u;
    out[idx][idy] = {make};
}}
"""


@dataclass(frozen=True)
class Instance:
    dim: int
    tsize: int
    dsize: int

    def program(self):
        return _compiled(self.dsize)

    def arguments(self) -> dict[str, Any]:
        if self.dsize == 1:
            return {"out": np.zeros((self.dim, self.dim), np.int32), "tsize": self.tsize}
        return {"out": np.zeros((self.dim, self.dim, 4), np.float32), "tsize": self.tsize}


_PROGRAMS: dict = {}


def _compiled(dsize: int):
    import imagecl

    if dsize not in _PROGRAMS:
        _PROGRAMS[dsize] = imagecl.compile(synthetic_source(dsize), f"<synthetic dsize={dsize}>")
    return _PROGRAMS[dsize]


def instances(dims, tsizes, dsizes=DSIZES) -> Iterator[Instance]:
    for dim, tsize, dsize in itertools.product(dims, tsizes, dsizes):
        yield Instance(dim, tsize, dsize)


def data_bytes(program) -> int:
    """Bytes of one output point: what moves between devices per point (the seed's dsize)."""
    out = program.info.arrays[program.info.wavefront].element
    return int(out.dtype.itemsize) * int(getattr(out, "width", 1))
