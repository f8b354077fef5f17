"""Which generator made the folder we were given, and where its pages are.

A folder is one of: a Jekyll source (`_config.yml`), a Hugo source (`hugo.toml`, `config.toml` … beside
`content/`), an MkDocs project (`mkdocs.yml`), a Sphinx project (`conf.py`), or built HTML (Jekyll's
`_site`, Hugo's `public/`, MkDocs' `site/`, Sphinx's `_build/html` or `_build/dirhtml`, or a plain
folder of pages). A source folder whose pages are Markdown (or reStructuredText) is read through its built output
beside it, found where the generator's configuration or layout puts it (outputs.py; `Detected.note`
says so); with no output, `SiteNeedsBuild` names the command that builds it and the page format seen. A Jekyll
source of HTML pages with front matter (the reference layout) is read as it is.

Each generator's configuration gives what it knows of the site: name, description, language and the
URL path the site is served under (`baseurl`). Unknown keys and unreadable files give nothing: the
pages' own `<title>`/`<html lang>` then decide (scan.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from ..errors import KnowledgeBuildError
from .outputs import choice_note, describe_sources, find_outputs, generator_of_home

# Config file names that mark a source folder, per generator (first found wins).
HUGO_CONFIGS = ("hugo.toml", "hugo.yaml", "hugo.yml", "hugo.json", "config.toml", "config.yaml", "config.yml",
                "config.json")
MKDOCS_CONFIGS = ("mkdocs.yml", "mkdocs.yaml")
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mkd", ".mkdn")
BUILD_COMMANDS = {
    "jekyll": "jekyll build (or bundle exec jekyll build)",
    "hugo": "hugo",
    "mkdocs": "mkdocs build",
    "sphinx": "sphinx-build -b html . _build/html (or make html)",
}
# Where Sphinx's Makefile and sphinx-quickstart put the output (read even without Sphinx's marks).
SPHINX_OUTPUTS = ("_build/html", "_build/dirhtml", "../build/html", "../build/dirhtml", "build/html", "build/dirhtml")
_SKIPPED_WALK = {"node_modules", "vendor", ".git", ".bundle", ".knowledge-cache"}


class SiteNeedsBuild(KnowledgeBuildError):
    def __init__(self, generator: str, root: Path, pages: list[str], example: str):
        counted, first = describe_sources(pages)
        super().__init__(
            f"'{root}' is a {generator} source folder with {counted} (e.g. {first or example}), which "
            f"{generator} turns into HTML, and no built output was found beside it. Fix: run "
            f"`{BUILD_COMMANDS[generator]}` in '{root}', then build again (or pass --site <the output folder>).")


@dataclass
class SiteFacts:
    """What the generator's configuration says of the site (empty when it says nothing)."""

    name: str = ""
    description: str = ""
    lang: str = ""
    baseurl: str | None = None  # None: the configuration does not say
    url: str = ""  # scheme and host the site is served at (Hugo's baseURL, MkDocs' site_url), "" unknown


@dataclass
class Detected:
    generator: str  # jekyll | hugo | mkdocs | sphinx | plain
    pages_root: Path  # the folder whose pages are read
    kind: str  # "source" (Jekyll source pages with front matter) | "built"
    config_root: Path | None  # the source folder with the generator's configuration, when known
    note: str = ""  # what the build summary says about the choice (output used instead of sources …)
    facts: SiteFacts = field(default_factory=SiteFacts)


def detect(root: Path) -> Detected:
    """The generator and the folder to read for `root` (see the module docstring). SiteNeedsBuild
    when a source folder of Markdown pages has no output."""
    if (root / "_config.yml").is_file():
        return _jekyll_source(root)
    for name, reader in (("hugo", _hugo_source), ("mkdocs", _mkdocs_source), ("sphinx", _sphinx_source)):
        found = reader(root)
        if found is not None:
            return found
    return _built(root)


