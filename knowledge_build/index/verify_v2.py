"""Opening and verifying a schema 2 set (artifacts_v2.py) without reading every byte on each open.

What an open checks, always (milliseconds at 100,000 chunks): the manifest (size, JSON, JSON Schema,
build id recomputed from the checksums), every file's size against the manifest (stat, before
anything is read), every array's header (dtype and shape against the counts), the ends of the
offsets and postings pointers, the row codes against `columns.json` (2 MB at 100,000 chunks), and
the FAISS header (type, metric, dimension, rows), read memory-mapped.

What it trusts: that a file of exactly the size the manifest records, with the header it records,
holds the bytes the build wrote and checksummed. Truncation, a partial copy, a file from another
build, or a different count are refused; a same-size change inside a large file (a flipped bit) is
not seen until `validate`, which, like the build and every open of a set up to FULL_CHECK_BYTES,
verifies in full: each file's sha256, every chunk's fields, the counts, the columns against the
chunks, finite vectors, and postings within bounds and ascending.
"""

from __future__ import annotations

import hashlib
import json
import mmap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ArtifactUnreadable, ChecksumMismatch, CountMismatch, DimensionMismatch
from .layout import V2_CHUNKS as CHUNKS
from .layout import V2_COLUMNS as COLUMNS
from .layout import V2_CONTENT_FILES as CONTENT_FILES
from .layout import V2_LEXICAL_FILES as LEXICAL_FILES
from .layout import V2_ROWS as ROWS
from .layout import V2_VECTORS as VECTORS
from .rows import COLUMN_NAMES, FACETS, ROW_DTYPE, ChunkRecords, Columns, concept_groups

# A set whose files total at most this is verified in full on every open (sha256 of 32 MiB takes
# about 0.05 s); larger ones at build and by `validate`.
FULL_CHECK_BYTES = 32 << 20
_FAISS_TYPES = {"exact": "IndexScalarQuantizer", "ivf": "IndexIVFScalarQuantizer"}


@dataclass
class OpenedV2:
    chunks: ChunkRecords
    columns: Columns
    index: object  # faiss index, memory-mapped
    postings: object  # postings.Postings over mapped arrays
    checked_in_full: bool


def open_set(path: Path, manifest: dict, full: bool | None = None) -> OpenedV2:
    """Open the files of the set at `path` whose manifest is already checked (verify.py). `full`:
    verify every byte (None: only when the set is small)."""
    from .postings import Postings

    entries = manifest["files"]
    for name in CONTENT_FILES:
        _check_size(path, name, entries)
    # validate and publish (full=True) also check the files the loader does not read: the search box's bundle.
    others = sorted(set(entries) - set(CONTENT_FILES)) if full is True else []
    if full is None:
        full = sum(entries[name]["size"] for name in CONTENT_FILES) <= FULL_CHECK_BYTES
    if full:
        check_checksums(path, manifest)
    for name in others:
        if not isinstance(name, str) or name != Path(name).name or name.startswith("."):
            raise ChecksumMismatch(path, str(name), "not a file name of an artifact set")
        _check_size(path, name, entries)
        _check_sha256(path, name, entries[name]["sha256"])
    n, dim = manifest["counts"]["chunks"], manifest["embedder"]["dim"]
    lex = manifest["lexical"]
    fields, tokens, postings_count = tuple(lex["fields"]), lex["tokens"], lex["postings"]
    rows = _array(path, ROWS, ROW_DTYPE, (n,))
    columns = _columns(path, rows, n)
    data = _mapped(path, CHUNKS)
    if n and (int(rows["offset"][0]) != 0 or np.any(np.diff(rows["offset"].astype(np.int64)) <= 0)
              or int(rows["offset"][-1]) >= len(data)):
        raise ArtifactUnreadable(path, ROWS, "chunk offsets do not ascend within knowledge_chunks.jsonl")
    chunks = ChunkRecords(data, rows["offset"], path=path)
    arrays = {
        "offsets": _array(path, LEXICAL_FILES["offsets"], np.dtype("<i8"), (tokens + 1,)),
        "indptr": _array(path, LEXICAL_FILES["indptr"], np.dtype("<i8"), (tokens + 1,)),
        "rows": _array(path, LEXICAL_FILES["rows"], np.dtype("<i4"), (postings_count,)),
        "tf": _array(path, LEXICAL_FILES["tf"], np.dtype("<u2"), (postings_count,)),
        "lengths": _array(path, LEXICAL_FILES["lengths"], np.dtype("<i4"), (len(fields), n)),
        "df_ref": _array(path, LEXICAL_FILES["df_ref"], np.dtype("<i4"), (tokens,)),
    }
    vocab = _mapped(path, LEXICAL_FILES["vocab"])
    for name, end in (("offsets", len(vocab)), ("indptr", postings_count)):
        if int(arrays[name][0]) != 0 or int(arrays[name][-1]) != end:
            raise ArtifactUnreadable(path, LEXICAL_FILES[name], f"does not span 0..{end}")
    postings = Postings(fields, vocab, arrays["offsets"], arrays["indptr"], arrays["rows"], arrays["tf"],
                        arrays["lengths"], arrays["df_ref"], ~columns.parts)
    index = _faiss(path, manifest, n, dim)
    opened = OpenedV2(chunks, columns, index, postings, full)
    if full:
        check_contents(path, manifest, opened)
    return opened


