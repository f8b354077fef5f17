"""Blocks → reStructuredText for Sphinx.

Sections by underline (page title `=` over and under, h2 `-`, h3 `~`); tables as `list-table` with
their caption as the directive's title; admonitions as `.. tip::` / `.. note::` / `.. warning::`
(Sphinx writes the default title, 「ヒント」「注釈」「警告」 in Japanese) and, when the block has its own
title, `.. admonition:: title` with `:class: tip`, as Sphinx authors do for a custom title.

Inline literals next to Japanese text need an escaped space (`\\ `): reST only recognises inline
markup that starts and ends at whitespace or punctuation, and kana or kanji are neither.
"""

from __future__ import annotations

import re

from .content import Admonition, Block, BulletList, Code, DefinitionList, Heading, Page, Paragraph, Table, inline_parts

_UNDERLINE = {2: "-", 3: "~"}
_PLAIN_EDGE = re.compile(r"[\s(（「]")


def inline(text: str) -> str:
    parts = inline_parts(text)
    out = []
    for i, (code, part) in enumerate(parts):
        if not code:
            out.append(_escape(part))
            continue
        before = "" if i == 0 or _PLAIN_EDGE.fullmatch(parts[i - 1][1][-1]) else "\\ "
        after = "" if i == len(parts) - 1 or _PLAIN_EDGE.fullmatch(parts[i + 1][1][0]) else "\\ "
        out.append(f"{before}``{part}``{after}")
    return "".join(out)


def _escape(text: str) -> str:
    return re.sub(r"([*`|_\\])", r"\\\1", text)


def document(page: Page, toctree: list[str] | None = None) -> str:
    """A page as a Sphinx source file; `toctree` names the documents this one lists (hidden: the
    theme's sidebar shows them, the page's own text does not repeat them)."""
    bar = "=" * _width(page.title)
    lines = [bar, page.title, bar, ""]
    if toctree:
        lines += [".. toctree::", "   :hidden:", "", *(f"   {doc}" for doc in toctree), ""]
    lines += [_block(b) + "\n" for b in page.blocks]
    return "\n".join(lines)


def _width(text: str) -> int:
    """Display width: docutils wants an underline at least as wide as the title (kana are 2)."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _indent(text: str, by: str = "   ") -> str:
    return "\n".join(by + line if line else line for line in text.splitlines())


def _block(block: Block) -> str:
    if isinstance(block, Heading):
        return f"{block.text}\n{_UNDERLINE[block.level] * _width(block.text)}"
    if isinstance(block, Paragraph):
        return inline(block.text)
    if isinstance(block, BulletList):
        return "\n".join(f"- {inline(item)}" for item in block.items)
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Code):
        return f".. code-block:: {block.language}\n\n{_indent(block.text)}"
    if isinstance(block, DefinitionList):
        return "\n\n".join(f"{inline(term)}\n{_indent(inline(text))}" for term, text in block.items)
    if isinstance(block, Admonition):
        if block.title:
            return f".. admonition:: {block.title}\n   :class: {block.kind}\n\n{_indent(inline(block.text))}"
        return f".. {block.kind}::\n\n{_indent(inline(block.text))}"
    raise TypeError(f"no reST for {block!r}")


def _table(table: Table) -> str:
    lines = [f".. list-table:: {table.caption}", "   :header-rows: 1", ""]
    for row in (table.header, *table.rows):
        lines += [f"   * - {inline(row[0])}", *(f"     - {inline(cell)}" for cell in row[1:])]
    return "\n".join(lines)
