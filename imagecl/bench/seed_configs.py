"""A CPU seed as a whole configuration of a program's space (benchmarks/cpu_seeds.py and its test)."""
from __future__ import annotations

import itertools
from typing import Any, Optional

import numpy as np

from .. import choices as ch
from ..errors import ConfigError


def with_tunables(space: Any, seed: dict) -> Optional[dict]:
    """`seed` completed by the space, its program's tunables at their first values that make it
    valid; None where none does."""
    tunables = {p.name: p.values for p in space.parameters if p.family is ch.TUNABLE}
    for values in itertools.product(*tunables.values()):
        try:
            config = space.complete({**seed, **dict(zip(tunables, values))})
        except ConfigError:
            continue
        if space.valid_mask({k: np.array([v]) for k, v in config.items()})[0]:
            return config
    return None
