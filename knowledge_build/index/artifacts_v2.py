"""Schema 2 of the artifact set: files a loader maps instead of parsing.

Layout of `<site output>/knowledge/v2/`:
  manifest.json              schema version 2, build id, embedder, dense index, counts, sha256 + size per file
  knowledge_chunks.jsonl     one chunk per line (compact JSON, sorted by id; the v1 chunk fields)
  rows.npy                   per chunk: its line's offset and the codes of type, level, material, category
                             and concept group (index_rows.ROW_DTYPE); columns.json holds what codes stand for
  columns.json               the values behind the codes (material: [name, page title])
  vectors.faiss              fp16 vectors in FAISS: IndexScalarQuantizer (exact) or IndexIVFScalarQuantizer
                             (inverted lists, approximate, above a size)
  lexical_*.npy, lexical_vocab.bin   the postings (postings.py): sorted vocabulary and its offsets, per token
                             the rows and term frequencies, per row and field the length, per token the
                             document frequency among the anchored boxes
Same input gives byte-identical files: sorted keys, fixed dtypes, IVF lists trained on one thread.
"""

from __future__ import annotations

import hashlib
import io
import logging
from pathlib import Path

import numpy as np

from .artifacts import ArtifactSet, checked_vectors, dumps, finish_set
from .layout import V2_CHUNKS as CHUNKS
from .layout import V2_COLUMNS as COLUMNS
from .layout import V2_LEXICAL_FILES as LEXICAL_FILES
from .layout import V2_ROWS as ROWS
from .layout import V2_SCHEMA_VERSION as SCHEMA_VERSION
from .layout import V2_VECTORS as VECTORS
from .rows import ROW_DTYPE, Columns, chunk_line

# The dense index: exact up to this many rows, IVF above (settings dense_index, exact_max_rows).
EXACT_MAX_ROWS = 50_000
log = logging.getLogger("knowledge_build.artifacts")


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def dense_kind(rows: int, dense_index: str = "auto", exact_max_rows: int = EXACT_MAX_ROWS) -> str:
    if dense_index in ("exact", "ivf"):
        return dense_index
    return "ivf" if rows > exact_max_rows else "exact"


def ivf_shape(rows: int) -> tuple[int, int]:
    """(lists, lists probed per query): 4 sqrt(n) lists (at least 39 rows each, so k-means has the
    points it wants), an eighth of them probed (at least 8): recall@10 0.993 against exact on the
    synthetic 100,000-chunk site (docs/benchmarks.md)."""
    lists = max(1, min(int(round(4 * rows ** 0.5)), rows // 39))
    return lists, min(lists, max(8, lists // 8))


def vectors_file(vectors: np.ndarray, kind: str, cache_dir: Path | None = None) -> bytes:
    """The FAISS index of fp16 vectors: exact, or inverted lists over them (k-means trained on one
    thread, so the same vectors give the same bytes; kept in `cache_dir` by a digest of the vectors, so
    a rebuild with unchanged vectors does not train again)."""
    import faiss

    rows, dim = vectors.shape
    fp16 = faiss.ScalarQuantizer.QT_fp16
    if kind == "exact":
        index = faiss.IndexScalarQuantizer(dim, fp16, faiss.METRIC_INNER_PRODUCT)
        index.add(vectors)
        return faiss.serialize_index(index).tobytes()
    lists, probes = ivf_shape(rows)
    recipe = f"ivf-fp16/{dim}/{lists}/{probes}/{faiss.__version__}".encode()
    cached = Path(cache_dir) / "ivf" / f"{hashlib.sha256(vectors.tobytes() + recipe).hexdigest()}.faiss" \
        if cache_dir is not None else None
    if cached is not None and cached.is_file():
        data = cached.read_bytes()
        if hashlib.sha256(data[:-32]).digest() == data[-32:]:
            return data[:-32]
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFScalarQuantizer(quantizer, dim, lists, fp16, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = 1234
        index.train(vectors)
        index.add(vectors)
        index.make_direct_map()  # row -> vector, for a result's cosine and filtered exact scoring
        index.nprobe = probes
        data = faiss.serialize_index(index).tobytes()
    finally:
        faiss.omp_set_num_threads(threads)
    if cached is not None:
        from ..fsutil import atomic_write

        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(cached, data + hashlib.sha256(data).digest())
        except OSError as exc:  # the cache only saves time
            log.warning("could not keep the IVF index in %s (%s); the next build trains it again", cached, exc)
    return data


def stored_norms(vectors: np.ndarray, block: int = 8192) -> np.ndarray:
    """Each vector's length as FAISS's fp16 codes hold it (IEEE half, round to nearest even, as numpy),
    so that search can divide inner products into cosines as the database computes them."""
    norms = np.ones(len(vectors), dtype=np.float32)
    for start in range(0, len(vectors), block):
        part = vectors[start:start + block].astype(np.float16).astype(np.float32)
        norms[start:start + block] = np.linalg.norm(part, axis=1)
    norms[norms == 0] = 1.0  # a zero vector (an embedder's answer to an empty text) scores 0 either way
    return norms


def assemble(chunks, vectors: np.ndarray, postings, analyzer: str, embedder_info: dict, site_info: dict,
             dense_index: str = "auto", exact_max_rows: int = EXACT_MAX_ROWS, cache_dir: Path | None = None,
             columns: Columns | None = None, extra_files: dict[str, bytes] | None = None) -> ArtifactSet:
    """Every file of a v2 set, in memory. Refuses NaN or infinite vectors (naming the chunk).
    `extra_files`: more files of the set (the search box's bundle), listed in the manifest like the rest."""
    vectors = checked_vectors(chunks, vectors, embedder_info["dim"])
    columns = columns or Columns.from_chunks(chunks)
    lines = [chunk_line(c) for c in chunks]
    rows = np.zeros(len(chunks), dtype=ROW_DTYPE)
    if lines:
        rows["offset"][1:] = np.cumsum([len(line) for line in lines[:-1]])
    for name in ("type", "level", "material", "category"):
        rows[name] = columns.codes[name]
    rows["concept"] = columns.concept
    kind = dense_kind(len(chunks), dense_index, exact_max_rows)
    rows["norm"] = stored_norms(vectors)
    files = {CHUNKS: b"".join(lines), ROWS: npy_bytes(rows), COLUMNS: dumps(columns.to_json()),
             VECTORS: vectors_file(vectors, kind, cache_dir)}
    files.update(lexical_files(postings))
    files.update(extra_files or {})
    dense = {"index": kind, "dtype": "float16"}
    if kind == "ivf":
        dense["lists"], dense["probes"] = ivf_shape(len(chunks))
    lexical = {"analyzer": analyzer, "fields": list(postings.fields), "tokens": len(postings),
               "postings": int(len(postings.rows))}
    return finish_set(files, chunks, SCHEMA_VERSION, embedder_info, site_info, dense=dense, lexical=lexical)


def lexical_files(postings) -> dict[str, bytes]:
    arrays = {"offsets": np.asarray(postings.offsets, dtype="<i8"), "indptr": np.asarray(postings.indptr, dtype="<i8"),
              "rows": np.asarray(postings.rows, dtype="<i4"), "tf": np.asarray(postings.tf, dtype="<u2"),
              "lengths": np.asarray(postings.lengths, dtype="<i4"), "df_ref": np.asarray(postings.df_ref, dtype="<i4")}
    files = {LEXICAL_FILES[name]: npy_bytes(array) for name, array in arrays.items()}
    files[LEXICAL_FILES["vocab"]] = bytes(postings.vocab)
    return files
