"""THE table of chunk kinds: id prefixes, box classes, types, levels and the words that name a kind.

Everything that needs to know what a rule, a method or an example is imports it from here: the
scan (which ids are knowledge ids), the id tools (prefix for a box, prefix from a title word), the
ranking (which kind a query asks for), chunks (heuristic learns), the report, the CLI's choices,
and tests that hold the JSON and SQL schemas to it. A new kind (a section, a table) is one entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    type: str  # the chunk's `type`
    prefix: str  # its id prefix: `rule-`, `def-` …
    box_class: str  # the box class that holds it by default ("" when none does)
    # Words by which a box title (for suggest-ids) or a query (for ranking) names this kind.
    words: tuple[str, ...]
    # Heuristic learns: templates filled with the box's topic.
    learns: tuple[str, ...]
    # Other id prefixes its box class may carry: a method- id in a rule-box is normal.
    also_in_box: tuple[str, ...] = ()
    anchored: bool = True  # found by an element id (False: derived from the page's structure)
    # Words that, as a box title's label (「練習1」「演習：…」), make the box this kind whatever its
    # class. Titles only: a query such as 「問題の解き方」 does not ask for this kind.
    label_words: tuple[str, ...] = ()


KINDS: tuple[Kind, ...] = (
    Kind("rule", "rule", "rule-box", ("公式", "定理", "法則", "性質"),
         ("「{topic}」の内容を理解する", "「{topic}」を使って問題を解く"),
         also_in_box=("method", "def", "ex")),  # sites put practice problems (練習1) in a rule-box
    Kind("method", "method", "method-box", ("解き方", "やり方", "方法", "手順", "求め方"),
         ("「{topic}」の手順を身につける", "「{topic}」を使って問題を解く")),
    Kind("definition", "def", "def-box", ("とは", "意味", "定義"),
         ("「{topic}」の意味を説明できる", "「{topic}」を具体例で確かめる")),
    Kind("tip", "tip", "tip-box", ("コツ", "ポイント", "注意", "間違"),
         ("「{topic}」を意識してミスを防ぐ", "つまずきやすい点を確認する")),
    Kind("example", "ex", "example-box", ("例題", "例を"),
         ("「{topic}」を例題で確認する", "解き方の流れを自分で再現する"), label_words=("練習", "演習", "問題")),
    # Parts of a page outside anchored boxes (sections.py): found by the page's headings, not by an
    # id, so their prefixes never mark an HTML id as a knowledge id. No words: 「表」 is also 「表す」.
    Kind("section", "sec", "", (), ("「{topic}」の要点を理解する", "「{topic}」を自分の言葉で説明する"), anchored=False),
    Kind("table", "tbl", "", (), ("「{topic}」の表を読み取る",), anchored=False),
)

# Order in which title words decide a suggested prefix: the most specific kind first
# (「例題：解き方の確認」 is an example, 「解き方のコツ」 a method before a tip).
TITLE_WORD_ORDER = ("example", "method", "definition", "tip", "rule")

# label word -> prefix (練習 -> ex).
LABEL_PREFIX = {word: k.prefix for k in KINDS for word in k.label_words}

LEVELS = ("基礎", "標準", "発展")

BY_TYPE = {k.type: k for k in KINDS}
TYPES = tuple(k.type for k in KINDS)
# Every chunk's anchor starts with one of these (the JSON schema's pattern).
CHUNK_PREFIXES = tuple(k.prefix for k in KINDS)
# Kinds found by an element id: only their prefixes make an HTML id a knowledge id.
ANCHORED_KINDS = tuple(k for k in KINDS if k.anchored)
ANCHORED_TYPES = tuple(k.type for k in ANCHORED_KINDS)
BY_PREFIX = {k.prefix: k for k in ANCHORED_KINDS}
PREFIXES = tuple(k.prefix for k in ANCHORED_KINDS)
# Kinds derived from the page's structure (sections.py): `sections` setting, no id in the HTML.
PART_TYPES = tuple(k.type for k in KINDS if not k.anchored)
PART_PREFIXES = tuple(k.prefix for k in KINDS if not k.anchored)


def is_part_anchor(anchor: str) -> bool:
    """Whether a chunk's anchor names a section or table (sec-…, tbl-…), not an element id."""
    return anchor.partition("-")[0] in PART_PREFIXES
BOX_CLASSES = tuple(k.box_class for k in KINDS if k.box_class)
# Boxes by CSS selector (the `boxes` setting): what MkDocs and Sphinx write for their admonitions
# (`!!! tip`, `.. note::`: div.admonition.<name>) and for a definition list (Sphinx: dl.simple).
ADMONITIONS = ("tip", "hint", "note", "warning", "important", "caution", "attention", "danger")
DEFAULT_BOXES = ((", ".join(f"div.admonition.{name}" for name in ADMONITIONS), "tip"),
                 ("dl:not([class]), dl.simple", "definition"))
# Which id prefixes each box class may carry.
ALLOWED_PREFIXES = {k.box_class: (k.prefix, *k.also_in_box) for k in KINDS if k.box_class}
CLASS_PREFIX = {k.box_class: k.prefix for k in KINDS if k.box_class}

_ALTERNATION = "|".join(PREFIXES)
KNOWLEDGE_ID = re.compile(rf"^({_ALTERNATION})-")
ID_PATTERN = re.compile(rf"^({_ALTERNATION})-[a-z0-9]+(-[a-z0-9]+)*$")

GENERIC_LEARNS = ("「{topic}」の要点を理解する", "「{topic}」を自分の言葉で説明する")


def type_of_id(anchor: str) -> str | None:
    """The chunk type an anchor id names by its prefix, or None for a non-knowledge id."""
    match = KNOWLEDGE_ID.match(anchor)
    return BY_PREFIX[match.group(1)].type if match else None


def learns_templates(type_: str) -> tuple[str, ...]:
    kind = BY_TYPE.get(type_)
    return kind.learns if kind else GENERIC_LEARNS
