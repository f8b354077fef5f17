"""The query analyser: what a question becomes before any channel reads it. The wording the dense model
is given (and its vector) and the lexical tokens by field, with their expansions (romaji, English,
thesaurus). The only part of the artifacts engine that needs the Japanese tokenizer (text/)."""

from __future__ import annotations

import itertools
import logging

import numpy as np

from ..errors import QueryEmbeddingFailed
from ..ranking.settings import SearchSettings
from ..text.ja import _katakana, _tagged, analyze_query, expansions, kana_spans, nfkc, normalize, term_surfaces
from ..text.romaji import is_word as is_romaji
from ..text.slugs import english_terms
from ..text.thesaurus import textbook_wording, thesaurus_terms
from .loader import ArtifactSet

# How many of the chunks that hold a kana term are read for the way the site writes it (_surface_of).
SURFACE_ROWS = 20
log = logging.getLogger("knowledge_build.search")


class QueryAnalyser:
    def __init__(self, artifacts: ArtifactSet, settings: SearchSettings):
        self.artifacts = artifacts
        self.settings = settings
        self._surfaces: dict[str, str] = {}  # kana term -> how the site writes it (_surface_of)

    def fields(self, query: str) -> dict[str, list[str]]:
        """The query's lexical tokens by field, with its expansions (romaji, English, thesaurus)."""
        settings = self.settings
        english = english_terms() if settings.expand_english else {}
        synonyms = thesaurus_terms(query, settings.thesaurus_file) if settings.expand_thesaurus else []
        known = self._known_token if "kana_terms" in self.artifacts.postings.fields else None
        return analyze_query(query, english, romaji=settings.expand_romaji, synonyms=synonyms, known_token=known)

    def embed(self, query: str) -> np.ndarray | None:
        """The query's vector, or None when the embedder cannot be reached (search then degrades
        to the lexical channel with a warning instead of failing)."""
        try:
            vector = self.artifacts.embedder.embed_query(self.dense_wording(query))
        except QueryEmbeddingFailed as exc:
            log.warning("the query embedder failed (%s); answering from the lexical channel only", exc)
            return None
        if not np.all(np.isfinite(vector)):
            log.warning("the query embedder returned NaN or infinite values; answering from the lexical channel only")
            return None
        if not np.any(vector):  # no direction: its cosine with every chunk is undefined (the database read it as 1)
            log.warning("the query embedder returned a zero vector; answering from the lexical channel only")
            return None
        return vector

    def dense_wording(self, query: str) -> str:
        """The query as the dense model is given it: NFKC, the thesaurus's textbook wording of student
        words, and a term typed in kana that the site writes in kanji written as the site writes it
        (よげんていり -> 余弦定理, はんべつしきのつかいかた -> 判別式のつかいかた): the model reads the kanji term,
        not its kana. A query all in romaji is read as its kana when that names such a term (yogen teiri
        -> 余弦定理). The terms are the query's kana_terms (text/ja.py), the ones the lexical channel
        matches, so a kana word the tagger knows (ちょうど) stays as typed."""
        if self.settings.expand_thesaurus:
            query = textbook_wording(query, self.settings.thesaurus_file)
        query = nfkc(query)
        if "kana_terms" not in self.artifacts.postings.fields:
            return query
        written = self._kanji_terms(query)
        if written == query and self.settings.expand_romaji and _all_romaji(query):
            kana = expansions(query, {})[0]
            written = self._kanji_terms(kana)
            written = written if written != kana else query
        return written

    def _kanji_terms(self, text: str) -> str:
        """`text` with each kana term that begins a word written as the site writes it."""
        lowered = normalize(text)
        if len(lowered) != len(text):  # positions would not match (a rare case of lower-casing)
            return text
        spans = kana_spans(lowered, self._known_token)
        words = {(start, end) for start, end, lemma in _tagged(lowered) if lemma} if spans else set()
        for start, end in reversed(spans):
            whole = _bounded(lowered, start, end) and (start, end) not in words
            surface = self._surface_of(_katakana(lowered[start:end])) if whole else ""
            if surface:
                text = text[:start] + surface + text[end:]
        return text

    def _known_token(self, field: str, token: str) -> bool:
        return self.artifacts.postings.token_id(field, token) >= 0

    def _surface_of(self, reading: str) -> str:
        """How the site writes the kana term `reading` (a kana_terms token), read from the chunks
        that hold it: the first of their titles that has it, else the first of their texts; '' when
        none does (remembered per reading)."""
        if reading not in self._surfaces:
            chunks = self.artifacts.chunks
            rows = self.artifacts.postings.rows_of("kana_terms", reading)
            titles = (chunks[int(r)].title for r in rows[:SURFACE_ROWS])
            texts = (chunks[int(r)].content for r in rows[:SURFACE_ROWS])
            self._surfaces[reading] = next((found for text in itertools.chain(titles, texts)
                                            if (found := term_surfaces(text).get(reading))), "")
        return self._surfaces[reading]


def _all_romaji(text: str) -> bool:
    """Whether `text` is nothing but romaji words (yogen teiri; not sin, cos or 2x)."""
    words = normalize(text).split()
    return bool(words) and all(is_romaji(w) for w in words)


# Particles around which a stretch of kana is a word of its own (はんべつしきのつかいかた, しすうほうそくって).
_PARTICLES = frozenset("のをはがとでにもやへっ")


def _bounded(text: str, start: int, end: int) -> bool:
    """Whether the kana term found at text[start:end] is a word of its own: each side at the edge of its
    run of kana or next to a particle. Not so where the rest of the run is left unexplained
    (かんぜんすう: ぜんすう is not 全数; なんとうい: なんとう is not 南東)."""
    before = start == 0 or text[start - 1] in _PARTICLES or not _katakana(text[start - 1])
    after = end == len(text) or text[end] in _PARTICLES or not _katakana(text[end])
    return before and after
