"""Versions and languages of a site's pages: found in the site itself, recorded on chunks as facets.

Real documentation serves the same pages once per version (`/v1.5/ja/`, `/v1.6/ja/`, `/latest/`) and
per language (`/ja/`, `/en/`). Each page's version and language are decided here, before any ranking:

- **Version**: a folder level of the pages' paths whose names look like versions (`1.7`, `v2`, `latest`,
  `stable`, `dev`, …: VERSION_NAME), with at least two such names there, holding most of the pages
  (MIN_VERSIONED_SHARE), and with pages repeated under two of the names (the same path below them):
  that repetition is what makes it a version and not, say, a chapter named `2`. A `versions.json` at the
  site's root (the one `mike` writes for MkDocs: `[{"version", "title", "aliases"}]`, newest first) gives the
  order and the aliases (a folder named by an alias that is a copy of its version's folder is left out, named as
  skipped). Without it the newest is the highest number; named ones (`latest`, `stable`, …)
  come after numbered ones, in VERSION_NAME's order. A page outside every version folder has no version.
- **Language**: a folder level whose names are language codes (LANGUAGE_CODES), by the same test; else
  the page's own language (`<html lang>`, or its text: site/scan.py) when the site's pages are in two
  languages or more, each holding at least MIN_LANGUAGE_SHARE of them. A site in one language records none.

A site with one version and one language gets no facet at all, so its chunks and artifacts are what they
were before facets existed.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

# The names a version folder has: a number with up to four parts, with or without a `v`, or one of these
# channel names, in the order that makes the first the newest when no number is there.
CHANNELS = ("latest", "stable", "current", "main", "master", "dev", "develop", "next", "nightly")
VERSION_NAME = re.compile(r"^(?:v?\d+(?:\.\d+){0,3}(?:\.x)?|" + "|".join(CHANNELS) + r")$", re.IGNORECASE)
# ISO 639-1 codes documentation sites use for their language folders, with a region or script after it
# (`zh-cn`, `pt_BR`, `zh-Hant`).
LANGUAGE_CODES = frozenset("ar bg ca cs da de el en es et fa fi fr he hi hu id it ja ko lt lv ms nl no pl pt "
                           "ro ru sk sl sr sv th tr uk vi zh".split())
LANGUAGE_NAME = re.compile(r"^([a-z]{2})(?:[-_][A-Za-z]{2,4})?$")
# A facet folder level holds at least this share of the pages (the rest: a root index, a 404 page).
MIN_VERSIONED_SHARE = 0.5
# By the pages' own languages (no language folders): a language is a facet when it holds this share of the pages.
MIN_LANGUAGE_SHARE = 0.1
# The folder levels looked at, from the site's root (`/ja/v1.5/` and `/v1.5/ja/` both occur).
MAX_DEPTH = 3


@dataclass(frozen=True)
class Facets:
    """Per page (site-relative path): its version and language ("" for none); `versions`, newest first."""
    version: dict[str, str] = field(default_factory=dict)
    language: dict[str, str] = field(default_factory=dict)
    versions: tuple[str, ...] = ()
    aliases: dict[str, str] = field(default_factory=dict)  # alias (latest) -> version (1.7), from versions.json
    languages: tuple[str, ...] = ()
    # Pages under an alias folder (mike's `latest/` written as a copy) whose version has its own folder: the same
    # pages twice in one version, so they are left out, each with this reason.
    copies: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        """The manifest's `site.facets` (only the facets the site has)."""
        data = {}
        if self.versions:
            data["versions"] = list(self.versions)
            if self.aliases:
                data["version_aliases"] = dict(sorted(self.aliases.items()))
        if self.languages:
            data["languages"] = list(self.languages)
        return data


