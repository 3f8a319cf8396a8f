"""Replaying strategies on recorded measurements, to compare them without a device.

`simulate` runs one strategy `repeats` times on fresh copies of a problem, each with its own
random stream, and reports the best time found and the measurements spent per run, plus a
summary (slowdown relative to the recorded optimum when it is known). `main` is the command
line: ``simulate CACHE [--strategy NAME] [--max-evals N] [--repeats R] [--seed S] [--json]
[--seeds-from CACHE ...]``, where CACHE is a Kernel Tuner cache file or a T4 results file (told
apart by content). `--seeds-from` replays transfer from other programs tuned on the same device
(what `imagecl tune` does with a shared database): their best configurations are the `seeds`
option of the strategies that take it (`seeds_from_files`).

Mistakes in what the user gave (missing or malformed file, unknown strategy or option, bad
numbers) raise `SimulationError`, a ValueError with a message meant for the user.
"""
from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from ..errors import suggestion_suffix
from .formats import FormatError, read_measurements
from .problem import Problem, ReplayProblem
from .strategies import DEFAULT_STRATEGY, STRATEGIES, Strategy, distinct_best, get_strategy


class SimulationError(ValueError):
    """Bad input to a simulation: the message says what and, where it can, what was meant."""


def load_problem(path: Union[str, Path]) -> ReplayProblem:
    """A replay of a Kernel Tuner cache or T4 file; SimulationError if it cannot be read."""
    try:
        parameters, records = read_measurements(path)
    except FormatError as e:
        raise SimulationError(str(e)) from None
    if not records:
        raise SimulationError(f"{path}: contains no measurements")
    if all(t is None for t in records.values()):
        raise SimulationError(f"{path}: every recorded configuration failed; there is nothing to find")
    return ReplayProblem(parameters, records)


def seeds_from_files(paths: Sequence[Union[str, Path]], per_file: int = 3) -> list[dict[str, Any]]:
    """The `per_file` fastest mutually distinct configurations (`distinct_best`) of each recorded
    file, file by file, as {name: value} with the values as recorded (labels where the file used
    non-integer values: `seed_for` maps them onto another problem's parameters)."""
    if isinstance(per_file, bool) or not isinstance(per_file, (int, np.integer)) or per_file < 1:
        raise SimulationError(f"--seeds-per-file must be a positive integer, got {per_file!r}")
    seeds: list[dict[str, Any]] = []
    for path in paths:
        if not Path(path).exists():
            raise SimulationError(f"{path}: no such file")
        problem = load_problem(path)
        records = [(problem.config(key), time) for key, time in problem.records.items()]
        for config in distinct_best(records, int(per_file)):
            seeds.append({p.name: p.label(config[p.name]) for p in problem.parameters})
    return seeds


def seed_for(problem: Problem, seed: Mapping[str, Any]) -> dict[str, int]:
    """A seed's values as `problem`'s integers: a parameter with labels takes the position of the
    seed's value among them (left out when it has no such label); one without labels keeps
    integer values (non-integers left out). Names `problem` does not have are left out."""
    out: dict[str, int] = {}
    for p in problem.parameters:
        if p.name not in seed:
            continue
        value = seed[p.name]
        if p.labels is not None:
            if value in p.labels:
                out[p.name] = p.values[p.labels.index(value)]
        elif isinstance(value, (int, np.integer)) or (isinstance(value, float) and value.is_integer()):
            out[p.name] = int(value)
    return out


def resolve_strategy(strategy: Union[str, Strategy]) -> tuple[str, Strategy]:
    """(name, function) for a strategy name (any case) or a strategy function."""
    if callable(strategy):
        return getattr(strategy, "__name__", "custom"), strategy
    try:
        fn = get_strategy(strategy)
    except ValueError as e:
        raise SimulationError(str(e)) from None
    return next(n for n, f in STRATEGIES.items() if f is fn), fn


