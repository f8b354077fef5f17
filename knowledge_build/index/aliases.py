"""Links that survive edits (issue 42, item 3): when a build finds that a chunk of the previous set is gone but a new
chunk holds its content (renamed id) or most of it (slightly edited, same page and kind), it records the old id as an
alias of the new one, in the set's `aliases.json` ({old id: current id}, sorted). Aliases of earlier builds are
carried forward, following a chain to the current id; one whose chunk is gone without a successor is dropped, and an
id that is a chunk again is no alias. The set's readers (search/loader.py) resolve an old id to its chunk and say it
moved.

Matching, for each chunk of the previous set whose id the new set lacks, among the new set's chunks whose ids the
previous set lacked (each taken at most once):
1. the same content hash (what is embedded: title, learns, content): the one of the same page and kind first;
2. else the same page and kind and a text at least SIMILAR alike (Dice coefficient of the texts' character bigrams):
   the most alike, when no other is as alike.
"""

from __future__ import annotations

import json
from pathlib import Path

ALIASES = "aliases.json"
SIMILAR = 0.8


def _bigrams(text: str) -> set[str]:
    return {text[i:i + 2] for i in range(len(text) - 1)}


def _dice(a: set[str], b: set[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a or b else 0.0


def previous_set(output: Path) -> tuple[list[dict], dict[str, str]]:
    """The chunks (id, material, type, content, content_hash) and aliases of the set at `output`, as far as they can be
    read; ([], {}) when there is none or it is unreadable (the first build, a damaged set: no alias is lost that a
    reader could have resolved)."""
    from .layout import V2_CHUNKS

    chunks: list[dict] = []
    try:
        with (output / V2_CHUNKS).open(encoding="utf-8") as lines:
            for line in lines:
                row = json.loads(line)
                chunks.append({k: row.get(k, "") for k in ("id", "material", "type", "content", "content_hash")})
    except (OSError, ValueError, AttributeError):
        return [], {}
    try:
        aliases = json.loads((output / ALIASES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        aliases = {}
    if not isinstance(aliases, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()):
        aliases = {}
    return chunks, aliases


def aliases_for(previous: list[dict], previous_aliases: dict[str, str], chunks) -> dict[str, str]:
    """{old id: current id} for the new set's `chunks` (Chunk objects), given the previous set's chunks and aliases."""
    current = {c.id for c in chunks}
    before = {p["id"] for p in previous}
    gone = [p for p in previous if p["id"] not in current]
    fresh = [c for c in chunks if c.id not in before]
    taken: set[str] = set()
    moved: dict[str, str] = {}
    by_hash: dict[str, list] = {}
    by_place: dict[tuple[str, str], list] = {}  # (page, kind): the only candidates of step 2
    for c in fresh:
        by_hash.setdefault(c.content_hash, []).append(c)
        by_place.setdefault((c.material, c.type), []).append(c)
    for p in gone:  # 1: the same content
        found = [c for c in by_hash.get(p["content_hash"], []) if c.id not in taken]
        found.sort(key=lambda c: (c.material != p["material"], c.type != p["type"], c.id))
        if found:
            moved[p["id"]] = found[0].id
            taken.add(found[0].id)
    grams = {}
    for p in gone:  # 2: most of it, on the same page and of the same kind
        if p["id"] in moved:
            continue
        mine = _bigrams(p["content"])
        scored = []
        for c in by_place.get((p["material"], p["type"]), []):
            if c.id in taken:
                continue
            if c.id not in grams:
                grams[c.id] = _bigrams(c.content)
            scored.append((_dice(mine, grams[c.id]), c.id))
        scored.sort(reverse=True)
        if scored and scored[0][0] >= SIMILAR and (len(scored) == 1 or scored[1][0] < scored[0][0]):
            moved[p["id"]] = scored[0][1]
            taken.add(scored[0][1])
    out = {}
    for old, target in {**previous_aliases, **moved}.items():
        seen = {old}
        while target not in current and target in moved and target not in seen:  # renamed again since
            seen.add(target)
            target = moved[target]
        if target in current and old not in current:
            out[old] = target
    return dict(sorted(out.items()))


def read_aliases(path: Path, manifest: dict) -> dict[str, str]:
    """The aliases of the set at `path` whose manifest lists them, checked against its sha256; {} when it has none."""
    from .verify_v2 import _check_sha256

    entry = manifest["files"].get(ALIASES)
    if not entry:
        return {}
    _check_sha256(path, ALIASES, entry["sha256"])
    data = json.loads((path / ALIASES).read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(data, dict) else {}


def aliases_file(aliases: dict[str, str]) -> bytes:
    return (json.dumps(aliases, ensure_ascii=False, indent=0, sort_keys=True) + "\n").encode("utf-8")
