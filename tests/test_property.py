"""Property-based differential test of the imagecl compiler.

Hypothesis generates random, well-typed, UB-free ImageCL programs (expressions
and small statement sequences), imagecl compiles and runs them on the default
OpenCL device, and the results are compared with an independent evaluation of
the same program tree written here in Python/NumPy that follows the C99 /
OpenCL C rules:

* types bool, char, uchar, short, ushort, int, uint, float; integer promotion
  to int; usual arithmetic conversions (float > uint > int); comparisons and
  ``! && ||`` give int 0/1; ``c ? a : b`` applies the usual conversions;
  unsigned arithmetic and conversions to narrow integer types wrap (for the
  signed narrow types this is implementation-defined in C; every OpenCL
  compiler truncates, and so does the model); ``/`` and ``%`` truncate toward
  zero; ``>>`` of a negative int is arithmetic (OpenCL C defines it);
  float -> integer conversions truncate toward zero.
* literals: ``5`` is int, ``5u`` uint, an unsuffixed hex/octal literal that
  does not fit int is uint (C rule), ``010`` is octal; floating literals are
  float (also the unsuffixed ``0.5``: documented project choice).
* OpenCL built-ins: ``abs`` of a signed integer returns the unsigned type,
  ``min/max/clamp`` keep their argument type, ``fabs floor sqrt fmin fmax``.

Undefined behaviour is excluded by construction: the generator runs an interval
analysis (with an exactness/error analysis for float) on everything it builds,
and rewrites or drops any operation that could overflow a signed int, divide by
zero, shift out of range, convert an out-of-range float, produce inf/NaN, etc.
Loops have constant trip counts; variables mutated in a loop body get an
envelope computed from the trip count so that the analysis stays sound.  The
model re-checks every value it computes against the interval the generator
predicted, so a generator bug shows up as ``GeneratorBug`` and never as a
spurious compiler failure.

Float tolerance: a float expression is *exact* when every intermediate value is
exactly representable (dyadic values with a 24-bit budget); then the result
does not depend on rounding, fma contraction or reassociation, and is compared
bit-for-bit (this is also the only kind of float allowed to reach a comparison,
a condition, ``floor`` or a conversion to an integer).  Otherwise the generator
carries a forward error bound ``err`` (1 ulp per + - * and int->float
conversion, 3 ulp per / and sqrt, OpenCL's required accuracies being 0, 2.5 and
3 ulp, with the propagated input errors) and the comparison allows
``4 * err + 1e-6 * |expected|``: fma contraction and either rounding of the
model or of the device stay inside it.

What a generated program contains (``programs()``):

* expressions over every operator of C (with minimal or redundant parentheses,
  tight or spaced operators), casts to every scalar type, ternaries, literals
  in decimal / hex / octal / u-suffixed / float forms (``2.f``, ``.25``,
  ``22.5e-1f``...), OpenCL built-ins, calls of 0-2 generated helper functions
  (scalar parameters, early ``return``, parameters assigned in the body);
* statements: declarations (several declarators, ``T v; v = e;``), ``=`` and
  every compound assignment on variables of every type, ``++``/``--`` (also
  ``w = v++``), ``if``/``else`` (braced or not), ``for`` loops counting up, down,
  by 2 or over ``uint``, ``while`` and ``do``/``while`` loops, loops with a huge
  nominal bound that ``break`` ends early, nested loops,
  ``break``/``continue``, private arrays (``T m[N]``) filled by a loop or
  element by element, read and written at constant, loop-variable, masked,
  clamped or ``% N`` indices;
* constant trip counts, array sizes, array indices and image offsets that are
  sometimes constant *expressions* (casts, unsigned wrap-around) rather than
  literals;
* image reads of ``Image<int>``, ``Image<float>``, ``Image<uchar>`` at
  ``[idx][idy]``, at constant offsets up to 3, at ``idx +- i`` with a loop
  variable ``i`` or a small local, at data-dependent positions
  (``x & 7``, ``[idy][idx]``, ``a.width - 1 - idx``), with random
  ``boundary_cond`` modes (constant, clamped, mirror, wrap);
* scalar parameters ``int s, float t, uint u`` (u up to 2**32 - 1), ``idx``,
  ``idy``, ``img.width`` / ``img.height``;
* eight output images of random pixel types; some are read back and updated
  (``o[idx][idy] op= e``, conditional overwrite), and those are passed in by
  the caller or left out.

Each program runs in its naive variant and in one random tuning configuration
of its space (two times out of three with small work-groups so that tiles,
halos and coarsening remainders meet the image borders).

Cost: one program = one OpenCL build (~0.3 s on PoCL).  Each example therefore
batches ``N_BLOCKS`` independent statement blocks, each writing its own output
image, on a small image.  The run is derandomized and uses no example database,
so CI sees the same programs every time.  Hypothesis does not shrink (every
step would be a build); a failure instead re-runs each block on its own and
reports the failing blocks as small stand-alone reproducers.
"""

import contextlib
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import imagecl

# ---------------------------------------------------------------------------
# C types
# ---------------------------------------------------------------------------

INT_MIN, INT_MAX = -(2 ** 31), 2 ** 31 - 1
UMAX = 2 ** 32 - 1
FMAX = 2.0 ** 20          # bound on every float value the generator allows
EXACT_BITS = 24


class CType:
    def __init__(self, name, bits, signed, dtype, spellings, is_float=False):
        self.name = name
        self.bits = bits
        self.signed = signed
        self.is_float = is_float
        self.dtype = np.dtype(dtype)
        self.spellings = spellings
        if name == "bool":
            self.lo, self.hi = 0, 1
        elif is_float:
            self.lo = self.hi = None
        elif signed:
            self.lo, self.hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        else:
            self.lo, self.hi = 0, 2 ** bits - 1

    def __repr__(self):
        return self.name

    def __reduce__(self):          # unpickle to the same singleton
        return (ctype_named, (self.name,))


def ctype_named(name):
    return next(t for t in ALL_TYPES if t.name == name)


BOOL = CType("bool", 1, False, np.bool_, ["bool"])
CHAR = CType("char", 8, True, np.int8, ["char"])
UCHAR = CType("uchar", 8, False, np.uint8, ["uchar", "unsigned char"])
SHORT = CType("short", 16, True, np.int16, ["short"])
USHORT = CType("ushort", 16, False, np.uint16, ["ushort", "unsigned short"])
INT = CType("int", 32, True, np.int32, ["int"])
UINT = CType("uint", 32, False, np.uint32, ["uint", "unsigned int", "unsigned"])
FLOAT = CType("float", 32, True, np.float32, ["float"], is_float=True)

INTEGER_TYPES = [INT, UINT, CHAR, UCHAR, SHORT, USHORT, BOOL]
ALL_TYPES = [INT, FLOAT, UINT, UCHAR, CHAR, SHORT, USHORT, BOOL]
UNSIGNED_OF = {CHAR: UCHAR, SHORT: USHORT, INT: UINT, UCHAR: UCHAR,
               USHORT: USHORT, UINT: UINT}


def promote(t):
    return t if t in (INT, UINT, FLOAT) else INT


def usual(a, b):
    a, b = promote(a), promote(b)
    if FLOAT in (a, b):
        return FLOAT
    if UINT in (a, b):
        return UINT
    return INT


# ---------------------------------------------------------------------------
# Abstract values (used by the generator to stay clear of UB)
# ---------------------------------------------------------------------------


class IAV:
    """Integer interval [lo, hi]."""
    __slots__ = ("lo", "hi")

    def __init__(self, lo, hi):
        assert lo <= hi
        self.lo, self.hi = int(lo), int(hi)

    def __repr__(self):
        return "[%d, %d]" % (self.lo, self.hi)


class FAV:
    """Float interval [lo, hi] bounding every value a conforming
    implementation may compute.  k is not None iff the value is exact: it is
    then a multiple of 2**-k, computed without any rounding.  err bounds
    |computed - ideal| (0 when exact)."""
    __slots__ = ("lo", "hi", "k", "err")

    def __init__(self, lo, hi, k, err):
        assert lo <= hi
        assert (k is None) == (err > 0), (lo, hi, k, err)
        self.lo, self.hi, self.k, self.err = float(lo), float(hi), k, float(err)

    def __repr__(self):
        return "[%g, %g]%s" % (self.lo, self.hi,
                               (" k=%d" % self.k) if self.k is not None else " err=%g" % self.err)


def mag(av):
    return max(abs(av.lo), abs(av.hi))


def ulp(m):
    if m < 2.0 ** -100:
        return 2.0 ** -149
    return 2.0 ** (math.floor(math.log2(m)) - 23)


def ffinish(lo, hi, k, err, nulp):
    m = max(abs(lo), abs(hi))
    if not m <= FMAX:
        return None
    if k is not None and err == 0 and m * 2.0 ** k <= 2.0 ** EXACT_BITS:
        return FAV(lo, hi, k, 0.0)
    r = nulp * ulp(m + err + 1e-30)
    return FAV(lo - r, hi + r, None, err + r)


def ifinish(t, lo, hi):
    if t is INT:
        if lo < INT_MIN or hi > INT_MAX:
            return None
        return IAV(lo, hi)
    assert t is UINT
    q1, q2 = lo >> 32, hi >> 32
    if q1 == q2:
        return IAV(lo - (q1 << 32), hi - (q1 << 32))
    return IAV(0, UMAX)


def iconv(av, tt):
    if tt is BOOL:
        if av.lo > 0 or av.hi < 0:
            return IAV(1, 1)
        if av.lo == av.hi == 0:
            return IAV(0, 0)
        return IAV(0, 1)
    if tt.lo <= av.lo and av.hi <= tt.hi:
        return av
    m = 1 << tt.bits
    q1, q2 = (av.lo - tt.lo) // m, (av.hi - tt.lo) // m
    if q1 == q2:
        return IAV(av.lo - q1 * m, av.hi - q1 * m)
    return IAV(tt.lo, tt.hi)


def conv_av(av, ft, tt):
    """Abstract C conversion ft -> tt; None if it may be UB or depend on
    float rounding."""
    if tt is FLOAT:
        if ft is FLOAT:
            return av
        m = mag(av)
        if m <= 2 ** EXACT_BITS:
            return FAV(av.lo, av.hi, 0, 0.0)
        r = ulp(m)
        return FAV(av.lo - r, av.hi + r, None, r)
    if ft is FLOAT:
        if av.k is None:
            return None
        if tt is BOOL:
            return IAV(0 if av.lo <= 0 <= av.hi else 1, 0 if av.lo == av.hi == 0 else 1)
        if not (av.lo > tt.lo - 1 and av.hi < tt.hi + 1):
            return None
        return IAV(math.trunc(av.lo), math.trunc(av.hi))
    return iconv(av, tt)


def nbits(av):
    n = 0
    if av.hi > 0:
        n = av.hi.bit_length()
    if av.lo < 0:
        n = max(n, (-av.lo - 1).bit_length())
    return n


def tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def fbin(op, a, b):
    if op in "+-":
        if op == "-":
            b = FAV(-b.hi, -b.lo, b.k, b.err)
        k = None if a.k is None or b.k is None else max(a.k, b.k)
        return ffinish(a.lo + b.lo, a.hi + b.hi, k, a.err + b.err, 1)
    if op == "*":
        c = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
        k = None if a.k is None or b.k is None else a.k + b.k
        err = mag(a) * b.err + mag(b) * a.err + a.err * b.err
        return ffinish(min(c), max(c), k, err, 1)
    if op == "/":
        if not (b.lo >= 0.5 or b.hi <= -0.5):
            return None
        c = [a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi]
        mq = max(abs(v) for v in c)
        bmin = min(abs(b.lo), abs(b.hi))
        k = None
        if a.k is not None and b.k is not None and b.lo == b.hi:
            m, e = math.frexp(abs(b.lo))
            if m == 0.5:               # |b| == 2**(e-1)
                k = max(0, a.k + e - 1)
        err = (a.err + mq * b.err) / bmin
        return ffinish(min(c), max(c), k, err, 3)
    raise AssertionError(op)


CMP_OPS = ("<", ">", "<=", ">=", "==", "!=")
LOGIC_OPS = ("&&", "||")
SHIFT_OPS = ("<<", ">>")
BIT_OPS = ("&", "|", "^")


def abin(op, lt, la, rt, ra):
    """Abstract binary operator: (result type, abstract value) or None."""
    if op in LOGIC_OPS:
        if (lt is FLOAT and la.k is None) or (rt is FLOAT and ra.k is None):
            return None
        return INT, IAV(0, 1)
    if op in SHIFT_OPS:
        if lt is FLOAT or rt is FLOAT:
            return None
        pt, ct = promote(lt), promote(rt)
        a, c = iconv(la, pt), iconv(ra, ct)
        if c.lo < 0 or c.hi > 31:
            return None
        if op == "<<":
            if pt is INT:
                if a.lo < 0 or (a.hi << c.hi) > INT_MAX:
                    return None
                return INT, IAV(a.lo << c.lo, a.hi << c.hi)
            return UINT, ifinish(UINT, a.lo << c.lo, a.hi << c.hi)
        v = [a.lo >> c.lo, a.lo >> c.hi, a.hi >> c.lo, a.hi >> c.hi]
        return pt, IAV(min(v), max(v))
    ct = usual(lt, rt)
    a, b = conv_av(la, lt, ct), conv_av(ra, rt, ct)
    if op in CMP_OPS:
        if ct is FLOAT and (a.k is None or b.k is None):
            return None
        return INT, IAV(0, 1)
    if ct is FLOAT:
        if op in BIT_OPS or op == "%":
            return None
        r = fbin(op, a, b)
        return None if r is None else (FLOAT, r)
    if op in BIT_OPS:
        if a.lo >= 0 and b.lo >= 0:
            if op == "&":
                return ct, IAV(0, min(a.hi, b.hi))
            top = (1 << max(a.hi.bit_length(), b.hi.bit_length())) - 1
            return ct, IAV(max(a.lo, b.lo) if op == "|" else 0, top)
        if op == "|" and (a.hi < 0 or b.hi < 0):
            # setting bits of a negative int keeps it negative and never decreases it
            return ct, IAV(a.lo if a.hi < 0 else b.lo, -1)
        if op == "&" and a.lo >= 0:
            return ct, IAV(0, a.hi)
        if op == "&" and b.lo >= 0:
            return ct, IAV(0, b.hi)
        n = max(nbits(a), nbits(b))
        return ct, IAV(-(1 << n), (1 << n) - 1)
    if op in "+-*":
        if op == "+":
            lo, hi = a.lo + b.lo, a.hi + b.hi
        elif op == "-":
            lo, hi = a.lo - b.hi, a.hi - b.lo
        else:
            c = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
            lo, hi = min(c), max(c)
        r = ifinish(ct, lo, hi)
        return None if r is None else (ct, r)
    # / and %
    if b.lo <= 0 <= b.hi:
        return None
    if ct is INT and a.lo == INT_MIN and b.lo <= -1 <= b.hi:
        return None
    if op == "/":
        v = [tdiv(p, q) for p in (a.lo, a.hi) for q in (b.lo, b.hi)]
        return ct, IAV(min(v), max(v))
    mb = max(abs(b.lo), abs(b.hi)) - 1
    lo = 0 if a.lo >= 0 else -min(-a.lo, mb)
    hi = 0 if a.hi <= 0 else min(a.hi, mb)
    return ct, IAV(lo, hi)