def check_options(name: str, fn: Strategy, options: Mapping[str, Any]) -> None:
    """Reject options the strategy does not take, or of the wrong kind, before anything runs."""
    params = {p: spec for p, spec in inspect.signature(fn).parameters.items()
              if spec.kind in (spec.KEYWORD_ONLY, spec.POSITIONAL_OR_KEYWORD)
              and p not in ("problem", "budget", "rng")}
    for key, value in options.items():
        if key not in params:
            hint = suggestion_suffix(key, params)
            known = ", ".join(params) or "none"
            raise SimulationError(f"strategy '{name}' has no option '{key}'{hint} (its options: {known})")
        default = params[key].default
        if default is inspect.Parameter.empty or default is None:
            continue
        number = (int, float) if isinstance(default, float) else (list, tuple) if isinstance(default, tuple) \
            else type(default)
        if isinstance(value, bool) != isinstance(default, bool) or not isinstance(value, number):
            raise SimulationError(f"option '{key}' of strategy '{name}' takes {type(default).__name__} values "
                                  f"like {default!r}, got {value!r}")


def _labelled(problem: Problem, config: Optional[Mapping[str, int]]) -> Optional[dict[str, Any]]:
    if config is None:
        return None
    return {p.name: p.label(config[p.name]) for p in problem.parameters}


def simulate(problem_factory: Union[Callable[[], Problem], Problem], strategy: Union[str, Strategy] = DEFAULT_STRATEGY,
             max_evals: Optional[int] = None, repeats: int = 10, seed: int = 0,
             options: Optional[Mapping[str, Any]] = None,
             progress: Optional[Callable[[int, int, Any], None]] = None, batch: int = 1) -> dict[str, Any]:
    """Run `strategy` `repeats` times with at most `max_evals` measurements each; `progress` is
    called with (runs done, repeats, None) after each. `batch`: configurations proposed at a
    time, as a tuning run on a cluster of that many workers does (Session.measure).

    `problem_factory` makes a fresh problem per run (a Problem instance is reused). Run r uses
    the random stream SeedSequence([seed, r]), so a run can be reproduced on its own.
    Returns {"strategy", "max_evals", "seed", "space_size", "valid", "optimum", "repeats": [...],
    and summary keys: mean/median/best/worst best_time, mean_evaluations, mean/max slowdown,
    found_optimum (fraction of runs), fraction_measured}.
    """
    name, fn = resolve_strategy(strategy)
    options = dict(options or {})
    check_options(name, fn, options)
    seeds = options.get("seeds")
    if seeds is not None and (isinstance(seeds, (str, bytes, Mapping))
                              or not all(isinstance(x, Mapping) for x in seeds)):
        raise SimulationError(f"option 'seeds' of strategy '{name}' takes a list of {{name: value}} "
                              f"configurations, got {seeds!r}")
    factory = problem_factory if callable(problem_factory) and not isinstance(problem_factory, Problem) \
        else (lambda: problem_factory)
    first = factory()
    matrix = first.candidate_matrix()
    space = len(matrix) if matrix is not None else None
    if max_evals is None:
        max_evals = max(20, round(0.05 * space)) if space is not None else 1000
        max_evals = min(max_evals, space) if space else max_evals
    if isinstance(max_evals, bool) or not isinstance(max_evals, (int, np.integer)) or max_evals < 1:
        raise SimulationError(f"max_evals must be a positive integer, got {max_evals!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise SimulationError(f"repeats must be a positive integer, got {repeats!r}")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise SimulationError(f"batch must be a positive integer, got {batch!r}")
    optimum = first.optimum()
    runs = []
    for r in range(repeats):
        problem = first if r == 0 else factory()
        problem.batch = int(batch)
        before = getattr(problem, "evaluations", None)
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), r]))
        try:
            result = fn(problem, int(max_evals), rng, **options)
        except ValueError as e:  # the strategies' own checks of their options
            raise SimulationError(f"strategy '{name}': {e}") from None
        spent = getattr(problem, "evaluations", None)
        if before is not None and spent is not None and spent - before != result.evaluations:
            raise RuntimeError(f"strategy '{name}' reported {result.evaluations} evaluations but made "
                               f"{spent - before}")  # a bug in the strategy, not user input
        run: dict[str, Any] = {"best_time": result.best_time, "evaluations": result.evaluations,
                               "best_config": _labelled(problem, result.best_config)}
        if "seeded" in result.info:
            run["seeded"] = result.info["seeded"]
        if optimum is not None and result.best_time is not None:
            run["slowdown"] = result.best_time / optimum
        runs.append(run)
        if progress is not None:
            progress(r + 1, repeats, None)
    report = {"strategy": name, "max_evals": int(max_evals), "seed": int(seed), "options": options, "batch": int(batch),
              "space_size": space, "valid": _valid_count(first), "optimum": optimum, "repeats": runs,
              **summarise(runs, optimum, space)}
    if seeds is not None:  # how many distinct valid configurations the seeds gave, measured first
        report["mean_seeded"] = statistics.fmean(r.get("seeded", 0) for r in runs)
    return report


