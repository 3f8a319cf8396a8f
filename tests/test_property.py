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

Cost: one program = one OpenCL build.  Each example therefore batches
``N_BLOCKS`` independent statement blocks, each writing its own output image,
on a small image.  The run is derandomized and uses no example database, so CI
sees the same programs every time.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
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
            return ct, IAV(0, (1 << max(a.hi.bit_length(), b.hi.bit_length())) - 1)
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


def offset_text(base, d):
    if d == 0:
        return base
    return "%s %s %d" % (base, "+" if d > 0 else "-", abs(d))


class Img(Ex):
    """In-bounds or neighbour read img[idx+dx][idy+dy] (constant boundary)."""

    def __init__(self, img, dx, dy):
        self.img, self.dx, self.dy = img, dx, dy
        self.ty, self.av = IMAGES[img], IMG_AV[img]

    def render(self, mode):
        xs, ys = offset_text("idx", self.dx), offset_text("idy", self.dy)
        if mode == "ocl":
            return "RD_%s(%s, %s)" % (self.img, xs, ys), 16
        return "%s[%s][%s]" % (self.img, xs, ys), 16


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
        return "%s ? %s : %s" % (self.c.show(mode, 4), self.a.show(mode, 3),
                                 self.b.show(mode, 3)), 3


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

    def __init__(self, kind, var, n, body, incr):
        self.kind, self.var, self.n, self.body, self.incr = kind, var, n, body, incr

    def lines(self, mode, ind):
        v, n, inner = self.var, self.n, ind + "    "
        body = body_lines(self.body, mode, inner)
        if self.kind == "for":
            incr = {"++": v + "++", "pre": "++" + v, "+=": v + " += 1", "=": "%s = %s + 1" % (v, v)}[self.incr]
            return [ind + "for (int %s = 0; %s < %d; %s) {" % (v, v, n, incr)] + body + [ind + "}"]
        if self.kind == "for_u":
            return [ind + "for (uint %s = 0u; %s < %du; %s++) {" % (v, v, n, v)] + body + [ind + "}"]
        if self.kind == "for_down":
            return [ind + "for (int %s = %d; %s > 0; %s--) {" % (v, n, v, v)] + body + [ind + "}"]
        if self.kind == "for_step":
            return [ind + "for (int %s = 0; %s < %d; %s += 2) {" % (v, v, 2 * n, v)] + body + [ind + "}"]
        if self.kind == "while":
            return ([ind + "{", inner + "int %s = %d;" % (v, n), inner + "while (%s > 0) {" % v,
                     inner + "    %s--;" % v] + body_lines(self.body, mode, inner + "    ")
                    + [inner + "}", ind + "}"])
        if self.kind == "dowhile":
            return ([ind + "{", inner + "int %s = %d;" % (v, n), inner + "do {",
                     inner + "    %s--;" % v] + body_lines(self.body, mode, inner + "    ")
                    + [inner + "} while (%s > 0);" % v, ind + "}"])
        raise AssertionError(self.kind)


class Store:
    def __init__(self, out, e):
        self.out, self.e = out, e

    def lines(self, mode, ind):
        if mode == "ocl":
            return [ind + "o%d[idy * W_ + idx] = %s;" % (self.out, self.e.show(mode, 2))]
        return [ind + "o%d[idx][idy] = %s;" % (self.out, self.e.show(mode, 2))]


def body_lines(stmts, mode, ind):
    out = []
    for s in stmts:
        out += s.lines(mode, ind)
    return out


class Program:
    def __init__(self, blocks, out_types, width, height, seed, s, t):
        self.blocks, self.out_types = blocks, out_types
        self.width, self.height, self.seed, self.s, self.t = width, height, seed, s, t
        self.src = self.render("icl")

    def params(self, mode):
        if mode == "ocl":
            ps = ["__global const int* a", "__global const float* b", "__global const uchar* c",
                  "int s", "float t"]
            ps += ["__global %s* o%d" % (t.name, i) for i, t in enumerate(self.out_types)]
            return ps + ["int W_", "int H_"]
        ps = ["Image<int> a", "Image<float> b", "Image<uchar> c", "int s", "float t"]
        return ps + ["Image<%s> o%d" % (t.name, i) for i, t in enumerate(self.out_types)]

    def block_text(self, i, mode="icl"):
        return "\n".join(["    {"] + body_lines(self.blocks[i], mode, "        ") + ["    }"])

    def render(self, mode):
        lines = []
        if mode == "icl":
            lines.append("#pragma imcl grid(%s)" % ", ".join("o%d" % i for i in range(len(self.blocks))))
            lines.append("void prop(%s) {" % ", ".join(self.params(mode)))
            lines += ["    int x = a[idx][idy];", "    float y = b[idx][idy];", "    uchar z = c[idx][idy];"]
        else:
            for img in IMAGES:
                lines.append("#define RD_%s(X, Y) (((X) >= 0 && (X) < W_ && (Y) >= 0 && (Y) < H_) ? %s[(Y) * W_ + (X)] : 0)" % (img, img))
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
        return "Program(size=%dx%d, seed=%d, s=%d, t=%r):\n%s" % (
            self.width, self.height, self.seed, self.s, self.t, self.src)


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


class Model:
    def __init__(self, prog):
        self.prog = prog
        self.A, self.B, self.C = prog.inputs()
        self.imgs = {"a": self.A, "b": self.B, "c": self.C}

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
            X, Y = env["idx"][1] + e.dx, env["idy"][1] + e.dy
            arr = self.imgs[e.img]
            if 0 <= X < arr.shape[1] and 0 <= Y < arr.shape[0]:
                v = arr[Y, X]
                return np.float32(v) if e.ty is FLOAT else int(v)
            return np.float32(0) if e.ty is FLOAT else 0
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
                exact = {"+": a64 + b64, "-": a64 - b64, "*": a64 * b64, "/": a64 / b64}[e.op]
                if exact != float(r):
                    raise GeneratorBug("inexact result in an exact node: " + e.show("icl"))
            return r
        if isinstance(e, Tern):
            c = self.ev(e.c, env)
            br = e.a if c_truth(c, e.c.ty) else e.b
            return c_conv(self.ev(br, env), br.ty, e.ty)
        if isinstance(e, Cast):
            return c_conv(self.ev(e.c, env), e.c.ty, e.ty)
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
        elif isinstance(s, Jump):
            raise BreakEx() if s.kind == "break" else ContinueEx()
        elif isinstance(s, Loop):
            self.run_loop(s, env)
        elif isinstance(s, Store):
            v = self.ev(s.e, env)
            t = self.prog.out_types[s.out]
            self.out[s.out][env["idy"][1], env["idx"][1]] = c_conv(v, s.e.ty, t)
        else:
            raise AssertionError(s)

    def run_loop(self, s, env):
        def body():
            try:
                self.run_stmts(s.body, env)
            except ContinueEx:
                pass
        v, n = s.var, s.n
        try:
            if s.kind in ("for", "for_u"):
                env[v] = [INT if s.kind == "for" else UINT, 0]
                while env[v][1] < n:
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
                       "t": [FLOAT, np.float32(p.t)],
                       "x": [INT, int(self.A[yy, xx])], "y": [FLOAT, self.B[yy, xx]],
                       "z": [UCHAR, int(self.C[yy, xx])]}
                for blk in p.blocks:
                    self.run_stmts(blk, env)
        return self.out
