"""Romaji words read as kana: THE syllable table (knowledge_build/data/romaji.json) and its reader.

Every engine reads romaji with the same table and the same four rules (stated in the data file): the
artifacts' query expansion (text/ja.py), the search box (browser/analysis.py here; the bundle ships the
table to knowledge-search.js, which reads it instead of a table of its own) and the database
(`romaji_sql_values()` renders the table for the SQL function knowledge_romaji). The `nn` rule is the
IME's and jaconv's: tanni -> タンイ, konnichiha -> コンイチハ (jaconv is the tests' oracle, not a reader).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def table() -> dict:
    """The data file without its doc: what the bundle ships (`vowels`, `n`, `sokuon`, `doubled`, `rows`,
    `contracted`, `small`)."""
    text = resources.files("knowledge_build.data").joinpath("romaji.json").read_text(encoding="utf-8")
    return {key: value for key, value in json.loads(text).items() if key != "doc"}


def _spellings(row: str) -> list[str]:
    return row.split(" ") if " " in row else list(row)


@lru_cache(maxsize=1)
def syllables() -> dict[str, str]:
    """Every syllable's spelling -> its katakana ("kya" -> "キャ")."""
    data = table()
    vowels = data["vowels"]
    out = {onset + vowel: kana for onset, row in data["rows"].items() for vowel, kana in zip(vowels, _spellings(row))}
    out.update({onset + vowel: kana + small for onset, kana in data["contracted"].items()
                for vowel, small in zip(vowels, data["small"])})
    return out


def read(word: str) -> str | None:
    """The katakana of one lower-case romaji word, or None when it is not one (a letter no rule reads:
    cos, log) or has one letter only."""
    data, found = table(), syllables()
    vowels, out, i = data["vowels"], [], 0
    if len(word) < 2:
        return None
    while i < len(word):
        c, after = word[i], word[i + 1:i + 2]
        if c == "n" and after == "n" and word[i + 2:i + 3] != "y":  # rule 1: nn (not before y)
            out.append(data["n"])
            i += 2
        elif c == "n" and (not after or after not in vowels + "y"):  # rule 2: n before a consonant, at the end
            out.append(data["n"])
            i += 1
        elif c in data["doubled"] and (after == c or (c == "t" and word[i + 1:i + 3] == "ch")):  # rule 3
            out.append(data["sokuon"])
            i += 1
        else:  # rule 4: the longest syllable
            size = next((n for n in (3, 2, 1) if i + n <= len(word) and word[i:i + n] in found), 0)
            if not size:
                return None
            out.append(found[word[i:i + size]])
            i += size
    return "".join(out)


def is_word(word: str) -> bool:
    """Whether a lower-case word is romaji (read() reads it)."""
    return read(word) is not None


def romaji_sql_values() -> str:
    """The syllable table as SQL for the database's knowledge_romaji: a jsonb literal of spelling ->
    hiragana (the database folds katakana to hiragana), with the moraic n, the small tsu and the doubled
    letters beside it: `'{"syllables": {...}, "n": "ん", "sokuon": "っ", "doubled": "kgst…", "vowels": "aiueo"}'::jsonb`."""
    data = table()
    value = {"syllables": {k: hiragana(v) for k, v in sorted(syllables().items())}, "n": hiragana(data["n"]),
             "sokuon": hiragana(data["sokuon"]), "doubled": data["doubled"], "vowels": data["vowels"]}
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return "'" + text.replace("'", "''") + "'::jsonb"


def hiragana(text: str) -> str:
    """Katakana as hiragana (ァ..ヶ; ー and the rest unchanged)."""
    return "".join(chr(ord(c) - 0x60) if "ァ" <= c <= "ヶ" else c for c in text)
