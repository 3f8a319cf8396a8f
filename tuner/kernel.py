"""Tuning a hand-written, parameterised OpenCL kernel from Python, as CLTune does.

    k = TunableKernel("matmul.cl", "gemm", global_size=(N, N), local_size=(1, 1))
    k.add_parameter("TS", [8, 16, 32])
    k.add_parameter("WPT", [1, 2, 4])
    k.add_constraint(lambda TS, WPT: TS % WPT == 0)
    k.mul_local_size(["TS", "TS"]); k.div_local_size([1, "WPT"])
    k.set_arguments([np.int32(N), a, b, Output(c)])
    k.set_reference({3: a @ b})                       # or set_reference_kernel(...)
    result = k.tune(device="cpu", strategy="ml", budget=50, store="gemm.db")
    result.best_config, result.best_time, result.source, result.global_size, result.local_size

Parameters reach the kernel as `-D NAME=value` build options. Measuring goes through the same
engine as `.icl` programs (engine.py: build cache and parallel builds, a worker process with a
watchdog, classified failures, the resumable SQLite store) and every strategy of strategies/,
the ML tuner included, searches the space through live.LiveProblem.
"""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import inspect
import json
import keyword
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from ..errors import ArgumentError, ConfigError, ImageCLError, suggestion_suffix
from ..escape import UnsafeNameError, c_identifier, file_component
from ..outputs import check_output, output_folder, write_atomic
from .clsig import kernel_signatures
from .kernelrun import build_input
from .kernelspace import SizeRules, UserConstraint, build_kernel_space, explain_empty
from .store import RunKey, text_hash
from .target import Target, device_identity

_DTYPES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64"}
_SAFE_BUILTINS = {"min": min, "max": max, "abs": abs, "int": int, "bool": bool, "round": round, "divmod": divmod}


@dataclass
class Output:
    """Marks an array argument the kernel writes (and does not read): poisoned before every
    verified launch, compared with the reference after it."""

    array: np.ndarray


@dataclass
class InOut:
    """Marks an array argument the kernel reads and writes: given its initial data again before
    every launch, compared with the reference."""

    array: np.ndarray


class KernelError(ImageCLError):
    """A mistake in a TunableKernel's description (parameters, sizes, arguments, reference)."""


def _read_source(source_or_path: Union[str, os.PathLike]) -> tuple[str, str]:
    """(source text, a name for messages) from OpenCL source text or a path to it."""
    if isinstance(source_or_path, os.PathLike) or (isinstance(source_or_path, str) and "\n" not in source_or_path
                                                   and "(" not in source_or_path):
        path = Path(source_or_path)
        try:
            return path.read_text(), str(path)
        except FileNotFoundError:
            raise KernelError(f"{path}: no such file (pass OpenCL source text or the path of a .cl file)") from None
        except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
            raise KernelError(f"{path}: cannot read the kernel ({type(exc).__name__})") from None
    if not isinstance(source_or_path, str):
        raise KernelError(f"the kernel is OpenCL source text or a path, not {type(source_or_path).__name__}")
    return source_or_path, "<string>"


def _sizes(value: Any, what: str) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    try:
        sizes = tuple(value)
    except TypeError:
        raise KernelError(f"{what} is a tuple of 1 to 3 positive integers, not {value!r}") from None
    if not 1 <= len(sizes) <= 3 or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1
                                       for s in sizes):
        raise KernelError(f"{what} is a tuple of 1 to 3 positive integers, got {value!r}")
    return tuple(int(s) for s in sizes)