def aun(op, t, av):
    if op == "!":
        if t is FLOAT and av.k is None:
            return None
        return INT, IAV(0, 1)
    if t is FLOAT:
        if op == "~":
            return None
        if op == "+":
            return FLOAT, av
        return FLOAT, FAV(-av.hi, -av.lo, av.k, av.err)
    pt = promote(t)
    a = iconv(av, pt)
    if op == "+":
        return pt, a
    if op == "~":
        if pt is INT:
            return INT, IAV(-a.hi - 1, -a.lo - 1)
        return UINT, IAV(UMAX - a.hi, UMAX - a.lo)
    if pt is INT:
        if a.lo == INT_MIN:
            return None
        return INT, IAV(-a.hi, -a.lo)
    return UINT, ifinish(UINT, -a.hi, -a.lo)


def hull(t, a, b):
    if t is FLOAT:
        k = None if a.k is None or b.k is None else max(a.k, b.k)
        return FAV(min(a.lo, b.lo), max(a.hi, b.hi), k, max(a.err, b.err))
    return IAV(min(a.lo, b.lo), max(a.hi, b.hi))


def subset(a, b):
    """a within b (for floats: also at least as exact)."""
    if not (b.lo <= a.lo and a.hi <= b.hi):
        return False
    if isinstance(b, FAV):
        if b.k is not None:
            return a.k is not None and a.k <= b.k
        return a.err <= b.err
    return True


def full_av(t):
    return IAV(t.lo, t.hi)


# ---------------------------------------------------------------------------
# Expression tree
# ---------------------------------------------------------------------------

PREC = {"*": 13, "/": 13, "%": 13, "+": 12, "-": 12, "<<": 11, ">>": 11,
        "<": 10, ">": 10, "<=": 10, ">=": 10, "==": 9, "!=": 9, "&": 8,
        "^": 7, "|": 6, "&&": 5, "||": 4}


class Ex:
    paren = False

    def show(self, mode, minp=0):
        s, p = self.render(mode)
        if self.paren:
            s, p = "(" + s + ")", 16
        if p < minp:
            s = "(" + s + ")"
        return s


class Lit(Ex):
    def __init__(self, ty, value, text, ocl_text=None):
        self.ty, self.value, self.text = ty, value, text
        self.ocl_text = ocl_text or text
        if ty is FLOAT:
            fr = Fraction(float(value))
            k = max(0, fr.denominator.bit_length() - 1)
            self.av = FAV(float(value), float(value), k, 0.0)
        else:
            self.av = IAV(value, value)

    def render(self, mode):
        return (self.ocl_text if mode == "ocl" else self.text), 16


class Var(Ex):
    def __init__(self, name, ty, av):
        self.name, self.ty, self.av = name, ty, av

    def render(self, mode):
        return self.name, 16


IMAGES = {"a": INT, "b": FLOAT, "c": UCHAR}
A_RANGE = (-5000, 5000)
B_RANGE = (-64.0, 64.0)       # multiples of 1/4
S_RANGE = (-100, 100)
T_RANGE = (-8.0, 8.0)         # multiples of 1/4
IMG_AV = {"a": IAV(*A_RANGE), "b": FAV(B_RANGE[0], B_RANGE[1], 2, 0.0),
          "c": IAV(0, 255)}


BOUNDARY_MODES = ["constant", "clamped", "mirror", "wrap"]


def boundary_index(i, n, mode):
    """Index actually read for position i of an axis of length n (None: the constant 0)."""
    if 0 <= i < n:
        return i
    if mode == "constant":
        return None
    if mode == "clamped":
        return min(max(i, 0), n - 1)
    if mode == "wrap":
        return i % n
    if n == 1:                      # mirror: reflection without repeating the edge
        return 0
    p = 2 * (n - 1)
    i %= p
    return i if i < n else p - i


class Img(Ex):
    """Read img[X][Y] of an input image; X and Y are int expressions (idx, idx + 1,
    idx - i with a loop variable i, data-dependent gathers...); reads outside the
    image follow the image's boundary condition."""

    def __init__(self, img, xi, yi):
        self.img, self.xi, self.yi = img, xi, yi
        self.ty, self.av = IMAGES[img], IMG_AV[img]

    def render(self, mode):
        xs, ys = self.xi.show(mode, 3), self.yi.show(mode, 3)
        if mode == "ocl":
            return "RD_%s(%s, %s)" % (self.img, xs, ys), 16
        return "%s[%s][%s]" % (self.img, xs, ys), 16


class Dim(Ex):
    """img.width / img.height (ext)."""

    def __init__(self, img, which, value):
        self.img, self.which, self.ty, self.av = img, which, INT, IAV(value, value)

    def render(self, mode):
        if mode == "ocl":
            return ("W_" if self.which == "width" else "H_"), 16
        return "%s.%s" % (self.img, self.which), 16


class OutRead(Ex):
    """o<k>[idx][idy] read back after this grid point wrote it."""

    def __init__(self, out, ty, av):
        self.out, self.ty, self.av = out, ty, av

    def render(self, mode):
        if mode == "ocl":
            return "o%d[idy * W_ + idx]" % self.out, 16
        return "o%d[idx][idy]" % self.out, 16


class Un(Ex):
    def __init__(self, op, c, ty, av):
        self.op, self.c, self.ty, self.av = op, c, ty, av

    def render(self, mode):
        s = self.c.show(mode, 14)
        if self.op in "+-" and s[0] == self.op:
            s = " " + s
        return self.op + s, 14


class Bin(Ex):
    def __init__(self, op, l, r, ty, av, tight=False):
        self.op, self.l, self.r, self.ty, self.av = op, l, r, ty, av
        self.tight = tight

    def render(self, mode):
        p = PREC[self.op]
        ls, rs = self.l.show(mode, p), self.r.show(mode, p + 1)
        tight = self.tight
        if rs[0] in "+-" and self.op[-1] == rs[0]:
            tight = False
        if self.op[0] in "+-" and ls[-1] in "eE":       # 0x1E+1 is one pp-number
            tight = False
        sep = "" if tight else " "
        return ls + sep + self.op + sep + rs, p


class Tern(Ex):
    def __init__(self, c, a, b, ty, av):
        self.c, self.a, self.b, self.ty, self.av = c, a, b, ty, av

    def render(self, mode):
        cond = self.c.show(mode, 4)
        if mode == "ocl" and self.c.ty is FLOAT:     # OpenCL C rejects a float ?: condition
            cond = "(%s != 0.0f)" % self.c.show(mode, 10)
        return "%s ? %s : %s" % (cond, self.a.show(mode, 3), self.b.show(mode, 3)), 3


class Cast(Ex):
    def __init__(self, ty, spelling, c, av):
        self.ty, self.spelling, self.c, self.av = ty, spelling, c, av

    def render(self, mode):
        return "(%s)%s" % (self.spelling, self.c.show(mode, 14)), 14


class Call(Ex):
    def __init__(self, fn, args, ty, av):
        self.fn, self.args, self.ty, self.av = fn, args, ty, av

    def render(self, mode):
        return "%s(%s)" % (self.fn, ", ".join(a.show(mode, 3) for a in self.args)), 16


class ArrRead(Ex):
    """m[i] of a private array (ext)."""

    def __init__(self, name, index, ty, av):
        self.name, self.index, self.ty, self.av = name, index, ty, av

    def render(self, mode):
        return "%s[%s]" % (self.name, self.index.show(mode)), 16


class IncDecEx(Ex):
    """v++ / ++v / v-- / --v used as the whole right-hand side of an
    assignment to another variable."""

    def __init__(self, name, ty, op, prefix, av):
        self.name, self.ty, self.op, self.prefix, self.av = name, ty, op, prefix, av

    def render(self, mode):
        if self.prefix:
            return self.op + self.name, 14
        return self.name + self.op, 15


# ---------------------------------------------------------------------------
# Statements
# ---------------------------------------------------------------------------


class Decl:
    def __init__(self, ty, spelling, items, sep_assign=False):
        self.ty, self.spelling, self.items = ty, spelling, items   # [(name, init, post_av)]
        self.sep_assign = sep_assign     # "T v; v = e;"

    def lines(self, mode, ind):
        if self.sep_assign:
            (n, e, _), = self.items
            return [ind + "%s %s;" % (self.spelling, n), ind + "%s = %s;" % (n, e.show(mode))]
        return [ind + "%s %s;" % (self.spelling, ", ".join(
            "%s = %s" % (n, e.show(mode, 3)) for n, e, _ in self.items))]


class Assign:
    def __init__(self, name, op, rhs, post_av):
        self.name, self.op, self.rhs, self.post_av = name, op, rhs, post_av

    def lines(self, mode, ind):
        return [ind + "%s %s %s;" % (self.name, self.op, self.rhs.show(mode, 2))]


class IncDec:
    def __init__(self, name, op, prefix, post_av):
        self.name, self.op, self.prefix, self.post_av = name, op, prefix, post_av

    def lines(self, mode, ind):
        return [ind + ((self.op + self.name) if self.prefix else (self.name + self.op)) + ";"]


class If:
    def __init__(self, cond, then, els, braces=True):
        self.cond, self.then, self.els, self.braces = cond, then, els, braces

    def lines(self, mode, ind):
        head = ind + "if (%s)" % self.cond.show(mode)
        if not self.braces and len(self.then) == 1 and not self.els:
            return [head] + self.then[0].lines(mode, ind + "    ")
        out = [head + " {"] + body_lines(self.then, mode, ind + "    ")
        if self.els:
            out += [ind + "} else {"] + body_lines(self.els, mode, ind + "    ")
        return out + [ind + "}"]


class Jump:
    def __init__(self, kind):
        self.kind = kind

    def lines(self, mode, ind):
        return [ind + self.kind + ";"]


class Loop:
    """kind: for | for_u | for_down | for_step | while | dowhile."""

    def __init__(self, kind, var, n, body, incr, bound=None, big=None):
        self.kind, self.var, self.n, self.body, self.incr = kind, var, n, body, incr
        self.bound = bound      # constant expression printed instead of the literal bound
        self.big = big          # for_big: nominal bound; `if (i >= n) break;` ends the loop

    def lines(self, mode, ind):
        v, inner = self.var, ind + "    "
        n = self.bound.show(mode, 11) if self.bound is not None else str(self.n)
        n2 = self.bound.show(mode, 11) if self.bound is not None else str(2 * self.n)
        body = body_lines(self.body, mode, inner)
        if self.kind == "for":
            incr = {"++": v + "++", "pre": "++" + v, "+=": v + " += 1", "=": "%s = %s + 1" % (v, v)}[self.incr]
            return [ind + "for (int %s = 0; %s < %s; %s) {" % (v, v, n, incr)] + body + [ind + "}"]
        if self.kind == "for_big":
            return ([ind + "for (int %s = 0; %s < %d; %s++) {" % (v, v, self.big, v),
                     inner + "if (%s >= %s) break;" % (v, n)] + body + [ind + "}"])
        if self.kind == "for_u":
            if self.bound is None:
                n += "u"
            return [ind + "for (uint %s = 0u; %s < %s; %s++) {" % (v, v, n, v)] + body + [ind + "}"]
        if self.kind == "for_down":
            return [ind + "for (int %s = %s; %s > 0; %s--) {" % (v, n, v, v)] + body + [ind + "}"]
        if self.kind == "for_step":
            return [ind + "for (int %s = 0; %s < %s; %s += 2) {" % (v, v, n2, v)] + body + [ind + "}"]
        if self.kind == "while":
            return ([ind + "{", inner + "int %s = %s;" % (v, n), inner + "while (%s > 0) {" % v,
                     inner + "    %s--;" % v] + body_lines(self.body, mode, inner + "    ")
                    + [inner + "}", ind + "}"])
        if self.kind == "dowhile":
            return ([ind + "{", inner + "int %s = %s;" % (v, n), inner + "do {",
                     inner + "    %s--;" % v] + body_lines(self.body, mode, inner + "    ")
                    + [inner + "} while (%s > 0);" % v, ind + "}"])
        raise AssertionError(self.kind)


class ArrDecl:
    def __init__(self, ty, spelling, name, size, size_expr=None):
        self.ty, self.spelling, self.name, self.size, self.size_expr = ty, spelling, name, size, size_expr

    def lines(self, mode, ind):
        size = self.size_expr.show(mode) if self.size_expr is not None else str(self.size)
        return [ind + "%s %s[%s];" % (self.spelling, self.name, size)]


class ArrAssign:
    def __init__(self, name, index, op, rhs, post_av):
        self.name, self.index, self.op, self.rhs, self.post_av = name, index, op, rhs, post_av

    def lines(self, mode, ind):
        return [ind + "%s[%s] %s %s;" % (self.name, self.index.show(mode), self.op, self.rhs.show(mode, 2))]


class Return:
    def __init__(self, e):
        self.e = e

    def lines(self, mode, ind):
        return [ind + "return %s;" % self.e.show(mode)]


class Helper:
    """A scalar helper function defined before the kernel (ext)."""

    def __init__(self, name, ret, params, body, ret_av):
        self.name, self.ret, self.params, self.body, self.ret_av = name, ret, params, body, ret_av

    def lines(self, mode):
        ps = ", ".join("%s %s" % (sp, n) for n, t, av, sp in self.params)
        return (["%s %s(%s) {" % (self.ret.name, self.name, ps)] + body_lines(self.body, mode, "    ")
                + ["}", ""])


class Store:
    def __init__(self, out, e, op="=", post_av=None):
        self.out, self.e, self.op, self.post_av = out, e, op, post_av

    def lines(self, mode, ind):
        if mode == "ocl":
            return [ind + "o%d[idy * W_ + idx] %s %s;" % (self.out, self.op, self.e.show(mode, 2))]
        return [ind + "o%d[idx][idy] %s %s;" % (self.out, self.op, self.e.show(mode, 2))]


