"""Is this artifact set usable? One answer, used by search, validate, publish and report.

`verify_set` checks, in an order that never reads more than the manifest promises:
the manifest (size, JSON, JSON Schema, schema version, build id recomputed from the file
checksums), every file's size (stat, before reading; capped), the FAISS header (type,
metric, dimension, row count), then each file's sha256, the chunks (schema, sorted ids,
counts, materials, types), the vectors (finite), the lexical tokens (analyzer, one row per
chunk) and finally the embedder that will embed queries.
"""

from __future__ import annotations

import json
import stat
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import (
    AnalyzerMismatch,
    ArtifactsNotFound,
    ArtifactUnreadable,
    BuildIdMismatch,
    ChecksumMismatch,
    CountMismatch,
    DimensionMismatch,
    EmbedderMismatch,
    EmbedderUnavailable,
    ManifestInvalid,
    SchemaVersionMismatch,
    StaleLatest,
    UnknownEmbedder,
)
from .artifacts import ArtifactSet, build_id_of, sha256
from .files import check_counts, check_size, chunk_shape_problem, clip, read_bounded, schema_problem, short
from .layout import LATEST, MANIFEST, MAX_MANIFEST_BYTES
from .layout import V1_CHUNKS as CHUNKS
from .layout import V1_CONTENT_FILES as CONTENT_FILES
from .layout import V1_LEXICAL as LEXICAL
from .layout import V1_VECTORS as VECTORS

_FAISS_FLAT_IP = b"IxFI"
SCHEMA_VERSIONS = (1, 2)
READABLE = "1 or 2"  # the fourcc FAISS writes for IndexFlatIP


@dataclass
class VerifiedSet:
    path: Path
    manifest: dict
    chunks: list[dict]
    index: object  # faiss.IndexFlatIP
    lexical: dict
    embedder: object  # None only with require_embedder=False, and then:
    embedder_problem: str | None = None  # why this machine cannot create it (package, API key)
    opened: object = None  # v2: verify_v2.OpenedV2 (columns, postings, records)

    @property
    def build_id(self) -> str:
        return self.manifest["build_id"]


def verify_set(path, embedder=None, require_embedder: bool = True, embedder_options: dict | None = None) -> VerifiedSet:
    """The set at `path` (a v1 or v2 directory, or a directory or file `latest.json` that names one),
    verified in full. With `embedder=None` the embedder it was built with is created, exactly
    as a search would; a given embedder must match the one recorded.

    `require_embedder=False` (validate) records instead of raising when this machine cannot
    create that embedder (a missing package or API key says nothing about the set itself).
    `embedder_options` (base_url, timeout) reach the embedder created for the set.
    A v2 set's `chunks` are decoded in full here; `index` is its FAISS index, `lexical` its postings."""
    return _verified(path, embedder, require_embedder, embedder_options, full=True)


def open_verified(path, embedder=None, embedder_options: dict | None = None, full: bool | None = None) -> VerifiedSet:
    """What a loader opens: a v1 set verified in full (as it always was); a v2 set with the cheap
    checks of verify_v2 (in full when `full`, or when None and the set is small), its chunks left
    on disk (`chunks` is then a ChunkRecords, decoded row by row) and `opened` holding its parts."""
    return _verified(path, embedder, True, embedder_options, full=full, lazy=True)


