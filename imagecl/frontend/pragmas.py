"""`#pragma imcl ...` lines: cut out of the source before parsing, parsed on their own."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import CompileError, suggestion_suffix
from ..ir.nodes import Pos, Pragma, PragmaArg

KNOWN_PRAGMAS = (
    "grid",
    "grid_size",
    "boundary_cond",
    "image_mem",
    "local_mem",
    "constant_mem",
    "constant_mem_cand",
    "pixel",
    "tunable",
    "kernel",
    "wavefront",
)
_DIRECTIVE = re.compile(r"^[ \t]*#")
_PRAGMA = re.compile(r"^([ \t]*#[ \t]*pragma[ \t]+)(\S+)?(.*)$")
# `real` only appears as the fill value of `boundary_cond(image:constant(2.5))`
_TOKEN = re.compile(r"\s*(?:(?P<real>-?(?:(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)[fF]?)"
                    r"|(?P<num>-?(?:0[xX][0-9a-fA-F]+|\d+))|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|(?P<sym>[(),:]))")


@dataclass
class _Tok:
    kind: str
    text: str
    column: int


def split_pragmas(source: str, filename: str) -> tuple[str, list[Pragma]]:
    """Return the source with directive lines blanked (positions kept) and the imcl pragmas."""
    out_lines: list[str] = []
    pragmas: list[Pragma] = []
    lines = source.split("\n")
    in_comment = False
    for number, line in enumerate(lines, start=1):
        if not in_comment and _DIRECTIVE.match(line):
            match = _PRAGMA.match(line)
            if not match:
                col = line.index("#") + 1
                word = line.strip()[1:].strip().split(" ")[0] or "#"
                raise CompileError(
                    f"preprocessor directive '#{word}' is not supported",
                    number, col, filename, source,
                    hint="only '#pragma imcl ...' lines are allowed; use a `tunable` pragma or a "
                    "`const` variable instead of #define",
                )
            if match.group(2) == "imcl":
                rest = match.group(3)
                start_col = len(match.group(1)) + len("imcl") + 1
                pragmas.append(_parse_pragma(rest, number, start_col, filename, source))
            # other pragmas (e.g. '#pragma unroll') are ignored, as C compilers ignore unknown ones
            out_lines.append(" " * len(line))
            continue
        out_lines.append(line)
        in_comment = _ends_inside_comment(line, in_comment)
    return "\n".join(out_lines), pragmas


def _ends_inside_comment(line: str, in_comment: bool) -> bool:
    i = 0
    while i < len(line):
        if in_comment:
            end = line.find("*/", i)
            if end < 0:
                return True
            in_comment, i = False, end + 2
        else:
            start_block = line.find("/*", i)
            start_line = line.find("//", i)
            if start_block < 0 or (0 <= start_line < start_block):
                return False
            in_comment, i = True, start_block + 2
    return in_comment


def _tokenize(text: str, line: int, col0: int, filename: str, source: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i = 0
    while i < len(text):
        if text[i:].strip() == "" or text[i:].lstrip().startswith("//"):
            break
        m = _TOKEN.match(text, i)
        if not m:
            j = i + len(text[i:]) - len(text[i:].lstrip())
            raise CompileError(
                f"unexpected character '{text[j]}' in pragma", line, col0 + j, filename, source
            )
        kind = m.lastgroup or "sym"
        start = m.start(kind)
        toks.append(_Tok(kind, m.group(kind), col0 + start))
        i = m.end()
    return toks


def _parse_pragma(text: str, line: int, col0: int, filename: str, source: str) -> Pragma:
    def fail(msg: str, column: int, hint: str | None = None) -> CompileError:
        return CompileError(msg, line, column, filename, source, hint=hint)

    toks = _tokenize(text, line, col0, filename, source)
    if not toks or toks[0].kind != "id":
        raise fail("expected a pragma name after '#pragma imcl'", col0)
    name_tok = toks[0]
    if name_tok.text not in KNOWN_PRAGMAS:
        raise fail(
            f"unknown pragma 'imcl {name_tok.text}'" + suggestion_suffix(name_tok.text, KNOWN_PRAGMAS),
            name_tok.column,
            hint="known pragmas: " + ", ".join(KNOWN_PRAGMAS),
        )
    pos = Pos(line, name_tok.column)
    if len(toks) < 2 or toks[1].text != "(":
        raise fail(f"expected '(' after 'imcl {name_tok.text}'", toks[1].column if len(toks) > 1 else col0 + len(text.rstrip()))
    if toks[-1].text != ")":
        raise fail(f"expected ')' at the end of pragma '{name_tok.text}'", col0 + len(text.rstrip()))
    args: list[PragmaArg] = []
    inner = toks[2:-1]
    # items separated by commas; each item: value or name ':' value
    i = 0
    while i < len(inner):
        tok = inner[i]
        if tok.kind not in ("id", "num"):
            raise fail(f"unexpected '{tok.text}' in pragma '{name_tok.text}'", tok.column)
        if i + 1 < len(inner) and inner[i + 1].text == ":":
            if i + 2 >= len(inner) or inner[i + 2].kind not in ("id", "num"):
                raise fail(f"expected a value after ':' in pragma '{name_tok.text}'", inner[i + 1].column)
            values = [inner[i + 2].text]
            i += 3
            if i < len(inner) and inner[i].text == "(":
                # a mode's argument: boundary_cond(image:constant(2.5)), one number
                if name_tok.text != "boundary_cond":
                    raise fail(f"unexpected '(' in pragma '{name_tok.text}'", inner[i].column)
                if i + 2 >= len(inner) or inner[i + 1].kind not in ("num", "real") or inner[i + 2].text != ")":
                    raise fail(f"expected one number and ')' after '{values[0]}('", inner[i].column,
                               "e.g. boundary_cond(input:constant(0.5))")
                values.append(inner[i + 1].text)
                i += 3
            args.append(PragmaArg(Pos(line, tok.column), tok.text, values))
        else:
            args.append(PragmaArg(Pos(line, tok.column), tok.text, []))
            i += 1
        if i < len(inner):
            if inner[i].text != ",":
                raise fail(f"expected ',' between pragma arguments, not '{inner[i].text}'", inner[i].column)
            i += 1
            if i == len(inner):
                raise fail(f"expected an argument after ',' in pragma '{name_tok.text}'", inner[i - 1].column)
    if name_tok.text == "tunable":
        args = _group_tunable(args, fail)
    return Pragma(pos, name_tok.text, args, text.strip())


def _group_tunable(items: list[PragmaArg], fail) -> list[PragmaArg]:
    """`tunable(N: 1, 2, 4)` arrives as items 'N:1', '2', '4'; group them as N -> [1, 2, 4]."""
    groups: list[PragmaArg] = []
    for item in items:
        if item.values:
            groups.append(PragmaArg(item.pos, item.name, list(item.values)))
        elif groups:
            groups[-1].values.append(item.name)
        else:
            raise fail("expected 'NAME: value, value, ...' in pragma 'tunable'", item.pos.column)
    return groups
