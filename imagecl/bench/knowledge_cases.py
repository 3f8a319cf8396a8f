"""The knowledge folder and the validation schemes of OmniTune's Table 1, for the scripts that
evaluate zero-shot predictions (benchmarks/knowledge_eval.py, benchmarks/knowledge_nearest_case.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..tuner.knowledge.sources import Knowledge, compile_programs, load_source, read_device_features, read_records


def knowledge_folder(root: Path) -> Path:
    """The shipped knowledge folder of the checkout at `root`."""
    return root / "benchmarks" / "results" / "knowledge"


def load(extra: list[tuple[str, str]], folder: Path, examples: Path) -> Knowledge:
    """The knowledge folder, and each further store with its device's features (its programs
    must be among the folder's or the `examples` folder's)."""
    knowledge = load_source(folder)
    for db, features in extra:
        more = Knowledge(records=read_records(Path(db)))
        device = read_device_features(Path(features))
        more.devices = {name: device for name in {r.device for r in more.records}}
        knowledge.add(more)
    wanted = {r.program_hash for r in knowledge.records} - set(knowledge.programs)
    knowledge.programs.update(compile_programs(sorted(examples.glob("*.icl")), wanted)[0])
    return knowledge


def schemes(data, synthetic: set, seed: int) -> dict[str, list[tuple[str, list[int], list[int]]]]:
    n = len(data.cases)
    everything = np.arange(n)
    rng = np.random.default_rng(seed)
    folds = np.array_split(rng.permutation(n), 10)
    out = {"10-fold": [(f"fold {i}", sorted(set(everything) - set(f)), sorted(f)) for i, f in enumerate(folds)]}
    syn = [i for i, c in enumerate(data.cases) if c.program_hash in synthetic]
    real = [i for i, c in enumerate(data.cases) if c.program_hash not in synthetic]
    out["synthetic-train/real-test"] = [("synthetic -> examples", syn, real)]
    for scheme, attribute in (("leave one device out", "device"), ("leave one program out", "program_hash"),
                              ("leave one size out", "size")):
        values = sorted({getattr(c, attribute) for c in data.cases})
        out[scheme] = [(value if attribute != "program_hash" else
                        next(c.program_name for c in data.cases if c.program_hash == value),
                        [i for i, c in enumerate(data.cases) if getattr(c, attribute) != value],
                        [i for i, c in enumerate(data.cases) if getattr(c, attribute) == value])
                       for value in values]
    return out
