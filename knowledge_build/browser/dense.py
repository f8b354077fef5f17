"""The search box's dense channel: meaning without a model in the browser (docs/retrieval.md, "Meaning in the
box without a model").

At build time, with the set's own embedder (through the vector cache, so a rebuild embeds only new texts):
- each piece of the box's vocabulary (the terms a query is cut into, analysis.py) is embedded alone as a query;
  the pieces' vectors, centred, are the static table;
- a text's static vector is the idf-weighted mean of its pieces' rows;
- a linear map (ridge, centred) from a text's static vector to the embedder's own query vector of that text, in the
  chunks' first DIMS principal axes, is fitted on the site's own short texts (titles, page title and title, what a
  box teaches, the start of each excerpt, the first sentences of its content: no question, no label);
- the map is applied to every piece's row once, so the browser's query vector is the weighted mean of its pieces'
  mapped rows minus one offset: exact, as the map is linear, and DIMS numbers a piece instead of the embedder's.
The chunks' vectors are projected on the same axes, each projection at unit length, and stored as 2-bit codes, each axis's four levels
(LEVELS × that axis's spread over the chunks: the optimal quantiser of a normal distribution), so a first query
reads every chunk's code (32 bytes a chunk at 128 axes) and ranks them all exactly as the browser does.

Files (bundle.py lists them in the entry point like the others):
  knowledge-search-v<hash>.bin   piece shards: per piece, sorted: varint len, term (UTF-8), float32 weight (idf),
                                 float32 scale, DIMS / 2 bytes: axis 2j in the low 4 bits of byte j, axis 2j + 1 in
                                 the high, each a signed 4-bit number -7..7 (its mapped row = scale × those);
                                 filed by the FNV-1a of the whole term
  knowledge-search-k<hash>.bin   float32 × DIMS offset, then float32 × DIMS each axis's spread
  knowledge-search-c<hash>.bin   CODE_ROWS consecutive rows' codes (the last file fewer): per row DIMS / 4 bytes,
                                 axis 4j + i in bits 2i..2i+1 of byte j, the level's number (0..3, LEVELS);
                                 on a site of more than MAX_ROWS chunks, one file per cluster (below): varint n, n
                                 varint row deltas (the first from row 0), then the n rows' codes
  knowledge-search-g<hash>.bin   on a site of more than MAX_ROWS chunks: every cluster's centre as a code, in the
                                 order of the cluster files
On a site of more than MAX_ROWS chunks the codes are in clusters (k-means over the codes, CLUSTER_ROWS rows each
on average): a query scores the centres as it scores rows, and reads the rows of its `probe` best clusters only,
so a first query reads about 8 KB of centres and `probe` files of about 12 KB instead of every chunk's code.
All little-endian. A query's dense score of a row is Σ_axis LEVELS[code] × spread × (Σ weight × row / Σ weight −
offset)[axis], summed a byte (four axes) at a time in order.
"""

from __future__ import annotations

import hashlib
import math
import re
import struct
from dataclasses import dataclass

import numpy as np

from .binary import put_rows, put_text, shards

DIMS = 128  # principal axes of the chunks' vectors a code and a mapped piece keep (docs/retrieval.md)
RIDGE = 0.01  # the map's ridge (0.1 to 30 measured worse)
# The map's training texts at most (the reference corpus has 11,105), chosen by their hashes so that a page more or
# less changes few of them; 2,048 to 8,192 of the corpus's measured worse on its kana and romaji questions.
MAX_TRAINING_TEXTS = 16_384
SENTENCES = 3  # first sentences of each chunk's content among the map's training texts
LEVELS = (-1.510, -0.4528, 0.4528, 1.510)  # Lloyd-Max levels of a unit normal at 2 bits (thresholds 0, ±0.9816)
THRESHOLD = 0.9816
# A first query reads every chunk's code (32 bytes) up to this many chunks (512 KB of codes); above, the codes are in
# clusters, of which a query reads its PROBE best.
MAX_ROWS = 16_384
CODE_ROWS = 512  # rows per code file (16 KB at 128 axes)
CLUSTER_ROWS = 384  # rows per cluster on average, above MAX_ROWS (a cluster's file: about 13 KB)
PROBE = 8  # clusters a query reads (about 100 KB)
MAX_CLUSTERS = 1024  # cluster files at most (the manifest lists each)
KMEANS_ROUNDS = 8
PIECE_SHARD_BYTES = 1024  # a piece shard's mean size (a query fetches one per piece it holds), at most MAX_PIECE_SHARDS
MAX_PIECE_SHARDS = 1024
MAX_DIMS = 1024
QUERY_HASH = "box-query\x1f"  # the vector cache's key of a text embedded as a query (chunks are keyed by content)


