"""Program files as text: UTF-8, with a located error at the first byte that is not."""
from __future__ import annotations

from ..errors import CompileError


def decode_source(data: bytes, filename: str) -> str:
    """`data` decoded as UTF-8 (a byte-order mark dropped); CompileError at the line and
    column of the first invalid byte otherwise."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line_start = data.rfind(b"\n", 0, start) + 1
        line = data.count(b"\n", 0, start) + 1
        # the column counts characters, as the caret under the line does
        column = len(data[line_start:start].decode("utf-8", errors="replace")) + 1
        shown = data.decode("utf-8", errors="replace")
        raise CompileError(f"invalid UTF-8 byte 0x{data[start]:02x}; programs are UTF-8 text", line, column,
                           filename, shown, "save the file as UTF-8") from None
