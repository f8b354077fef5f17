"""knowledge-build: anchored knowledge chunks, embeddings and offline search artifacts
for a static teaching-material site.

The public API. The CLI, the MCP server, the Jekyll plugin and the tests use only this.
"""

__version__ = "0.1.0"

from .artifacts import ArtifactSet, read_artifacts  # noqa: E402
from .chunks import Chunk  # noqa: E402
from .config import Config, load_config  # noqa: E402
from .diagnostics import Diagnostic  # noqa: E402
from .embed import Embedder, get_embedder  # noqa: E402
from .errors import (ArtifactError, BuildFailed, ChecksumMismatch, ChunkNotFound,  # noqa: E402
                     ConfigError, CountMismatch, DimensionMismatch, EmbedderMismatch,
                     InputTooLarge, KnowledgeBuildError, QueryTooLong, SiteNotFound)
from .pipeline import BuildResult, Extraction, build, extract  # noqa: E402
from .ranking import SearchSettings  # noqa: E402
from .search import KnowledgeIndex, SearchResult  # noqa: E402
from .service import CircuitBreaker, SearchService  # noqa: E402
from .store.notes import NoteStore  # noqa: E402

__all__ = [
    "ArtifactError",
    "ArtifactSet",
    "BuildFailed",
    "BuildResult",
    "ChecksumMismatch",
    "Chunk",
    "ChunkNotFound",
    "CircuitBreaker",
    "Config",
    "ConfigError",
    "CountMismatch",
    "Diagnostic",
    "DimensionMismatch",
    "Embedder",
    "EmbedderMismatch",
    "Extraction",
    "InputTooLarge",
    "KnowledgeBuildError",
    "KnowledgeIndex",
    "NoteStore",
    "QueryTooLong",
    "SearchResult",
    "SearchService",
    "SearchSettings",
    "SiteNotFound",
    "__version__",
    "build",
    "extract",
    "get_embedder",
    "load_config",
    "read_artifacts",
]
