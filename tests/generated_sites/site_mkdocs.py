"""The MkDocs source: `mkdocs.yml` with the Material theme in Japanese, and `docs/` in Markdown.

Set as Material sites usually are: an explicit nav with sections, the footer pager
(`navigation.footer`), the edit button (`repo_url`, `edit_uri`, `content.action.edit`), permalinks on
headings (`toc: permalink: true`, the ¶ after each heading), the copyright in the footer, the
built-in search plugin. Directory URLs are MkDocs' default (`guide/setup/index.html`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from . import render_markdown
from .content import FOOTER_TEXT, SITE_DESCRIPTION, SITE_TITLE
from .pages import HOME, Page, children

BASE_PATH = "/tsumiki/"


def _nav(page: Page) -> list:
    """The nav under `page`: its own file first, then each child (a folder index opens a section)."""
    entries: list = []
    for child in children(page):
        if child.name == "index":
            entries.append({child.title: _nav(child)})
        else:
            entries.append(f"{child.path}.md")
    return [f"{page.path}.md", *entries]


def config() -> dict:
    return {
        "site_name": SITE_TITLE,
        "site_description": SITE_DESCRIPTION,
        "site_url": "https://example.org/tsumiki/",
        "repo_url": "https://example.com/tsumiki/tsumiki",
        "edit_uri": "edit/main/docs/",
        "copyright": FOOTER_TEXT,
        "theme": {"name": "material", "language": "ja",
                  "features": ["navigation.footer", "content.action.edit"]},
        "markdown_extensions": ["admonition", "tables", "def_list", {"toc": {"permalink": True}}, "attr_list"],
        "nav": _nav(HOME),
    }


def file_of(page: Page) -> str:
    if page.name == "index":
        return f"{page.path}.html"
    return f"{page.path}/index.html"


def write_source(src: Path) -> None:
    from .pages import PAGES

    src.mkdir(parents=True, exist_ok=True)
    (src / "mkdocs.yml").write_text(yaml.safe_dump(config(), allow_unicode=True, sort_keys=False), encoding="utf-8")
    for page in PAGES:
        path = src / "docs" / f"{page.path}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {page.title}\n\n" + render_markdown.body(page.blocks, "python-markdown"), encoding="utf-8")


def build(src: Path) -> tuple[Path, subprocess.CompletedProcess]:
    """`mkdocs build` in the source folder; the output is `site/`."""
    from .build import run

    return src / "site", run([sys.executable, "-m", "mkdocs", "build"], cwd=src)


def version() -> str:
    from importlib.metadata import version as installed

    return f"mkdocs {installed('mkdocs')}, mkdocs-material {installed('mkdocs-material')}"
