"""Finding the pages of a site (a Jekyll source directory, or the built output of any generator:
generators.py decides which), and site facts.

Owns: `_config.yml` (baseurl, url, permalink, exclude, destination, title, description, lang),
`_data/learns.yml`, `_data/categories.yml` (category id -> the name the site shows), the walk that
finds the pages (and names the generated ones it leaves out: search pages, indexes, 404), and each
page's permalink and material name (identity.py).
"""

from __future__ import annotations

import fnmatch
import html
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..diagnostics import Diagnostic
from ..errors import SiteNotFound
from ..readfile import file_kind
from .generators import detect, site_facts
from .identity import material_names, site_path
from ..yamlfile import YamlDocument, YamlError
from ..yamlfile import load_file as load_yaml_file

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
    categories: dict = field(default_factory=dict)  # category id -> display name (_data/categories.yml)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    generator: str = "jekyll"  # jekyll | hugo | mkdocs | sphinx | plain (generators.py)
    note: str = ""  # how the folder was read, when not as given (the built output of a source folder)
    name: str = ""  # the site's name (title, site_name, project), "" when its configuration has none
    description: str = ""
    lang: str = ""  # the site's language from its configuration ("" unknown: the pages' <html lang>)
    materials: dict = field(default_factory=dict)  # rel -> material name (identity.py), set by find_pages
    skipped: list = field(default_factory=list)  # (rel, reason): pages found and not read (find_pages)
    title_suffix: str = ""  # `| Site name` ending the built pages' <title>s, taken off page titles (titled)

    @property
    def default_index_dir(self) -> Path:
        """Where a build writes the artifact set (schema 2) and readers look for it."""
        return self.output_root / "knowledge" / "v2"


def open_site(path: Path, baseurl: str | None = None, exclude=(), data: bool = True) -> Site:
    """The site at `path`; `data=False` reads only `_config.yml` (not learns.yml and categories.yml):
    enough to find its pages and output, as a no-change rebuild needs."""
    root = Path(path)
    if not root.is_dir():
        raise SiteNotFound(root)
    detected = detect(root.resolve())  # SiteNeedsBuild: Markdown sources with no output
    jekyll = detected.config_root if detected.generator == "jekyll" else None
    site = Site(root=detected.pages_root, kind=detected.kind, source_root=jekyll, output_root=detected.pages_root,
                generator=detected.generator, note=detected.note)
    facts = site_facts(detected)
    site.name, site.description, site.lang = facts.name, facts.description, facts.lang
    site.baseurl, site.url = facts.baseurl or "", facts.url
    source = jekyll
    if source is not None:
        _read_jekyll_config(site, source / "_config.yml")
        if data:
            site.learns = _read_learns(site, source / "_data" / "learns.yml")
            site.categories = _read_categories(site, source / "_data" / "categories.yml")
    if baseurl is not None:
        site.baseurl = baseurl
    site.baseurl = site_path(site.baseurl.strip("/")) if site.baseurl.strip("/") else ""
    site.exclude = site.exclude + tuple(exclude)
    return site


def _load_yaml(site: Site, path: Path, rule: str) -> YamlDocument | None:
    """Parse a YAML file of the site; any problem becomes a diagnostic on its line."""
    try:
        return load_yaml_file(path)
    except YamlError as exc:
        site.diagnostics.append(exc.diagnostic(rule))
        return None


def _shape_error(site: Site, doc: YamlDocument, keys: tuple, rule: str, message: str, fix: str) -> None:
    site.diagnostics.append(Diagnostic(doc.path, doc.line(*keys), 1, "error", rule, message, fix))


def _read_jekyll_config(site: Site, path: Path) -> None:
    if site.kind == "source":  # before anything can return: an empty _config.yml is valid Jekyll
        site.output_root = (site.root / "_site").resolve()
    doc = _load_yaml(site, path, "config-yaml")
    config = doc.data if doc is not None else None
    if config is None:
        return
    if not isinstance(config, dict):
        _shape_error(site, doc, (), "config-yaml", "_config.yml must be a mapping of settings",
                     "write it as 'key: value' lines, e.g. 'baseurl: /my-site'")
        return
    site.baseurl = _config_text(site, doc, "baseurl")
    site.url = _config_text(site, doc, "url")
    site.permalink_style = _config_text(site, doc, "permalink")
    site.name = _config_text(site, doc, "title")
    site.description = _config_text(site, doc, "description")
    site.lang = _config_text(site, doc, "lang")
    exclude = config.get("exclude") or []
    exclude = [exclude] if isinstance(exclude, str) else exclude
    if not isinstance(exclude, list) or any(isinstance(x, (dict, list)) or x is None for x in exclude):
        _shape_error(site, doc, ("exclude",), "config-yaml", "exclude must be a list of paths or patterns",
                     "write it as 'exclude: [drafts/, \"*.tmp.html\"]'")
        exclude = ()
    site.exclude = tuple(str(x) for x in exclude)
    if site.kind == "source":
        destination = _config_text(site, doc, "destination") or "_site"
        site.output_root = (site.root / destination).resolve()


