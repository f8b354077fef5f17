"""The artifact set: built in memory (artifacts_v2.py assembles schema 2, the only schema), written
once and atomically, read back verified (verify.py).

A set lives in `<site output>/knowledge/v2/`; `latest.json` beside it names the current build.
Same input gives byte-identical files: no timestamps, sorted keys, fixed float layout.
Schema 1 (knowledge/v1/, one JSON file of chunks and a float32 FAISS index) is no longer written:
readers refuse it with SchemaOneRetired, which says to rebuild.

Writing only ever replaces a directory that is empty or holds an earlier set (nothing but
our files); `verify_set` (verify.py) is the one answer to "is this set usable".
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import __version__
from ..errors import ArtifactWriteFailed, LatestNotWritten, NonFiniteVectors, OutputNotArtifactSet
from ..fsutil import atomic_write, claimed, fsync_dir, only_owned, pid_alive, remove_owned, swap_in, write_files
from .layout import BUNDLE_FILE, LATEST, MANIFEST, MAX_MANIFEST_BYTES, V2_FILES

log = logging.getLogger("knowledge_build.artifacts")


@dataclass
class ArtifactSet:
    manifest: dict
    files: dict[str, bytes]  # every file, manifest.json included

    @property
    def build_id(self) -> str:
        return self.manifest["build_id"]


def dumps(data) -> bytes:
    return (json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1) + "\n").encode("utf-8")


def sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


# Manifest keys the build id does not hash: itself, the version of the tool that wrote the set
# (answers do not depend on it), and `files`, hashed by name and sha256.
UNHASHED_KEYS = ("build_id", "tool", "files")


def build_id_of(manifest: dict) -> str:
    """The build id: a hash of every content file's name and sha256 and of every other manifest
    field (embedder, site, metric, dense, lexical, counts, schema_version), so an edit of any field
    an answer depends on (site.url makes every absolute_url) is refused like an edited file."""
    entries = manifest["files"]
    fields = {key: value for key, value in manifest.items() if key not in UNHASHED_KEYS}
    text = "".join(f"{name}:{entries[name]['sha256']}\n" for name in sorted(entries))
    text += json.dumps(fields, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return sha256(text.encode("utf-8"))[:16]


def checked_vectors(chunks, vectors: np.ndarray, dim: int) -> np.ndarray:
    """The vectors as one contiguous float32 (rows, dim) matrix; NonFiniteVectors names the chunks of
    rows holding NaN or infinite values."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(chunks), dim)
    bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
    if bad.size:
        raise NonFiniteVectors([chunks[int(row)].id for row in bad])
    return vectors


def finish_set(files: dict[str, bytes], chunks, schema_version: int, embedder_info: dict, site_info: dict,
               **described) -> ArtifactSet:
    """The set of `files` with its manifest: checksums, build id, counts, and the sections
    `described` (dense, lexical)."""
    entries = {name: {"sha256": sha256(data), "size": len(data)} for name, data in sorted(files.items())}
    by_type: dict[str, int] = {}
    for chunk in chunks:
        by_type[chunk.type] = by_type.get(chunk.type, 0) + 1
    manifest = {
        "schema_version": schema_version,
        "tool": {"name": "knowledge-build", "version": __version__},
        "embedder": embedder_info,
        "metric": "cosine",
        **described,
        "counts": {"chunks": len(chunks), "materials": len({c.material for c in chunks}), "by_type": by_type},
        "files": entries,
        "site": site_info,
    }
    manifest["build_id"] = build_id_of(manifest)
    files[MANIFEST] = dumps(manifest)
    return ArtifactSet(manifest=manifest, files=files)


