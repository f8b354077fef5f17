"""Diagnostics: findings about the site, each naming file:line:col, the rule and the fix."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

SEVERITIES = ("error", "warning", "info")
# C0/C1 controls, DEL and bidi overrides: in a file name, id or title they could move the
# cursor, recolour the terminal, reorder text or start a forged line in a CI log.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str, keep_newlines: bool = False) -> str:
    """`text` with control characters shown as escapes (\\x1b, \\n), so it prints as one inert line."""
    def escape(match: re.Match) -> str:
        char = match.group()
        if keep_newlines and char == "\n":
            return char
        return repr(char)[1:-1] if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    return _CONTROL.sub(escape, str(text))


def printable_path(path: str) -> str:
    """A path for the start of an output line: never begins with '::' (a GitHub workflow command)."""
    path = printable(path)
    return f"./{path}" if path.startswith(":") else path


@dataclass(frozen=True)
class Diagnostic:
    path: str
    line: int
    col: int
    severity: str  # error | warning | info
    rule: str
    message: str
    fix: str = ""

    def format(self, path: str | None = None) -> str:
        """One line of text output; `path` replaces the stored path (e.g. made relative)."""
        fix = f" Fix: {printable(self.fix)}" if self.fix else ""
        where = printable_path(self.path if path is None else path)
        return f"{where}:{self.line}:{self.col}: {self.severity}: [{printable(self.rule)}] {printable(self.message)}.{fix}"

    def to_dict(self) -> dict:
        return asdict(self)


def has_errors(diagnostics) -> bool:
    return any(d.severity == "error" for d in diagnostics)
