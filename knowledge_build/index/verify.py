"""Is this artifact set usable? One answer, used by search, validate, publish and report.

`verify_set` checks, in an order that never reads more than the manifest promises: the manifest
(size, JSON, JSON Schema, schema version, build id recomputed from the file checksums), then the
files as verify_v2.py opens them (sizes, headers, and in full: checksums, chunks, counts, vectors,
postings), the analyzer, and finally the embedder that will embed queries.

Schema 2 is the only schema read: a schema 1 set (knowledge/v1, or a latest.json naming one) is
refused with SchemaOneRetired, which says to rebuild; nothing of it is read or changed.
"""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import (
    AnalyzerMismatch,
    ArtifactsNotFound,
    ArtifactUnreadable,
    BuildIdMismatch,
    EmbedderMismatch,
    EmbedderUnavailable,
    ManifestInvalid,
    SchemaOneRetired,
    SchemaVersionMismatch,
    StaleLatest,
    UnknownEmbedder,
)
from .artifacts import ArtifactSet, build_id_of
from .files import clip, read_bounded, schema_problem, short
from .layout import LATEST, MANIFEST, MAX_MANIFEST_BYTES, V2_SCHEMA_VERSION

RETIRED_SCHEMA = 1  # refused with SchemaOneRetired (what to do) rather than SchemaVersionMismatch


@dataclass
class VerifiedSet:
    path: Path
    manifest: dict
    chunks: list[dict]
    index: object  # the FAISS index, memory-mapped
    lexical: object  # postings.Postings
    embedder: object  # None only with require_embedder=False, and then:
    embedder_problem: str | None = None  # why this machine cannot create it (package, API key)
    opened: object = None  # verify_v2.OpenedV2 (columns, postings, records)

    @property
    def build_id(self) -> str:
        return self.manifest["build_id"]


def verify_set(path, embedder=None, require_embedder: bool = True, embedder_options: dict | None = None) -> VerifiedSet:
    """The set at `path` (a set directory, or a directory or file `latest.json` that names one),
    verified in full. With `embedder=None` the embedder it was built with is created, exactly
    as a search would; a given embedder must match the one recorded.

    `require_embedder=False` (validate) records instead of raising when this machine cannot
    create that embedder (a missing package or API key says nothing about the set itself).
    `embedder_options` (base_url, timeout) reach the embedder created for the set.
    `chunks` are decoded in full here; `index` is its FAISS index, `lexical` its postings."""
    return _verified(path, embedder, require_embedder, embedder_options, full=True)


def open_verified(path, embedder=None, embedder_options: dict | None = None, full: bool | None = None) -> VerifiedSet:
    """What a loader opens: the set with the cheap checks of verify_v2 (in full when `full`, or when
    None and the set is small), its chunks left on disk (`chunks` is then a ChunkRecords, decoded row
    by row) and `opened` holding its parts."""
    return _verified(path, embedder, True, embedder_options, full=full, lazy=True)


def _verified(path, embedder, require_embedder: bool, embedder_options: dict | None, full: bool | None,
              lazy: bool = False) -> VerifiedSet:
    set_dir, latest, named = locate(path)
    manifest, _ = load_manifest(set_dir)
    if named is not None and named != manifest["build_id"]:
        raise StaleLatest(latest, named, manifest["build_id"])
    from .verify_v2 import open_set

    opened = open_set(set_dir, manifest, full=full)
    _check_analyzer(set_dir, manifest)
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
    _check_schema_version(latest, data.get("schema_version"))
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
    """The set at `path` as far as its manifest goes (checked by load_manifest); its files are mapped
    and checked by verify_v2 when opened."""
    manifest, raw = loaded or load_manifest(Path(path))
    return ArtifactSet(manifest=manifest, files={MANIFEST: raw})


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
    _check_schema_version(path, manifest.get("schema_version"))
    problem = schema_problem(manifest, "manifest.v2.schema.json")
    if problem:
        raise ManifestInvalid(path, problem)
    computed = build_id_of(manifest)
    if computed != manifest["build_id"]:
        raise BuildIdMismatch(path, manifest["build_id"], computed)
    return manifest, raw


def _check_schema_version(path: Path, version) -> None:
    if type(version) is int and version == RETIRED_SCHEMA:
        raise SchemaOneRetired(path)
    if type(version) is not int or version != V2_SCHEMA_VERSION:
        raise SchemaVersionMismatch(path, clip(version), str(V2_SCHEMA_VERSION))


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


def _check_analyzer(path: Path, manifest: dict) -> None:
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
