"""Tables as chunks: HTML `<table>`s and Markdown/tab tables in text, cut into row chunks that each
carry the header.

A table is read into a grid (rowspan/colspan copied into every cell they cover, TeX in cells made
readable) with a header row: the `<thead>`'s row, else a first row of `<th>` cells, else the first
row when it looks like one (bold cells, or no numbers above columns of numbers), else none. A small
table is one chunk; a larger one is chunked by rows, each chunk holding its rows plus one row of
context either side, the caption line and the header line, so a word that occurs in a single cell
finds a chunk that shows its row with the column names and what the table is about (the F9 design's
`chunk_table_data`, row_context_size=1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text.tex import readable
from .content_type import text_tables
from .main_content import is_chrome

SMALL_TABLE_ROWS = 10  # a table of at most this many rows that fits max_chars stays one chunk
ROW_CONTEXT = 1
CELL_SEPARATOR = " | "
_SKIPPED = {"script", "style", "svg", "template", "noscript", "button", "math"}
_NUMBER = re.compile(r"^[-+−]?[\d,.]+\s*[%°]?$")


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""  # its <caption>, else the short line that introduces it (sections.py): heads every chunk


@dataclass(frozen=True)
class TableChunk:
    text: str  # caption, header line, then the rows (context rows included), one per line
    rows: tuple[int, int]  # first/last data row (1-based) the chunk is about, context rows not counted
    core: str = ""  # the text without the context rows: what a query about these rows should match


def html_table(element) -> Table:
    """The header and data rows of an lxml `<table>` (nested tables' rows are not its rows)."""
    trs = element.xpath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr")
    head_trs = element.xpath("./thead/tr")
    grid, is_th, bold = _grid(trs)
    caption = _cell_text(element.find("caption")) if element.find("caption") is not None else ""
    if not grid:
        return Table((), (), caption)
    if head_trs:
        count = len(head_trs)
        header = _merge_header_rows(grid[:count])
        return Table(header, tuple(map(tuple, grid[count:])), caption)
    if is_th[0] or bold[0] or looks_like_header(grid[0], grid[1:]):
        return Table(tuple(grid[0]), tuple(map(tuple, grid[1:])), caption)
    return Table((), tuple(map(tuple, grid)), caption)


def text_table(rows: list[list[str]], *, header: bool | None = None) -> Table:
    """A Table from the cells of a text table; `header` None decides by looks_like_header."""
    cells = [tuple(readable(c) for c in row) for row in rows]
    if not cells:
        return Table((), ())
    if header is None:
        header = looks_like_header(cells[0], cells[1:])
    return Table(cells[0], tuple(cells[1:])) if header else Table((), tuple(cells))


def tables_in_text(text: str) -> list[tuple[int, int, Table]]:
    """(first line, end line, Table) of each Markdown/tab table in a text."""
    return [(t.start, t.end, text_table(t.rows, header=True if t.header else None)) for t in text_tables(text)]


def looks_like_header(first, rest) -> bool:
    """A first row without `<th>` is a header when all its cells have text, none is a number, and
    some column below it holds numbers (the usual shape of a data table)."""
    if not rest or not first or not all(c.strip() for c in first) or any(_NUMBER.match(c.strip()) for c in first):
        return False
    return any(_NUMBER.match(row[i].strip()) for row in rest for i in range(min(len(row), len(first))))


def chunk_table(table: Table, *, max_chars: int, rows_per_chunk: int = 1,
                context: int = ROW_CONTEXT) -> list[TableChunk]:
    """The table as chunks: one when it is small, else `rows_per_chunk` rows per chunk, each with
    the header line and `context` rows either side. A row longer than max_chars stays whole."""
    lines = [row_line(r) for r in table.rows]
    head = [line for line in (table.caption, row_line(table.header)) if line]
    whole = "\n".join(head + lines)
    if not lines:
        return [TableChunk(whole, (0, 0), whole)] if whole else []
    if len(lines) <= SMALL_TABLE_ROWS and len(whole) <= max_chars:
        return [TableChunk(whole, (1, len(lines)), whole)]
    chunks = []
    for first in range(0, len(lines), max(rows_per_chunk, 1)):
        last = min(first + rows_per_chunk, len(lines))
        shown = lines[max(first - context, 0):last + context]
        chunks.append(TableChunk("\n".join(head + shown), (first + 1, last), "\n".join(head + lines[first:last])))
    return chunks


def row_line(cells) -> str:
    return CELL_SEPARATOR.join(cells).strip()


def _grid(trs) -> tuple[list[list[str]], list[bool], list[bool]]:
    """Rows of cell texts with spans expanded; per row whether all its cells are th / bold."""
    grid: list[list[str]] = []
    all_th, all_bold = [], []
    pending: dict[int, tuple[int, str]] = {}  # column -> (rows still covered, text) from rowspans
    for tr in trs:
        row: list[str] = []
        cells = [c for c in tr if isinstance(c.tag, str) and c.tag in ("td", "th")]
        queue = list(cells)
        col = 0
        while queue or any(c >= col for c in pending):
            if col in pending:
                left, text = pending[col]
                row.append(text)
                pending[col] = (left - 1, text)
                if left - 1 == 0:
                    del pending[col]
                col += 1
                continue
            if not queue:
                col += 1
                row.append("")
                continue
            cell = queue.pop(0)
            text = _cell_text(cell)
            for _ in range(_span(cell, "colspan")):
                row.append(text)
                if _span(cell, "rowspan") > 1:
                    pending[col] = (_span(cell, "rowspan") - 1, text)
                col += 1
        while row and not row[-1] and len(row) > len(cells):
            row.pop()  # padding added only to reach a rowspan that ended
        if cells:
            grid.append(row)
            all_th.append(all(c.tag == "th" for c in cells))
            all_bold.append(all(_bold(c) for c in cells))
    return grid, all_th, all_bold


def _merge_header_rows(rows: list[list[str]]) -> tuple[str, ...]:
    width = max(len(r) for r in rows)
    merged = []
    for i in range(width):
        parts = list(dict.fromkeys(r[i] for r in rows if i < len(r) and r[i]))
        merged.append(" / ".join(parts))
    return tuple(merged)


def _span(cell, name: str) -> int:
    try:
        return min(max(int(cell.get(name) or 1), 1), 100)  # a hostile colspan=1000000 stays bounded
    except ValueError:
        return 1


def _bold(cell) -> bool:
    text = "".join(cell.itertext()).strip()
    strong = "".join(t for b in cell.iter("strong", "b") for t in b.itertext()).strip()
    return bool(text) and strong == text


def _cell_text(cell) -> str:
    parts: list[str] = []
    stack = [cell]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
            continue
        if not isinstance(item.tag, str) or item.tag in _SKIPPED or (item is not cell and is_chrome(item)):
            if item.tail and item is not cell:  # a caption's ¶ link (Sphinx's headerlink) is chrome
                parts.append(item.tail)
            continue
        if item.tail and item is not cell:
            stack.append(item.tail)
        children = [c for c in item]
        stack.extend(reversed(children))
        if item.text:
            stack.append(item.text)
        if item.tag == "br" or item.tag in ("p", "div", "li"):
            parts.append(" ")
    return readable(" ".join("".join(parts).split()))
