"""Source text -> IR: the lark LALR parser and the tree-to-dataclass transformer."""
from __future__ import annotations

import functools
import math
import re
from typing import Optional

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from ..errors import CompileError
from ..ir import nodes as ir
from ..ir import types as ty
from ..ir.consteval import const_int, type_literals
from ..resources import resource_dir
from .depth import check_depth, raise_recursion_limit
from .pragmas import split_pragmas


# once, when imagecl is imported: every pass (checker, analyses, code generation) may meet a
# deep program, and tools that watch the limit (hypothesis) expect it not to change later
raise_recursion_limit()


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = (resource_dir("grammar") / "imagecl.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def parse(source: str, filename: str = "<string>") -> ir.TranslationUnit:
    """Parse a whole `.icl` file into the (untyped) IR; raise CompileError on any syntax error."""
    stripped, pragmas = split_pragmas(source, filename)
    try:
        tree = _parser().parse(stripped)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, stripped, source, filename) from None
    def located(msg: str, line: int, col: int, hint: Optional[str]) -> CompileError:
        return CompileError(msg, line, col, filename, source, hint)

    check_depth(tree, located)
    raise_recursion_limit()
    try:
        functions = _ToIR(filename, source).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, CompileError):
            raise exc.orig_exc from None
        raise
    return ir.TranslationUnit(ir.Pos(1, 1), filename, source, functions, pragmas)


# ---- syntax errors in C programmers' words ---------------------------------------------

_TOKEN_WORDS = {
    "SEMICOLON": "';'", "RPAR": "')'", "LPAR": "'('", "RBRACE": "'}'", "LBRACE": "'{'",
    "RSQB": "']'", "LSQB": "'['", "COMMA": "','", "COLON": "':'", "NAME": "an identifier",
    "MORETHAN": "'>'", "LESSTHAN": "'<'", "EQUAL": "'='", "WHILE": "'while'",
}


