"""The browser search's analysis: what the build indexes and what static/knowledge-search.js computes
for a query, rule for rule, so both sides produce the same terms (tests/test_browser_analysis.py runs
the two on the same strings).

No tokenizer reaches the browser; the site's own vocabulary does, a piece at a time:
- fold (both sides): NFKC, lower case, each run of kanji numerals as its number (二次 -> 2次,
  二十 -> 20), hiragana as katakana (たすき -> タスキ);
- a chunk's terms (build time, with the tokenizer, analyze_document): `body`, the folded surface of
  each word that carries meaning (particles, auxiliaries and punctuation left out), and `reading`, the
  katakana readings of its words and of its runs of nouns (the lexical channel's kana terms: 判別式 ->
  ハンベツシキ);
- a query's terms (query_terms): wherever a term of the vocabulary begins at a position of the folded
  query, it is a body term (a term of one kana, or one that cuts an ASCII word, is not); the longest
  such readings of at least MIN_READING kana, inside no longer one, are its reading terms, and the
  body terms inside them are dropped (さんかくひ is 三角比, not サン and カク). So a query
  is cut where the site's own words are, 「二次方程式の解き方」 -> 2, 次, 方程, 式, 解キ, 方, and
  「はんべつしき」 meets 判別式 by its reading. The vocabulary is filed by the first two characters of its
  terms (a term of one character by itself: term_key), so a query fetches only the pieces its
  characters and pairs of characters name (bundle.py).
A query also gets the kana of its romaji words (tasukigake -> タスキガケ, read together as the lexical
channel reads them), the Japanese of its English school terms (expected value -> 期待値, the lexical
channel's glossary) and the textbook terms of the thesaurus's student wordings (ルート -> 平方根).
"""

from __future__ import annotations

import re

from ..text.ja import nfkc, numerals
from ..text.romaji import read as read_romaji

_WORD = re.compile("[a-z]+")


def fold(text: str) -> str:
    """NFKC (superscripts and subscripts as ^ and _ runs first, as text/ja.py's nfkc: -3² is -3^2), lower
    case, kanji numerals as numbers, hiragana as katakana."""
    text = nfkc(text).lower()
    text = numerals(text)
    return text.translate(_KATAKANA)


_KATAKANA = {c: c + 0x60 for c in range(0x3041, 0x3097)}  # hiragana -> katakana


def romaji_kana(text: str) -> str:
    """The katakana of the romaji words of `text`, read together ('' when it has none): yogen teiri -> ヨゲンテイリ
    (text/romaji.py's table, which the bundle ships to the JS: one table for every engine)."""
    return "".join(filter(None, map(read_romaji, _WORD.findall(fold(text)))))


MIN_READING = 3  # the shortest reading a query's kana are matched with (ハン, シキ alone say little)
_SKIP_POS = {"補助記号", "空白", "助詞", "助動詞"}


def _is_kana(c: str) -> bool:
    return "\u30a1" <= c <= "\u30fa" or c == "\u30fc"


def analyze_document(text: str) -> dict[str, list[str]]:
    """A chunk's body and reading terms, in order, repeats kept (the build counts them); one pass of
    the tokenizer over the text as written (hiragana tells it the particles)."""
    from ..text.ja import _TERM_POS, _katakana, _sub_runs, _words, normalize

    body: list[str] = []
    reading: list[str] = []
    nouns: list[str] = []  # the readings of the run of nouns just before
    for word in _words(normalize(text)):
        feature = word.feature
        kana = getattr(feature, "kana", None)
        kana = kana if kana and kana != "*" else _katakana(word.surface)
        if feature.pos1 in _TERM_POS and kana:
            nouns.append(kana)
        else:
            reading += [r for r in _sub_runs(nouns) if r not in nouns]
            nouns = []
        if feature.pos1 in _SKIP_POS or not word.surface.strip():
            continue
        body.append(fold(word.surface))
        if len(kana) > 1:
            reading.append(kana)
    reading += [r for r in _sub_runs(nouns) if r not in nouns]
    return {"body": [t for t in body if t], "reading": reading}


def query_texts(query: str, thesaurus: dict[str, list[str]], english: dict[str, str]) -> list[str]:
    """The folded texts a query's terms are found in: the query, its romaji words' kana, the Japanese of
    its English school terms (`english`: phrase -> terms, the lexical channel's glossary), its thesaurus
    terms."""
    folded = fold(query)
    texts = [folded, romaji_kana(query)]
    phrase = f" {' '.join(_WORD.findall(folded.replace(chr(39), '')))} "
    texts += [fold(terms) for words, terms in sorted(english.items()) if f" {words} " in phrase]
    texts += [fold(term) for wording in thesaurus_wordings(folded, thesaurus) for term in thesaurus[wording]]
    return [t for t in texts if t]


