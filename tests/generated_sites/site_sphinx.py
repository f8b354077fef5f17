"""The Sphinx source: `conf.py` (Japanese, the default alabaster theme) and reStructuredText pages,
each folder's index holding a hidden toctree of the pages under it.

One source, two builders: `html` writes `guide/setup.html`, `dirhtml` writes `guide/setup/index.html`.
Sphinx writes the section ids itself: for a Japanese title they are `id1`, `id2` … (no ASCII to slug).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from . import render_rst
from .content import FOOTER_TEXT, SITE_DESCRIPTION, SITE_TITLE
from .pages import PAGES, Page, children

BASE_PATH = "/"

# alabaster writes the footer as "©{copyright}.", so the © and the full stop are its own.
CONF = f"""\
project = "Tsumiki"
copyright = "{FOOTER_TEXT.removeprefix('© ').removesuffix('。')}"
author = "Tsumiki プロジェクト"
release = "1.4"
language = "ja"
html_title = "{SITE_TITLE}"
html_theme = "alabaster"
html_theme_options = {{"description": "{SITE_DESCRIPTION}"}}
"""


def file_of(page: Page, builder: str) -> str:
    if builder == "html":
        return f"{page.path}.html"
    if page.path == "index":
        return "index.html"
    return f"{page.folder}/index.html" if page.name == "index" else f"{page.path}/index.html"


def write_source(src: Path) -> None:
    src.mkdir(parents=True, exist_ok=True)
    (src / "conf.py").write_text(CONF, encoding="utf-8")
    for page in PAGES:
        here = page.folder
        toctree = [_relative(child.path, here) for child in children(page)]
        path = src / f"{page.path}.rst"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_rst.document(page, toctree), encoding="utf-8")


def _relative(path: str, folder: str) -> str:
    return path[len(folder) + 1:] if folder else path


def build(src: Path, builder: str) -> tuple[Path, subprocess.CompletedProcess]:
    """`sphinx-build -b html|dirhtml`; the output is `_build/<builder>/`."""
    from .build import run

    out = src / "_build" / builder
    return out, run([sys.executable, "-m", "sphinx", "-b", builder, "-q", str(src), str(out)], cwd=src)


def version() -> str:
    from importlib.metadata import version as installed

    return f"sphinx {installed('sphinx')}, alabaster {installed('alabaster')}"
