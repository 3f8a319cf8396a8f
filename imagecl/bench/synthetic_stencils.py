"""Synthetic stencil programs, for training models that predict for programs never measured.

As OmniTune and the wavefront tuner did, the knowledge models are trained on many generated
programs and tested on real ones (`benchmarks/synthetic_stencils.py` writes them to a folder,
`benchmarks/knowledge_data.py` measures them). Each program is a 2-D stencil drawn from a few
independent choices, so that its features (imagecl/features) cover the range of the real filters:

- one or two input images, of float or uchar pixels;
- a footprint: a box, a cross, a row or a column of radius 0-4 (1 to 81 taps);
- per tap: a weight (a filter array parameter, or computed from the offsets), optionally a
  transcendental (exp, sqrt) or a comparison (a running min/max), optionally a division;
- taps as a loop nest or written out;
- a boundary mode (clamped, mirror, wrap, constant) and, sometimes, a program tunable;
- with `rich=True`, two more choices that the real filters have and the first set lacks: a
  rank reduction (the taps gathered in a private array and the middle one selected by a partial
  selection sort, data-dependent swaps as in a median) and a second output image.

The program tunable `WEIGHTS` chooses between two implementations of one filter, as a tunable
must (LANGUAGE.md: every configuration computes the same output): 0 reads or computes each
tap's weight where it is used, 1 first gathers the weights into a private array. The values are
the same floats either way, so the output is too.

Every program is checked by imagecl before it is returned; the name records the choices
(`syn<seed>_<n>_...`).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Sequence

from .. import compile as compile_program

SHAPES = ("box", "cross", "row", "column")
BOUNDARIES = ("clamped", "mirror", "wrap", "constant")


@dataclass(frozen=True)
class StencilChoice:
    """The independent choices one synthetic program is drawn from."""
    inputs: int
    pixel: str
    shape: str
    radius: int
    weights: str  # "array" (a filter parameter) or "computed" (from the offsets)
    per_tap: str  # "plain", "exp", "sqrt" or "minmax"
    divide: bool
    unrolled: bool
    boundary: str
    tunable: bool
    reduce: str = "fold"  # "fold" (a sum, or a running max with per_tap "minmax") or "rank" (the middle term)
    outputs: int = 1  # 2: a second output image, the square of the first's value

    def taps(self) -> list[tuple[int, int]]:
        r = self.radius
        offsets = [(i, j) for j in range(-r, r + 1) for i in range(-r, r + 1)]
        keep = {"box": lambda i, j: True, "cross": lambda i, j: i == 0 or j == 0,
                "row": lambda i, j: j == 0, "column": lambda i, j: i == 0}[self.shape]
        return [(i, j) for i, j in offsets if keep(i, j)]

    def name(self, seed: int, n: int) -> str:
        return (f"syn{seed}_{n:03d}_{self.shape}{self.radius}_{self.inputs}x{self.pixel}_{self.per_tap}"
                f"{'_rank' if self.reduce == 'rank' else ''}{'_div' if self.divide else ''}"
                f"{'_unrolled' if self.unrolled else ''}_{self.boundary}{'_2out' if self.outputs == 2 else ''}")

    def terms(self) -> int:
        """How many terms a grid point combines (a rank reduction's window)."""
        return len(self.taps()) * self.inputs


def draw(rng: random.Random, rich: bool = False) -> StencilChoice:
    """One program's choices; `rich` adds the rank reduction and the second output (drawn after
    the others, so that the programs of a seed without it stay what they were)."""
    choice = StencilChoice(
        inputs=rng.choice((1, 1, 2)),
        pixel=rng.choice(("float", "float", "uchar")),
        shape=rng.choice(SHAPES),
        radius=rng.choice((0, 1, 1, 2, 2, 3, 4)),
        weights=rng.choice(("array", "computed")),
        per_tap=rng.choice(("plain", "plain", "exp", "sqrt", "minmax")),
        divide=rng.random() < 0.25,
        unrolled=rng.random() < 0.3,
        boundary=rng.choice(BOUNDARIES),
        tunable=rng.random() < 0.3,
    )
    if rich:
        rank = rng.random() < 0.4
        outputs = rng.choice((1, 1, 2))
        if rank:  # a window of at most 5x5 taps an image: selection is quadratic in it
            choice = replace(choice, reduce="rank", radius=min(choice.radius, 2),
                             per_tap="plain" if choice.per_tap == "minmax" else choice.per_tap)
        choice = replace(choice, outputs=outputs)
    return choice


def _tap_value(c: StencilChoice, image: str, i: str, j: str) -> str:
    value = f"(float){image}[idx + {i}][idy + {j}]"
    if c.per_tap == "exp":
        value = f"exp(-{value} * {value})"
    elif c.per_tap == "sqrt":
        value = f"sqrt({value} + 1.0f)"
    if c.divide:
        value = f"{value} / ({value} + 2.0f)"
    return value


def _weight(c: StencilChoice, i: str, j: str) -> str:
    """The weight of tap (i, j), where it is used."""
    r = c.radius
    if c.weights == "array":
        return f"filter[{j} + {r}][{i} + {r}]"
    return f"(1.0f / (1.0f + (float)({i} * {i} + {j} * {j})))"


def _tap_weight(c: StencilChoice, i: str, j: str) -> str:
    """The weight of tap (i, j) as the body reads it: with the tunable, from the private array
    when WEIGHTS is 1."""
    if not c.tunable:
        return _weight(c, i, j)
    width = 2 * c.radius + 1
    return f"(WEIGHTS == 1 ? weights[({j} + {c.radius}) * {width} + {i} + {c.radius}] : {_weight(c, i, j)})"


def _gather_weights(c: StencilChoice) -> list[str]:
    """With the tunable: the private array of every weight of the box, filled when WEIGHTS is 1."""
    r, width = c.radius, 2 * c.radius + 1
    return [f"    float weights[{width * width}];",
            "    if (WEIGHTS == 1) {",
            f"        for (int j = {-r}; j <= {r}; j++) {{",
            f"            for (int i = {-r}; i <= {r}; i++) {{",
            f"                weights[(j + {r}) * {width} + i + {r}] = {_weight(c, 'i', 'j')};",
            "            }",
            "        }",
            "    }"]


def _rank_lines(c: StencilChoice) -> list[str]:
    """Selects the middle of the window's terms in place (a partial selection sort: the first
    half-plus-one positions), then takes it as the value."""
    t = c.terms()
    return [f"    for (int a = 0; a <= {t // 2}; a++) {{",
            "        int m = a;",
            f"        for (int b = a + 1; b < {t}; b++) {{",
            "            if (window[b] < window[m]) {",
            "                m = b;",
            "            }",
            "        }",
            "        float swap = window[a];",
            "        window[a] = window[m];",
            "        window[m] = swap;",
            "    }",
            f"    acc = window[{t // 2}];"]


def render(c: StencilChoice, kernel: str) -> str:
    """ImageCL source of one synthetic stencil."""
    images = [f"in{k}" for k in range(c.inputs)]
    outputs = ["output"] + (["output2"] if c.outputs == 2 else [])
    params = [f"Image<{c.pixel}> {name}" for name in images + outputs]
    width = 2 * c.radius + 1
    if c.weights == "array":
        params.append(f"float filter[{width}][{width}]")
    lines = [f"#pragma imcl grid({images[0]}, {', '.join(outputs)})",
             "#pragma imcl boundary_cond(" + ",".join(f"{name}:{c.boundary}" for name in images) + ")"]
    if c.tunable:
        lines.append("#pragma imcl tunable(WEIGHTS: 0, 1)")
    lines.append(f"void {kernel}({', '.join(params)}) {{")
    if c.tunable:
        lines += _gather_weights(c)
    rank = c.reduce == "rank"
    if rank:
        lines.append(f"    float window[{c.terms()}];")
        combine = "window[{k}] = {term};"
    else:
        combine = "acc = max(acc, {term});" if c.per_tap == "minmax" else "acc += {term};"
    start = "-1.0e30f" if c.per_tap == "minmax" else "0.0f"
    lines.append(f"    float acc = {start};")
    terms = [(f"{_tap_weight(c, 'i', 'j')} * {_tap_value(c, image, 'i', 'j')}") for image in images]
    if c.unrolled:
        k = 0
        for i, j in c.taps():
            for image in images:
                term = f"{_tap_weight(c, str(i), str(j))} * {_tap_value(c, image, str(i), str(j))}"
                lines.append("    " + combine.format(k=k, term=term.replace("+ -", "- ")))
                k += 1
    else:
        r = c.radius
        j_range = (0, 0) if c.shape == "row" else (-r, r)
        i_range = (0, 0) if c.shape == "column" else (-r, r)
        if rank:
            lines.append("    int k = 0;")
        lines.append(f"    for (int j = {j_range[0]}; j <= {j_range[1]}; j++) {{")
        lines.append(f"        for (int i = {i_range[0]}; i <= {i_range[1]}; i++) {{")
        # a loop's window position counts up as the taps are visited (a data-independent count)
        body = [combine.format(k="k", term=term) + (" k++;" if rank else "") for term in terms]
        if c.shape == "cross":
            lines.append("            if (i == 0 || j == 0) {")
            lines += ["                " + b for b in body]
            lines.append("            }")
        else:
            lines += ["            " + b for b in body]
        lines += ["        }", "    }"]
    if rank:
        lines += _rank_lines(c)
    values = ["acc"] + (["acc * acc"] if c.outputs == 2 else [])
    for name, value in zip(outputs, values):
        if c.pixel == "uchar":
            lines.append(f"    {name}[idx][idy] = (uchar)clamp({value}, 0.0f, 255.0f);")
        else:
            lines.append(f"    {name}[idx][idy] = {value};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def choices(count: int, seed: int, rich: bool = False) -> list[StencilChoice]:
    """The first `count` distinct draws of `seed` (see draw for `rich`)."""
    rng = random.Random(seed)
    drawn: list[StencilChoice] = []
    seen: set[StencilChoice] = set()
    while len(drawn) < count:
        choice = draw(rng, rich)
        if choice not in seen:
            seen.add(choice)
            drawn.append(choice)
    return drawn


def generate(count: int, seed: int, rich: bool = False) -> list[tuple[str, str]]:
    """`count` distinct (name, source) pairs, one per choice; every source passes imagecl's
    checks. (The set without `rich`, `generate(16, 17)`, is what the knowledge data first measured.)"""
    programs = []
    for n, choice in enumerate(choices(count, seed, rich)):
        name = choice.name(seed, n)
        source = render(choice, "stencil")
        compile_program(source, filename=f"{name}.icl")  # raises on anything imagecl would reject
        programs.append((name, source))
    return programs


# the sets the shipped knowledge data measured (benchmarks/results/knowledge), as (count, seed,
# rich). generate(24, 19) and generate(24, 20, rich=True) were measured on the 16-core Xeon too
# and kept apart (benchmarks/results/knowledge-replication/xeon-syn19: they did not help)
KNOWLEDGE_SETS = ((16, 17, False), (24, 18, True))


def knowledge_programs(sets: Sequence[tuple[int, int, bool]] = KNOWLEDGE_SETS) -> list[tuple[str, str]]:
    """The (name, source) pairs of `sets`, a source drawn again under a later set's name left
    out (one store record per source: `syn20_002` is `syn18_001`)."""
    seen, programs = set(), []
    for count, seed, rich in sets:
        for name, source in generate(count, seed, rich):
            if source not in seen:
                seen.add(source)
                programs.append((name, source))
    return programs