def body_lines(stmts, mode, ind):
    out = []
    for s in stmts:
        out += s.lines(mode, ind)
    return out


class Program:
    def __init__(self, blocks, out_types, width, height, seed, s, t, u, boundary, pragma_style, helpers=()):
        self.blocks, self.out_types, self.helpers = blocks, out_types, list(helpers)
        self.width, self.height, self.seed, self.s, self.t, self.u = width, height, seed, s, t, u
        self.boundary, self.pragma_style = boundary, pragma_style    # image -> mode
        self.src = self.render("icl")

    def params(self, mode):
        if mode == "ocl":
            ps = ["__global const int* a", "__global const float* b", "__global const uchar* c",
                  "int s", "float t", "uint u"]
            ps += ["__global %s* o%d" % (t.name, i) for i, t in enumerate(self.out_types)]
            return ps + ["int W_", "int H_"]
        ps = ["Image<int> a", "Image<float> b", "Image<uchar> c", "int s", "float t", "uint u"]
        return ps + ["Image<%s> o%d" % (t.name, i) for i, t in enumerate(self.out_types)]

    def block_text(self, i, mode="icl"):
        return "\n".join(["    {"] + body_lines(self.blocks[i], mode, "        ") + ["    }"])

    def render(self, mode):
        lines = []
        if mode == "icl":
            lines.append("#pragma imcl grid(a, %s)" % ", ".join("o%d" % i for i in range(len(self.blocks))))
            conds = ["%s:%s" % (img, m) for img, m in sorted(self.boundary.items())
                     if m != "constant" or self.pragma_style == 1]
            if conds and self.pragma_style == 2:
                lines += ["#pragma imcl boundary_cond(%s)" % c for c in conds]
            elif conds:
                lines.append("#pragma imcl boundary_cond(%s)" % ", ".join(conds))
            for h in self.helpers:
                lines += h.lines(mode)
            lines.append("void prop(%s) {" % ", ".join(self.params(mode)))
            lines += ["    int x = a[idx][idy];", "    float y = b[idx][idy];", "    uchar z = c[idx][idy];"]
        else:
            lines.append("int bidx(int i, int n, int m) {\n"
                         "    if (i >= 0 && i < n) return i;\n"
                         "    if (m == 0) return -1;\n"
                         "    if (m == 1) return clamp(i, 0, n - 1);\n"
                         "    if (m == 3) return ((i % n) + n) % n;\n"
                         "    if (n == 1) return 0;\n"
                         "    int p = 2 * (n - 1); i = ((i % p) + p) % p;\n"
                         "    return i < n ? i : p - i;\n}")
            for img, ty in IMAGES.items():
                m = BOUNDARY_MODES.index(self.boundary.get(img, "constant"))
                lines.append("%s rd_%s(__global const %s* p, int X, int Y, int W_, int H_) {"
                             " X = bidx(X, W_, %d); Y = bidx(Y, H_, %d);"
                             " return (X >= 0 && Y >= 0) ? p[Y * W_ + X] : (%s)0; }"
                             % (ty.name, img, ty.name, m, m, ty.name))
                lines.append("#define RD_%s(X, Y) rd_%s(%s, X, Y, W_, H_)" % (img, img, img))
            for h in self.helpers:
                lines += h.lines(mode)
            lines.append("__kernel void prop(%s) {" % ", ".join(self.params(mode)))
            lines += ["    int idx = get_global_id(0), idy = get_global_id(1);",
                      "    int x = RD_a(idx, idy);", "    float y = RD_b(idx, idy);", "    uchar z = RD_c(idx, idy);"]
        for i in range(len(self.blocks)):
            lines.append(self.block_text(i, mode))
        lines.append("}")
        return "\n".join(lines) + "\n"

    def inputs(self):
        return make_inputs(self.seed, self.width, self.height)

    def __repr__(self):
        return "Program(size=%dx%d, seed=%d, s=%d, t=%r, u=%d):\n%s" % (
            self.width, self.height, self.seed, self.s, self.t, self.u, self.src)


def make_inputs(seed, width, height):
    rng = np.random.default_rng(seed)
    shape = (height, width)
    pick = rng.integers(0, 3, size=shape)
    small = rng.integers(-20, 21, size=shape)
    big = rng.integers(A_RANGE[0], A_RANGE[1] + 1, size=shape)
    special = rng.choice([0, 1, -1, 255, 256, -256, 4096, A_RANGE[0], A_RANGE[1]], size=shape)
    A = np.where(pick == 0, small, np.where(pick == 1, big, special)).astype(np.int32)
    qb = np.where(rng.integers(0, 2, size=shape) == 0, rng.integers(-12, 13, size=shape),
                  rng.integers(int(B_RANGE[0] * 4), int(B_RANGE[1] * 4) + 1, size=shape))
    B = (qb / 4.0).astype(np.float32)
    C = rng.integers(0, 256, size=shape).astype(np.uint8)
    A.flat[0] = A.flat[0] or 7
    B.flat[0] = B.flat[0] or np.float32(2.5)
    C.flat[0] = C.flat[0] or 200
    return A, B, C


# ---------------------------------------------------------------------------
# The reference model: a direct interpreter of the tree with C semantics
# ---------------------------------------------------------------------------


class GeneratorBug(AssertionError):
    """The model hit UB or left the predicted interval: a bug in this test."""


class BreakEx(Exception):
    pass


class ReturnEx(Exception):
    def __init__(self, value, ty):
        self.value, self.ty = value, ty


class ContinueEx(Exception):
    pass


def c_conv(v, ft, tt):
    if tt is FLOAT:
        return v if ft is FLOAT else np.float32(v)
    if ft is FLOAT:
        f = float(v)
        if not math.isfinite(f):
            raise GeneratorBug("non-finite float converted to %s" % tt)
        if tt is BOOL:
            return int(f != 0.0)
        r = math.trunc(f)
        if not (tt.lo <= r <= tt.hi):
            raise GeneratorBug("float %r out of range of %s" % (f, tt))
        return r
    if tt is BOOL:
        return int(v != 0)
    m = 1 << tt.bits
    return (v - tt.lo) % m + tt.lo


def c_truth(v, t):
    return float(v) != 0.0 if t is FLOAT else v != 0


def c_binop(op, a, at, b, bt):
    if op == "&&":
        return int(c_truth(a, at) and c_truth(b, bt))
    if op == "||":
        return int(c_truth(a, at) or c_truth(b, bt))
    if op in SHIFT_OPS:
        pt = promote(at)
        a = c_conv(a, at, pt)
        n = c_conv(b, bt, promote(bt))
        if not 0 <= n <= 31:
            raise GeneratorBug("shift count %d" % n)
        if op == ">>":
            return a >> n                     # arithmetic for negative int
        if pt is INT:
            if a < 0 or (a << n) > INT_MAX:
                raise GeneratorBug("signed << overflow %d << %d" % (a, n))
            return a << n
        return (a << n) & UMAX
    ct = usual(at, bt)
    a, b = c_conv(a, at, ct), c_conv(b, bt, ct)
    if op in CMP_OPS:
        return int({"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b,
                    "==": a == b, "!=": a != b}[op])
    if ct is FLOAT:
        with np.errstate(all="ignore"):
            r = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                 "/": lambda: a / b}[op]()
        assert isinstance(r, np.float32)
        if not np.isfinite(r):
            raise GeneratorBug("float %s gives %r" % (op, r))
        return r
    if op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    elif op in "/%":
        if b == 0:
            raise GeneratorBug("division by zero")
        q = abs(a) // abs(b)
        if (a < 0) != (b < 0):
            q = -q
        r = q if op == "/" else a - b * q
        if ct is INT and not INT_MIN <= q <= INT_MAX:
            raise GeneratorBug("INT_MIN / -1")
    elif op == "&":
        r = a & b
    elif op == "|":
        r = a | b
    elif op == "^":
        r = a ^ b
    else:
        raise AssertionError(op)
    if ct is INT:
        if not INT_MIN <= r <= INT_MAX:
            raise GeneratorBug("signed overflow in %d %s %d" % (a, op, b))
        return r
    return r & UMAX


def c_unop(op, v, t):
    if op == "!":
        return int(not c_truth(v, t))
    if t is FLOAT:
        return v if op == "+" else -v
    pt = promote(t)
    v = c_conv(v, t, pt)
    if op == "+":
        return v
    if op == "~":
        return ~v if pt is INT else UMAX - v
    if pt is INT:
        if v == INT_MIN:
            raise GeneratorBug("-INT_MIN")
        return -v
    return (-v) & UMAX


def c_call(fn, args, tys):
    if fn == "abs":
        return abs(args[0])
    if fn in ("min", "fmin"):
        return min(args[0], args[1]) if not tys[0].is_float else (args[1] if args[1] < args[0] else args[0])
    if fn in ("max", "fmax"):
        return max(args[0], args[1]) if not tys[0].is_float else (args[1] if args[1] > args[0] else args[0])
    if fn == "clamp":
        x, lo, hi = args
        return min(max(x, lo), hi)
    if fn == "fabs":
        return np.float32(abs(args[0]))
    if fn == "floor":
        return np.floor(args[0])
    if fn == "sqrt":
        if args[0] < 0:
            raise GeneratorBug("sqrt of negative")
        return np.sqrt(args[0])
    raise AssertionError(fn)


def eval_const(e):
    """Value of an expression made of literals only."""
    m = Model.__new__(Model)
    m.helpers, m.imgs, m.prog = {}, {}, None
    return m.ev(e, {})


class Model:
    def __init__(self, prog):
        self.prog = prog
        self.A, self.B, self.C = prog.inputs()
        self.imgs = {"a": self.A, "b": self.B, "c": self.C}
        self.helpers = {h.name: h for h in prog.helpers}

    def check(self, e, v):
        av = e.av
        fv = float(v)
        if not (av.lo <= fv <= av.hi):
            raise GeneratorBug("value %r outside predicted %r of %s" % (v, av, e.show("icl")))
        if e.ty is FLOAT:
            if not isinstance(v, np.float32):
                raise GeneratorBug("float value of wrong Python type")
        elif not isinstance(v, int):
            raise GeneratorBug("int value of wrong Python type %r" % type(v))
        return v

    def ev(self, e, env):
        return self.check(e, self._ev(e, env))

    def _ev(self, e, env):
        if isinstance(e, Lit):
            return np.float32(e.value) if e.ty is FLOAT else e.value
        if isinstance(e, Var):
            return env[e.name][1]
        if isinstance(e, Img):
            arr = self.imgs[e.img]
            mode = self.prog.boundary.get(e.img, "constant")
            X = boundary_index(self.ev(e.xi, env), arr.shape[1], mode)
            Y = boundary_index(self.ev(e.yi, env), arr.shape[0], mode)
            if X is not None and Y is not None:
                v = arr[Y, X]
                return np.float32(v) if e.ty is FLOAT else int(v)
            return np.float32(0) if e.ty is FLOAT else 0
        if isinstance(e, Dim):
            return e.av.lo
        if isinstance(e, ArrRead):
            arr = env[e.name][1]
            i = self.ev(e.index, env)
            if not 0 <= i < len(arr) or arr[i] is None:
                raise GeneratorBug("bad read %s[%d]" % (e.name, i))
            return arr[i]
        if isinstance(e, OutRead):
            v = self.out[e.out][env["idy"][1], env["idx"][1]]
            return np.float32(v) if e.ty is FLOAT else int(v)
        if isinstance(e, Un):
            return c_unop(e.op, self.ev(e.c, env), e.c.ty)
        if isinstance(e, Bin):
            a = self.ev(e.l, env)
            if e.op == "&&" and not c_truth(a, e.l.ty):
                return 0
            if e.op == "||" and c_truth(a, e.l.ty):
                return 1
            b = self.ev(e.r, env)
            r = c_binop(e.op, a, e.l.ty, b, e.r.ty)
            if e.ty is FLOAT and e.av.k is not None:
                # self-check of the exactness analysis: float64 has no rounding here
                a64, b64 = float(c_conv(a, e.l.ty, FLOAT)), float(c_conv(b, e.r.ty, FLOAT))
                exact = {"+": lambda: a64 + b64, "-": lambda: a64 - b64, "*": lambda: a64 * b64,
                         "/": lambda: a64 / b64}[e.op]()
                if exact != float(r):
                    raise GeneratorBug("inexact result in an exact node: " + e.show("icl"))
            return r
        if isinstance(e, Tern):
            c = self.ev(e.c, env)
            br = e.a if c_truth(c, e.c.ty) else e.b
            return c_conv(self.ev(br, env), br.ty, e.ty)
        if isinstance(e, Cast):
            return c_conv(self.ev(e.c, env), e.c.ty, e.ty)
        if isinstance(e, Call) and e.fn in self.helpers:
            h = self.helpers[e.fn]
            henv = {}
            for (pname, pt, pav, _), a in zip(h.params, e.args):
                v = c_conv(self.ev(a, env), a.ty, pt)
                if not pav.lo <= float(v) <= pav.hi:
                    raise GeneratorBug("argument %s=%r of %s outside %r" % (pname, v, h.name, pav))
                henv[pname] = [pt, v]
            try:
                self.run_stmts(h.body, henv)
            except ReturnEx as r:
                return c_conv(r.value, r.ty, h.ret)
            raise GeneratorBug("%s did not return" % h.name)
        if isinstance(e, Call):
            args = [self.ev(a, env) for a in e.args]
            return c_call(e.fn, args, [a.ty for a in e.args])
        if isinstance(e, IncDecEx):
            t, old = env[e.name]
            new = self.incdec(t, old, e.op)
            env[e.name] = [t, new]
            return new if e.prefix else old
        raise AssertionError(e)

    def incdec(self, t, v, op):
        r = c_binop("+" if op == "++" else "-", v, t, 1, INT)
        return c_conv(r, usual(t, INT), t)

    def set(self, env, name, v, post_av):
        t = env[name][0]
        env[name] = [t, v]
        if post_av is not None and not (post_av.lo <= float(v) <= post_av.hi):
            raise GeneratorBug("%s = %r outside predicted %r" % (name, v, post_av))

    def run_stmts(self, stmts, env):
        for s in stmts:
            self.run_stmt(s, env)

    def run_stmt(self, s, env):
        if isinstance(s, Decl):
            for name, init, post_av in s.items:
                v = self.ev(init, env)
                env[name] = [s.ty, None]
                self.set(env, name, c_conv(v, init.ty, s.ty), post_av)
        elif isinstance(s, Assign):
            t = env[s.name][0]
            v = self.ev(s.rhs, env)
            if s.op == "=":
                r = c_conv(v, s.rhs.ty, t)
            else:
                op = s.op[:-1]
                raw = c_binop(op, env[s.name][1], t, v, s.rhs.ty)
                rt = promote(t) if op in SHIFT_OPS else usual(t, s.rhs.ty)
                r = c_conv(raw, rt, t)
            self.set(env, s.name, r, s.post_av)
        elif isinstance(s, IncDec):
            t, v = env[s.name]
            self.set(env, s.name, self.incdec(t, v, s.op), s.post_av)
        elif isinstance(s, If):
            c = self.ev(s.cond, env)
            self.run_stmts(s.then if c_truth(c, s.cond.ty) else s.els, env)
        elif isinstance(s, ArrDecl):
            if s.size_expr is not None and self.ev(s.size_expr, env) != s.size:
                raise GeneratorBug("array size expression")
            env[s.name] = [s.ty, [None] * s.size]
        elif isinstance(s, ArrAssign):
            t, arr = env[s.name]
            i = self.ev(s.index, env)
            if not 0 <= i < len(arr):
                raise GeneratorBug("bad write %s[%d]" % (s.name, i))
            v = self.ev(s.rhs, env)
            if s.op == "=":
                r = c_conv(v, s.rhs.ty, t)
            else:
                if arr[i] is None:
                    raise GeneratorBug("uninitialised %s[%d]" % (s.name, i))
                op = s.op[:-1]
                raw = c_binop(op, arr[i], t, v, s.rhs.ty)
                r = c_conv(raw, promote(t) if op in SHIFT_OPS else usual(t, s.rhs.ty), t)
            if not s.post_av.lo <= float(r) <= s.post_av.hi:
                raise GeneratorBug("%s[%d] = %r outside %r" % (s.name, i, r, s.post_av))
            arr[i] = r
        elif isinstance(s, Return):
            raise ReturnEx(self.ev(s.e, env), s.e.ty)
        elif isinstance(s, Jump):
            raise BreakEx() if s.kind == "break" else ContinueEx()
        elif isinstance(s, Loop):
            self.run_loop(s, env)
        elif isinstance(s, Store):
            v = self.ev(s.e, env)
            t = self.prog.out_types[s.out]
            pos = env["idy"][1], env["idx"][1]
            if s.op == "=":
                r = c_conv(v, s.e.ty, t)
            else:
                cur = self.out[s.out][pos]
                cur = np.float32(cur) if t is FLOAT else int(cur)
                op = s.op[:-1]
                raw = c_binop(op, cur, t, v, s.e.ty)
                r = c_conv(raw, promote(t) if op in SHIFT_OPS else usual(t, s.e.ty), t)
            if s.post_av is not None and not (s.post_av.lo <= float(r) <= s.post_av.hi):
                raise GeneratorBug("o%d = %r outside predicted %r" % (s.out, r, s.post_av))
            self.out[s.out][pos] = r
        else:
            raise AssertionError(s)

    def run_loop(self, s, env):
        def body():
            try:
                self.run_stmts(s.body, env)
            except ContinueEx:
                pass
        v, n = s.var, s.n
        if s.bound is not None and self.ev(s.bound, env) != (2 * n if s.kind == "for_step" else n):
            raise GeneratorBug("loop bound expression")
        try:
            if s.kind in ("for", "for_u"):
                env[v] = [INT if s.kind == "for" else UINT, 0]
                while env[v][1] < n:
                    body()
                    env[v][1] += 1
            elif s.kind == "for_big":
                env[v] = [INT, 0]
                while env[v][1] < s.big:
                    if env[v][1] >= n:
                        break
                    body()
                    env[v][1] += 1
            elif s.kind == "for_down":
                env[v] = [INT, n]
                while env[v][1] > 0:
                    body()
                    env[v][1] -= 1
            elif s.kind == "for_step":
                env[v] = [INT, 0]
                while env[v][1] < 2 * n:
                    body()
                    env[v][1] += 2
            elif s.kind == "while":
                env[v] = [INT, n]
                while env[v][1] > 0:
                    env[v][1] -= 1
                    body()
            elif s.kind == "dowhile":
                env[v] = [INT, n]
                while True:
                    env[v][1] -= 1
                    body()
                    if not env[v][1] > 0:
                        break
        except BreakEx:
            pass

    def run(self):
        p = self.prog
        h, w = p.height, p.width
        self.out = [np.zeros((h, w), dtype=t.dtype) for t in p.out_types]
        for yy in range(h):
            for xx in range(w):
                env = {"idx": [INT, xx], "idy": [INT, yy], "s": [INT, p.s],
                       "t": [FLOAT, np.float32(p.t)], "u": [UINT, p.u],
                       "x": [INT, int(self.A[yy, xx])], "y": [FLOAT, self.B[yy, xx]],
                       "z": [UCHAR, int(self.C[yy, xx])]}
                for blk in p.blocks:
                    self.run_stmts(blk, env)
        return self.out


