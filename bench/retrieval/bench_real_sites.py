"""Retrieval on real documentation sites built by their owners' generators (issue 40): the owner's path
against plain baselines over the same built pages, in the same run.

    python bench/retrieval/bench_real_sites.py FOLDER [--cache-dir DIR] [--sites a,b] [--pagefind WORK]

FOLDER holds one folder per site, kept outside the repository (their text is not ours); this script
fetches nothing. Each <name>/ holds:

- site.json {"output": "<built output, relative to <name>/>"} or a SITE.md with a line
  "output: <path>" (the folder the generator wrote, e.g. src/_site, src/site, src/_build/html);
- questions.jsonl, one {"qid", "query", "kind", "page", "fragment", "note"} per line: `page` is the
  site-relative path of the built HTML file that answers, `fragment` the id of the heading (or of
  the `<section>` wrapping it) under which the answer is, "" for the page as a whole. Kind
  "offtopic" questions have no answer on the site (page and fragment "").

A result is a hit when it is on the labelled page, at or under the labelled heading: its URL's
fragment (an id, or a text directive) lands inside the labelled heading's section of the built page.
"page hit@5": on the labelled page at all, in the top 5. Systems, each top 10:

- the owner's path: `kb.build` of the output with the local model (as `knowledge-build build --site
  <output>`), then hybrid, lexical and dense search; off-topic questions are judged by `relevant`
  (the share whose top 5 hold no relevant result);
- BM25 (k1 1.2, b 0.75; bm25s) with fugashi words over whole pages and over heading sections of
  the pages' main area (<main>, [role=main], <article>, else <body>; nav, header, footer left out);
- e5 (the local model, "passage: "/"query: ") over the same sections; RRF (k 60) of BM25 sections
  and e5 (bench_outside_boxes.py's baselines);
- with `--pagefind WORK`, Pagefind 1.6 (its extended, Japanese-segmenting release, from npm once) over a
  copy of the output, searched in headless Chromium in its default UI's order (bench/browser/pagefind_run.py).

Prints, per site, pages found / indexed / skipped (with reasons), and per question kind hit@1 /
hit@5 / MRR@10 for every system. The figures go to docs/retrieval.md ("Real sites").
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from urllib.parse import unquote, urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # bench/: the shared harness
import harness  # noqa: E402
from bench_outside_boxes import bm25_rankings, e5_rankings, rrf, section_vectors, word_tokenizer  # noqa: E402

import knowledge_build as kb  # noqa: E402
from knowledge_build.html.fragments import parse_text_directives  # noqa: E402

K = 10
OFFTOPIC = "offtopic"
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
SKIPPED = {"script", "style", "nav", "header", "footer", "template", "noscript"}
FIELDS = ("qid", "query", "kind", "page", "fragment")


class BadSite(Exception):
    """A site folder this script cannot read; the message names the file and the fix."""


# ---------------------------------------------------------------- a built page, its headings

class Page:
    """One built HTML file: its main area, its headings in order and the section each element is in."""

    def __init__(self, path: Path):
        import lxml.html

        data = path.read_bytes()
        if not data.strip():  # an empty file (a generator's placeholder): a page with nothing in it
            data = b"<html><body></body></html>"
        self.root = lxml.html.fromstring(data, parser=lxml.html.HTMLParser(encoding="utf-8"))
        found = (self.root.xpath("//main") or self.root.xpath("//*[@role='main']")
                 or self.root.xpath("//article") or self.root.xpath("//body"))
        self.main = found[0] if found else self.root
        self.title = " ".join((self.root.findtext(".//title") or "").split())
        self.order = {el: i for i, el in enumerate(self.main.iter())}
        self.headings = [el for el in self.main.iter(*HEADINGS)]
        self.parents: list[int | None] = []  # each heading's enclosing heading
        stack: list[int] = []
        for i, heading in enumerate(self.headings):
            level = int(heading.tag[1])
            while stack and int(self.headings[stack[-1]].tag[1]) >= level:
                stack.pop()
            self.parents.append(stack[-1] if stack else None)
            stack.append(i)

    def heading_of(self, element) -> int | None:
        """The heading whose section holds `element`: itself or an enclosing heading, the first heading
        of a wrapper (Sphinx's <section id>), else the last heading before it; None outside the main
        area or before the first heading."""
        if element not in self.order:
            return None
        for el in (element, *element.iterancestors()):
            if el in self.order and el.tag in HEADINGS:
                return self.headings.index(el)
            if el is self.main:
                break
        inner = next(element.iter(*HEADINGS), None)
        if inner is not None and inner in self.order:
            return self.headings.index(inner)
        before = [i for i, h in enumerate(self.headings) if self.order[h] <= self.order[element]]
        return before[-1] if before else None

    def target(self, fragment: str):
        """The element a URL fragment lands on (an id, or a text directive's start), or None."""
        name, _, _ = fragment.partition(":~:")
        if name:
            found = self.root.xpath("//*[@id=$id or (self::a and @name=$id)]", id=unquote(name))
            if found:
                return found[0]
        directives = parse_text_directives(fragment)
        if not directives:
            return None
        wanted = _norm(directives[0].start)
        innermost = None
        for el in self.main.iter():
            if isinstance(el.tag, str) and wanted in _norm(el.text_content()):
                innermost = el
        return innermost

    def chain(self, heading: int | None) -> set[int]:
        """`heading` and the headings that enclose it."""
        out = set()
        while heading is not None:
            out.add(heading)
            heading = self.parents[heading]
        return out


class BuiltSite:
    def __init__(self, output: Path):
        self.output = output
        self._pages: dict[str, Page] = {}

    @cached_property
    def files(self) -> list[str]:
        """Every built HTML page, site-relative, but the project's own artifacts."""
        return sorted(p.relative_to(self.output).as_posix() for p in self.output.rglob("*.html")
                      if "knowledge" not in p.relative_to(self.output).parts[:1])

    def page(self, rel: str) -> Page:
        if rel not in self._pages:
            self._pages[rel] = Page(self.output / rel)
        return self._pages[rel]

    def page_of_url(self, url: str) -> str | None:
        """The built file a result URL names, whatever base path the site is served under."""
        parts = [p for p in unquote(urlsplit(url).path).split("/") if p]
        trailing = unquote(urlsplit(url).path).endswith("/") or not parts
        for start in range(len(parts) + 1):
            path = "/".join(parts[start:])
            for rel in ((f"{path}/index.html" if path else "index.html") if trailing else path,
                        f"{path}.html", f"{path}/index.html"):
                if (self.output / rel).is_file() and rel.endswith(".html"):
                    return rel
        return None


@dataclass(frozen=True)
class Label:
    qid: str
    query: str
    kind: str
    page: str
    fragment: str


def is_hit(site: BuiltSite, page: str | None, fragment: str | None, label: Label) -> bool:
    if page != label.page:
        return False
    if not label.fragment:
        return True
    built = site.page(page)
    wanted = built.heading_of(built.target(label.fragment))
    element = built.target(fragment) if fragment else None
    return element is not None and wanted in built.chain(built.heading_of(element))


# ---------------------------------------------------------------- reading a site folder

def read_site(folder: Path) -> tuple[BuiltSite, list[Label]]:
    config = folder / "site.json"
    if config.is_file():
        output = json.loads(config.read_text(encoding="utf-8")).get("output", "")
    elif (folder / "SITE.md").is_file():
        found = re.search(r"^output:\s*`?([^`\s]+)`?", (folder / "SITE.md").read_text(encoding="utf-8"), re.M | re.I)
        output = found.group(1) if found else ""
    else:
        raise BadSite(f"{folder}: error: no site.json or SITE.md. Fix: write site.json "
                      '{"output": "<built output folder>"}.')
    if not output or not (folder / output).is_dir():
        raise BadSite(f"{folder}: error: the built output '{output}' is not a folder. Fix: build the site "
                      "with its generator and name its output folder in site.json or SITE.md (output: …).")
    site = BuiltSite((folder / output).resolve())
    path = folder / "questions.jsonl"
    if not path.is_file():
        raise BadSite(f"{path}: error: no questions. Fix: write the labelled questions, one JSON object a line.")
    labels = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            label = Label(**{f: str(item[f]) for f in FIELDS})
        except (ValueError, KeyError) as err:
            raise BadSite(f"{path}:{number}: error: not a question ({err}). Fix: give {', '.join(FIELDS)}.") from None
        if label.kind != OFFTOPIC:
            if label.page not in site.files:
                raise BadSite(f"{path}:{number}: error: no built page '{label.page}'. Fix: name a file under {output}.")
            built = site.page(label.page)
            if label.fragment and built.target(label.fragment) is None:
                raise BadSite(f"{path}:{number}: error: no id '{label.fragment}' in {label.page}. "
                              "Fix: give a heading's id (or '' for the whole page).")
        labels.append(label)
    return site, labels


# ---------------------------------------------------------------- the baselines' documents

@dataclass(frozen=True)
class Section:
    page: str
    fragment: str  # the id of the heading, or of its wrapper; "" before the first heading
    title: str  # the page's
    text: str

    @property
    def passage(self) -> str:
        return f"{self.title}\n{self.text}"


def split_page(site: BuiltSite, rel: str) -> list[Section]:
    page = site.page(rel)
    parts: list[list] = [[None]]  # [heading element, texts…]

    def walk(el) -> None:
        if not isinstance(el.tag, str) or el.tag in SKIPPED:
            parts[-1].append(el.tail or "")
            return
        if el.tag in HEADINGS:
            parts.append([el, " ".join(el.text_content().replace("¶", " ").split())])
        else:
            parts[-1].append(el.text or "")
            for child in el:
                walk(child)
        parts[-1].append(el.tail or "")

    for child in page.main:
        walk(child)
    sections = []
    for heading, *texts in parts:
        body = " ".join(" ".join(texts).split())
        if body:
            sections.append(Section(rel, _anchor(heading), page.title, body))
    return sections


def _anchor(heading) -> str:
    if heading is None:
        return ""
    for el in (heading, *heading.iterancestors()):
        if el.get("id"):
            return el.get("id")
        if el.tag in ("body", "main"):
            break
    inner = next((a for a in heading.iter("a") if a.get("id") or a.get("name")), None)
    return "" if inner is None else inner.get("id") or inner.get("name")


# ---------------------------------------------------------------- running

def first_hit(found: list[tuple[str | None, str | None]], site: BuiltSite, label: Label) -> int | None:
    return next((rank for rank, (page, fragment) in enumerate(found[:K], 1)
                 if is_hit(site, page, fragment, label)), None)


def first_page(found: list[str | None], label: Label) -> int | None:
    return next((rank for rank, page in enumerate(found[:K], 1) if page == label.page), None)


def owner_runs(site: BuiltSite, labels: list[Label], cache_dir: Path, folder: Path) -> tuple[dict, dict, dict, list]:
    config = kb.load_config(cwd=folder, site=site.output, cache_dir=cache_dir, env={})
    with harness.Timer() as timer:
        result = kb.build(config)
    index = kb.KnowledgeIndex.open(result.output)
    ranks, pages, top = {}, {}, []
    for mode in ("hybrid", "lexical", "dense"):
        found = []
        for label in labels:
            results = index.search(label.query, k=K, mode=mode)
            found.append([(site.page_of_url(r.url), urlsplit(r.url).fragment) for r in results])
            if mode == "hybrid":
                top.append([{"url": r.url, "title": r.title, "type": r.type, "relevant": r.relevant}
                            for r in results[:5]])
        ranks[f"owner {mode}"] = [first_hit(f, site, label) for f, label in zip(found, labels)]
        pages[f"owner {mode}"] = [first_page([p for p, _ in f], label) for f, label in zip(found, labels)]
    offtopic = [label for label in labels if label.kind == OFFTOPIC]
    rejected = sum(not any(r.relevant for r in index.search(label.query, k=5)) for label in offtopic)
    summary = dict(result.pages, chunks=len(result.chunks), seconds=round(timer.seconds, 1),
                   offtopic=f"{rejected}/{len(offtopic)}")
    return ranks, pages, summary, top


def pagefind_runs(site: BuiltSite, labels: list[Label], work: Path) -> tuple[dict, dict]:
    """Pagefind 1.6 over a copy of the built output, each question searched in headless Chromium
    (bench/browser/pagefind_run.py: its default UI's order, the first K distinct links)."""
    sys.path.insert(0, str(HERE.parent / "browser"))
    from pagefind_run import pagefind_results

    found = pagefind_results(site.output, "", [label.query for label in labels], work, k=K)["results"]
    hits = [[(site.page_of_url(url), urlsplit(url).fragment) for url in found.get(label.query, [])] for label in labels]
    return ({"Pagefind 1.6": [first_hit(h, site, label) for h, label in zip(hits, labels)]},
            {"Pagefind 1.6": [first_page([p for p, _ in h], label) for h, label in zip(hits, labels)]})


def baseline_runs(site: BuiltSite, labels: list[Label], cache_dir: Path) -> tuple[dict, dict, int]:
    words = word_tokenizer()
    if words is None:
        sys.exit("error: fugashi is not installed. Fix: pip install fugashi unidic-lite (make install-test).")
    queries = [label.query for label in labels]
    sections = [s for rel in site.files for s in split_page(site, rel)]
    whole = [Section(rel, "", site.page(rel).title, " ".join(s.text for s in sections if s.page == rel))
             for rel in site.files]
    ranks, pages = {}, {}
    found = bm25_rankings(whole, queries, words)
    pages["BM25 pages"] = [first_page([whole[i].page for i in r], label) for r, label in zip(found, labels)]
    ranks["BM25 pages"] = pages["BM25 pages"]  # a page has no place in it: judged by page only
    embedder = kb.get_embedder("local")
    bm25 = bm25_rankings(sections, queries, words)
    e5 = e5_rankings(section_vectors(sections, embedder, cache_dir), queries, embedder)
    for name, rankings in (("BM25 sections", bm25), ("e5 sections", e5),
                           ("RRF(BM25, e5) sections", [rrf(b, e) for b, e in zip(bm25, e5)])):
        ranks[name] = [first_hit([(sections[i].page, sections[i].fragment) for i in r], site, label)
                       for r, label in zip(rankings, labels)]
        pages[name] = [first_page([sections[i].page for i in r], label) for r, label in zip(rankings, labels)]
    return ranks, pages, len(sections)


# ---------------------------------------------------------------- report

def cell(ranks: list[int | None]) -> str:
    if not ranks:
        return "–"
    m = harness.rank_metrics([r if r and r <= K else None for r in ranks])
    return f"{m['hit@1']:.2f} / {m['hit@5']:.2f} / {m['mrr@10']:.2f}"


def report(name: str, labels: list[Label], ranks: dict, pages: dict, summary: dict, sections: int) -> None:
    answered = [i for i, label in enumerate(labels) if label.kind != OFFTOPIC]
    kinds = {"all": answered}
    for kind in sorted({labels[i].kind for i in answered}):
        kinds[kind] = [i for i in answered if labels[i].kind == kind]
    skipped = Counter(s["reason"] for s in summary.get("skipped", []))
    print(f"\n## {name}: {summary.get('generator')} output, pages found {summary.get('found')}, indexed "
          f"{summary.get('indexed')}, skipped {len(summary.get('skipped', []))}"
          + (" (" + "; ".join(f"{n} {why}" for why, n in skipped.most_common()) + ")" if skipped else "")
          + f"; {summary.get('chunks')} chunks (build {summary.get('seconds')} s), {sections} baseline sections; "
          f"{len(answered)} questions with an answer, off-topic rejected (owner hybrid) {summary.get('offtopic')}."
          f" Cells: hit@1 / hit@5 / MRR@10.\n")
    print("| system | " + " | ".join(f"{kind} ({len(rows)})" for kind, rows in kinds.items()) + " | page hit@5 |")
    print("|---|" + "---|" * (len(kinds) + 1))
    for system, found in ranks.items():
        page_hit5 = sum(bool(pages[system][i] and pages[system][i] <= 5) for i in answered) / max(len(answered), 1)
        label = system + (" (hit = the right page)" if system == "BM25 pages" else "")
        print(f"| {label} | " + " | ".join(cell([found[i] for i in rows]) for rows in kinds.values())
              + f" | {page_hit5:.2f} |")
    for skip in summary.get("skipped", []):
        print(f"skipped: {skip['path']}: {skip['reason']}")
    misses = [labels[i].qid for i in answered if not (ranks["owner hybrid"][i] and ranks["owner hybrid"][i] <= 5)]
    print(f"\nowner hybrid misses (top 5): {', '.join(misses) or 'none'}")


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("folder", type=Path, metavar="FOLDER")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "knowledge-build")
    parser.add_argument("--sites", default="", help="comma-separated site folder names (default: all)")
    parser.add_argument("--pagefind", type=Path, metavar="WORK", help="also run Pagefind 1.6 (npm, once) in "
                        "headless Chromium over a copy of each site made under WORK/<site>")
    parser.add_argument("--details", type=Path, help="write each question's ranks and the owner's hybrid "
                        "top 5 here (JSON lines), to read the misses")
    args = parser.parse_args()
    if not args.folder.is_dir():
        sys.exit(f"error: no folder {args.folder}. Fix: give the folder that holds the site folders.")
    names = [n for n in args.sites.split(",") if n] or sorted(
        p.name for p in args.folder.iterdir() if (p / "questions.jsonl").is_file())
    sites = {}
    try:
        for name in names:  # every site's labels are checked before any build or search
            sites[name] = read_site(args.folder / name)
    except BadSite as bad:
        sys.exit(str(bad))
    print(f"{harness.machine()}; load average {harness.load_average()}")
    for name, (site, labels) in sites.items():
        ranks, pages, summary, top = owner_runs(site, labels, args.cache_dir, args.folder / name)
        base_ranks, base_pages, sections = baseline_runs(site, labels, args.cache_dir / "real-sites")
        ranks |= base_ranks
        if args.pagefind:
            pagefind_ranks, pagefind_pages = pagefind_runs(site, labels, args.pagefind / name)
            ranks |= pagefind_ranks
            base_pages |= pagefind_pages
        report(name, labels, ranks, pages | base_pages, summary, sections)
        if args.details:
            with open(args.details, "a", encoding="utf-8") as out:
                for i, label in enumerate(labels):
                    out.write(json.dumps({"site": name, **label.__dict__, "ranks": {s: r[i] for s, r in ranks.items()},
                                          "owner_top5": top[i]}, ensure_ascii=False) + "\n")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("¶", "")).strip()


if __name__ == "__main__":
    main()
