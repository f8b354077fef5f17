"""HTML <-> index consistency and artifact integrity.

An anchor the index promises but the HTML no longer has is an error (the tutor's link is
broken); a knowledge id the index lacks, or a box whose text changed since the build, is a
warning (the index is stale). Section and table chunks link by the heading's id or a text
fragment, not by an id of their own: for them the check is whether the indexed link still lands
on the page (the id exists, or the fragment's text occurs in the page's visible text).
"""

from __future__ import annotations

from pathlib import Path

from ..config import Config, site_index_dir
from ..diagnostics import Diagnostic
from ..errors import KnowledgeBuildError
from ..index.layout import V2_CHUNKS as CHUNKS
from ..index.verify import check_latest, verify_set
from ..kinds import is_part_anchor
from ..pipeline import extract

REBUILD = "rebuild the index with 'knowledge-build build'"


def verify_index(index_dir: Path, embedder=None, embedder_check: bool = True) -> tuple[list[dict], list[Diagnostic]]:
    """The chunks of a set that search would accept (the same `verify_set`: checksums, counts,
    build id, analyzer, embedder) and a `latest.json` beside it that names this build; an embedder
    this machine cannot create (package or API key missing) is a warning, with search's message,
    unless `embedder_check` is off (an environment that only validates, such as the pre-commit hook)."""
    verified = verify_set(index_dir, embedder, require_embedder=False)
    check_latest(verified.path, verified.build_id)
    if verified.embedder_problem is None or not embedder_check:
        return verified.chunks, []
    return verified.chunks, [Diagnostic(str(index_dir), 1, 1, "warning", "embedder-unavailable",
                                        verified.embedder_problem.rstrip("."))]


def validate_site(config: Config, index_dir: Path | None = None, database_url: str | None = None,
                  embedder=None, embedder_check: bool = True) -> list[Diagnostic]:
    extraction = extract(config)
    machine: list[Diagnostic] = []  # about this machine, not the index (see verify_index)
    if database_url:
        from ..store.postgres import published_chunks

        indexed = published_chunks(database_url)
        index_dir = Path("database")
        machine = database_functions(database_url)
    else:
        index_dir = Path(index_dir or config.index or config.output or site_index_dir(extraction.site, config))
        try:
            chunks, machine = verify_index(index_dir, embedder, embedder_check)
        except KnowledgeBuildError as exc:
            return [Diagnostic(str(index_dir), 1, 1, "error", "artifact-integrity", str(exc).rstrip("."))]
        indexed = {c["id"]: c for c in chunks}
    in_html = {c.id: c for c in extraction.chunks}
    pages = {p.material: p for p in extraction.pages}
    diagnostics: list[Diagnostic] = list(machine)
    for chunk_id in sorted(indexed.keys() - in_html.keys()):
        old = indexed[chunk_id]
        if is_part_anchor(old["anchor"]):
            continue  # section_links decides: its link may still land
        page = pages.get(old["material"])
        where = str(page.path) if page else str(_chunks_file(index_dir))
        diagnostics.append(Diagnostic(
            where, 1, 1, "error", "stale-anchor",
            f"the index links '{old['url']}', but {old['anchor']} is no longer in the HTML: the tutor's link is broken",
            f"restore id=\"{old['anchor']}\" or {REBUILD} and publish it"))
    diagnostics += section_links(indexed, in_html, pages, index_dir)
    for chunk_id in sorted(in_html.keys() - indexed.keys()):
        chunk = in_html[chunk_id]
        what = f"{chunk.type} '{chunk.anchor}'" if is_part_anchor(chunk.anchor) else f"knowledge id '{chunk.anchor}'"
        diagnostics.append(Diagnostic(
            str(pages[chunk.material].path), chunk.line, 1, "warning", "not-indexed",
            f"{what} is in the HTML but not in the index at {index_dir}", REBUILD))
    for chunk_id in sorted(in_html.keys() & indexed.keys()):
        chunk = in_html[chunk_id]
        if chunk.content_hash != indexed[chunk_id].get("content_hash"):
            diagnostics.append(Diagnostic(
                str(pages[chunk.material].path), chunk.line, 1, "warning", "stale-content",
                f"'{chunk.anchor}' changed since the index was built; search sees the old text", REBUILD))
    return [d for d in extraction.diagnostics if d.severity == "error"] + diagnostics


def database_functions(database_url: str) -> list[Diagnostic]:
    """A warning when the database's functions are older than this version (store/db_functions.py)."""
    from ..store.db_functions import message, report
    from ..store.postgres import connect

    with connect(database_url) as conn:
        found = report(conn)
    if found["functions"] != "outdated":
        return []
    return [Diagnostic("database", 1, 1, "warning", "database-functions", message(found), found["fix"])]


def section_links(indexed: dict, in_html: dict, pages: dict, index_dir: Path) -> list[Diagnostic]:
    """Each indexed section/table link checked against its page as it is now: a link that does not
    land is an error (at the section's line when the page still has it); a section the HTML no
    longer has but whose link still lands is a stale index (warning)."""
    from ..html.sections import page_text
    from ..site.scan import parse_page

    roots: dict[Path, object] = {}
    texts: dict[Path, str] = {}
    out = []
    for chunk_id in sorted(i for i, c in indexed.items() if is_part_anchor(c["anchor"])):
        old, current = indexed[chunk_id], in_html.get(chunk_id)
        page = pages.get(old["material"])
        if page is None:
            out.append(Diagnostic(str(_chunks_file(index_dir)), 1, 1, "error", "stale-anchor",
                                  f"the index links '{old['url']}', but the page '{old['material']}' is no longer "
                                  "in the site: the tutor's link is broken", f"{REBUILD} and publish it"))
            continue
        if page.path not in roots:
            roots[page.path] = parse_page(page.path)
        line = current.line if current else 1
        fragment = old["url"].partition("#")[2]
        def text(path=page.path):
            if path not in texts:
                texts[path] = page_text(roots[path])
            return texts[path]

        if fragment and not _lands(fragment, roots[page.path], text):
            what = "text" if ":~:" in fragment else "id"
            out.append(Diagnostic(
                str(page.path), line, 1, "error", "section-link",
                f"the index links '{old['url']}' ({old['anchor']}), but its {what} fragment no longer lands on the "
                "page: the tutor's link opens the page's top", f"{REBUILD} and publish it"))
        elif current is None:
            out.append(Diagnostic(str(page.path), line, 1, "warning", "stale-section",
                                  f"{old['anchor']} is in the index but no longer in the HTML (its heading or "
                                  "place changed); search sees the old text", REBUILD))
    return out


def _lands(fragment: str, root, text) -> bool:
    """An id fragment lands when an element has that id; a text fragment when its text occurs in the
    page's visible text (fragments.fragment_lands)."""
    from urllib.parse import unquote

    from ..html.fragments import fragment_lands

    if root is None:
        return False
    element_id, _, directives = fragment.partition(":~:")
    if element_id and not root.xpath("//*[@id=$id]", id=unquote(element_id)):
        return False
    return not directives or fragment_lands(f":~:{directives}", text())


def _chunks_file(index_dir: Path) -> Path:
    """The set's chunks file, for locating findings."""
    return index_dir / CHUNKS