# ---------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------


class VarInfo:
    def __init__(self, ty, mutable, level):
        self.ty, self.mutable, self.level = ty, mutable, level   # level: loop depth at declaration


class Budget:
    """Envelope of an int/float variable mutated inside a constant-trip loop.

    Invariant (for the whole loop): var in base +- (sum of additive steps),
    and the additive steps over all iterations are at most trips * B, so
    var is always inside W = base +- trips * B.  Additive statements
    (v += e, v -= e, ++, --) consume |e| (times the trip counts of the inner
    loops) from the per-iteration budget `rem`; any other assignment must
    land inside `base`."""

    def __init__(self, base=None, W=None, rem=0, kW=None, frozen=False):
        self.base, self.W, self.rem, self.kW, self.frozen = base, W, rem, kW, frozen


class Frame:
    def __init__(self, trips):
        self.trips = trips
        self.budgets = {}
        self.mutated = set()


def fminmax(fn, a, b):
    if fn in ("min", "fmin"):
        lo, hi = min(a.lo, b.lo), min(a.hi, b.hi)
    else:
        lo, hi = max(a.lo, b.lo), max(a.hi, b.hi)
    if isinstance(a, IAV):
        return IAV(lo, hi)
    k = None if a.k is None or b.k is None else max(a.k, b.k)
    return FAV(lo, hi, k, max(a.err, b.err))


def clamp_av(x, lo, hi):
    c = lambda v: min(max(v, lo), hi)
    if isinstance(x, IAV):
        return IAV(c(x.lo), c(x.hi))
    return FAV(c(x.lo), c(x.hi), x.k, x.err)


def compound_av(t, cur, op, rhs):
    """Abstract value of `v op rhs` (op: = += -= ...) stored back into type t."""
    if op == "=":
        return conv_av(rhs.av, rhs.ty, t)
    res = abin(op[:-1], t, cur, rhs.ty, rhs.av)
    return None if res is None else conv_av(res[1], res[0], t)


