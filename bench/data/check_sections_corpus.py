"""Sections and tables on a real site: counts, whether every link lands, and the extra extraction time.

    python bench/data/check_sections_corpus.py [SITE] [--verbose]

SITE defaults to ../shared/corpus/school_asset. Every page is parsed the way scan.py parses it
(front matter off, comments removed); the anchored elements are the elements whose id is a knowledge
id. Prints parts per page, how many of the pages without a rule-/method-/def-/tip- id yield parts,
the fragments that do not land (a text directive checked with fragments.fragment_lands against the
page's visible text, an id against the page's ids), and the time of page_parts against the time of
scanning the pages (the sections budget is 1.5x the scan). Exits 1 when a fragment does not land or an
unanchored page yields no part.
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter
from pathlib import Path

import lxml.html

from knowledge_build.html.fragments import fragment_lands
from knowledge_build.html.sections import page_parts, page_text
from knowledge_build.kinds import KNOWLEDGE_ID
from knowledge_build.site.front_matter import split_front_matter
from knowledge_build.site.jekyll import find_pages, open_site
from knowledge_build.site.scan import scan_page

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness
import harness  # noqa: E402

ANCHOR_PREFIXES = ("rule-", "method-", "def-", "tip-")


def parse(page, text):
    body, offset = split_front_matter(page, text)
    parser = lxml.html.HTMLParser(recover=True, remove_comments=True, huge_tree=True)
    return lxml.html.document_fromstring(body, parser=parser), offset


def check(site_dir: Path, verbose: bool = False) -> int:
    site = open_site(site_dir)
    paths = [p for p in find_pages(site) if p.name != "index.html"]
    scan_seconds, pages = harness.timed(lambda: [scan_page(site, path) for path in paths])
    problems, per_page, kinds, unanchored, yielding = [], [], Counter(), 0, 0
    parts_seconds = 0.0
    sizes = []
    for path, page in zip(paths, pages):
        root, offset = parse(page, path.read_text(encoding="utf-8").removeprefix("\ufeff"))
        anchored = {e for e in root.iter() if isinstance(e.tag, str) and KNOWLEDGE_ID.match(e.get("id") or "")}
        seconds, parts = harness.timed(page_parts, root, anchored=anchored, line_offset=offset)
        parts_seconds += seconds
        per_page.append(len(parts))
        kinds.update(p.kind for p in parts)
        sizes.extend(len(p.text) for p in parts if p.kind == "section")
        if not any((e.get("id") or "").startswith(ANCHOR_PREFIXES) for e in anchored):
            unanchored += 1
            yielding += bool(parts)
            if not parts:
                problems.append(f"{path}: error: a page without anchored boxes yields no part")
        text, ids = page_text(root), {e.get("id") for e in root.iter() if isinstance(e.tag, str) and e.get("id")}
        keys = Counter(p.key for p in parts)
        problems += [f"{path}: error: key {k} repeats" for k, n in keys.items() if n > 1]
        for part in parts:
            if not part.fragment:
                continue
            lands = part.fragment in ids if ":~:" not in part.fragment else fragment_lands(part.fragment, text)
            if not lands:
                problems.append(f"{path}:{part.line}: error: fragment {part.fragment} of '{part.heading}' does not land")
        if verbose:
            for part in parts:
                print(f"  {path.stem} {part.kind} {part.key} l{part.line} {part.fragment[:40]} "
                      f"{'A' if part.has_anchored_box else '-'} {len(part.text)} {' > '.join(part.parents + (part.heading,))}")
    print(f"pages: {len(paths)}; parts: {sum(per_page)} ({dict(kinds)}); per page: min {min(per_page)}, "
          f"median {statistics.median(per_page)}, max {max(per_page)}")
    print(f"section text chars: median {statistics.median(sizes)}, min {min(sizes)}, max {max(sizes)}")
    print(f"pages without a rule/method/def/tip anchor: {unanchored}, yielding parts: {yielding}")
    print(f"time: scan {scan_seconds:.2f}s, page_parts {parts_seconds:.2f}s "
          f"(scan + sections = {(scan_seconds + parts_seconds) / scan_seconds:.2f}x the scan)")
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("site", type=Path, nargs="?", default=harness.CORPUS)
    parser.add_argument("--verbose", action="store_true", help="print every part")
    args = parser.parse_args()
    return check(args.site, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