def _config_text(site: Site, doc: YamlDocument, key: str) -> str:
    value = doc.data.get(key)
    if isinstance(value, (dict, list)):
        _shape_error(site, doc, (key,), "config-yaml", f"{key} must be a single value, not a "
                     f"{'list' if isinstance(value, list) else 'mapping'}", f"write it as '{key}: value'")
        return ""
    return "" if value is None or value is False else str(value)


_LEARNS_FIX = "write it as `material:\\n  anchor:\\n    - item`"


def _data_file(site: Site, path: Path, rule: str):
    """A `_data/*.yml` file that exists and holds something; None otherwise (a syntax error is
    already a diagnostic on its line)."""
    if not path.is_file():
        return None
    doc = _load_yaml(site, path, rule)
    return None if doc is None or doc.data is None else doc


def _read_learns(site: Site, path: Path) -> dict:
    """material -> anchor -> items; entries of another shape are errors on their line and left out."""
    doc = _data_file(site, path, "learns-yaml")
    if doc is None:
        return {}
    if not isinstance(doc.data, dict):
        _shape_error(site, doc, (), "learns-yaml", "_data/learns.yml must map material -> anchor -> list of items",
                     "restructure the file as `material:\\n  anchor:\\n    - item`")
        return {}
    learns: dict = {}
    for material, anchors in doc.data.items():
        if anchors is None:
            continue
        if not isinstance(anchors, dict):
            _shape_error(site, doc, (material,), "learns-yaml",
                         f"learns of '{material}' must map anchors to lists of items", _LEARNS_FIX)
            continue
        for anchor, items in anchors.items():
            if not isinstance(items, list) or any(isinstance(i, (dict, list)) or i is None for i in items):
                _shape_error(site, doc, (material, anchor), "learns-yaml",
                             f"learns of '{material}#{anchor}' must be a list of texts", _LEARNS_FIX)
                continue
            learns.setdefault(str(material), {})[str(anchor)] = items
    return learns


_CATEGORIES_FIX = "write each category as `- id: geometry` with a `name:` line holding the name the site shows"


def _read_categories(site: Site, path: Path) -> dict[str, str]:
    """id -> name from a list of {id, name} (Jekyll's usual shape); other entries are errors on
    their line and left out (filters then accept the id only)."""
    doc = _data_file(site, path, "categories-yaml")
    if doc is None:
        return {}
    if not isinstance(doc.data, list):
        _shape_error(site, doc, (), "categories-yaml", "_data/categories.yml must be a list of categories",
                     _CATEGORIES_FIX)
        return {}
    categories: dict[str, str] = {}
    for number, entry in enumerate(doc.data):
        bad = [k for k in ("id", "name") if not isinstance(entry, dict) or not _single_text(entry.get(k))]
        if bad:
            where = (number, bad[0]) if isinstance(entry, dict) else (number,)
            _shape_error(site, doc, where, "categories-yaml",
                         f"category {number + 1} needs an 'id' and a 'name', each a single text", _CATEGORIES_FIX)
            continue
        categories[str(entry["id"]).strip()] = str(entry["name"]).strip()
    return categories


def _single_text(value) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool) and bool(str(value).strip())


def find_pages(site: Site) -> list[Path]:
    """HTML pages Jekyll would render (source) or has written (built), sorted.

    Only regular files (or symlinks to them) are pages; anything else named *.html is skipped
    with a diagnostic, and never opened (a FIFO would block forever).
    """
    def unreadable_directory(exc: OSError) -> None:  # rglob would skip it without a word
        site.diagnostics.append(Diagnostic(str(exc.filename), 1, 1, "error", "directory-unreadable",
                                           f"the directory cannot be read ({exc.strerror}); pages in it are not indexed",
                                           f"make it readable (chmod a+rx '{exc.filename}')"))

    candidates = []
    for folder, dirs, files in os.walk(site.root, onerror=unreadable_directory):
        base = Path(folder)
        dirs[:] = [d for d in dirs if d.endswith(".html") or not _skipped(site, (base / d).relative_to(site.root))]
        candidates += [base / name for name in dirs + files if name.endswith(".html")]
    pages, site.skipped = [], []
    for path in sorted(candidates):
        rel = path.relative_to(site.root)
        if _skipped(site, rel):
            continue
        reason = _generated_page(site, rel)
        if reason:
            site.skipped.append((rel.as_posix(), reason))
        elif _is_page_file(site, path):
            pages.append(path)
        else:
            site.skipped.append((rel.as_posix(), "not a regular file"))
    site.materials, collisions = material_names([p.relative_to(site.root).as_posix() for p in pages], str(site.root))
    site.diagnostics += collisions
    return pages


