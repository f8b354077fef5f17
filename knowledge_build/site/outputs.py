"""Where a source project's built output is, and what its sources are when there is none.

The output is the folder the generator's configuration names (Jekyll's `destination`, Hugo's
`publishDir`, MkDocs' `site_dir`; Sphinx's conventional `_build/html` ...) when it holds pages, and
any folder one or two levels under the project (for Sphinx also in `../build` and `../_build`) that
carries the generator's marks: files only its build writes (Sphinx's `objects.inv`, `.buildinfo`,
`_static/` with `searchindex.js`; MkDocs' `sitemap.xml` with `search/search_index.json`; Hugo's
`index.xml` with `sitemap.xml`), or a home page whose `<meta name="generator">` names it. So
`sphinx-build -b html . html`, `mkdocs build -d public` and `hugo -d dist` are found as their owners
ran them. Several outputs: the newest is read and the note names the others and the flag that chooses.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path


# The page formats a source folder is counted in, by suffix.
FORMATS = {".rst": "reStructuredText", ".md": "Markdown", ".markdown": "Markdown", ".mkd": "Markdown",
           ".mkdn": "Markdown", ".txt": "plain-text"}
_SKIPPED = {"node_modules", "vendor", ".git", ".bundle", ".knowledge-cache", "__pycache__", ".venv", "venv"}

# Each generator's marks: any one group of paths, all present in a folder, marks it as that generator's output.
MARKS: dict[str, tuple[tuple[str, ...], ...]] = {
    "sphinx": (("objects.inv",), (".buildinfo",), ("_static", "searchindex.js")),
    "mkdocs": (("sitemap.xml", "search/search_index.json"),),
    "hugo": (("index.xml", "sitemap.xml"),),
    "jekyll": (),
}


def find_outputs(generator: str, root: Path, stated: tuple[Path, ...], extra: tuple[Path, ...] = ()) -> list[Path]:
    """Every built output of the project at `root`, newest first (ties: by path): the `stated` folders
    (the one its configuration names, or the generator's conventional ones) that hold pages, and the
    folders carrying `generator`'s marks among `root`'s subfolders one or two levels down and the
    `extra` folders (searched the same way). A folder inside another output is part of it."""
    found = {folder.resolve() for folder in stated if has_html(folder)}
    for base in (root, *extra):
        for folder in _candidates(base):
            if folder.resolve() != root.resolve() and is_output_of(generator, folder):
                found.add(folder.resolve())
    outermost = [f for f in found if not any(other != f and other in f.parents for other in found)]
    return sorted(outermost, key=lambda f: (-_age(f), str(f)))


def is_output_of(generator: str, folder: Path) -> bool:
    """`folder` holds pages at its top and one of `generator`'s marks."""
    try:
        top = [entry.name for entry in os.scandir(folder)]
    except OSError:
        return False
    if not any(name.endswith(".html") for name in top):
        return False
    if any(all((folder / path).exists() for path in group) for group in MARKS.get(generator, ())):
        return True
    return generator != "plain" and generator_of_home(folder) == generator


_GENERATOR_META = re.compile(rb"""<meta\s[^>]*name\s*=\s*["']?generator["']?[^>]*>""", re.IGNORECASE)
_CONTENT = re.compile(rb"""content\s*=\s*["']([^"']*)["']""", re.IGNORECASE)


def generator_of_home(root: Path) -> str:
    """The generator named by the home page's `<meta name="generator">` (Hugo, MkDocs, Jekyll's SEO
    tag, Docutils for Sphinx), else "plain"."""
    try:
        with open(root / "index.html", "rb") as file:
            head = file.read(65536)
    except OSError:
        return "plain"
    for tag in _GENERATOR_META.findall(head):
        content = _CONTENT.search(tag)
        value = content.group(1).decode("utf-8", "replace").lower() if content else ""
        for name, marker in (("hugo", "hugo"), ("mkdocs", "mkdocs"), ("jekyll", "jekyll"), ("sphinx", "docutils"),
                             ("sphinx", "sphinx")):
            if marker in value:
                return name
    return "plain"


def _candidates(base: Path) -> list[Path]:
    """`base`'s subfolders one and two levels down (hidden, vendored and dependency folders left out)."""
    found = []
    for first in _subfolders(base):
        found.append(first)
        found.extend(_subfolders(first))
    return found


def _subfolders(folder: Path) -> list[Path]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    return [Path(e.path) for e in entries
            if e.is_dir() and not e.name.startswith(".") and e.name not in _SKIPPED]


def _age(folder: Path) -> float:
    """When the generator last wrote `folder`: the newest modification time of its top-level files."""
    times = [0.0]
    try:
        for entry in os.scandir(folder):
            if entry.is_file():
                times.append(entry.stat().st_mtime)
    except OSError:
        pass
    return max(times)


def choice_note(lead: str, outputs: list[Path]) -> str:
    """The build summary's note: `lead` (which says `outputs[0]` is read), then the other outputs found."""
    if len(outputs) == 1:
        return lead
    others = ", ".join(f"'{o}'" for o in outputs[1:])
    return (f"{lead}; {len(outputs)} built outputs were found, this one is the newest (also {others}): "
            f"pass --site <the output folder> to read another")


def has_html(folder: Path) -> bool:
    """`folder` holds an HTML page somewhere below it."""
    if not folder.is_dir():
        return False
    for _, dirs, files in os.walk(folder):
        if any(name.endswith(".html") for name in files):
            return True
        dirs[:] = [d for d in dirs if d not in _SKIPPED]
    return False


def describe_sources(pages: list[str]) -> tuple[str, str]:
    """What the error says of the source pages found (site-relative paths, sorted) and an example of
    the commonest format (its index first): ("3 reStructuredText page(s)", "index.rst"), or for a mix
    ("14 source page(s) (12 reStructuredText, 2 Markdown)", "index.rst")."""
    counts = Counter(FORMATS.get(Path(p).suffix.lower(), "other") for p in pages)
    if not counts:
        return "0 source page(s)", ""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    main = ranked[0][0]
    example = next(p for p in sorted(pages, key=lambda p: (p.count("/"), Path(p).stem.lower() != "index", p))
                   if FORMATS.get(Path(p).suffix.lower(), "other") == main)
    if len(ranked) == 1:
        return f"{len(pages)} {main} page(s)", example
    mix = ", ".join(f"{n} {name}" for name, n in ranked)
    return f"{len(pages)} source page(s) ({mix})", example