def check_output_dir(out_dir: Path) -> Path:
    """The directory a set may be written to, resolved; refuses one whose contents a swap would
    delete: anything but a missing or empty directory or an earlier artifact set."""
    try:
        target = Path(out_dir).expanduser().resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise ArtifactWriteFailed(out_dir, exc) from exc
    if target == target.parent:
        raise OutputNotArtifactSet(target, "it is the root of the file system")
    if not target.exists():
        return target
    if not target.is_dir():
        raise OutputNotArtifactSet(target, "it is a file, not a directory")
    try:
        names = sorted(os.listdir(target))
    except OSError as exc:
        raise ArtifactWriteFailed(target, exc.strerror or exc) from exc
    if not names or (MANIFEST in names and _ours(target) and only_owned(target, owned_names(target))):
        return target
    shown = ", ".join(repr(n) for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    raise OutputNotArtifactSet(target, f"it holds {shown}, which is not a knowledge-build artifact set")


def _ours(directory: Path) -> bool:
    """Whether `directory/manifest.json` is a knowledge-build manifest (however damaged the rest is)."""
    manifest = _small_json(directory / MANIFEST)
    return isinstance(manifest, dict) and isinstance(manifest.get("tool"), dict) \
        and manifest["tool"].get("name") == "knowledge-build"


def owned_names(directory: Path) -> set[str]:
    """The file names an earlier set in `directory` may hold: ours, the search box's (by their pattern),
    and any its manifest lists."""
    names = set(V2_FILES)
    try:
        names |= {n for n in os.listdir(directory) if BUNDLE_FILE.fullmatch(n)}
    except OSError:
        pass
    manifest = _small_json(directory / MANIFEST)
    listed = manifest.get("files") if isinstance(manifest, dict) else None
    if isinstance(listed, dict):
        names |= {n for n in listed if isinstance(n, str) and n == os.path.basename(n) and not n.startswith(".")}
    return names


def _small_json(path: Path):
    try:
        if not path.is_file() or path.stat().st_size > MAX_MANIFEST_BYTES:
            return None
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None


def write_artifacts(artifacts: ArtifactSet, out_dir: Path) -> Path:
    """Write to a staging sibling, then swap it in: readers see the old set or the new one.
    Only an empty directory or an earlier set is replaced; stale staging directories of
    killed builds are removed afterwards."""
    target = check_output_dir(out_dir)
    owned = set(artifacts.files) | owned_names(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-{os.getpid()}-", dir=target.parent))
    except OSError as exc:
        raise ArtifactWriteFailed(target, exc.strerror or exc) from exc
    leftover = staging
    with claimed(staging):  # in use until swapped in: another build's clean_stale leaves it alone
        try:
            write_files(staging, artifacts.files)
            os.chmod(staging, 0o755)
            check_output_dir(target)  # again: the directory may have changed while we embedded and wrote
            backup = target.with_name(f".{target.name}.old-{os.getpid()}-{secrets.token_hex(4)}")
            leftover = swap_in(staging, target, backup)
            fsync_dir(target.parent)
        except OSError as exc:
            raise ArtifactWriteFailed(target, exc.strerror or exc) from exc
        finally:
            if leftover is not None and leftover.exists():
                remove_owned(leftover, owned | owned_names(leftover))
    clean_stale(target)
    return target


def clean_stale(target: Path) -> list[Path]:
    """Remove `.<name>.new-*` / `.<name>.old-*` directories that killed builds left beside `target`,
    saying so (a warning: the CLI shows it on stderr). A directory is left alone while a build may be
    using it: its process (the number in its name) is alive, or it holds the flock its build keeps on
    it while writing (fsutil.claimed; a build in another container has another process number space).
    One holding anything but our files (the sets' names, the search box's by their pattern) is kept and
    named, never emptied."""
    removed = []
    for prefix in (f".{target.name}.new-", f".{target.name}.old-"):
        try:
            candidates = sorted(p for p in target.parent.glob(f"{prefix}*") if p.is_dir() and not p.is_symlink())
        except OSError:
            return removed
        for candidate in candidates:
            pid = candidate.name[len(prefix):].split("-", 1)[0]
            if pid.isdigit() and pid_alive(int(pid)):
                continue
            with claimed(candidate) as free:
                if not free:
                    continue
                owned = owned_names(candidate)
                if not only_owned(candidate, owned):
                    log.warning("kept %s, a staging folder of an interrupted build: it holds files that are not "
                                "knowledge-build's; remove it yourself once they are safe", candidate)
                elif remove_owned(candidate, owned):
                    log.warning("removed %s, a staging folder left by an interrupted build", candidate)
                    removed.append(candidate)
    return removed


def write_latest(out_dir: Path, artifacts: ArtifactSet) -> Path | None:
    """Beside a `v<schema>` directory, `latest.json` names the current build and schema version,
    so a tutor can follow the latest set or pin one schema.

    Written atomically and only after the set is in place, so it never names a set that is not
    there in full; a kill between the two leaves it naming the previous build, which readers
    detect (`verify_set` compares the build ids) and the next build repairs."""
    out_dir = Path(out_dir).expanduser().resolve()
    version = artifacts.manifest["schema_version"]
    if out_dir.name != f"v{version}":
        return None
    latest = out_dir.parent / LATEST
    try:
        atomic_write(latest, dumps({"schema_version": version, "build_id": artifacts.build_id,
                                    "path": f"{out_dir.name}/", "manifest": f"{out_dir.name}/{MANIFEST}"}))
    except OSError as exc:
        raise LatestNotWritten(latest, exc.strerror or exc) from exc
    return latest

