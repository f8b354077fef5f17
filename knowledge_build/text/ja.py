"""Japanese normalisation and tokens for the lexical channel.

Six fields, each its own BM25 index at search time:
- lemma: NFKC, lower-cased ASCII, UniDic (unidic-lite via fugashi) lemmas, so that
  たすきがけ / たすき掛け / 襷掛け meet as one token; kanji numerals as digits (二次 = 2次).
- reading: each word's kana reading. Weighed less: readings alone confuse いこう and 移項.
- kana2: character bigrams of the running kana reading (particles included, broken at
  punctuation), so a query typed in kana or romaji (いっぺんとりょうはしのかく, タスキガケ,
  sankaku kansuu) matches however the tokenizer cut either side.
- kana_terms: the readings of the text's nouns and of every run of adjacent nouns (判別式 ->
  ハンベツシキ, ハンベツ, シキ; 二次方程式 -> ニジホウテイシキ, ホウテイシキ, …), so that a query typed in
  kana or romaji (はんべつしき, shisuuhousoku) meets its kanji term as a whole word. The tagger
  cannot read such a query (はんべつしき is cut into はん / 別 / しき): instead, the longest stretches
  of the query's kana that the index holds as readings are its tokens in this field, and the
  tagger's guesses at them are left out of the other fields (kana_spans, analyze_query).
- page: the distinct lemmas of the page (material) title; heading: of the page title and the box
  title together. A query 「AのB」 names a topic A (often the page: 二次方程式の解き方, 一次関数) and an
  aspect B (often the box: 傾きの意味); counted once each, these fields reward a box whose page and
  title cover the query's words over one that repeats the topic in its text (一次関数とは).
A box's text is analysed under its page title too (analyze_box): a box on 一次関数の基本 is about
一次関数 even where its own text never says so.
Queries are analysed the same way, plus expansions: romaji words in kana (read together, as
Japanese is written: yogen teiri -> よげんていり), and English school terms (from the glossary) in Japanese.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from .romaji import hiragana
from .romaji import read as read_romaji

ANALYZER = "unidic-lite/lemma,reading,kana2,kana_terms,page,heading/8"  # 8: a run of numeral words is one number
FIELDS = ("lemma", "reading", "kana2", "kana_terms", "page", "heading")
# What the build's token cache keeps of each text: the fields, and the words' surfaces, which the
# search box's bundle (browser/) reads from the same pass of the tokenizer.
CACHED_FIELDS = (*FIELDS, "surface")
# The title fields are matched with the query's lemmas.
_TITLE_FIELDS = ("page", "heading")
_SKIP_POS = {"補助記号", "空白", "助詞", "助動詞"}
_BREAK_POS = {"補助記号", "空白"}
_COMPOUND_POS = {"名詞", "接尾辞"}
_TERM_POS = {"名詞", "接頭辞", "接尾辞"}  # the words whose runs make kana_terms
MAX_TERM_WORDS = 5  # the longest run of nouns read as one kana term (二次方程式 is 4 words)
MIN_SPAN = 4  # the shortest stretch of a query's kana looked up as a kana term (こと, とき: words)
MAX_KANA_RUN = 40  # a longer run of query kana is looked up in its first this many characters
ASCII_WORD = re.compile(r"[a-z0-9]+")
KANA_N = 2  # length of the kana character n-grams
_KANJI_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_KANJI_UNITS = {"十": 10, "百": 100, "千": 1000}
def normalize(text: str) -> str:
    return nfkc(text).lower()


def nfkc(text: str) -> str:
    """Full-width letters and digits as ASCII (ｃｏｓ２θ -> cos2θ); what the dense channel sees.
    Superscripts and subscripts become ^ and _ runs first: NFKC alone turns -3² into -32 (a number),
    while the pages write the same power in TeX as -3^2."""
    return unicodedata.normalize("NFKC", _SCRIPTS.sub(_script, text))


_SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ"
_SUBSCRIPTS = "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₙ"
_SCRIPTS = re.compile(f"[{_SUPERSCRIPTS}]+|[{_SUBSCRIPTS}]+")


def _script(match: re.Match) -> str:
    run = match.group()
    return ("^" if run[0] in _SUPERSCRIPTS else "_") + unicodedata.normalize("NFKC", run)


# MeCab (under fugashi) segfaults on one input of roughly 200,000-1,000,000 characters (measured
# with fugashi 1.5 / unidic-lite: a run of digits from ~200k, spaced ASCII words ~390k, hiragana
# ~480k, kanji ~570k). Long texts are analysed in pieces of at most this size, cut at a paragraph,
# line, sentence or word boundary, and the pieces' tokens are concatenated: nothing is dropped.
MAX_PIECE_CHARS = 10_000
_BREAKS = (("\n\n",), ("\n",), tuple("。．！？!?."), tuple(" \t\u3000、，,"))


@lru_cache(maxsize=1)
def _tagger():
    import fugashi

    return fugashi.Tagger()


def pieces(text: str, size: int = MAX_PIECE_CHARS) -> list[str]:
    """`text` cut into consecutive pieces of at most `size` characters; "".join(pieces) == text.
    A piece ends after the last paragraph break in its second half, else line break, sentence
    end, space or comma, else at `size` characters."""
    out, start = [], 0
    while len(text) - start > size:
        window = text[start:start + size]
        end = size
        for marks in _BREAKS:
            cut = max(window.rfind(m) + len(m) if m in window else 0 for m in marks)
            if cut >= size // 2:
                end = cut
                break
        out.append(window[:end])
        start += end
    out.append(text[start:])
    return out


def _words(text: str):
    """The tagger's words of `text`, analysed piece by piece (see MAX_PIECE_CHARS). A word's
    features are valid only until the next piece is parsed: read them as the words come."""
    tagger = _tagger()
    for piece in pieces(text, MAX_PIECE_CHARS):
        yield from tagger(piece)


def box_text(page_title: str, title: str, body: str) -> str:
    """The text analyze_box reads: page title and box title on the first two lines (a line break
    inside a title is a space), then the body."""
    return "\n".join([" ".join(page_title.splitlines()), " ".join(title.splitlines()), body])


def analyze_box(text: str) -> dict[str, list[str]]:
    """Every field's tokens of one box written by box_text: lemma, reading and kana2 of the whole
    text (page title included), page and heading from the first two lines, each lemma once; and the
    surfaces the search box's bundle reads (CACHED_FIELDS: cached with the rest, not in the postings)."""
    page_title, title = (text.split("\n", 2) + ["", ""])[:2]
    fields = analyze(text, kana_terms=True, surfaces=True)
    page = analyze(page_title)["lemma"]
    fields["page"] = _distinct(page)
    fields["heading"] = _distinct(page + analyze(title)["lemma"])
    return fields


