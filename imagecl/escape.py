"""Text from users (file paths, names, device names, configurations) made safe for each kind of
file imagecl writes. One function per target; the generators call these and nothing else.

- `comment`: text inside a C/OpenCL comment, `// ...` or `/* ... */`. The result has no line
  break of any kind, no `*/` or `/*`, no trigraph, no backslash at its end (a backslash before the
  template's newline would splice the next line into a `//` comment) and no invisible or bidi
  control character. What is replaced gets a visible, Python-style escape (`\\n`, `\\x1b`,
  `\\u2028`, `*\\/`), so the file stays readable. A template must not put `*` or `/` directly
  next to the text.
- `terminal`: text printed on one line of a terminal (names read from other tools' files).
- `c_string`: a C string literal, quotes included (octal escapes, so nothing after an escape is
  read as part of it; `?` escaped, so no trigraph).
- `c_identifier`: a name that must be a C identifier as it stands; anything else is refused.
- JSON: written by the json module only (json.dumps escapes every string), never by hand.
- `file_component`: one component of a file name made from a name (a kernel's); refused if it
  could leave its folder or is not a plain name.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any

from .errors import ImageCLError

_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_C_STRING_ESCAPES = {"\n": "\\n", "\t": "\\t", "\\": "\\\\", '"': '\\"'}
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}
# Cc: controls (newline, CR, NUL, ESC...), Cf: format characters (bidi overrides, zero width),
# Zl/Zp: the line and paragraph separators, Cs: lone surrogates (undecodable bytes of a path)
_UNSAFE_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}


class UnsafeNameError(ImageCLError):
    """A name that would have to be a C identifier or a plain file name, and is not."""


def _visible(ch: str) -> str:
    if ch in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _controls_visible(text: str) -> str:
    return "".join(_visible(ch) if ch in _SHORT_ESCAPES or unicodedata.category(ch) in _UNSAFE_CATEGORIES else ch
                   for ch in text)


def terminal(text: Any) -> str:
    """`text` as one line on a terminal: no line break, escape sequence or bidi control of its own."""
    return _controls_visible(str(text))


def comment(text: Any) -> str:
    """`text` as it may stand inside a C or OpenCL comment of one line (see the module's notes)."""
    escaped = _controls_visible(str(text))
    # a comment's end or a nested start; '??' would begin a trigraph (??/ is a backslash in C99)
    escaped = re.sub(r"\*(?=/)", "*\\\\", escaped)
    escaped = re.sub(r"/(?=\*)", "/\\\\", escaped)
    escaped = re.sub(r"\?(?=\?)", "?\\\\", escaped)
    if escaped.endswith("\\"):  # only as the end of "\\": written so that no backslash ends the text
        escaped = escaped[:-2] + "\\x5c"
    return escaped


def c_string(text: str) -> str:
    """`text` as one C string literal, quotes included; non-ASCII characters as UTF-8 bytes."""
    out = ['"']
    previous = ""
    for byte in str(text).encode("utf-8", "surrogateescape"):
        ch = chr(byte)
        if ch in _C_STRING_ESCAPES:
            out.append(_C_STRING_ESCAPES[ch])
        elif ch == "?" and previous == "?":  # '??' would begin a trigraph
            out.append("\\?")
        elif byte < 0x20 or byte >= 0x7F:
            out.append(f"\\{byte:03o}")  # three digits: a following digit is not read into it
        else:
            out.append(ch)
        previous = ch
    out.append('"')
    return "".join(out)


def c_identifier(name: str, what: str = "a name") -> str:
    """`name` itself, if it is an ASCII C identifier; otherwise UnsafeNameError."""
    if not isinstance(name, str) or not _C_IDENTIFIER.match(name):
        raise UnsafeNameError(f"{what} must be a C identifier (letters, digits, '_'; not starting with a digit), "
                              f"got {name!r}")
    return name


def file_component(name: str, what: str = "a file name") -> str:
    """`name` as one component of a path: refused if empty, '.' or '..', if it holds a separator,
    NUL or any control character, or if it is longer than file systems allow (255 bytes)."""
    text = str(name)
    if (not text or text in (".", "..") or "/" in text or "\\" in text
            or any(unicodedata.category(ch) in _UNSAFE_CATEGORIES for ch in text)
            or len(text.encode("utf-8", "surrogateescape")) > 255):
        raise UnsafeNameError(f"{what} cannot be made from {text!r}: it must be a plain name (no '/', '\\', "
                              "control characters or '..', at most 255 bytes)")
    return text


__all__ = ["comment", "terminal", "c_string", "c_identifier", "file_component", "UnsafeNameError"]
