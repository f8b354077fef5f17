"""What learners could not find (issue 42, item 2): the gap log's questions (store/gaps.py) grouped by meaning, for
the site's owner.

Grouping: each distinct wording is embedded as a query with the set's own embedder; the vectors are centred on their
mean (a model's query vectors all point one way: their cosines sit between 0.75 and 0.95 whatever the topic, and the
mean taken out leaves what tells them apart) and grouped by average linkage, merging while two groups' mean cosine is
at least GROUP_SIMILARITY (docs/retrieval.md, "Questions nobody answered"). Per group: how many times it was asked, the
wordings asked at least `min_wording` times (the others only counted), its gist (the words at least `min_wording` of
its questions hold), the site's nearest chunks with their relevance, and what to do: when a chunk answers some of the
group's questions (relevance at or above the threshold), the words of the questions the site's vocabulary lacks, to
add to the thesaurus; else a box to write, on the nearest chunk's page, or on a new page when nothing is near.
"""

from __future__ import annotations

import unicodedata
from collections import Counter

import numpy as np

GROUP_SIMILARITY = 0.1  # centred cosine, average linkage (docs/retrieval.md, "Questions nobody answered")
NEAR = 0.3  # a chunk this relevant to a group's question is near enough to put a new box beside it
NEAREST = 3


def _wording(query: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", query).split())


def _groups(vectors: np.ndarray, similarity: float) -> list[list[int]]:
    """Average-linkage groups of the rows of `vectors` (unit, centred), merged while their mean cosine is at least
    `similarity`; each group's rows ascending, groups by their first row."""
    groups = [[i] for i in range(len(vectors))]
    cosine = vectors @ vectors.T
    while len(groups) > 1:
        best, pair = -2.0, None
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                value = float(cosine[np.ix_(groups[a], groups[b])].mean())
                if value > best:
                    best, pair = value, (a, b)
        if best < similarity:
            break
        a, b = pair
        groups[a] = sorted(groups[a] + groups[b])
        del groups[b]
    return sorted(groups)


def group_wordings(wordings: list[str], embedder, similarity: float = GROUP_SIMILARITY) -> list[list[str]]:
    """The wordings grouped by meaning: embedded as queries, centred on their mean, average linkage (module doc)."""
    if not wordings:
        return []
    vectors = np.stack([np.asarray(embedder.embed_query(w), np.float64) for w in wordings])
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    centred = vectors - vectors.mean(axis=0) if len(wordings) > 1 else vectors
    centred /= np.maximum(np.linalg.norm(centred, axis=1, keepdims=True), 1e-12)
    return [[wordings[i] for i in members] for members in _groups(centred, similarity)]


def gap_report(rows: list[dict], answered: dict[str, int], index, min_wording: int, relevance_threshold: float,
               similarity: float = GROUP_SIMILARITY) -> dict:
    """The report of the gap log's `rows` (store/gaps.GapLog.rows) over the set `index` (a KnowledgeIndex)."""
    from ..text.ja import content_words

    asked = Counter(_wording(r["query"]) for r in rows)
    groups = []
    if asked:
        vocabulary = index.artifacts.postings
        for texts in group_wordings(sorted(asked), index.embedder, similarity):
            count = sum(asked[t] for t in texts)
            words = Counter()
            for text in texts:
                for word in {surface for surface, _, _ in content_words(text)}:
                    words[word] += asked[text]
            gist = [w for w, n in words.most_common() if n >= min_wording and len(w) > 1][:8]
            nearest: dict[str, dict] = {}
            for text in texts:
                for result in index.search(text, k=NEAREST):
                    have = nearest.get(result.id)
                    if have is None or result.relevance > have["relevance"]:
                        nearest[result.id] = {"id": result.id, "title": result.title, "url": result.url,
                                              "material": result.material, "relevance": round(result.relevance, 3)}
            near = sorted(nearest.values(), key=lambda n: (-n["relevance"], n["id"]))[:NEAREST]
            shown = [{"wording": t, "times": asked[t]} for t in texts if asked[t] >= min_wording]
            groups.append({"count": count, "questions": len(texts), "wordings": shown, "gist": gist,
                           "nearest": near, "todo": _todo(near, [w for w in gist if not _known(vocabulary, w)],
                                                          relevance_threshold)})
    groups.sort(key=lambda g: (-g["count"], g["gist"]))
    return {"questions": sum(asked.values()), "answered": answered, "min_wording": min_wording, "groups": groups}


def _known(postings, word: str) -> bool:
    """Whether the site's lexical channel holds the word (each of its lemmas)."""
    from ..text.ja import analyze

    lemmas = analyze(word)["lemma"]
    return bool(lemmas) and all(postings.rows_of("lemma", lemma).size for lemma in lemmas)


def _todo(near: list[dict], missing: list[str], threshold: float) -> dict:
    if near and near[0]["relevance"] >= threshold:
        return {"action": "thesaurus", "box": near[0]["id"], "words": missing,
                "say": f"the box {near[0]['id']} answers some of these questions: add their words "
                       f"({', '.join(missing) or 'none the site lacks'}) to the thesaurus for it"}
    if near and near[0]["relevance"] >= NEAR:
        return {"action": "write a box", "page": near[0]["material"],
                "say": f"nothing answers these questions: write a box on the page {near[0]['material']}"}
    return {"action": "write a box", "page": None, "say": "nothing on the site is near these questions: write a box on a new page"}
