"""`KnowledgeIndex`: answers queries from a verified artifact set.

Dense ranks (FAISS inner product over L2-normalised vectors) and lexical ranks (BM25 per
Japanese field, weighted) are fused (see ranking.py); each result carries a calibrated
`relevance` (see relevance.py).
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import ArtifactUnreadable, ChunkNotFound, KnowledgeBuildError, QueryEmbeddingFailed, QueryTooLong
from ..index.postings import Postings, from_token_lists
from ..index.rows import ChunkRecords, Columns
from ..index.verify import open_verified
from ..model import Chunk
from ..text.ja import _katakana, _tagged, analyze_query, expansions, kana_spans, nfkc, normalize, term_surfaces
from ..text.romaji import is_word as is_romaji
from ..text.thesaurus import textbook_wording, thesaurus_terms
from .filters import FilterVocabulary
from .places import by_place
from .ranking import SearchSettings, fuse, type_weights
from .relevance import lexical_coverage, relevances

MODES = ("hybrid", "dense", "lexical")
# A question, not a document: longer queries are refused (QueryTooLong) before any work is done.
MAX_QUERY_CHARS = 2_000
# The most rows one call of the database's hybrid RPC returns (migration 009 refuses more).
MAX_MATCH_COUNT = 200
# How many of the chunks that hold a kana term are read for the way the site writes it (_surface_of).
SURFACE_ROWS = 20
log = logging.getLogger("knowledge_build.search")


@dataclass(frozen=True)
class SearchResult:
    id: str
    url: str
    title: str
    learns: tuple[str, ...]
    excerpt: str
    similarity: float
    score: float
    type: str
    material: str
    anchor: str
    source: str = "artifacts"
    # Other places that teach the same concept (same title on another page): id, url, material
    # (and absolute_url when the site's URL is known).
    locations: tuple[dict, ...] = ()
    # `url` on the site's host (manifest site.url + url, percent-encoded); None when the build did
    # not know the site's URL. `url` stays root-relative: v1 promises existing fields keep their meaning.
    absolute_url: str | None = None
    # Calibrated 0..1: how likely this result answers the query at all (relevance.py);
    # `relevant` is relevance >= SearchSettings.relevance_threshold. All results of an
    # off-topic query are `relevant: false`.
    relevance: float = 0.0
    relevant: bool = False
    # The other chunks of the same place (places.py: the same url, e.g. a table's other rows), best
    # first: id, url, title, excerpt, score, similarity, relevance, relevant. `k` counts places.
    sub_results: tuple[dict, ...] = ()

    def to_dict(self) -> dict:
        data = asdict(self)
        data["learns"] = list(self.learns)
        data["locations"] = [dict(x) for x in self.locations]
        data["sub_results"] = [dict(x) for x in self.sub_results]
        return data


class KnowledgeIndex:
    def __init__(self, path: Path, manifest: dict, chunks, index, lexical, embedder,
                 settings: SearchSettings | None = None, columns: Columns | None = None):
        """`chunks`: a list of Chunk (v1) or the ChunkRecords of a v2 set; `lexical`: v1's
        {"fields": {name: [[token]]}} or a v2 set's Postings; `columns`: the v2 set's row columns
        (built from the chunks when not given)."""
        self.path = Path(path)
        self.manifest = manifest
        self.chunks = chunks
        self.settings = settings or SearchSettings()
        self._index = index
        self._embedder = embedder
        self.columns = columns if columns is not None else Columns.from_chunks(chunks)
        self._by_id = None if isinstance(chunks, ChunkRecords) else {c.id: i for i, c in enumerate(chunks)}
        site = manifest.get("site") or {}
        self.site_url = str(site.get("url") or "")
        self.filters = FilterVocabulary(categories=site.get("categories"), columns=self.columns)
        self._parts = self.columns.parts
        # Boxes and page parts (sections, tables) together: each kind gets its own candidates, and a
        # part may be lifted among the first places (places.py). Read once, not on every query.
        self._mixed = bool(self._parts.any() and not self._parts.all())
        # Relevance's coverage is measured against the anchored boxes it was calibrated on.
        self._postings = lexical if isinstance(lexical, Postings) else \
            from_token_lists(lexical["fields"] if len(chunks) else {}, ~self._parts)
        self._groups: dict = {}
        self._surfaces: dict[str, str] = {}  # kana term -> how the site writes it (_surface_of)

    @classmethod
    def open(cls, path, embedder=None, settings: SearchSettings | None = None,
             embedder_options: dict | None = None, verify: bool | None = None) -> "KnowledgeIndex":
        """Open a set that `verify_set` accepts (the one check `validate` runs too); refuse one
        built with another embedder than `embedder` (default: the one it was built with).
        The set gets the cheap checks on open (verify_v2.py) unless `verify` is True (every byte);
        None: every byte when the set is small. A schema 1 set is refused (SchemaOneRetired)."""
        verified = open_verified(path, embedder, embedder_options=embedder_options, full=verify)
        return cls(verified.path, verified.manifest, verified.chunks, verified.index, verified.lexical,
                   verified.embedder, settings, verified.opened.columns)

    @property
    def build_id(self) -> str:
        return self.manifest["build_id"]

    @property
    def embedder(self):
        """The embedder queries are embedded with (the one the set was built with)."""
        return self._embedder

    def __len__(self) -> int:
        return len(self.chunks)

    def get(self, chunk_id: str) -> Chunk:
        row = self.row_of(chunk_id)
        if row is None:
            raise ChunkNotFound(chunk_id)
        return self.chunks[row]

    def concepts(self, type: str | None = None, category: str | None = None) -> list[Chunk]:
        """Every chunk of the type and category (display names accepted; UnknownFilterValue for a
        value no chunk has), in id order."""
        filters = self.filters.resolve_all(type=type, category=category)
        allowed = self.columns.allowed(filters)
        rows = range(len(self.chunks)) if allowed is None else np.flatnonzero(allowed)
        return [self.chunks[int(row)] for row in rows]

    def absolute_url(self, url: str) -> str | None:
        """`url` on the site's host, percent-encoded; None when the site's URL is unknown."""
        return join_site_url(self.site_url, url)

    def search(self, query: str, k: int = 5, type=None, category=None, material=None, level=None,
               mode: str = "hybrid", min_similarity: float | None = None, dense_source=None,
               min_relevance: float | None = None) -> list[SearchResult]:
        """Best `k` results. `dense_source(qvec, filters)` may supply the dense ranking ({row: cosine})
        from another store (the database); None from it means: use the local FAISS index.
        `min_relevance` drops results whose relevance is lower (an off-topic query then gets [])."""
        prepared = self.prepared(query, k, mode, type=type, category=category, material=material, level=level)
        if prepared is None:
            return []
        query, filters, qvec, mode = prepared
        dense = dense_source(qvec, filters) if dense_source is not None and mode != "lexical" else None
        source = "database" if dense is not None else "artifacts"
        return self.rank(query, qvec, k, filters, mode, min_similarity, dense, source, min_relevance)

    def prepared(self, query: str, k: int, mode: str, **filters) -> tuple[str, dict, np.ndarray | None, str] | None:
        """What every search starts with, here or in the database: (the query checked, the filters
        resolved, its vector, the mode: "lexical" when there is no vector); None when there is nothing
        to search for."""
        if mode not in MODES:
            raise KnowledgeBuildError(f"unknown search mode {mode!r}; choose one of {', '.join(MODES)}.")
        query = check_query(query)
        filters = self.filters.resolve_all(**filters)
        if not query or not self.chunks or k < 1:
            return None
        qvec = self.embed_query(query) if mode != "lexical" else None
        return query, filters, qvec, mode if qvec is not None else "lexical"

    def embed_query(self, query: str) -> np.ndarray | None:
        """The query's vector, or None when the embedder cannot be reached (search then degrades
        to the lexical channel with a warning instead of failing)."""
        try:
            vector = self._embedder.embed_query(self.dense_wording(query))
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
        if "kana_terms" not in self._postings.fields:
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
        return self._postings.token_id(field, token) >= 0

    def _surface_of(self, reading: str) -> str:
        """How the site writes the kana term `reading` (a kana_terms token), read from the chunks
        that hold it: the first of their titles that has it, else the first of their texts; '' when
        none does (remembered per reading)."""
        if reading not in self._surfaces:
            rows = self._postings.rows_of("kana_terms", reading)
            titles = (self.chunks[int(r)].title for r in rows[:SURFACE_ROWS])
            texts = (self.chunks[int(r)].content for r in rows[:SURFACE_ROWS])
            self._surfaces[reading] = next((found for text in itertools.chain(titles, texts)
                                            if (found := term_surfaces(text).get(reading))), "")
        return self._surfaces[reading]

    def rank(self, query: str, qvec: np.ndarray, k: int, filters: dict, mode: str = "hybrid",
             min_similarity: float | None = None, dense: dict[int, float] | None = None,
             source: str = "artifacts", min_relevance: float | None = None) -> list[SearchResult]:
        """Fuse the channels for one embedded query. `dense` ({row: cosine}) replaces the local
        FAISS ranking when another store (the database) supplied it."""
        allowed = self._allowed(**filters)
        if allowed is not None and not allowed.any():
            return []
        fields = self._query_fields(query)
        channels = {}
        if mode in ("hybrid", "dense"):
            channels["dense"] = self._per_kind(dense) if dense is not None else self._dense_scores(qvec, allowed)
        if mode in ("hybrid", "lexical"):
            channels["lexical"] = self._lexical_scores(query, allowed, fields)
        fused = fuse(channels, self.settings)
        if filters.get("type") is None:
            weights = type_weights(query, self.settings)
            types, codes = self.columns.values["type"], self.columns.codes["type"]  # no chunk is decoded
            fused = {row: score * weights.get(types[codes[row]], 1.0) for row, score in fused.items()}
        ordered = sorted(fused.items(), key=lambda item: (-item[1], item[0]))  # rows are in id order
        similar = self.settings.min_similarity if min_similarity is None else min_similarity
        relevant = self.settings.min_relevance if min_relevance is None else min_relevance
        passing = (c for c in self._candidates(ordered, qvec, channels.get("dense", {}), fields)
                   if (similar is None or c[2] >= similar) and (relevant is None or c[3] >= relevant))
        return self.results(passing, k, filters, source)

    def results(self, candidates, k: int, filters: dict, source: str = "artifacts") -> list[SearchResult]:
        """The best `k` places of ranked (row, score, similarity, relevance) candidates as results,
        each with its place's other chunks (places.py) and the other places of its concept."""
        mixed = filters.get("type") is None and self._mixed
        places = by_place(candidates, lambda c: self._url(c[0]), k, promote=self._liftable if mixed else None,
                          within=self.settings.part_place)
        return [replace(self._with_locations(lead[0], self._result(*lead, source)),
                        sub_results=tuple(self._sub_result(*other) for other in others))
                for lead, others in places]

    def _liftable(self, candidate) -> bool:
        """A page part the query is relevant to may be lifted among the first places (places.py)."""
        row, _, _, relevance = candidate
        return bool(self._parts[row]) and relevance >= self.settings.relevance_threshold

    def _candidates(self, ordered, qvec, cosines: dict, fields: dict):
        """(row, score, similarity, relevance) in ranked order; computed a window at a time (the first
        window holds the candidates the query's relevance is judged on). No chunk is decoded here:
        only the results returned become SearchResults."""
        window = max(1, self.settings.relevance_window)
        own = {name: tokens for name, tokens in fields.items() if name in self.settings.relevance_fields}
        query_best = None
        for start in range(0, len(ordered), max(window, 20)):
            batch = ordered[start:start + max(window, 20)]
            rows = [row for row, _ in batch]
            similarities = [self._similarity(row, qvec, cosines.get(row)) for row in rows]
            coverage = lexical_coverage(self._postings, own, rows)
            sims = similarities if qvec is not None else [None] * len(rows)
            parts = [bool(self._parts[row]) for row in rows]
            scores, query_best = relevances(sims, coverage, self.settings, query_best, parts)
            yield from ((row, score, similarity, relevance)
                        for (row, score), similarity, relevance in zip(batch, similarities, scores))

    def row_of(self, chunk_id: str) -> int | None:
        if self._by_id is None:
            return self.chunks.row_of(chunk_id)
        return self._by_id.get(chunk_id)

    def _allowed(self, **filters) -> np.ndarray | None:
        return self.columns.allowed(filters)

    def _kind_groups(self, allowed) -> list[np.ndarray | None]:
        """The masks each channel takes its `candidates` from: boxes and page parts (sections,
        tables) separately, so that adding a site's sections never pushes a box out of a channel's
        candidates (nor changes the statistics the fusion reads); one group (None: every allowed
        row) when the index has only one of them."""
        if not self._mixed:
            return [allowed]
        return [m if allowed is None else m & allowed for m in (~self._parts, self._parts)]

    @property
    def dense_depth(self) -> int:
        """How many dense candidates another store (the database) should supply: `candidates`, plus
        the number of page parts when the index mixes them with boxes, so the boxes' top candidates
        are surely among them (the parts' may be fewer than `candidates` when boxes fill the top)."""
        parts = int(self._parts.sum())
        return min(len(self.chunks), self.settings.candidates + (parts if parts < len(self.chunks) else 0))

    def _per_kind(self, scores: dict[int, float]) -> dict[int, float]:
        """The top `candidates` of each kind group of a ranking another store supplied."""
        if not self._mixed:
            return scores
        keep: dict[int, float] = {}
        for part in (False, True):
            group = sorted((r for r in scores if bool(self._parts[r]) == part), key=lambda r: (-scores[r], r))
            keep.update((r, scores[r]) for r in group[:self.settings.candidates])
        return keep

    def _dense_scores(self, qvec: np.ndarray, allowed) -> dict[int, float]:
        """Cosine of the top candidates of each kind group, by row."""
        from . import dense

        found: dict[int, float] = {}
        for slot, group in enumerate(self._kind_groups(allowed)):
            n = min(self.settings.candidates, len(self.chunks) if group is None else int(group.sum()))
            if n < 1:
                continue
            if group is None:
                selector = None
            elif allowed is None:  # a kind group: the same for every query
                selector = self._groups.get(slot) or self._groups.setdefault(slot, dense.Selector(group))
            else:
                selector = dense.Selector(group)
            found.update(dense.search(self._index, qvec, n, selector))
        norms = self.columns.norms
        return found if norms is None else {row: score / float(norms[row]) for row, score in found.items()}

    def _query_fields(self, query: str) -> dict[str, list[str]]:
        """The query's lexical tokens by field, with its expansions (romaji, English, thesaurus)."""
        settings = self.settings
        english = _english_terms() if settings.expand_english else {}
        synonyms = thesaurus_terms(query, settings.thesaurus_file) if settings.expand_thesaurus else []
        known = self._known_token if "kana_terms" in self._postings.fields else None
        return analyze_query(query, english, romaji=settings.expand_romaji, synonyms=synonyms, known_token=known)

    def _lexical_scores(self, query: str, allowed, fields: dict[str, list[str]] | None = None) -> dict[int, float]:
        """Weighted BM25 of the top candidates (score > 0), by row (`fields`: the query's tokens, when
        already analysed)."""
        settings = self.settings
        fields = self._query_fields(query) if fields is None else fields
        try:
            scores = field_scores(self._postings, fields, settings.field_weights, len(self.chunks))
        except IndexError as exc:  # a v2 file changed in place after a cheap open (verify_v2.py)
            raise ArtifactUnreadable(self.path, "lexical_rows.npy", "a posting points past the last chunk; "
                                     "'knowledge-build validate' checks the whole set") from exc
        found: dict[int, float] = {}
        for group in self._kind_groups(allowed):
            within = scores if group is None else np.where(group, scores, 0.0)
            n = min(settings.candidates, len(within))
            rows = np.argpartition(-within, n - 1)[:n]
            found.update((int(r), float(within[r])) for r in rows if within[r] > 0)
        return found

    def _similarity(self, row: int, qvec: np.ndarray | None, cosine: float | None) -> float:
        """The row's dense cosine clipped to 0..1 and rounded as results show it."""
        if cosine is None:
            cosine = float(np.dot(self._index.reconstruct(row), qvec)) if qvec is not None else 0.0
            cosine /= float(self.columns.norms[row]) if self.columns.norms is not None else 1.0
        # JSON has no NaN: a non-finite number (a broken dense source) reads as no similarity.
        return round(float(np.clip(cosine, 0.0, 1.0)) if np.isfinite(cosine) else 0.0, 6)

    def _result(self, row: int, score: float, similarity: float, relevance: float, source: str) -> SearchResult:
        chunk = self.chunks[row]
        score = score if np.isfinite(score) else 0.0
        return SearchResult(id=chunk.id, url=chunk.url, title=chunk.title, learns=chunk.learns,
                            excerpt=chunk.excerpt, similarity=similarity, score=round(score, 6),
                            type=chunk.type, material=chunk.material, anchor=chunk.anchor, source=source,
                            absolute_url=self.absolute_url(chunk.url), relevance=relevance,
                            relevant=relevance >= self.settings.relevance_threshold)

    def _sub_result(self, row: int, score: float, similarity: float, relevance: float) -> dict:
        """Another chunk of a result's place (places.py), as the result lists it in `sub_results`."""
        chunk = self.chunks[row]
        return {"id": chunk.id, "url": chunk.url, "title": chunk.title, "excerpt": chunk.excerpt,
                "score": round(score, 6) if np.isfinite(score) else 0.0, "similarity": similarity,
                "relevance": relevance, "relevant": relevance >= self.settings.relevance_threshold}

    def _url(self, row: int) -> str:
        """The row's link (its place) without decoding a v2 chunk."""
        return self.chunks[row].url if self._by_id is not None else self.chunks.brief(row)[1]

    def _with_locations(self, row: int, result: SearchResult) -> SearchResult:
        """The result with the other places that teach its concept (done only for results returned:
        a title many pages share has many)."""
        return replace(result, locations=tuple(self._location(r) for r in self.columns.same_concept(row)))

    def _location(self, row: int) -> dict:
        if self._by_id is None:
            chunk_id, url, material = self.chunks.brief(row)
        else:
            chunk = self.chunks[row]
            chunk_id, url, material = chunk.id, chunk.url, chunk.material
        where = {"id": chunk_id, "url": url, "material": material}
        if self.site_url:
            where["absolute_url"] = self.absolute_url(url)
        return where


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