def check_checksums(path: Path, manifest: dict) -> None:
    """Every byte of the content files against the manifest's sha256 (0.6 s at 100,000 chunks)."""
    for name in CONTENT_FILES:
        _check_sha256(path, name, manifest["files"][name]["sha256"])


def _check_size(path: Path, name: str, entries: dict) -> None:
    from .files import check_size as check

    if name not in entries:
        raise ChecksumMismatch(path, name, "not listed in the manifest")
    check(path, name, entries[name]["size"])


def _check_sha256(path: Path, name: str, expected: str) -> None:
    digest = hashlib.sha256()
    try:
        with open(path / name, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
    except OSError as exc:
        raise ArtifactUnreadable(path, name, exc.strerror or exc) from exc
    if digest.hexdigest() != expected:
        raise ChecksumMismatch(path, name, "sha256 differs")


def _mapped(path: Path, name: str):
    """The file's bytes, memory-mapped (an empty file: b"")."""
    try:
        with open(path / name, "rb") as handle:
            if not handle.seek(0, 2):
                return b""
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        raise ArtifactUnreadable(path, name, getattr(exc, "strerror", None) or exc) from exc


def _array(path: Path, name: str, dtype: np.dtype, shape: tuple) -> np.ndarray:
    """A .npy file memory-mapped, refused unless its header says exactly `dtype` and `shape`."""
    try:
        array = np.load(path / name, mmap_mode="r", allow_pickle=False) if (path / name).stat().st_size else None
    except (OSError, ValueError, EOFError) as exc:
        raise ArtifactUnreadable(path, name, f"not a NumPy array file ({str(exc)[:80]})") from exc
    if array is None or array.dtype != dtype or array.shape != shape:
        found = "nothing" if array is None else f"{_kind(array.dtype)} of shape {array.shape}"
        raise ArtifactUnreadable(path, name, f"holds {found}, the manifest's counts need {_kind(dtype)} of shape {shape}")
    return array.view(np.ndarray)  # the same mapped bytes; np.memmap's slicing costs a Python call each


def _kind(dtype: np.dtype) -> str:
    return "chunk rows" if dtype.names else str(dtype)


def _columns(path: Path, rows: np.ndarray, n: int) -> Columns:
    from .files import read_bounded

    try:
        data = json.loads(read_bounded(path / COLUMNS, path, COLUMNS, 64 << 20))
    except (ValueError, RecursionError) as exc:
        raise ArtifactUnreadable(path, COLUMNS, f"not valid JSON ({str(exc)[:80]})") from exc
    lists = {name: data.get(name) if isinstance(data, dict) else None for name in ("type", "level", "category")}
    materials = data.get("material") if isinstance(data, dict) else None
    if not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in lists.values()) \
            or not isinstance(materials, list) \
            or not all(isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m) for m in materials):
        raise ArtifactUnreadable(path, COLUMNS, 'expected {"type", "level", "category": [str], "material": [[name, title]]}')
    values = {**lists, "material": [m for m, _ in materials]}
    codes = {name: rows[name] for name in COLUMN_NAMES}
    for name in COLUMN_NAMES:
        if n and int(codes[name].max()) >= len(values[name]):
            raise ArtifactUnreadable(path, ROWS, f"a {name} code has no value in {COLUMNS}")
    if n and int(rows["concept"].min()) < -1:
        raise ArtifactUnreadable(path, ROWS, "a concept code is below -1")
    facets = {name: data.get(name) for name in FACETS if name in data}
    for name, per_material in facets.items():
        if not isinstance(per_material, list) or len(per_material) != len(materials) \
                or not all(isinstance(v, str) for v in per_material):
            raise ArtifactUnreadable(path, COLUMNS, f'"{name}" is not one string per material')
    norms = rows["norm"]
    if n and not (np.all(np.isfinite(norms)) and float(norms.min()) > 0 and float(norms.max()) < 2.0):
        raise ArtifactUnreadable(path, ROWS, "a stored vector length is not in (0, 2) (the vectors are unit length)")
    return Columns(codes, values, [t for _, t in materials], rows["concept"], norms, facets)


