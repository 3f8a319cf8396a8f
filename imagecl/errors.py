"""The project's exceptions. Every user mistake surfaces as one of these, never a traceback."""
from __future__ import annotations

import difflib
from typing import Iterable, Optional


class ImageCLError(Exception):
    """Base class of every error imagecl reports to a user."""


class CompileError(ImageCLError):
    """An invalid program: carries the file, line and column (1-based) and a C-style message."""

    def __init__(
        self,
        message: str,
        line: int = 0,
        column: int = 0,
        filename: str = "<string>",
        source: str = "",
        hint: Optional[str] = None,
    ) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.filename = filename
        self.source = source
        self.hint = hint
        super().__init__(self.format())

    def format(self) -> str:
        head = f"{self.filename}:{self.line}:{self.column}: error: {self.message}"
        lines = self.source.splitlines()
        parts = [head]
        if 1 <= self.line <= len(lines):
            text = lines[self.line - 1].expandtabs(1)
            parts.append("    " + text)
            parts.append("    " + " " * max(self.column - 1, 0) + "^")
        if self.hint:
            parts.append(f"note: {self.hint}")
        return "\n".join(parts)


class ArgumentError(ImageCLError):
    """A wrong argument to a program: missing, unknown, wrong dtype, shape or value."""


class DeviceError(ImageCLError):
    """No OpenCL device, or none matching the user's selection."""


class BuildError(ImageCLError):
    """The OpenCL compiler rejected generated code; carries the build log."""

    def __init__(self, message: str, log: str = "", source: str = "") -> None:
        self.log = log
        self.source = source
        super().__init__(f"{message}\n--- build log ---\n{log.strip()}" if log.strip() else message)


class ConfigError(ImageCLError):
    """A tuning configuration that is malformed or outside the program's space."""


class ExecutionError(ImageCLError):
    """The OpenCL runtime failed while running a kernel (out of resources, invalid work-group...)."""


def did_you_mean(name: str, candidates: Iterable[str], cutoff: float = 0.6) -> Optional[str]:
    """A 'did you mean' suggestion for a misspelt name, or None."""
    matches = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=cutoff)
    return matches[0] if matches else None


def suggestion_suffix(name: str, candidates: Iterable[str], cutoff: float = 0.6) -> str:
    guess = did_you_mean(name, candidates, cutoff)
    return f"; did you mean '{guess}'?" if guess else ""