def _verified(path, embedder, require_embedder: bool, embedder_options: dict | None, full: bool | None,
              lazy: bool = False) -> VerifiedSet:
    set_dir, latest, named = locate(path)
    manifest, raw = load_manifest(set_dir)
    if named is not None and named != manifest["build_id"]:
        raise StaleLatest(latest, named, manifest["build_id"])
    opened = None
    if manifest["schema_version"] == 1:
        artifacts = read_artifacts(set_dir, (manifest, raw))
        chunks, index, lexical = decode(artifacts, set_dir)
        _check_analyzer(set_dir, lexical)
    else:
        from .verify_v2 import open_set

        opened = open_set(set_dir, manifest, full=full)
        _check_analyzer_v2(set_dir, manifest)
        index, lexical = opened.index, opened.postings
        chunks = opened.chunks if lazy else [opened.chunks.raw(row) for row in range(len(opened.chunks))]
    try:
        embedder = _embedder_for(set_dir, manifest["embedder"], embedder, embedder_options or {})
    except EmbedderUnavailable as exc:
        if require_embedder:
            raise
        return VerifiedSet(set_dir, manifest, chunks, index, lexical, None, str(exc), opened)
    return VerifiedSet(set_dir, manifest, chunks, index, lexical, embedder, None, opened)


def locate(path) -> tuple[Path, Path | None, str | None]:
    """(set directory, latest.json followed or None, build id it names or None)."""
    path = Path(path)
    if path.name == LATEST and path.is_file():
        latest = path
    elif not (path / MANIFEST).exists() and (path / LATEST).is_file():
        latest = path / LATEST
    else:
        return path, None, None
    data = _parse_json(read_bounded(latest, latest.parent, LATEST, MAX_MANIFEST_BYTES + 1), latest.parent, LATEST)
    if not isinstance(data, dict) or not isinstance(data.get("path"), str) or not isinstance(data.get("build_id"), str):
        raise ArtifactUnreadable(latest.parent, LATEST, 'expected {"schema_version", "build_id", "path", "manifest"}')
    if data.get("schema_version") not in SCHEMA_VERSIONS or type(data.get("schema_version")) is not int:
        raise SchemaVersionMismatch(latest, clip(data.get("schema_version")), READABLE)
    base = latest.parent.resolve()
    target = (base / data["path"]).resolve()
    if not target.is_relative_to(base) or target == base:
        raise ArtifactUnreadable(latest.parent, LATEST, f"path {short(repr(data['path']))} is not a directory beside it")
    return target, latest, data["build_id"]


def check_latest(set_dir: Path, build_id: str) -> None:
    """Raise StaleLatest when the `latest.json` beside `set_dir` points at it but names another build."""
    set_dir = Path(set_dir).resolve()
    latest = set_dir.parent / LATEST
    if not latest.is_file():
        return
    target, _, named = locate(latest)
    if target == set_dir and named != build_id:
        raise StaleLatest(latest, named, build_id)


def read_artifacts(path, loaded: tuple[dict, bytes] | None = None) -> ArtifactSet:
    """Read a v1 set whose manifest, sizes, checksums and build id agree (sizes checked before reading);
    of a v2 set, only the manifest (its files are mapped, see verify_v2)."""
    path = Path(path)
    manifest, raw = loaded or load_manifest(path)
    if manifest["schema_version"] != 1:
        return ArtifactSet(manifest=manifest, files={MANIFEST: raw})
    entries = manifest["files"]
    computed = build_id_of(manifest)
    if computed != manifest["build_id"]:
        raise BuildIdMismatch(path, manifest["build_id"], computed)
    for name in CONTENT_FILES:
        check_size(path, name, entries[name]["size"])
    _check_vectors_header(path, manifest)
    files = {MANIFEST: raw}
    for name in CONTENT_FILES:
        data = read_bounded(path / name, path, name, entries[name]["size"] + 1)
        if len(data) != entries[name]["size"]:
            raise ChecksumMismatch(path, name, f"size {len(data)} bytes, manifest says {entries[name]['size']}")
        if sha256(data) != entries[name]["sha256"]:
            raise ChecksumMismatch(path, name, "sha256 differs")
        files[name] = data
    return ArtifactSet(manifest=manifest, files=files)