PLAIN_ANALYZER = "plain-words/1"  # the analyzer of chunks of pages in another language (analyze_plain)
_PLAIN_WORD = re.compile(r"\w+")


def analyze_plain(text: str) -> dict[str, list[str]]:
    """A page in another language (`<html lang="en">`): the same fields as analyze_box, but its lemmas
    are its words (NFKC, lower-cased: what a query's ASCII words become) and it has no readings or kana
    bigrams. The Japanese dictionary would give English words katakana readings, whose bigrams then
    match Japanese queries; this way only the words they share do."""
    page_title, title = (text.split("\n", 2) + ["", ""])[:2]

    def words(part: str) -> list[str]:
        return _PLAIN_WORD.findall(normalize(part))

    page = _distinct(words(page_title))
    return {"lemma": words(text), "reading": [], "kana2": [], "kana_terms": [], "page": page,
            "heading": _distinct(page + words(title)), "surface": words(text)}


def _distinct(tokens: list[str]) -> list[str]:
    return list(dict.fromkeys(tokens))


def analyze(text: str, kana_terms: bool = False, surfaces: bool = False) -> dict[str, list[str]]:
    """The lemma, reading and kana-bigram tokens of one text (never an empty token), and its kana
    terms when asked (the index's field; the stores of web sources and notes do not search it), and
    the surfaces of its words that carry meaning when asked (the search box's body terms, browser/)."""
    surface: list[str] = []
    lemmas: list[str] = []
    readings: list[str] = []
    runs: list[str] = []
    run = ""
    terms: list[str] = []
    nouns: list[str] = []  # the readings of the run of nouns just before
    numeral = ""  # the lemma of the numeral just before, for compounds such as 二次 -> "2次"
    written = ""  # its kanji, when the word just before was a numeral in kanji
    for word in _words(normalize(text)):
        feature = word.feature
        kana = getattr(feature, "kana", None)
        kana = kana if kana and kana != "*" else _katakana(word.surface)
        if feature.pos1 in _BREAK_POS or not kana:
            runs.append(run)
            run = ""
        else:
            run += kana
        if feature.pos1 in _TERM_POS and kana:
            nouns.append(kana)
        else:
            terms += _sub_runs(nouns)
            nouns = []
        if feature.pos1 in _SKIP_POS:
            written = ""
            continue
        if surfaces and word.surface.strip():
            surface.append(word.surface)
        lemma = _lemma(word)
        kanji = word.surface if getattr(feature, "pos2", "") == "数詞" and is_kanji_numeral(word.surface) else ""
        if kanji and written:
            # Adjacent numeral words are one run, read as one number (THE numeral rule, numeral()):
            # 二十 + 三 -> 23, not 20 and 3; 三千 + 五百 -> 3500.
            written += kanji
            lemmas[-1] = numeral = kanji_number(written)
            if len(kana) > 1:
                readings.append(kana)
            continue
        if lemma:
            lemmas.append(lemma)
            # 一次 and 二次 share 次: the compound keeps them apart (二次方程式 -> 2, 次, 2次, 方程, 式).
            if numeral and feature.pos1 in _COMPOUND_POS and not ASCII_WORD.fullmatch(lemma):
                lemmas.append(numeral + lemma)
        numeral = lemma if getattr(feature, "pos2", "") == "数詞" and lemma.isdigit() else ""
        written = kanji if numeral else ""  # the kanji of the numeral just before, as written
        if len(kana) > 1:
            readings.append(kana)
    runs.append(run)
    terms += _sub_runs(nouns)
    fields = {"lemma": lemmas, "reading": readings,
              "kana2": [r[i:i + KANA_N] for r in runs for i in range(len(r) - KANA_N + 1)]}
    if kana_terms:
        fields["kana_terms"] = terms
    if surfaces:
        fields["surface"] = surface
    return fields