def _valid_count(problem: Problem) -> Optional[int]:
    count = getattr(problem, "valid_count", None)
    return int(count) if count is not None else None


def summarise(runs: list[dict[str, Any]], optimum: Optional[float], space: Optional[int]) -> dict[str, Any]:
    """Statistics of repeated runs ({"best_time", "evaluations"[, "slowdown"]} each)."""
    times = [r["best_time"] for r in runs if r["best_time"] is not None]
    evals = [r["evaluations"] for r in runs]
    out: dict[str, Any] = {
        "failed_runs": len(runs) - len(times),
        "mean_best_time": statistics.fmean(times) if times else None,
        "median_best_time": statistics.median(times) if times else None,
        "best_best_time": min(times) if times else None,
        "worst_best_time": max(times) if times else None,
        "mean_evaluations": statistics.fmean(evals),
        "fraction_measured": statistics.fmean(evals) / space if space else None,
    }
    slow = [r["slowdown"] for r in runs if "slowdown" in r]
    out["mean_slowdown"] = statistics.fmean(slow) if slow else None
    out["max_slowdown"] = max(slow) if slow else None
    out["found_optimum"] = (sum(s <= 1 + 1e-12 for s in slow) / len(runs)) if optimum is not None else None
    # a run that found nothing is not within 5% either
    out["within_5pct"] = (sum(s <= 1.05 for s in slow) / len(runs)) if optimum is not None else None
    return out


# ---- command line ---------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise SimulationError(f"{self.prog}: {message}")


def _option(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise SimulationError(f"--option expects KEY=VALUE, got '{text}'")
    key, value = text.split("=", 1)
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


def build_parser(prog: str = "imagecl simulate") -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description="Replay a search strategy on recorded measurements "
                                       "(Kernel Tuner cache or T4 results file).")
    p.add_argument("cache", metavar="CACHE", help="Kernel Tuner cache file or T4 results file (JSON)")
    p.add_argument("--strategy", default=DEFAULT_STRATEGY,
                   help=f"one of {', '.join(STRATEGIES)} (default: {DEFAULT_STRATEGY}, the best on our recorded "
                        "spaces: a random sample, then a model-guided local search)")
    p.add_argument("--max-evals", type=int, default=None,
                   help="measurements per run (default: 5%% of the recorded configurations, at least 20)")
    p.add_argument("--repeats", type=int, default=10, help="independent runs (default: 10)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    # no "-o": everywhere else in imagecl it is --output, and simulate writes no file
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="strategy option, e.g. --option threshold=0.1 (JSON values); repeatable")
    p.add_argument("--seeds-from", nargs="+", default=[], metavar="CACHE",
                   help="recorded files of other programs on the same device: their best configurations are "
                        "measured first (the strategy's seeds option, as imagecl tune does with a shared database; "
                        "hybrid and ml)")
    p.add_argument("--seeds-per-file", type=int, default=3, metavar="N",
                   help="configurations taken from each --seeds-from file: its N fastest that differ from each "
                        "other in at least 2 parameters (default: 3)")
    p.add_argument("--batch", type=int, default=1, metavar="B",
                   help="configurations proposed at a time, as when tuning on a cluster of B workers (default: 1)")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")
    return p


