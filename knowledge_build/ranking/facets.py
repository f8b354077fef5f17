"""Which version and language a question is answered from when it names none: stated once, for every engine.

A site with versions (site/facets.py) holds the same answer once per version; showing each would fill the
first places with one answer. So a search that names no version answers from the newest one (the first of
the manifest's `site.facets.versions`); `version="all"` searches every version. The pages outside every
version folder pass any version filter: they belong to none. A place found in several versions is led by its newest
version among them (the others listed beside it).

A site in several languages answers a question written in Japanese script (kana or kanji) from its Japanese
pages, when it has some; any other question searches every language (a question in Latin letters may be
romaji: `tasukigake` is Japanese). `language="all"` searches every language.

The artifacts and the database get the defaults from `default_facets` (serve/service.py resolves them before
the database function is called; a direct RPC call names its version or gets every version); the box applies
the same rule to the bundle's `versions` and `languages` (browser/static/knowledge-search.js, `facetDefaults`),
held to it by the conformance cases of rule `facet_defaults` (ranking/conformance/facets.jsonl).
"""

from __future__ import annotations

import re

ALL = "all"
# The facets, each a field of a chunk (model.Chunk, which takes this tuple) and a filter of every front door.
FACET_FILTERS = ("version", "language")
# Kana (hiragana, katakana, the prolonged sound mark) and CJK ideographs: a question in Japanese script.
_JAPANESE_SCRIPT = re.compile(r"[\u3041-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f]")


def default_facets(filters: dict, query: str, versions, languages) -> dict:
    """`filters` with each facet filter the caller left out (None) set by the rule above, and `all` made
    None (no filter). `versions`: the site's, newest first; `languages`: the site's (both empty without)."""
    out = dict(filters)
    if "version" in out:
        version = out["version"]
        out["version"] = None if version == ALL else version if version is not None else (
            versions[0] if versions else None)
    if "language" in out:
        language = out["language"]
        wanted = "ja" if _JAPANESE_SCRIPT.search(query or "") and "ja" in (languages or ()) else None
        out["language"] = None if language == ALL else language if language is not None else wanted
    return out


def version_family(material: str, version: str) -> str:
    """What a page is called in every version: its material (or link) with its version folder marked
    (`v1.7/ja/install` -> `*/ja/install`, a version's home page `v1.7` -> `*`), so the same page in two
    versions shares it; "" without a version."""
    if not version:
        return ""
    parts = material.split("/")
    return "/".join("*" if p == version else p for p in parts) if version in parts else ""