def _sub_runs(nouns: list[str]) -> list[str]:
    """The readings of every run of up to MAX_TERM_WORDS adjacent words of `nouns` (each word's
    own included) that are at least two kana long."""
    out = []
    for start in range(len(nouns)):
        for end in range(start + 1, min(len(nouns), start + MAX_TERM_WORDS) + 1):
            reading = "".join(nouns[start:end])
            if len(reading) > 1:
                out.append(reading)
    return out


def term_surfaces(text: str) -> dict[str, str]:
    """The kana terms of `text` (analyze's kana_terms: readings of nouns and of runs of adjacent nouns)
    with how the text writes each, the first time: {"ハンベツシキ": "判別式", "ニジホウテイシキ": "2次方程式"}
    (the text is normalised, so numerals are as NFKC leaves them)."""
    found: dict[str, str] = {}
    nouns: list[tuple[str, str]] = []  # (reading, surface) of the run of nouns just before

    def flush() -> None:
        for start in range(len(nouns)):
            for end in range(start + 1, min(len(nouns), start + MAX_TERM_WORDS) + 1):
                reading = "".join(k for k, _ in nouns[start:end])
                if len(reading) > 1:
                    found.setdefault(reading, "".join(s for _, s in nouns[start:end]))
        nouns.clear()

    for word in _words(normalize(text)):
        kana = getattr(word.feature, "kana", None)
        kana = kana if kana and kana != "*" else _katakana(word.surface)
        if word.feature.pos1 in _TERM_POS and kana:
            nouns.append((kana, word.surface))
        else:
            flush()
    flush()
    return found