class Gen:
    def __init__(self, draw, width=7, height=5):
        self.draw = draw
        self.width, self.height = width, height
        self.info, self.state = {}, {}
        self.scopes = [[]]
        self.frames = []
        self.loopvars = []
        self.counter = 0
        self.out_read = None        # (k, type, av) once o<k> has been written
        self.helpers = []
        self.arrays = {}            # name -> (type, size, envelope of every element)
        self.in_helper = None       # (return type, [return avs]) while generating a helper
        self.const_only = False     # literal leaves only (constant expressions)
        self.ice = False            # ... and integer-only, without calls

    # -- drawing helpers (every choice shrinks towards the first/simplest option)
    def int(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def pick(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def chance(self, pct):
        return self.int(0, 99) >= 100 - pct

    def wpick(self, opts):
        opts = [(w, v) for w, v in opts if w > 0]
        n = self.int(0, sum(w for w, _ in opts) - 1)
        for w, v in opts:
            if n < w:
                return v
            n -= w
        raise AssertionError

    # -- scopes and variables
    def visible(self):
        return [n for sc in self.scopes for n in sc if n in self.info]

    def visible_arrays(self):
        return [n for sc in self.scopes for n in sc if n in self.arrays]

    def declare(self, name, ty, av, mutable=True):
        self.info[name] = VarInfo(ty, mutable, len(self.frames))
        self.state[name] = av
        self.scopes[-1].append(name)

    def fresh(self, prefix="v"):
        self.counter += 1
        return "%s%d" % (prefix, self.counter)

    def owner(self, name):
        lvl = self.info[name].level
        return self.frames[lvl] if len(self.frames) > lvl else None

    def assignable(self, name):
        inf = self.info[name]
        if not inf.mutable:
            return False
        fr = self.owner(name)
        return fr is None or not (name in fr.budgets and fr.budgets[name].frozen)

    def commit(self, name, new_av, delta=None, dry=False):
        """Post-state of an assignment to `name`, or None when the loop
        envelope rules forbid it.  delta: (|step|, k) for additive updates."""
        inf = self.info[name]
        fr = self.owner(name)
        if fr is None:
            post = new_av
        elif name not in fr.budgets:      # uint / narrow / bool: envelope is the whole type
            post = new_av
        else:
            bud = fr.budgets[name]
            post = None
            if delta is not None and (bud.kW is None or (delta[1] is not None and delta[1] <= bud.kW)):
                cost = delta[0]
                for f in self.frames[inf.level + 1:]:
                    cost *= f.trips
                if cost <= bud.rem:
                    if not dry:
                        bud.rem -= cost
                    post = bud.W
            if post is None:
                if not subset(new_av, bud.base):
                    return None
                post = new_av
        if not dry:
            for f in self.frames[inf.level:]:
                f.mutated.add(name)
            self.state[name] = post
        return post

    # -- node builders (None when the operation could be UB)
    def lit_int(self, v, ty=INT):
        return Lit(ty, v, str(v) + ("u" if ty is UINT else ""))

    def lit_float(self, v):
        text = repr(float(v))
        node = Lit(FLOAT, abs(v), text.lstrip("-") + "f")
        return Un("-", node, FLOAT, FAV(v, v, node.av.k, 0.0)) if v < 0 else node

    def signed_int(self, v, ty=INT):
        node = self.lit_int(abs(v), ty)
        if v >= 0:
            return node
        ty2, av = aun("-", ty, node.av)
        return Un("-", node, ty2, av)

    def mk_bin(self, op, l, r):
        res = abin(op, l.ty, l.av, r.ty, r.av)
        if res is None:
            return None
        return Bin(op, l, r, res[0], res[1], tight=self.chance(15))

    def mk_un(self, op, c):
        res = aun(op, c.ty, c.av)
        return None if res is None else Un(op, c, res[0], res[1])

    def mk_cast(self, ty, c):
        av = conv_av(c.av, c.ty, ty)
        return None if av is None else Cast(ty, self.pick(ty.spellings), c, av)

    def mk_tern(self, c, a, b):
        if c.ty is FLOAT and c.av.k is None:
            return None
        rt = usual(a.ty, b.ty)
        x, y = conv_av(a.av, a.ty, rt), conv_av(b.av, b.ty, rt)
        return Tern(c, a, b, rt, hull(rt, x, y))

    def fit(self, e, ty):
        """Make the conversion of e to ty well defined (clamp a float)."""
        if ty.is_float or not e.ty.is_float or conv_av(e.av, e.ty, ty) is not None:
            return e
        lo, hi = max(ty.lo, -FMAX), min(ty.hi, FMAX)
        return Call("clamp", [e, self.lit_float(lo), self.lit_float(hi)], FLOAT,
                    clamp_av(e.av, lo, hi))

    def nonzero(self, e):
        """A divisor that cannot be 0 (and, for float, has |d| >= 1/2)."""
        if e.ty is FLOAT:
            if e.av.lo >= 0.5 or e.av.hi <= -0.5:
                return e
            f = Call("fabs", [e], FLOAT, FAV(0.0 if e.av.lo <= 0 <= e.av.hi else min(abs(e.av.lo), abs(e.av.hi)),
                                             mag(e.av), e.av.k, e.av.err))
            return self.mk_bin("+", f, self.lit_float(1.0)) or self.lit_float(2.0)
        if e.av.lo > 0 or e.av.hi < 0:
            return e
        one = self.lit_int(1, UINT if promote(e.ty) is UINT else INT)
        if e.av.lo < 0:
            mask = Lit(INT, 255, self.pick(["255", "0xFF", "0xff", "0377"]))
            e = self.mk_bin("&", e, mask)
        return self.mk_bin("|", e, one)

    def shift_count(self, d, exact):
        if self.chance(50):
            return self.lit_int(self.int(0, 31), self.pick([INT, INT, UINT]))
        r = self.expr("int", d, exact)
        av = iconv(r.av, promote(r.ty))
        if av.lo < 0 or av.hi > 31:
            r = self.mk_bin("&", r, Lit(INT, 31, self.pick(["31", "0x1f", "037"])))
        return r

    # -- literals and leaves
    def int_literal(self):
        kind = self.wpick([(6, 0), (3, 1), (1, 2)])
        if kind == 0:
            v = self.int(0, 9)
        elif kind == 1:
            v = self.int(10, 300)
        else:
            v = self.pick([255, 256, 1000, 4096, 65535, 65536, 1 << 20, INT_MAX, 0x80000000, UMAX])
        base = self.wpick([(6, "dec"), (2, "hex"), (1, "oct")])
        suffix = self.wpick([(7, ""), (2, "u"), (1, "U")])
        if base == "dec":
            text = str(v)
            if v > INT_MAX and not suffix:
                suffix = "u"
        elif base == "hex":
            text = self.pick(["0x%x", "0X%X"]) % v
        else:
            text = "0%o" % v if v else "0"
        ty = UINT if (suffix or v > INT_MAX) else INT
        return Lit(ty, v, text + suffix)

    def float_literal(self):
        if self.chance(85):
            v = self.int(0, 40) / 4.0
        else:
            v = self.pick([0.1, 0.3, 1e-3, 100.0, 1000.0, 3.14159, 0.0625, 1e4])
        base = repr(v)
        style = self.wpick([(4, "f"), (1, "F"), (3, ""), (1, "dot"), (1, "exp")])
        if style == "dot" and (base.endswith(".0") or base.startswith("0.")):
            text = base[:-1] if base.endswith(".0") else base[1:]
            text += self.pick(["f", ""])
        elif style == "exp" and v != 0:
            from decimal import Decimal
            m = str(Decimal(base).scaleb(1))
            text = (m + self.pick(["e-1", "E-1"]) + self.pick(["f", ""])) if "E" not in m else base + "f"
        else:
            text = base + (style if style in ("f", "F") else "")
        ocl = text if text[-1] in "fF" else text + "f"
        value = float(np.float32(float(text.rstrip("fF"))))
        return Lit(FLOAT, value, text, ocl)

    def index_expr(self, img, axis):
        base = "idx" if axis == 0 else "idy"
        bv = Var(base, INT, self.state[base])
        small = [n for n in self.visible() if self.info[n].ty is INT and n not in PREAMBLE
                 and -4 <= self.state[n].lo and self.state[n].hi <= 4]
        kind = self.wpick([(16, "same"), (4, "const"), (3 if self.loopvars else 0, "loop"),
                           (1 if small else 0, "local"), (1, "gather"), (1, "flip")])
        if kind == "same":
            return bv
        if kind == "const":
            if self.chance(30):
                e = self.mk_bin("+", bv, self.const_expr(self.pick([-3, -2, -1, 1, 2, 3]), int_only=True))
                if e is not None:
                    return e
            return self.mk_bin(self.pick(["+", "-"]), bv, self.lit_int(self.int(1, 3)))
        if kind in ("loop", "local"):
            v = self.pick(self.loopvars if kind == "loop" else small)
            e = self.mk_bin(self.pick(["+", "-"]), bv, Var(v, INT, self.state[v]))
            if self.chance(30):
                e = self.mk_bin(self.pick(["+", "-"]), e, self.lit_int(1))
            return e
        if kind == "gather":
            if self.chance(30):
                other = "idy" if axis == 0 else "idx"
                return Var(other, INT, self.state[other])
            vs = [n for n in self.visible() if not self.info[n].ty.is_float]
            v = self.pick(vs)
            return self.mk_bin("&", Var(v, self.info[v].ty, self.state[v]), Lit(INT, 7, "7"))
        dim = Dim(img, "width" if axis == 0 else "height", self.width if axis == 0 else self.height)
        return self.mk_bin("-", self.mk_bin("-", dim, self.lit_int(1)), bv)

    def image_read(self, img):
        return Img(img, self.index_expr(img, 0), self.index_expr(img, 1))

    def const_expr(self, target, int_only=False, ice=False):
        """A constant expression (casts, unsigned arithmetic, ...) whose value is
        target; C compilers must fold it exactly (loop trip counts, array sizes,
        indices, image offsets).  ice: an integer constant expression in the C
        sense (no float arithmetic, no calls), as an array size needs."""
        if self.chance(40):
            return self.signed_int(target)
        self.const_only, self.ice = True, ice
        try:
            e = self.expr("int", self.int(1, 3), True)
        finally:
            self.const_only = self.ice = False
        v = eval_const(e)
        if promote(e.ty) is UINT:
            n = self.mk_bin("+", e, self.lit_int((target - v) % 2 ** 32, UINT))
            if n is not None and int_only:
                n = self.mk_cast(INT, n)
        elif target - v >= 0:
            n = self.mk_bin("+", e, self.lit_int(target - v)) if target - v <= INT_MAX else None
        else:
            n = self.mk_bin("-", e, self.lit_int(v - target)) if v - target <= INT_MAX else None
        if n is None or eval_const(n) != target:
            return self.signed_int(target)
        return n

    def leaf(self, want, exact):
        if self.const_only:
            return self.float_literal() if want == "float" else self.int_literal()
        if want == "float":
            vs = [n for n in self.visible() if self.info[n].ty is FLOAT
                  and (not exact or self.state[n].k is not None)]
            out = self.out_read and self.out_read[1].is_float and (not exact or self.out_read[2].k is not None)
            arrs = [n for n in self.visible_arrays() if self.arrays[n][0] is FLOAT
                    and (not exact or self.arrays[n][2].k is not None)]
            kind = self.wpick([(3, "lit"), (4 if vs else 0, "var"), (0 if self.in_helper else 2, "img"),
                               (3 if out else 0, "out"), (3 if arrs else 0, "arr")])
            if kind == "arr":
                return self.arr_read(self.pick(arrs))
            if kind == "lit":
                return self.float_literal()
            if kind == "img":
                return self.image_read("b")
            if kind == "out":
                return OutRead(*self.out_read)
        else:
            vs = [n for n in self.visible() if self.info[n].ty is not FLOAT]
            arrs = [n for n in self.visible_arrays() if self.arrays[n][0] is not FLOAT]
            kind = self.wpick([(3, "lit"), (5 if vs else 0, "var"), (0 if self.in_helper else 2, "img"),
                               (0 if self.in_helper else 1, "dim"), (3 if arrs else 0, "arr"),
                               (3 if self.out_read and not self.out_read[1].is_float else 0, "out")])
            if kind == "lit":
                return self.int_literal()
            if kind == "img":
                return self.image_read(self.pick(["a", "c"]))
            if kind == "arr":
                return self.arr_read(self.pick(arrs))
            if kind == "dim":
                which = self.pick(["width", "height"])
                return Dim(self.pick(list(IMAGES)), which, self.width if which == "width" else self.height)
            if kind == "out":
                return OutRead(*self.out_read)
        local = [n for n in vs if n not in PREAMBLE]
        name = self.pick(local if local and self.chance(70) else vs)
        return Var(name, self.info[name].ty, self.state[name])

    # -- expressions
    def expr(self, want, depth, exact):
        if self.ice:
            want = "int"
        if want == "any":
            want = self.pick(["int", "float"])
        if depth <= 0 or self.chance(20):
            return self.leaf(want, exact)
        hs = [h for h in self.helpers if h.ret.is_float == (want == "float") and not self.const_only]
        if want == "int":
            kind = self.wpick([(4, "arith"), (2, "bit"), (2, "shift"), (2, "cmp"), (1, "logic"),
                               (2, "unary"), (2, "tern"), (2, "cast"), (0 if self.ice else 2, "call"),
                               (2 if hs else 0, "hcall")])
        else:
            kind = self.wpick([(5, "farith"), (2, "fdiv"), (1, "fun"), (2, "ftern"),
                               (1, "fcast"), (3, "fcall"), (2 if hs else 0, "hcall")])
        if kind == "hcall":
            node = self.p_hcall(self.pick(hs), depth - 1)
        else:
            node = getattr(self, "p_" + kind)(depth - 1, exact)
        if node is None or (exact and node.ty is FLOAT and node.av.k is None):
            return self.leaf(want, exact)
        if self.chance(8):
            node.paren = True
        return node

    def p_arith(self, d, exact):
        op = self.wpick([(3, "+"), (3, "-"), (3, "*"), (2, "/"), (2, "%")])
        l, r = self.expr("int", d, exact), self.expr("int", d, exact)
        if op in "/%":
            r = self.nonzero(r)
        n = self.mk_bin(op, l, r)
        if n is None:                     # would overflow int: do it in uint
            n = self.mk_bin(op, self.mk_cast(UINT, l), r)
        return n

    def p_bit(self, d, exact):
        return self.mk_bin(self.pick(BIT_OPS), self.expr("int", d, exact), self.expr("int", d, exact))

    def p_shift(self, d, exact):
        op = self.pick(SHIFT_OPS)
        l, r = self.expr("int", d, exact), self.shift_count(d, exact)
        n = self.mk_bin(op, l, r)
        if n is None:
            n = self.mk_bin(op, self.mk_cast(UINT, l), r)
        return n

    def p_cmp(self, d, exact):
        return self.mk_bin(self.pick(CMP_OPS), self.expr("any", d, True), self.expr("any", d, True))

    def p_logic(self, d, exact):
        return self.mk_bin(self.pick(LOGIC_OPS), self.expr("any", d, True), self.expr("any", d, True))

    def p_unary(self, d, exact):
        op = self.pick(["-", "~", "!", "+"])
        c = self.expr("any", d, True) if op == "!" else self.expr("int", d, exact)
        n = self.mk_un(op, c)
        if n is None:
            n = self.mk_un(op, self.mk_cast(UINT, c))
        return n

    def p_tern(self, d, exact):
        return self.mk_tern(self.expr("any", d, True), self.expr("int", d, exact), self.expr("int", d, exact))

    def p_cast(self, d, exact):
        ty = self.pick(INTEGER_TYPES)
        c = self.fit(self.expr("any", d, True), ty)
        return self.mk_cast(ty, c)

    def p_call(self, d, exact):
        fn = self.pick(["abs", "min", "max", "clamp"])
        if fn == "abs":
            c = self.expr("int", d, exact)
            if c.ty is BOOL:
                c = self.mk_cast(INT, c)
            a = c.av
            av = IAV(a.lo, a.hi) if a.lo >= 0 else IAV(-a.hi, -a.lo) if a.hi <= 0 else IAV(0, max(-a.lo, a.hi))
            return Call("abs", [c], UNSIGNED_OF[c.ty], av)
        if fn in ("min", "max"):
            l, r = self.expr("int", d, exact), self.expr("int", d, exact)
            if l.ty is BOOL:
                l = self.mk_cast(INT, l)
            if r.ty is not l.ty:
                r = self.mk_cast(l.ty, r)
            return Call(fn, [l, r], l.ty, fminmax(fn, l.av, r.av))
        ty = self.pick([INT, UINT])
        x = self.expr("int", d, exact)
        if x.ty is not ty:
            x = self.mk_cast(ty, x)
        if ty is INT:
            lo = self.int(-300, 10)
            hi = self.int(lo, 300)
        else:
            lo = self.int(0, 10)
            hi = self.int(lo, 300)
        return Call("clamp", [x, self.signed_int(lo, ty), self.signed_int(hi, ty)], ty, clamp_av(x.av, lo, hi))

    def p_farith(self, d, exact):
        l, r = self.expr("float", d, exact), self.expr("any", d, exact)
        if self.chance(50):
            l, r = r, l
        return self.mk_bin(self.pick(["+", "-", "*"]), l, r)

    def p_fdiv(self, d, exact):
        if exact or self.chance(40):
            l = self.expr("any", d, exact)
            r = self.lit_float(self.pick([2.0, 4.0, 0.5, 0.25, 8.0, -2.0, 3.0, 10.0, 1.5]))
        elif self.chance(70):
            l, r = self.expr("float", d, exact), self.nonzero(self.expr("any", d, exact))
        else:
            l, r = self.expr("int", d, exact), self.nonzero(self.expr("float", d, exact))
        return self.mk_bin("/", l, r)

    def p_fun(self, d, exact):
        return self.mk_un(self.pick(["-", "+"]), self.expr("float", d, exact))

    def p_ftern(self, d, exact):
        a, b = self.expr("float", d, exact), self.expr("any", d, exact)
        if self.chance(50):
            a, b = b, a
        return self.mk_tern(self.expr("any", d, True), a, b)

    def p_fcast(self, d, exact):
        return self.mk_cast(FLOAT, self.expr(self.pick(["int", "int", "float"]), d, exact))

    def p_fcall(self, d, exact):
        fn = self.pick(["fabs", "floor", "sqrt", "fmin", "fmax", "min", "max", "clamp"])
        if fn == "fabs":
            c = self.expr("float", d, exact)
            a = c.av
            lo = 0.0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi))
            return Call("fabs", [c], FLOAT, FAV(lo, mag(a), a.k, a.err))
        if fn == "floor":
            c = self.expr("float", d, True)
            if c.av.k is None:
                return None
            return Call("floor", [c], FLOAT, FAV(math.floor(c.av.lo), math.floor(c.av.hi), 0, 0.0))
        if fn == "sqrt":
            if exact:
                return None
            c = self.expr("float", d, False)
            if c.av.lo < 0:
                c = Call("fabs", [c], FLOAT, FAV(0.0, mag(c.av), c.av.k, c.av.err))
            a = c.av
            lo, hi = math.sqrt(max(a.lo, 0.0)), math.sqrt(a.hi)
            prop = 0.0
            if a.err > 0:
                prop = math.sqrt(a.err)
                if a.lo > 0:
                    prop = min(prop, a.err / (2 * math.sqrt(a.lo)))
            r = 3 * ulp(hi + 1e-30)
            return Call("sqrt", [c], FLOAT, FAV(lo - r, hi + r, None, prop + r))
        if fn == "clamp":
            x = self.expr("float", d, exact)
            lo = self.int(-40, 4) / 4.0
            hi = self.int(int(lo * 4), 40) / 4.0
            return Call("clamp", [x, self.lit_float(lo), self.lit_float(hi)], FLOAT, clamp_av(x.av, lo, hi))
        a, b = self.expr("float", d, exact), self.expr("float", d, exact)
        return Call(fn, [a, b], FLOAT, fminmax(fn, a.av, b.av))

    # -- private arrays
    def arr_index(self, size):
        lv = [n for n in self.visible() if self.info[n].ty in (INT, UINT)
              and self.state[n].lo >= 0 and self.state[n].hi < size]
        kind = self.wpick([(3, "lit"), (4 if lv else 0, "var"), (2 if size & (size - 1) == 0 else 0, "mask"),
                           (1, "clamp"), (1, "mod")])
        if kind == "lit":
            return self.const_expr(self.int(0, size - 1))
        if kind == "var":
            v = self.pick(lv)
            return Var(v, self.info[v].ty, self.state[v])
        e = self.expr("int", 1, True)
        if kind == "mask":
            return self.mk_bin("&", e, self.lit_int(size - 1))
        if kind == "mod":
            return self.mk_bin("%", self.mk_cast(UINT, e), self.lit_int(size, UINT))
        if e.ty is not INT:
            e = self.mk_cast(INT, e)
        return Call("clamp", [e, self.lit_int(0), self.lit_int(size - 1)], INT, clamp_av(e.av, 0, size - 1))

    def arr_read(self, name):
        ty, size, env = self.arrays[name]
        return ArrRead(name, self.arr_index(size), ty, env)

    def arr_value(self, ty, env, d):
        """An expression whose value, stored into an element, lies in env."""
        e = self.expr("any", d, env.k is not None if ty.is_float else True)
        if ty.is_float:
            if e.ty is not FLOAT:
                e = self.mk_cast(FLOAT, e)
            if env.k is not None and (e.av.k is None or e.av.k > env.k):
                if e.av.k is None:
                    return None
                e = Call("floor", [e], FLOAT, FAV(math.floor(e.av.lo), math.floor(e.av.hi), 0, 0.0))
            if not subset(e.av, env):
                e = Call("clamp", [e, self.lit_float(env.lo), self.lit_float(env.hi)], FLOAT,
                         clamp_av(e.av, env.lo, env.hi))
            return e if subset(e.av, env) else None
        e = self.fit(e, ty)
        av = conv_av(e.av, e.ty, ty)
        if not subset(av, env):
            if e.ty is not INT:
                e = self.mk_cast(INT, e)
            e = Call("clamp", [e, self.signed_int(env.lo), self.signed_int(env.hi)], INT,
                     clamp_av(e.av, env.lo, env.hi))
        return e

    def s_array(self, depth):
        ty = self.wpick([(3, INT), (3, FLOAT), (1, UINT), (1, UCHAR), (1, SHORT), (1, CHAR)])
        size = self.pick([4, 3, 5, 8, 1, 2])
        if ty is INT:
            env = IAV(*self.pick([(-100, 100), (-100000, 100000)]))
        elif ty is FLOAT:
            env = self.pick([FAV(-256.0, 256.0, 4, 0.0), FAV(-1000.0, 1000.0, None, 1e-2)])
        else:
            env = full_av(ty)
        name = self.fresh("m")
        out = [ArrDecl(ty, self.pick(ty.spellings), name, size,
                       self.const_expr(size, ice=True) if self.chance(30) else None)]
        if self.chance(50):           # initialise in a loop
            var = self.fresh("i")
            self.scopes.append([])
            self.declare(var, INT, IAV(0, size - 1), mutable=False)
            e = self.arr_value(ty, env, self.edepth())
            self.scopes.pop()
            if e is None:
                return []
            out.append(Loop("for", var, size, [ArrAssign(name, Var(var, INT, IAV(0, size - 1)), "=", e, env)],
                            self.pick(["++", "pre", "+=", "="])))
        else:
            for i in range(size):
                e = self.arr_value(ty, env, self.edepth())
                if e is None:
                    return []
                out.append(ArrAssign(name, self.lit_int(i), "=", e, env))
        self.arrays[name] = (ty, size, env)
        self.scopes[-1].append(name)
        return out

    def s_arrassign(self, depth):
        arrs = self.visible_arrays()
        if not arrs:
            return self.s_array(depth)
        name = self.pick(arrs)
        ty, size, env = self.arrays[name]
        index = self.arr_index(size)
        op = self.pick(["=", "+=", "-=", "*="] if ty.is_float or ty is INT else ["=", "+=", "-=", "^=", "|=", "*="])
        if op == "=":
            rhs = self.arr_value(ty, env, self.edepth())
            if rhs is None:
                return []
        else:
            rhs = self.expr("int" if op in ("^=", "|=") else "any", self.edepth(),
                            not ty.is_float or env.k is not None)
            av = compound_av(ty, env, op, rhs)
            if av is None or not subset(av, env):
                return []
        return [ArrAssign(name, index, op, rhs, env)]

    # -- helper functions
    def helper_arg(self, t, decl, d):
        if t is INT:
            a = self.expr("int", d, True)
            if a.ty is not INT:
                a = self.mk_cast(INT, a)
            if not subset(a.av, decl):
                a = Call("clamp", [a, self.signed_int(decl.lo), self.signed_int(decl.hi)], INT,
                         clamp_av(a.av, decl.lo, decl.hi))
            return a
        if t is FLOAT:
            a = self.expr("any", d, True)
            if a.ty is not FLOAT:
                a = self.mk_cast(FLOAT, a)
            if a.av.k is None or a.av.k > decl.k:
                a = Call("floor", [a], FLOAT, FAV(math.floor(a.av.lo), math.floor(a.av.hi), 0, 0.0))
            if not subset(a.av, decl):
                a = Call("clamp", [a, self.lit_float(decl.lo), self.lit_float(decl.hi)], FLOAT,
                         clamp_av(a.av, decl.lo, decl.hi))
            return a
        return self.fit(self.expr("any", d, True), t)     # narrow / uint / bool: converts

    def p_hcall(self, h, d):
        args = [self.helper_arg(t, av, d) for _, t, av, _ in h.params]
        return Call(h.name, args, h.ret, h.ret_av)

    def gen_helper(self, k):
        saved = (self.scopes, self.frames, self.loopvars, self.out_read)
        self.scopes, self.frames, self.loopvars, self.out_read = [[]], [], [], None
        ret = self.wpick([(3, INT), (2, FLOAT), (1, UINT), (1, UCHAR), (1, SHORT)])
        self.in_helper = (ret, [])
        params = []
        for _ in range(self.int(1, 3)):
            t = self.wpick([(3, INT), (2, FLOAT), (1, UINT), (1, UCHAR), (1, SHORT), (1, BOOL)])
            av = (IAV(-1000, 1000) if t is INT else FAV(-256.0, 256.0, 4, 0.0) if t is FLOAT else full_av(t))
            name = self.fresh("p")
            self.declare(name, t, av)
            params.append((name, t, av, self.pick(t.spellings)))
        body = self.stmts(self.int(0, 3), 1)
        body += self.s_return(0, final=True)
        avs = self.in_helper[1]
        ret_av = avs[0]
        for av in avs[1:]:
            ret_av = hull(ret, ret_av, av)
        self.in_helper = None
        self.scopes, self.frames, self.loopvars, self.out_read = saved
        return Helper("f%d" % k, ret, params, body, ret_av)

    def s_return(self, depth, final=False):
        ret, avs = self.in_helper
        e = self.fit(self.expr("any", self.edepth(), not ret.is_float), ret)
        avs.append(conv_av(e.av, e.ty, ret))
        if final:
            return [Return(e)]
        return [If(self.expr("any", self.edepth(), True), [Return(e)], [], braces=self.chance(50))]

    # -- statements
    def edepth(self):
        return self.int(0, 3)

    def assign_result(self, name, op, rhs):
        """(post value, additive delta) of `name op rhs`, or None."""
        t, cur = self.info[name].ty, self.state[name]
        av = compound_av(t, cur, op, rhs)
        if av is None:
            return None
        if op == "=":
            return av, None
        bop = op[:-1]
        delta = None
        if bop in "+-":
            if t is INT and not rhs.ty.is_float:
                delta = (mag(rhs.av), 0)
            elif t is FLOAT:
                r = conv_av(rhs.av, rhs.ty, FLOAT)
                if r.k is not None:
                    delta = (mag(r), r.k)
        return av, delta

    def s_decl(self, depth):
        ty = self.wpick([(4, INT), (3, FLOAT), (2, UINT), (1, UCHAR), (1, CHAR), (1, SHORT),
                         (1, USHORT), (1, BOOL)])
        items = []
        for _ in range(2 if self.chance(15) else 1):
            e = self.fit(self.expr("any", self.edepth(), not ty.is_float), ty)
            av = conv_av(e.av, e.ty, ty)
            name = self.fresh()
            self.declare(name, ty, av)
            items.append((name, e, av))
        return [Decl(ty, self.pick(ty.spellings), items, sep_assign=len(items) == 1 and self.chance(10))]

    def s_assign(self, depth):
        cands = [n for n in self.visible() if self.assignable(n)]
        if not cands:
            return self.s_decl(depth)
        name = self.pick(cands)
        t = self.info[name].ty
        if t.is_float:
            op = self.wpick([(3, "="), (3, "+="), (2, "-="), (2, "*="), (1, "/=")])
        else:
            op = self.wpick([(3, "="), (3, "+="), (2, "-="), (1, "*="), (1, "/="), (1, "%="),
                             (1, "&="), (1, "|="), (1, "^="), (1, "<<="), (1, ">>=")])
        fr = self.owner(name)
        exact = not t.is_float or (fr is not None and name in fr.budgets)
        if op in ("<<=", ">>="):
            rhs = self.shift_count(self.edepth(), exact)
        else:
            rhs = self.expr("int" if op in ("%=", "&=", "|=", "^=") else "any", self.edepth(), exact)
        if op in ("/=", "%="):
            rhs = self.nonzero(rhs)
        if op == "=":
            rhs = self.fit(rhs, t)
        res = self.assign_result(name, op, rhs)
        if res is None:
            return []
        post = self.commit(name, *res)
        if post is None:
            return []
        return [Assign(name, op, rhs, post)]

    def s_incdec(self, depth):
        cands = [n for n in self.visible() if self.assignable(n)]
        if not cands:
            return []
        name = self.pick(cands)
        op = self.pick(["++", "--"])
        res = self.assign_result(name, op[0] + "=", self.lit_int(1))
        if res is None:
            return []
        post = self.commit(name, *res)
        if post is None:
            return []
        return [IncDec(name, op, self.chance(40), post)]

    def s_postassign(self, depth):
        cands = [n for n in self.visible() if self.assignable(n)]
        if len(cands) < 2:
            return []
        v = self.pick(cands)
        w = self.pick([n for n in cands if n != v])
        op, prefix = self.pick(["++", "--"]), self.chance(50)
        tv, tw = self.info[v].ty, self.info[w].ty
        res = self.assign_result(v, op[0] + "=", self.lit_int(1))
        if res is None:
            return []
        val = res[0] if prefix else self.state[v]
        wav = conv_av(val, tv, tw)
        if wav is None or self.commit(v, *res, dry=True) is None or self.commit(w, wav, dry=True) is None:
            return []
        self.commit(v, *res)
        post = self.commit(w, wav)
        return [Assign(w, "=", IncDecEx(v, tv, op, prefix, val), post)]

    def sub_block(self, n, depth):
        self.scopes.append([])
        out = self.stmts(n, depth)
        self.scopes.pop()
        return out

    def s_if(self, depth):
        cond = self.expr("any", self.edepth(), True)
        saved = dict(self.state)
        names = self.visible()
        then = self.sub_block(self.int(0, 2), depth - 1)
        st_then = self.state
        self.state = dict(saved)
        els = self.sub_block(self.int(1, 2), depth - 1) if self.chance(40) else []
        st_else = self.state
        self.state = dict(saved)
        for n in names:
            self.state[n] = hull(self.info[n].ty, st_then[n], st_else[n])
        braces = not (len(then) == 1 and not els and isinstance(then[0], (Assign, IncDec, Jump))
                      and self.chance(40))
        return [If(cond, then, els, braces)]

    def s_jump(self, depth):
        cond = self.expr("any", self.edepth(), True)
        return [If(cond, [Jump(self.pick(["break", "continue"]))], [], braces=self.chance(50))]

    def s_loop(self, depth):
        kind = self.wpick([(4, "for"), (1, "for_u"), (1, "for_down"), (1, "for_step"),
                           (1, "while"), (1, "dowhile"), (1, "for_big")])
        n = self.int(0, 3)
        trips = max(n, 1) if kind == "dowhile" else n
        fr = Frame(trips)
        lvl = len(self.frames)
        saved = dict(self.state)
        names = [m for m in self.visible() if self.info[m].mutable]
        entry = {}
        for m in names:
            inf, cur = self.info[m], self.state[m]
            if inf.level < lvl:               # envelope owned by an enclosing loop
                b = self.frames[inf.level].budgets.get(m)
                if b is None:
                    entry[m] = full_av(inf.ty)
                elif not b.frozen:
                    entry[m] = b.W
            elif inf.ty is INT:
                K = self.pick([0, 16, 1000, 100000])
                base = IAV(min(cur.lo, -K), max(cur.hi, K))
                B = self.pick([0, 1, 8, 1000, 1 << 16])
                while B and (base.lo - (trips + 1) * B < INT_MIN or base.hi + (trips + 1) * B > INT_MAX):
                    B //= 16
                fr.budgets[m] = b = Budget(base, IAV(base.lo - trips * B, base.hi + trips * B), B)
                entry[m] = b.W
            elif inf.ty is FLOAT:
                b = Budget(frozen=True)
                if cur.k is not None:
                    for kW, K, B in ((max(cur.k, self.pick([0, 1, 2, 4])), self.pick([0, 4, 64]),
                                      self.pick([0, 1, 4, 32])), (cur.k, 0, 0)):
                        lo, hi = min(cur.lo, -K), max(cur.hi, K)
                        m_w = max(-lo, hi) + (trips + 1) * B
                        if m_w * 2.0 ** kW <= 2.0 ** EXACT_BITS and m_w <= FMAX:
                            b = Budget(FAV(lo, hi, kW, 0.0), FAV(lo - trips * B, hi + trips * B, kW, 0.0), B, kW)
                            entry[m] = b.W
                            break
                fr.budgets[m] = b
            else:
                entry[m] = full_av(inf.ty)
        self.state.update(entry)
        self.frames.append(fr)
        self.scopes.append([])
        var = self.fresh("i" if kind.startswith("for") else "w")
        vt = UINT if kind == "for_u" else INT
        vav = {"for": IAV(0, max(n - 1, 0)), "for_big": IAV(0, max(n - 1, 0)),
               "for_u": IAV(0, max(n - 1, 0)), "for_down": IAV(1, max(n, 1)),
               "for_step": IAV(0, max(2 * n - 2, 0)), "while": IAV(0, max(n - 1, 0)),
               "dowhile": IAV(-1 if n == 0 else 0, max(n - 1, -1))}[kind]
        self.declare(var, vt, vav, mutable=False)
        if vt is INT:
            self.loopvars.append(var)
        body = self.stmts(self.int(1, 3), depth - 1)
        if vt is INT:
            self.loopvars.pop()
        self.scopes.pop()
        self.frames.pop()
        for m in names:
            self.state[m] = entry[m] if m in fr.mutated else saved[m]
        bound = self.const_expr(2 * n if kind == "for_step" else n) if self.chance(30) else None
        big = self.pick([1000, 65536, 2000000000]) if kind == "for_big" else None
        return [Loop(kind, var, n, body, self.pick(["++", "pre", "+=", "="]), bound, big)]

    def stmt(self, depth):
        opts = [(4, "decl"), (4, "assign"), (1, "incdec"), (1, "postassign"), (1, "array"),
                (3 if self.visible_arrays() else 0, "arrassign")]
        if depth > 0:
            opts += [(2, "if"), (2 if len(self.frames) < 2 else 0, "loop")]
        if self.frames:
            opts.append((1, "jump"))
        if self.in_helper:
            opts.append((1, "return"))
        return getattr(self, "s_" + self.wpick(opts))(depth)

    def stmts(self, n, depth):
        out = []
        for _ in range(n):
            out += self.stmt(depth)
        return out

    def store_expr(self, ty):
        e = self.expr("any", self.int(0, 4), not ty.is_float)
        return self.fit(e, ty)

    def fold(self, e, name, ty):
        """e combined with variable `name` (so that its final value is observed)."""
        v = self.arr_read(name) if name in self.arrays else Var(name, self.info[name].ty, self.state[name])
        if ty is not FLOAT and v.ty is FLOAT and v.av.k is None:
            return e
        ops = ["+", "-"] if FLOAT in (e.ty, v.ty) else ["+", "-", "^"]
        n = self.mk_bin(self.pick(ops), e, v)
        if n is None and not e.ty.is_float:
            n = self.mk_bin("+", self.mk_cast(UINT, e), v)
        if n is None or (not ty.is_float and n.ty.is_float and n.av.k is None):
            return e
        return n

    def out_block(self, i, ty):
        self.scopes.append([])
        stmts = self.stmts(self.int(0, 4), 2)
        e = self.store_expr(ty)
        if not self.chance(10):
            for name in self.scopes[-1]:
                e = self.fold(e, name, ty)
        e = self.fit(e, ty)
        post = conv_av(e.av, e.ty, ty)
        stmts.append(Store(i, e, "=", post))
        self.out_read = (i, ty, post)
        if self.chance(20):        # read-modify-write of the output pixel
            ops = ["+=", "-=", "*="] if ty.is_float else ["+=", "-=", "*=", "^=", "|=", "&=", ">>="]
            op = self.pick(ops)
            rhs = self.shift_count(1, True) if op == ">>=" else self.expr(
                "int" if op in ("^=", "|=", "&=") else "any", self.int(0, 2), not ty.is_float)
            av = compound_av(ty, post, op, rhs)
            if av is not None:
                stmts.append(Store(i, rhs, op, av))
                self.out_read = (i, ty, av)
        if self.chance(12):
            cond = self.expr("any", 1, True)
            e2 = self.store_expr(ty)
            av = hull(ty if ty.is_float else INT, self.out_read[2], conv_av(e2.av, e2.ty, ty))
            stmts.append(If(cond, [Store(i, e2, "=", av)], [], braces=self.chance(50)))
        self.out_read = None
        self.scopes.pop()
        return stmts


