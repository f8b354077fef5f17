"""`check`: the site's anchors as a linter sees them.

Boxes without a knowledge id (with a suggested id), malformed ids, prefixes that contradict
the box, duplicate ids, links to anchors that do not exist, and toc entries missing from the
page, on top of everything the scan itself reports.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..config import Config
from ..diagnostics import Diagnostic, printable
from ..errors import refuse_broken_settings
from ..html.tags import Tag, box_class, locate_tags
from ..kinds import ALLOWED_PREFIXES, ID_PATTERN, KNOWLEDGE_ID
from ..pipeline import Extraction, extract
from ..site.ids import PagePlan, duplicate_attribute, plan_page
from ..site.page import Page
from ..text.slugs import load_glossary

SEVERITY_SETTINGS = ("error", "warning", "off")


@dataclass
class CheckResult:
    diagnostics: list[Diagnostic]
    plans: list[PagePlan] = field(default_factory=list)
    pages: int = 0
    extraction: Extraction | None = None

    def count(self, severity: str) -> int:
        return sum(d.severity == severity for d in self.diagnostics)


def check_site(config: Config) -> CheckResult:
    extraction = extract(config)
    glossary = load_glossary(config.glossary)
    pages = [p for p in extraction.pages if not p.unreadable]
    tags = {p.path: locate_tags(p.path.read_text(encoding="utf-8")) for p in pages}
    by_url = {_strip_index(p.url_path): p for p in pages}
    diagnostics = list(extraction.diagnostics)
    plans = []
    for page in pages:
        plan = plan_page(page, config.box_classes, glossary)
        plans.append(plan)
        if plan.refused is not None and plan.refused.rule == "boxes-not-located":
            diagnostics.append(plan.refused)  # duplicate attributes are reported by _id_rules
        diagnostics += _missing_ids(plan, config.missing_id, config.site)
        diagnostics += _id_rules(page, tags[page.path], config)
        diagnostics += _links(page, tags[page.path], extraction, by_url, tags)
        diagnostics += _toc(page, tags[page.path])
    diagnostics.sort(key=lambda d: (d.path, d.line, d.col, d.rule))
    return CheckResult(diagnostics, plans, len(extraction.pages), extraction)


def _missing_ids(plan: PagePlan, severity: str, site: Path | None) -> list[Diagnostic]:
    if severity == "off":
        return []
    out = []
    for s in plan.suggestions:
        if s.existing_id:
            message = (f"{s.box_class} 「{s.title}」 has id '{s.existing_id}', which is not a knowledge id "
                       "(rule-, method-, def-, ex-, tip-), so it is not indexed")
            fix = f"rename it to id=\"{s.id}\" ({s.reason}) and update links to #{s.existing_id}"
        else:
            message = f"{s.box_class} 「{s.title}」 has no id, so nothing can link to it"
            fix = f"add id=\"{s.id}\" ({s.reason}), or run: {suggest_ids_command(s.path, site)}"
        out.append(Diagnostic(str(s.path), s.line, s.col, severity, "missing-id", message, fix))
    return out


def suggest_ids_command(page: Path, site: Path | None) -> str:
    """The `suggest-ids --write` command for one page, runnable from the working directory:
    paths relative to it (absolute outside it), the site named unless it is the directory itself."""
    command = ["knowledge-build", "suggest-ids"]
    if site is not None and Path(site).resolve() != Path.cwd().resolve():
        command += ["--site", display_path(str(site))]
    return shlex.join([*command, "--write", display_path(str(page))])


def _id_rules(page: Page, tags: list[Tag], config: Config) -> list[Diagnostic]:
    out = []
    seen: dict[str, Tag] = {}
    for tag in tags:
        if {"id", "class"} & set(tag.repeated):
            out.append(duplicate_attribute(page.path, tag))
        if not tag.id:
            continue
        if KNOWLEDGE_ID.match(tag.id) and not ID_PATTERN.match(tag.id):
            out.append(_diag(page, tag, "error", "id-format",
                             f"id '{tag.id}' does not match {ID_PATTERN.pattern}",
                             "use lowercase ASCII words joined by single hyphens, e.g. rule-quadratic-formula"))
        box = box_class(tag, config.box_classes)
        prefix = tag.id.split("-", 1)[0]
        allowed = ALLOWED_PREFIXES.get(box)
        if allowed and KNOWLEDGE_ID.match(tag.id) and prefix not in allowed and config.prefix_mismatch != "off":
            out.append(_diag(page, tag, config.prefix_mismatch, "prefix-mismatch",
                             f"id '{tag.id}' has prefix {prefix}- but sits in a {box}",
                             f"use one of {', '.join(p + '-' for p in allowed)} or change the box class"))
        # Duplicate knowledge ids are already reported by the scan.
        if tag.id in seen and not KNOWLEDGE_ID.match(tag.id):
            out.append(_diag(page, tag, "error", "duplicate-id",
                             f"id '{tag.id}' is used twice in this page (first at line {seen[tag.id].line})",
                             "give one of the two elements another id"))
        seen.setdefault(tag.id, tag)
    return out


def _links(page: Page, tags: list[Tag], extraction: Extraction, by_url: dict, all_tags: dict) -> list[Diagnostic]:
    own_ids = {t.id for t in tags if t.id}
    out = []
    for tag in tags:
        href = tag.attrs.get("href") if tag.name == "a" else None
        if not href or "#" not in href or "{{" in href or "{%" in href:
            continue
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or not parts.fragment:
            continue
        anchor = unquote(parts.fragment)
        if not parts.path:
            if anchor not in own_ids:
                out.append(_diag(page, tag, "error", "broken-anchor",
                                 f"link '{href}' points to #{anchor}, but there is no such anchor on this page",
                                 "fix the link or give the target element that id"))
            continue
        target = by_url.get(_strip_index(_resolve(page, parts.path, extraction.site.baseurl)))
        if target is not None and anchor not in {t.id for t in all_tags[target.path] if t.id}:
            out.append(_diag(page, tag, "error", "broken-anchor",
                             f"link '{href}' points to #{anchor}, but {target.rel} has no such anchor",
                             "fix the link or give the target element that id"))
    return out


def _resolve(page: Page, path: str, baseurl: str) -> str:
    path = unquote(path)
    if path.startswith("/"):
        return path[len(baseurl):] if baseurl and path.startswith(baseurl + "/") else path
    return posixpath.normpath(posixpath.join(posixpath.dirname(page.url_path), path))


def _strip_index(url_path: str) -> str:
    return url_path[: -len("index.html")] if url_path.endswith("/index.html") else url_path


def _toc(page: Page, tags: list[Tag]) -> list[Diagnostic]:
    ids = {t.id for t in tags if t.id}
    out = []
    for item in page.front_matter.get("toc") or []:
        toc_id = str(item.get("id", "")) if isinstance(item, dict) else ""
        if toc_id and toc_id not in ids:
            out.append(Diagnostic(str(page.path), 1, 1, "error", "toc-missing",
                                  f"front matter toc entry '{toc_id}' ({item.get('title', '')}) has no element "
                                  "with that id in the page", f"add id=\"{toc_id}\" to its section or fix the toc"))
    return out


def _diag(page: Page, tag: Tag, severity: str, rule: str, message: str, fix: str) -> Diagnostic:
    return Diagnostic(str(page.path), tag.line, tag.col, severity, rule, message, fix)


def github_annotation(d: Diagnostic, path: str) -> str:
    """A workflow command; values escaped as GitHub's runner expects, so a file name or message
    cannot end the command early or forge another one."""
    level = {"error": "error", "warning": "warning"}.get(d.severity, "notice")
    text = printable(f"{d.message}. Fix: {d.fix}" if d.fix else d.message, keep_newlines=True)
    props = f"file={_escape_property(path)},line={d.line},col={d.col},title={_escape_property(printable(d.rule))}"
    return f"::{level} {props}::{_escape_data(text)}"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def display_path(path: str, cwd: Path | None = None) -> str:
    """`path` relative to the working directory when it is under it; a symlink is named, not followed."""
    cwd = (cwd or Path.cwd()).resolve()
    try:
        return str((Path(path).parent.resolve() / Path(path).name).relative_to(cwd))
    except ValueError:
        return path


def write_suggestions(plans: list[PagePlan]) -> tuple[int, int]:
    """Write every plan; returns (ids written, files changed). Read-only targets are refused
    before any file is touched."""
    from ..site.ids import check_writable, write_plan

    check_writable(plans)
    written = files = 0
    for plan in plans:
        n = write_plan(plan, files)
        written += n
        files += bool(n)
    return written, files


def plans_for(config: Config, paths=()) -> list[PagePlan]:
    """Id suggestions for the given pages or directories (default: the whole site); a page that
    cannot be planned has `refused` set."""
    if config.site is None and paths:
        config = config.with_overrides(site=_site_root(Path(paths[0])))
    extraction = extract(config)
    refuse_broken_settings(extraction.diagnostics)  # its exclude list decides which files may be written
    wanted = [Path(p).resolve() for p in paths]
    pages = [p for p in extraction.pages
             if not wanted or any(p.path.resolve() == w or p.path.resolve().is_relative_to(w) for w in wanted)]
    glossary = load_glossary(config.glossary)
    return [plan_page(page, config.box_classes, glossary) for page in pages]


def _site_root(path: Path) -> Path:
    """The nearest directory at or above `path` with a _config.yml (else the path's directory)."""
    start = path.resolve() if path.is_dir() else path.resolve().parent
    for candidate in (start, *start.parents):
        if (candidate / "_config.yml").is_file():
            return candidate
    return start
