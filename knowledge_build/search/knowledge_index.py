"""`KnowledgeIndex`: answers queries from a verified artifact set, the artifacts engine's front.

It joins the engine's parts: the loader (loader.py: the set and its rows), the query analyser (query.py:
the dense wording and vector, the lexical tokens), the channels (channels.py: FAISS cosines and BM25 per
Japanese field) and the ranker (ranker.py: fusion, type priors, relevance and places, ranking/'s rules).
The search service (serve/service.py) calls the same ranker with the database's dense channel, or hands it
the database's ranked rows for the places.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import KnowledgeBuildError
from ..model import Chunk
from ..ranking.facets import default_facets
from ..ranking.settings import SearchSettings, check_query
from .channels import ArtifactChannels
from .loader import ArtifactSet
from .query import QueryAnalyser
from .ranker import Ranker, SearchResult

MODES = ("hybrid", "dense", "lexical")


class KnowledgeIndex:
    def __init__(self, artifacts: ArtifactSet, settings: SearchSettings | None = None):
        self.artifacts = artifacts
        settings = settings or SearchSettings()
        self.analyser = QueryAnalyser(artifacts, settings)
        self.channels = ArtifactChannels(artifacts, settings)
        self.ranker = Ranker(artifacts, settings)

    @property
    def settings(self) -> SearchSettings:
        return self.ranker.settings

    @settings.setter
    def settings(self, settings: SearchSettings) -> None:
        """Every part ranks with the same settings."""
        for part in (self.analyser, self.channels, self.ranker):
            part.settings = settings

    @classmethod
    def open(cls, path, embedder=None, settings: SearchSettings | None = None,
             embedder_options: dict | None = None, verify: bool | None = None) -> "KnowledgeIndex":
        """Open a set (loader.py: `ArtifactSet.open`, the one check `validate` runs too); refuse one built
        with another embedder than `embedder` (default: the one it was built with)."""
        return cls(ArtifactSet.open(path, embedder, embedder_options=embedder_options, verify=verify), settings)

    @classmethod
    def from_parts(cls, path, manifest: dict, chunks: list[Chunk], index, lexical: dict, embedder,
                   settings: SearchSettings | None = None) -> "KnowledgeIndex":
        """An index over a set held in memory (`ArtifactSet.of`; `lexical`: {"fields": {name: token lists by
        row}}): what benchmarks and tests rank with other settings or rows."""
        return cls(ArtifactSet.of(path, manifest, chunks, index, lexical["fields"], embedder), settings)

    # -- the set ------------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self.artifacts.path

    @property
    def manifest(self) -> dict:
        return self.artifacts.manifest

    @property
    def chunks(self):
        return self.artifacts.chunks

    @property
    def columns(self):
        return self.artifacts.columns

    @property
    def filters(self):
        return self.artifacts.filters

    @property
    def site_url(self) -> str:
        return self.artifacts.site_url

    @property
    def build_id(self) -> str:
        return self.artifacts.build_id

    @property
    def embedder(self):
        """The embedder queries are embedded with (the one the set was built with)."""
        return self.artifacts.embedder

    def __len__(self) -> int:
        return len(self.artifacts)

    def get(self, chunk_id: str) -> Chunk:
        """The chunk of an id, or of the id it moved to (an alias: index/aliases.py)."""
        return self.artifacts.get(chunk_id)

    def resolve(self, chunk_id: str) -> tuple[Chunk, str | None]:
        """(the chunk, None) for a current id, (the chunk it moved to, the old id) for an alias; ChunkNotFound else."""
        return self.artifacts.resolve(chunk_id)

    def row_of(self, chunk_id: str) -> int | None:
        return self.artifacts.row_of(chunk_id)

    def concepts(self, type: str | None = None, category: str | None = None) -> list[Chunk]:
        return self.artifacts.concepts(type=type, category=category)

    def absolute_url(self, url: str) -> str | None:
        return self.artifacts.absolute_url(url)

    # -- what a tutor teaches with (teaching.py) ------------------------------------------------

    def outline(self, material: str | None = None) -> list[dict]:
        """The site's pages (or the page `material`) → sections → boxes and tables, in page order (teaching.outline);
        PageNotFound for a page the set does not have."""
        from ..errors import PageNotFound
        from ..teaching import outline

        try:
            return outline(self.chunks, material)
        except KeyError:
            raise PageNotFound(material) from None

    def learning_path(self, target: str):
        """The LearningPath (teaching.learning_path) of a page: `target` is its name or the id of one of its chunks;
        PageNotFound when it is neither."""
        from ..errors import PageNotFound
        from ..teaching import learning_path

        try:
            return learning_path(self.chunks, target)
        except KeyError:
            raise PageNotFound(target) from None

    # -- a query ------------------------------------------------------------------------------

    def search(self, query: str, k: int = 5, type=None, category=None, material=None, level=None,
               mode: str = "hybrid", min_similarity: float | None = None, dense_source=None,
               min_relevance: float | None = None, version=None, language=None) -> list[SearchResult]:
        """Best `k` results. `dense_source(qvec, filters)` may supply the dense channel ({row: cosine})
        from another store (the database); None from it means: use the local FAISS index.
        `min_relevance` drops results whose relevance is lower (an off-topic query then gets []).
        `version`, `language`: the site's facets; left out, ranking/facets.py's defaults (the newest version)."""
        prepared = self.prepared(query, k, mode, type=type, category=category, material=material, level=level,
                                 version=version, language=language)
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
        filters = default_facets(self.filters.resolve_all(**filters), query, self.artifacts.versions,
                                 self.artifacts.languages)
        if not query or not len(self.artifacts) or k < 1:
            return None
        qvec = self.analyser.embed(query) if mode != "lexical" else None
        return query, filters, qvec, mode if qvec is not None else "lexical"

    def rank(self, query: str, qvec: np.ndarray | None, k: int, filters: dict, mode: str = "hybrid",
             min_similarity: float | None = None, dense: dict[int, float] | None = None,
             source: str = "artifacts", min_relevance: float | None = None) -> list[SearchResult]:
        """The ranker over this set's channels for one prepared query. `dense` ({row: cosine}) replaces
        the local FAISS channel when another store (the database) supplied it."""
        allowed = self.columns.allowed(filters)
        if allowed is not None and not allowed.any():
            return []
        fields = self.analyser.fields(query)
        channels = {}
        if mode in ("hybrid", "dense"):
            channels["dense"] = dense if dense is not None else self.channels.dense(qvec, allowed)
        if mode in ("hybrid", "lexical"):
            channels["lexical"] = self.channels.lexical(fields, allowed)
        return self.ranker.rank(query, qvec, fields, channels, k, filters, min_similarity, min_relevance, source)