PREAMBLE = ("x", "y", "z", "s", "t", "u", "idx", "idy")
SIZES = [(7, 5), (5, 3), (1, 4), (9, 2), (17, 9), (3, 13), (2, 2)]
N_BLOCKS = 8


@st.composite
def programs(draw, n_blocks=N_BLOCKS):
    width, height = draw(st.sampled_from(SIZES))
    g = Gen(draw, width, height)
    g.declare("idx", INT, IAV(0, width - 1), mutable=False)
    g.declare("idy", INT, IAV(0, height - 1), mutable=False)
    g.declare("u", UINT, IAV(0, UMAX), mutable=False)
    g.declare("x", INT, IAV(*A_RANGE), mutable=False)
    g.declare("y", FLOAT, IMG_AV["b"], mutable=False)
    g.declare("z", UCHAR, IAV(0, 255), mutable=False)
    g.declare("s", INT, IAV(*S_RANGE), mutable=False)
    g.declare("t", FLOAT, FAV(T_RANGE[0], T_RANGE[1], 2, 0.0), mutable=False)
    helpers = [g.gen_helper(k) for k in range(g.wpick([(2, 0), (2, 1), (1, 2)]))]
    g.helpers = helpers
    boundary = {img: g.wpick([(3, "constant"), (1, "clamped"), (1, "mirror"), (1, "wrap")]) for img in IMAGES}
    pragma_style = g.int(0, 2)
    out_types = [g.wpick([(3, INT), (3, FLOAT), (2, UINT), (1, UCHAR), (1, SHORT), (1, CHAR), (1, USHORT)])
                 for _ in range(n_blocks)]
    blocks = [g.out_block(i, t) for i, t in enumerate(out_types)]
    seed = draw(st.integers(0, 2 ** 32 - 1))
    s = draw(st.integers(*S_RANGE))
    t = draw(st.integers(int(T_RANGE[0] * 4), int(T_RANGE[1] * 4))) / 4.0
    u = draw(st.sampled_from([0, 1, 7, 65535, 2 ** 31 - 1, 2 ** 31, 3000000000, UMAX]))
    return Program(blocks, out_types, width, height, seed, s, t, u, boundary, pragma_style, helpers)


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------


