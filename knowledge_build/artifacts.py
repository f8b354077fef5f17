"""The artifact set: built in memory, written once and atomically, read back verified.

Layout of `<site output>/knowledge/v1/`:
  manifest.json          schema version, build id, embedder, counts, sha256 + size per file
  knowledge_chunks.json  chunks sorted by id, no vectors
  vectors.faiss          FAISS IndexFlatIP; row i = chunk i (L2-normalised, so IP = cosine)
  lexical.json           per-field (lemma, reading) lexical tokens; row i = chunk i
Same input gives byte-identical files: no timestamps, sorted keys, fixed float layout.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import __version__
from .errors import (ArtifactsNotFound, ChecksumMismatch, CountMismatch, DimensionMismatch,
                     SchemaVersionMismatch)

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
CHUNKS = "knowledge_chunks.json"
VECTORS = "vectors.faiss"
LEXICAL = "lexical.json"
CONTENT_FILES = (CHUNKS, VECTORS, LEXICAL)


@dataclass
class ArtifactSet:
    manifest: dict
    files: dict[str, bytes]  # every file, manifest.json included

    @property
    def build_id(self) -> str:
        return self.manifest["build_id"]


def dumps(data) -> bytes:
    return (json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1) + "\n").encode("utf-8")


def dumps_compact(data) -> bytes:
    """For files only programs read (lexical.json): an indent puts every token on a line of its own,
    which made the file 1.6x larger and, since the C encoder does no indenting, 3x slower to write."""
    return (json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


def assemble(chunks, vectors: np.ndarray, lexical_fields: dict[str, list[list[str]]], analyzer: str,
             embedder_info: dict, site_info: dict) -> ArtifactSet:
    """Build every file of the set in memory."""
    import faiss

    vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(chunks), embedder_info["dim"])
    index = faiss.IndexFlatIP(embedder_info["dim"])
    if len(chunks):
        index.add(vectors)
    files = {
        CHUNKS: dumps([c.to_dict() for c in chunks]),
        VECTORS: faiss.serialize_index(index).tobytes(),
        LEXICAL: dumps_compact({"analyzer": analyzer, "fields": lexical_fields}),
    }
    entries = {name: {"sha256": _sha256(data), "size": len(data)} for name, data in sorted(files.items())}
    by_type: dict[str, int] = {}
    for chunk in chunks:
        by_type[chunk.type] = by_type.get(chunk.type, 0) + 1
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "knowledge-build", "version": __version__},
        "build_id": _sha256("".join(f"{n}:{e['sha256']}\n" for n, e in entries.items()).encode())[:16],
        "embedder": embedder_info,
        "metric": "cosine",
        "lexical": {"analyzer": analyzer},
        "counts": {"chunks": len(chunks), "materials": len({c.material for c in chunks}), "by_type": by_type},
        "files": entries,
        "site": site_info,
    }
    files[MANIFEST] = dumps(manifest)
    return ArtifactSet(manifest=manifest, files=files)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_artifacts(artifacts: ArtifactSet, out_dir: Path) -> Path:
    """Write to a temporary sibling, then swap it in: readers see the old set or the new one."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
    try:
        for name, data in sorted(artifacts.files.items()):
            with open(staging / name, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(staging, 0o755)
        _swap_in(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def write_latest(out_dir: Path, artifacts: ArtifactSet) -> Path | None:
    """Beside a `v<schema>` directory, `latest.json` names the current build and schema version,
    so a tutor can follow the latest set or pin one schema. Written atomically."""
    out_dir = Path(out_dir)
    if out_dir.name != f"v{SCHEMA_VERSION}":
        return None
    latest = out_dir.parent / "latest.json"
    atomic_write(latest, dumps({"schema_version": SCHEMA_VERSION, "build_id": artifacts.build_id,
                                "path": f"{out_dir.name}/", "manifest": f"{out_dir.name}/{MANIFEST}"}))
    return latest


def atomic_write(path: Path, data: bytes) -> None:
    """Replace one file atomically (temp file + rename), keeping its mode (0644 for a new file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _swap_in(staging: Path, target: Path) -> None:
    if not target.exists():
        os.rename(staging, target)
        return
    if _rename_exchange(staging, target):
        return  # staging now holds the old set and is removed by the caller
    backup = target.with_name(f".{target.name}.old-{os.getpid()}")
    os.rename(target, backup)
    os.rename(staging, target)
    shutil.rmtree(backup, ignore_errors=True)


def _rename_exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two directories (Linux renameat2 RENAME_EXCHANGE)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def read_artifacts(path: Path) -> ArtifactSet:
    """Read and verify a set: schema version, per-file size and sha256, counts, dimension."""
    path = Path(path)
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise ArtifactsNotFound(path)
    raw_manifest = manifest_path.read_bytes()
    try:
        manifest = json.loads(raw_manifest)
    except json.JSONDecodeError as exc:
        raise ChecksumMismatch(path, MANIFEST, f"not valid JSON: {exc}") from exc
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise SchemaVersionMismatch(path, manifest.get("schema_version"), SCHEMA_VERSION)
    files = {MANIFEST: raw_manifest}
    for name in CONTENT_FILES:
        entry = manifest.get("files", {}).get(name)
        if entry is None:
            raise ChecksumMismatch(path, name, "not listed in the manifest")
        try:
            data = (path / name).read_bytes()
        except FileNotFoundError as exc:
            raise ChecksumMismatch(path, name, "file missing") from exc
        if len(data) != entry["size"]:
            raise ChecksumMismatch(path, name, f"size {len(data)} bytes, manifest says {entry['size']}")
        if _sha256(data) != entry["sha256"]:
            raise ChecksumMismatch(path, name, "sha256 differs")
        files[name] = data
    return ArtifactSet(manifest=manifest, files=files)


def decode(artifacts: ArtifactSet, path: Path):
    """Parse a verified set into (chunk dicts, faiss index, lexical dict), checking counts and dims."""
    import faiss

    manifest = artifacts.manifest
    chunks = json.loads(artifacts.files[CHUNKS])
    expected = manifest["counts"]["chunks"]
    if len(chunks) != expected:
        raise CountMismatch(path, CHUNKS, expected, len(chunks))
    index = faiss.deserialize_index(np.frombuffer(artifacts.files[VECTORS], dtype=np.uint8))
    if index.ntotal != expected:
        raise CountMismatch(path, VECTORS, expected, index.ntotal)
    dim = manifest["embedder"]["dim"]
    if index.d != dim:
        raise DimensionMismatch(path, dim, index.d, VECTORS)
    lexical = json.loads(artifacts.files[LEXICAL])
    for name, docs in lexical.get("fields", {}).items():
        if len(docs) != expected:
            raise CountMismatch(path, f"{LEXICAL} field '{name}'", expected, len(docs))
    return chunks, index, lexical