def term_key(term: str) -> str:
    """The key a term is filed under in the bundle: its first two characters (its one character)."""
    return "".join(list(term)[:2])


def query_keys(texts: list[str]) -> list[str]:
    """The keys whose terms a query's texts may hold: each character and each pair of adjacent ones."""
    keys: list[str] = []
    for text in texts:
        chars = list(text)
        keys += chars + [a + b for a, b in zip(chars, chars[1:])]
    return list(dict.fromkeys(keys))


def query_terms(query: str, thesaurus: dict[str, list[str]], english: dict[str, str],
                lookup) -> tuple[list[str], list[str]]:
    """(body terms, reading terms) of a query, each distinct, in order of position. `lookup(key)`: the
    vocabulary's terms filed under that key (term_key; any field), or a Vocabulary (the same spans, found
    faster where the whole vocabulary is at hand: the build)."""
    body: list[str] = []
    reading: list[str] = []
    for text in query_texts(query, thesaurus, english):
        spans = lookup.spans(text) if isinstance(lookup, Vocabulary) else _spans(text, lookup)
        kana = [s for s in spans if s[1] - s[0] >= MIN_READING and _all_kana(s[2])]
        read = [(a, b, t) for a, b, t in kana if not any(o[0] <= a and b <= o[1] and o[1] - o[0] > b - a for o in kana)]
        reading += [t for _, _, t in read]
        cuts = _ascii_cuts(text)
        for start, end, term in spans:
            # Kana read as a term are that term, not the words its pieces spell (さんかくひ: not サン, カク).
            if (end - start > 1 or not _is_kana(term)) and not (cuts and (start in cuts or end in cuts)) \
                    and not (read and any(a <= start and end <= b and (start, end) != (a, b) for a, b, _ in read)):
                body.append(term)
    return list(dict.fromkeys(body)), list(dict.fromkeys(reading))


def _spans(text: str, lookup) -> list[tuple[int, int, str]]:
    """(start, end, term) of every vocabulary term in `text`: by start, then by length (a key's terms are
    sorted, and those of one start are prefixes of each other)."""
    spans = []
    last = len(text) - 1
    for i, c in enumerate(text):
        for key in (c, c + text[i + 1]) if i < last else (c,):
            for term in lookup(key):
                if text.startswith(term, i):
                    spans.append((i, i + len(term), term))
    return spans


class Vocabulary:
    """A vocabulary whose terms are all at hand: `spans` finds what `_spans` finds, in the same order, by the
    lengths of the terms that begin with each pair of characters."""

    def __init__(self, terms):
        self.terms = set(terms)
        lengths: dict[str, set[int]] = {}
        for term in self.terms:
            if len(term) > 1:
                lengths.setdefault(term[:2], set()).add(len(term))
        self.lengths = {key: sorted(sizes) for key, sizes in lengths.items()}

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        spans, terms, n = [], self.terms, len(text)
        for i, c in enumerate(text):
            if c in terms:
                spans.append((i, i + 1, c))
            for size in self.lengths.get(text[i:i + 2], ()) if i + 1 < n else ():
                if i + size > n:
                    break
                if text[i:i + size] in terms:
                    spans.append((i, i + size, text[i:i + size]))
        return spans


_KANA_RUN = re.compile("[\u30a1-\u30fa\u30fc]+")


def _all_kana(term: str) -> bool:
    return _KANA_RUN.fullmatch(term) is not None


def _same_run(a: str, b: str) -> bool:
    return a.isascii() and b.isascii() and ((a.isalpha() and b.isalpha()) or (a.isdigit() and b.isdigit()))


_ALNUM = re.compile("[a-zA-Z0-9]{2,}")


def _ascii_cuts(text: str) -> set[int]:
    """The positions inside a run of ASCII letters or of digits: a term that begins or ends there cuts the run
    (cos2θ may be cut into cos and 2, as the tokenizer cuts it; cos into c and os may not)."""
    return {i for run in _ALNUM.finditer(text) for i in range(run.start() + 1, run.end())
            if _same_run(text[i - 1], text[i])}


def thesaurus_wordings(folded: str, thesaurus: dict[str, list[str]]) -> list[str]:
    """The wordings found in a folded query, but not one found only inside a longer found one."""
    spans = []
    for wording in sorted(thesaurus):
        start = folded.find(wording)
        while wording and start >= 0:
            spans.append((start, start + len(wording), wording))
            start = folded.find(wording, start + 1)
    kept = [s for s in spans if not any(o != s and o[0] <= s[0] and s[1] <= o[1] for o in spans)]
    return list(dict.fromkeys(w for _, _, w in sorted(kept)))
