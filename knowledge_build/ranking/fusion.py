"""Fusion: one score per candidate from each channel's scores (dbsf or weighted rrf).

The artifacts fuse their FAISS and BM25 channels with it, the database's knowledge_fused implements the same
(conformance cases in fusion.jsonl hold the two together), the stores of notes and web sources fuse theirs.
"""

from __future__ import annotations

from .settings import SearchSettings


def fuse(channels: dict[str, dict[int, float]], settings: SearchSettings) -> dict[int, float]:
    """One score per candidate row from each channel's {row: score}."""
    if settings.fusion == "rrf":
        return rrf(channels, settings.channel_weights, settings.rrf_k)
    return dbsf(channels, settings.channel_weights)


def rrf(channels: dict[str, dict[int, float]], weights: dict[str, float], k: int) -> dict[int, float]:
    """Weighted reciprocal rank fusion: sum over channels of weight / (k + rank)."""
    fused: dict[int, float] = {}
    for channel, scores in channels.items():
        weight = weights.get(channel, 1.0)
        for rank, row in enumerate(_ranked(scores), start=1):
            fused[row] = fused.get(row, 0.0) + weight / (k + rank)
    return fused


def dbsf(channels: dict[str, dict[int, float]], weights: dict[str, float]) -> dict[int, float]:
    """Distribution-based score fusion: each channel's scores mapped through mean ± 3 sd to 0..1."""
    fused: dict[int, float] = {}
    for channel, scores in channels.items():
        if not scores:
            continue
        values = list(scores.values())
        mean = sum(values) / len(values)
        spread = 6 * (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        low = mean - spread / 2
        weight = weights.get(channel, 1.0)
        for row, value in scores.items():
            fused[row] = fused.get(row, 0.0) + weight * ((value - low) / spread if spread else 1.0)
    return fused


def _ranked(scores: dict[int, float]) -> list[int]:
    return sorted(scores, key=lambda row: (-scores[row], row))