_KANA_RUN = re.compile(r"[ぁ-ゖー]+|[ァ-ヺー]+")  # a run of hiragana or of katakana


def kana_spans(text: str, known) -> list[tuple[int, int]]:
    """Where the kana_terms of a query are in `text` (normalised): in each run of its hiragana or of
    its katakana (read as katakana), the stretches of at least MIN_SPAN characters that the index
    holds as kana terms (`known(field, token)`: whether the index holds the token in that field),
    keeping only those inside no longer one (はんべつしきのつかいかた -> はんべつしき, つかいかた).

    A stretch that is a word the tagger knows, with a lemma the index holds (ふつう: 普通; たすきがけ:
    襷掛け), or that lies inside a longer known word (まとまり of ひとまとまり), is left to the lemma;
    a known word whose lemma the index lacks is a homophone the tagger chose (ごうせい: 豪勢, where
    the index has 合成) and is looked up by its reading. In katakana, whose words the tagger cuts
    well, a stretch must begin and end where its words do (not ハノーファ in ハノーファー); in hiragana
    it may cut across them, since the tagger's words of a term it does not know are guesses
    (しすうほうそくって -> し / すう / ほう / そ / くっ / て)."""
    words = _tagged(text)
    starts = {start for start, _, _ in words}
    ends = {end for _, end, _ in words}
    # The words the tagger knows, and whether the index holds their lemma.
    known_words = [(start, end, known("lemma", lemma)) for start, end, lemma in words if lemma]

    def plausible(start: int, end: int, katakana: bool) -> bool:
        if any(a <= start and end <= b and (held or (a, b) != (start, end)) for a, b, held in known_words):
            return False
        return not katakana or (start in starts and end in ends)

    found: list[tuple[int, int]] = []
    for match in _KANA_RUN.finditer(text):
        run = _katakana(match.group()[:MAX_KANA_RUN])
        base, katakana = match.start(), not any("ぁ" <= c <= "ゖ" for c in match.group())
        spans = [(i, j) for i in range(len(run)) for j in range(i + MIN_SPAN, len(run) + 1)
                 if known("kana_terms", run[i:j]) and plausible(base + i, base + j, katakana)]
        found += [(base + i, base + j) for i, j in spans
                  if not any(a <= i and j <= b and (a, b) != (i, j) for a, b in spans)]
    return found


def _tagged(text: str) -> list[tuple[int, int, str]]:
    """(start, end, lemma) of each of the tagger's words of `text`; the lemma is '' for a word the
    dictionary does not know."""
    out, cursor = [], 0
    for word in _words(text):
        at = text.find(word.surface, cursor)
        at = cursor if at < 0 else at
        cursor = at + len(word.surface)
        out.append((at, cursor, "" if getattr(word, "is_unk", False) else _lemma(word)))
    return out


def _lemma(word) -> str:
    surface = word.surface
    if ASCII_WORD.fullmatch(surface):
        return surface
    lemma = getattr(word.feature, "lemma", None) or surface
    if getattr(word.feature, "pos2", "") == "数詞" and all(c in _KANJI_DIGITS or c in _KANJI_UNITS for c in lemma):
        return kanji_number(lemma)
    # UniDic writes loanword lemmas as "ガス-gas": keep the Japanese side (a run of hyphens,
    # "--", has no side to keep and stays itself).
    head = lemma.split("-")[0]
    return head if head and "-" in lemma[1:] else lemma


