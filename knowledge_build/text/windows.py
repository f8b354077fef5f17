"""Cutting a long text into overlapping windows (the knowledge_import rule), shared by imported
notes (store/notes.py) and long page sections (sections.py). No heavy imports: the build uses it."""

from __future__ import annotations

import re

from ..errors import TooManyChunks

_SENTENCE_END = re.compile(r"[。！？.!?]")


def split_text(text: str, chunk_size: int = 500, chunk_overlap: int = 50, max_chunks: int | None = None,
               paragraph: str = "\n\n") -> list[str]:
    """Windows of at most chunk_size characters. Each window ends at the last `paragraph` break,
    else sentence end, in its second half, else at chunk_size; the next one starts chunk_overlap
    characters before that end. A text with no break: ceil((len - overlap) / (size - overlap)) chunks.
    More than `max_chunks` windows raise TooManyChunks (found while splitting, so a call that
    would make millions stops early)."""
    text = text.strip()
    chunks, start = [], 0
    while start < len(text):
        if max_chunks is not None and len(chunks) >= max_chunks:
            raise TooManyChunks(max_chunks, chunk_size, chunk_overlap)
        end = min(start + chunk_size, len(text))
        if end < len(text):
            window = text[start:end]
            half = len(window) // 2
            cut = window.rfind(paragraph)
            if cut < half:
                cut = max((m.end() for m in _SENTENCE_END.finditer(window)), default=-1)
            if cut >= half:
                end = start + cut
        chunks.append(text[start:end].strip())
        if end >= len(text):
            break
        start = max(end - chunk_overlap, start + 1)
    return [c for c in chunks if c]
