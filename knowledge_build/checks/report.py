"""The content coverage report: which pages are well indexed, and what to fix first.

Per page: chunks by type (section and table chunks included), boxes without id, heuristic learns of
the boxes, coverage of the boxes by ids, and whether only sections index the page.

Data first (`coverage`), then HTML rendered with jinja2 from the package's template.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..config import Config, site_index_dir
from ..errors import ArtifactError, KnowledgeBuildError
from ..kinds import ANCHORED_TYPES, PART_TYPES, TYPES
from .lint import check_site, display_path


def coverage(config: Config, index_dir: Path | None = None) -> dict:
    result = check_site(config)
    extraction = result.extraction
    findings = Counter((d.path, d.severity) for d in result.diagnostics)
    chunks_by_page: dict[str, list] = {}  # by the file each chunk came from: two index.html are two pages
    for chunk in extraction.chunks:
        chunks_by_page.setdefault(chunk.source_path, []).append(chunk)
    rows = []
    for page in extraction.pages:
        chunks = chunks_by_page.get(page.rel, [])
        if not page.elements and not page.unanchored and not chunks:
            continue
        types = Counter(c.type for c in chunks)
        anchored = len(page.elements)
        rows.append({
            "material": page.material, "path": page.rel, "title": page.title,
            "level": str(page.front_matter.get("level") or ""), "category": str(page.front_matter.get("category") or ""),
            **{t: types.get(t, 0) for t in TYPES},
            "anchored": anchored, "unanchored": len(page.unanchored),
            "knowledge_anchors": sum(types.get(t, 0) for t in ANCHORED_TYPES if t != "example"),
            "heuristic_learns": sum(c.learns_source == "heuristic" for c in chunks
                                    if c.type in ANCHORED_TYPES and c.type != "example"),
            # what a tutor finds on this page comes from its headings only: no box is anchored
            "only_sections": bool(chunks) and all(c.type in PART_TYPES for c in chunks),
            "coverage": round(100 * anchored / (anchored + len(page.unanchored))) if anchored + len(page.unanchored) else 100,
            "errors": findings[(str(page.path), "error")], "warnings": findings[(str(page.path), "warning")],
        })
    rows.sort(key=lambda r: (r["coverage"], r["path"]))
    return {
        "site": str(extraction.site.root), "rows": rows,
        "totals": {
            "pages": len(rows), "anchored": sum(r["anchored"] for r in rows),
            "unanchored": sum(r["unanchored"] for r in rows),
            "pages_without_knowledge_anchors": sum(r["knowledge_anchors"] == 0 for r in rows),
            **{t: sum(r[t] for r in rows) for t in TYPES},
            "heuristic_learns": sum(r["heuristic_learns"] for r in rows),
            "pages_only_sections": sum(r["only_sections"] for r in rows),
            "errors": result.count("error"), "warnings": result.count("warning"),
        },
        "findings": [{**d.to_dict(), "path": display_path(d.path)} for d in result.diagnostics if d.severity != "info"],
        "index": _index_info(Path(index_dir or config.index or config.output or site_index_dir(extraction.site, config))),
    }


def _index_info(index_dir: Path) -> dict | None:
    """The set's version, every file checked against its checksum as `validate` does (whether this machine
    can embed queries for it is not the report's business), or its problem."""
    from ..index.verify import load_manifest, locate
    from ..index.verify_v2 import check_checksums

    try:
        set_dir = locate(index_dir)[0]
        manifest, _ = load_manifest(set_dir)
        check_checksums(set_dir, manifest)
    except ArtifactError as exc:
        return {"path": str(index_dir), "problem": str(exc)}
    from ..index.aliases import read_aliases

    try:
        aliases = read_aliases(set_dir, manifest)
    except (ArtifactError, OSError, ValueError) as exc:
        return {"path": str(index_dir), "problem": str(exc)}
    return {"path": str(index_dir), "build_id": manifest["build_id"], "schema_version": manifest["schema_version"],
            "embedder": f"{manifest['embedder']['provider']}:{manifest['embedder']['model']} "
                        f"({manifest['embedder']['dim']} dims)", "chunks": manifest["counts"]["chunks"],
            # old ids that still land: what a link given before a rename or an edit now opens (index/aliases.py)
            "aliases": [{"old": old, "new": new} for old, new in aliases.items()]}


def render_html(data: dict, template: str = "report.html.j2") -> str:
    """`data` through one of the package's templates (the coverage report's, or the gaps report's)."""
    import jinja2

    environment = jinja2.Environment(loader=jinja2.PackageLoader("knowledge_build", "templates"),
                                     autoescape=jinja2.select_autoescape(["html", "j2"]))
    return environment.get_template(template).render(**data, types=TYPES)


class ReportNotWritable(KnowledgeBuildError):
    """The HTML report cannot be written where asked."""


def write_report(data: dict, out: Path, template: str = "report.html.j2") -> Path:
    """Render and write the report atomically: a reader sees the old file or the new one."""
    from ..fsutil import atomic_write

    try:
        atomic_write(Path(out), render_html(data, template).encode("utf-8"))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ReportNotWritable(f"cannot write the report to '{out}' ({reason}). Fix: pass --out a file in a "
                                "directory you can write.") from exc
    return Path(out)
