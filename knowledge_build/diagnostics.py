"""Diagnostics: findings about the site, each naming file:line:col, the rule and the fix."""

from __future__ import annotations

from dataclasses import asdict, dataclass

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Diagnostic:
    path: str
    line: int
    col: int
    severity: str  # error | warning | info
    rule: str
    message: str
    fix: str = ""

    def format(self) -> str:
        fix = f" Fix: {self.fix}" if self.fix else ""
        return f"{self.path}:{self.line}:{self.col}: {self.severity}: [{self.rule}] {self.message}.{fix}"

    def to_dict(self) -> dict:
        return asdict(self)


def has_errors(diagnostics) -> bool:
    return any(d.severity == "error" for d in diagnostics)
