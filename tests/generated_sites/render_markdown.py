"""Blocks → Markdown, in the three dialects the Markdown generators read.

- `kramdown` (Jekyll): admonitions as a theme would write them, a titled callout as a blockquote
  with a block IAL before it (`{: .note-title }`, as just-the-docs documents) and an untitled one as
  a paragraph with `{: .note }`; warnings as `<div class="warning" markdown="1">`.
- `goldmark` (Hugo): admonitions through the site's own shortcode `admonition`.
- `python-markdown` (MkDocs): `!!! tip "title"` (the admonition extension).

Tables are pipe tables in all three (none has a caption: the paragraph before each table introduces
it); definition lists are `term` / `:   definition`, which all three read.
"""

from __future__ import annotations

import html

from .content import Admonition, Block, BulletList, Code, DefinitionList, Heading, Paragraph, Table, inline_parts

DIALECTS = ("kramdown", "goldmark", "python-markdown")


def inline(text: str) -> str:
    return "".join(f"`{part}`" if code else html.escape(part, quote=False) for code, part in inline_parts(text))


def body(blocks: tuple[Block, ...], dialect: str) -> str:
    if dialect not in DIALECTS:
        raise ValueError(f"unknown Markdown dialect {dialect!r}; one of {DIALECTS}")
    return "\n\n".join(_block(block, dialect) for block in blocks) + "\n"


def _block(block: Block, dialect: str) -> str:
    if isinstance(block, Heading):
        return "#" * block.level + " " + block.text
    if isinstance(block, Paragraph):
        return inline(block.text)
    if isinstance(block, BulletList):
        return "\n".join(f"- {inline(item)}" for item in block.items)
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Code):
        return f"```{block.language}\n{block.text}\n```"
    if isinstance(block, DefinitionList):
        return "\n\n".join(f"{inline(term)}\n:   {inline(text)}" for term, text in block.items)
    if isinstance(block, Admonition):
        return {"kramdown": _kramdown_admonition, "goldmark": _hugo_admonition,
                "python-markdown": _mkdocs_admonition}[dialect](block)
    raise TypeError(f"no Markdown for {block!r}")


def _table(table: Table) -> str:
    def row(cells):
        return "| " + " | ".join(inline(c) for c in cells) + " |"

    return "\n".join([row(table.header), "|" + "---|" * len(table.header), *(row(r) for r in table.rows)])


def _kramdown_admonition(box: Admonition) -> str:
    if box.kind == "warning":
        title = f"**{box.title}**\n\n" if box.title else ""
        return f'<div class="warning" markdown="1">\n{title}{inline(box.text)}\n</div>'
    if box.title:
        return f"{{: .{box.kind}-title }}\n> {box.title}\n>\n> {inline(box.text)}"
    return f"{{: .{box.kind} }}\n{inline(box.text)}"


def _hugo_admonition(box: Admonition) -> str:
    title = f' title="{box.title}"' if box.title else ""
    return f'{{{{< admonition kind="{box.kind}"{title} >}}}}\n{inline(box.text)}\n{{{{< /admonition >}}}}'


def _mkdocs_admonition(box: Admonition) -> str:
    title = f' "{box.title}"' if box.title else ""
    return f"!!! {box.kind}{title}\n\n    {inline(box.text)}"
