"""SQuAD-format data (e.g. JGLUE JSQuAD) -> a small site of pages + a labelled query set.

Each article becomes a page, each paragraph a knowledge box, each question a query whose
relevant chunk is its paragraph, so `build` and `eval` measure retrieval on it unchanged.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import KnowledgeBuildError


@dataclass
class ConvertedSet:
    site: Path
    queries: Path
    pages: int
    paragraphs: int
    questions: int
    # chunk id -> the paragraph's own text (no title): what a plain embedding baseline embeds
    texts: dict[str, str] = field(default_factory=dict)


def convert_squad(source: Path, output: Path, limit: int | None = None) -> ConvertedSet:
    try:
        data = json.loads(Path(source).read_text(encoding="utf-8"))["data"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise KnowledgeBuildError(f"{source} is not SQuAD-format JSON with a 'data' list ({exc})") from exc
    try:
        return _write_set(data, Path(output), limit)
    except OSError as exc:
        raise KnowledgeBuildError(f"cannot write the converted set into {output}: {exc.strerror or exc}. "
                                  "Fix: give --output a new or empty folder that can be created and written") from exc
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise KnowledgeBuildError(f"{source} is not SQuAD-format JSON: an article, paragraph or question lacks "
                                  f"a field or has the wrong type ({type(exc).__name__}: {exc}). Fix: give a file in "
                                  "the SQuAD v1.1/v2.0 layout (data > paragraphs > context, qas > id, question)") from exc


def _write_set(data, output: Path, limit: int | None) -> ConvertedSet:
    """Every page made in memory first: malformed data writes nothing."""
    site = output / "site"
    lines, paragraphs, texts, pages = [], 0, {}, {}
    for number, article in enumerate(data[:limit], start=1):
        material = f"a{number:04d}"
        title = str(article.get("title") or material)
        boxes = []
        for p_number, paragraph in enumerate(article.get("paragraphs", []), start=1):
            anchor = f"rule-p{p_number}"
            context = str(paragraph["context"]).split("[SEP]", 1)[-1].strip()
            boxes.append(f'<div class="rule-box" id="{anchor}"><strong>{html.escape(title)} ({p_number})</strong>\n'
                         f"<p>{html.escape(context)}</p></div>\n")
            paragraphs += 1
            texts[f"{material}#{anchor}"] = context
            for qa in paragraph.get("qas", []):
                if qa.get("is_impossible"):
                    continue
                lines.append(json.dumps({"qid": qa["id"], "query": qa["question"], "relevant": [f"{material}#{anchor}"],
                                         "kind": "question"}, ensure_ascii=False))
        front = json.dumps(title, ensure_ascii=False)
        pages[f"{material}.html"] = f"---\ntitle: {front}\n---\n" + "".join(boxes)
    (site / "articles").mkdir(parents=True, exist_ok=True)
    (site / "_config.yml").write_text('title: SQuAD retrieval set\nbaseurl: ""\n', encoding="utf-8")
    for name, text in pages.items():
        (site / "articles" / name).write_text(text, encoding="utf-8")
    queries = output / "queries.jsonl"
    queries.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ConvertedSet(site, queries, min(len(data), limit or len(data)), paragraphs, len(lines), texts)
