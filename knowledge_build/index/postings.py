"""Lexical postings: the BM25 channel and relevance's lexical coverage, from one sparse index.

Per field and token, a posting list: the rows that hold the token (ascending) and how often (tf),
with each row's length per field. BM25 is computed at query time from them exactly as bm25s's
Lucene variant computes it at index time (k1 1.5, b 0.75, float32, an empty document counted as
one token), so a set (whose postings are memory-mapped files) ranks as bm25s ranks the same
tokens. Relevance's coverage (relevance.py) reads the same postings: the document
frequency among the anchored boxes is kept per token, and a candidate row's tf is found by a
binary search in the token's list, so no per-row token lists are needed at query time.

The vocabulary is one sorted list of `field \\x1f token` keys (UTF-8), searched by bisection over
its offsets; an index built in memory from token lists (from_token_lists) has the same structures.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter

import numpy as np

from ..ranking.settings import B, K1  # BM25s constants, stated once with the ranking

EMPTY_DOC = "\x00"  # never a query token; bm25s indexed an empty document as this one token
SEPARATOR = "\x1f"


def key(field: str, token: str) -> bytes:
    return f"{field}{SEPARATOR}{token}".encode("utf-8")


class PostingsBuilder:
    """Rows are added in order (row i = chunk i); `finish` sorts the vocabulary and the postings.
    While adding, a token's code is its number within its field times the number of fields plus the
    field's slot, so a row costs one dict lookup per distinct token."""

    def __init__(self, fields: tuple[str, ...]):
        self.fields = tuple(fields)
        self._ids: list[dict[str, int]] = [{} for _ in self.fields]
        self._token, self._row, self._tf = array("q"), array("i"), array("H")
        self._lengths = [array("i") for _ in self.fields]
        self.rows = 0

    def add(self, tokens_by_field: dict[str, list[str]]) -> None:
        row, width = self.rows, len(self.fields)
        for slot, name in enumerate(self.fields):
            tokens = [t for t in tokens_by_field.get(name, ()) if t and t != EMPTY_DOC]
            self._lengths[slot].append(max(1, len(tokens)))
            counts = Counter(tokens)
            ids = self._ids[slot]
            self._token.extend([ids.setdefault(t, len(ids)) * width + slot for t in counts])
            self._row.extend([row] * len(counts))
            self._tf.extend([min(tf, 0xFFFF) for tf in counts.values()])
        self.rows += 1

    def finish(self, reference: np.ndarray) -> "Postings":
        """The sorted postings; `reference` marks the rows relevance's coverage is measured against."""
        width = len(self.fields)
        size = max((len(ids) for ids in self._ids), default=0) * width
        keys: list[bytes | None] = [None] * size
        for slot, (name, ids) in enumerate(zip(self.fields, self._ids)):
            for token, local in ids.items():
                keys[local * width + slot] = key(name, token)
        codes = [code for code, k in enumerate(keys) if k is not None]
        codes.sort(key=keys.__getitem__)
        rank = np.zeros(size, dtype=np.int64)
        rank[np.array(codes, dtype=np.int64)] = np.arange(len(codes))
        sorted_keys = [keys[code] for code in codes]
        del keys
        # Peak memory at 100,000 chunks (22 M postings) is here: int32 token numbers, the builder's
        # arrays freed as soon as they are read, df_ref counted on the reference rows' postings only.
        token = rank.astype(np.int32)[np.frombuffer(self._token, dtype=np.int64)] if len(self._token) \
            else np.zeros(0, np.int32)
        del rank
        self._token = array("q")
        order = np.argsort(token, kind="stable")  # rows were appended in order: each list stays ascending
        all_rows = np.frombuffer(self._row, dtype=np.int32) if len(self._row) else np.zeros(0, np.int32)
        vocabulary = len(sorted_keys)
        df_ref = np.bincount(token[reference[all_rows]], minlength=vocabulary) if vocabulary else np.zeros(0, np.int64)
        indptr = np.zeros(vocabulary + 1, dtype=np.int64)
        np.cumsum(np.bincount(token, minlength=vocabulary), out=indptr[1:])
        del token
        rows = all_rows[order]
        del all_rows
        self._row = array("i")
        tf = (np.frombuffer(self._tf, dtype=np.uint16) if len(self._tf) else np.zeros(0, np.uint16))[order]
        del order
        self._tf = array("H")
        offsets = np.zeros(vocabulary + 1, dtype=np.int64)
        np.cumsum([len(k) for k in sorted_keys], out=offsets[1:])
        lengths = np.array([np.frombuffer(a, dtype=np.int32) if len(a) else np.zeros(0, np.int32)
                            for a in self._lengths], dtype=np.int32).reshape(len(self.fields), self.rows)
        return Postings(self.fields, b"".join(sorted_keys), offsets, indptr, rows, tf, lengths,
                        df_ref.astype(np.int32), reference)


