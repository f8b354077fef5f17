"""Japanese normalisation and tokens for the lexical channel.

NFKC, ASCII lower-casing, and UniDic (unidic-lite via fugashi) lemmas, so that
たすきがけ / たすき掛け / 襷掛け meet as one token. The reading is kept as a second,
weaker token kind ("~" prefix) because readings alone confuse いこう and 移項.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

ANALYZER = "unidic-lite-lemma+reading/1"
_SKIP_POS = {"補助記号", "空白", "助詞", "助動詞"}
_ASCII_WORD = re.compile(r"[a-z0-9]+")


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


@lru_cache(maxsize=1)
def _tagger():
    import fugashi

    return fugashi.Tagger()


def tokens(text: str) -> list[str]:
    """Lemma tokens plus reading tokens ("~タスキガケ") for one text."""
    out: list[str] = []
    for word in _tagger()(normalize(text)):
        feature = word.feature
        if feature.pos1 in _SKIP_POS:
            continue
        surface = word.surface
        if _ASCII_WORD.fullmatch(surface):
            out.append(surface)
            continue
        lemma = getattr(feature, "lemma", None) or surface
        out.append(lemma.split("-")[0] if "-" in lemma and not lemma.startswith("-") else lemma)
        kana = getattr(feature, "kana", None)
        if kana and kana != "*" and len(kana) > 1:
            out.append("~" + kana)
    return out