def site_facets(root: Path, rels: list[str], page_langs: dict[str, str]) -> Facets:
    """The facets of a site whose pages are `rels`; `page_langs`: each page's own language ("" unknown)."""
    declared = _declared_versions(root)
    depth = _facet_level(rels, _is_version)
    version = _by_level(rels, depth) if depth is not None else {}
    names = {v for v in version.values() if v}
    copies = {}
    if declared:
        order, aliases = declared
        copies = {rel: f"a copy of version {aliases[v]} under its alias folder '{v}' (versions.json)"
                  for rel, v in version.items() if v in aliases and aliases[v] in names}
        version = {rel: v for rel, v in version.items() if rel not in copies}
        names = {v for v in version.values() if v}
        names_known = [v for v in order if v in names] + sorted(names - set(order) - set(aliases), key=_version_key)
        version = {rel: aliases.get(v, v) for rel, v in version.items()}
        versions, aliases = tuple(names_known), {a: v for a, v in aliases.items() if v in names_known}
    else:
        versions, aliases = tuple(sorted(names, key=_version_key)), {}
    lang_depth = _facet_level(rels, _is_language)
    if lang_depth is not None:
        language = {rel: (LANGUAGE_NAME.match(v).group(1) if v else "") for rel, v in _by_level(rels, lang_depth).items()}
    else:
        language = {rel: page_langs.get(rel, "") for rel in rels}
        counts = Counter(v for v in language.values() if v)
        # A language of a few pages only (a theme's English 404 and search pages) is not a facet of the site.
        minor = {lang for lang, n in counts.items() if n < MIN_LANGUAGE_SHARE * len(rels)}
        language = {rel: ("" if v in minor else v) for rel, v in language.items()}
    languages = tuple(lang for lang, _ in Counter(v for v in language.values() if v).most_common())
    if len(languages) < 2:
        language, languages = {}, ()
    if len(versions) < 2:
        version, versions, aliases, copies = {}, (), {}, {}
    return Facets(version, language, versions, aliases, languages, copies)


def _is_version(name: str) -> bool:
    return bool(VERSION_NAME.match(name))


def _is_language(name: str) -> bool:
    found = LANGUAGE_NAME.match(name)
    return bool(found) and found.group(1) in LANGUAGE_CODES


def _facet_level(rels: list[str], looks_like) -> int | None:
    """The first folder level whose names pass `looks_like`, hold most pages and repeat pages below two names."""
    for depth in range(MAX_DEPTH):
        below: dict[str, set[str]] = defaultdict(set)  # folder name -> the paths below it
        for rel in rels:
            parts = rel.split("/")
            if len(parts) > depth + 1 and looks_like(parts[depth]):
                below[parts[depth]].add("/".join(parts[:depth] + parts[depth + 1:]))
        if len(below) < 2 or sum(len(p) for p in below.values()) < MIN_VERSIONED_SHARE * len(rels):
            continue
        seen = Counter(path for paths in below.values() for path in paths)
        if any(n > 1 for n in seen.values()):
            return depth
    return None


def _by_level(rels: list[str], depth: int) -> dict[str, str]:
    out = {}
    for rel in rels:
        parts = rel.split("/")
        out[rel] = parts[depth] if len(parts) > depth + 1 else ""
    return out


def _version_key(name: str) -> tuple:
    """Newest first: numbers highest first, then the channel names in CHANNELS' order, then the rest."""
    number = re.match(r"^v?(\d+(?:\.\d+)*)", name, re.IGNORECASE)
    if number:
        return (0, tuple(-int(p) for p in number.group(1).split(".")), name)
    lowered = name.lower()
    return (1, (CHANNELS.index(lowered) if lowered in CHANNELS else len(CHANNELS),), name)


def _declared_versions(root: Path) -> tuple[list[str], dict[str, str]] | None:
    """(versions newest first, alias -> version) from mike's versions.json, None when there is none or it
    is not that format (the site's own file of that name is then only a page's data)."""
    path = root / "versions.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, list) or not data or not all(isinstance(v, dict) and isinstance(v.get("version"), str)
                                                          for v in data):
        return None
    order = [v["version"] for v in data]
    aliases = {a: v["version"] for v in data for a in (v.get("aliases") or []) if isinstance(a, str)}
    return order, aliases