def from_token_lists(fields: dict[str, list[list[str]]], reference: np.ndarray) -> "Postings":
    """The postings of per-field token lists (row i = chunk i), for an index built in memory."""
    names = tuple(fields)
    builder = PostingsBuilder(names)
    rows = len(next(iter(fields.values()))) if fields else 0
    for row in range(rows):
        builder.add({name: fields[name][row] for name in names})
    return builder.finish(reference)


class Postings:
    """The sparse index, in memory or memory-mapped (the arrays may be np.memmap)."""

    def __init__(self, fields, vocab: bytes, offsets, indptr, rows, tf, lengths, df_ref, reference):
        self.fields = tuple(fields)
        self.vocab, self.offsets, self.indptr = vocab, offsets, indptr
        self.rows, self.tf, self.lengths, self.df_ref = rows, tf, lengths, df_ref
        self.size = int(lengths.shape[1]) if lengths.ndim == 2 else 0
        reference = np.asarray(reference, dtype=bool)
        self.reference = reference if reference.any() else np.ones(self.size, dtype=bool)
        self.n_reference = int(self.reference.sum())
        self._offsets = memoryview(np.ascontiguousarray(offsets, dtype=np.int64)).cast("B").cast("q")
        self._norm: dict[str, np.ndarray] = {}
        self._found: dict[tuple[str, str], int] = {}
        self._ref_mean: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._offsets) - 1 if len(self._offsets) else 0

    def token_id(self, field: str, token: str) -> int:
        """The token's position in the sorted vocabulary, or -1 (remembered: a query asks for each of
        its tokens several times, for BM25 and for relevance's coverage)."""
        found = self._found.get((field, token))
        if found is None:
            if len(self._found) > 100_000:
                self._found.clear()
            found = self._found[(field, token)] = self._search(key(field, token))
        return found

    def _search(self, wanted: bytes) -> int:
        lo, vocab, offsets = self._search_at_least(wanted), self.vocab, self._offsets
        return lo if lo < len(self) and vocab[offsets[lo]:offsets[lo + 1]] == wanted else -1

    def _slot(self, field: str) -> int:
        return self.fields.index(field)

    def norm(self, field: str) -> np.ndarray:
        """Per row, bm25s's length normalisation k1 * (1 - b + b * len / mean len), as float32."""
        if field not in self._norm:
            lengths = np.asarray(self.lengths[self._slot(field)], dtype=np.float64)
            mean = float(lengths.sum()) / max(1, self.size)
            self._norm[field] = (K1 * ((1 - B) + B * lengths / mean)).astype(np.float32)
        return self._norm[field]

    def idf(self, df: int) -> np.float32:
        return np.float32(math.log(1 + (self.size - df + 0.5) / (df + 0.5)))

    def scores(self, field: str, tokens: list[str]) -> np.ndarray | None:
        """BM25 of every row for the query's tokens in this field (a repeated token counts again, as
        in bm25s); None when no token is in the vocabulary."""
        ids = [self.token_id(field, t) for t in tokens if t and t != EMPTY_DOC]
        ids = [i for i in ids if i >= 0]
        if not ids:
            return None
        norm = self.norm(field)
        scores = np.zeros(self.size, dtype=np.float32)
        for token in ids:
            start, end = int(self.indptr[token]), int(self.indptr[token + 1])
            rows = np.asarray(self.rows[start:end])
            tf = np.asarray(self.tf[start:end], dtype=np.float32)
            scores[rows] += self.idf(end - start) * (tf / (norm[rows] + tf))
        return scores

    # -- coverage (relevance.py) -------------------------------------------------------------

    def reference_mean_length(self, field: str) -> float:
        if field not in self._ref_mean:
            lengths = np.asarray(self.lengths[self._slot(field)])
            self._ref_mean[field] = float(lengths[self.reference].sum()) / max(1, self.n_reference)
        return self._ref_mean[field]

    def reference_df(self, field: str, token: str) -> int:
        found = self.token_id(field, token)
        return int(self.df_ref[found]) if found >= 0 else 0

    def term_frequencies(self, field: str, token: str, rows: np.ndarray) -> np.ndarray:
        """tf of the token in each of `rows` (0 where absent)."""
        found = self.token_id(field, token) if token and token != EMPTY_DOC else -1
        out = np.zeros(len(rows), dtype=np.float64)
        if found < 0 or not len(rows):
            return out
        start, end = int(self.indptr[found]), int(self.indptr[found + 1])
        holding = np.asarray(self.rows[start:end])
        at = np.searchsorted(holding, rows)
        hit = (at < len(holding)) & (holding[np.minimum(at, len(holding) - 1)] == rows)
        out[hit] = np.asarray(self.tf[start:end])[at[hit]]
        return out

    def rows_of(self, field: str, token: str) -> np.ndarray:
        """The rows that hold the token in the field, in row order (empty when none does)."""
        found = self.token_id(field, token) if token and token != EMPTY_DOC else -1
        if found < 0:
            return np.zeros(0, dtype=np.int64)
        return np.asarray(self.rows[int(self.indptr[found]):int(self.indptr[found + 1])])

    def field_lists(self, field: str) -> list[list[str]]:
        """Per row, the field's tokens, each repeated as often as the row holds it, in token order
        (what the row's token list was, but for its order)."""
        prefix = key(field, "")
        out: list[list[str]] = [[] for _ in range(self.size)]
        start = self._search_at_least(prefix)
        for token in range(start, len(self)):
            raw = self.vocab[self._offsets[token]:self._offsets[token + 1]]
            if not raw.startswith(prefix):
                break
            text = raw[len(prefix):].decode("utf-8")
            begin, end = int(self.indptr[token]), int(self.indptr[token + 1])
            for row, tf in zip(np.asarray(self.rows[begin:end]).tolist(), np.asarray(self.tf[begin:end]).tolist()):
                out[row].extend([text] * tf)
        return out

    def row_tokens(self, field: str, rows) -> dict[int, list[str]]:
        """The field's tokens of a few rows (each repeated as often as the row holds it, in token
        order, as field_lists gives them), found by one pass over the field's postings."""
        prefix = key(field, "")
        first = self._search_at_least(prefix)
        last = self._search_at_least(key(field, "")[:-1] + bytes([ord(SEPARATOR) + 1]))
        out: dict[int, list[str]] = {int(row): [] for row in rows}
        if first >= last or not out:
            return out
        begin, end = int(self.indptr[first]), int(self.indptr[last])
        at = np.nonzero(np.isin(np.asarray(self.rows[begin:end]), np.fromiter(out, dtype=np.int64)))[0] + begin
        tokens = np.searchsorted(np.asarray(self.indptr), at, side="right") - 1
        for position, token in zip(at.tolist(), tokens.tolist()):
            raw = self.vocab[self._offsets[token]:self._offsets[token + 1]]
            out[int(self.rows[position])].extend([raw[len(prefix):].decode("utf-8")] * int(self.tf[position]))
        return out

    def _search_at_least(self, wanted: bytes) -> int:
        lo, hi = 0, len(self)
        vocab, offsets = self.vocab, self._offsets
        while lo < hi:
            mid = (lo + hi) // 2
            if vocab[offsets[mid]:offsets[mid + 1]] < wanted:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def row_length(self, field: str, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.lengths[self._slot(field)])[rows].astype(np.float64)