def store_err(stmts):
    """Largest float error bound of the values stored by a block."""
    err = 0.0
    for s in stmts:
        if isinstance(s, Store) and s.post_av is not None and isinstance(s.post_av, FAV):
            err = max(err, s.post_av.err)
        elif isinstance(s, If):
            err = max(err, store_err(s.then), store_err(s.els))
    return err


def subexprs(e):
    yield e
    for name in ("c", "l", "r", "a", "b", "xi", "yi", "index"):
        child = getattr(e, name, None)
        if isinstance(child, Ex):
            yield from subexprs(child)
    for child in getattr(e, "args", ()):
        yield from subexprs(child)


def reads_back(stmts):
    """Does the block read its output image (o[idx][idy] op= e, or o[idx][idy] in an expression)?"""
    for s in stmts:
        if isinstance(s, Store) and (s.op != "=" or any(isinstance(n, OutRead) for n in subexprs(s.e))):
            return True
        if isinstance(s, If) and reads_back(s.then):
            return True
    return False


def compare_outputs(prog, expected, got):
    """Return a list of human readable mismatch descriptions."""
    A, B, C = prog.inputs()
    problems = []
    for i, ty in enumerate(prog.out_types):
        name = "o%d" % i
        if name not in got:
            problems.append("output %s missing from the result (keys %s)" % (name, sorted(got)))
            continue
        g = np.asarray(got[name])
        e = expected[i]
        if g.shape != e.shape or g.dtype != e.dtype:
            problems.append("output %s: got shape %s dtype %s, expected %s %s"
                            % (name, g.shape, g.dtype, e.shape, e.dtype))
            continue
        if ty.is_float:
            err = store_err(prog.blocks[i])
            tol = 4 * err + (1e-6 * np.abs(e.astype(np.float64)) if err > 0 else 0.0)
            bad = ~(np.abs(g.astype(np.float64) - e.astype(np.float64)) <= tol)
        else:
            bad = g != e
        if bad.any():
            yy, xx = map(int, np.argwhere(bad)[0])
            problems.append(
                "output %s (Image<%s>): %d of %d pixels differ; first at [idx=%d][idy=%d]: "
                "expected %r, got %r%s\n  inputs there: x=a=%d y=b=%r z=c=%d s=%d t=%r u=%d\n"
                "  block:\n%s" % (
                    name, ty.name, int(bad.sum()), bad.size, xx, yy, e[yy, xx].item(), g[yy, xx].item(),
                    (" (tolerance %g)" % (4 * store_err(prog.blocks[i]))) if ty.is_float else "",
                    A[yy, xx], float(B[yy, xx]), C[yy, xx], prog.s, prog.t, prog.u, prog.block_text(i)))
    return problems


def variant_config(compiled, shape, seed):
    """A random tuning configuration; two times out of three with small work-groups
    and few points per work-item, so that a small image spans several work-groups
    (tiles, halos and coarsening remainders at image borders)."""
    space = compiled.space_for(problem_shape=shape)
    cfg = space.random(1, seed=seed)[0]
    rng = np.random.default_rng(seed)
    if rng.integers(0, 3):
        small = {k: (int(rng.choice([1, 2, 4])) if k.startswith(("wg_", "px_")) else v) for k, v in cfg.items()}
        if all(v == 1 for k, v in small.items() if k.startswith("px_")):
            small["interleaved"] = 0
        try:
            return space.complete(small)
        except imagecl.ConfigError:
            pass
    return cfg


def run_program(prog, expected, variant=True):
    """Problems (strings) found running the naive variant and (variant=True) one
    random tuning configuration of prog, compared with the model's `expected`."""
    A, B, C = prog.inputs()
    try:
        compiled = imagecl.compile(prog.src, filename="prop.icl")
        runs = [None]
        if variant:
            runs.append(variant_config(compiled, A.shape, prog.seed % 2 ** 31))
    except (imagecl.ImageCLError, MemoryError) as exc:
        return ["imagecl.compile raised %s: %s" % (type(exc).__name__, exc)]
    # Grid outputs may be left out (LANGUAGE.md); for odd seeds the ones the
    # program reads back are passed in, zero-filled, and must stay unmodified.
    given_outs = {"o%d" % i: np.zeros(A.shape, t.dtype) for i, t in enumerate(prog.out_types)
                  if reads_back(prog.blocks[i]) and prog.seed % 2}
    for config in runs:
        where = "with config %s" % (config or "None (naive variant)")
        try:
            got = compiled(a=A, b=B, c=C, s=prog.s, t=prog.t, u=prog.u, config=config, **given_outs)
        except (imagecl.ImageCLError, MemoryError) as exc:
            return ["%s: running raised %s: %s" % (where, type(exc).__name__, exc)]
        problems = compare_outputs(prog, expected, got)
        problems += ["the caller's array %s was modified" % k for k, v in given_outs.items() if v.any()]
        if problems:
            return ["%s:\n%s" % (where, "\n".join(problems))]
    return []


def isolate(prog, i):
    """prog with every block but block i replaced by a trivial store."""
    blocks = [b if j == i else [Store(j, Lit(INT, 0, "0"), "=", IAV(0, 0))] for j, b in enumerate(prog.blocks)]
    return Program(blocks, prog.out_types, prog.width, prog.height, prog.seed, prog.s, prog.t, prog.u,
                   prog.boundary, prog.pragma_style, prog.helpers)