# Pages a generator writes that are not content: its search page, indexes of names, the error page.
_GENERATED_PAGES = {"404.html": "error page (404)", "404/index.html": "error page (404)", "search.html": "search page",
                    "search/index.html": "search page", "genindex.html": "generated index",
                    "genindex/index.html": "generated index", "py-modindex.html": "generated index",
                    "py-modindex/index.html": "generated index"}  # Sphinx's dirhtml: name/index.html
_GENERATED_FOLDERS = {"sphinx": {"_modules": "highlighted source code", "_sources": "page sources"},
                      "hugo": {"tags": "taxonomy list", "categories": "taxonomy list"}}


def _generated_page(site: Site, rel: Path) -> str:
    """Why a built page is not read ("" when it is): generated by the generator, not written by the owner."""
    if site.kind == "source":
        return ""
    reason = _GENERATED_PAGES.get(rel.as_posix())
    if reason is None and len(rel.parts) > 1:
        reason = _GENERATED_FOLDERS.get(site.generator, {}).get(rel.parts[0])
    return f"generated by {site.generator}: {reason}" if reason else ""


def _is_page_file(site: Site, path: Path) -> bool:
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        target = os.readlink(path) if path.is_symlink() else ""
        what = f"a symlink to '{target}', which does not exist" if target else f"unreadable ({exc.strerror})"
        site.diagnostics.append(Diagnostic(str(path), 1, 1, "warning", "page-skipped",
                                           f"{path.name} is {what}; it is skipped",
                                           "point the link at an existing page or remove it"))
        return False
    if stat.S_ISREG(mode):
        return True
    if stat.S_ISDIR(mode):  # its pages are found by the walk itself
        site.diagnostics.append(Diagnostic(str(path), 1, 1, "info", "page-skipped",
                                           f"{path.name} is a directory, not a page", ""))
        return False
    site.diagnostics.append(Diagnostic(str(path), 1, 1, "warning", "page-skipped",
                                       f"{path.name} is a {file_kind(mode)}, not a page; it is skipped",
                                       "replace it with a regular file or remove it"))
    return False


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
        return site_path(str(explicit))
    posix = rel.as_posix()
    if site.kind == "source" and site.permalink_style == "pretty":
        stem = posix[: -len(".html")]
        if stem == "index" or stem.endswith("/index"):
            return "/" + stem[: -len("index")]
        return f"/{stem}/"
    if site.kind == "built" and (posix == "index.html" or posix.endswith("/index.html")):
        return "/" + posix[: -len("index.html")]  # what the server serves for the folder
    return "/" + posix


def source_page_for(site: Site, rel: Path) -> Path | None:
    """For a built page, the Jekyll source file it was rendered from (default permalinks)."""
    if site.kind != "built" or site.source_root is None:
        return None
    candidate = site.source_root / rel
    return candidate if candidate.is_file() else None


_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
TITLE_SAMPLE = 200  # pages whose <title> decides the site-name suffix


def title_suffix(site: Site, pages: list[Path]) -> str:
    """The site name built pages' titles end with (`Page | Site`, Sphinx's `Page — Project 1.0
    documentation`): shared by most of a sample of titles (main_content.site_name_suffix), else the
    configured name. Source pages take their titles from front matter: none."""
    from ..html.main_content import site_name_suffix

    if site.kind != "built":
        return ""
    titles = []
    for path in pages[:: max(1, len(pages) // TITLE_SAMPLE)][:TITLE_SAMPLE]:
        try:
            with open(path, "rb") as file:
                match = _TITLE.search(file.read(65536))
        except OSError:
            continue
        if match:
            titles.append(html.unescape(re.sub(r"<[^>]+>", "", match.group(1).decode("utf-8", "replace"))))
    return site_name_suffix(titles) or site.name