def decode(artifacts: ArtifactSet, path):
    """Parse a read set into (chunk dicts, faiss index, lexical dict), checking every count."""
    path = Path(path)
    manifest = artifacts.manifest
    chunks = _parse_json(artifacts.files[CHUNKS], path, CHUNKS)
    problem = chunk_shape_problem(chunks)
    if problem:
        raise ArtifactUnreadable(path, CHUNKS, problem)
    check_counts(path, manifest["counts"], chunks)
    index = _load_index(path, artifacts.files[VECTORS], manifest, chunks)
    lexical = _parse_json(artifacts.files[LEXICAL], path, LEXICAL)
    _check_lexical(path, lexical, manifest["lexical"]["analyzer"], len(chunks))
    return chunks, index, lexical


def load_manifest(path: Path) -> tuple[dict, bytes]:
    manifest_path = path / MANIFEST
    try:
        info = manifest_path.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise ArtifactsNotFound(path) from None
    except OSError as exc:
        raise ArtifactUnreadable(path, MANIFEST, exc.strerror or exc) from exc
    if not stat.S_ISREG(info.st_mode):
        raise ManifestInvalid(path, "not a regular file")
    if info.st_size > MAX_MANIFEST_BYTES:
        raise ManifestInvalid(path, f"{info.st_size} bytes; a manifest has a few kilobytes")
    raw = read_bounded(manifest_path, path, MANIFEST, MAX_MANIFEST_BYTES + 1)
    manifest = _parse_json(raw, path, MANIFEST)
    if not isinstance(manifest, dict):
        raise ManifestInvalid(path, f"a JSON {type(manifest).__name__.replace('NoneType', 'null')}, not an object")
    version = manifest.get("schema_version")
    if version not in SCHEMA_VERSIONS or type(version) is not int:
        raise SchemaVersionMismatch(path, clip(version), READABLE)
    problem = schema_problem(manifest, "manifest.schema.json" if version == 1 else "manifest.v2.schema.json")
    if problem:
        raise ManifestInvalid(path, problem)
    computed = build_id_of(manifest)
    if computed != manifest["build_id"]:
        raise BuildIdMismatch(path, manifest["build_id"], computed)
    return manifest, raw


def _parse_json(raw: bytes, path: Path, name: str):
    try:
        return json.loads(raw)
    except RecursionError:
        detail = "JSON nested too deeply"
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        detail = f"not valid JSON: {short(str(exc), 120)}"
    if name == MANIFEST:
        raise ManifestInvalid(path, detail)
    raise ArtifactUnreadable(path, name, detail)


@lru_cache(maxsize=1)
def _flat_header_size() -> int:
    """Bytes before the vectors in a serialised IndexFlatIP (asked of FAISS, not hard-coded)."""
    import faiss

    return len(faiss.serialize_index(faiss.IndexFlatIP(1)))


def _check_vectors_header(path: Path, manifest: dict) -> None:
    """Type, metric, dimension and row count from the FAISS header alone, so a file that does
    not hold exactly counts.chunks x dim vectors is refused before it is read."""
    expected_rows, dim = manifest["counts"]["chunks"], manifest["embedder"]["dim"]
    header_size = _flat_header_size()
    header = read_bounded(path / VECTORS, path, VECTORS, header_size)
    if len(header) < header_size or header[:4] != _FAISS_FLAT_IP:
        raise ArtifactUnreadable(path, VECTORS, "not a FAISS IndexFlatIP (inner product = cosine)")
    (found_dim,), (rows,) = struct.unpack_from("<i", header, 4), struct.unpack_from("<q", header, 8)
    if found_dim != dim:
        raise DimensionMismatch(path, dim, found_dim, VECTORS)
    if rows != expected_rows:
        raise CountMismatch(path, VECTORS, expected_rows, rows)
    size = manifest["files"][VECTORS]["size"]
    if size != header_size + rows * dim * 4:
        raise ArtifactUnreadable(path, VECTORS, f"{size} bytes, but {rows} vectors of dimension {dim} "
                                                f"take {header_size + rows * dim * 4}")


