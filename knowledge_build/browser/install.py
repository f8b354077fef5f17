"""Putting the search box on a site: the Jekyll include written into the site's `_includes/`, or, for any
other generator, the plain HTML snippet to paste into its template (with the site's baseurl filled in).

The box itself is static/knowledge-search-ui.js, which `build` copies into the bundle; both the include
and the snippet hold only an empty container and the module's script tag, so a page without
JavaScript shows no box at all.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import ConfigError, KnowledgeBuildError, refuse_broken_settings
from ..fsutil import atomic_write

INCLUDE_NAME = "knowledge_search.html"
INCLUDE_TAG = "{% include knowledge_search.html %}"
SET_PATH = "knowledge/v2"  # where `build` writes the set inside the site's output, as the include assumes


class IncludeExists(KnowledgeBuildError):
    def __init__(self, path: Path):
        super().__init__(f"'{path}' already exists and is not the search box include; nothing was written. "
                         "Fix: pass --force to replace it, or rename that file and run again.")


@dataclass
class SearchBoxInstall:
    generator: str  # the site's generator, as the build detects it (site/generators.py)
    bundle_url: str  # where the site serves the bundle: <baseurl>/knowledge/v2/
    snippet: str  # the plain HTML for any page: container and module script
    include: Path | None = None  # the Jekyll include, None when only the snippet was asked for
    status: str = "snippet"  # written | unchanged | replaced | snippet

    def to_dict(self) -> dict:
        return {"generator": self.generator, "bundle_url": self.bundle_url, "status": self.status,
                "include": str(self.include) if self.include else None,
                "include_tag": INCLUDE_TAG if self.include else None, "snippet": self.snippet}


def include_text() -> str:
    """The Jekyll include as shipped: it reads baseurl and the plugin's output_dir from the site's settings."""
    return resources.files(__package__).joinpath("include.html").read_text(encoding="utf-8")


def snippet(bundle_url: str) -> str:
    url = html.escape(bundle_url)
    return (f'<div class="knowledge-search" data-bundle="{url}"></div>\n'
            f'<script type="module" src="{url}knowledge-search-ui.js"></script>\n')


def install_search(config, snippet_only: bool = False, force: bool = False) -> SearchBoxInstall:
    """Write `_includes/knowledge_search.html` into a Jekyll site (IncludeExists when a different file is
    there, unless `force`); for another generator, or with `snippet_only`, only make the snippet."""
    from ..site.jekyll import open_site

    if config.site is None:
        raise ConfigError("no site given. Provide a --site flag, a KB_SITE environment variable, "
                          "or a 'site' key in knowledge.yml.")
    site = open_site(config.site, baseurl=config.baseurl, data=False)
    refuse_broken_settings(site.diagnostics)  # a wrong baseurl would point the box at nothing
    bundle_url = f"{site.baseurl}/{_set_path(site, config)}/"
    found = SearchBoxInstall(site.generator, bundle_url, snippet(bundle_url))
    if snippet_only or site.generator != "jekyll" or site.source_root is None:
        return found
    found.include = site.source_root / "_includes" / INCLUDE_NAME
    text = include_text()
    if found.include.is_file():
        if found.include.read_text(encoding="utf-8", errors="replace") == text:
            found.status = "unchanged"
            return found
        if not force:
            raise IncludeExists(found.include)
        found.status = "replaced"
    else:
        found.status = "written"
    found.include.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(found.include, text.encode("utf-8"))
    return found


def _set_path(site, config) -> str:
    """The artifact set's path inside the site's output: the configured `output` when it lies there."""
    if config.output is not None:
        try:
            return Path(config.output).resolve().relative_to(site.output_root.resolve()).as_posix()
        except ValueError:
            pass
    return SET_PATH