# THE numeral rule: a run of these characters reads as its number (kanji_number; 二十三 -> 23, 二〇 -> 20,
# 百 -> 100). The box (browser/analysis.py's fold, knowledge-search.js) and the database read every run in the
# text; the artifacts read the runs the tokenizer tags as numerals (adjacent numeral words joined: 二十 + 三),
# so a word that only holds such characters keeps its lemma (一般, 三角形, 千葉): a declared difference, since
# engines without a tokenizer cannot tell 一般 from 一, and each folds its queries as it folds its texts.
NUMERAL_CHARS = "〇一二三四五六七八九十百千"
NUMERAL_RUN = re.compile(f"[{NUMERAL_CHARS}]+")


def is_kanji_numeral(text: str) -> bool:
    return bool(text) and all(c in NUMERAL_CHARS for c in text)


def numerals(text: str) -> str:
    """Every run of kanji numerals in `text` as its number (二十三 -> 23, 百分率 -> 100分率): the box's and
    the database's rule."""
    return NUMERAL_RUN.sub(lambda m: kanji_number(m.group()), text)


def kanji_number(text: str) -> str:
    """The number in digits: 二 -> 2, 十二 -> 12, 二百五 -> 205 (positional digits too: 二〇 -> 20, 〇一 -> 1).
    A run of digits only is read as text, not through int(): Python refuses to convert a string of more than
    4,300 digits (the database's knowledge_number and the box's BigInt read any length)."""
    if all(c in _KANJI_DIGITS for c in text):
        return "".join(str(_KANJI_DIGITS[c]) for c in text).lstrip("0") or "0"
    total, digit = 0, 0
    for c in text:
        if c in _KANJI_DIGITS:
            digit = _KANJI_DIGITS[c]
        else:
            total += (digit or 1) * _KANJI_UNITS[c]
            digit = 0
    return str(total + digit)


def _katakana(text: str) -> str:
    """Hiragana as katakana; '' for anything that is not kana."""
    converted = "".join(chr(ord(c) + 0x60) if "ぁ" <= c <= "ゖ" else c for c in text)
    return converted if converted and all("ァ" <= c <= "ヺ" or c == "ー" for c in converted) else ""


def analyze_query(query: str, english: dict[str, str] | None = None, romaji: bool = True,
                  synonyms: list[str] = (), known_token=None) -> dict[str, list[str]]:
    """A query's tokens, with its romaji words in kana, known English terms in Japanese and the
    textbook terms of its student wording (`synonyms`, from the thesaurus). `known_token(field,
    token)` says whether the index holds a token in a field (kana_spans); without it the query has
    no kana terms."""
    fields: dict[str, list[str]] = {}
    for text in [query, *expansions(query, english or {}, romaji), *synonyms]:
        for name, tokens in _analyze_kana_terms(normalize(text), known_token).items():
            fields.setdefault(name, []).extend(tokens)
    for name in _TITLE_FIELDS:
        fields[name] = _distinct(fields["lemma"])
    return fields


def _analyze_kana_terms(text: str, known_token) -> dict[str, list[str]]:
    """analyze() of a query's text, whose stretches of kana that are readings the index knows are
    kana_terms tokens instead of lemmas and readings: the tagger cuts such kana into words that are not meant (よげんていり
    -> 限定), whose lemmas would outweigh the term."""
    spans = kana_spans(text, known_token) if known_token is not None else []
    masked = text
    for start, end in spans:
        masked = masked[:start] + " " * (end - start) + masked[end:]
    fields = analyze(masked)
    if spans:  # the kana bigrams stay those of the whole text: they read kana as it is written
        fields["kana2"] = analyze(text)["kana2"]
    fields["kana_terms"] = [_katakana(text[start:end]) for start, end in spans]
    return fields


