"""Fuzzing the checker: every program ends in success or a located error, and every program
the checker accepts builds.

Cases come from two sources, both deterministic for a seed:
- mutations of the examples (token deletion, duplication and replacement with reserved and
  predefined names, literal swaps, consistent renaming, nest wrapping, added pragmas and
  helper functions), and
- programs generated from a small grammar of the language, with names drawn from a pool that
  mixes ordinary names with OpenCL's, the drivers' and the compiler's own.

Each case is checked in-process under a time limit. A CompileError with a line and column is
a clean rejection; any other exception is an internal error. An accepted program is built on
an OpenCL device (PoCL in CI): its naive variant and one random configuration; a build that
fails is a wrong acceptance.

    python scripts/fuzz.py --cases 2000 --seed 1 [--device pthread] [--no-build]
"""
from __future__ import annotations

import argparse
import json
import random
import re
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TIME_LIMIT_S = 10.0
BUILD_LIMIT_S = 300.0  # a slow build on a loaded machine is not a failure; a stuck one is

# names a program should be able to use, or be told clearly that it cannot
RESERVED_NAMES = (
    "main", "defined", "kernel", "local", "global", "constant", "private", "image2d_t", "sampler_t",
    "float8", "half", "sin", "read_imagef", "get_global_id", "vec_step", "M_PI", "INT_MAX", "MAXFLOAT",
    "cl_khr_fp64", "cl_khr_fp16", "cl_amd_fp64", "CL_VERSION_1_2", "POCL_DEVICE_ADDRESS_BITS",
    "__OPENCL_VERSION__", "__OPENCL_C_VERSION__", "__ENDIAN_LITTLE__", "__IMAGE_SUPPORT__",
    "FP_FAST_FMA", "FP_FAST_FMAF", "__FILE__", "__LINE__", "_x", "imcl_x", "imcl_v_x_",
    "idx", "idy", "idz", "interior", "vector_x", "wg_x", "px_y", "interleaved", "image_input",
    "local_filter", "constant_k", "unroll_f_l3", "x", "y", "w", "h", "img", "n", "r", "period", "s0",
    "lo", "xyz", "int", "float", "if", "return", "Image", "true", "uchar4", "auto", "register",
)
ORDINARY_NAMES = ("a", "b", "acc", "sum", "tmp", "value", "k", "i", "j", "weight", "total", "gain")
LITERALS = (
    "0", "1", "-1", "07", "08", "09", "010", "0x10", "0xFFFFFFFF", "0x100000000", "2147483647",
    "2147483648", "4294967295u", "4294967296", "1" * 60, "1" * 5000, "0.5f", "1e38f", "1e39f",
    "3.4028235e38f", "3.5e38f", "0x1p99999", "0x1p-99999", "1e-50f", "0x1.8p3", "'a'", "'\\n'",
    "1." + "0" * 400, "true", "false",
)
OPERATORS = ("+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "&&", "||", "<", ">=", "==", "!=")
PRAGMAS = ("image_mem", "local_mem", "constant_mem", "constant_mem_cand", "boundary_cond", "tunable")

_TOKEN = re.compile(
    r"//[^\n]*|/\*.*?\*/|#[^\n]*|\s+|[A-Za-z_]\w*|0[xX][0-9a-fA-F.]+(?:[pP][+-]?\d+)?[fFuU]?"
    r"|\d+\.?\d*(?:[eE][+-]?\d+)?[fFuU]?|\.\d+(?:[eE][+-]?\d+)?[fF]?|'(?:\\.|[^'])'"
    r"|<<=|>>=|[-+*/%&|^!=<>]=|&&|\|\||\+\+|--|<<|>>|.",
    re.S,
)


@dataclass
class Case:
    name: str
    source: str


@dataclass
class Outcome:
    kind: str  # accepted | error | internal | hang | wrong
    detail: str = ""
    seconds: float = 0.0


@dataclass
class Report:
    counts: Counter = field(default_factory=Counter)
    failures: list[tuple[Case, Outcome]] = field(default_factory=list)
    slowest: float = 0.0

    def summary(self) -> dict:
        c = self.counts
        return {"tried": c["tried"], "clean_error": c["error"], "internal_error": c["internal"],
                "hang": c["hang"], "accepted": c["accepted"], "builds": c["builds"], "wrong": c["wrong"],
                "slowest_check_s": round(self.slowest, 2)}


# ---- mutations of the examples ---------------------------------------------------------------


def _tokens(source: str) -> list[str]:
    return _TOKEN.findall(source)


def _code_indices(tokens: list[str]) -> list[int]:
    return [i for i, t in enumerate(tokens) if t.strip() and not t.startswith(("//", "/*", "#"))]


def _idents(tokens: list[str]) -> list[int]:
    return [i for i, t in enumerate(tokens) if re.fullmatch(r"[A-Za-z_]\w*", t)]


def _numbers(tokens: list[str]) -> list[int]:
    return [i for i, t in enumerate(tokens) if re.match(r"\d|\.\d|'", t)]


def _kernel_params(source: str) -> list[str]:
    sigs = re.findall(r"void\s+\w+\s*\(([^)]*)\)", source)
    return re.findall(r"(\w+)\s*(?:\[[^\]]*\])*\s*(?:,|$)", sigs[-1]) if sigs else []


def _declared(source: str) -> list[str]:
    names = re.findall(r"\b(?:float|int|uint|uchar|bool|double|float4|int2|void)\s+([A-Za-z_]\w*)", source)
    names += re.findall(r">\s*([A-Za-z_]\w*)", source)
    return sorted(set(names) - {"float", "int"})


def mutate(source: str, rng: random.Random) -> tuple[str, str]:
    """One mutation of `source`: (what was done, the new source)."""
    tokens = _tokens(source)
    code, idents, numbers = _code_indices(tokens), _idents(tokens), _numbers(tokens)
    kind = rng.choice(("delete", "duplicate", "replace_name", "rename", "literal", "swap_names", "wrap",
                       "pragma", "helper", "rename", "literal", "pragma"))
    if kind == "delete" and code:
        i = rng.choice(code)
        tokens[i] = ""
    elif kind == "duplicate" and code:
        i = rng.choice(code)
        tokens[i] = tokens[i] + " " + tokens[i]
    elif kind == "replace_name" and idents:
        tokens[rng.choice(idents)] = rng.choice(RESERVED_NAMES)
    elif kind == "rename":
        names = _declared(source)
        if names:
            old, new = rng.choice(names), rng.choice(RESERVED_NAMES + ORDINARY_NAMES)
            tokens = [new if t == old else t for t in tokens]
            # the pragmas name images and arrays too
            tokens = [re.sub(rf"\b{re.escape(old)}\b", new, t) if t.startswith("#") else t for t in tokens]
            kind = f"rename {old}->{new}"
    elif kind == "literal" and numbers:
        tokens[rng.choice(numbers)] = rng.choice(LITERALS)
    elif kind == "swap_names" and len(idents) > 1:
        i, j = rng.sample(idents, 2)
        tokens[i], tokens[j] = tokens[j], tokens[i]
    elif kind == "wrap":
        return kind, _wrap(source, rng)
    elif kind == "pragma":
        return kind, _add_pragma(source, rng)
    elif kind == "helper":
        name = rng.choice(RESERVED_NAMES + tuple(_kernel_params(source)) + ORDINARY_NAMES)
        helper = f"float {name}(float v) {{ return v * 2.0f; }}\n"
        at = source.find("void ")
        body = source[:at] + helper + source[at:]
        # call it from the kernel, where its name may be hidden by a parameter or grid index
        return f"helper {name}", re.sub(r"(\[idx\]\[idy\](?:\[idz\])?\s*=\s*)", rf"\1{name}(1.0f) + ", body, count=1)
    return kind, "".join(tokens)


def _wrap(source: str, rng: random.Random) -> str:
    depth = rng.choice((2, 8, 30, 63, 64, 65, 100, 300, 600))
    form = rng.choice(("block", "for", "if", "paren", "call", "cast", "chain"))
    m = re.search(r"(\w+\[idx\]\[idy\](?:\[idz\])?)\s*=\s*([^;]+);", source)
    if not m:
        return source
    target, value = m.group(1), m.group(2)
    if form == "block":
        stmt = "{" * depth + f"{target} = {value};" + "}" * depth
    elif form == "for":
        stmt = "".join(f"for (int q{k} = 0; q{k} < 1; q{k}++) " for k in range(depth)) + f"{target} = {value};"
    elif form == "if":
        stmt = "if (idx >= 0) " * depth + f"{target} = {value};"
    elif form == "paren":
        stmt = f"{target} = " + "(1.0f * " * depth + f"({value})" + ")" * depth + ";"
    elif form == "call":
        stmt = f"{target} = " + "fabs(" * depth + f"({value})" + ")" * depth + ";"
    elif form == "cast":
        stmt = f"{target} = " + "(float)(" * depth + f"({value})" + ")" * depth + ";"
    else:
        stmt = f"{target} = ({value})" + " + 0.5f" * depth * 3 + ";"
    return source[: m.start()] + stmt + source[m.end():]


def _add_pragma(source: str, rng: random.Random) -> str:
    which = rng.choice(PRAGMAS)
    params = _kernel_params(source) or ["x"]
    target = rng.choice(params + list(RESERVED_NAMES[:5]))
    if which == "tunable":
        name = rng.choice(RESERVED_NAMES + ORDINARY_NAMES)
        values = rng.choice(("1, 2", "0, 1", "1, 99999999999999999999999", "-1, 2147483648", "09", "4, 4"))
        line = f"#pragma imcl tunable({name}: {values})"
    elif which == "boundary_cond":
        modes = ('constant', 'clamped', 'mirror', 'wrap', 'reflect', 'x', 'constant(2.5)', 'constant(-3)',
                 'constant(1e99)', 'constant(x)', 'reflect(1)', 'constant(')
        line = f"#pragma imcl boundary_cond({target}:{rng.choice(modes)})"
    else:
        line = f"#pragma imcl {which}({target})"
    return line + "\n" + source


# ---- programs from the grammar ----------------------------------------------------------------


class _Generator:
    """Random programs of the language, mostly valid, with names from a mixed pool."""

    def __init__(self, rng: random.Random) -> None:
        from imagecl.ir.names import reserved_word

        self.rng = rng
        # names the language allows (however odd in OpenCL); a keyword now and then
        usable = [n for n in RESERVED_NAMES if reserved_word(n) is None]
        self.pool = list(ORDINARY_NAMES) * 2 + usable

    def name(self, taken: set[str]) -> str:
        for _ in range(20):
            n = self.rng.choice(RESERVED_NAMES if self.rng.random() < 0.02 else self.pool)
            if n not in taken:
                taken.add(n)
                return n
        n = f"v{len(taken)}"
        taken.add(n)
        return n

    def program(self) -> str:
        rng = self.rng
        taken: set[str] = {"idx", "idy", "idz", "acc"}
        src, out, scale = self.name(taken), self.name(taken), self.name(taken)
        kernel = self.name(taken)
        lines = [f"#pragma imcl grid({src}, {out})"]
        mode = rng.choice(("constant", "clamped", "mirror", "wrap", "reflect", "constant(0.5)"))
        lines.append(f"#pragma imcl boundary_cond({src}:{mode})")
        tunable = None
        if rng.random() < 0.4:
            tunable = self.name(taken)
            lines.append(f"#pragma imcl tunable({tunable}: {rng.choice(('1, 2', '1, 3, 5', '2, 4'))})")
        helper = None
        if rng.random() < 0.4:
            helper = self.name(taken)
            arg = self.name(set(taken))
            lines.append(f"float {helper}(float {arg}) {{ return {arg} * 0.5f + 1.0f; }}")
        arrays = []
        params = f"Image<float> {src}, Image<float> {out}, float {scale}"
        if rng.random() < 0.4:
            arr = self.name(taken)
            arrays.append(arr)
            params += f", float {arr}[3]"
        self.scope = {"reads": src, "scale": scale, "tunable": tunable, "helper": helper, "arrays": arrays,
                      "locals": []}
        body = [self.statement(taken, rng.randint(1, 4)) for _ in range(rng.randint(1, 5))]
        value = self.expr(rng.randint(1, 4))
        lines.append(f"void {kernel}({params}) {{")
        lines.append("    float acc = 0.0f;")
        self.scope["locals"].append("acc")
        lines.extend("    " + s for s in body)
        lines.append(f"    {out}[idx][idy] = acc + {value};")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def nested(self, taken: set[str], depth: int) -> str:
        """A statement in braces: what it declares goes out of scope after it."""
        saved = list(self.scope["locals"])
        text = self.statement(taken, depth)
        self.scope["locals"] = saved
        return text

    def statement(self, taken: set[str], depth: int) -> str:
        rng = self.rng
        choice = rng.choice(("assign", "decl", "if", "for", "while", "block") if depth > 0 else ("assign", "decl"))
        if choice == "assign":
            return f"acc {rng.choice(('=', '+=', '-=', '*='))} {self.expr(2)};"
        if choice == "decl":
            n = self.name(taken)
            stmt = f"float {n} = {self.expr(2)};"
            self.scope["locals"].append(n)
            return stmt + f" acc += {n};"
        if choice == "if":
            return f"if ({self.expr(1)} > {self.expr(1)}) {{ {self.nested(taken, depth - 1)} }} else {{ {self.nested(taken, depth - 1)} }}"
        if choice == "for":
            n = self.name(taken)
            lo, hi = rng.randint(-3, 0), rng.randint(0, 3)
            saved = list(self.scope["locals"])
            self.scope["locals"].append(f"(float){n}")
            body = self.nested(taken, depth - 1)
            self.scope["locals"] = saved
            return f"for (int {n} = {lo}; {n} <= {hi}; {n}++) {{ {body} }}"
        if choice == "while":
            return "while (acc < 4.0f) { acc += 1.0f; if (acc > 2.0f) break; }"
        return "{ " + self.nested(taken, depth - 1) + " }"

    def expr(self, depth: int) -> str:
        rng = self.rng
        s = self.scope
        leaves = [f"{s['reads']}[idx + {rng.randint(-2, 2)}][idy + {rng.randint(-2, 2)}]", s["scale"],
                  rng.choice(("0.5f", "2.0f", "1", "3")), *s["locals"]]
        if s["tunable"]:
            leaves.append(f"(float){s['tunable']}")
        if s["arrays"]:
            leaves.append(f"{s['arrays'][0]}[{rng.randint(0, 2)}]")
        if depth <= 0 or rng.random() < 0.3:
            return rng.choice(leaves)
        kind = rng.choice(("bin", "bin", "call", "ternary", "helper", "neg"))
        if kind == "bin":
            return f"({self.expr(depth - 1)} {rng.choice(('+', '-', '*'))} {self.expr(depth - 1)})"
        if kind == "call":
            f = rng.choice(("fabs", "sqrt", "fmin", "fmax", "exp"))
            args = ", ".join(self.expr(depth - 1) for _ in range(2 if f in ("fmin", "fmax") else 1))
            return f"{f}({args})"
        if kind == "ternary":
            return f"({self.expr(depth - 1)} > 0.0f ? {self.expr(depth - 1)} : {self.expr(depth - 1)})"
        if kind == "helper" and s["helper"]:
            return f"{s['helper']}({self.expr(depth - 1)})"
        return f"-{self.expr(depth - 1)}"


def examples() -> list[Case]:
    return [Case(p.stem, p.read_text()) for p in sorted(EXAMPLES.glob("*.icl"))]


def cases(count: int, seed: int) -> Iterator[Case]:
    """`count` cases: mutants of every example in turn, and every third case a generated program."""
    rng = random.Random(seed)
    corpus = examples()
    for n in range(count):
        if n % 3 == 2:
            yield Case(f"generated#{n}", _Generator(rng).program())
            continue
        base = corpus[n % len(corpus)]
        source = base.source
        what = []
        for _ in range(rng.choice((1, 1, 2, 3))):
            kind, source = mutate(source, rng)
            what.append(kind)
        yield Case(f"{base.name}#{n} ({', '.join(what)})", source)


# ---- running the cases ----------------------------------------------------------------------


class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Timeout()


def check(case: Case, limit_s: float = TIME_LIMIT_S):
    """(outcome, program or None). The time limit needs the main thread (a signal)."""
    import imagecl
    from imagecl.errors import CompileError, ImageCLError

    timed = hasattr(signal, "setitimer") and _main_thread()
    if timed:
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, limit_s)
    start = time.perf_counter()
    try:
        program = imagecl.compile(case.source, f"{case.name}.icl")
        return Outcome("accepted", seconds=time.perf_counter() - start), program
    except _Timeout:
        return Outcome("hang", f"over {limit_s} s", time.perf_counter() - start), None
    except CompileError as exc:
        took = time.perf_counter() - start
        if exc.line >= 1 and exc.column >= 1:
            return Outcome("error", exc.message, took), None
        return Outcome("internal", f"unlocated CompileError: {exc.message}", took), None
    except ImageCLError as exc:
        return Outcome("internal", f"unlocated {type(exc).__name__}: {exc}", time.perf_counter() - start), None
    except Exception as exc:  # noqa: BLE001 - anything else is the bug this harness looks for
        return Outcome("internal", f"{type(exc).__name__}: {exc}"[:500], time.perf_counter() - start), None
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def build(program, device, seed: int) -> Optional[str]:
    """None if the naive variant and one random configuration build on `device`, else why not."""
    from imagecl.runtime import launcher
    from imagecl.errors import ImageCLError

    try:
        configs = [None]
        space = program.space_for(device, (32, 32))
        configs += space.random(1, seed=seed)
    except ImageCLError as exc:
        return f"space: {type(exc).__name__}: {exc}"[:800]
    except Exception as exc:  # noqa: BLE001
        return f"space: internal {type(exc).__name__}: {exc}"[:800]
    for config in configs:
        try:
            launcher.build(device, program.opencl_source(config, device))
        except Exception as exc:  # noqa: BLE001 - a BuildError is the failure this looks for
            log = getattr(exc, "log", "") or str(exc)
            errors = [line for line in log.splitlines() if "error" in line][:3]
            return f"config {config}: {type(exc).__name__}: {' | '.join(errors) or str(exc)[:300]}"
    return None