class KernelTarget(Target):
    """A TunableKernel bound to a device: what the measurement engine needs (target.py)."""

    def __init__(self, kernel: "TunableKernel", device) -> None:
        from ..space import DeviceLimits

        self.kernel = kernel
        self.device = device
        self.verify = True  # False: variants are timed, not checked against the reference
        self.space = kernel._space(DeviceLimits.of(device))
        # the family part lets measurements at other sizes train the model (live.prior_from_store) and keeps
        # them out of the "other programs" whose best configurations seed a search (live.transfer_sources)
        name, driver, units = device_identity(device)
        self.run = RunKey(f"{kernel.family_hash()}.{kernel.run_hash()}", kernel.kernel_name, name, driver,
                          "x".join(str(s) for s in kernel.rules.global_base), units)

    def unverified(self) -> None:
        """Time variants without checking them, in a run of their own: an unverified measurement
        must never pass for a verified one."""
        self.verify = False
        family, instance = self.run.program_hash.split(".", 1)
        self.run = dataclasses.replace(self.run, program_hash=f"{text_hash(family + ':unverified')}."
                                                              f"{text_hash(instance + ':unverified')}")

    def build_input(self, config: Mapping[str, int]) -> tuple[str, tuple[str, ...]]:
        return build_input(self.kernel.source, self.kernel.build_options, self.kernel._defines(), config)

    def describe_reference(self, candidate: Optional[dict]) -> str:
        spec = (self.kernel._reference or {}).get("kernel") if self.verify else None
        return f"the reference kernel '{spec['kernel_name']}'" if spec else "the reference"

    def worker_setup(self) -> dict:
        k = self.kernel
        return {"kind": "kernel", "source": k.source, "kernel_name": k.kernel_name, "build_options": k.build_options,
                "defines": k._defines(), "rules": k.rules, "arguments": k._arguments,
                "reference": k._reference if self.verify else None, "verify": self.verify,
                "tolerance": k.tolerance}


@dataclass
class KernelTuneResult:
    """The outcome of `TunableKernel.tune`."""

    kernel_name: str
    best_config: dict[str, int]
    best_time: float  # seconds, median of the verified timed launches
    source: str  # the kernel with the best configuration as #defines: builds with no options
    build_options: list[str]  # the same configuration as build options (and the user's options)
    global_size: tuple[int, ...]
    local_size: Optional[tuple[int, ...]]
    evaluations: int
    strategy: str
    device: str
    statuses: dict[str, int] = field(default_factory=dict)  # over every stored measurement of this run
    errors: dict[str, str] = field(default_factory=dict)  # one example message per failure status
    history: list[tuple[dict, Optional[float]]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"kernel": self.kernel_name, "config": self.best_config, "time": self.best_time,
                "global_size": list(self.global_size),
                "local_size": None if self.local_size is None else list(self.local_size),
                "build_options": self.build_options, "evaluations": self.evaluations, "strategy": self.strategy,
                "device": self.device, "statuses": self.statuses}

    def save(self, directory: Union[str, os.PathLike], inputs: Sequence[Union[str, os.PathLike]] = ()) \
            -> tuple[Path, Path]:
        """Write <kernel>.cl (the source with the #defines) and <kernel>.json (sizes, configuration)
        into `directory` (created if missing, in an existing folder), each atomically; neither may
        be one of `inputs`."""
        out = output_folder(directory)
        cl_path, json_path = (check_output(out / name, inputs, "a tuned kernel's file")
                              for name in saved_file_names(self.kernel_name))
        write_atomic(cl_path, self.source)
        write_atomic(json_path, json.dumps({**self.to_json(), "source": cl_path.name}, indent=2) + "\n")
        return cl_path, json_path


def saved_file_names(kernel_name: str) -> tuple[str, str]:
    """The files KernelTuneResult.save writes for a kernel."""
    name = file_component(c_identifier(kernel_name, "the kernel's name"), "a tuned kernel's file name")
    return f"{name}.cl", f"{name}.json"