def expansions(query: str, english: dict[str, str], romaji: bool = True) -> list[str]:
    words = re.findall(r"[a-z]+", normalize(query).replace("'", ""))
    out = []
    kana = [read_romaji(w) for w in words] if romaji else []
    if any(kana):
        # Spaces between romaji words are the writer's (yogen teiri): Japanese is read without them. In
        # hiragana, as the tagger reads a query typed in kana (text/romaji.py: THE syllable table).
        out.append(hiragana("".join(k for k in kana if k)))
    phrase = f" {' '.join(words)} "
    out += [term for slug, term in english.items() if f" {slug.replace('-', ' ')} " in phrase]
    return out


# "コツ2：", "ルール1:", "例3.", "練習1" and the like number a box; they name no concept.
_LABEL_WORDS = "コツ|ポイント|ルール|パターン|ステップ|例題|例|注意|練習|演習|問題"
# (?:…)? rather than \s*[0-9]*\s*: two adjacent runs of spaces would backtrack quadratically.
_LABEL = re.compile(rf"^(?:({_LABEL_WORDS}|公式)\s*(?:([0-9０-９①-⑳]+)\s*)?[:：.．、]\s*"
                    rf"|({_LABEL_WORDS})\s*([0-9０-９①-⑳]+)\s*)")


def split_label(title: str) -> tuple[str, str]:
    """("練習1", "解法を選んで解く") from 「練習1：解法を選んで解く」; ("", title) when it has no label.
    The rest keeps its characters as written (full-width stays full-width); the label is NFKC."""
    text = title.strip()
    match = _LABEL.match(text)
    if not match:
        return "", text
    word, number = (match.group(1), match.group(2) or "") if match.group(1) else (match.group(3), match.group(4))
    return unicodedata.normalize("NFKC", word + number), text[match.end():].strip()


def strip_label(title: str) -> str:
    return split_label(unicodedata.normalize("NFKC", title))[1]


def concept_key(title: str) -> str:
    """Titles that name the same concept share this key (判別式 on two pages)."""
    return re.sub(r"\s+", "", strip_label(title)).lower()


def content_words(text: str, nouns_only: bool = False) -> list[tuple[str, str, int]]:
    """(surface, katakana reading, offset in `text`) of the words that carry meaning (optionally
    only the nouns).

    The reading is the tagger's, in context (正 in 正多角形 is セイ, 次 in 二次 is ジ); a word it
    has no kana for (ASCII, digits) keeps its surface. A prefix (定 in 定積分) joins the next word
    and a suffix (次, 形) the previous one, so 二次式 is 2 words (ニジ, シキ), not 3; so does a
    numeral in kanji (二項 is one word)."""
    words: list[list] = []  # [surface, reading, pos, offset]
    glue_next = False
    cursor = 0
    for w in _words(text):
        at = text.find(w.surface, cursor)
        at = cursor if at < 0 else at
        cursor = at + len(w.surface)
        pos = w.feature.pos1
        if pos in _SKIP_POS or not w.surface.strip():
            glue_next = False
            continue
        kana = getattr(w.feature, "kana", None)
        kana = kana if kana and kana != "*" else w.surface
        if words and (glue_next or pos == "接尾辞"):
            words[-1][0] += w.surface
            words[-1][1] += kana
            words[-1][2] = words[-1][2] if pos == "接尾辞" else pos
        else:
            words.append([w.surface, kana, pos, at])
        # 二 of 二項 or 二等分線 is part of the word (niko), a digit stays apart (2-jo).
        glue_next = pos == "接頭辞" or (getattr(w.feature, "pos2", "") == "数詞" and not w.surface.isascii())
    if nouns_only:
        words = [w for w in words if w[2] in ("名詞", "代名詞", "接尾辞", "接頭辞")]
    return [(surface, kana, at) for surface, kana, _, at in words]
