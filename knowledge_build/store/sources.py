"""Web sources in the writable store: pages from other sites, their chunks, vectors and tokens.

Kept next to the notes (store/notes.py), in the same SQLite file or Postgres database, in tables of
their own: `knowledge_sources` (one row per page) and `knowledge_source_chunks`. Both indexes grow
with the store, so a query reads neither every row nor rebuilds a model:
- lexical: SQLite FTS5 over the analysed Japanese tokens (fields lemma, reading, kana2, page,
  heading, weighted as SearchSettings.field_weights), Postgres full text (sources_pg.py);
- dense: a sqlite-vec `vec0` table (exact KNN) or pgvector. Where sqlite-vec cannot be loaded the
  store still works: an exact numpy search over the vectors, read again only when the store changed.
Re-ingesting a page writes the new chunks and deletes the old ones in one transaction. A page and its
chunks keep the page's language (`<html lang>`; "" when it says none); a store made before the
column existed gets it, empty, when opened (sources_sqlite._ADDED_COLUMNS, sources_pg._schema).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..ranking.settings import check_query
from ..ranking.places import by_place
from ..ranking.fusion import fuse
from ..ranking.settings import SearchSettings
from ..web.chunk import WebChunk
from .common import InvalidChunks, NotFound, utc_now
from .source_relevance import scored


class SourceStore:
    """Web sources with hybrid search. `target`: a SQLite file path or a postgresql:// URL.
    `vector_index` (SQLite only): "auto" (sqlite-vec when it loads, else numpy), "sqlite-vec", "numpy"."""

    def __init__(self, embedder, target: str | Path, *, vector_index: str = "auto",
                 settings: SearchSettings | None = None):
        self.embedder = embedder
        self.settings = settings or SearchSettings()
        dim = int(getattr(embedder, "dim", 0) or len(embedder.embed_query("dim")))
        if str(target).startswith(("postgresql://", "postgres://")):
            from .sources_pg import PostgresSources

            self._db = PostgresSources(str(target), dim, self.settings)
            self.backend = "postgres"
        else:
            from .sources_sqlite import SqliteSources

            self._db = SqliteSources(Path(target), dim, self.settings, vector_index)
            self.backend = "sqlite"

    @property
    def vector_index(self) -> str:
        """How the dense channel is searched: "sqlite-vec", "numpy" or "pgvector"."""
        return self._db.vector_index

    def replace_source(self, source_url: str, title: str, chunks: list[WebChunk]) -> int:
        """Store a page's chunks in place of its previous ones (one transaction). Returns chunks stored."""
        for chunk in chunks:
            if chunk.source_url != source_url:
                raise InvalidChunks(f"chunk {chunk.chunk_index} belongs to {chunk.source_url}, not {source_url}. "
                                    "Fix: store each page's chunks under the page's own URL.")
        rows = prepare(self.embedder, chunks)  # the slow part, before any lock or transaction
        crawled_at = max((c.crawled_at for c in chunks), default=None) or utc_now()
        return self._db.replace(source_url, title, crawled_at, rows)

    def delete_source(self, source_url: str) -> int:
        """Delete a page and its chunks; returns the chunks deleted. NotFound for an unknown URL."""
        deleted = self._db.delete(source_url)
        if deleted is None:
            raise NotFound(f"no source {source_url}. Fix: 'sources status' lists the stored URLs.")
        return deleted

    def status(self) -> dict:
        return self._db.status()

    def sources(self) -> list[dict]:
        return self._db.sources()

    def query(self, text: str, k: int = 5, threshold: float | None = None,
              min_relevance: float | None = None) -> list[dict]:
        """The k best places for a question (dense + lexical, fused as the site's search does; chunks
        sharing a url are one place, ranking/places.py), each with `relevance` and `relevant` as the
        site's results (source_relevance.py) and its place's other chunks in `sub_results`.
        threshold: the minimum cosine similarity between the query's and a chunk's vectors; a chunk
        below it is left out even when its words match (None keeps every candidate). min_relevance:
        chunks whose relevance is lower are left out (an off-topic question then gets [])."""
        from ..text.ja import analyze_query, nfkc

        text = check_query(text)
        if not text:
            return []
        vector = self.embedder.embed_query(nfkc(text))
        return self.query_vector(vector, analyze_query(text), k, threshold, min_relevance)

    def query_vector(self, vector, tokens: list[str] | dict, k: int = 5, threshold: float | None = None,
                     min_relevance: float | None = None) -> list[dict]:
        """query() with the embedding and analysis done: `tokens` is analyze_query's dict, or a
        list of lemmas (which then also stand for the page and heading fields)."""
        if k <= 0:
            return []
        if not isinstance(tokens, dict):
            lemmas = [str(t) for t in tokens]
            tokens = {"lemma": lemmas, "page": list(dict.fromkeys(lemmas)), "heading": list(dict.fromkeys(lemmas))}
        qvec = unit_vector(np.asarray(vector, dtype=np.float32))
        dense, lexical, rows = self._db.candidates(qvec, tokens, self.settings.candidates)
        # Every candidate's cosine from its stored vector: the same numbers whichever index found it.
        cosine = {i: float(np.dot(qvec, row["embedding"])) for i, row in rows.items()}
        fused = fuse({"dense": {i: cosine[i] for i in dense}, "lexical": lexical}, self.settings)
        order = sorted(fused, key=lambda i: (-round(fused[i], 6), rows[i]["source_url"], rows[i]["chunk_index"]))
        passing = ((i, relevance) for i, relevance in scored(order, rows, cosine, tokens, self._db.statistics,
                                                             self.settings)
                   if (threshold is None or cosine[i] >= threshold)
                   and (min_relevance is None or relevance >= min_relevance))
        made = [[self._result(rows[i], cosine[i], fused[i], relevance) for i, relevance in (lead, *others)]
                for lead, others in by_place(passing, lambda item: rows[item[0]]["url"], k)]
        return [{**lead, "sub_results": [_sub_result(r) for r in others]} for lead, *others in made]

    def _result(self, row: dict, similarity: float, score: float, relevance: float) -> dict:
        return {"id": f"web-{row['id']}", "source": row["source_url"], "url": row["url"], "title": row["title"],
                "heading": row["heading"], "parents": row["parents"], "kind": row["kind"], "text": row["text"],
                "chunk_index": row["chunk_index"], "crawled_at": row["crawled_at"], "language": row["language"],
                "similarity": round(float(np.clip(similarity, 0, 1)), 6), "score": round(float(score), 6),
                "relevance": relevance, "relevant": relevance >= self.settings.relevance_threshold}

    def close(self) -> None:
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def prepare(embedder, chunks: list[WebChunk]) -> list[dict]:
    """Each chunk's row: its fields, unit vector (float32) and tokens per field."""
    from ..text.ja import analyze

    if not chunks:
        return []
    texts = [embed_text(c) for c in chunks]
    vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    rows = []
    for chunk, text, vector in zip(chunks, texts, vectors):
        tokens = analyze(text)
        page = list(dict.fromkeys(analyze(chunk.title)["lemma"]))
        heading = " ".join([*chunk.parents, chunk.heading])
        tokens["page"] = page
        tokens["heading"] = list(dict.fromkeys(page + analyze(heading)["lemma"]))
        rows.append({"chunk_index": chunk.chunk_index, "url": chunk.url, "title": chunk.title,
                     "heading": chunk.heading, "parents": list(chunk.parents), "kind": chunk.kind,
                     "text": chunk.text, "crawled_at": chunk.crawled_at, "embedding": unit_vector(vector),
                     "tokens": tokens, "language": chunk.language})
    return rows


def embed_text(chunk: WebChunk) -> str:
    """What a chunk's vector is made from: its page title, heading path and text."""
    path = " / ".join(p for p in (*chunk.parents, chunk.heading) if p)
    return "\n".join(p for p in (chunk.title, path, chunk.text) if p)


def unit_vector(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return (vector / norm).astype(np.float32) if norm else vector.astype(np.float32)


def _sub_result(result: dict) -> dict:
    """Another chunk of a result's place, as the result lists it in `sub_results`."""
    keep = ("id", "url", "title", "heading", "kind", "text", "chunk_index", "similarity", "score", "relevance",
            "relevant")
    return {name: result[name] for name in keep}
