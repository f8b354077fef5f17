"""Front matter: the YAML block at the top of a Jekyll source page, split off the HTML, parsed with
line numbers, and checked for the shapes the tool reads (a key of the wrong shape is a warning and
is left out). A built page takes the front matter of its source page when there is one."""

from __future__ import annotations

import re
from pathlib import Path

from ..yamlfile import YamlError
from ..yamlfile import load as load_yaml
from .page import Page, page_diagnostic, read_page_text


def split_front_matter(page: Page, text: str) -> tuple[str, int]:
    """Return the HTML body and how many lines precede it in the file."""
    if not re.match(r"---[ \t]*\r?\n", text):
        return text, 0
    lines = text.splitlines(keepends=True)
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            page.has_front_matter = True
            page.front_matter = _parse_yaml(page, "".join(lines[1:index]), first_line=2)
            return "".join(lines[index + 1:]), index + 1
    page.diagnostics.append(page_diagnostic(page, 1, 1, "error", "front-matter-unclosed",
                                  "front matter starts with '---' but is never closed",
                                  "add a line '---' after the front matter"))
    return "", 0


def _parse_yaml(page: Page, block: str, first_line: int) -> dict:
    try:
        doc = load_yaml(block, page.path, first_line)
    except YamlError as exc:
        page.diagnostics.append(exc.diagnostic("front-matter-yaml"))
        return {}
    if doc.data is None:
        return {}
    if not isinstance(doc.data, dict):
        page.diagnostics.append(page_diagnostic(page, first_line, 1, "error", "front-matter-yaml",
                                      "front matter must be a mapping of keys to values",
                                      "write it as 'key: value' lines"))
        return {}
    return _checked_front_matter(page, doc)


# Front matter keys the tool reads, and the shape each must have.
_SCALAR_KEYS = ("title", "permalink", "level", "category")
_LIST_OF_MAPPINGS_KEYS = {"related": "- title: …\\n    url: /page.html\\n    type: prerequisite",
                          "toc": "- id: section-id\\n    title: …"}


def _checked_front_matter(page: Page, doc) -> dict:
    """The front matter with keys of the wrong shape left out, each a warning on its line."""
    data = dict(doc.data)

    def drop(keys, message, fix):
        page.diagnostics.append(page_diagnostic(page, doc.line(*keys), 1, "warning", "front-matter-shape", message, fix))

    for key in _SCALAR_KEYS:
        if isinstance(data.get(key), (dict, list)):
            drop((key,), f"front matter '{key}' must be a single value, not a "
                 f"{'list' if isinstance(data[key], list) else 'mapping'}; it is ignored", f"write '{key}: value'")
            del data[key]
    for key, example in _LIST_OF_MAPPINGS_KEYS.items():
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            drop((key,), f"front matter '{key}' must be a list of entries, not {type(value).__name__} "
                 f"{str(value)[:40]!r}; it is ignored", f"write it as '{key}:\\n  {example}'")
            del data[key]
            continue
        bad = [i for i, item in enumerate(value) if not isinstance(item, dict)]
        for i in bad:
            drop((key, i), f"front matter '{key}' entry {i + 1} is not a mapping; it is ignored",
                 f"write each entry as '{example}'")
        data[key] = [item for item in value if isinstance(item, dict)]
    return data


def front_matter_from_source(page: Page, source: Path) -> None:
    shadow = Page(path=source, rel="", material=page.material, url_path="")
    text = read_page_text(shadow)
    if text is not None:
        split_front_matter(shadow, text)
    page.front_matter, page.has_front_matter = shadow.front_matter, shadow.has_front_matter
    page.diagnostics.extend(shadow.diagnostics)