@contextlib.contextmanager
def memory_cap(limit=6 << 30):
    """Cap the address space while imagecl runs: a compiler that tries to
    materialise a huge loop (e.g. a mis-folded trip count) then fails with
    MemoryError instead of driving the machine into the OOM killer."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, ValueError, OSError):
        yield
        return
    new = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    if soft != resource.RLIM_INFINITY and soft <= new:
        yield
        return
    resource.setrlimit(resource.RLIMIT_AS, (new, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def check_program(prog, variant=True):
    expected = Model(prog).run()
    with memory_cap():
        _check_program(prog, expected, variant)


def _check_program(prog, expected, variant):
    problems = run_program(prog, expected, variant)
    if not problems:
        return
    # The blocks are independent: report the ones that fail on their own, as
    # small self-contained reproducers.
    alone = []
    for i in range(len(prog.blocks)):
        small = isolate(prog, i)
        p = run_program(small, Model(small).run(), variant)
        if p:
            alone.append("block %d fails on its own:\n%s\n\nreproducer:\n%s" % (i, p[0], small.src))
    raise AssertionError("\n".join(problems) + "\n\nfull program:\n" + prog.src + "\n"
                         + ("\n".join(alone) if alone else "(no block fails on its own)"))


_PLAIN = []


def run_plain_opencl(prog):
    """Run prog.render("ocl") -- the same program as plain OpenCL C, buffers
    instead of images, boundary conditions by hand -- directly with pyopencl."""
    import pyopencl as cl
    if not _PLAIN:
        _PLAIN.append(cl.create_some_context(interactive=False))
        _PLAIN.append(cl.CommandQueue(_PLAIN[0]))
    ctx, queue = _PLAIN
    with warnings.catch_warnings():          # clang's implicit-conversion warnings
        warnings.simplefilter("ignore")
        kernel = cl.Program(ctx, prog.render("ocl")).build().prop
    mf = cl.mem_flags
    ins = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(v)) for v in prog.inputs()]
    outs = [np.zeros((prog.height, prog.width), t.dtype) for t in prog.out_types]
    bufs = [cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=o) for o in outs]
    kernel(queue, (prog.width, prog.height), None, *ins, np.int32(prog.s), np.float32(prog.t),
           np.uint32(prog.u), *bufs, np.int32(prog.width), np.int32(prog.height))
    for o, b in zip(outs, bufs):
        cl.enqueue_copy(queue, o, b)
    queue.finish()
    return {"o%d" % i: o for i, o in enumerate(outs)}


@settings(max_examples=6, deadline=None, derandomize=True, database=None, print_blob=False,
          phases=(Phase.explicit, Phase.reuse, Phase.generate), suppress_health_check=list(HealthCheck))
@given(programs())
def test_model_agrees_with_plain_opencl(prog):
    """Validates the reference model itself, independently of imagecl.  (Offline,
    thousands of random programs were checked this way.)"""
    problems = compare_outputs(prog, Model(prog).run(), run_plain_opencl(prog))
    assert not problems, "\n".join(problems) + "\n\nOpenCL program:\n" + prog.render("ocl")


@settings(max_examples=60, deadline=None, derandomize=True, database=None, print_blob=False,
          phases=(Phase.explicit, Phase.reuse, Phase.generate), suppress_health_check=list(HealthCheck))
@given(programs())
def test_generator_invariants(prog):
    """No OpenCL: the model re-checks every value against the generator's
    interval/exactness analysis (GeneratorBug otherwise)."""
    Model(prog).run()


# No shrinking: every step would cost an OpenCL build; check_program reports the
# failing block(s) as stand-alone reproducers instead.
@settings(max_examples=55, deadline=None, derandomize=True, database=None, print_blob=False,
          phases=(Phase.explicit, Phase.reuse, Phase.generate), suppress_health_check=list(HealthCheck))
@given(programs())
def test_random_programs(prog):
    check_program(prog)


@pytest.mark.slow
@settings(max_examples=500, deadline=None, derandomize=True, database=None, print_blob=False,
          phases=(Phase.explicit, Phase.reuse, Phase.generate), suppress_health_check=list(HealthCheck))
@given(programs())
def test_many_random_programs(prog):
    """The same property over more (and other) programs: `pytest -m slow` (about 8 minutes)."""
    check_program(prog)


# ---------------------------------------------------------------------------
# Hand-written tricky cases (expected values computed independently below)
# ---------------------------------------------------------------------------

HAND_A = np.array([[7, -7, 100, 0], [5, -1, 13, -100]], dtype=np.int32)
HAND_B = np.array([[2.5, -2.5, 0.0, 1.75], [-0.5, 3.0, 100.25, -7.0]], dtype=np.float32)
HAND_C = np.array([[250, 0, 3, 255], [1, 128, 17, 200]], dtype=np.uint8)


def _cdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _cmod(a, b):
    return a - b * _cdiv(a, b)


def _nb(arr, X, Y):
    return int(arr[Y, X]) if 0 <= X < arr.shape[1] and 0 <= Y < arr.shape[0] else 0


# (pixel type, expression or statement block writing OUT, expected(x, y, z, X, Y))
HAND_CASES = [
    ("int", "x - 3 - 2", lambda x, y, z, X, Y: x - 5),
    ("int", "z << 2 + 1", lambda x, y, z, X, Y: z << 3),
    ("int", "x & 6 == 6", lambda x, y, z, X, Y: x & 1),
    ("int", "-x % 3", lambda x, y, z, X, Y: _cmod(-x, 3)),
    ("int", "x / -3 * 10 + x % -3", lambda x, y, z, X, Y: _cdiv(x, -3) * 10 + _cmod(x, -3)),
    ("int", "(7 / -2) * 1000 + (-7 / 2) * 100 + (-7 % 2) * 10 + 7 % -2", lambda *p: -3309),
    ("uchar", "(uchar)300", lambda *p: 44),
    ("int", "(uchar)300 + (uchar)-1", lambda *p: 299),
    ("int", "(char)200 * 100000 + (short)40000", lambda *p: -56 * 100000 - 25536),
    ("float", "x > y ? x : y", lambda x, y, z, X, Y: max(float(x), float(y))),
    ("int", "(-1 < 0u) * 100 + (0x80000000 > 0) * 10 + (-1 < 0)", lambda *p: 11),
    ("int", "010 + 0x10 + 0X1f", lambda *p: 55),
    ("uint", "1 ? -1 : 0u", lambda *p: UMAX),
    ("int", "abs(-3) - 5 > 0", lambda *p: 1),
    ("int", "abs(x) - 200 > 0", lambda x, y, z, X, Y: int(abs(x) != 200)),
    ("int", "(uchar)250 + (uchar)10 + z + z", lambda x, y, z, X, Y: 260 + 2 * z),
    ("uint", "~0u >> 28", lambda *p: 15),
    ("int", "~0 >> 28", lambda *p: -1),
    ("int", "-x >> 1", lambda x, y, z, X, Y: (-x) >> 1),
    ("int", "5 - -3 + (5- -x) + - -x", lambda x, y, z, X, Y: 8 + 5 + x + x),
    ("int", "1 + 2 * 3 << 1", lambda *p: 14),
    ("int", "(1 < 2 == 1) * 10 + (3 > 2 > 1)", lambda *p: 10),
    ("int", "2 | 1 ^ 3 & 5", lambda *p: 2),
    ("int", "!x + 1", lambda x, y, z, X, Y: int(x == 0) + 1),
    ("float", "(16777216.0 + 1.0) - 16777216.0", lambda *p: 0.0),
    ("int", "0.1 + 0.2 == 0.3f", lambda *p: 1),
    ("int", "(int)-2.7f * 10 + (int)2.7", lambda *p: -18),
    ("float", "floor(-2.5f) + floor(y)", lambda x, y, z, X, Y: -3.0 + math.floor(y)),
    ("float", "1e1f + .5f + 2.f + 0x10 + 25e-1", lambda *p: 31.0),
    ("int", "x != 0 && 100 / x > 2", lambda x, y, z, X, Y: int(x != 0 and _cdiv(100, x) > 2)),
    ("int", "x == 0 ? 0 : 100 / x", lambda x, y, z, X, Y: 0 if x == 0 else _cdiv(100, x)),
    ("uint", "-1 / 2u", lambda *p: 2147483647),
    ("uint", "0xFFFFFFFF + 1 + (4294967295u + 2u)", lambda *p: 1),
    ("int", "(-2147483647 - 1) / 2 + z * z", lambda x, y, z, X, Y: -(2 ** 30) + z * z),
    ("int", "(1 ? 2 : 3 ? 4 : 5) * 10 + (0 ? 2 : 0 ? 4 : 5)", lambda *p: 25),
    ("int", "x > 0 ? x < 10 ? 1 : 2 : 3", lambda x, y, z, X, Y: (1 if x < 10 else 2) if x > 0 else 3),
    ("int", "min(x, 3) + max(-x, 3) + clamp(x, -5, 5)",
     lambda x, y, z, X, Y: min(x, 3) + max(-x, 3) + min(max(x, -5), 5)),
    ("float", "fmin(y, 1.0f) + fmax(y, -1.0f) + fabs(y) + sqrt(fabs(y) * 4.0f)",
     lambda x, y, z, X, Y: min(y, 1.0) + max(y, -1.0) + abs(y) + math.sqrt(abs(y) * 4.0)),
    ("int", "a[idx + 1][idy] * 1000 + a[idx][idy - 1] + c[idx - 1][idy + 1]",
     lambda x, y, z, X, Y: _nb(HAND_A, X + 1, Y) * 1000 + _nb(HAND_A, X, Y - 1) + _nb(HAND_C, X - 1, Y + 1)),
    ("int", "char ch = 100; ch += 100; OUT = ch;", lambda *p: -56),
    ("uint", "uint u = 0u; u -= 1; OUT = u;", lambda *p: UMAX),
    ("int", "bool bb = 5; OUT = bb + 1;", lambda *p: 2),
    ("int", "int k = 0; for (int i = 0; i < 5; i++) { if (i == 3) continue; if (i == 4) break; k += i; } OUT = k;",
     lambda *p: 3),
    ("int", "int r = 0; if (x > 0) if (x > 10) r = 1; else r = 2; OUT = r;",
     lambda x, y, z, X, Y: (1 if x > 10 else 2) if x > 0 else 0),
    ("int", "int n = 0; int j = 10; while (j > 0) { j -= 3; n++; } OUT = n * 100 + j;", lambda *p: 398),
    ("int", "int d = 0; do { d++; } while (d < 0); OUT = d;", lambda *p: 1),
    ("int", "int p = 5, q = p * 2; OUT = q;", lambda *p: 10),
    ("int", "uchar w = 200; w *= 2; OUT = w;", lambda *p: 144),
    ("int", "short sh = 32767; sh++; OUT = sh;", lambda *p: -32768),
    ("int", "int v = 3; int w2 = v++ + 10; OUT = w2 * 10 + v;", lambda *p: 134),
    ("float", "float f = 1.0f; f /= 4; OUT = f;", lambda *p: 0.25),
    ("int", "int e = 7; e /= 2.0f; e *= 2.5; OUT = e;", lambda *p: 7),
    ("int", "int m = z; m <<= 3; m >>= 1; m ^= 0xF0; m |= 1; m &= ~2; m %= 1000; OUT = m;",
     lambda x, y, z, X, Y: _cmod((((z << 3) >> 1) ^ 0xF0 | 1) & ~2, 1000)),
    ("int", "/* a comment */ int cc = 1; // another\n OUT = cc + x;", lambda x, y, z, X, Y: 1 + x),
    ("int", "if (x < 0) { OUT = 1; return; } OUT = 2;", lambda x, y, z, X, Y: 1 if x < 0 else 2),
]


def hand_program():
    types = {"int": INT, "uint": UINT, "uchar": UCHAR, "float": FLOAT}
    params = ["Image<int> a", "Image<float> b", "Image<uchar> c"]
    body = ["    int x = a[idx][idy];", "    float y = b[idx][idy];", "    uchar z = c[idx][idy];"]
    for i, (ty, text, _) in enumerate(HAND_CASES):
        params.append("Image<%s> o%d" % (ty, i))
        out = "o%d[idx][idy]" % i
        if "OUT" in text:
            body.append("    {\n        " + text.replace("OUT", out) + "\n    }")
        else:
            body.append("    %s = %s;" % (out, text))
    grid = ", ".join(["a"] + ["o%d" % i for i in range(len(HAND_CASES))])
    return ("#pragma imcl grid(%s)\nvoid hand(%s) {\n%s\n}\n"
            % (grid, ", ".join(params), "\n".join(body))), types


def test_hand_written_cases():
    src, types = hand_program()
    got = imagecl.compile(src, filename="hand.icl")(a=HAND_A, b=HAND_B, c=HAND_C)
    problems = []
    for i, (ty, text, fn) in enumerate(HAND_CASES):
        g = np.asarray(got["o%d" % i])
        t = types[ty]
        if g.dtype != t.dtype:
            problems.append("o%d = %s: dtype %s, expected %s" % (i, text, g.dtype, t.dtype))
            continue
        for Y in range(HAND_A.shape[0]):
            for X in range(HAND_A.shape[1]):
                x, y, z = int(HAND_A[Y, X]), float(HAND_B[Y, X]), int(HAND_C[Y, X])
                exp = fn(x, y, z, X, Y)
                if t.is_float:
                    ok = abs(float(g[Y, X]) - exp) <= 1e-6 * max(1.0, abs(exp))
                else:
                    ok = int(g[Y, X]) == exp
                if not ok:
                    problems.append("o%d = %s  at x=%d y=%r z=%d [idx=%d][idy=%d]: expected %r, got %r"
                                    % (i, text, x, y, z, X, Y, exp, g[Y, X].item()))
                    break
            else:
                continue
            break
    assert not problems, "\n".join(problems) + "\n\nprogram:\n" + src


def test_float_condition_in_ternary():
    """`y ? 1 : 2` with float y is valid C (OpenCL C itself rejects a float ?: condition)."""
    src = ("#pragma imcl grid(a, o)\n"
           "void cond(Image<float> a, Image<int> o) {\n"
           "    float y = a[idx][idy];\n"
           "    o[idx][idy] = y ? 1 : 2;\n"
           "}\n")
    A = np.array([[0.0, 1.0, -0.5], [2.0, 0.0, 0.25]], dtype=np.float32)
    got = imagecl.compile(src, filename="cond.icl")(a=A)["o"]
    np.testing.assert_array_equal(got, np.where(A != 0, 1, 2).astype(np.int32))


def test_read_back_output_may_be_omitted():
    """LANGUAGE.md: 'A written image that belongs to the grid may be left out; it is
    allocated with the grid's shape and its declared pixel type.'  Here o is written
    before it is read at the same grid point."""
    src = ("#pragma imcl grid(a, o)\n"
           "void rmw(Image<int> a, Image<int> o) {\n"
           "    o[idx][idy] = a[idx][idy];\n"
           "    o[idx][idy] += 5;\n"
           "    o[idx][idy] = o[idx][idy] * 2;\n"
           "}\n")
    A = np.array([[1, 2, 3], [4, 5, -6]], dtype=np.int32)
    got = imagecl.compile(src, filename="rmw.icl")(a=A)["o"]
    np.testing.assert_array_equal(got, (A + 5) * 2)


def test_constant_expressions_follow_c_conversions():
    """Trip counts, array indices and image offsets written as constant expressions
    must be folded with C's conversions (casts wrap, unsigned arithmetic wraps,
    int compared with unsigned is converted): under every unroll factor the
    program's space offers."""
    src = ("#pragma imcl grid(a, o)\n"
           "void folds(Image<int> a, Image<int> o) {\n"
           "    int s1 = 0, s2 = 0, s3 = 0, s4 = 0;\n"
           "    for (int i = 0; i < (uchar)260; i++) s1 += 1;\n"                        # 4 trips
           "    for (int i = 0; i < 3 + (-1 < 0u); i++) s2 += 1;\n"                     # 3 trips
           "    for (int i = 0; i < (int)((unsigned)-1 % 5u) + 3; i++) s3 += i;\n"      # 3 trips: 0+1+2
           "    for (uint i = 0u; i < 4294967295u + 3u; i++) s4 += 1;\n"                # 2 trips
           "    int m[8];\n"
           "    for (int i = 0; i < 8; i++) m[i] = i * 10;\n"
           "    o[idx][idy] = s1 * 10000 + s2 * 1000 + s3 * 100 + s4 * 10\n"
           "                  + m[(unsigned)-289 % 8u] + a[idx + (int)(4294967295u + 2u)][idy];\n"
           "}\n")
    A = np.arange(15, dtype=np.int32).reshape(3, 5)
    right = np.zeros_like(A)
    right[:, :-1] = A[:, 1:]
    expected = 4 * 10000 + 3 * 1000 + 3 * 100 + 2 * 10 + 70 + right
    prog = imagecl.compile(src, filename="folds.icl")
    space = prog.space_for(problem_shape=A.shape)
    configs = [None] + [space.complete({p.name: v}) for p in space.parameters
                        if p.name.startswith("unroll") for v in p.values]
    for config in configs:
        np.testing.assert_array_equal(prog(a=A, config=config)["o"], expected, err_msg=str(config))


def test_huge_nominal_trip_count():
    """A loop with a huge constant bound that `break` ends early is valid C; the
    compiler's loop analyses must not enumerate its iterations."""
    src = ("#pragma imcl grid(a, o)\n"
           "void big(Image<int> a, Image<int> o) {\n"
           "    int s = 0;\n"
           "    for (int i = 0; i < 2000000000; i++) {\n"
           "        if (i >= 4) break;\n"
           "        s += a[idx + (i & 1)][idy] + i;\n"
           "    }\n"
           "    o[idx][idy] = s;\n"
           "}\n")
    A = np.arange(12, dtype=np.int32).reshape(3, 4)
    right = np.zeros_like(A)
    right[:, :-1] = A[:, 1:]
    with memory_cap():
        got = imagecl.compile(src, filename="big.icl")(a=A)["o"]
    np.testing.assert_array_equal(got, 2 * A + 2 * right + 6)


def test_huge_loop_footprint_is_unknown_and_variants_agree():
    """An image read at `idx + i` in a loop of huge nominal bound has no bounded footprint
    (no local-memory tile for it, no crash); every variant of the space still agrees with
    NumPy."""
    src = ("#pragma imcl grid(o)\n"
           "void big(Image<int> a, Image<int> o) {\n"
           "    int s = 0;\n"
           "    for (int i = 0; i < 2000000000; i++) {\n"
           "        if (i > 2) break;\n"
           "        s += a[idx + i][idy - 1];\n"
           "    }\n"
           "    for (unsigned k = 0; k < 4000000000u; k += 2000000000u)\n"
           "        s += (int)(k / 1000000000u);\n"
           "    for (int j = 0; j < 3; j++)\n"
           "        s += a[idx][idy + j];\n"
           "    o[idx][idy] = s;\n"
           "}\n")
    with memory_cap():
        prog = imagecl.compile(src, filename="big.icl")
        A = np.arange(35, dtype=np.int32).reshape(5, 7) * 3 + 1
        pad = np.zeros((5 + 4, 7 + 4), np.int32)
        pad[2:-2, 2:-2] = A
        expected = 2 + sum(pad[1:-3, 2 + i:2 + i + 7] for i in range(3)) + sum(pad[2 + j:2 + j + 5, 2:-2] for j in range(3))
        space = prog.space_for(problem_shape=(7, 5))
        names = {p.name for p in space.parameters}
        assert not prog.analysis_for({}).footprints["a"].bounded
        assert "local_a" not in names and "image_a" in names
        configs = [space.complete({})] + space.random(6, seed=3)
        for config in configs:
            np.testing.assert_array_equal(prog(a=A, o=np.zeros_like(A), config=config)["o"], expected,
                                          err_msg=str(config))
