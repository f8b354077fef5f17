"""The bundle's binary pieces that the build writes and the box reads the same way: the FNV-1a that files a term
or a piece in its shard (knowledge-search.js computes the same), LEB128 varints, a term's text, ascending rows,
and the shards terms are filed in (browser/verify.py reads them back)."""

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


def put_text(text: str, out: bytearray) -> None:
    """Append a varint length and the UTF-8 of `text` (a term, a piece: verify.Reader.text reads it)."""
    raw = text.encode("utf-8")
    put_varint(len(raw), out)
    out += raw


def put_rows(rows, out: bytearray) -> None:
    """Append a varint count and the ascending `rows` as varint deltas, the first from row 0 (verify._rows reads them)."""
    put_varint(len(rows), out)
    previous = 0
    for row in rows:
        put_varint(int(row) - previous, out)
        previous = int(row)


def shards(encoded: dict[str, bytes], key, mean_bytes: int, most: int) -> list[bytes]:
    """The bytes of `encoded` (term -> its bytes, in order) filed in shards by the FNV-1a of key(term): as many
    shards, a power of two, as keep their mean size near `mean_bytes`, at most `most`."""
    total = sum(map(len, encoded.values()))
    count = 1
    while count < most and total / count > mean_bytes:
        count *= 2
    parts: list[list[bytes]] = [[] for _ in range(count)]
    for term, data in encoded.items():
        parts[fnv1a(key(term)) % count].append(data)
    return [b"".join(p) for p in parts]