@lru_cache(maxsize=1)
def _english_terms() -> dict[str, str]:
    """English slug -> Japanese terms, from the glossary that names anchors."""
    from ..text.slugs import load_glossary

    terms: dict[str, list[str]] = {}
    for term, slug in load_glossary().items():
        terms.setdefault(slug, []).append(term)
    return {slug: " ".join(found) for slug, found in terms.items()}


@lru_cache(maxsize=65536)
def join_site_url(site_url: str, url: str) -> str | None:
    """`site_url` + `url` with the path percent-encoded (Japanese file names, spaces) so that chat
    clients and mail keep the whole link; an escape already in `url` is kept. None without a site URL."""
    from urllib.parse import quote

    if not site_url:
        return None
    return site_url.rstrip("/") + quote(url, safe="/#:%")


def check_query(query: str | None) -> str:
    """The stripped query; QueryTooLong over MAX_QUERY_CHARS."""
    query = (query or "").strip()
    if len(query) > MAX_QUERY_CHARS:
        raise QueryTooLong(len(query), MAX_QUERY_CHARS)
    return query


def field_scores(postings: Postings, fields: dict[str, list[str]], weights: dict[str, float], size: int) -> np.ndarray:
    """The weighted sum over fields of each field's BM25 scores for the query's tokens."""
    scores = np.zeros(size, dtype=np.float32)
    for name, query_tokens in fields.items():
        weight = weights.get(name, 0.0)
        if not weight or name not in postings.fields:
            continue
        found = postings.scores(name, query_tokens)
        if found is not None:
            scores += weight * found
    return scores
