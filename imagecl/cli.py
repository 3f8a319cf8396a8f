"""The `imagecl` command line: check, compile, run, devices."""
from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from . import __version__, multidevice_cli
from .errors import ArgumentError, ImageCLError
from .escape import terminal
from .frontend.source import decode_source
from .outputs import check_distinct, check_output, database_files, output_folder, write_atomic
from .tuner.address import is_postgres, mask


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake exits with status 1 like every other user error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"needs a number of configurations >= 0, got '{text}'")
    return value


def _seconds(text: str) -> float:
    """A --timeout, checked by the rule the API uses (runtime.isolated.check_timeout)."""
    from .runtime.isolated import check_timeout

    try:
        return check_timeout(float(text))
    except (ValueError, ArgumentError):
        raise argparse.ArgumentTypeError(f"needs a finite number of seconds > 0, got '{text}'") from None


def _search_options(parser: argparse.ArgumentParser, db_help: str, others: str) -> None:
    """The options `tune` and `tune-kernel` share: the search's seed, the confirmation, the
    database and what it lends, the watchdog and the output folder."""
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--confirm", type=_non_negative, default=4, metavar="K",
                        help="time the search's K fastest configurations again with 15 launches each, in 5 rounds "
                             "that take them in turn, and keep the fastest (default 4; 0: keep the search's pick)")
    parser.add_argument("--db", help="results database, a file or postgresql://USER@HOST:PORT/DBNAME "
                        f"(default: DIR/measurements.db); {db_help}")
    parser.add_argument("--no-transfer", action="store_true",
                        help=f"do not start from the best configurations of {others} tuned on this device in the "
                             "database (by default the search measures them first)")
    parser.add_argument("--timeout", type=_seconds, default=60.0,
                        help="seconds per configuration before the watchdog (default 60); timeouts stored with a "
                             "smaller limit are measured again")
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="where to write the tuned kernel")