def main(argv: Optional[Sequence[str]] = None, prog: str = "imagecl simulate") -> int:
    """The command line; raises SimulationError on bad input (the caller prints it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a == "-o" or (a.startswith("-o") and not a.startswith("--")) for a in argv):
        raise SimulationError(f"{prog}: -o is --output in the other commands, and simulate writes no file; "
                              "give a strategy option as --option KEY=VALUE")
    args = build_parser(prog).parse_args(argv)
    if not Path(args.cache).exists():
        raise SimulationError(f"{args.cache}: no such file")
    name, fn = resolve_strategy(args.strategy)
    options = dict(_option(o) for o in args.option)
    problem = load_problem(args.cache)
    if args.seeds_from:
        if "seeds" in options:
            raise SimulationError("give seeds either with --seeds-from or with --option seeds=..., not both")
        if "seeds" not in inspect.signature(fn).parameters:
            takes = ", ".join(n for n, f in STRATEGIES.items() if "seeds" in inspect.signature(f).parameters)
            raise SimulationError(f"strategy '{name}' does not start from seeds, so --seeds-from has no use with it "
                                  f"(strategies that do: {takes})")
        options["seeds"] = []
        for path in args.seeds_from:
            if Path(path).exists() and Path(path).resolve() == Path(args.cache).resolve():
                raise SimulationError(f"{path} is the CACHE replayed itself: seeds from it would hand the search "
                                      "the recorded optimum; give files of other programs")
            seeds = [seed_for(problem, s) for s in seeds_from_files([path], args.seeds_per_file)]
            if not any(seeds):
                raise SimulationError(f"{path}: shares no parameter (name and value kind) with {args.cache}, "
                                      "so its configurations say nothing about it")
            options["seeds"].extend(seeds)
    from ..progress import Progress

    report = simulate(problem, name, args.max_evals, args.repeats, args.seed, options,
                      progress=Progress(f"simulating {name}", unit="run"), batch=args.batch)
    report["cache"] = str(args.cache)
    if args.seeds_from:
        report["seeds_from"] = [str(p) for p in args.seeds_from]
        report["seeds_offered"] = len(options["seeds"])
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(format_report(report))
    return 0


def format_report(report: Mapping[str, Any]) -> str:
    def ms(t: Optional[float]) -> str:
        return "-" if t is None else f"{t * 1e3:.4g} ms"

    lines = [f"{report['strategy']}: {len(report['repeats'])} runs of at most {report['max_evals']} measurements"
             + (f" on {report['space_size']} recorded configurations ({report['valid']} valid)"
                if report.get("space_size") else "")]
    lines.append(f"  best time: mean {ms(report['mean_best_time'])}, median {ms(report['median_best_time'])}, "
                 f"worst {ms(report['worst_best_time'])}; optimum {ms(report['optimum'])}")
    if report.get("mean_slowdown") is not None:
        lines.append(f"  slowdown vs optimum: mean {report['mean_slowdown']:.4f}, max {report['max_slowdown']:.4f}; "
                     f"optimum found in {report['found_optimum']:.0%} of runs, within 5% of it in "
                     f"{report['within_5pct']:.0%}")
    frac = report.get("fraction_measured")
    lines.append(f"  measurements: mean {report['mean_evaluations']:.1f}"
                 + (f" ({frac:.2%} of the space)" if frac is not None else ""))
    if report.get("mean_seeded") is not None:
        offered = report.get("seeds_offered", len(report["options"].get("seeds", ())))
        lines.append(f"  seeds: {offered} configurations given, {report['mean_seeded']:.1f} measured first per run"
                     + (f" (from {', '.join(report['seeds_from'])})" if report.get("seeds_from") else ""))
    if report.get("failed_runs"):
        lines.append(f"  {report['failed_runs']} runs found no valid configuration")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m imagecl.tuner.simulate
    try:
        sys.exit(main())
    except SimulationError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


__all__ = ["SimulationError", "simulate", "load_problem", "seeds_from_files", "seed_for", "main", "build_parser",
           "format_report"]
