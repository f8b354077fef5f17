"""The one documentation site every generator renders: its block types, the site's name and the
theme's fixed strings. The pages themselves are in pages.py.

The site documents Tsumiki, a fictional task runner (original text written for these tests). A page
is a path (the source path without extension, folders included: `guide/setup`), a title and a list
of blocks; each renderer (markdown.py, rst.py, html.py) turns the same blocks into its generator's
source, so every output holds the same text and a label (`page`, `heading`) means the same place in
all of them.

Inline markup is one kind only: `code` in backticks, which every source format has.
"""

from __future__ import annotations

from dataclasses import dataclass

SITE_TITLE = "Tsumiki ドキュメント"
SITE_DESCRIPTION = "タスクランナー Tsumiki の使い方とリファレンス"

# The theme's own text, written by the layouts of jekyll, hugo and plain (and, where the theme takes
# it from the configuration, by mkdocs and sphinx). None of it occurs in a page's content, so a chunk
# that holds any of it has taken in the page's chrome.
HEADER_TAGLINE = "積み木のようにタスクを組み立てる"
NAV_LABEL = "ページ一覧"
PREV_LABEL = "← 前へ"
NEXT_LABEL = "次へ →"
FOOTER_TEXT = "© 2024 Tsumiki プロジェクト。このドキュメントは CC BY 4.0 で提供されています。"


@dataclass(frozen=True)
class Heading:
    level: int  # 2 or 3; the page title is the page's only h1
    text: str


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class BulletList:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    """Markdown has no caption: there the paragraph before the table introduces it."""

    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Code:
    language: str
    text: str


@dataclass(frozen=True)
class Admonition:
    kind: str  # tip | note | warning
    title: str | None  # None: the theme's default title for the kind
    text: str


@dataclass(frozen=True)
class DefinitionList:
    items: tuple[tuple[str, str], ...]  # (term, definition)


Block = Heading | Paragraph | BulletList | Table | Code | Admonition | DefinitionList


@dataclass(frozen=True)
class Page:
    path: str  # "guide/setup": folders and file name, no extension; "index" names a folder's page
    title: str
    blocks: tuple[Block, ...]

    @property
    def folder(self) -> str:
        return self.path.rpartition("/")[0]

    @property
    def name(self) -> str:
        return self.path.rpartition("/")[2]

    def headings(self) -> list[Heading]:
        return [b for b in self.blocks if isinstance(b, Heading)]

    def texts(self) -> list[str]:
        """Every piece of text a reader sees on the page (backticks removed), title first."""
        return [self.title, *(plain_text(t) for block in self.blocks for t in block_texts(block))]


def block_texts(block: Block) -> list[str]:
    if isinstance(block, (Heading, Paragraph)):
        return [block.text]
    if isinstance(block, BulletList):
        return list(block.items)
    if isinstance(block, Table):
        return [block.caption, *block.header, *(cell for row in block.rows for cell in row)]
    if isinstance(block, Code):
        return [block.text]
    if isinstance(block, Admonition):
        return [block.title or "", block.text]
    if isinstance(block, DefinitionList):
        return [text for item in block.items for text in item]
    raise TypeError(f"not a block: {block!r}")


def inline_parts(text: str) -> list[tuple[bool, str]]:
    """`text` cut at its backticks: (is_code, part) in order, empty parts left out."""
    parts = text.split("`")
    if len(parts) % 2 == 0:
        raise ValueError(f"unbalanced backticks in {text!r}")
    return [(i % 2 == 1, part) for i, part in enumerate(parts) if part]


def plain_text(text: str) -> str:
    """The text a reader sees: backticks removed."""
    return text.replace("`", "")
