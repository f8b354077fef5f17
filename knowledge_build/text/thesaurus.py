"""School-math synonyms at query time: student wording (ピタゴラスの定理, ルート, みはじ) -> textbook
terms (三平方の定理, 平方根, 速さ・時間・道のり), added to a query's lexical tokens.

The shipped list is `knowledge_build/data/thesaurus.yml` (package `knowledge_build.data`); a site extends it with the
`thesaurus` setting (a YAML file of the same shape: `wording: [term, …]`).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..errors import ConfigError
from .ja import normalize


def load_thesaurus(extra: Path | None = None) -> dict[str, tuple[str, ...]]:
    """wording (normalised) -> textbook terms, the shipped list first, then the site's."""
    from ..yamlfile import load as load_yaml
    from ..yamlfile import load_file

    text = resources.files("knowledge_build.data").joinpath("thesaurus.yml").read_text(encoding="utf-8")
    entries = dict(_entries(load_yaml(text, "thesaurus.yml").data, "thesaurus.yml"))
    if extra is not None:
        entries.update(_entries(load_file(Path(extra)).data, str(extra)))
    return entries


def _entries(data, origin: str):
    if data is None:
        return
    if not isinstance(data, dict):
        raise ConfigError(f"{origin}: a thesaurus maps a wording to a list of terms (wording: [term, …]).")
    for wording, terms in data.items():
        terms = [terms] if isinstance(terms, str) else terms
        if not isinstance(terms, list) or not all(isinstance(t, str) and t.strip() for t in terms) or not terms:
            raise ConfigError(f"{origin}: '{wording}' must map to a list of terms, e.g. {wording}: [term].")
        yield normalize(str(wording)), tuple(t.strip() for t in terms)


@lru_cache(maxsize=8)
def _cached(extra: str | None) -> dict[str, tuple[str, ...]]:
    return load_thesaurus(Path(extra) if extra else None)


def thesaurus_terms(query: str, extra: Path | None = None) -> list[str]:
    """The textbook terms for every wording the query contains, each term once. A wording inside a
    longer matched one (ピタゴラス in ピタゴラスの定理) adds nothing of its own: the same span would
    otherwise bring in its terms twice and outweigh the query's other words."""
    entries = _cached(str(extra) if extra else None)
    terms = [term for _, _, wording in _spans(normalize(query), entries) for term in entries[wording]]
    return list(dict.fromkeys(terms))


def textbook_wording(query: str, extra: Path | None = None) -> str:
    """The query (normalised, when it holds a wording) with each student wording replaced by its first textbook term:
    「ピタゴラスの定理で斜辺」 -> 「三平方の定理で斜辺」. What the dense channel embeds: the lexical
    channel keeps the student's own words too (a page may use them: ピタゴラス数), but a vector of the
    literal wording lands on the pages that use the word, not on the ones that teach the concept."""
    text = normalize(query)
    entries = _cached(str(extra) if extra else None)
    spans = _spans(text, entries)
    if not spans:
        return query  # as written: the dense query of every other question stays what it was
    out, last = [], 0
    for start, end, wording in spans:
        if start >= last:  # overlapping matches of equal length: the first one wins
            out += [text[last:start], entries[wording][0]]
            last = end
    return "".join(out) + text[last:]


def _spans(text: str, entries: dict) -> list[tuple[int, int, str]]:
    """(start, end, wording) of every matched wording not inside a longer match, in text order."""
    spans = [(start, start + len(wording), wording) for wording in entries for start in _occurrences(text, wording)]
    return sorted(s for s in spans if not any(o != s and o[0] <= s[0] and s[1] <= o[1] for o in spans))


def _occurrences(text: str, wording: str) -> list[int]:
    found, start = [], text.find(wording)
    while start >= 0:
        found.append(start)
        start = text.find(wording, start + 1)
    return found