def _load_index(path: Path, data: bytes, manifest: dict, chunks: list[dict]):
    import faiss
    import numpy as np

    try:
        index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
    except RuntimeError as exc:
        raise ArtifactUnreadable(path, VECTORS, f"FAISS cannot read it: {short(str(exc).splitlines()[-1], 120)}") from exc
    if type(index) is not faiss.IndexFlatIP or index.metric_type != faiss.METRIC_INNER_PRODUCT:
        raise ArtifactUnreadable(path, VECTORS, f"a {type(index).__name__}, not the IndexFlatIP that metric 'cosine' needs")
    if index.ntotal != manifest["counts"]["chunks"]:
        raise CountMismatch(path, VECTORS, manifest["counts"]["chunks"], index.ntotal)
    if index.d != manifest["embedder"]["dim"]:
        raise DimensionMismatch(path, manifest["embedder"]["dim"], index.d, VECTORS)
    if index.ntotal:
        vectors = faiss.rev_swig_ptr(index.get_xb(), index.ntotal * index.d).reshape(index.ntotal, index.d)
        bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
        if bad.size:
            row = int(bad[0])
            raise ArtifactUnreadable(path, VECTORS, f"row {row} ({chunks[row]['id']}) holds NaN or infinite values")
    return index


def _check_lexical(path: Path, lexical, analyzer: str, rows: int) -> None:
    if not isinstance(lexical, dict) or not isinstance(lexical.get("fields"), dict):
        raise ArtifactUnreadable(path, LEXICAL, 'expected an object {"analyzer", "fields"}')
    if lexical.get("analyzer") != analyzer:
        raise ArtifactUnreadable(path, LEXICAL, f"analyzer {short(repr(lexical.get('analyzer')))} differs from "
                                                f"the manifest's {analyzer!r}")
    for name, docs in lexical["fields"].items():
        if not isinstance(docs, list):
            raise ArtifactUnreadable(path, LEXICAL, f"field {short(repr(name))} is not a list")
        if len(docs) != rows:
            raise CountMismatch(path, f"{LEXICAL} field '{name}'", rows, len(docs))
        if not all(isinstance(doc, list) and all(isinstance(t, str) for t in doc) for doc in docs):
            raise ArtifactUnreadable(path, LEXICAL, f"field {name!r} holds something other than lists of tokens")


def _check_analyzer(path: Path, lexical: dict) -> None:
    from ..text.ja import ANALYZER, FIELDS

    if lexical["analyzer"] != ANALYZER:
        raise AnalyzerMismatch(path, short(lexical["analyzer"]), ANALYZER)
    missing = [f for f in FIELDS if f not in lexical["fields"]]
    if missing:
        raise ArtifactUnreadable(path, LEXICAL, f"field(s) {', '.join(missing)} missing")


def _check_analyzer_v2(path: Path, manifest: dict) -> None:
    from ..text.ja import ANALYZER, FIELDS

    lexical = manifest["lexical"]
    if lexical["analyzer"] != ANALYZER:
        raise AnalyzerMismatch(path, short(lexical["analyzer"]), ANALYZER)
    missing = [f for f in FIELDS if f not in lexical["fields"]]
    if missing:
        raise ArtifactUnreadable(path, MANIFEST, f"lexical field(s) {', '.join(missing)} missing")


def _embedder_for(path: Path, built_with: dict, embedder, options: dict):
    """The embedder queries will use: the given one, or the one the set was built with."""
    from ..embed import PROVIDERS, describe, embedder_key, get_embedder

    if embedder is None:
        if built_with["provider"] not in PROVIDERS:
            raise UnknownEmbedder(path, clip(built_with["provider"]), PROVIDERS)
        embedder = get_embedder(built_with["provider"], model=built_with["model"], known_dim=built_with["dim"],
                                **{k: v for k, v in options.items() if v is not None})
    if describe(embedder) != built_with:
        raise EmbedderMismatch(path, embedder_key(built_with), embedder_key(describe(embedder)))
    return embedder
