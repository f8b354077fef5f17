"""`KnowledgeIndex`: answers queries from a verified artifact set.

Dense ranks (FAISS inner product over L2-normalised vectors) and lexical ranks (BM25 over
the stored Japanese tokens) are fused with reciprocal rank fusion.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .artifacts import decode, read_artifacts
from .chunks import Chunk
from .embed import describe, embedder_key, get_embedder
from .errors import ChunkNotFound, EmbedderMismatch, KnowledgeBuildError
from .text_ja import ANALYZER, analyze

MODES = ("hybrid", "dense", "lexical")
RRF_K = 60
CANDIDATES = 100
# BM25 field weights: readings only help where lemmas differ (dev set, see text_ja).
FIELD_WEIGHTS = {"lemma": 1.0, "reading": 0.3}
# A query that names a kind of box (「公式で解きたい」) lifts that kind among near-ties. Small on
# purpose: on the dev set 1.1 changes no metric (hit@5 0.883, MRR@10 0.794) while 1.2+ costs MRR.
INTENT_BOOST = 1.1
# Words by which a query asks for one kind of box (the same cues as the id prefixes).
_INTENT_WORDS = {
    "rule": ("公式", "定理", "法則", "性質"),
    "method": ("解き方", "やり方", "方法", "手順"),
    "definition": ("とは", "意味", "定義"),
    "tip": ("コツ", "ポイント", "注意", "間違"),
    "example": ("例題", "例を"),
}
# Examples illustrate a rule; a tutor links the rule itself first (dev set: hybrid hit@5 0.83 -> 0.88,
# MRR@10 0.67 -> 0.79). Not applied when the query or the type filter asks for examples.
EXAMPLE_WEIGHT = 0.5


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

    def to_dict(self) -> dict:
        data = asdict(self)
        data["learns"] = list(self.learns)
        return data


class KnowledgeIndex:
    def __init__(self, path: Path, manifest: dict, chunks: list[Chunk], index, lexical: dict, embedder):
        self.path = Path(path)
        self.manifest = manifest
        self.chunks = chunks
        self._index = index
        self._embedder = embedder
        self._by_id = {c.id: i for i, c in enumerate(chunks)}
        self._bm25 = {name: _bm25(docs) for name, docs in lexical["fields"].items()} if chunks else {}

    @classmethod
    def open(cls, path, embedder=None) -> "KnowledgeIndex":
        """Open and verify a set; refuse one built with another embedder than `embedder`."""
        path = Path(path)
        artifacts = read_artifacts(path)
        raw_chunks, index, lexical = decode(artifacts, path)
        built_with = artifacts.manifest["embedder"]
        if lexical.get("analyzer") != ANALYZER:
            raise KnowledgeBuildError(
                f"artifact set '{path}' has lexical tokens from analyzer {lexical.get('analyzer')!r}; this "
                f"version reads {ANALYZER!r}. Rebuild it with 'knowledge-build build'.")
        if embedder is None:
            embedder = get_embedder(built_with["provider"])
        if describe(embedder) != built_with:
            raise EmbedderMismatch(path, embedder_key(built_with), embedder_key(describe(embedder)))
        chunks = [Chunk.from_dict(c) for c in raw_chunks]
        return cls(path, artifacts.manifest, chunks, index, lexical, embedder)

    @property
    def build_id(self) -> str:
        return self.manifest["build_id"]

    def __len__(self) -> int:
        return len(self.chunks)

    def get(self, chunk_id: str) -> Chunk:
        try:
            return self.chunks[self._by_id[chunk_id]]
        except KeyError:
            raise ChunkNotFound(chunk_id) from None

    def concepts(self, type: str | None = None, category: str | None = None) -> list[Chunk]:
        return [c for c in self.chunks if _matches(c, type=type, category=category)]

    def search(self, query: str, k: int = 5, type=None, category=None, material=None, level=None,
               mode: str = "hybrid") -> list[SearchResult]:
        if mode not in MODES:
            raise KnowledgeBuildError(f"unknown search mode {mode!r}; choose one of {', '.join(MODES)}.")
        query = (query or "").strip()
        if not query or not self.chunks or k < 1:
            return []
        allowed = self._allowed(type=type, category=category, material=material, level=level)
        if allowed is not None and not allowed.any():
            return []
        qvec = self._embedder.embed_query(query)
        ranked: list[list[int]] = []
        if mode in ("hybrid", "dense"):
            ranked.append(self._dense_ranks(qvec, allowed))
        if mode in ("hybrid", "lexical"):
            ranked.append(self._lexical_ranks(query, allowed))
        fused = _rrf(ranked)
        fused = self._type_priors(fused, query, type)
        top = sorted(fused.items(), key=lambda item: (-item[1], self.chunks[item[0]].id))[:k]
        return [self._result(row, score, qvec) for row, score in top]

    def _type_priors(self, fused: dict[int, float], query: str, type_filter) -> dict[int, float]:
        if type_filter is not None:
            return fused
        weights = type_weights(query)
        return {row: score * weights[self.chunks[row].type] for row, score in fused.items()}

    def _allowed(self, **filters) -> np.ndarray | None:
        if not any(filters.values()):
            return None
        return np.array([_matches(c, **filters) for c in self.chunks], dtype=bool)

    def _dense_ranks(self, qvec: np.ndarray, allowed) -> list[int]:
        import faiss

        n = min(CANDIDATES, len(self.chunks))
        params = None
        if allowed is not None:
            params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(np.flatnonzero(allowed).astype(np.int64)))
        _, rows = self._index.search(qvec.reshape(1, -1), n, params=params)
        return [int(r) for r in rows[0] if r >= 0]

    def _lexical_ranks(self, query: str, allowed) -> list[int]:
        scores = np.zeros(len(self.chunks), dtype=np.float32)
        for name, query_tokens in analyze(query).items():
            model = self._bm25[name]
            known = [t for t in query_tokens if t in model.vocab_dict]
            if known:
                scores += FIELD_WEIGHTS[name] * model.get_scores(known)
        if allowed is not None:
            scores = np.where(allowed, scores, 0.0)
        n = min(CANDIDATES, len(scores))
        rows = np.argpartition(-scores, n - 1)[:n]
        rows = rows[scores[rows] > 0]
        return [int(r) for r in sorted(rows, key=lambda r: (-scores[r], r))]

    def _result(self, row: int, score: float, qvec: np.ndarray) -> SearchResult:
        chunk = self.chunks[row]
        similarity = float(np.clip(np.dot(self._index.reconstruct(row), qvec), 0.0, 1.0))
        return SearchResult(id=chunk.id, url=chunk.url, title=chunk.title, learns=chunk.learns,
                            excerpt=chunk.excerpt, similarity=round(similarity, 6), score=round(score, 6),
                            type=chunk.type, material=chunk.material, anchor=chunk.anchor)


def intended_type(query: str) -> str | None:
    hits = [t for t, words in _INTENT_WORDS.items() if any(w in query for w in words)]
    return hits[0] if len(hits) == 1 else None


def type_weights(query: str) -> dict[str, float]:
    """Multipliers of the fused score by chunk type for this query."""
    weights = {t: 1.0 for t in _INTENT_WORDS}
    wanted = intended_type(query)
    if wanted != "example":
        weights["example"] = EXAMPLE_WEIGHT
    if wanted not in (None, "example"):
        weights[wanted] = INTENT_BOOST
    return weights


def _matches(chunk: Chunk, **filters) -> bool:
    return all(value is None or getattr(chunk, name) == value for name, value in filters.items())


def _rrf(rankings: list[list[int]]) -> dict[int, float]:
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, row in enumerate(ranking, start=1):
            fused[row] = fused.get(row, 0.0) + 1.0 / (RRF_K + rank)
    return fused


def _bm25(docs: list[list[str]]):
    import bm25s

    # Token strings must be non-empty lists for bm25s; an empty doc gets a placeholder.
    model = bm25s.BM25()
    model.index([d if d else [""] for d in docs], show_progress=False)
    return model
