"""Content type detection: is a text prose, a table, or both (the F9 design's heuristics).

A text is tabular when it holds a Markdown table (`|` rows with a `|---|` separator line), or when
at least 30% of its lines are structured rows (three or more columns split by `|`, tabs or runs of
two or more spaces), or at least 20% are numeric rows (mostly numbers). Lines are counted without
blank ones. A tabular text whose lines are nearly all rows is a table; one with prose around the rows
is mixed. The chunker follows the answer: prose is split by size, table rows are chunked with their
header (tables.py), a mixed text gets both.

`text_tables` finds the table blocks themselves (consecutive rows), which the chunkers take out of
the prose. A `|` inside maths (`\\( … \\)`, `\\[ … \\]`, `$$ … $$`, and `$ … $` holding TeX) is part of
the formula (|a|, \\left| … \\right|), never a column separator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text.tex import MATH_SPAN

PROSE, TABLE, MIXED = "prose", "table", "mixed"
STRUCTURED_SHARE = 0.3
NUMERIC_SHARE = 0.2
TABLE_SHARE = 0.8  # rows among all lines from which the text is a table, not mixed
MIN_COLUMNS = 3  # tab/space columns: two columns is too often a label and its value
MIN_ROWS = 2

_MD_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?$")
_SPACE_COLUMNS = re.compile(r"(?<=\S)(?: {2,}|\u3000+)(?=\S)")
_NUMBER = re.compile(r"[-+−]?\d[\d,.]*%?")
# Maths in a line: TeX's delimiters (tex.MATH_SPAN's), $$ … $$, and $ … $ when it holds TeX (a
# command, a script or a brace) and hugs its content the way Markdown maths does; a lone $ is a price.
_MATHS = re.compile(MATH_SPAN.pattern + r"|\$\$.+?\$\$|(?<![\\$])\$(?=[^\s$])[^$\n]*(?<=\S)\$(?!\d)")
_TEX = re.compile(r"[\\^_{]")
_PIPE_IN_MATHS = "\x00"  # stands for a | inside maths while a row is split at the others


@dataclass(frozen=True)
class TextTable:
    """A table found in text: its lines (0-based, end exclusive) and its cells, row by row."""

    start: int
    end: int
    rows: list[list[str]]
    header: bool  # the first row is a header (a Markdown separator followed it)


def detect_content_type(text: str) -> str:
    """"prose", "table" or "mixed" for a text, by the share of row-like lines (see module doc)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return PROSE
    structured = [_cells(line) is not None for line in lines]
    numeric = [_numeric(line) for line in lines]
    n_structured, n_numeric = sum(structured), sum(numeric)
    has_markdown = any(_MD_SEPARATOR.match(line.strip()) for line in lines) and n_structured >= MIN_ROWS
    tabular = (has_markdown
               or (n_structured >= MIN_ROWS and n_structured / len(lines) >= STRUCTURED_SHARE)
               or (n_numeric >= MIN_ROWS and n_numeric / len(lines) >= NUMERIC_SHARE))
    if not tabular:
        return PROSE
    separators = sum(bool(_MD_SEPARATOR.match(line.strip())) for line in lines)
    rows = sum(s or n for s, n in zip(structured, numeric)) + separators
    return TABLE if rows / len(lines) >= TABLE_SHARE else MIXED


def text_tables(text: str) -> list[TextTable]:
    """The table blocks of a text: runs of at least two consecutive structured lines with the same
    number of cells (a Markdown separator line is dropped and marks the row above as the header)."""
    lines = text.splitlines()
    tables: list[TextTable] = []
    i = 0
    while i < len(lines):
        first = _cells(lines[i])
        if first is None:
            i += 1
            continue
        rows, header, j = [first], False, i + 1
        while j < len(lines):
            if _MD_SEPARATOR.match(lines[j].strip()):
                header = header or j == i + 1
                j += 1
                continue
            cells = _cells(lines[j])
            if cells is None or len(cells) != len(first):
                break
            rows.append(cells)
            j += 1
        if len(rows) >= MIN_ROWS:
            tables.append(TextTable(i, j, rows, header))
        i = j
    return tables


def text_table_rows(text: str) -> list[list[str]] | None:
    """The cells of the first table in a text, row by row (header row first), or None."""
    tables = text_tables(text)
    return tables[0].rows if tables else None


def _cells(line: str) -> list[str] | None:
    """The cells of a structured row, or None for a line that is not one."""
    stripped = line.strip()
    if not stripped or _MD_SEPARATOR.match(stripped):
        return None
    if "|" in stripped and "|" in (masked := _pipes_in_maths_masked(stripped)):
        cells = [c.strip().replace(_PIPE_IN_MATHS, "|") for c in masked.strip("|").split("|")]
        # "| a | b |" has two cells and is a row; "a | b" without edge pipes needs three.
        if len(cells) >= (2 if stripped.startswith("|") and stripped.endswith("|") else MIN_COLUMNS):
            return cells
    if "\t" in stripped:
        cells = [c.strip() for c in stripped.split("\t")]
        if len(cells) >= MIN_COLUMNS:
            return cells
    if len(_SPACE_COLUMNS.findall(stripped)) >= MIN_COLUMNS - 1:
        cells = [c for c in re.split(r" {2,}|\u3000+", stripped) if c]
        if len(cells) >= MIN_COLUMNS:
            return cells
    return None


def _pipes_in_maths_masked(line: str) -> str:
    if "\\" not in line and "$" not in line:
        return line
    return _MATHS.sub(_masked, line)


def _masked(match: re.Match) -> str:
    maths = match.group()
    if maths.startswith("$") and not maths.startswith("$$") and not _TEX.search(maths):
        return maths  # $5 | $6: prices, not maths
    return maths.replace("|", _PIPE_IN_MATHS)


def _numeric(line: str) -> bool:
    """A line made mostly of numbers (at least two of them): a row of data even without separators."""
    numbers = _NUMBER.findall(line)
    visible = len(re.sub(r"\s", "", line))
    return len(numbers) >= 2 and visible > 0 and sum(len(n) for n in numbers) / visible >= 0.5