def _build_in_child(source: str, name: str, device_spec, seed: int) -> Optional[str]:
    import imagecl
    from imagecl.runtime.devices import select_device

    return build(imagecl.compile(source, f"{name}.icl"), select_device(device_spec), seed)


class _Isolated:
    """Builds in a child process, so that a driver that aborts the process (PoCL does on some
    kernels) is one failed case, not the end of the run."""

    def __init__(self, device_spec) -> None:
        self.device_spec = device_spec
        self.pool = None

    def __call__(self, case: Case, seed: int) -> Optional[str]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        if self.pool is None:
            self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        from concurrent.futures import TimeoutError as FutureTimeout

        try:
            future = self.pool.submit(_build_in_child, case.source, case.name, self.device_spec, seed)
            return future.result(timeout=BUILD_LIMIT_S)
        except BrokenProcessPool:
            self.pool = None
            return "the build crashed the process"
        except FutureTimeout:
            # the executor cannot cancel a running call: end its one worker (ours) and start anew
            for process in list(self.pool._processes.values()):
                process.kill()
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None
            return f"the space or build took over {BUILD_LIMIT_S} s"


def run(count: int, seed: int, device=None, limit_s: float = TIME_LIMIT_S, isolate=None) -> Report:
    """Check `count` cases (and build the accepted ones on `device`, if given; or, with
    `isolate` a device name, each in a child process)."""
    report = Report()
    builder = _Isolated(isolate) if isolate is not None else None
    for i, case in enumerate(cases(count, seed)):
        outcome, program = check(case, limit_s)
        report.counts["tried"] += 1
        report.counts[outcome.kind] += 1
        report.slowest = max(report.slowest, outcome.seconds)
        if outcome.kind in ("internal", "hang"):
            report.failures.append((case, outcome))
        if program is not None and (device is not None or builder is not None):
            why = builder(case, seed * 100003 + i) if builder else build(program, device, seed * 100003 + i)
            if why is None:
                report.counts["builds"] += 1
            else:
                report.counts["wrong"] += 1
                report.failures.append((case, Outcome("wrong", why)))
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--device", default="pthread", help="OpenCL device to build on")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--show", type=int, default=10, help="failures to print")
    parser.add_argument("--save", help="folder to write the failing cases into")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    report = run(args.cases, args.seed, isolate=None if args.no_build else args.device)
    summary = report.summary()
    summary["seconds"] = round(time.perf_counter() - start, 1)
    print(json.dumps(summary))
    for case, outcome in report.failures[: args.show]:
        print(f"--- {outcome.kind}: {case.name}: {outcome.detail}")
    if args.save:
        folder = Path(args.save)
        folder.mkdir(parents=True, exist_ok=True)
        for k, (case, outcome) in enumerate(report.failures):
            (folder / f"{k:04d}-{outcome.kind}.icl").write_text(f"// {case.name}: {outcome.detail}\n{case.source}")
    return 0 if not report.failures else 1


if __name__ == "__main__":
    sys.exit(main())
