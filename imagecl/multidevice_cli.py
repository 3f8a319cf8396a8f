"""`imagecl run --devices A,B` and `imagecl tune --devices A,B`: one grid split across devices
(runtime/multidevice.py), its split tuned (runtime/split_tuning.py)."""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import sys
import time
from typing import Any, Callable, Optional

from .errors import ArgumentError


def _integer_at_least(minimum: int, wanted: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"needs {wanted}, got '{text}'")
        return value

    return parse


_positive = _integer_at_least(1, "a positive integer")
_non_negative = _integer_at_least(0, "an integer >= 0")


def add_options(run: argparse.ArgumentParser, tune: argparse.ArgumentParser) -> None:
    run.add_argument("--devices", metavar="A,B,...",
                     help="split the grid into bands across these devices (indices or name fragments), at once")
    run.add_argument("--shares", metavar="F,G,...",
                     help="with --devices: each device's fraction of the grid's rows (default: the split "
                          "`tune --devices` recorded, else equal)")
    run.add_argument("--iterate", type=_non_negative, metavar="N",
                     help="run N steps, each step's output its next step's input, the data kept on the device(s)")
    run.add_argument("--h", type=_positive, metavar="H",
                     help="with --iterate and --devices: steps between halo exchanges (default: the tuned h, else 1)")
    tune.add_argument("--devices", metavar="A,B,...",
                      help="tune each device's own variant (with --budget each), then the split across them: "
                           "which take part and each one's share, recorded for prog(..., devices=[...])")
    tune.add_argument("--iterate", type=_positive, metavar="N",
                      help="with --devices: tune the split for N iterated steps, the halo depth h too")


def _float_list(text: str, what: str) -> list[float]:
    try:
        return [float(t) for t in text.split(",")]
    except ValueError:
        raise ArgumentError(f"{what} takes comma-separated numbers, got '{text}'") from None


def run_split(program: Any, values: dict, args: argparse.Namespace) -> dict:
    """The outputs of `imagecl run` with --devices or --iterate; prints where it ran and its time."""
    from .runtime import multidevice

    if args.devices and args.device:
        raise ArgumentError("--device and --devices name where to run: pass one of them")
    if args.timeout is not None:
        raise ArgumentError("--timeout does not apply to runs with --devices or --iterate (they run in this process)")
    if (args.shares or args.h) and not args.devices:
        raise ArgumentError("--shares and --h split a run across devices: pass --devices too")
    if args.h and args.iterate is None:
        raise ArgumentError("--h is the halo depth of an iterated run: pass --iterate N too")
    devices = args.devices if args.devices else [args.device]
    shares = _float_list(args.shares, "--shares") if args.shares else None
    config = _config(args)
    start = time.perf_counter()
    if args.iterate is not None:
        outputs = program.iterate(args.iterate, devices=devices, shares=shares, h=args.h, config=config, **values)
    else:
        outputs, ran = multidevice.run(program, values, devices, shares, config)
        for device, band in zip(ran.devices, ran.bands):
            print(f"{device.name.strip()}: rows {band[0]}..{band[1]}")
    print(f"wall time: {(time.perf_counter() - start) * 1e3:.3f} ms", file=sys.stderr)
    return outputs


def _config(args: argparse.Namespace) -> Any:
    from .cli import _parse_config

    return _parse_config(args.config)


def tune_split(args: argparse.Namespace, tune_one: Callable[[argparse.Namespace], int]) -> int:
    """`imagecl tune --devices A,B`: each device's own tune (its own folder under -o), then the
    split, recorded for prog(..., devices=...) and written to -o DIR/split.json."""
    from . import splits
    from .cli import _load, _output_folder, _synthetic_inputs, parse_size
    from .outputs import check_output, write_atomic
    from .runtime import multidevice, split_tuning, system_model

    if not args.devices:
        raise ArgumentError("--iterate tunes a split across devices: pass --devices too")
    if args.device:
        raise ArgumentError("--device and --devices name where to tune: pass one of them")
    devices = multidevice.resolve_devices(args.devices)
    program = _load(args.file)
    multidevice.check_splittable(program.info)
    if args.iterate is not None:
        multidevice.feed_pairs(program.info, None)
    shape = parse_size(args.size)
    out = _output_folder(args.output, [args.file])
    check_output(out / "split.json", [args.file], "the split's description")  # before any tuning
    for i, device in enumerate(devices):
        one = copy.copy(args)
        one.devices, one.iterate, one.device, one.output = None, None, _index_of(device), str(out / f"device{i}")
        print(f"== device {i}: {device.name.strip()}", file=sys.stderr)
        code = tune_one(one)
        if code:
            return code
    one = copy.copy(args)
    one.device = _index_of(devices[0])
    arguments, _ = _synthetic_inputs(program, shape, one)
    if args.iterate is not None:
        for written in program.info.outputs:
            arguments.pop(written, None)
    print(f"== the split across {len(devices)} devices", file=sys.stderr)
    log = lambda line: print(line, file=sys.stderr)  # noqa: E731
    # calibrated once per device set, around the size tuned here (at most 4096 x 4096: the devices'
    # sharing of the host's memory shows at such sizes, BENCHMARKS.md "Two GPUs")
    system = system_model.load_or_calibrate(devices, log=log, instances=system_model.default_instances(
        [min(v, 4096) for v in tuple(reversed(shape))[:2]], args.iterate or 16))
    found = split_tuning.tune(program, arguments, devices, iterate=args.iterate, log=log,
                              system=system.terms_for(devices))
    best = found.best
    singles = [t for t in found.measured if sum(1 for s in t.shares if s > 0) == 1]
    best_single = min(t.seconds for t in singles)
    predicted = next((t for t in found.measured if t.shares == [float(s) for s in found.predicted]), None)
    size = tuple(reversed(shape))
    path = splits.record(program, devices, size, best.shares, best.h, best.seconds)
    report = {
        "program": program.name, "size": list(size), "iterate": args.iterate,
        "devices": [d.name.strip() for d in devices],
        "profiles": [{"device": p.device.name.strip(), "wall_s": p.wall, "kernel_s": p.kernel,
                      "transfer_s": p.transfer, "rows": p.rows} for p in found.profiles],
        "system_model": {"terms": dataclasses.asdict(system.terms), "fit_error": system.fit_error},
        "predicted_shares": found.predicted, "predicted_model_s": found.predicted_model_seconds,
        "predicted_measured_s": predicted.seconds if predicted else None,
        "best": {"shares": best.shares, "h": best.h, "seconds": best.seconds},
        "best_single_s": best_single,
        "measured": [{"shares": t.shares, "h": t.h, "seconds": t.seconds, "runs": t.runs} for t in found.measured],
    }
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "split.json", json.dumps(report, indent=1) + "\n")
    print("split: " + ", ".join(f"{d.name.strip()} {s:.3f}" for d, s in zip(devices, best.shares))
          + (f", h {best.h}" if best.h else ""))
    print(f"time: {best.seconds * 1e3:.3f} ms; best single device {best_single * 1e3:.3f} ms "
          f"({best_single / best.seconds:.2f}x); predicted split "
          + (f"{predicted.seconds * 1e3:.3f} ms ({best.seconds / predicted.seconds:.0%} of the best's speed)"
             if predicted else "not measured"))
    print(f"recorded in {path}; prog(..., devices=[...]) uses it for {'x'.join(map(str, size))}")
    return 0


def _index_of(device: Any) -> Optional[str]:
    from .runtime.devices import _all_devices

    return str(list(_all_devices()).index(device))