def _cluster_option(parser: argparse.ArgumentParser) -> None:
    from .tuner.cluster import cluster_option

    parser.add_argument("--cluster", type=cluster_option, metavar="ADDRESS",
                        help="measure on a Dask cluster: a scheduler's tcp://HOST:PORT, or local:N for N workers on "
                             "this machine's OpenCL devices (one worker per device; docs/cluster.md)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="imagecl", description="Compile and run ImageCL (.icl) image filters on OpenCL devices.")
    parser.add_argument("--version", action="version", version=f"imagecl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    check = sub.add_parser("check", help="check a program and report its errors")
    check.add_argument("file")

    comp = sub.add_parser("compile", help="print or write the generated OpenCL C")
    comp.add_argument("file")
    comp.add_argument("-o", "--output", help="write the OpenCL source here instead of printing it")
    comp.add_argument("--config", help="a tuning configuration as JSON (a dict), or @file.json (also the JSON "
                                         "description `tune` writes)")

    run = sub.add_parser("run", help="run a program on images and arrays",
                         description="Run a program. Inputs are NAME=VALUE: image files (.png, .tif, .jpg, .bmp), "
                                     ".npy arrays, or numbers for scalars. Outputs are saved with -o NAME=PATH.")
    run.add_argument("file")
    run.add_argument("assignments", nargs="*", metavar="NAME=VALUE", help="inputs and scalars")
    run.add_argument("-o", "--output", action="append", default=[], metavar="NAME=PATH",
                     help="save an output array (.npy, .png, .tif, ...); repeatable")
    run.add_argument("--device", help="device index or name fragment (default: $IMAGECL_DEVICE, else the first GPU)")
    run.add_argument("--config", help="a tuning configuration as JSON (a dict), or @file.json (also the JSON "
                                        "description `tune` writes)")
    run.add_argument("--timeout", type=_seconds, default=None,
                     help="seconds the run (upload, kernel, download) may take before it is stopped (default 60)")

    space = sub.add_parser("space", help="print a program's tuning space on a device")
    space.add_argument("file")
    space.add_argument("--device", help="device index or name fragment (default: $IMAGECL_DEVICE, else the first GPU)")
    space.add_argument("--size", help="problem size WxH[xD], for size-dependent constraints (e.g. image limits)")
    space.add_argument("--json", action="store_true", help="print the space as JSON")
    space.add_argument("--random", type=int, metavar="N", help="also print N random valid configurations")
    space.add_argument("--seed", type=int, default=0, help="seed for --random")

    comp.add_argument("--device", help="device whose limits the configuration is checked against")

    meas = sub.add_parser("measure", help="measure variants of a program on a device and store the results",
                          description="Measure configurations of a program's tuning space on random inputs of the "
                                      "given size. Every result is stored as it arrives; rerunning the same command "
                                      "resumes where it stopped.")
    meas.add_argument("file")
    meas.add_argument("assignments", nargs="*", metavar="NAME=VALUE", help="scalars (and optionally input files)")
    meas.add_argument("--size", required=True, help="problem size WxH[xD]")
    meas.add_argument("--device", help="device index or name fragment")
    which = meas.add_mutually_exclusive_group(required=True)
    which.add_argument("--random", type=int, metavar="N", help="N random valid configurations")
    which.add_argument("--all", action="store_true", help="every valid configuration")
    which.add_argument("--configs", metavar="FILE", help="a JSON file with a list of configurations")
    meas.add_argument("--seed", type=int, default=0, help="seed for --random and for the random inputs")
    meas.add_argument("--db", required=True, help="results database: a file (created if missing) or "
                      "postgresql://USER@HOST:PORT/DBNAME")
    _cluster_option(meas)
    meas.add_argument("--timeout", type=_seconds, default=60.0,
                      help="seconds per configuration before the watchdog (default 60); timeouts stored with a "
                           "smaller limit are measured again")

    res = sub.add_parser("results", help="list what a results database holds")
    res.add_argument("--db", required=True)
    res.add_argument("--json", action="store_true", help="print a list of records as JSON")
    res.add_argument("--adopt", action="store_true",
                     help="make the records of the device's name and driver that an older store kept without "
                          "compute units this device's (--device), where you know they were measured on it")
    res.add_argument("--device", help="with --adopt: device index or name fragment (default: the default device)")
    res.add_argument("--plot", metavar="FILE.png",
                     help="also plot the largest run: its tuning curve (best time so far against measurements) and "
                          "time against each parameter (.png, .svg, .pdf; needs matplotlib)")

    tune = sub.add_parser("tune", help="auto-tune a program for a device and write the tuned kernel",
                          description="Tune a program on random inputs of the given size: measure a random "
                                      "sample, train a model, measure its most promising predictions; write the "
                                      "tuned OpenCL source, a JSON description and a C host wrapper to -o DIR, and "
                                      "record the configuration so that imagecl.load() uses it on this device.")
    tune.add_argument("file")
    tune.add_argument("assignments", nargs="*", metavar="NAME=VALUE", help="scalars (and optionally input files)")
    tune.add_argument("--size", required=True, help="problem size WxH[xD]")
    tune.add_argument("--device", help="device index or name fragment")
    tune.add_argument("--budget", type=int, default=200, help="most configurations to measure (default 200)")
    _cluster_option(tune)
    tune.add_argument("--strategy", default="hybrid",
                      help="hybrid (default: spread sample + model-guided local search), ml, random, annealing, "
                           "pso or exhaustive")
    tune.add_argument("--service", metavar="URL",
                      help="also submit what was measured to this tuning service (imagecl serve; its token from "
                           "$IMAGECL_SERVICE_TOKEN)")
    multidevice_cli.add_options(run, tune)
    _search_options(tune, db_help="measurements of this program on this device at other sizes in it train the "
                                  "model too, and the best configurations of other programs on this device are "
                                  "measured first",
                    others="other programs")
    tune.add_argument("--knowledge", action="append", default=[], metavar="PATH",
                      help="a results store (.db, .db.gz) or a folder of them, with the device features "
                           "(features*.json) and programs (programs/*.icl) its records need, whose model ranks the "
                           "space before the search: the search measures the configurations predicted fastest first "
                           "(repeatable; the --db store and the .icl files beside FILE always count; e.g. "
                           "benchmarks/results/knowledge)")
    tune.add_argument("--no-knowledge", action="store_true",
                      help="do not start from a model of the stores' measurements of other programs, devices and "
                           "sizes")

    tl = sub.add_parser("tuned", help="list or remove the configurations 'tune' recorded for imagecl.load()",
                        description="List the tuned configurations recorded in the registry ($IMAGECL_TUNED, else "
                                    "~/.cache/imagecl/tuned): program, device and driver, size, time, configuration "
                                    "and date; or remove some.")
    tl.add_argument("--json", action="store_true", help="print a list of records as JSON")
    tl.add_argument("--remove", metavar="PROGRAM_OR_HASH",
                    help="remove the records of this kernel name, program file or program hash (or its prefix)")
    tl.add_argument("--device", help="with --remove: only on devices whose description contains this")
    tl.add_argument("--size", help="with --remove: only at this size WxH[xD]")

    tk = sub.add_parser("tune-kernel", help="tune a hand-written OpenCL kernel described by a Python file",
                        description="Run SPEC.py, which builds a TunableKernel called `kernel` (parameters, sizes, "
                                    "arguments, reference: see imagecl.tuner.kernel), tune it, and write the tuned "
                                    "kernel (.cl with #defines, .json with sizes) to -o DIR.")
    tk.add_argument("spec", metavar="SPEC.py")
    tk.add_argument("--device", help="device index or name fragment")
    tk.add_argument("--budget", type=int, help="most configurations to measure (default: all for exhaustive, "
                                               "else up to 100)")
    tk.add_argument("--strategy", default="hybrid",
                    help="hybrid (default, the best tuner), ml, random, annealing, pso or exhaustive")
    _search_options(tk, db_help="this kernel's measurements at other global sizes in it train the model too, and "
                                "the best configurations of other kernels and programs on this device are measured "
                                "first",
                    others="other kernels and programs")

    sim = sub.add_parser("simulate", help="replay recorded measurements with a search strategy", add_help=False)
    sim.add_argument("rest", nargs=argparse.REMAINDER)

    exp = sub.add_parser("export", help="write a results database as a Kernel Tuner cache file or T4 file")
    exp.add_argument("--db", required=True)
    exp.add_argument("--format", choices=("kernel_tuner", "t4"), required=True)
    exp.add_argument("-o", "--output", required=True)

    imp = sub.add_parser("import", help="store a Kernel Tuner cache file or T4 file in a results database")
    imp.add_argument("file")
    imp.add_argument("--db", required=True)
    imp.add_argument("--program", help="the name to file the measurements under (default: the file's name)")

    devs = sub.add_parser("devices", help="list the OpenCL devices")
    devs.add_argument("--json", action="store_true",
                      help="print a JSON list: index, platform, name, kind, driver, compute units, global and local "
                           "memory (bytes), max work-group size, image support")

    feat = sub.add_parser("features", help="print a program's, a device's and a size's features as JSON",
                          description="Features for models that carry tuning knowledge across programs, devices "
                                      "and sizes (imagecl.features): the program's (from its IR and analyses), the "
                                      "device's (queries, and a copy bandwidth and peak arithmetic rate measured "
                                      "once and cached), the size's, and a configuration's encoding.")
    feat.add_argument("file")
    feat.add_argument("--size", help="problem size WxH[xD]")
    feat.add_argument("--device", help="device index or name fragment (default: $IMAGECL_DEVICE, else the first GPU)")
    feat.add_argument("--config", help="a configuration to encode (JSON or @file.json; needs --size)")
    feat.add_argument("--no-measure", action="store_true",
                      help="do not measure the device (bandwidth and arithmetic rate are null)")
    srv = sub.add_parser("serve", help="start the tuning service (Request, RequestTraining, Submit, Refuse over HTTP)",
                         description="Serve configurations to programs on any machine, learn from what they submit; "
                                     "see docs/service.md.")
    from .service.serve import add_arguments as _serve_arguments

    _serve_arguments(srv)
    for command in sub.choices.values():
        if command is not sim:
            command.add_argument("--verbose", action="store_true",
                                 help="show the OpenCL compiler's build logs (also IMAGECL_BUILD_LOG=1); by default "
                                      "they are shown only with a failed build's error")
    return parser


def _read_source(path: str) -> str:
    p = Path(path)
    try:
        if not p.is_file():
            raise ImageCLError(f"{path}: no such file" if not p.exists() else f"{path}: not a file")
        data = p.read_bytes()
    except OSError as exc:
        raise ImageCLError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return decode_source(data, path)


def _input_files(assignments: Sequence[str], *others: Optional[str]) -> list[str]:
    """The files a command reads: NAME=PATH values that are files, and `others` (source, --config @file)."""
    files = [o for o in others if o]
    for assignment in assignments:
        value = assignment.split("=", 1)[-1].strip()
        try:
            if value and Path(value).is_file():
                files.append(value)
        except OSError:
            pass
    return files


def _output_folder(path: str, read: Sequence[str]) -> Path:
    """tune's -o DIR: made if missing, parents included, and said so (a mistyped path shows)."""
    created: list[Path] = []
    out = output_folder(path, read, created=created)
    if created:
        print("note: created the folder" + ("s " if len(created) > 1 else " ") + ", ".join(map(str, created)),
              file=sys.stderr)
    return out


def _config_file(text: Optional[str]) -> Optional[str]:
    return text[1:] if text and text.startswith("@") else None


def _load(path: str):
    from .program import compile as compile_program

    return compile_program(_read_source(path), path)


def _parse_config(text: Optional[str]) -> Optional[dict]:
    if text is None:
        return None
    if text.startswith("@"):
        text = _read_source(text[1:])
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImageCLError(f"--config is not valid JSON: {exc}") from None
    if not isinstance(config, dict):
        raise ImageCLError("--config must be a JSON object, e.g. '{\"wg_x\": 16}'")
    if isinstance(config.get("configuration"), dict):
        # the JSON description `tune` writes: its configuration is inside (no parameter's value is an object)
        config = config["configuration"]
    return config


def _split(assignment: str, what: str) -> tuple[str, str]:
    if "=" not in assignment:
        raise ArgumentError(f"expected {what} as NAME=VALUE, got '{assignment}'")
    name, value = assignment.split("=", 1)
    if not name or not value:
        raise ArgumentError(f"expected {what} as NAME=VALUE, got '{assignment}'")
    return name.strip(), value.strip()


def _run(args) -> int:
    from .imagefiles import write_array

    program = _load(args.file)
    info = program.info
    values = _inputs(program, args.assignments)
    saves = dict(_split(o, "an output") for o in args.output)
    for name in saves:
        if name not in info.outputs:
            raise ArgumentError(f"'{name}' is not an output of '{program.name}' (outputs: {', '.join(info.outputs)})")
    read = _input_files(args.assignments, args.file, _config_file(args.config))
    for name, path in saves.items():
        check_output(path, read, f"output '{name}'")
    check_distinct(saves.values())
    if args.devices or args.iterate is not None or args.shares or args.h:
        outputs, seconds = multidevice_cli.run_split(program, values, args), None
    else:
        timeout = None if info.wavefront else 60.0 if args.timeout is None else args.timeout
        outputs, seconds = program.run(values, device=args.device, config=_parse_config(args.config),
                                       timeout=timeout)  # a wavefront program runs here: several devices
    for name, out in outputs.items():
        if name in saves:
            write_array(saves[name], out)
            print(f"{name}: {out.shape} {out.dtype} -> {saves[name]}")
        else:
            print(f"{name}: {out.shape} {out.dtype} min {out.min():.6g} max {out.max():.6g} "
                  f"mean {out.astype(np.float64).mean():.6g} (not saved; use -o {name}=PATH)")
    if seconds is not None:
        print(f"kernel time: {seconds * 1e3:.3f} ms")
    return 0


def parse_size(text: str) -> tuple[int, ...]:
    """'4096x2048' (width x height [x depth]) -> NumPy shape (2048, 4096)."""
    try:
        sizes = [int(part) for part in text.lower().split("x")]
    except ValueError:
        raise ArgumentError(f"--size must look like WIDTHxHEIGHT[xDEPTH], got '{text}'") from None
    if not 2 <= len(sizes) <= 3 or any(s <= 0 for s in sizes):
        raise ArgumentError(f"--size must look like WIDTHxHEIGHT[xDEPTH] with positive sizes, got '{text}'")
    return tuple(reversed(sizes))


def _space(args) -> int:
    program = _load(args.file)
    shape = parse_size(args.size) if args.size else None
    if shape is not None and len(shape) != program.info.grid_dims:
        raise ArgumentError(f"--size has {len(shape)} dimensions but the grid of '{program.name}' has "
                            f"{program.info.grid_dims}")
    space = program.space_for(args.device, shape)
    samples = space.random(args.random, seed=args.seed) if args.random else []
    if args.json:
        data = space.to_json()
        if args.random:
            data["random"] = samples
        print(json.dumps(data, indent=2))
    else:
        print(space.describe())
        for config in samples:
            print(json.dumps(config))
    return 0


def _inputs(program, assignments) -> dict:
    """NAME=VALUE pairs: files for arrays, numbers for scalars."""
    from .imagefiles import read_array
    from .ir import types as ty

    info = program.info
    params = {p.name: p for p in info.params}
    values = {}
    for assignment in assignments:
        name, text = _split(assignment, "an input")
        if name not in params:
            from .errors import suggestion_suffix

            raise ArgumentError(f"'{program.name}' has no parameter '{name}'" + suggestion_suffix(name, params)
                                + f" (parameters: {', '.join(params)})")
        array = info.arrays.get(name)
        if array is not None:
            channels = array.element.width if isinstance(array.element, ty.VectorType) else 0
            values[name] = read_array(text, array.element.dtype, channels)
        else:
            values[name] = _number(name, text)
    return values


def _synthetic_inputs(program, shape, args):
    """(arguments, how they were made) for a grid of `shape`: NAME=FILE/VALUE assignments given
    on the command line, random images (seeded) and 1 for the scalars that were not (with a note)."""
    from .runtime.devices import select_device
    from .runtime.synthetic import synthetic_arguments
    from .tuner.cluster import Synthetic

    given = _inputs(program, args.assignments)
    arguments, defaulted = synthetic_arguments(program, shape, given, seed=args.seed,
                                               device=select_device(args.device))
    for name in defaulted:
        print(f"note: scalar '{name}' not given; using 1 (pass {name}=VALUE)", file=sys.stderr)
    return arguments, Synthetic(tuple(shape), given, args.seed)


def _measure(args) -> int:
    from .progress import Progress
    from .tuner.cluster import open_measurer
    from .tuner.engine import MeasureOptions
    from .tuner.store import Store

    program = _load(args.file)
    shape = parse_size(args.size)
    arguments, synthetic = _synthetic_inputs(program, shape, args)
    space = program.space_for(args.device, shape)
    if args.random is not None:
        if args.random <= 0:
            raise ArgumentError("--random needs a positive number of configurations")
        configs = space.random(args.random, seed=args.seed)
    elif args.all:
        columns = space.enumerate()
        n = len(next(iter(columns.values())))
        configs = [{k: int(v[i]) for k, v in columns.items()} for i in range(n)]
    else:
        try:
            configs = json.loads(_read_source(args.configs))
        except json.JSONDecodeError as exc:
            raise ArgumentError(f"{args.configs}: not valid JSON ({exc})") from None
        if not isinstance(configs, list) or not all(isinstance(c, dict) for c in configs):
            raise ArgumentError(f"{args.configs}: expected a JSON list of configurations (objects)")
    db = _store_at(args.db)
    _check_db(db, _input_files(args.assignments, args.file, args.configs))
    with Store(db) as store, open_measurer(args.cluster, program, arguments, store, args.device,
                                           MeasureOptions(timeout=args.timeout), synthetic) as measurer:
        summary = measurer.measure(configs, progress=Progress("measuring"))
    for note in summary.notes:
        print(f"note: {note}", file=sys.stderr)
    print(summary.describe())
    return 0


def _submit_to_service(url, program, device, shape, records) -> None:
    from .service.client import submit_run

    stored = submit_run(url, program, device, tuple(reversed(shape)), records)
    if stored is not None:
        print(f"submitted {stored} measurements to the tuning service {url}", file=sys.stderr)


def _tune(args) -> int:
    from . import tuned
    from .export import export_tuned, tuned_file_names
    from .progress import Progress
    from .runtime.devices import select_device
    from .tuner.cluster import open_measurer
    from .tuner.engine import MeasureOptions, Summary
    from .tuner.knowledge.fewshot import with_knowledge
    from .tuner.knowledge.sources import check_sources
    from .tuner.live import store_messages
    from .tuner.phases import describe_phases, phase_report
    from .tuner.session import Measurement, SessionOptions, run_session
    from .tuner.simulate import SimulationError, resolve_strategy
    from .tuner.store import Store

    if args.devices or args.iterate is not None:
        return multidevice_cli.tune_split(args, _tune)
    program = _load(args.file)
    if program.info.wavefront is not None:  # the split between CPU and GPUs is tuned: wavefront/tune.py
        from .wavefront.tune import tune_cli

        return tune_cli(program, args)
    shape = parse_size(args.size)
    if args.budget < 1:
        raise ArgumentError("--budget needs a positive number of configurations")
    try:
        name, strategy = resolve_strategy(args.strategy)
    except SimulationError as exc:
        raise ArgumentError(str(exc)) from None
    arguments, synthetic = _synthetic_inputs(program, shape, args)
    device = select_device(args.device)
    # every output is checked before the search, not after it
    read = _input_files(args.assignments, args.file)
    check_sources(args.knowledge)
    out = _output_folder(args.output, read)
    db = _store_at(args.db) if args.db else out / "measurements.db"
    _check_db(db, read)
    for filename in tuned_file_names(program.name):
        check_output(out / filename, read + database_files(db), "a tuned kernel's file")
    progress = Progress("tuning")
    space = program.space_for(device, shape)
    print(f"tuning '{program.name}' on {device.name.strip()} for {args.size}: {space.size:,} configurations, "
          f"budget {args.budget}, strategy {name}", file=sys.stderr)
    live = Summary()
    started = time.time()

    def on_measure(event: Measurement) -> None:
        if event.phase != "search":
            return
        live.measured += 1
        live.statuses["ok" if event.seconds is not None else "failed"] += 1
        if event.seconds is not None and (live.best_time is None or event.seconds < live.best_time):
            live.best_time = event.seconds
        live.seconds = time.time() - started
        progress(min(live.measured, args.budget), args.budget, live)

    def on_store(info: dict) -> None:  # before the search: what the database gives it
        for line in store_messages(info, mask(db)):
            print(line, file=sys.stderr)

    confirming: list = []  # its Progress starts its clock when the confirmation does

    def confirm_progress(done: int, total: int, summary=None) -> None:
        if not confirming:
            confirming.append(Progress("confirming the best", unit="series"))
        confirming[0](done, total, summary)

    def knowledge(taken, store, run, strategy, given):  # the knowledge model's seeds and prior
        return with_knowledge(taken, store, run, program, device, tuple(reversed(shape)), strategy,
                              sources=args.knowledge, program_files=Path(args.file).parent.glob("*.icl"),
                              given=given, budget=args.budget)

    options = SessionOptions(strategy=strategy, budget=args.budget, seed=args.seed, confirm=args.confirm,
                             transfer=not args.no_transfer, on_measure=[on_measure], confirm_progress=confirm_progress,
                             on_store=on_store, knowledge=None if args.no_knowledge else knowledge)
    with Store(db) as store, open_measurer(args.cluster, program, arguments, store, device,
                                           MeasureOptions(timeout=args.timeout, prebuild=False),
                                           synthetic) as measurer:
        session = run_session(measurer, options)
        for note in measurer.notes:
            print(f"note: {note}", file=sys.stderr)
        if args.verbose:
            print(describe_phases(phase_report(measurer, time.time() - started)), file=sys.stderr)
        _submit_to_service(args.service, program, device, shape, store.records(measurer.run))
    if session.best_config is None:
        raise ImageCLError("no configuration could be measured successfully, the naive variant "
                           f"included; see 'imagecl results --db {db}' for the failures")
    if session.search_fell_back:
        # the search's picks all failed (timed out, say), but the naive variant ran
        print(f"note: none of the {session.evaluations} configurations the search measured ran successfully; "
              "keeping the naive variant", file=sys.stderr)
    best, best_time, naive_time = session.found_config, session.found_time, session.baseline_time
    recorded, recorded_time, kept_naive = session.best_config, session.best_time, session.kept_baseline
    confirmed = session.info
    predicted = session.predicted
    paths = export_tuned(program, recorded, out, device, shape, measured=recorded_time,
                         predicted=predicted, inputs=read + database_files(db))
    outcome = tuned.record(program, device, recorded, shape, recorded_time, naive_seconds=naive_time)
    if confirmed.get("confirmed"):
        print(f"confirmed: the {confirmed['confirmed']} fastest timed again with 15 launches each, in 5 rounds "
              "that take them in turn "
              f"(the search's best: {confirmed['search_best_seconds'] * 1e3:.4f} ms)", file=sys.stderr)
    if best == session.baseline_config:
        compared = " (the naive variant)"  # its earlier, shorter timing is no baseline for itself
    elif session.speedup:
        compared = f" (naive variant {naive_time * 1e3:.4f} ms, {session.speedup:.2f}x)"
    else:
        compared = ""
    print(f"best: {best_time * 1e3:.4f} ms after {session.evaluations} measurements{compared}")
    print(f"configuration: {json.dumps(best)}")
    print("wrote " + ", ".join(str(p) for p in paths))
    size_text = "x".join(str(s) for s in reversed(shape))
    if kept_naive:
        print(f"note: the best configuration found is slower than the naive variant ({naive_time * 1e3:.4f} ms); "
              f"wrote the naive variant's configuration for {size_text} instead", file=sys.stderr)
    if not outcome.kept:
        print(f"measurements in {mask(db)}; imagecl.load('{args.file}') keeps the configuration recorded earlier "
              f"for {size_text} on this device: it ran in {outcome.previous_seconds * 1e3:.4f} ms")
    else:
        print(f"measurements in {mask(db)}; imagecl.load('{args.file}') now uses this configuration on this device "
              f"for {size_text} (and the nearest sizes never tuned)")
    return 0


def _tuned(args) -> int:
    from . import tuned

    if args.remove is None and (args.device is not None or args.size is not None):
        raise ArgumentError("--device and --size select what --remove removes")
    if args.remove is not None and not args.remove.strip():
        raise ArgumentError("--remove needs a kernel name, program file or program hash")
    if args.remove is not None:
        size = list(reversed(parse_size(args.size))) if args.size else None
        gone = tuned.remove(args.remove, args.device, size)
        if args.json:
            print(json.dumps([r.as_json() for r in gone], indent=1))
        else:
            print(f"removed {len(gone)} record{'s' if len(gone) != 1 else ''}" if gone else
                  f"nothing matched '{args.remove}' in {tuned.registry_dir()}")
        return 0 if gone else 1
    found = list(tuned.records())
    if args.json:
        print(json.dumps([r.as_json() for r in found], indent=1))
        return 0
    if not found:
        print(f"no tuned configurations in {tuned.registry_dir()}")
        return 0
    for r in found:
        time_text = "?" if r.seconds is None else f"{r.seconds * 1e3:.4f} ms"
        print(f"{r.program} ({r.filename}, {r.program_key})  {r.device}  {tuned.size_key(r.size)}  {time_text}  "
              f"{json.dumps(r.configuration, sort_keys=True)}  {r.date}")
    return 0


def _tune_kernel(args) -> int:
    import runpy

    from .tuner.kernel import TunableKernel, saved_file_names
    from .tuner.live import store_messages

    _read_source(args.spec)
    try:
        namespace = runpy.run_path(args.spec, run_name="imagecl_spec")  # not __main__: guarded code stays out
    except ImageCLError:
        raise
    except Exception as exc:  # noqa: BLE001 - a mistake in the user's script: show where
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(Path(args.spec))]
        where = f"{args.spec}:{frames[-1].lineno}: " if frames else f"{args.spec}: "
        raise ImageCLError(f"{where}{type(exc).__name__}: {exc}") from None
    kernel = namespace.get("kernel")
    if not isinstance(kernel, TunableKernel):
        raise ImageCLError(f"{args.spec} must define `kernel`, a TunableKernel"
                           + (f" (it is a {type(kernel).__name__})" if kernel is not None else ""))
    read = [args.spec] + ([kernel.filename] if kernel.filename != "<string>" else [])
    out = _output_folder(args.output, read)
    db = _store_at(args.db) if args.db else out / "measurements.db"
    _check_db(db, read)
    for filename in saved_file_names(kernel.kernel_name):
        check_output(out / filename, read + database_files(db), "a tuned kernel's file")
    result = kernel.tune(device=args.device, strategy=args.strategy, budget=args.budget, store=db, seed=args.seed,
                         timeout=args.timeout, confirm=args.confirm, transfer=not args.no_transfer)
    for line in store_messages(result.info, mask(db)):
        print(line, file=sys.stderr)
    paths = result.save(out, inputs=read + database_files(db))
    print(f"best: {result.best_time * 1e3:.4f} ms after {result.evaluations} measurements ({result.statuses})")
    print(f"configuration: {json.dumps(result.best_config)}; global {result.global_size}, local {result.local_size}")
    print("wrote " + ", ".join(str(p) for p in paths) + f"; measurements in {mask(db)}")
    return 0


def _simulate(args) -> int:
    from .tuner.simulate import SimulationError, main as simulate_main

    import tempfile

    rest = list(args.rest)
    with tempfile.TemporaryDirectory(prefix="imagecl-replay-") as scratch:
        converted: dict[Path, str] = {}  # the CACHE and --seeds-from files that are our databases
        for i, item in enumerate(rest):
            if not item.startswith("-") and (_is_sqlite(item) or is_postgres(item)):
                source = item if is_postgres(item) else Path(item).resolve()
                if source not in converted:
                    converted[source] = _db_to_cache(item, Path(scratch) / f"replay-{len(converted)}.json")
                rest[i] = converted[source]
        try:
            return simulate_main(rest)
        except SimulationError as exc:
            raise ImageCLError(str(exc)) from None


def _store_at(text: str):
    """--db as a store's location: the Path of an SQLite file, or a PostgreSQL URL (str)."""
    from .tuner.address import AddressError, store_location

    try:
        return store_location(text)
    except AddressError as exc:
        raise ArgumentError(str(exc)) from None


def _check_db(db, inputs, what: str = "the database") -> None:
    # only a file can overwrite an input; a server's database is no file of ours
    if isinstance(db, Path):
        check_output(db, inputs, what)


def _is_sqlite(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _db_records(db: str):
    """(run, parameters, measurements) of the largest run in a results database."""
    from .tuner.problem import parameters_from_keys
    from .tuner.store import Store

    with Store(db, readonly=True) as store:
        runs = store.runs()
        if not runs:
            raise ImageCLError(f"{mask(db)}: no measurements")
        best_run, best = None, []
        for run in runs:
            records = list(store.records(run))
            if len(records) > len(best):
                best_run, best = run, records
    names = sorted({k for r in best for k in r.config})
    measurements = [{"config": {n: r.config.get(n, 0) for n in names}, "time_seconds": r.time, "status": r.status,
                     "error": r.error, "times_seconds": r.times, "timestamp": r.timestamp}
                    for r in best if r.status != "invalid_config"]
    params = parameters_from_keys(names, (tuple(m["config"][n] for n in names) for m in measurements))
    return best_run, params, measurements


def _db_to_cache(db: str, path: Path) -> str:
    """Replay from our database: converted to a Kernel Tuner cache file at `path`."""
    from .tuner.formats import write_kernel_tuner_cache

    _, params, measurements = _db_records(db)
    write_kernel_tuner_cache(path, params, measurements)
    return str(path)


def _export(args) -> int:
    from .tuner.formats import t4_metadata_path, write_kernel_tuner_cache, write_t4, write_t4_metadata

    check_output(args.output, database_files(args.db))
    metadata = t4_metadata_path(args.output) if args.format == "t4" else None
    if metadata is not None:
        check_output(metadata, database_files(args.db) + [args.output], "the T4 metadata file")
    run, params, measurements = _db_records(args.db)
    try:
        if args.format == "kernel_tuner":
            write_kernel_tuner_cache(args.output, params, measurements, device_name=run.device,
                                     kernel_name=run.program_name, problem_size=run.problem_size)
        else:
            write_t4(args.output, params, measurements)
            write_t4_metadata(metadata, run.device, run.program_name, run.problem_size,
                              [m["timestamp"] for m in measurements], driver=run.driver,
                              generator=f"imagecl=={__version__}")
    except OSError as exc:
        raise ImageCLError(f"{args.output}: cannot write ({exc.strerror or exc})") from None
    print(f"wrote {len(measurements)} measurements of '{terminal(run.program_name)}' on {terminal(run.device)} "
          f"({terminal(run.problem_size)}) "
          f"to {args.output}" + (f" and its metadata to {metadata}" if metadata is not None else ""))
    return 0


def _import(args) -> int:
    """Other tools' measurements into our store, so `results`, `simulate` and `export` see them.
    Without our program's source, they are filed under the file's name and metadata. Only what
    was measured goes in: every entry left out is counted with its reason."""
    from .progress import Progress, counted
    from .tuner.formats import FormatError, load_json
    from .tuner.importing import plan_import
    from .tuner.store import Record, RunKey, Store, text_hash

    db = _store_at(args.db)
    _check_db(db, [args.file])
    try:
        meta = load_json(args.file, closing=True)  # read once: the measurements and their metadata
    except FormatError as exc:
        raise ImageCLError(str(exc)) from None
    if not isinstance(meta, dict):
        raise ImageCLError(f"{args.file}: neither a Kernel Tuner cache nor a T4 file (not a JSON object)")
    try:
        plan = plan_import(meta)
    except FormatError as exc:
        raise ImageCLError(f"{args.file}: {exc}") from None
    skipped = sum(plan.skipped.values())
    if not plan.measurements:
        raise ImageCLError(f"{args.file}: nothing to import" + (f"; skipped {skipped}: {plan.describe_skipped()}"
                                                                 if skipped else " (no measurements)"))
    name = args.program or str(meta.get("kernel_name") or Path(args.file).stem)
    run = RunKey(text_hash(f"imported:{Path(args.file).resolve()}"), name, str(meta.get("device_name", "unknown")),
                 "imported", _our_problem_size(meta.get("problem_size", "unknown")))
    records = (Record(config, m.status, m.seconds, m.times, error=m.error, timestamp=m.timestamp)
               for config, m in plan.configs())
    with Store(db) as store:
        store.add_many(run, counted(records, len(plan.measurements), Progress("importing", unit="record")))
    print(f"stored {len(plan.measurements)} measurements of '{terminal(name)}' from {args.file} in {mask(db)}")
    if plan.merged:
        print(f"merged {plan.merged} repeated measurements of a configuration (the fastest kept)")
    if skipped:
        print(f"skipped {skipped}: {plan.describe_skipped()}")
    return 0


def _our_problem_size(size) -> str:
    """A Kernel Tuner problem size ([1024, 768], 48) as ours ("1024x768", "48")."""
    if isinstance(size, list) and size and all(isinstance(v, int) and not isinstance(v, bool) for v in size):
        return "x".join(str(v) for v in size)
    if isinstance(size, int) and not isinstance(size, bool):
        return str(size)
    return str(size)


def _adopt(args) -> int:
    """imagecl results --adopt: an older store's unsized records of this device's name and driver
    become this device's (tuner/store.py: a record's device is its name, driver and compute units)."""
    from .runtime.devices import select_device
    from .tuner.store import Store
    from .tuner.target import device_identity

    name, driver, units = device_identity(select_device(args.device))
    with Store(args.db) as store:
        adopted, left = store.adopt_unsized(name, driver, units)
    print(f"{mask(args.db)}: {adopted} record{'s' if adopted != 1 else ''} of {terminal(name)} (driver "
          f"{terminal(driver)}) stored without compute units are now this device's ({units} compute units)"
          + (f"; {left} left as they were: a record of this size has the same configuration" if left else ""))
    return 0


def _results(args) -> int:
    from .tuner.store import Store

    if args.adopt:
        return _adopt(args)
    if args.device is not None:
        raise ArgumentError("--device goes with --adopt")

    if args.plot:
        from .plots import plot_run

        check_output(args.plot, database_files(args.db), "the plot")
        run, params, measurements = _db_records(args.db)
        plot_run(args.plot, f"{run.program_name} on {run.device}, {run.problem_size}", [p.name for p in params],
                 measurements)
        timed = sum(m["time_seconds"] is not None for m in measurements)
        print(f"plotted {len(measurements)} measurements ({timed} timed) of '{terminal(run.program_name)}' to "
              f"{args.plot}", file=sys.stderr)
    with Store(args.db, readonly=True) as store:
        records = list(store.records())
    if args.json:
        print(json.dumps([r.to_json() for r in records], indent=1))
        return 0
    if not records:
        print(f"{mask(args.db)}: no measurements")
        return 0
    runs: dict = {}
    for r in records:  # devices of one name but another size are other devices
        runs.setdefault((r.program_name, r.device, r.compute_units, r.problem_size), []).append(r)
    for (name, device, units, size), rs in runs.items():
        ok = [r for r in rs if r.time is not None]
        statuses = {}
        for r in rs:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        size_of_device = f" ({units} compute units)" if units else ""
        print(f"{terminal(name)} on {terminal(device)}{size_of_device}, size {terminal(size)}: {len(rs)} records "
              f"({', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))})")
        for r in sorted(ok, key=lambda r: r.time)[:5]:
            print(f"  {r.time * 1e3:10.4f} ms  {json.dumps(r.config)}")
    return 0


def _number(name: str, text: str):
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ArgumentError(f"scalar '{name}' needs a number, got '{text}'") from None


def _features(args) -> int:
    from .features import collect

    program = _load(args.file)
    shape = parse_size(args.size) if args.size else None
    if shape is not None and len(shape) != program.info.grid_dims:
        raise ArgumentError(f"--size has {len(shape)} dimensions but the grid of '{program.name}' has "
                            f"{program.info.grid_dims}")
    data = collect(program, args.device, tuple(reversed(shape)) if shape else None, _parse_config(args.config),
                   measure=not args.no_measure)
    print(json.dumps(data, indent=2))
    return 0


def _devices(as_json: bool) -> int:
    import dataclasses

    from .runtime.devices import list_devices

    devices = list_devices()
    if as_json:
        print(json.dumps([dataclasses.asdict(d) for d in devices], indent=1))
        return 0
    for d in devices:
        print(d.describe())
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["simulate"]:
        # simulate parses its own options (imagecl.tuner.simulate); argparse's REMAINDER would
        # refuse an option right after the command, --help included
        args = argparse.Namespace(command="simulate", rest=argv[1:])
    else:
        args = parser.parse_args(argv)
    if getattr(args, "verbose", False):
        os.environ["IMAGECL_BUILD_LOG"] = "1"  # builds happen in child processes too
    try:
        if args.command == "check":
            program = _load(args.file)
            print(f"{args.file}: ok: kernel '{program.name}', grid {program.info.grid_dims}-D, "
                  f"outputs {', '.join(program.outputs)}")
            for note in program.info.unchecked_races:
                print(f"note: not proven race-free: {note}")
            return 0
        if args.command == "compile":
            program = _load(args.file)
            source = program.opencl_source(_parse_config(args.config), device=args.device)
            if args.output:
                check_output(args.output, [args.file, _config_file(args.config)])
                write_atomic(args.output, source)
            else:
                sys.stdout.write(source)
            return 0
        if args.command == "run":
            return _run(args)
        if args.command == "devices":
            return _devices(args.json)
        if args.command == "space":
            return _space(args)
        if args.command == "measure":
            return _measure(args)
        if args.command == "results":
            return _results(args)
        if args.command == "tune":
            return _tune(args)
        if args.command == "tuned":
            return _tuned(args)
        if args.command == "tune-kernel":
            return _tune_kernel(args)
        if args.command == "simulate":
            return _simulate(args)
        if args.command == "export":
            return _export(args)
        if args.command == "import":
            return _import(args)
        if args.command == "features":
            return _features(args)
        if args.command == "serve":
            from .service.serve import main as serve

            return serve(args)
    except ImageCLError as exc:
        from .errors import CompileError

        print(str(exc) if isinstance(exc, CompileError) else f"imagecl: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `imagecl space ... | head`: the reader left, nothing to report
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except KeyboardInterrupt:
        print("imagecl: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        if exc.errno not in (errno.ENAMETOOLONG, errno.ELOOP):
            return _internal_error(exc)
        print(f"imagecl: error: {exc.filename or ''}: {exc.strerror}", file=sys.stderr)  # a path a user gave
        return 1
    except Exception as exc:  # a bug in imagecl, not a user mistake
        return _internal_error(exc)
    return 0  # pragma: no cover


def _internal_error(exc: BaseException) -> int:
    if os.environ.get("IMAGECL_DEBUG"):
        traceback.print_exc()
    print(f"imagecl: internal error: {type(exc).__name__}: {exc}\n"
          "(this is a bug in imagecl; rerun with IMAGECL_DEBUG=1 for details and report it)", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
