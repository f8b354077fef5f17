"""The lexical analyser: fugashi + unidic-lite (shipped) against SudachiPy + sudachidict_core.

    python bench/retrieval/bench_analyzers.py ../shared/corpus/school_asset [--jsquad ../shared/corpus/jsquad/valid-v1.3.json]

Extracts the chunks once (with the shipped analyser, so chunk ids stay those of a build), embeds
them through the vector cache, then for each analyser re-analyses every chunk and evaluates the
query sets (the dev set and data/eval's own sets) lexical-only and hybrid, and JSQuAD valid when
given. The Sudachi run feeds SplitMode.C words to the same analysis (normalised form as the lemma,
reading form as the reading) and adds the lemmas of each word's SplitMode.A sub-words (判別式 ->
判別, 式); it needs `pip install sudachipy sudachidict_core` (not a dependency of the project).
Prints a Markdown table for docs/retrieval.md. The analysis of an earlier commit is measured by
running this script with that commit's package first on PYTHONPATH (a `git worktree`).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
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
from knowledge_build.text import ja

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness
import harness  # noqa: E402

SETS = {"dev": harness.DEV_QUERIES, "corpus": harness.EVAL_DATA / "corpus_queries.jsonl",
        "section": harness.EVAL_DATA / "section_queries.jsonl", "variant": harness.EVAL_DATA / "variant_queries.jsonl"}
MODES = ("lexical", "hybrid")


class _Features:
    def __init__(self, pos1: str, pos2: str, kana: str, lemma: str):
        self.pos1, self.pos2, self.kana, self.lemma = pos1, pos2, kana, lemma


class _Word:
    """A Sudachi morpheme in the shape ja.analyze reads from fugashi."""

    def __init__(self, morpheme):
        pos = morpheme.part_of_speech()
        self.surface = morpheme.surface()
        ascii_word = self.surface.isascii()
        self.feature = _Features(pos[0], pos[1], "" if ascii_word else morpheme.reading_form(),
                                 morpheme.normalized_form())
        self.is_unk = morpheme.is_oov()


@contextmanager
def sudachi():
    """ja's tagger replaced by Sudachi (SplitMode.C), and each word's SplitMode.A lemmas added."""
    from sudachipy import Dictionary, SplitMode

    tokenizer = Dictionary(dict="core").create(SplitMode.C)
    analyze = ja.analyze

    def words(text: str):
        for piece in ja.pieces(text, ja.MAX_PIECE_CHARS):
            yield from (_Word(m) for m in tokenizer.tokenize(piece))

    def analyze_with_parts(text: str) -> dict[str, list[str]]:
        fields = analyze(text)
        for piece in ja.pieces(ja.normalize(text), ja.MAX_PIECE_CHARS):
            for morpheme in tokenizer.tokenize(piece):
                parts = morpheme.split(SplitMode.A)
                if len(parts) > 1 and morpheme.part_of_speech()[0] not in ja._SKIP_POS:
                    fields["lemma"] += [p.normalized_form() for p in parts]
        return fields

    with mock.patch.object(ja, "_words", words), mock.patch.object(ja, "analyze", analyze_with_parts):
        yield


ANALYSERS = {"fugashi + unidic-lite": None, "SudachiPy C+A + core": sudachi}


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("site", type=Path)
    parser.add_argument("--jsquad", type=Path, help="JSQuAD valid JSON (converted and measured too)")
    parser.add_argument("--jsquad-questions", type=int, default=0, help="only the first N questions (0: all)")
    parser.add_argument("--analysers", default=",".join(ANALYSERS), help="comma-separated names of ANALYSERS")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: lexical, hybrid, dense")
    parser.add_argument("--corpus-sets", default=",".join(SETS), help="which of the corpus's query sets (none: '')")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "knowledge-build")
    args = parser.parse_args()
    embedder = get_embedder("local")
    cache = VectorCache(args.cache_dir / "vectors.sqlite")
    modes = [m for m in args.modes.split(",") if m]
    wanted = [name for name in args.corpus_sets.split(",") if name]
    corpora = [("corpus", args.site, {name: load_dataset(SETS[name]) for name in wanted})] if wanted else []
    with harness.workdir("kb-bench-analyzers-") as work:
        if args.jsquad:
            from knowledge_build.evaluation.squad import convert_squad

            converted = convert_squad(args.jsquad, work)
            queries = load_dataset(converted.queries)
            corpora.append(("jsquad", converted.site, {"JSQuAD": queries[:args.jsquad_questions or None]}))
        print("| analyser | set | mode | hit@1 | hit@5 | MRR@10 |")
        print("|---|---|---|---|---|---|")
        for _, site, sets in corpora:
            chunks = kb.extract(kb.load_config(site=site, env={})).chunks
            vectors = _vectors(chunks, embedder, cache) if modes != ["lexical"] else np.zeros((len(chunks), 384), np.float32)
            for label in args.analysers.split(","):
                patch = ANALYSERS[label]
                with patch() if patch else _nothing():
                    index = _index(chunks, vectors, embedder)
                    for name, queries in sets.items():
                        for mode in modes:
                            m = evaluate(index, queries, k=5, mode=mode).metrics
                            print(f"| {label} | {name} ({len(queries)}) | {mode} | {m['hit@1']:.3f} | "
                                  f"{m['hit@5']:.3f} | {m['mrr@10']:.3f} |", flush=True)


@contextmanager
def _nothing():
    yield


def _vectors(chunks, embedder, cache) -> np.ndarray:
    texts = {content_hash(c.embed_text): c.embed_text for c in chunks}
    found, _ = embed_with_cache(embedder, texts, cache, batch_size=16, progress=True)
    return np.stack([found[content_hash(c.embed_text)] for c in chunks])


def _index(chunks, vectors, embedder):
    import faiss

    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return kb.KnowledgeIndex.from_parts(Path("."), {}, chunks, index, {"fields": lexical_fields(chunks)}, embedder)


if __name__ == "__main__":
    main()