def _faiss(path: Path, manifest: dict, n: int, dim: int):
    import faiss

    kind = manifest["dense"]["index"]
    try:
        index = faiss.read_index(str(path / VECTORS), faiss.IO_FLAG_MMAP_IFC)
    except RuntimeError as exc:
        raise ArtifactUnreadable(path, VECTORS, f"FAISS cannot read it: {str(exc).splitlines()[-1][:120]}") from exc
    if type(index).__name__ != _FAISS_TYPES.get(kind) or index.metric_type != faiss.METRIC_INNER_PRODUCT:
        raise ArtifactUnreadable(path, VECTORS, f"a {type(index).__name__}, not the {_FAISS_TYPES.get(kind)} "
                                                f"(inner product) the manifest's dense index {kind!r} needs")
    if index.d != dim:
        raise DimensionMismatch(path, dim, index.d, VECTORS)
    if index.ntotal != n:
        raise CountMismatch(path, VECTORS, n, index.ntotal)
    if kind == "ivf":  # read_index already gives the subclass (a downcast would be a view it does not own)
        lists = manifest["dense"].get("lists")
        if index.nlist != lists or index.direct_map.type == faiss.DirectMap.NoMap:
            raise ArtifactUnreadable(path, VECTORS, f"{index.nlist} inverted lists (the manifest says {lists}), "
                                                    "or no map from rows to vectors")
        index.nprobe = int(manifest["dense"].get("probes") or index.nprobe)
    return index


def check_contents(path: Path, manifest: dict, opened: OpenedV2) -> None:
    """Everything the cheap open trusts: chunks, counts, columns, vectors, postings."""
    from ..model import Chunk

    chunks, columns, index, postings = opened.chunks, opened.columns, opened.index, opened.postings
    from .files import check_counts, chunk_shape_problem

    try:
        raw = [chunks.raw(row) for row in range(len(chunks))]
    except (ValueError, RecursionError) as exc:
        raise ArtifactUnreadable(path, CHUNKS, f"a line is not valid JSON ({str(exc)[:80]})") from exc
    problem = chunk_shape_problem(raw)
    if problem:
        raise ArtifactUnreadable(path, CHUNKS, problem)
    check_counts(path, manifest["counts"], raw)
    expected = Columns.from_chunks([Chunk.from_dict(c) for c in raw])
    for name in COLUMN_NAMES:
        if [columns.values[name][c] for c in columns.codes[name]] != [expected.values[name][c] for c in expected.codes[name]]:
            raise ArtifactUnreadable(path, ROWS, f"the {name} codes differ from the chunks")
    if not np.array_equal(np.asarray(columns.concept), concept_groups([Chunk.from_dict(c) for c in raw])):
        raise ArtifactUnreadable(path, ROWS, "the concept groups differ from the chunks")
    for start in range(0, len(raw), 8192):
        block = index.reconstruct_n(start, min(8192, len(raw) - start))
        bad = np.flatnonzero(~np.isfinite(block).all(axis=1))
        if bad.size:
            row = start + int(bad[0])
            raise ArtifactUnreadable(path, VECTORS, f"row {row} ({raw[row]['id']}) holds NaN or infinite values")
    _check_postings(path, postings, len(raw))


def _check_postings(path: Path, postings, n: int) -> None:
    indptr = np.asarray(postings.indptr)
    rows, tf = np.asarray(postings.rows), np.asarray(postings.tf)
    if np.any(np.diff(indptr) < 1):
        raise ArtifactUnreadable(path, LEXICAL_FILES["indptr"], "a token has no postings")
    if rows.size and (rows.min() < 0 or rows.max() >= n):
        raise ArtifactUnreadable(path, LEXICAL_FILES["rows"], f"a row number outside 0..{n - 1}")
    step = np.diff(rows.astype(np.int64))
    step[indptr[1:-1] - 1] = 1  # where one token's list ends and the next begins
    if np.any(step <= 0):
        raise ArtifactUnreadable(path, LEXICAL_FILES["rows"], "a posting list does not ascend")
    if tf.size and tf.min() < 1:
        raise ArtifactUnreadable(path, LEXICAL_FILES["tf"], "a term frequency of 0")
    if np.asarray(postings.lengths).size and np.asarray(postings.lengths).min() < 1:
        raise ArtifactUnreadable(path, LEXICAL_FILES["lengths"], "a row length below 1")
    offsets = np.asarray(postings.offsets)
    keys = [bytes(postings.vocab[offsets[i]:offsets[i + 1]]) for i in range(len(offsets) - 1)]
    if any(a >= b for a, b in zip(keys, keys[1:])):
        raise ArtifactUnreadable(path, LEXICAL_FILES["vocab"], "the vocabulary is not sorted and unique")
    if np.any(np.asarray(postings.df_ref) > np.diff(indptr)) or np.any(np.asarray(postings.df_ref) < 0):
        raise ArtifactUnreadable(path, LEXICAL_FILES["df_ref"], "a document frequency outside its posting list")
    for key in keys:
        try:
            key.decode("utf-8")
        except UnicodeDecodeError:
            raise ArtifactUnreadable(path, LEXICAL_FILES["vocab"], "a token is not UTF-8") from None
