"""The dense channel's search over whichever FAISS index a set holds.

A set's IndexScalarQuantizer fp16 (exact) or IndexIVFScalarQuantizer fp16 (approximate, above a size;
see artifacts_v2.dense_kind), or any flat index a set held in memory gives (loader.ArtifactSet.of). A group of rows (a kind group or the
rows a filter allows) is searched with a bitmap selector; on inverted lists a small group is scored
exactly instead, since the probed lists may hold too few of its rows.
"""

from __future__ import annotations

import numpy as np

# On inverted lists, a group of at most this many rows is scored exactly (reconstructed and
# multiplied); larger groups are searched through the lists with a selector.
EXACT_GROUP_ROWS = 20_000


class Selector:
    """A FAISS bitmap selector for one mask, keeping the bits alive as long as FAISS may read them."""

    def __init__(self, mask: np.ndarray):
        import faiss

        self.bits = np.packbits(mask.astype(np.uint8), bitorder="little")
        self.selector = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(self.bits))
        self.count = int(mask.sum())
        self.rows = None
        self.mask = mask


def search(index, qvec: np.ndarray, n: int, group: Selector | None) -> dict[int, float]:
    """Cosine of the top `n` rows (of `group`, when given), by row."""
    import faiss

    query = np.ascontiguousarray(qvec, dtype=np.float32).reshape(1, -1)
    ivf = isinstance(index, faiss.IndexIVF)
    if ivf and group is not None and group.count <= EXACT_GROUP_ROWS:
        if group.rows is None:
            group.rows = np.flatnonzero(group.mask)
        scores = index.reconstruct_batch(group.rows) @ query[0] if group.count else np.zeros(0, np.float32)
        top = np.argpartition(-scores, n - 1)[:n] if n < len(scores) else np.arange(len(scores))
        return {int(group.rows[i]): float(scores[i]) for i in top}
    if ivf:
        params = faiss.SearchParametersIVF(nprobe=index.nprobe)
        if group is not None:
            params.sel = group.selector
    else:
        params = faiss.SearchParameters(sel=group.selector) if group is not None else None
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # one query: OpenMP's threads only wait on each other (26 ms for 1,000 rows
    try:                          # on a busy 2-core machine, 2 ms on one thread)
        scores, rows = index.search(query, n, params=params)
    finally:
        faiss.omp_set_num_threads(threads)
    return {int(r): float(s) for s, r in zip(scores[0], rows[0]) if r >= 0}
