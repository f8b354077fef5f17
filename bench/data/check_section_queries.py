"""Check the labels of the section/table query set against the site it was written for.

    python bench/data/check_section_queries.py [DATASET] [SITE]
    python bench/data/check_section_queries.py --list-unanchored [SITE]

DATASET defaults to data/eval/section_queries.staging.jsonl, SITE to ../shared/corpus/school_asset.
Section chunk ids do not exist yet, so each answer names its page (file stem) and the heading
it sits under. For every answer this verifies that the page exists once in the site, that the
heading is an h1-h6 of that page (whitespace-normalised), that heading_path is the chain of
headings leading to it, and, for in_table answers, that a <table> outside any anchored box sits
under that heading. For every query it verifies that it repeats no 12 consecutive characters of
its pages' text (whitespace ignored): the corpus has no licence, so queries must be our own words.
Prints one `file:line: error: ... Fix: ...` line per problem and exits 1 if there is any.

--list-unanchored prints the pages that have no rule-/method-/def-/tip- id at all.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness
import harness  # noqa: E402

HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
KINDS = {"casual", "variant", "english", "table", "paraphrase"}
BOX_CLASS = re.compile(r"\b(rule|method|def|tip|example)-box\b")
ANCHOR_PREFIXES = ("rule-", "method-", "def-", "tip-")
OVERLAP = 12
FRONT_MATTER = re.compile(r"\A---\r?\n.*?\r?\n---\r?\n", re.S)


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


class Page:
    """One HTML page of the site: its headings (with their breadcrumb) and tables."""

    def __init__(self, path: Path):
        import lxml.html

        raw = path.read_text(encoding="utf-8")
        match = FRONT_MATTER.match(raw)
        body = raw[match.end():] if match else raw
        self.root = lxml.html.fromstring(f"<div>{body}</div>")
        self.squashed = re.sub(r"\s+", "", raw)  # front matter too: it is corpus text as well
        self.headings: list[tuple[object, str, list[str]]] = []  # (element, text, path)
        self.tables_under: Counter = Counter()  # heading element (None: top) -> unanchored tables
        self._walk()

    def _walk(self) -> None:
        stack: list[tuple[int, str]] = []
        current = None
        for element in self.root.iter():
            if element.tag in HEADINGS:
                level = int(element.tag[1])
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, norm(element.text_content())))
                current = element
                self.headings.append((element, stack[-1][1], [text for _, text in stack]))
            elif element.tag == "table" and not in_anchored_box(element):
                self.tables_under[current] += 1

    def ids(self) -> list[str]:
        return [e.get("id") for e in self.root.iter() if isinstance(e.tag, str) and e.get("id")]


def in_anchored_box(element) -> bool:
    return any(a.get("id") and BOX_CLASS.search(a.get("class") or "") for a in element.iterancestors())


def site_pages(site: Path) -> dict[str, list[Path]]:
    pages: dict[str, list[Path]] = {}
    for path in sorted(site.rglob("*.html")):
        if any(part.startswith(("_", ".")) for part in path.relative_to(site).parts):
            continue  # Jekyll layouts/includes and the built _site are not pages
        pages.setdefault(path.stem, []).append(path)
    return pages


def check_answer(answer: dict, page: Page) -> list[str]:
    heading, path, in_table = answer.get("heading"), answer.get("heading_path"), answer.get("in_table")
    if not isinstance(heading, str) or not isinstance(path, list) or not isinstance(in_table, bool):
        return ["an answer needs heading (string), heading_path (list) and in_table (true/false). "
                "Fix: add the missing field"]
    if heading == "":
        if path:
            return ['heading "" (top of the page) needs an empty heading_path. Fix: set "heading_path": []']
        if in_table and not page.tables_under[None]:
            return ["in_table is true but no table sits above the first heading. Fix: set in_table to false"]
        return []
    matches = [(e, p) for e, text, p in page.headings if text == heading]
    if not matches:
        known = ", ".join(sorted({text for _, text, _ in page.headings}))
        return [f"no h1-h6 reads {heading!r} in this page. Fix: use one of: {known}"]
    if path and path[-1] != heading:
        return [f"heading_path must end with the heading {heading!r}. Fix: append it"]
    matches = [(e, p) for e, p in matches if [norm(x) for x in path] == p]
    if not matches:
        return [f"heading_path {path} is not the chain of headings above {heading!r}. "
                "Fix: list the h2, h3 ... texts that lead to it"]
    if in_table and not any(page.tables_under[e] for e, _ in matches):
        return [f"in_table is true but no table outside an anchored box sits under {heading!r}. "
                "Fix: set in_table to false or name the heading the table is under"]
    return []


def copied_run(query: str, page: Page) -> str | None:
    squashed = re.sub(r"\s+", "", query)
    for start in range(len(squashed) - OVERLAP + 1):
        if squashed[start:start + OVERLAP] in page.squashed:
            return squashed[start:start + OVERLAP]
    return None


def check_line(line: str, pages: dict[str, list[Path]], cache: dict[str, Page]) -> tuple[list[str], dict | None]:
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        return [f"not a JSON object ({exc.msg}). Fix: write one JSON object per line"], None
    if not isinstance(item, dict):
        return ["not a JSON object. Fix: write one JSON object per line"], None
    errors = []
    if not isinstance(item.get("query"), str) or not item["query"].strip():
        errors.append('"query" must be a non-empty string. Fix: write the question')
    if item.get("kind") not in KINDS:
        errors.append(f'"kind" {item.get("kind")!r} is not one of {sorted(KINDS)}. Fix: pick one')
    answers = item.get("answers")
    if not isinstance(answers, list) or not answers:
        return errors + ['"answers" must be a non-empty list. Fix: label where the answer is'], None
    for answer in answers:
        material = answer.get("material") if isinstance(answer, dict) else None
        found = pages.get(material, [])
        if len(found) != 1:
            errors.append(f"material {material!r} matches {len(found)} pages of the site. "
                          "Fix: use the page's file name without .html")
            continue
        page = cache.setdefault(material, Page(found[0]))
        errors += [f"{material}: {e}" for e in check_answer(answer, page)]
        run = copied_run(item.get("query") or "", page)
        if run:
            errors.append(f"the query repeats {run!r} from {material}. Fix: reword it in your own words")
    return errors, item


def check(dataset: Path, site: Path) -> int:
    pages, cache = site_pages(site), {}
    failures, items, qids = 0, [], Counter()
    for number, line in enumerate(dataset.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        errors, item = check_line(line, pages, cache)
        if item:
            qids[item.get("qid")] += 1
            if qids[item.get("qid")] > 1:
                errors.append(f"qid {item.get('qid')!r} is used twice. Fix: number queries uniquely")
            items.append(item)
        for error in errors:
            print(f"{dataset}:{number}: error: {error}")
        failures += len(errors)
    summarise(items, pages, cache)
    print(f"{len(items)} queries, {failures} problems")
    return 1 if failures else 0


def summarise(items: list[dict], pages: dict[str, list[Path]], cache: dict[str, Page]) -> None:
    unanchored = set(unanchored_pages(pages))
    first = Counter(item["answers"][0]["material"] for item in items)
    on_unanchored = sum(1 for item in items if item["answers"][0]["material"] in unanchored)
    tables = sum(1 for item in items if any(a.get("in_table") for a in item["answers"]))
    print("queries per kind:", dict(Counter(item.get("kind") for item in items)))
    print(f"queries on pages without anchored boxes: {on_unanchored} "
          f"(pages covered: {len(unanchored & set(first))} of {len(unanchored)})")
    print(f"queries with a table answer: {tables}")
    for material, count in sorted(first.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {count}  {material}{'' if material in unanchored else '  (page has anchored boxes)'}")


def unanchored_pages(pages: dict[str, list[Path]]) -> list[str]:
    # index.html is the site's home page (a card list), not a teaching page
    return sorted(stem for stem, paths in pages.items() if len(paths) == 1 and stem != "index"
                  and not any(i.startswith(ANCHOR_PREFIXES) for i in Page(paths[0]).ids()))


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if argv[:1] == ["--list-unanchored"]:
        site = Path(argv[1]) if len(argv) > 1 else harness.CORPUS
        names = unanchored_pages(site_pages(site))
        print("\n".join(names))
        print(f"{len(names)} pages without a rule-/method-/def-/tip- id", file=sys.stderr)
        return 0
    dataset = Path(argv[0]) if argv else harness.EVAL_DATA / "section_queries.staging.jsonl"
    site = Path(argv[1]) if len(argv) > 1 else harness.CORPUS
    return check(dataset, site)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