def _describe(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    return f"'{token.value}'"


def _syntax_error(exc: UnexpectedInput, stripped: str, source: str, filename: str) -> CompileError:
    def err(msg: str, line: int, col: int, hint: Optional[str] = None) -> CompileError:
        return CompileError(msg, line, col, filename, source, hint)

    if isinstance(exc, UnexpectedCharacters):
        ch = stripped[exc.pos_in_stream] if exc.pos_in_stream < len(stripped) else "?"
        if stripped.startswith("/*", exc.pos_in_stream):
            return err("unterminated comment", exc.line, exc.column, "a '/*' comment needs a closing '*/'")
        if ch == "'":
            return err("invalid character literal", exc.line, exc.column)
        if ch == '"':
            return err("string literals are not supported", exc.line, exc.column)
        if ch.isdigit() or ch == ".":
            text = re.match(r"[0-9A-Za-z_.]+([eEpP][+-][0-9A-Za-z_.]*)*", stripped[exc.pos_in_stream:]).group(0)
            if text[:2].lower() == "0x" and "." in text and not re.search("[pP]", text):
                return err(f"hexadecimal floating constant '{text}' has no exponent", exc.line, exc.column,
                           f"C requires the binary exponent, e.g. {text}p0")
            return err(f"invalid number literal '{text}'", exc.line, exc.column)
        return err(f"unexpected character '{ch}'", exc.line, exc.column)
    if isinstance(exc, (UnexpectedToken, UnexpectedEOF)):
        token = exc.token if isinstance(exc, UnexpectedToken) else Token("$END", "")
        expected = set(exc.expected) if hasattr(exc, "expected") else set()
        line = getattr(token, "line", None) or exc.line
        col = getattr(token, "column", None) or exc.column
        if token.type == "$END" or line in (None, -1):
            line, col = _end_position(stripped)
        prev = _previous_token(stripped, token)
        start = getattr(token, "start_pos", None)
        if start is not None and stripped.startswith("/*", start):
            return err("unterminated comment", line, col, "a '/*' comment needs a closing '*/'")
        if token.type == "$END":
            if "RBRACE" in expected:
                return err("expected '}' at end of file", line, col, "a '{' is not closed")
            return err("unexpected end of file", line, col)
        number = _malformed_number(stripped, start) if start is not None else None
        if number:
            num_start, text = number
            nline = stripped.count("\n", 0, num_start) + 1
            ncol = num_start - (stripped.rfind("\n", 0, num_start) + 1) + 1
            return err(f"invalid number literal '{text}'", nline, ncol)
        if "else" in (token.value, getattr(prev, "value", None)):
            where = prev if getattr(prev, "value", None) == "else" else token
            return err("unexpected 'else' without a matching 'if'", where.line, where.column)
        if token.type == "NAME" and prev is not None and prev.type == "NAME":
            return err(f"unknown type name '{prev.value}'", prev.line, prev.column,
                       "types are bool, char, uchar, short, ushort, int, uint, float, double, "
                       "float2/3/4, int2/4, uchar4 and Image<T>")
        if "SEMICOLON" in expected and prev is not None and token.type != "SEMICOLON":
            # C compilers point just past the token that should have been followed by ';'
            pline, pcol = prev.end_line, prev.end_column
            return err(f"expected ';' before {_describe(token)}", pline, pcol)
        if token.type == "RBRACE" and "RBRACE" not in expected:
            return err(f"unexpected {_describe(token)}", line, col, "check the braces and parentheses above")
        words = sorted(_TOKEN_WORDS[e] for e in expected if e in _TOKEN_WORDS)
        if words and len(words) <= 3:
            return err(f"expected {' or '.join(words)} before {_describe(token)}", line, col)
        return err(f"unexpected {_describe(token)}", line, col)
    return err(str(exc).splitlines()[0], exc.line, exc.column)


def _malformed_number(text: str, start: int) -> Optional[tuple[int, str]]:
    """If the token at `start` continues a number literal ('1.2.3', '12abc'), that literal."""
    word = set("0123456789abcdefABCDEFxXuU._")
    if start == 0 or text[start - 1] not in word or text[start] not in word:
        return None
    begin = start
    while begin > 0 and text[begin - 1] in word:
        begin -= 1
    if not text[begin].isdigit() and not (text[begin] == "." and text[begin + 1:begin + 2].isdigit()):
        return None
    end = start
    while end < len(text) and (text[end].isalnum() or text[end] in "._"):
        end += 1
    return begin, text[begin:end]


def _end_position(text: str) -> tuple[int, int]:
    body = text.rstrip()
    lines = body.split("\n")
    return len(lines), len(lines[-1]) + 1


def _previous_token(text: str, token: Token) -> Optional[Token]:
    """The token before `token` (by re-lexing), to place 'expected ;' errors as C compilers do."""
    target = getattr(token, "start_pos", None)
    prev = None
    try:
        for tok in _parser().lex(text):
            if target is not None and tok.start_pos >= target:
                break
            prev = tok
    except UnexpectedInput:
        pass
    return prev


# ---- the transformer ----------------------------------------------------------------


_FLOAT_OVERFLOW = 2.0 ** 128 - 2.0 ** 103


def _short(text: str, limit: int = 24) -> str:
    """A literal as quoted in a message: a 5,000-digit one is cut."""
    return text if len(text) <= limit else text[:limit] + "..."



def _pos(meta_or_token) -> ir.Pos:
    if isinstance(meta_or_token, Token):
        return ir.Pos(meta_or_token.line, meta_or_token.column, meta_or_token.end_line, meta_or_token.end_column)
    meta = meta_or_token
    if getattr(meta, "empty", False):
        return ir.NOWHERE
    return ir.Pos(meta.line, meta.column, meta.end_line, meta.end_column)


@v_args(meta=True)
class _ToIR(Transformer):
    def __init__(self, filename: str, source: str) -> None:
        super().__init__()
        self.filename = filename
        self.source = source

    def _error(self, msg: str, pos: ir.Pos, hint: Optional[str] = None) -> CompileError:
        return CompileError(msg, pos.line, pos.column, self.filename, self.source, hint)

    # top level
    def start(self, meta, items):
        return list(items)

    def function(self, meta, items):
        rtype, name, params, body = items
        return ir.Function(_pos(name), str(name), rtype, params or [], body)

    def params(self, meta, items):
        return list(items)

    def qualifiers(self, meta, items):
        return items[0] is not None

    def value_param(self, meta, items):
        is_const, ptype, name, dims = items
        if dims:
            if isinstance(ptype, ty.ImageType):
                raise self._error(f"image parameter '{name}' cannot have array dimensions", _pos(name))
            ptype = ty.ArrayType(ptype, dims)
        return ir.Param(_pos(name), str(name), ptype, is_const)

    def pointer_param(self, meta, items):
        is_const, ptype, name = items
        if isinstance(ptype, ty.ImageType):
            raise self._error(f"'{name}': pointers to images are not allowed", _pos(name))
        return ir.Param(_pos(name), str(name), ty.PointerType(ptype), is_const)

    def array_dims(self, meta, items):
        dims = []
        for expr in items:
            type_literals(expr)  # C's conversions apply: unsigned sizes wrap
            value = const_int(expr)  # an integer constant expression, as in C: 'float w[2 * 3 + 1]'
            if value is None or isinstance(expr, ir.FloatLit):
                raise self._error(
                    "array size must be an integer constant", expr.pos,
                    "sizes of fixed-size arrays are integer constant expressions, e.g. 'float window[9]'",
                )
            if value <= 0:
                raise self._error(f"array size must be positive, not {value}", expr.pos)
            dims.append(value)
        return tuple(dims)

    # types
    def type_name(self, meta, items):
        return items[0]

    def scalar_type(self, meta, items):
        tok = items[0]
        if tok.type == "HALF":
            raise self._error("type 'half' is not supported", _pos(tok), "use float")
        return ty.scalar_or_vector(str(tok))

    def unsigned_type(self, meta, items):
        _, rest = items
        return {None: ty.UINT, "int": ty.UINT, "char": ty.UCHAR, "short": ty.USHORT}[
            None if rest is None else str(rest)
        ]

    def image_type(self, meta, items):
        pixel = items[1] if len(items) > 1 and items[1] is not None else ty.FLOAT
        if pixel not in ty.PIXEL_TYPES:
            raise self._error(
                f"unsupported pixel type '{pixel}' for Image",
                _pos(items[0]),
                "pixel types are char, uchar, short, ushort, int, uint, float, double, uchar4, float4",
            )
        return ty.ImageType(pixel)

    # statements
    def block(self, meta, items):
        return ir.Block(_pos(meta), list(items))

    def declaration(self, meta, items):
        is_const, dtype = items[0], items[1]
        decls = []
        for name, dims, init in items[2:]:
            vtype = ty.ArrayType(dtype, dims) if dims else dtype
            decls.append(ir.VarDecl(_pos(name), str(name), vtype, init, is_const))
        return decls[0] if len(decls) == 1 else ir.DeclGroup(_pos(meta), decls)

    def declarator(self, meta, items):
        name, dims, init = items
        return (name, dims, init)

    def init_list(self, meta, items):
        return [i for i in items if i is not None]

    def expr_stmt(self, meta, items):
        return ir.ExprStmt(_pos(meta), items[0])

    def empty_stmt(self, meta, items):
        return ir.Empty(_pos(meta))

    def if_stmt(self, meta, items):
        _, cond, then, _, other = items
        return ir.If(_pos(meta), cond, then, other)

    def while_stmt(self, meta, items):
        return ir.While(_pos(meta), items[1], items[2])

    def do_stmt(self, meta, items):
        return ir.DoWhile(_pos(meta), items[1], items[3])

    def for_init(self, meta, items):
        item = items[0]
        if item is None:
            return None
        if isinstance(item, ir.Expr):
            return ir.ExprStmt(item.pos, item)
        return item

    def for_stmt(self, meta, items):
        _, init, cond, step, body = items
        return ir.For(_pos(meta), init, cond, step, body)

    def break_stmt(self, meta, items):
        return ir.Break(_pos(meta))

    def continue_stmt(self, meta, items):
        return ir.Continue(_pos(meta))

    def return_stmt(self, meta, items):
        return ir.Return(_pos(meta), items[1])

    # expressions
    def comma(self, meta, items):
        left, right = items
        exprs = left.exprs if isinstance(left, ir.Comma) else [left]
        return ir.Comma(_pos(meta), exprs + [right])

    def assignment(self, meta, items):
        target, op, value = items
        return ir.Assign(_pos(op), str(op), target, value)

    def ternary(self, meta, items):
        return ir.Ternary(_pos(meta), *items)

    def binary(self, meta, items):
        left, op, right = items
        return ir.Binary(_pos(op), str(op), left, right)

    def prefix(self, meta, items):
        op, target = items
        return ir.IncDec(_pos(op), str(op), True, target)

    def postfix_op(self, meta, items):
        target, op = items
        return ir.IncDec(_pos(op), str(op), False, target)

    def unary_op(self, meta, items):
        op, operand = items
        if str(op) == "-" and isinstance(operand, ir.IntLit) and not operand.unsigned:
            return ir.IntLit(_pos(op), -operand.value)
        return ir.Unary(_pos(op), str(op), operand)

    def cast(self, meta, items):
        target, operand = items
        if isinstance(target, ty.VectorType):
            elements = operand.exprs if isinstance(operand, ir.Comma) else [operand]
            if isinstance(operand, ir.Comma) or len(elements) > 1:
                return ir.VectorLit(_pos(meta), target, elements)
        return ir.Cast(_pos(meta), target, operand)

    def subscript(self, meta, items):
        base, index = items
        if isinstance(base, ir.Subscript):
            base.indices.append(index)
            return base
        if not isinstance(base, ir.Name):
            raise self._error("only named images and arrays can be subscripted", base.pos)
        return ir.Subscript(base.pos, base, [index])

    def member(self, meta, items):
        base, name = items
        return ir.Member(_pos(name), base, str(name))

    def call(self, meta, items):
        name, args = items
        return ir.Call(_pos(name), str(name), args or [])

    def args(self, meta, items):
        return list(items)

    def name(self, meta, items):
        return ir.Name(_pos(items[0]), str(items[0]))

    def int_lit(self, meta, items):
        tok = items[0]
        text = str(tok)
        unsigned = text[-1] in "uU"
        digits = text.rstrip("uU")
        hexadecimal = digits[:2].lower() == "0x"
        octal = len(digits) > 1 and digits[0] == "0" and not hexadecimal
        if octal and re.search("[89]", digits):
            bad = re.search("[89]", digits).group(0)
            raise self._error(f"invalid digit '{bad}' in octal constant '{_short(text)}'", _pos(tok),
                              "a literal that starts with 0 is octal")
        # 32 bits are at most 11 digits in octal, 10 in decimal, 8 in hexadecimal (plus zeros)
        if len(digits.lstrip("0xX")) > 11:
            raise self._error(f"integer literal '{_short(text)}' is too large for 32 bits", _pos(tok))
        value = int(digits, 16) if hexadecimal else int(digits, 8) if octal else int(digits)
        if value > 0xFFFFFFFF:
            raise self._error(f"integer literal '{_short(text)}' is too large for 32 bits", _pos(tok))
        if value > 0x7FFFFFFF:
            unsigned = True  # as C does for hexadecimal literals that do not fit int
        return ir.IntLit(_pos(tok), value, unsigned)

    def float_lit(self, meta, items):
        tok = items[0]
        text = str(tok)
        try:
            if text[:2].lower() == "0x":  # hexadecimal: the f/F suffix is not a digit here (an exponent comes first)
                value = float.fromhex(text.rstrip("fF"))
            else:
                value = float(text.rstrip("fF"))
            # literals are float (docs/language-notes.md): from FLT_MAX + half an ulp on, they round to inf
            if math.isinf(value) or abs(value) >= _FLOAT_OVERFLOW:
                raise OverflowError
        except OverflowError:
            raise self._error(f"floating constant '{_short(text)}' is too large for float", _pos(tok),
                              "the largest float is about 3.4e38") from None
        return ir.FloatLit(_pos(tok), value, text)

    def char_lit(self, meta, items):
        tok = items[0]
        body = str(tok)[1:-1]
        escapes = {"n": 10, "t": 9, "r": 13, "0": 0, "\\": 92, "'": 39, '"': 34}
        value = escapes.get(body[1], None) if body.startswith("\\") else ord(body)
        if value is None:
            raise self._error(f"unknown escape sequence '{body}'", _pos(tok))
        return ir.IntLit(_pos(tok), value)

    def true_lit(self, meta, items):
        return ir.BoolLit(_pos(items[0]), True)

    def false_lit(self, meta, items):
        return ir.BoolLit(_pos(items[0]), False)
