"""The bundle's binary pieces that the build writes and the box reads the same way: the FNV-1a that files a term
or a piece in its shard (knowledge-search.js computes the same), and LEB128 varints."""

from __future__ import annotations


def fnv1a(text: str) -> int:
    """32-bit FNV-1a of the UTF-8 bytes: the shard a term or a piece is filed in (the browser computes the same)."""
    h = 0x811C9DC5
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def put_varint(value: int, out: bytearray) -> None:
    """Append the LEB128 of one non-negative integer (the per-term loop: numpy's call costs more)."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