def _jekyll_source(root: Path) -> Detected:
    """Jekyll renders Markdown pages that have front matter; HTML pages with front matter are read from
    the source as they are (their front matter is the page's metadata)."""
    markdown = _markdown_pages(root, front_matter_only=True, skip_underscored=True)
    if not markdown:
        return Detected("jekyll", root, "source", root)
    outputs = find_outputs("jekyll", root, (_jekyll_destination(root),))
    if outputs:
        note = (f"{len(markdown)} Markdown page(s) in the Jekyll source: reading the built site "
                f"'{outputs[0]}' (run `jekyll build` after changing the sources)")
        return Detected("jekyll", outputs[0], "built", root, choice_note(note, outputs))
    raise SiteNeedsBuild("jekyll", root, markdown, markdown[0])


def _jekyll_destination(root: Path) -> Path:
    try:
        config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        config = None
    destination = config.get("destination") if isinstance(config, dict) else None
    return (root / str(destination or "_site")).resolve()


def _hugo_config(root: Path) -> Path | None:
    """Hugo's configuration file: at the project's top, else in its configuration folder
    (`config/_default/`)."""
    for folder in (root, root / "config" / "_default"):
        found = next((folder / n for n in HUGO_CONFIGS if (folder / n).is_file()), None)
        if found is not None:
            return found
    return None


def _hugo_source(root: Path) -> Detected | None:
    config = _hugo_config(root)
    if config is None or not (root / "content").is_dir():
        return None
    output = (root / str(_key(_read_config(config), "publishDir") or "public")).resolve()
    return _source_output("hugo", root, output, root / "content")


def _mkdocs_source(root: Path) -> Detected | None:
    config = next((root / n for n in MKDOCS_CONFIGS if (root / n).is_file()), None)
    if config is None:
        return None
    data = _read_config(config)
    output = (root / str(data.get("site_dir") or "site")).resolve()
    return _source_output("mkdocs", root, output, root / str(data.get("docs_dir") or "docs"))


def _sphinx_source(root: Path) -> Detected | None:
    """Sphinx has no configured output folder: it is wherever `sphinx-build` was told to write, found by
    its marks beside conf.py (`html/`, `_build/html`, `build/html` …) or in `../build` and `../_build`
    (sphinx-quickstart's separate source and build folders)."""
    if not (root / "conf.py").is_file():
        return None
    extra = tuple(root.parent / name for name in ("build", "_build") if (root.parent / name).is_dir())
    conventional = tuple(root / folder for folder in SPHINX_OUTPUTS)
    outputs = find_outputs("sphinx", root, conventional, extra)
    if outputs:
        return Detected("sphinx", outputs[0], "built", root,
                        choice_note(f"Sphinx project: reading its built output '{outputs[0]}'", outputs))
    sources = _markdown_pages(root, suffixes=(".rst", ".txt", *MARKDOWN_SUFFIXES), skip_underscored=True)
    raise SiteNeedsBuild("sphinx", root, sources, "index.rst")


def _source_output(generator: str, root: Path, output: Path, content: Path) -> Detected:
    outputs = find_outputs(generator, root, (output,))
    if outputs:
        lead = (f"{generator} project: reading its built output '{outputs[0]}' "
                f"(run `{BUILD_COMMANDS[generator]}` after changing the sources)")
        return Detected(generator, outputs[0], "built", root, choice_note(lead, outputs))
    pages = _markdown_pages(content) if content.is_dir() else []
    raise SiteNeedsBuild(generator, root, pages, str(content))


def _key(data: dict, name: str):
    """`data[name]`, its keys compared without case (Hugo's configuration keys are case-insensitive)."""
    return next((value for key, value in data.items() if isinstance(key, str) and key.lower() == name.lower()), None)


def _built(root: Path) -> Detected:
    """Built HTML: the generator from the configuration beside it, else from the pages' generator meta."""
    parent = root.parent
    if (parent / "_config.yml").is_file():
        return Detected("jekyll", root, "built", parent)
    if any((parent / n).is_file() for n in MKDOCS_CONFIGS):
        return Detected("mkdocs", root, "built", parent)
    if _hugo_config(parent) is not None and (parent / "content").is_dir():
        return Detected("hugo", root, "built", parent)
    for sphinx in (parent, parent.parent, parent.parent / "source"):
        if (sphinx / "conf.py").is_file():
            return Detected("sphinx", root, "built", sphinx)
    if (root / "objects.inv").is_file() or (root / "_static" / "documentation_options.js").is_file():
        return Detected("sphinx", root, "built", None)
    return Detected(generator_of_home(root), root, "built", None)


