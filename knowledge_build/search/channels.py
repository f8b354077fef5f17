"""The artifacts' two channels: each a ranking of rows, {row: score}, that the ranker fuses. Dense: FAISS
inner product over the set's vectors (cosines). Lexical: BM25 per Japanese field, weighted
(SearchSettings.field_weights). Each takes the top `candidates` of each kind group (boxes; sections and
tables) so that adding a site's sections never pushes a box out of a channel. The database supplies its own
dense channel in the same form (serve/service.py)."""

from __future__ import annotations

import numpy as np

from ..errors import ArtifactUnreadable
from ..index.postings import Postings
from ..ranking.settings import SearchSettings
from .loader import ArtifactSet


class ArtifactChannels:
    def __init__(self, artifacts: ArtifactSet, settings: SearchSettings):
        self.artifacts = artifacts
        self.settings = settings
        self._groups: dict = {}

    def groups(self, allowed) -> list[np.ndarray | None]:
        """The masks each channel takes its `candidates` from: boxes and page parts (sections,
        tables) separately, so that adding a site's sections never pushes a box out of a channel's
        candidates (nor changes the statistics the fusion reads); one group (None: every allowed
        row) when the index has only one of them."""
        parts = self.artifacts.parts
        if not self.artifacts.mixed:
            return [allowed]
        return [m if allowed is None else m & allowed for m in (~parts, parts)]

    @property
    def dense_depth(self) -> int:
        """How many dense candidates another store (the database) should supply: `candidates`, plus
        the number of page parts when the index mixes them with boxes, so the boxes' top candidates
        are surely among them (the parts' may be fewer than `candidates` when boxes fill the top)."""
        n, parts = len(self.artifacts), int(self.artifacts.parts.sum())
        return min(n, self.settings.candidates + (parts if parts < n else 0))

    def dense(self, qvec: np.ndarray, allowed) -> dict[int, float]:
        """Cosine of the top candidates of each kind group, by row."""
        from . import dense

        found: dict[int, float] = {}
        for slot, group in enumerate(self.groups(allowed)):
            n = min(self.settings.candidates, len(self.artifacts) if group is None else int(group.sum()))
            if n < 1:
                continue
            if group is None:
                selector = None
            elif allowed is None:  # a kind group: the same for every query
                selector = self._groups.get(slot) or self._groups.setdefault(slot, dense.Selector(group))
            else:
                selector = dense.Selector(group)
            found.update(dense.search(self.artifacts.dense_index, qvec, n, selector))
        norms = self.artifacts.columns.norms
        return found if norms is None else {row: score / float(norms[row]) for row, score in found.items()}

    def lexical(self, fields: dict[str, list[str]], allowed) -> dict[int, float]:
        """Weighted BM25 of the top candidates (score > 0), by row (`fields`: the query's tokens,
        query.py)."""
        settings, artifacts = self.settings, self.artifacts
        try:
            scores = field_scores(artifacts.postings, fields, settings.field_weights, len(artifacts))
        except IndexError as exc:  # a v2 file changed in place after a cheap open (verify_v2.py)
            raise ArtifactUnreadable(artifacts.path, "lexical_rows.npy", "a posting points past the last chunk; "
                                     "'knowledge-build validate' checks the whole set") from exc
        found: dict[int, float] = {}
        for group in self.groups(allowed):
            within = scores if group is None else np.where(group, scores, 0.0)
            n = min(settings.candidates, len(within))
            rows = np.argpartition(-within, n - 1)[:n]
            found.update((int(r), float(within[r])) for r in rows if within[r] > 0)
        return found


def field_scores(postings: Postings, fields: dict[str, list[str]], weights: dict[str, float], size: int) -> np.ndarray:
    """The weighted sum over fields of each field's BM25 scores for the query's tokens."""
    scores = np.zeros(size, dtype=np.float32)
    for name, query_tokens in fields.items():
        weight = weights.get(name, 0.0)
        if not weight or name not in postings.fields:
            continue
        found = postings.scores(name, query_tokens)
        if found is not None:
            scores += weight * found
    return scores
