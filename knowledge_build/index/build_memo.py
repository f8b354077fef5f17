"""A no-change rebuild: when every input of the last build is what it was, the set it wrote stays.

The inputs are hashed, not their times: the bytes of every page the build reads, of `_config*.yml`
and every file under `_data/` (learns, materials, categories), of the generated learns file, the
settings that shape a set (sections, box classes, exclusions, baseurl, schema, dense index, id
severities), the embedder's identity, a digest of this package's code and of the shipped glossary
(section chunk ids are romanised with it), and what reading the site reported before any page was
read: the walk's `directory-unreadable` and `page-skipped` (a locked folder or a dangling link changes
no page's bytes, yet a fresh build reports it). The memo (in the cache
directory, one small JSON file per output directory) keeps that digest, the build id it produced
and the build's diagnostics, which are reported again so a rebuild never hides a warning. The set
is kept only when its manifest still names that build and every file still has its size; otherwise
the build runs in full.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict
from pathlib import Path

from ..diagnostics import Diagnostic
from ..errors import KnowledgeBuildError

log = logging.getLogger("knowledge_build.build")
MEMO_DIR = "builds"
_SHAPING = ("baseurl", "sections", "box_classes", "boxes", "answer_selector", "exclude", "missing_id", "prefix_mismatch", "artifact_schema",
            "dense_index", "exact_max_rows", "embedder", "embedding_model", "embedding_dimensions", "base_url",
            "search_box", "search_box_dense", "thesaurus")


def inputs_digest(config, site, pages: list[Path], embedder_info: dict | None, learns_file: Path) -> str:
    """The digest of everything a build's set and diagnostics follow from. `site.diagnostics` must
    already hold the walk's (find_pages(site) has run): a new one (an error, which no memo holds,
    or a warning) then makes the digest new, so the build runs in full and reports, or fails, as
    a fresh build does."""
    from ..html.section_memory import _code_digest, slug_recipe

    digest = hashlib.sha256()
    digest.update(json.dumps({"settings": {k: _plain(getattr(config, k)) for k in _SHAPING},
                              "embedder": embedder_info, "code": _code_digest(),
                              "slugs": slug_recipe(),  # the shipped glossary names section chunks
                              "site_diagnostics": sorted(d.format() for d in site.diagnostics),
                              "skipped": site.skipped},
                             sort_keys=True).encode())
    files = list(pages) + sorted(site.root.glob("_config*.yml"))
    data = site.root / "_data"
    if data.is_dir():
        files += sorted(p for p in data.rglob("*") if p.is_file())
    files.append(learns_file)
    if getattr(config, "thesaurus", None) is not None and getattr(config, "search_box", False):
        files.append(Path(config.thesaurus))  # the search box's bundle holds the site's thesaurus
    for path in files:
        digest.update(b"\0" + str(path).encode("utf-8", "surrogateescape") + b"\0")
        try:
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        except OSError:
            digest.update(b"\1missing")
    return digest.hexdigest()


def _plain(value):
    return [str(v) for v in value] if isinstance(value, tuple) else (str(value) if isinstance(value, Path) else value)


def memo_path(cache_dir: Path, output: Path) -> Path:
    return Path(cache_dir) / MEMO_DIR / (hashlib.sha256(str(output).encode()).hexdigest()[:24] + ".json")


def recall(cache_dir: Path, output: Path, digest: str) -> tuple[str, list[Diagnostic], dict] | None:
    """(build id, diagnostics, page summary) of the last build of `output` from these inputs, if its set is intact."""
    from .files import check_size
    from .verify import load_manifest

    try:
        memo = json.loads(memo_path(cache_dir, output).read_text(encoding="utf-8"))
        if memo.get("inputs") != digest:
            return None
        manifest, _ = load_manifest(output)
        if manifest["build_id"] != memo["build_id"]:
            return None
        for name, entry in manifest["files"].items():
            check_size(output, name, entry["size"])
        return memo["build_id"], [Diagnostic(**d) for d in memo["diagnostics"]], memo.get("pages") or {}
    except (OSError, ValueError, KeyError, TypeError, KnowledgeBuildError) as exc:  # any doubt: a full build
        log.debug("no reusable build for %s (%s)", output, exc)
        return None


def remember(cache_dir: Path, output: Path, digest: str, build_id: str, diagnostics: list[Diagnostic],
             pages: dict | None = None) -> None:
    from ..fsutil import atomic_write

    path = memo_path(cache_dir, output)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"inputs": digest, "build_id": build_id, "output": str(output),
                                       "diagnostics": [asdict(d) for d in diagnostics], "pages": pages or {}},
                                      ensure_ascii=False, sort_keys=True).encode("utf-8"))
    except OSError as exc:  # the memo only saves time
        log.warning("could not record the build in %s (%s); the next build runs in full", path, exc)


def kept_chunks(output: Path):
    """The chunks of a kept set: its records, decoded when read."""
    import numpy as np

    from .layout import V2_CHUNKS as CHUNKS
    from .layout import V2_ROWS as ROWS
    from .rows import ChunkRecords
    from .verify_v2 import _mapped

    rows = np.load(output / ROWS, mmap_mode="r", allow_pickle=False)
    return ChunkRecords(_mapped(output, CHUNKS), rows["offset"])