class TunableKernel:
    """A hand-written OpenCL kernel with tuning parameters (see the module docstring)."""

    def __init__(self, source: Union[str, os.PathLike], kernel_name: str, global_size: Any,
                 local_size: Any = None, build_options: Sequence[str] = ()) -> None:
        self.source, self.filename = _read_source(source)
        try:  # it names the kernel in OpenCL and the files `save` writes
            self.kernel_name = c_identifier(kernel_name, "the kernel's name")
        except UnsafeNameError as exc:
            raise KernelError(str(exc)) from None
        self.signatures = kernel_signatures(self.source)
        if self.signatures and self.kernel_name not in self.signatures:
            raise KernelError(f"{self.filename} has no kernel named '{kernel_name}'"
                              + suggestion_suffix(self.kernel_name, self.signatures)
                              + f" (kernels: {', '.join(self.signatures)})")
        glob = _sizes(global_size, "global_size")
        local = None if local_size is None else _sizes(local_size, "local_size")
        if local is not None and len(local) != len(glob):
            raise KernelError(f"local_size {local} and global_size {glob} have different numbers of dimensions")
        if isinstance(build_options, str):
            build_options = build_options.split()
        self.build_options = [str(o) for o in build_options]
        self.rules = SizeRules(glob, local)
        self.parameters: list[tuple[str, list[int], bool]] = []
        self.constraints: list[UserConstraint] = []
        self.local_memory: Optional[UserConstraint] = None
        self._arguments: Optional[list[dict]] = None
        self._reference: Optional[dict] = None
        self.tolerance = 1e-4

    # ---- the space -------------------------------------------------------------------------------
    @property
    def parameter_names(self) -> list[str]:
        return [p[0] for p in self.parameters]

    def add_parameter(self, name: str, values: Sequence[int], define: bool = True) -> None:
        """A tuning parameter; with `define` (the default) the kernel sees it as the macro NAME,
        else it only shapes the launch sizes (and configurations differing in it share a build)."""
        if not isinstance(name, str) or not name.isascii() or not name.isidentifier() or keyword.iskeyword(name):
            raise KernelError(f"a parameter's name must be a C identifier, got {name!r}")
        if name in self.parameter_names:
            raise KernelError(f"parameter '{name}' is defined twice")
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise KernelError(f"parameter '{name}' needs a list of integer values, got {values!r}")
        values = list(values)
        if not values:
            raise KernelError(f"parameter '{name}' has no values")
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise KernelError(f"parameter '{name}': values are integers, got {v!r}")
        if len(set(int(v) for v in values)) != len(values):
            raise KernelError(f"parameter '{name}' lists a value twice: {values}")
        self.parameters.append((name, [int(v) for v in values], bool(define)))

    def _names_of(self, fn: Callable, names: Optional[Sequence[str]], what: str) -> tuple[str, ...]:
        if names is None:
            try:
                sig = inspect.signature(fn)
            except (TypeError, ValueError):
                raise KernelError(f"{what}: pass the parameter names it takes (names=[...])") from None
            names = list(sig.parameters)
        if isinstance(names, str):
            names = [names]
        for n in names:
            if n not in self.parameter_names:
                raise KernelError(f"{what} uses '{n}', which is not a parameter"
                                  + suggestion_suffix(str(n), self.parameter_names)
                                  + " (add_parameter it first)")
        try:
            inspect.signature(fn).bind(*names)
        except TypeError:
            raise KernelError(f"{what} cannot be called with the {len(names)} values of {list(names)}") from None
        except ValueError:
            pass  # a builtin without a signature: tried when the space is built
        return tuple(names)

    def add_constraint(self, constraint: Union[Callable[..., bool], str], names: Optional[Sequence[str]] = None,
                       description: Optional[str] = None) -> None:
        """A condition every configuration must meet: a function of parameters (named by its
        arguments, or by `names` as in CLTune's AddConstraint), or an expression string such as
        "TS % WPT == 0"."""
        if isinstance(constraint, str):
            fn, names, text = self._expression(constraint)
            description = description or text
        elif callable(constraint):
            fn = constraint
            description = description or _describe(constraint)
        else:
            raise KernelError(f"a constraint is a function or an expression string, not {type(constraint).__name__}")
        names = self._names_of(fn, names, f"constraint '{description}'")
        self.constraints.append(UserConstraint(fn, names, description))

    def _expression(self, text: str) -> tuple[Callable, list[str], str]:
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError as exc:
            raise KernelError(f"constraint {text!r} is not a Python expression: {exc.msg}") from None
        used = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(_SAFE_BUILTINS))
        for n in used:
            if n not in self.parameter_names:
                raise KernelError(f"constraint {text!r} uses '{n}', which is not a parameter"
                                  + suggestion_suffix(n, self.parameter_names))
        code = compile(tree, "<constraint>", "eval")

        def fn(*values):
            return eval(code, {"__builtins__": _SAFE_BUILTINS}, dict(zip(used, values)))  # noqa: S307
        return fn, used, text

    def set_local_memory_usage(self, bytes_of: Callable[..., int], names: Optional[Sequence[str]] = None) -> None:
        """How many bytes of local memory a configuration uses; configurations over the device's
        local memory are rejected statically (CLTune's SetLocalMemoryUsage)."""
        if not callable(bytes_of):
            raise KernelError("set_local_memory_usage needs a function of parameters returning bytes")
        names = self._names_of(bytes_of, names, "the local memory function")
        self.local_memory = UserConstraint(bytes_of, names, _describe(bytes_of))

    def _size_op(self, which: str, op: str, factors: Sequence[Union[str, int]]) -> None:
        what = f"{op}_{which}_size"
        if which == "local" and self.rules.local_base is None:
            raise KernelError(f"{what}: the kernel has no local_size (pass local_size=(1, ...) to multiply it)")
        if isinstance(factors, (str, int)):
            factors = [factors]
        factors = list(factors)
        if len(factors) != self.rules.dims:
            raise KernelError(f"{what} needs {self.rules.dims} factors (one per dimension), got {factors}")
        for f in factors:
            if isinstance(f, str):
                if f not in self.parameter_names:
                    raise KernelError(f"{what}: '{f}' is not a parameter" + suggestion_suffix(f, self.parameter_names))
            elif isinstance(f, bool) or not isinstance(f, (int, np.integer)) or f < 1:
                raise KernelError(f"{what}: a factor is a parameter name or a positive integer, got {f!r}")
        self.rules.ops.append((which, op, tuple(f if isinstance(f, str) else int(f) for f in factors)))

    def mul_global_size(self, factors: Sequence[Union[str, int]]) -> None:
        self._size_op("global", "mul", factors)

    def div_global_size(self, factors: Sequence[Union[str, int]]) -> None:
        self._size_op("global", "div", factors)

    def mul_local_size(self, factors: Sequence[Union[str, int]]) -> None:
        self._size_op("local", "mul", factors)

    def div_local_size(self, factors: Sequence[Union[str, int]]) -> None:
        self._size_op("local", "div", factors)

    def _defines(self) -> list[str]:
        return [name for name, _, define in self.parameters if define]

    def _space(self, limits):
        return build_kernel_space(self.parameters, self.constraints, self.rules, limits, self.local_memory)

    def space(self, device: Any = None):
        """The tuning space on `device` (an imagecl.space.Space: describe(), count_valid(), ...)."""
        from ..runtime.devices import select_device
        from ..space import DeviceLimits

        return self._space(DeviceLimits.of(select_device(device)))

    def sizes(self, config: Mapping[str, int]) -> tuple[tuple[int, ...], Optional[tuple[int, ...]]]:
        """(global size, local size) of a configuration."""
        return self.rules.sizes({**{n: v[0] for n, v, _ in self.parameters}, **dict(config)})

    def source_for(self, config: Mapping[str, int]) -> str:
        """The kernel with `config` as #define lines: builds with the user's options alone."""
        lines = [f"#define {n} {int(config[n])}" for n in self._defines()]
        return "\n".join(lines + [self.source])

    # ---- arguments and reference -------------------------------------------------------------------
    def set_arguments(self, arguments: Sequence[Any]) -> None:
        """The kernel's arguments in order: NumPy arrays (buffers; wrap outputs in Output or
        InOut) and NumPy scalars (np.int32(n), np.float32(x): passed by value)."""
        if isinstance(arguments, (np.ndarray, str)) or not hasattr(arguments, "__iter__"):
            raise ArgumentError("set_arguments takes a list of the kernel's arguments")
        arguments = list(arguments)
        params = self.signatures.get(self.kernel_name)
        if params is not None and len(params) != len(arguments):
            raise ArgumentError(f"kernel '{self.kernel_name}' takes {len(params)} arguments, {len(arguments)} given")
        out = []
        for i, value in enumerate(arguments):
            role = "out" if isinstance(value, Output) else "inout" if isinstance(value, InOut) else "in"
            if role != "in":
                value = value.array
            param = params[i] if params is not None else None
            where = f"argument {i}" + (f" ({param.text})" if param else "")
            if isinstance(value, np.ndarray):
                if value.dtype.name not in _DTYPES:
                    raise ArgumentError(f"{where}: arrays of {value.dtype} are not supported "
                                        f"(use one of {', '.join(sorted(_DTYPES))})")
                if value.size == 0:
                    raise ArgumentError(f"{where}: the array is empty")
                if param is not None and not param.pointer:
                    raise ArgumentError(f"{where}: the kernel takes a value here, not an array")
                if param is not None and param.element and param.element != value.dtype.name:
                    raise ArgumentError(f"{where}: the kernel reads {param.element} elements, the array holds "
                                        f"{value.dtype} (convert with .astype(np.{param.element}))")
                if param is not None and role != "in" and (param.const or param.address == "constant"):
                    raise ArgumentError(f"{where} is marked {role} but the kernel declares it read-only")
                out.append({"kind": "array", "data": np.ascontiguousarray(value).copy(), "role": role})
            elif isinstance(value, np.generic) and not isinstance(value, np.bool_):
                if role != "in":
                    raise ArgumentError(f"{where}: only arrays can be outputs")
                if param is not None and param.pointer:
                    raise ArgumentError(f"{where}: the kernel takes a buffer here, not a scalar")
                if param is not None and param.element and param.element != value.dtype.name:
                    raise ArgumentError(f"{where}: the kernel takes {param.element}, got {value.dtype} "
                                        f"(pass np.{param.element}(...))")
                out.append({"kind": "scalar", "value": value})
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                raise ArgumentError(f"{where}: a Python {type(value).__name__} does not say its C type; pass a "
                                    f"NumPy scalar such as np.int32({value!r}) or np.float32({value!r})")
            else:
                raise ArgumentError(f"{where}: expected a NumPy array or scalar, got {type(value).__name__}")
        self._arguments = out
        self._reference = None  # a reference is given by argument index: set it again for these arguments

    def _array_argument(self, index: Any, what: str) -> dict:
        if self._arguments is None:
            raise ArgumentError(f"{what}: call set_arguments first")
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(self._arguments):
            raise ArgumentError(f"{what}: {index!r} is not an argument index (0..{len(self._arguments) - 1})")
        arg = self._arguments[index]
        if arg["kind"] != "array":
            raise ArgumentError(f"{what}: argument {index} is a scalar, not an array")
        return arg

    def set_reference(self, outputs: Mapping[int, np.ndarray], tolerance: float = 1e-4) -> None:
        """Expected contents of output arguments, by argument index. An argument not marked
        Output/InOut becomes an Output. Floats match within `tolerance` (relative to the largest
        expected value, at least 1); integers exactly."""
        self._check_tolerance(tolerance)
        if not isinstance(outputs, Mapping) or not outputs:
            raise ArgumentError("set_reference takes {argument index: expected array}")
        checked = {}
        for index, expected in outputs.items():
            arg = self._array_argument(index, "set_reference")
            data = arg["data"]
            expected = np.asarray(expected)
            if expected.size != data.size:
                raise ArgumentError(f"the reference of argument {index} has {expected.size} elements, the argument "
                                    f"{data.size}")
            converted = expected.astype(data.dtype).reshape(data.shape)
            if data.dtype.kind != "f" and not np.array_equal(converted, expected.reshape(data.shape)):
                raise ArgumentError(f"the reference of argument {index} does not fit its dtype {data.dtype}")
            if arg["role"] == "in":
                arg["role"] = "out"
            checked[int(index)] = converted
        self._reference = {"outputs": checked}
        self.tolerance = float(tolerance)

    def set_reference_kernel(self, source: Union[str, os.PathLike], kernel_name: str, global_size: Any,
                             local_size: Any = None, defines: Optional[Mapping[str, int]] = None,
                             build_options: Sequence[str] = (), tolerance: float = 1e-4) -> None:
        """A reference kernel (CLTune's SetReference), run on the same arguments: every
        Output/InOut argument it leaves must be reproduced by each variant, and the Output
        elements it leaves unwritten must be left unwritten (runtime/verify.py)."""
        self._check_tolerance(tolerance)
        text, name = _read_source(source)
        sigs = kernel_signatures(text)
        if sigs and kernel_name not in sigs:
            raise KernelError(f"{name} has no kernel named '{kernel_name}'" + suggestion_suffix(kernel_name, sigs))
        glob = _sizes(global_size, "the reference's global_size")
        local = None if local_size is None else _sizes(local_size, "the reference's local_size")
        if local is not None and (len(local) != len(glob) or any(g % v for g, v in zip(glob, local))):
            raise KernelError(f"the reference's local_size {local} does not divide its global_size {glob}")
        if self._arguments is None:
            raise ArgumentError("set_reference_kernel: call set_arguments first")
        if not any(a["kind"] == "array" and a["role"] != "in" for a in self._arguments):
            raise ArgumentError("set_reference_kernel: mark the kernel's outputs with Output(...) or InOut(...) "
                                "in set_arguments")
        options = [str(o) for o in (build_options.split() if isinstance(build_options, str) else build_options)]
        for k in defines or {}:  # each becomes one -D option: a space or '=' in a name would add options of its own
            if not isinstance(k, str) or not k.isascii() or not k.isidentifier():
                raise KernelError(f"set_reference_kernel: a define's name must be a C identifier, got {k!r}")
        options += [f"-D{k}={int(v)}" for k, v in (defines or {}).items()]
        self._reference = {"kernel": {"source": text, "kernel_name": str(kernel_name), "options": tuple(options),
                                      "global": glob, "local": local}}
        self.tolerance = float(tolerance)

    @staticmethod
    def _check_tolerance(tolerance: float) -> None:
        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
            raise ArgumentError(f"tolerance is a number in [0, 1), got {tolerance!r}")

    def _reference_hash(self) -> Optional[str]:
        ref = self._reference
        if ref is None:
            return None
        if "outputs" in ref:
            h = hashlib.sha256()
            for i, r in sorted(ref["outputs"].items()):
                h.update(f"{i}:{r.dtype}:{r.shape}".encode())
                h.update(np.ascontiguousarray(r).tobytes())
            return h.hexdigest()[:16]
        return text_hash(json.dumps(ref["kernel"], default=str))

    def run_hash(self) -> str:
        """What makes measurements of this kernel comparable: source, options, sizes, arguments and
        the reference (a corrected reference must not reuse verdicts on the old one)."""
        return text_hash(json.dumps(self._identity(with_size=True), default=str))

    def family_hash(self) -> str:
        """What stays the same when only the problem's size changes: the source, options and
        launch rules, the arguments' kinds and types (not the global size, the arrays' shapes, the
        scalars' values or the reference's data, which follow the size) and the tolerance."""
        return text_hash(json.dumps(self._identity(with_size=False), default=str))

    def _identity(self, with_size: bool) -> dict:
        """The description `run_hash` (with the size-dependent parts) and `family_hash` (without
        them) hash; the keys keep one order, which the stored hashes depend on."""
        args = []
        for a in self._arguments or []:
            arg = {"kind": a["kind"], "role": a.get("role"),
                   "dtype": str(a["data"].dtype if a["kind"] == "array" else a["value"].dtype)}
            if with_size:
                arg["shape"] = list(a["data"].shape) if a["kind"] == "array" else None
                arg["value"] = a["value"].item() if a["kind"] == "scalar" else None
            args.append(arg)
        out = {"source": self.source, "kernel": self.kernel_name, "options": self.build_options,
               "defines": self._defines()}
        if with_size:
            out["global"] = self.rules.global_base
        out.update({"local": self.rules.local_base, "ops": self.rules.ops, "args": args})
        if with_size:
            out["reference"] = self._reference_hash()
        out["tolerance"] = self.tolerance
        return out

    # ---- tuning ------------------------------------------------------------------------------------
    def target(self, device: Any = None) -> KernelTarget:
        """This kernel on a device, for the measurement engine (engine.Measurer)."""
        from ..runtime.devices import select_device

        if self._arguments is None:
            raise ArgumentError("call set_arguments before tuning")
        return KernelTarget(self, select_device(device))

    def tune(self, device: Any = None, strategy: Union[str, Callable] = "hybrid", budget: Optional[int] = None,
             store: Union[str, os.PathLike, None] = None, seed: int = 0, timeout: float = 60.0, repeats: int = 3,
             verify: bool = True, strategy_options: Optional[Mapping[str, Any]] = None,
             progress: Optional[Callable[[dict, Optional[float]], None]] = None,
             confirm: int = 4, transfer: bool = True) -> KernelTuneResult:
        """Search the space with `strategy` (hybrid, the default; ml, random, annealing, pso,
        exhaustive) measuring at most `budget` configurations (default: every valid one for
        exhaustive, else min(100, all)). Measurements go to the SQLite `store` (a temporary one if
        None): a rerun with the same store measures nothing twice. `confirm`: the search's
        fastest configurations timed again with 15 launches each, in 5 rounds that take them in
        turn, the fastest of them kept (0: the search's pick).

        A shared store also feeds the strategies that take it (hybrid, ml), as `imagecl tune`
        does: this kernel's measurements at other global sizes train the model (`prior`), and
        with `transfer` the best configurations of other kernels and programs tuned on this
        device are measured first (`seeds`, their shared parameters only); `info["prior"]` and
        `info["transfer"]` say what was taken. A "prior" or "seeds" in `strategy_options` is
        used instead of the store's."""
        from ..runtime.isolated import check_timeout
        from .engine import MeasureOptions, Measurer
        from .session import SessionOptions, check_strategy, resolve, run_session
        from .address import AddressError, store_location
        from .store import Store

        timeout = check_timeout(timeout)

        if self._reference is None and verify:
            raise ArgumentError("no reference to verify the variants against: call set_reference(...) or "
                                "set_reference_kernel(...), or pass verify=False to time unverified variants")
        # a kernel's first values are no variant the user asked to compare with: no baseline
        options = SessionOptions(strategy=strategy, budget=budget, seed=seed, confirm=confirm, transfer=transfer,
                                 strategy_options=dict(strategy_options or {}), baseline=False,
                                 on_measure=[] if progress is None else [lambda m: progress(m.config, m.seconds)])
        check_strategy(options)  # before the device is opened
        target = self.target(device)
        if not verify:
            target.unverified()
        space = target.space
        if space.count_valid() == 0:
            raise ConfigError(f"no configuration of '{self.kernel_name}' is valid on {space.limits.name}:\n"
                              + explain_empty(space))
        resolve(options, space)  # a bad budget, before the store is opened
        temp = tempfile.TemporaryDirectory(prefix="imagecl-kernel-") if store is None else None
        try:
            db = Path(temp.name) / "measurements.db" if temp else store_location(store)
        except AddressError as exc:
            raise ArgumentError(str(exc)) from None
        try:
            with Store(db) as results, Measurer(target, None, results, options=MeasureOptions(
                    timeout=timeout, repeats=repeats, prebuild=False)) as measurer:
                session = run_session(measurer, options)
                records = list(results.records(target.run))
        finally:
            if temp is not None:
                temp.cleanup()
        name, history, evaluations, info = session.strategy, session.history, session.evaluations, session.info
        best_config, best_time = session.best_config, session.best_time
        statuses: dict[str, int] = {}
        errors: dict[str, str] = {}
        for r in records:
            statuses[r.status] = statuses.get(r.status, 0) + 1
            if r.error and r.status not in errors:
                errors[r.status] = r.error
        if best_config is None or best_time is None:
            hint = ""
            if statuses.get("wrong_output") and any(a.get("role") == "out" for a in self._arguments or []):
                hint = ("\nnote: outputs are poisoned before each checked launch; an argument the kernel also reads "
                        "must be marked InOut(...)")
            shown = "\n".join(f"  {s}: {' '.join(e.split())[:400]}" for s, e in errors.items())
            raise ImageCLError(f"no configuration of '{self.kernel_name}' ran correctly ({statuses}):\n{shown}{hint}")
        full = space.complete(best_config)
        glob, local = target.kernel.rules.sizes(full)
        options = list(target.build_input(full)[1])
        return KernelTuneResult(self.kernel_name, full, best_time, self.source_for(full), options, glob, local,
                                evaluations, name, target.device.name.strip(), statuses, errors,
                                [(dict(c), t) for c, t in history], dict(info))


def _describe(fn: Callable) -> str:
    """A constraint's text for messages: its lambda's source when it can be read."""
    try:
        text = inspect.getsource(fn).strip()
    except (OSError, TypeError):
        return getattr(fn, "__name__", "constraint")
    if "lambda" in text:
        text = text[text.index("lambda"):]
        depth, body = 0, text.index(":")
        for i, ch in enumerate(text):  # cut at the end of the lambda (a closing bracket or comma outside it)
            depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
            if depth < 0 or (depth == 0 and ch == "," and i > body):
                text = text[:i]
                break
        return text.strip()
    return getattr(fn, "__name__", "constraint")


__all__ = ["TunableKernel", "KernelTuneResult", "KernelTarget", "Output", "InOut", "KernelError"]
