"""The arguments the split benchmarks (benchmarks/multi_device.py, benchmarks/split_timeline.py)
give their programs: random images of a size, made the same way by both."""
from __future__ import annotations

import numpy as np


def make_case(name: str, shape: tuple[int, int], rng: np.random.Generator) -> dict:
    """Arguments of the example `name` (convolution9, median, heat or conway) for a grid of
    `shape` (height, width)."""
    h, w = shape
    if name == "convolution9":
        return {"input": rng.random((h, w), dtype=np.float32), "filter": rng.random((9, 9), dtype=np.float32)}
    if name == "median":
        return {"input": rng.integers(0, 256, (h, w)).astype(np.uint8)}
    if name == "heat":
        return {"input": rng.random((h, w), dtype=np.float32), "alpha": 0.2}
    if name == "conway":
        return {"input": (rng.random((h, w)) < 0.4).astype(np.int8)}
    raise ValueError(name)
