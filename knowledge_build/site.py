"""Finding material pages in a Jekyll source directory or a built `_site`, and site facts.

Owns: which kind of directory we were given, `_config.yml` (baseurl, url, permalink,
exclude, destination), `_data/learns.yml`, and each page's permalink.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .diagnostics import Diagnostic
from .errors import SiteNotFound

# Jekyll never renders these, whatever _config.yml says.
_ALWAYS_SKIPPED_DIRS = {"node_modules", "vendor", ".git", ".bundle", ".knowledge-cache"}


@dataclass
class Site:
    root: Path  # the directory we were given
    kind: str  # "source" | "built"
    source_root: Path | None  # Jekyll source (front matter, _data), if known
    output_root: Path  # where the built site is (or will be)
    baseurl: str = ""
    url: str = ""
    permalink_style: str = ""
    exclude: tuple[str, ...] = ()
    learns: dict = field(default_factory=dict)  # material -> anchor -> [items]
    generated_learns: dict = field(default_factory=dict)  # material -> anchor -> {source_hash, learns}
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def default_index_dir(self) -> Path:
        return self.output_root / "knowledge" / "v1"


def open_site(path: Path, baseurl: str | None = None, exclude=()) -> Site:
    root = Path(path)
    if not root.is_dir():
        raise SiteNotFound(root)
    root = root.resolve()
    if (root / "_config.yml").is_file():
        source, kind = root, "source"
    elif (root.parent / "_config.yml").is_file():
        source, kind = root.parent, "built"
    else:
        source, kind = None, "built"
    site = Site(root=root, kind=kind, source_root=source, output_root=root)
    if source is not None:
        _read_jekyll_config(site, source / "_config.yml")
        site.learns = _read_learns(site, source / "_data" / "learns.yml")
    if baseurl is not None:
        site.baseurl = baseurl
    site.baseurl = "/" + site.baseurl.strip("/") if site.baseurl.strip("/") else ""
    site.exclude = site.exclude + tuple(exclude)
    return site


def _load_yaml(site: Site, path: Path, rule: str):
    """Parse a YAML file of the site; a syntax error becomes a diagnostic on its line."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", -1) + 1
        site.diagnostics.append(Diagnostic(str(path), max(line, 1), 1, "error", rule,
                                           f"{path.name} cannot be read ({exc})", "fix the YAML syntax"))
        return None


def _read_jekyll_config(site: Site, path: Path) -> None:
    config = _load_yaml(site, path, "config-yaml")
    if config is None:
        return
    site.baseurl = str(config.get("baseurl") or "")
    site.url = str(config.get("url") or "")
    site.permalink_style = str(config.get("permalink") or "")
    site.exclude = tuple(str(x) for x in config.get("exclude") or ())
    if site.kind == "source":
        destination = config.get("destination") or "_site"
        site.output_root = (site.root / destination).resolve()


def _read_learns(site: Site, path: Path) -> dict:
    if not path.is_file():
        return {}
    data = _load_yaml(site, path, "learns-yaml")
    if data is not None and not isinstance(data, dict):
        site.diagnostics.append(
            Diagnostic(str(path), 1, 1, "error", "learns-yaml",
                       "_data/learns.yml must map material -> anchor -> list of items",
                       "restructure the file as `material:\\n  anchor:\\n    - item`")
        )
        return {}
    return data or {}


def find_pages(site: Site) -> list[Path]:
    """HTML pages Jekyll would render (source) or has written (built), sorted."""
    pages = []
    for path in sorted(site.root.rglob("*.html")):
        rel = path.relative_to(site.root)
        if _skipped(site, rel):
            continue
        pages.append(path)
    return pages


def _skipped(site: Site, rel: Path) -> bool:
    parts = rel.parts
    if any(p in _ALWAYS_SKIPPED_DIRS for p in parts):
        return True
    if site.kind == "source":
        # Jekyll ignores _underscored and .dotted entries (layouts, includes, _site).
        if any(p.startswith(("_", ".")) for p in parts):
            return True
        if site.output_root.is_relative_to(site.root) and (site.root / rel).is_relative_to(site.output_root):
            return True
    elif parts[0] == "knowledge":
        return True
    text = rel.as_posix()
    return any(
        fnmatch.fnmatch(text, pat) or fnmatch.fnmatch(text, pat.rstrip("/") + "/*") or parts[0] == pat.rstrip("/")
        for pat in site.exclude
    )


def permalink(site: Site, rel: Path, front_matter: dict) -> str:
    """The page's URL path under the site root, as Jekyll writes it (without baseurl)."""
    explicit = front_matter.get("permalink")
    if explicit:
        link = str(explicit)
        if not link.startswith("/"):
            link = "/" + link
        return link
    posix = rel.as_posix()
    if site.kind == "source" and site.permalink_style == "pretty":
        stem = posix[: -len(".html")]
        if stem == "index" or stem.endswith("/index"):
            return "/" + stem[: -len("index")]
        return f"/{stem}/"
    return "/" + posix


def source_page_for(site: Site, rel: Path) -> Path | None:
    """For a built page, the Jekyll source file it was rendered from (default permalinks)."""
    if site.kind != "built" or site.source_root is None:
        return None
    candidate = site.source_root / rel
    return candidate if candidate.is_file() else None