@dataclass
class DenseTables:
    """What the box's dense channel ships: mapped pieces, every chunk's code, the offset and the axes' spreads."""

    dims: int
    pieces: dict[str, tuple[float, float, bytes]]  # term -> (weight, scale, its 4-bit row packed)
    offset: np.ndarray  # (dims,) float32
    spread: np.ndarray  # (dims,) float32
    codes: np.ndarray  # (rows, dims) uint8 level numbers, 0..3

    def files(self) -> tuple[dict, list[bytes], list[bytes], bytes, bytes | None]:
        """(entry's "dense" without digests, piece shard bytes, code file bytes, the offset file's bytes, the
        centres' file's bytes or None when every row's code is read)."""
        from ..ranking.settings import SearchSettings

        encoded = {}
        for term in sorted(self.pieces):
            weight, scale, row = self.pieces[term]
            data = bytearray()
            put_text(term, data)
            encoded[term] = bytes(data) + struct.pack("<ff", weight, scale) + row
        pieces = shards(encoded, lambda term: term, PIECE_SHARD_BYTES, MAX_PIECE_SHARDS)
        packed = _packed(self.codes)
        settings = SearchSettings()  # the CLI's fusion: its depth and channel weights
        entry = {"dims": self.dims, "levels": list(LEVELS), "candidates": settings.candidates,
                 "fusion": settings.fusion, "rrf_k": settings.rrf_k,
                 "weights": {k: settings.channel_weights[k] for k in ("lexical", "dense")}, "rows": CODE_ROWS}
        offset = self.offset.astype("<f4").tobytes() + self.spread.astype("<f4").tobytes()
        if len(self.codes) <= MAX_ROWS:
            codes = [packed[start:start + CODE_ROWS].tobytes() for start in range(0, len(packed), CODE_ROWS)]
            return entry, pieces, codes, offset, None
        centres, members = clusters(self.codes, min(MAX_CLUSTERS, -(-len(self.codes) // CLUSTER_ROWS)))
        codes = []
        for rows in members:
            data = bytearray()
            put_rows(rows, data)
            codes.append(bytes(data) + packed[rows].tobytes())
        entry["probe"] = min(PROBE, len(members))
        return entry, pieces, codes, offset, _packed(centres).tobytes()


def _packed(codes: np.ndarray) -> np.ndarray:
    """Level numbers (rows, dims) four to a byte: axis 4j + i in bits 2i..2i+1 of byte j."""
    packed = np.zeros((len(codes), codes.shape[1] // 4), np.uint8)
    for i in range(4):
        packed |= (codes[:, i::4] << (2 * i)).astype(np.uint8)
    return packed


def clusters(codes: np.ndarray, count: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """(the centres' codes, each cluster's rows in order) of k-means over the rows' codes: KMEANS_ROUNDS rounds from
    `count` rows spread evenly, a row to the nearest centre (the first of equals) in the levels' values times two
    (odd integers, so every distance is exact whatever BLAS does), a centre the mean of its rows (kept when it has
    none); a centre's code is the mean of its rows' levels, each axis over its spread among the centres, quantised
    as a row's. Clusters left with no row are dropped."""
    values = (2 * codes.astype(np.float64) - 3)  # 0..3 -> -3, -1, 1, 3: LEVELS' order and signs
    centres = values[np.linspace(0, len(values) - 1, count).astype(np.int64)]
    for _ in range(KMEANS_ROUNDS + 1):
        scaled = np.rint(centres * 64)  # integers: exact products
        norms = (scaled * scaled).sum(axis=1)[None, :] / 64
        near = np.empty(len(values), np.int64)
        for start in range(0, len(values), 8192):
            part = values[start:start + 8192]
            distance = norms - 2 * (part @ scaled.T)
            near[start:start + 8192] = distance.argmin(axis=1)
        sums = np.zeros_like(centres)
        np.add.at(sums, near, values)
        sizes = np.bincount(near, minlength=count)
        centres = np.where(sizes[:, None] > 0, sums / np.maximum(sizes, 1)[:, None], centres)
    kept = np.flatnonzero(sizes)
    members = [np.flatnonzero(near == c) for c in kept]  # rows in order
    means = np.zeros((count, codes.shape[1]))
    np.add.at(means, near, np.asarray(LEVELS)[codes])  # the rows' own levels, not their ranks
    means = means[kept] / sizes[kept, None]
    z = means / np.maximum(means.std(axis=0), 1e-12)  # each axis at its spread over the centres, as the rows'
    return np.where(z < 0, np.where(z < -THRESHOLD, 0, 1), np.where(z > THRESHOLD, 3, 2)).astype(np.uint8), members


def _int8(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(per-row float32 scale, int8 rows): row ≈ scale × int8."""
    matrix = np.asarray(matrix, np.float32)
    scales = (np.abs(matrix).max(axis=1) / 127).astype(np.float32) if len(matrix) else np.zeros(0, np.float32)
    safe = np.where(scales > 0, scales, 1).astype(np.float32)
    return scales, np.clip(np.rint(matrix / safe[:, None]), -127, 127).astype(np.int8)


def readable(term: str) -> str:
    """A folded term as the embedder reads text: okurigana back in hiragana when the term has kanji (解キ -> 解き)."""
    if any("\u4e00" <= c <= "\u9fff" for c in term):
        return "".join(chr(ord(c) - 0x60) if "\u30a1" <= c <= "\u30f6" else c for c in term)
    return term


_TEX = re.compile(r"\\\[.*?\\\]|\\\(.*?\\\)", re.S)


def training_texts(chunk, sentences: int = SENTENCES) -> list[str]:
    """The texts of a chunk the map is fitted on: its titles, what it teaches, the start of its excerpt and the
    first `sentences` sentences of its content (10 to 80 characters each, TeX left out)."""
    texts = [chunk.title, f"{chunk.material_title} {chunk.title}", *chunk.learns[:3], chunk.excerpt[:60]]
    plain = _TEX.sub(" ", chunk.content)
    texts += [t for t in re.split(r"[。！？\n]", plain) if 10 <= len(t.strip()) <= 80][:sentences]
    return [t.strip() for t in texts if t and t.strip()]


def query_vectors(embedder, texts: list[str], cache, progress: bool = False, stage: str = "embedding") -> np.ndarray:
    """The embedder's query vectors of `texts`, through the vector cache (embed/runner.py)."""
    from ..embed.runner import embed_rows

    out = np.zeros((len(texts), embedder.dim), np.float32)
    hashes = [hashlib.sha256((QUERY_HASH + t).encode("utf-8")).hexdigest() for t in texts]
    embed_rows(_AsQueries(embedder), hashes, lambda row: texts[row], out, cache, None, progress, stage, "text")
    return out


class _AsQueries:
    """An embedder whose batches are embedded as queries (the cache keys them apart by QUERY_HASH)."""

    def __init__(self, embedder):
        self.inner = embedder
        for name in ("provider", "model", "dim", "query_prefix", "passage_prefix"):
            setattr(self, name, getattr(embedder, name))

    def embed_batches(self, texts):
        if hasattr(self.inner, "embed_batches"):  # the embedder's own batches (embed/__init__.py), of queries
            yield from self.inner.embed_batches(texts, kind="query")
            return
        for start in range(0, len(texts), 64):
            part = texts[start:start + 64]
            vectors = np.stack([self.inner.embed_query(t) for t in part])
            yield list(range(start, start + len(part))), np.asarray(vectors, np.float32).reshape(len(part), -1)


# Same input, same bytes, whatever the machine's BLAS does with its threads: every matrix product below is of
# integer-valued float64 matrices small enough that each sum is exact (under 2**53), so its order does not matter;
# the ridge system is solved by a Cholesky written in element-wise steps, and the eigenvectors (LAPACK's, which may
# differ in their last bits) are rounded to GRID before use.
GRID = 2.0 ** -20


def _to_int(matrix: np.ndarray, bits: int) -> tuple[np.ndarray, float]:
    """(integer-valued float64 matrix, its scale): matrix ≈ out / scale, |out| < 2**bits."""
    top = float(np.abs(matrix).max()) if matrix.size else 0.0
    scale = 2.0 ** (bits - 1 - math.frexp(top)[1]) if top > 0 else 1.0
    return np.rint(np.asarray(matrix, np.float64) * scale), scale


def _exact(a: np.ndarray, a_scale: float, b: np.ndarray, b_scale: float) -> np.ndarray:
    """a @ b of two `_to_int` matrices, back in real units: every sum exact (checked), so any BLAS gives the same."""
    bound = a.shape[1] * float(np.abs(a).max(initial=0)) * float(np.abs(b).max(initial=0))
    assert bound < 2.0 ** 53, bound
    return (a @ b) / (a_scale * b_scale)


def _gram(matrix: np.ndarray, other: np.ndarray | None = None) -> np.ndarray:
    """(matrix - its column means)ᵀ (other - its column means), exactly (see GRID), in real units."""
    other = matrix if other is None else other
    bits = (52 - len(matrix).bit_length()) // 2  # each of len(matrix) products under 2**(2 bits): the sum under 2**52
    a, sa = _to_int(matrix, bits)
    b, sb = (a, sa) if other is matrix else _to_int(other, bits)
    sums_a, sums_b = a.sum(axis=0), b.sum(axis=0)  # integers: exact in any order
    return (_exact(a.T, 1.0, b, 1.0) - np.outer(sums_a, sums_b) / len(a)) / (sa * sb)


def _solve_spd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x of a x = b for a symmetric positive definite `a`, by Cholesky in element-wise steps (no BLAS)."""
    n = len(a)
    low = np.zeros_like(a)
    for j in range(n):
        low[j, j] = math.sqrt(a[j, j] - float((low[j, :j] * low[j, :j]).sum()))
        low[j + 1:, j] = (a[j + 1:, j] - (low[j + 1:, :j] * low[j, :j]).sum(axis=1)) / low[j, j]
    y = np.zeros_like(b)
    for j in range(n):
        y[j] = (b[j] - (low[j, :j, None] * y[:j]).sum(axis=0)) / low[j, j]
    x = np.zeros_like(b)
    for j in range(n - 1, -1, -1):
        x[j] = (y[j] - (low[j + 1:, j, None] * x[j + 1:]).sum(axis=0)) / low[j, j]
    return x


def _axes(vectors: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean, the first `dims` principal axes as rows, on GRID), each axis signed so its largest component is
    positive."""
    values, vecs = np.linalg.eigh(_gram(vectors))
    order = np.argsort(-values, kind="stable")[:dims]
    axes = vecs[:, order].T
    signs = np.sign(axes[np.arange(len(axes)), np.abs(axes).argmax(axis=1)])
    return vectors.mean(axis=0, dtype=np.float64), np.rint(axes * signs[:, None] / GRID) * GRID


def _project(vectors: np.ndarray, mean: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """(vectors - mean) on the axes, exactly."""
    a, sa = _to_int(np.asarray(vectors, np.float64) - mean, 15)
    return _exact(a, sa, axes.T / GRID, 1 / GRID)


def _weighted_means(table: np.ndarray, idf: np.ndarray, cut: list[list[int]], block: int = 2048) -> np.ndarray:
    """Per text, the idf-weighted mean of its pieces' rows of `table` (a block of texts at a time)."""
    out = np.zeros((len(cut), table.shape[1]), np.float32)
    for start in range(0, len(cut), block):
        part = cut[start:start + block]
        pieces = np.fromiter((p for c in part for p in c), np.int64)
        sizes = np.fromiter(map(len, part), np.int64)
        weights = idf[pieces]
        sums = np.add.reduceat(weights[:, None] * table[pieces], np.cumsum(sizes) - sizes, axis=0)
        out[start:start + len(part)] = sums / np.add.reduceat(weights, np.cumsum(sizes) - sizes)[:, None]
    return out


def dense_tables(chunks, vectors: np.ndarray, vocabulary: dict[str, int], pieces_of, embedder, cache,
                 progress: bool = False) -> DenseTables | None:
    """The dense channel's tables for `chunks` (row i: vectors[i]); `vocabulary`: the box's terms and the number of
    rows each occurs in; `pieces_of(text)`: the vocabulary terms a query of that text is cut into (the box's
    analysis). None when the site has no chunk or no piece."""
    n = len(chunks)
    if not n or not vocabulary:
        return None
    terms = sorted(vocabulary)
    at = {t: i for i, t in enumerate(terms)}
    idf = np.array([math.log(1 + n / (1 + vocabulary[t])) for t in terms], np.float32)
    table = query_vectors(embedder, [readable(t) for t in terms], cache, progress, "search box pieces")
    table_scales, q_table = _int8(table - table.mean(axis=0))  # the table as stored: int8 rows and their scales
    table = q_table.astype(np.float32) * table_scales[:, None]
    texts = sorted({t for c in chunks for t in training_texts(c)},
                   key=lambda t: hashlib.sha256(t.encode("utf-8")).digest())[:MAX_TRAINING_TEXTS]
    cut = [[at[p] for p in pieces_of(t) if p in at] for t in texts]
    texts, cut = [t for t, c in zip(texts, cut) if c], [c for c in cut if c]
    targets = query_vectors(embedder, texts, cache, progress, "search box texts")
    sources = _weighted_means(table, idf, cut)
    chunk_vectors = np.asarray(vectors, np.float32)
    chunk_vectors = chunk_vectors / np.maximum(np.linalg.norm(chunk_vectors, axis=1, keepdims=True), 1e-12)
    dims = min(DIMS, chunk_vectors.shape[1]) // 4 * 4  # four axes a byte
    mean, axes = _axes(chunk_vectors, dims)
    projected = _project(targets, mean, axes)
    system = _gram(sources) + RIDGE * np.eye(table.shape[1])
    mapping = _solve_spd(system, _gram(sources, projected))
    mapping, map_scale = _to_int(mapping, 24)
    mapped = (q_table.astype(np.float64) @ mapping) * (table_scales.astype(np.float64)[:, None] / map_scale)
    assert q_table.shape[1] * 127 * float(np.abs(mapping).max(initial=0)) < 2.0 ** 53
    scales = (np.abs(mapped).max(axis=1) / 7).astype(np.float32)  # 4 bits an axis: -7..7 × the piece's scale
    q = np.clip(np.rint(mapped / np.where(scales > 0, scales, 1)[:, None]), -7, 7).astype(np.int8)
    nibbles = (q & 0xF).astype(np.uint8)
    packed = nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)
    pieces = {t: (float(idf[i]), float(scales[i]), packed[i].tobytes()) for i, t in enumerate(terms)}
    projected = _project(chunk_vectors, mean, axes)
    # Each chunk's projection at unit length: the score is a cosine, as the CLI's dense channel's (an inner product
    # favoured the chunks far from the rest: short field lists and notes; docs/retrieval.md).
    projected = projected / np.maximum(np.sqrt((projected * projected).sum(axis=1, keepdims=True)), 1e-12)
    spread = np.maximum(projected.std(axis=0), 1e-12).astype(np.float32)
    z = projected / spread
    codes = np.where(z < 0, np.where(z < -THRESHOLD, 0, 1), np.where(z > THRESHOLD, 3, 2)).astype(np.uint8)
    source_mean = sources.mean(axis=0, dtype=np.float64) if len(sources) else np.zeros(table.shape[1])
    offset = (source_mean[:, None] * mapping).sum(axis=0) / map_scale
    return DenseTables(dims, pieces, offset.astype(np.float32), spread, codes)
