"""knowledge-build: anchored knowledge chunks, embeddings and offline search artifacts
for a static teaching-material site.

The public API. The CLI, the MCP server, the Jekyll plugin and the tests use only this.
Names are imported on first use (PEP 562), so `knowledge-build --help` loads none of numpy,
lxml, yaml, faiss or the model.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "Answer": "serve.answer", "ChatFailed": "serve.answer", "ask": "serve.answer",
    "ArtifactSet": "index.artifacts", "read_artifacts": "index.verify",
    "Chunk": "model",
    "Config": "config", "index_dir": "config", "load_config": "config",
    "Diagnostic": "diagnostics",
    "Embedder": "embed", "get_embedder": "embed",
    "ArtifactError": "errors", "BuildFailed": "errors", "ChecksumMismatch": "errors", "ChunkNotFound": "errors",
    "ConfigError": "errors", "CountMismatch": "errors", "DimensionMismatch": "errors",
    "EmbedderMismatch": "errors", "InputTooLarge": "errors", "KnowledgeBuildError": "errors",
    "PageNotFound": "errors", "QueryTooLong": "errors", "SiteNotFound": "errors", "UnknownFilterValue": "errors",
    "BuildResult": "pipeline", "Extraction": "pipeline", "build": "pipeline", "extract": "pipeline",
    "SearchSettings": "ranking.settings",
    "KnowledgeIndex": "search.knowledge_index", "SearchResult": "search.ranker",
    "CircuitBreaker": "serve.service", "SearchService": "serve.service", "open_search": "serve.service",
    "NoteStore": "store.notes",
    "LearningPath": "teaching",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'knowledge_build' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__():
    return __all__
