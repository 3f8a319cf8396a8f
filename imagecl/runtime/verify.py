"""Checking a variant's outputs against a reference, on the device: one implementation for `.icl`
variants (session.py) and hand-written kernels (tuner/kernelrun.py).

The reference. The reference kernel (an `.icl` program's naive variant, or a hand-written
kernel's reference kernel) runs twice, each written-only output filled beforehand with one of two
different values (`REFERENCE_FILLS`). An element that holds the first fill after the first
launch and the second after the second is *unwritten by the reference*; every other element
holds what the reference writes (the same in both launches). This is exact: one launch with one
fill could not tell "left unwritten" from "wrote the fill value" (for integers, 0, the common
case), and no value can be assumed absent from a result that is not known yet.

The check. Before a variant's verified launch each written-only output is *poisoned* with a
value that no element the reference writes holds (`poison_values`); when every value occurs,
two launches with two values (an element cannot equal both). An element the reference writes
must then match it (floats within `rtol` of the reference's scale, NaN matching NaN, integers
exactly; on an integer output that holds rounded floating-point results, passes/rounding.py,
one apart on at most a share `ROUNDING_SHARE` of its elements), so one the variant forgets cannot
pass; an element the reference leaves unwritten must
still hold the poison: an element is "don't care" only when unwritten by both, and a variant that
writes where the reference does not is wrong too. Read-and-written arrays get their initial data
before every launch and are compared as they are.

The comparison is a small kernel counting mismatching elements, so a variant costs no download;
only a failing one's output is downloaded, to say where it differs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Mapping, Optional

import numpy as np

from . import launcher
from .devices import context_and_queue

# the fills of the reference's two launches: for floats the second is any number (not NaN),
# for integers any value other than the first
REFERENCE_FILLS = {"f": (np.nan, 0.0), "i": (0, 1), "u": (0, 1), "b": (False, True)}

# how many elements of a rounded integer output may be one apart from the reference: rounding
# flips only values within a few ulp of a boundary (1 in 2 million voxels for PoCL's vector and
# scalar `exp` in bilateral), while a systematic error (truncating instead of rounding) moves
# about half of them
ROUNDING_SHARE = 1e-3

_C_TYPES = {"float32": "float", "float64": "double", "int8": "char", "uint8": "uchar", "int16": "short",
            "uint16": "ushort", "int32": "int", "uint32": "uint", "int64": "long", "uint64": "ulong", "bool": "uchar"}

_COMPARE = """
__kernel void imcl_compare(__global const T* out, __global const T* ref, __global const uchar* unwritten,
                           const int masked, const T poison, const int n, const float rtol, const float atol,
                           const int by_one, __global int* bad)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const T a = out[i];
    /* where the reference writes nothing the variant must leave the poison */
    const int blank = masked && unwritten[i];
    const int ok = blank ? SAME(a, poison) : MATCH(a, ref[i]);
    /* bad[0]: mismatches; bad[1]: a rounded output's elements one apart, judged by their count
       (by_one 2: a poisoned output, where an element still holding the poison was forgotten) */
    if (!ok)
        atomic_inc(bad + (!blank && by_one && ONE_APART(a, ref[i]) && !(by_one == 2 && SAME(a, poison))));
}
"""
# an infinite reference value matches only itself: its tolerance would be infinite
_FLOAT_MACROS = ("#define SAME(a, b) ((a) == (b) || (isnan(a) && isnan(b)))\n"
                 "#define MATCH(a, b) (SAME(a, b) || (isfinite(b) && fabs((a) - (b)) <= atol + rtol * fabs(b)))\n"
                 "#define ONE_APART(a, b) 0\n")
_EXACT_MACROS = ("#define SAME(a, b) ((a) == (b))\n#define MATCH(a, b) ((a) == (b))\n"
                 "#define ONE_APART(a, b) (((a) > (b) ? (a) - (b) : (b) - (a)) == 1)\n")


def _ctype(dtype: np.dtype) -> str:
    try:
        return _C_TYPES[dtype.name]
    except KeyError:
        raise TypeError(f"outputs of {dtype} cannot be verified") from None


def _scalar(dtype: np.dtype, value: Any) -> Any:
    return np.uint8(value) if dtype.kind == "b" else dtype.type(value)


def _same(a: np.ndarray, value: Any) -> np.ndarray:
    """Elementwise: `a` holds `value` (NaN matching NaN)."""
    if a.dtype.kind == "f" and np.isnan(value):
        return np.isnan(a)
    return a == value


def reference_scale(ref: np.ndarray) -> float:
    """The scale of a float output's absolute tolerance (tolerance * scale): its largest finite
    magnitude, at least 1 (0 for integers, which compare exactly)."""
    if ref.dtype.kind != "f":
        return 0.0
    finite = ref[np.isfinite(ref)]
    return max(1.0, float(np.abs(finite).max())) if finite.size else 1.0


def poison_values(reference: np.ndarray, unwritten: Optional[np.ndarray] = None) -> list[Any]:
    """Fill values an unwritten element cannot pass with: one that no element of `reference`
    (outside `unwritten`) holds, or two different ones (an element cannot equal both)."""
    flat = (reference if unwritten is None else reference[~unwritten]).ravel()
    dtype = reference.dtype
    if dtype.kind == "f":
        for v in (np.nan, np.inf, -np.inf):
            if not (np.isnan(flat).any() if np.isnan(v) else (flat == v).any()):
                return [dtype.type(v)]
        return [dtype.type(np.nan), dtype.type(0)]
    if dtype.kind == "b":
        return [np.bool_(False), np.bool_(True)]
    info = np.iinfo(dtype)
    present = np.unique(flat)
    for v in (info.max, info.min, info.max - 1, info.min + 1, 0x55, -0x56):
        if info.min <= v <= info.max and not np.isin(v, present, assume_unique=True):
            return [dtype.type(v)]
    if dtype.itemsize <= 2:
        absent = np.setdiff1d(np.arange(info.min, info.max + 1, dtype=np.int64), present.astype(np.int64))
        if len(absent):
            return [dtype.type(absent[0])]
    else:
        rng = np.random.default_rng(0)
        draws = rng.integers(info.min, info.max, size=1024, dtype=dtype, endpoint=True)
        absent = draws[~np.isin(draws, present)]
        if len(absent):
            return [dtype.type(absent[0])]
    return [dtype.type(info.min), dtype.type(info.max)]


def rounding_allowance(size: int) -> int:
    """How many elements of a rounded integer output of `size` elements may be one apart."""
    return max(1, int(size * ROUNDING_SHARE))


def describe_mismatch(out: np.ndarray, ref: np.ndarray, unwritten: Optional[np.ndarray], poison: Any,
                      rtol: float, scale: float, allowance: int = 0) -> Optional[str]:
    """Where and how `out` differs from the reference (the device's check, on the host), or None.
    `allowance`: how many elements of an integer output may be one apart (0: none)."""
    rounding = ""
    if ref.dtype.kind == "f":
        written_bad = ~np.isclose(out, ref, rtol=rtol, atol=rtol * scale, equal_nan=True)
    else:
        written_bad = out != ref
        if allowance:
            apart = np.abs(out.astype(np.int64) - ref.astype(np.int64)) == 1
            if unwritten is not None:
                apart &= ~unwritten
            if poison is not None:  # still the poison: forgotten, not rounded
                apart &= ~_same(out, poison)
            if int(apart.sum()) <= allowance:
                written_bad &= ~apart
            else:
                rounding = f"; {int(apart.sum())} values one apart, more than rounding explains ({allowance})"
    if unwritten is None:
        bad = written_bad
    else:
        bad = np.where(unwritten, ~_same(out, poison), written_bad)
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    count = f"({int(bad.sum())} of {bad.size} values{rounding})"
    if unwritten is not None and unwritten[where]:
        return f"differs at {where}: writes {out[where]} where the reference writes nothing {count}"
    note = " (left unwritten: it holds the poison value)" if poison is not None and _same(out[where], poison) else ""
    return f"differs at {where}: {out[where]} instead of {ref[where]}{note} {count}"


@dataclass
class _Output:
    label: str  # how messages name it: "output 'o'", "argument 1"
    buffer: Any  # the buffer a variant writes
    host: np.ndarray  # the reference
    unwritten: Optional[np.ndarray]  # elements the reference leaves unwritten (None: none)
    poisons: list  # empty for a read-and-written array, which is restored instead
    scale: float
    allowance: int  # how many elements may be one apart (a rounded integer output), else 0
    ref_buffer: Any
    mask_buffer: Any
    compare: Any = None  # its comparison kernel, every argument bound but the poison (set per check)
    bad: Any = None  # the kernel's counts: mismatching elements, and those one apart (two ints)


class Verifier:
    """The reference of some output buffers, kept on the device, and the check of a launch."""

    def __init__(self, device: Any, rtol: float = 1e-4) -> None:
        import pyopencl as cl

        self.device = device
        self.context, self.queue = context_and_queue(device)
        self.rtol = float(rtol)
        self.outputs: dict[Hashable, _Output] = {}
        self._no_mask = cl.Buffer(self.context, cl.mem_flags.READ_ONLY, 1)

    def add(self, key: Hashable, label: str, buffer: Any, reference: np.ndarray,
            unwritten: Optional[np.ndarray] = None, poisoned: bool = True, rounded: bool = False) -> None:
        """`buffer` must reproduce `reference`; `poisoned`: it is written-only (else restored by
        the caller before every launch); `unwritten`: where the reference writes nothing;
        `rounded`: an integer output holding rounded floating-point results (passes/rounding.py),
        whose elements may be one apart on a few elements."""
        import pyopencl as cl

        _ctype(reference.dtype)  # a clear error now rather than at the first check
        mf = cl.mem_flags
        host = np.ascontiguousarray(reference)
        if unwritten is not None and not unwritten.any():
            unwritten = None
        mask = None
        if unwritten is not None:
            mask = cl.Buffer(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR,
                             hostbuf=np.ascontiguousarray(unwritten, dtype=np.uint8))
        o = _Output(
            label, buffer, host, unwritten, poison_values(host, unwritten) if poisoned else [],
            # the tolerance's scale, computed once: per variant it would cost a pass over the image
            reference_scale(host if unwritten is None else host[~unwritten]),
            rounding_allowance(host.size) if rounded and host.dtype.kind in "iu" else 0,
            cl.Buffer(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host), mask)
        # each output's own kernel object, bound once: per check only the poison is set (a
        # variant's check costs microseconds of host time, not a dozen argument settings)
        o.bad = cl.Buffer(self.context, mf.READ_WRITE, 8)
        o.compare = cl.Kernel(self._program(host.dtype), "imcl_compare")
        o.compare.set_args(o.buffer, o.ref_buffer, o.mask_buffer if o.mask_buffer is not None else self._no_mask,
                           np.int32(o.mask_buffer is not None), _scalar(host.dtype, self._poison_of(o, 0)),
                           np.int32(host.size), np.float32(self.rtol), np.float32(self.rtol * o.scale),
                           np.int32(0 if not o.allowance else 2 if o.poisons else 1), o.bad)
        self.outputs[key] = o

    @property
    def poisoned(self) -> set:
        return {k for k, o in self.outputs.items() if o.poisons}

    @property
    def passes(self) -> int:
        """Verified launches per variant: two where some output has no value to poison it with."""
        return max([len(o.poisons) for o in self.outputs.values()] + [1])

    def poison(self, k: int) -> None:
        """Fill the written-only outputs with their k-th poison value."""
        import pyopencl as cl

        for o in self.outputs.values():
            if o.poisons:
                value = _scalar(o.host.dtype, o.poisons[min(k, len(o.poisons) - 1)])
                cl.enqueue_fill_buffer(self.queue, o.buffer, value, 0, o.host.nbytes)

    def _poison_of(self, o: _Output, k: int) -> Any:
        # an in-out array has no poison; its mask is then empty and the value unused
        return o.poisons[min(k, len(o.poisons) - 1)] if o.poisons else o.host.dtype.type(0)

    def _program(self, dtype: np.dtype):
        ctype = _ctype(dtype)
        source = (_FLOAT_MACROS if dtype.kind == "f" else _EXACT_MACROS) + f"#define T {ctype}\n" + _COMPARE
        if ctype == "double":
            source = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" + source
        return launcher.build(self.device, source)

    def _enqueue_counts(self, k: int) -> Callable[[], dict[Hashable, int]]:
        """Enqueue every output's comparison after a launch poisoned with the k-th values, and
        the reads of their counts, without waiting: returns what waits for them and gives the
        counts per output."""
        import pyopencl as cl

        counts = np.zeros((len(self.outputs), 2), np.int32)
        read = None
        for i, o in enumerate(self.outputs.values()):
            n = o.host.size
            cl.enqueue_fill_buffer(self.queue, o.bad, np.int32(0), 0, 8)
            o.compare.set_arg(4, _scalar(o.host.dtype, self._poison_of(o, k)))
            cl.enqueue_nd_range_kernel(self.queue, o.compare, (-(-n // 256) * 256,), (256,))
            read = cl.enqueue_copy(self.queue, counts[i], o.bad, is_blocking=False)

        def result() -> dict[Hashable, int]:
            if read is not None:
                read.wait()  # the queue is in order: every count before it is read too
            # elements one apart fail only beyond the output's allowance, and then all of them
            return {key: int(bad) + (int(apart) if apart > o.allowance else 0)
                    for (key, o), (bad, apart) in zip(self.outputs.items(), counts)}
        return result

    def mismatches(self, k: int = 0) -> dict[Hashable, int]:
        """Per output, how many elements differ from the reference after a launch poisoned with
        the k-th values (counted on the device)."""
        return self._enqueue_counts(k)()

    def check(self, k: int = 0) -> Optional[str]:
        """None when every output matches the reference, else where the first mismatch is (only a
        failing output is downloaded, to say so)."""
        return self._problem(self.mismatches(k), k)

    def _problem(self, mismatches: Mapping[Hashable, int], k: int) -> Optional[str]:
        import pyopencl as cl

        for key, count in mismatches.items():
            if not count:
                continue
            o = self.outputs[key]
            out = np.empty_like(o.host)
            cl.enqueue_copy(self.queue, out, o.buffer)
            problem = describe_mismatch(out, o.host, o.unwritten, self._poison_of(o, k) if o.poisons else None,
                                        self.rtol, o.scale, o.allowance)
            return f"{o.label} {problem or f'differs from the reference in {count} values'}"
        return None

    def checked_launch(self, prepare: Callable[[], None], launch: Callable[[], Any],
                       meanwhile: Optional[Callable[[], None]] = None) -> tuple[Any, Optional[str]]:
        """The verified launch (one per poison value): `prepare` gives the arrays that are not
        poisoned their initial data, `launch` enqueues the kernel and returns its event. Returns
        the last (finished) launch's event and the first problem found (None: the outputs are
        right). The comparison is queued behind the launch without waiting for it, and
        `meanwhile` (host work, e.g. preparing the next variant) runs while the device works."""
        event = None
        for k in range(self.passes):
            prepare()
            self.poison(k)
            event = launch()
            counted = self._enqueue_counts(k)
            if meanwhile is not None:
                meanwhile()
                meanwhile = None
            mismatches = counted()
            event.wait()  # done already where some count was read (the queue is in order)
            problem = self._problem(mismatches, k)
            if problem:
                return event, problem
        return event, None


def capture_reference(queue: Any, outputs: Mapping[Hashable, tuple[Any, np.ndarray]], written_only: set,
                      run: Callable[[], None]) -> dict[Hashable, tuple[np.ndarray, Optional[np.ndarray]]]:
    """The reference of each output, and where it writes nothing (None: it writes everything).
    `outputs`: key -> (buffer, an array of its shape and dtype); `run` restores what is read and
    written, launches the reference kernel and waits for it (see the module docstring)."""
    import pyopencl as cl

    launches = []
    for fill in range(2 if written_only else 1):
        for key in written_only:
            buffer, like = outputs[key]
            value = _scalar(like.dtype, REFERENCE_FILLS[like.dtype.kind][fill])
            cl.enqueue_fill_buffer(queue, buffer, value, 0, like.nbytes)
        run()
        results = {}
        for key, (buffer, like) in outputs.items():
            results[key] = np.empty_like(like)
            cl.enqueue_copy(queue, results[key], buffer)
        launches.append(results)
    references = {}
    for key, first in launches[0].items():
        unwritten = None
        if key in written_only:
            a, b = REFERENCE_FILLS[first.dtype.kind]
            unwritten = _same(first, a) & _same(launches[1][key], b)
            unwritten = unwritten if unwritten.any() else None
        references[key] = (first, unwritten)
    return references


__all__ = ["Verifier", "capture_reference", "poison_values", "reference_scale", "describe_mismatch",
           "REFERENCE_FILLS"]
