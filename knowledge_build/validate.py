"""HTML <-> index consistency and artifact integrity.

An anchor the index promises but the HTML no longer has is an error (the tutor's link is
broken); a knowledge id the index lacks, or a box whose text changed since the build, is a
warning (the index is stale).
"""

from __future__ import annotations

from pathlib import Path

from .artifacts import CHUNKS
from .config import Config
from .diagnostics import Diagnostic
from .errors import KnowledgeBuildError
from .pipeline import extract
from .verify import check_latest, verify_set

REBUILD = "rebuild the index with 'knowledge-build build'"


def verify_index(index_dir: Path, embedder=None) -> tuple[list[dict], list[Diagnostic]]:
    """The chunks of a set that search would accept (the same `verify_set`: checksums, counts,
    build id, analyzer, embedder) and a `latest.json` beside it that names this build; an embedder
    this machine cannot create (package or API key missing) is a warning, with search's message."""
    verified = verify_set(index_dir, embedder, require_embedder=False)
    check_latest(verified.path, verified.build_id)
    if verified.embedder_problem is None:
        return verified.chunks, []
    return verified.chunks, [Diagnostic(str(index_dir), 1, 1, "warning", "embedder-unavailable",
                                        verified.embedder_problem.rstrip("."))]


def validate_site(config: Config, index_dir: Path | None = None, database_url: str | None = None,
                  embedder=None) -> list[Diagnostic]:
    extraction = extract(config)
    machine: list[Diagnostic] = []  # about this machine, not the index (see verify_index)
    if database_url:
        from .store.postgres import published_chunks

        indexed = published_chunks(database_url)
        index_dir = Path("database")
    else:
        index_dir = Path(index_dir or config.index or config.output or extraction.site.default_index_dir)
        try:
            chunks, machine = verify_index(index_dir, embedder)
        except KnowledgeBuildError as exc:
            return [Diagnostic(str(index_dir), 1, 1, "error", "artifact-integrity", str(exc).rstrip("."))]
        indexed = {c["id"]: c for c in chunks}
    in_html = {c.id: c for c in extraction.chunks}
    pages = {p.material: p for p in extraction.pages}
    diagnostics: list[Diagnostic] = list(machine)
    for chunk_id in sorted(indexed.keys() - in_html.keys()):
        old = indexed[chunk_id]
        page = pages.get(old["material"])
        where = str(page.path) if page else str(index_dir / CHUNKS)
        diagnostics.append(Diagnostic(
            where, 1, 1, "error", "stale-anchor",
            f"the index links '{old['url']}', but {old['anchor']} is no longer in the HTML: the tutor's link is broken",
            f"restore id=\"{old['anchor']}\" or {REBUILD} and publish it"))
    for chunk_id in sorted(in_html.keys() - indexed.keys()):
        chunk = in_html[chunk_id]
        diagnostics.append(Diagnostic(
            str(pages[chunk.material].path), chunk.line, 1, "warning", "not-indexed",
            f"knowledge id '{chunk.anchor}' is in the HTML but not in the index at {index_dir}", REBUILD))
    for chunk_id in sorted(in_html.keys() & indexed.keys()):
        chunk = in_html[chunk_id]
        if chunk.content_hash != indexed[chunk_id].get("content_hash"):
            diagnostics.append(Diagnostic(
                str(pages[chunk.material].path), chunk.line, 1, "warning", "stale-content",
                f"'{chunk.anchor}' changed since the index was built; search sees the old text", REBUILD))
    return [d for d in extraction.diagnostics if d.severity == "error"] + diagnostics
