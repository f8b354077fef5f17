"""THE YAML reader of the project: front matter, `_config.yml`, `_data/*.yml`, knowledge.yml,
glossaries and generated learns all go through `load` / `load_file`.

YAML as written by people is read safely and in bounded time and memory:
- aliases (`*name`, including `<<: *name` merges) are refused: a few hundred bytes of nested
  aliases expand to gigabytes ("billion laughs"), and no file of a site needs them;
- documents larger than `MAX_CHARS` and nesting deeper than `MAX_DEPTH` are refused (libyaml's
  C composer recurses per level and crashes on very deep nesting, so composing is done here);
- every problem, including values the constructor rejects (`date: 2024-13-45`), is a
  `YamlError` naming file:line:col, never a traceback.
Scanning and parsing run in libyaml (C) when it is available; composing is Python either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .diagnostics import Diagnostic
from .errors import ConfigError
from .readfile import UnreadableFile, read_regular_file

MAX_CHARS = 10_000_000  # far above any hand-written data file
MAX_DEPTH = 100


class YamlError(ConfigError):
    """A YAML document that cannot be used; `line`/`col` are 1-based positions in `path`."""

    def __init__(self, path, line: int, col: int, problem: str, fix: str):
        self.path, self.line, self.col, self.problem, self.fix = str(path), line, col, problem, fix
        super().__init__(f"{path}:{line}:{col}: {problem}. Fix: {fix}.")

    def diagnostic(self, rule: str, severity: str = "error") -> Diagnostic:
        return Diagnostic(self.path, self.line, self.col, severity, rule, self.problem, self.fix)


@lru_cache(maxsize=1)
def _classes():
    """The loader and its refusal error, built on first use (yaml stays out of `--help`)."""
    import yaml
    from yaml.composer import Composer
    from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent

    class Refused(yaml.YAMLError):
        def __init__(self, problem: str, fix: str, mark):
            super().__init__(problem)
            self.problem, self.fix, self.problem_mark = problem, fix, mark

    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        """The safe loader with Python composition: aliases and deep nesting are refused here."""

        def __init__(self, stream):
            super().__init__(stream)
            self.anchors = {}
            self.depth = 0

        get_single_node = Composer.get_single_node
        compose_document = Composer.compose_document
        compose_scalar_node = Composer.compose_scalar_node
        compose_sequence_node = Composer.compose_sequence_node
        compose_mapping_node = Composer.compose_mapping_node

        def compose_node(self, parent, index):
            if self.check_event(AliasEvent):
                event = self.get_event()
                raise Refused(f"YAML alias '*{event.anchor}' is not allowed",
                              "write the value out instead of referring to an anchor (&name / *name)",
                              event.start_mark)
            nested = self.check_event(SequenceStartEvent, MappingStartEvent)
            if nested and self.depth >= MAX_DEPTH:
                raise Refused(f"YAML nested more than {MAX_DEPTH} levels deep", "flatten the structure",
                              self.peek_event().start_mark)
            self.depth += nested
            try:
                return Composer.compose_node(self, parent, index)
            finally:
                self.depth -= nested

        def construct_object(self, node, deep=False):
            try:
                return super().construct_object(node, deep)
            except (ValueError, TypeError, OverflowError) as exc:  # e.g. date: 2024-13-45
                raise Refused(f"the value cannot be read ({str(exc)[:120]})", "fix or quote the value",
                              node.start_mark) from None

    return Loader, Refused, yaml.YAMLError


@dataclass
class YamlDocument:
    data: Any
    root: Any  # the composed node tree, for line numbers of keys
    path: str
    first_line: int

    def line(self, *keys) -> int:
        """The 1-based file line of the value at `keys` (as deep as it exists), for diagnostics."""
        node = self.root
        for key in keys:
            found = _child(node, key) if node is not None else None
            if found is None:
                break
            node = found
        return node.start_mark.line + self.first_line if node is not None else self.first_line


def _child(node, key):
    if node.id == "mapping":
        for key_node, value_node in node.value:
            if key_node.id == "scalar" and key_node.value == str(key):
                return value_node
    if node.id == "sequence" and isinstance(key, int) and 0 <= key < len(node.value):
        return node.value[key]
    return None


def load(text: str, path="<string>", first_line: int = 1) -> YamlDocument:
    """Parse one YAML document; `first_line` is the file line where `text` starts."""
    if len(text) > MAX_CHARS:
        raise YamlError(path, first_line, 1, f"YAML document of {len(text)} characters is larger than "
                        f"the limit of {MAX_CHARS}", "split it into smaller files")
    loader_class, refused, yaml_error = _classes()
    loader = loader_class(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml_error as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        if isinstance(exc, refused):
            problem, fix = exc.problem, exc.fix
        elif "maximum nesting depth" in str(getattr(exc, "problem", "")):
            # libyaml >= 0.2.6 stops at 1000 levels in its scanner, which may run ahead of our composer
            problem, fix = f"YAML nested more than {MAX_DEPTH} levels deep", "flatten the structure"
        else:
            problem, fix = f"not valid YAML: {_describe(exc)}", "fix the YAML syntax"
        raise _error(path, first_line, mark, problem, fix) from None
    finally:
        loader.dispose()
    return YamlDocument(data, root, str(path), first_line)


def load_file(path) -> YamlDocument:
    """Read and parse a YAML file (regular files only, UTF-8)."""
    try:
        raw = read_regular_file(path, max_bytes=MAX_CHARS * 4)
    except UnreadableFile as exc:
        raise YamlError(path, 1, 1, f"cannot be read ({exc.reason})", exc.fix) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise YamlError(path, line, 1, f"invalid UTF-8 byte 0x{raw[exc.start]:02x}", "re-save the file as UTF-8") from None
    return load(text.removeprefix("\ufeff"), path)


def _error(path, first_line: int, mark, problem: str, fix: str) -> YamlError:
    line = first_line + (mark.line if mark is not None else 0)
    col = mark.column + 1 if mark is not None else 1
    return YamlError(path, line, col, problem, fix)


def _describe(exc) -> str:
    parts = [getattr(exc, "context", None), getattr(exc, "problem", None)]
    return ", ".join(p for p in parts if p) or str(exc).splitlines()[0]
