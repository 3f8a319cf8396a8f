"""Sequential NumPy references of the wavefront examples, written from their definitions (not
from the .icl sources): row by row, column by column, in Python integers or float32."""
from __future__ import annotations

import numpy as np

BIG = np.float32(1e30)


def needleman_wunsch(a, b, match, mismatch, gap):
    h, w = len(b) + 1, len(a) + 1
    s = np.zeros((h, w), np.int64)
    for y in range(h):
        for x in range(w):
            if x == 0 or y == 0:
                s[y, x] = -gap * (x + y)
            else:
                s[y, x] = max(s[y - 1, x - 1] + (match if a[x - 1] == b[y - 1] else mismatch),
                              s[y, x - 1] - gap, s[y - 1, x] - gap)
    return s.astype(np.int32)


def lcs(a, b):
    s = np.zeros((len(b) + 1, len(a) + 1), np.int64)  # a border row and column of empty prefixes
    for y in range(len(b)):
        for x in range(len(a)):
            s[y + 1, x + 1] = s[y, x] + 1 if a[x] == b[y] else max(s[y + 1, x], s[y, x + 1])
    return s[1:, 1:].astype(np.int32)


def dtw(a, b):
    h, w = len(b), len(a)
    c = np.full((h + 1, w + 1), BIG, np.float32)
    for y in range(h):
        for x in range(w):
            d = np.float32(abs(np.float32(a[x]) - np.float32(b[y])))
            c[y + 1, x + 1] = d if x == 0 and y == 0 else d + min(c[y, x], c[y + 1, x], c[y, x + 1])
    return c[1:, 1:]


def synthetic(width, height, tsize, initial=None):
    mask = 0xFFFFFFFF
    out = np.zeros((height, width), np.int64) if initial is None else initial.astype(np.int64)

    def at(x, y):
        return int(out[y, x]) if x >= 0 and y >= 0 else 0

    for y in range(height):
        for x in range(width):
            v = (at(x - 1, y) + 3 * at(x, y - 1) + 7 * at(x - 1, y - 1) + x * 31 + y) & mask
            for _ in range(tsize):
                v = (v * 1664525 + 1013904223) & mask
            out[y, x] = v >> 1
    return out.astype(np.int32)


def synthetic_float4(width, height, tsize):
    """The dsize=4 synthetic program: lane x as synthetic() with v >> 8, lanes y, z, w the
    north, north-west and west neighbours' x."""
    mask = 0xFFFFFFFF
    out = np.zeros((height, width, 4), np.float32)

    def x_at(x, y):
        return int(out[y, x, 0]) if x >= 0 and y >= 0 else 0

    for y in range(height):
        for x in range(width):
            v = (x_at(x - 1, y) + 3 * x_at(x, y - 1) + 7 * x_at(x - 1, y - 1) + x * 31 + y) & mask
            for _ in range(tsize):
                v = (v * 1664525 + 1013904223) & mask
            out[y, x] = (v >> 8, x_at(x, y - 1), x_at(x - 1, y - 1), x_at(x - 1, y))
    return out