def site_facts(detected: Detected) -> SiteFacts:
    """Name, description, language and baseurl from the generator's configuration (Jekyll's is read by
    jekyll.py with line numbers, since its errors are the owner's to fix)."""
    root = detected.config_root
    if root is None or detected.generator == "jekyll":
        return SiteFacts()
    if detected.generator == "hugo":
        config = _hugo_config(root)
        data = _read_config(config) if config else {}
        params = data.get("params") if isinstance(data.get("params"), dict) else {}
        base = data.get("baseURL") or data.get("baseurl")
        return SiteFacts(_text(data.get("title")), _text(params.get("description")),
                         _text(data.get("languageCode") or data.get("defaultContentLanguage")),
                         _url_path(base), _origin(base))
    if detected.generator == "mkdocs":
        config = next((root / n for n in MKDOCS_CONFIGS if (root / n).is_file()), None)
        data = _read_config(config) if config else {}
        theme = data.get("theme") if isinstance(data.get("theme"), dict) else {}
        return SiteFacts(_text(data.get("site_name")), _text(data.get("site_description")),
                         _text(theme.get("language")), _url_path(data.get("site_url")), _origin(data.get("site_url")))
    if detected.generator == "sphinx":
        source = _read_text(root / "conf.py")
        return SiteFacts(_python_string(source, "project"), "", _python_string(source, "language"))
    return SiteFacts()


def _python_string(source: str, name: str) -> str:
    """A string assigned at the top level of conf.py (`project = "…"`), without running it."""
    match = re.search(rf"""^{name}\s*=\s*(?:u|r)?(["'])(.*?)\1\s*(?:#.*)?$""", source, re.MULTILINE)
    return match.group(2).strip() if match else ""


def _url_path(value) -> str | None:
    if not value or not isinstance(value, str):
        return None
    return urlsplit(value).path.rstrip("/") or None


def _origin(value) -> str:
    """`https://example.org` of `https://example.org/docs/` ("" for a relative or missing URL)."""
    if not value or not isinstance(value, str):
        return ""
    parts = urlsplit(value)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def _text(value) -> str:
    return value.strip() if isinstance(value, str) else ""


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


class _TolerantLoader(yaml.SafeLoader):
    """mkdocs.yml uses tags such as !!python/name:… and !ENV: read them as plain values."""


_TolerantLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def _read_config(path: Path) -> dict:
    """A generator's configuration as a mapping ({} when it cannot be read: the facts are optional)."""
    text = _read_text(path)
    try:
        if path.suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        elif path.suffix == ".json":
            import json

            data = json.loads(text)
        else:
            data = yaml.load(text, Loader=_TolerantLoader)
    except (ValueError, yaml.YAMLError):  # tomllib.TOMLDecodeError and json's errors are ValueErrors
        return {}
    return data if isinstance(data, dict) else {}


def _markdown_pages(root: Path, suffixes=MARKDOWN_SUFFIXES, front_matter_only: bool = False,
                    skip_underscored: bool = False) -> list[str]:
    """Site-relative paths of the Markdown (or other source) pages under `root`, sorted; with
    front_matter_only, only those starting with `---` (Jekyll copies the others as they are)."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_WALK and not d.startswith(".")
                         and not (skip_underscored and d.startswith("_")))
        for name in sorted(files):
            if not name.endswith(suffixes) or (skip_underscored and name.startswith(("_", "."))):
                continue
            path = Path(folder) / name
            if front_matter_only and not _starts_with_front_matter(path):
                continue
            found.append(path.relative_to(root).as_posix())
    return sorted(found)


def _starts_with_front_matter(path: Path) -> bool:
    try:
        with open(path, "rb") as file:
            return re.match(rb"(\xef\xbb\xbf)?---[ \t]*\r?\n", file.read(8)) is not None
    except OSError:
        return False
