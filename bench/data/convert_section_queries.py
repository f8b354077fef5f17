"""Turn the section/table query labels (page + heading path) into chunk ids of a built index.

    python bench/data/convert_section_queries.py INDEX_DIR [STAGING] [OUT]

INDEX_DIR is a knowledge/v1 set built with `--sections all` (or `unanchored`: the ids are the same,
only fewer sections are chunks); STAGING defaults to data/eval/section_queries.staging.jsonl, OUT to
data/eval/section_queries.jsonl, written in the eval format ({"qid", "query", "relevant", "kind"}).

An answer (material, heading_path, in_table) is relevant in every chunk of that page whose heading
path is that path: the section (and its -p2… pieces when it was split), and, when in_table, the
table chunks under it. A small section merged into its parent or previous sibling has no chunk of
its own: its heading is a line of that chunk's text, and that chunk is the answer. Answers that
find no chunk are printed as errors (exit 1): a label that points nowhere would score as a miss.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from knowledge_build.chunking.chunks import section_title
from knowledge_build.kinds import PART_TYPES

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness
import harness  # noqa: E402


def norm(text: str) -> str:
    return " ".join((text or "").split())


def answer_ids(chunks: list[dict], answer: dict) -> list[str]:
    path = tuple(norm(h) for h in answer["heading_path"])
    page = [c for c in chunks if c["material"] == answer["material"] and c["type"] in PART_TYPES]
    own = [c for c in page if tuple(norm(p) for p in c.get("parents", ())) == path[:-1]
           and norm(c["title"]) == norm(section_title(path[-1]))]
    sections = [c for c in own if c["type"] == "section"]
    tables = [c for c in own if c["type"] == "table"]
    if not sections:  # merged into the part before it: its heading is a line of that part's text
        sections = [c for c in page if c["type"] == "section" and norm(path[-1]) in map(norm, c["content"].split("\n"))]
    return sorted(c["id"] for c in sections + (tables if answer.get("in_table") else []))


def convert(index_dir: Path, staging: Path, out: Path) -> int:
    chunks = json.loads((index_dir / "knowledge_chunks.json").read_text(encoding="utf-8"))
    rows, problems = [], []
    for number, line in enumerate(staging.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        item = json.loads(line)
        relevant: list[str] = []
        for answer in item["answers"]:
            ids = answer_ids(chunks, answer)
            if not ids:
                problems.append(f"{staging}:{number}: error: {item['qid']}: no section chunk of "
                                f"{answer['material']} under {' > '.join(answer['heading_path'])}. Fix: build the "
                                "index with --sections all, or correct the label")
            relevant += [i for i in ids if i not in relevant]
        rows.append({"qid": item["qid"], "query": item["query"], "relevant": relevant, "kind": item["kind"]})
    for problem in problems:
        print(problem)
    if problems:
        return 1
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} queries, {sum(len(r['relevant']) for r in rows)} relevant chunks -> {out}")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__)
        sys.exit(0)
    if not args:
        sys.exit(__doc__)
    index = Path(args[0])
    staging = Path(args[1]) if len(args) > 1 else harness.EVAL_DATA / "section_queries.staging.jsonl"
    target = Path(args[2]) if len(args) > 2 else harness.EVAL_DATA / "section_queries.jsonl"
    sys.exit(convert(index, staging, target))
