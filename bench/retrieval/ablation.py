"""Retrieval ablation: each change to the search recipe, switched on one after another.

    python bench/retrieval/ablation.py ../shared/corpus/school_asset ../shared/eval/dev_queries.jsonl

Builds (or reuses, through the vector cache) the corpus vectors once, then evaluates every
recipe in memory and prints a Markdown table for docs/retrieval.md. Dense-text variants
re-embed the corpus (about 2 minutes each on 2 cores, cached afterwards).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from unittest import mock

import numpy as np

import knowledge_build as kb
from knowledge_build.chunking.chunks import content_hash
from knowledge_build.embed import get_embedder
from knowledge_build.embed.cache import VectorCache
from knowledge_build.embed.runner import embed_with_cache
from knowledge_build.evaluation.evaluate import evaluate, load_dataset
from knowledge_build.pipeline import lexical_fields
from knowledge_build.search import query as search_module
from knowledge_build.ranking.settings import SearchSettings
from knowledge_build.text import ja as text_ja

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness
import harness  # noqa: E402

ORIGINAL = SearchSettings(fusion="rrf", channel_weights={"dense": 1.0, "lexical": 1.0}, field_weights={"lemma": 1.0},
                          example_weight=1.0, intent_boost=1.0, expand_romaji=False, expand_english=False)
RRF = {"fusion": "rrf", "channel_weights": {"dense": 1.0, "lexical": 1.0}}


def _lemma_without_numerals(word):
    lemma = getattr(word.feature, "lemma", None) or word.surface
    return word.surface if text_ja.ASCII_WORD.fullmatch(word.surface) else lemma.split("-")[0]


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("site", type=Path)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "knowledge-build")
    parser.add_argument("--skip-dense-variants", action="store_true")
    args = parser.parse_args()
    chunks = kb.extract(kb.load_config(site=args.site, env={})).chunks
    queries = load_dataset(args.dataset)
    embedder = get_embedder("local")
    cache = VectorCache(args.cache_dir / "vectors.sqlite")
    recipes = {"title+learns+content (build default)": lambda c: c.embed_text}
    if not args.skip_dense_variants:
        recipes |= {"content only": lambda c: c.content,
                    "title+content": lambda c: f"{c.title}\n{c.content}"}
    vectors = {name: _vectors(chunks, recipe, embedder, cache) for name, recipe in recipes.items()}
    default_vectors = vectors["title+learns+content (build default)"]

    print("| recipe | hybrid hit@5 | hybrid MRR@10 | variant hit@5 | dense hit@5 | lexical hit@5 |")
    print("|---|---|---|---|---|---|")
    steps = [
        ("original: lemma BM25 + e5(title+learns+content), RRF k=60", ORIGINAL, {}),
        ("+ examples weigh 0.5", dataclasses.replace(ORIGINAL, example_weight=0.5), {}),
        ("+ intent boost 1.1", dataclasses.replace(ORIGINAL, example_weight=0.5, intent_boost=1.1), {}),
    ]
    current = dataclasses.replace(ORIGINAL, example_weight=0.5, intent_boost=1.1)
    for label, change in [("+ reading field 0.15", {"field_weights": {"lemma": 1.0, "reading": 0.15}}),
                          ("+ kana-bigram field 0.2", {"field_weights": {"lemma": 1.0, "reading": 0.15, "kana2": 0.2}}),
                          ("+ romaji query expansion", {"expand_romaji": True}),
                          ("+ English glossary expansion", {"expand_english": True}),
                          ("+ numerals 二次=2次, NFKC dense query (always on below)", {})]:
        current = dataclasses.replace(current, **change)
        steps.append((label, current, {}))
    steps.append(("= shipped: DBSF fusion, lexical weight 1.5", SearchSettings(), {}))
    steps.append(("  without numeral normalisation", SearchSettings(), {"numerals": False}))
    steps.append(("  without NFKC on the dense query", SearchSettings(), {"nfkc": False}))
    for weight in (0.1, 0.3, 0.5, 1.0):
        steps.append((f"  kana-bigram weight {weight}", dataclasses.replace(
            SearchSettings(), field_weights={"lemma": 1.0, "reading": 0.15, "kana2": weight}), {}))
    steps.append(("  reading weight 0", dataclasses.replace(
        SearchSettings(), field_weights={"lemma": 1.0, "reading": 0.0, "kana2": 0.2}), {}))
    for dense, lexical in ((1.0, 1.0), (1.0, 2.0), (1.5, 1.0)):
        steps.append((f"  DBSF weights dense {dense} / lexical {lexical}", dataclasses.replace(
            SearchSettings(), channel_weights={"dense": dense, "lexical": lexical}), {}))
    for k in (20, 60, 100):
        steps.append((f"  RRF k={k} (weights 1 / 1)", dataclasses.replace(SearchSettings(), rrf_k=k, **RRF), {}))
    steps.append(("  RRF k=60, lexical weight 1.5", dataclasses.replace(SearchSettings(), fusion="rrf"), {}))
    for intent in (1.0, 1.1, 1.5):
        steps.append((f"  intent boost {intent}", dataclasses.replace(SearchSettings(), intent_boost=intent), {}))
    for label, settings, switches in steps:
        _row(label, chunks, default_vectors, embedder, settings, queries, **switches)
    for name, matrix in vectors.items():
        if matrix is not default_vectors:
            _row(f"  dense text: {name}", chunks, matrix, embedder, SearchSettings(), queries)


def _vectors(chunks, recipe, embedder, cache) -> np.ndarray:
    texts = {content_hash(recipe(c)): recipe(c) for c in chunks}
    found, _ = embed_with_cache(embedder, texts, cache, batch_size=16, progress=True)
    return np.stack([found[content_hash(recipe(c))] for c in chunks])


def _row(label, chunks, vectors, embedder, settings, queries, numerals=True, nfkc=True) -> None:
    import faiss

    patches = []
    if not numerals:
        patches.append(mock.patch.object(text_ja, "_lemma", _lemma_without_numerals))
    if not nfkc:
        patches.append(mock.patch.object(search_module, "nfkc", lambda text: text))
    for patch in patches:
        patch.start()
    try:
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        lexical = {"fields": lexical_fields(chunks)}
        knowledge = kb.KnowledgeIndex.from_parts(Path("."), {}, chunks, index, lexical, embedder, settings)
        scores = {mode: evaluate(knowledge, queries, k=5, mode=mode) for mode in ("hybrid", "dense", "lexical")}
    finally:
        for patch in patches:
            patch.stop()
    hybrid = scores["hybrid"]
    variant = hybrid.per_kind.get("variant", {}).get("hit@5", float("nan"))
    print(f"| {label} | {hybrid.metrics['hit@5']:.3f} | {hybrid.metrics['mrr@10']:.3f} | {variant:.3f} | "
          f"{scores['dense'].metrics['hit@5']:.3f} | {scores['lexical'].metrics['hit@5']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
