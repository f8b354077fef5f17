"""The search box's static bundle: files the build writes into the artifact set, which the site serves
as they are and static/knowledge-search.js reads in the browser.

Files (flat in the set directory, each listed in the manifest like every other file):
  knowledge-search.json            the entry point: counts, fields, weights, filter values, thesaurus, and
                                   the names of the other files (fetched only when a query needs them)
  knowledge-search.js, …-ui.js …   the modules and styles of static/, copied byte for byte
  knowledge-search-t<hash>.bin     term shards: each term's postings per field, in the shard the FNV-1a
                                   hash of its key (its first two characters, analysis.term_key) picks,
                                   so a query fetches only the shards of its characters and pairs; a term
                                   whose postings take more than INLINE_BYTES is there with no postings
                                   in any field (which no other term has), its postings being in
  knowledge-search-o<hash>.bin     posting shards: the postings of those terms, same layout, in the shard the
                                   FNV-1a hash of the whole term picks; fetched only for a term a query
                                   holds, so the terms that merely share a key with it cost their names
  knowledge-search-r<hash>.json    display records (id, url, title, type, level, learns, excerpt) of
                                   consecutive rows (record_rows), fetched only for the results shown
  knowledge-search-p<hash>.bin     per row: its place (results of one place are grouped), and on a site with
                                   versions or languages (site/facets.py) its place in every version; then per
                                   row its type and level (a byte: 4 bits each, 15 for none), and its version
                                   and language codes (a byte each, 255 for none)
The entry point lists every other file by the first DIGEST_BYTES bytes of its content's sha256 (base64 of
the digests end to end: the entry is fetched whole on the first query, and a list of full hashes would more
than double it); a reader checks each file against its digest before using it (README, "Search box on the
site"). File names carry the first 8 hex digits of that digest, so a server may let browsers cache them
forever; the entry point's name is fixed and it changes whenever anything else does.

Scores are BM25 (k1 1.5, b 0.75, as the lexical channel) computed at build time per term, field and
row, and stored as one byte (`q`, 0–255) with a per-field scale: a query sums weight × scale × q, so
the browser needs no lengths or statistics. A term keeps its MAX_POSTINGS best rows per field (by q, then
row): on a large site a common word's list would otherwise be most of what a query fetches, and its
lowest scores are those that decide nothing. Shard layout (little-endian, varints are LEB128):
  per term, sorted by term: varint len, term (UTF-8); then per field: varint n, n varint row deltas
  (the first from row 0), n bytes q.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import re
from collections import Counter
from functools import lru_cache
from importlib import resources

import numpy as np

from ..index.postings import PostingsBuilder
from ..kinds import BY_TYPE, TYPES
from ..ranking.facets import version_family
from ..ranking.priors import type_priors
from ..ranking.settings import B, BOX_FIELD_WEIGHTS, K1, SearchSettings
from ..text.romaji import table as romaji_table
from ..text.slugs import english_terms
from ..text.tex import readable
from .analysis import MIN_READING, analyze_document, fold, term_key
from .binary import put_rows, put_text, shards
from .binary import fnv1a, put_varint as _put_varint  # noqa: F401  (bundle.fnv1a, bundle._put_varint: the tests')

log = logging.getLogger("knowledge_build.build")
FORMAT = "knowledge-search/3"  # 2: files listed by 8-byte sha256 digests, packed; 3: posting shards, type and level in a byte
PREFIX = "knowledge-search"
ENTRY = f"{PREFIX}.json"
FIELDS = ("body", "reading", "title")
# body: the chunk's text; reading: the tokenizer's kana reading of it (the lexical channel's kana2
# field), which kana and romaji queries match; title: page and box titles. docs/retrieval.md,
# "The search box", has the sweep behind them.
WEIGHTS = BOX_FIELD_WEIGHTS  # ranking/settings.py states them with the other engines' fields
SHARD_BYTES = 1024  # the shards' mean size the count is chosen for (a query fetches one per key it holds)
# Every file of the bundle is listed in the manifest, which a reader loads whole (at most 1 MiB, about 130 bytes a
# file): at most MAX_SHARDS term shards and as many posting shards, MAX_RECORD_FILES record files and the dense
# channel's MAX_PIECE_SHARDS piece shards keep it under 700 KB on any site.
MAX_SHARDS = 1024
INLINE_BYTES = 256  # a term's postings above this go to a posting shard (fetched only when a query holds the term)
MAX_POSTINGS = 2048  # rows per term and field: a term's best (no list on the reference corpus is this long)
MAX_RECORD_FILES = 2048  # a result fetches its file whole: at 100,000 chunks, about 24 KB
RECORD_ROWS = 4  # a query shows up to 8 results: records of 4 rows fetch little that is not shown


def record_rows(n: int) -> int:
    """Rows per record file: RECORD_ROWS, more on a site of over 8,192 chunks (MAX_RECORD_FILES)."""
    return max(RECORD_ROWS, -(-n // MAX_RECORD_FILES))
MAX_LEVELS = 15  # a row's type and level share a byte, 4 bits each; 15 is none
NONE = 15
TYPE_LABELS = {"rule": "ルール", "method": "解き方", "definition": "定義", "tip": "コツ", "example": "例題",
               "section": "解説", "table": "表"}


def varints(values: np.ndarray) -> bytes:
    """LEB128 of non-negative integers, vectorised."""
    values = np.asarray(values, dtype=np.uint64)
    if not len(values):
        return b""
    sizes = np.ones(len(values), dtype=np.int64)
    for shift in (7, 14, 21, 28, 35):
        sizes += values >= (1 << shift)
    ends = np.cumsum(sizes)
    out = np.zeros(int(ends[-1]), dtype=np.uint8)
    starts = ends - sizes
    for j in range(int(sizes.max())):
        has = sizes > j
        more = (sizes[has] > j + 1).astype(np.uint8) << 7
        out[starts[has] + j] = ((values[has] >> np.uint64(7 * j)) & np.uint64(0x7F)).astype(np.uint8) | more
    return out.tobytes()


def _impacts(postings, field: str, slot: int, n_rows: int):
    """{term: (rows, q)} of one field of `postings` and the field's scale (score = scale × q)."""
    vocab, offsets = postings.vocab, np.asarray(postings.offsets)
    prefix = f"{field}\x1f".encode()
    keys = [bytes(vocab[offsets[i]:offsets[i + 1]]) for i in range(len(offsets) - 1)]
    chosen = [i for i, k in enumerate(keys) if k.startswith(prefix)]
    lengths = np.asarray(postings.lengths[slot], dtype=np.float64)
    mean = float(lengths.sum()) / max(1, n_rows)
    norm = K1 * (1 - B + B * lengths / mean) if mean else np.ones(n_rows)
    raw = {}
    top = 0.0
    for i in chosen:
        start, end = int(postings.indptr[i]), int(postings.indptr[i + 1])
        rows = np.asarray(postings.rows[start:end], dtype=np.int64)
        tf = np.asarray(postings.tf[start:end], dtype=np.float64)
        df = end - start
        idf = math.log(1.0 + (n_rows - df + 0.5) / (df + 0.5))
        score = idf * tf * (K1 + 1) / (tf + norm[rows])
        if len(rows) > MAX_POSTINGS:  # the best MAX_POSTINGS, in row order (ties: the lower row)
            best = np.sort(np.lexsort((rows, -score))[:MAX_POSTINGS])
            rows, score = rows[best], score[best]
        raw[keys[i][len(prefix):].decode()] = (rows, score)
        top = max(top, float(score.max()))
    scale = top / 255 if top else 1.0
    return {term: (rows.tolist(), np.clip(np.rint(score / scale), 1, 255).astype(np.uint8).tobytes())
            for term, (rows, score) in raw.items()}, scale


TITLE_ANALYZER = "browser/body,reading/2"  # the token cache's name for the titles' analyze_document


class BundleTerms:
    """The bundle's postings, fed a batch at a time with the lexical channel's analysis of the chunks
    (pipeline.lexical_postings calls `add`), so the build's one pass of the tokenizer serves both: the
    body is the words' surfaces, folded; the reading, their readings and kana terms; the title field the
    titles' own analysis (from the token cache when it has them)."""

    def __init__(self, cache=None):
        self.cache = cache
        self.builder = PostingsBuilder(FIELDS)

    def add(self, chunks, analyzed) -> None:
        from ..text.token_cache import analyze_cached

        titles = [" ".join((c.material_title, *c.parents, c.title)) for c in chunks]
        heads = analyze_cached(titles, analyze_document, TITLE_ANALYZER, ("body", "reading"), self.cache)
        fold_word = lru_cache(maxsize=1 << 16)(fold)  # a site's words repeat: fold each once
        for doc, head in zip(analyzed, heads):
            # A query's kana are read as terms of at least MIN_READING kana: shorter readings are never
            # asked of this field (a title's are: かいのこうしき's カイ is a body term, and 解's reading).
            reading = [r for r in doc["reading"] + doc["kana_terms"] if len(r) >= MIN_READING]
            titles = head["body"] + head["reading"]
            self.builder.add({"body": [fold_word(t) for t in doc["surface"]], "reading": reading,
                              "title": list(dict.fromkeys(titles))})

    def finish(self):
        return self.builder.finish(np.ones(self.builder.rows, dtype=bool))


def _excerpt(text: str) -> str:
    """The excerpt with its maths as text; maths the excerpt's cut left open is dropped (…)."""
    text = readable(text)
    return re.sub(r"\\[(\[].*$", "…", text)


def type_entries(types: list[str]) -> list[dict]:
    """The entry point's types: value, label, the type-prior table's weight and weight when named
    (ranking.type_priors), and the folded words by which a query names the kind."""
    priors = type_priors(SearchSettings())
    return [{"value": t, "label": TYPE_LABELS.get(t, t), "weight": priors.get(t, (1.0, 1.0))[0],
             "named": priors.get(t, (1.0, 1.0))[1], "words": [fold(w) for w in BY_TYPE[t].words] if t in BY_TYPE else []}
            for t in types]


EXTENSIONS = {"t": "bin", "o": "bin", "r": "json", "p": "bin", "v": "bin", "c": "bin", "k": "bin", "g": "bin"}
DENSE_KINDS = {"v": "pieces", "c": "codes", "k": "offset"}  # the dense channel's files (dense.py), by kind
CENTRES = ("g", "centres")  # and on a site whose codes are in clusters, the centres' file


DIGEST_BYTES = 8  # of a file's sha256, in the entry point: 2^64 work to forge a file that passes


def digest(data: bytes) -> bytes:
    """The digest the entry point lists for a file: the first DIGEST_BYTES bytes of its sha256."""
    return hashlib.sha256(data).digest()[:DIGEST_BYTES]


def pack(digests: list[bytes]) -> str:
    """Digests as the entry point holds them: base64 of the digests end to end."""
    return base64.b64encode(b"".join(digests)).decode("ascii")


def unpack(text) -> list[bytes]:
    """The digests `pack` wrote; ValueError for anything else."""
    if not isinstance(text, str):
        raise ValueError("not a string of digests")
    raw = base64.b64decode(text.encode("ascii", "strict"), validate=True)
    if not raw or len(raw) % DIGEST_BYTES:
        raise ValueError(f"not a whole number of {DIGEST_BYTES}-byte digests")
    return [raw[i:i + DIGEST_BYTES] for i in range(0, len(raw), DIGEST_BYTES)]


def file_name(kind: str, digest: bytes) -> str:
    """The name of a bundle file of a kind (t: term shard, r: records, p: places) from its digest; the
    entry point lists digests only (knowledge-search.js makes the same names)."""
    return f"{PREFIX}-{kind}{digest[:4].hex()}.{EXTENSIONS[kind]}"


# A URL's scheme as a browser reads an href: C0 controls and spaces at either end dropped, tabs and
# newlines anywhere (WHATWG URL), so " JavaScript:" and "java\tscript:" are javascript: too.
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_URL_EDGES = "".join(map(chr, range(0x21)))


def safe_link(url) -> str | None:
    """`url` when following it can only load a page: site-relative (no scheme) or http(s); None for
    anything else (javascript:, data:, vbscript:, ...). knowledge-search.js applies the same rule."""
    if not isinstance(url, str):
        return None
    scheme = _SCHEME.match(re.sub("[\t\n\r]", "", url.strip(_URL_EDGES)))
    return url if scheme is None or scheme.group(1).lower() in ("http", "https") else None


def _json(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def bundle_files(chunks, thesaurus: dict[str, tuple[str, ...]], postings, versions=(), dense=None) -> dict[str, bytes]:
    """Every file of the bundle, by name. `thesaurus`: wording -> textbook terms (text/thesaurus.py's
    load_thesaurus); `postings`: BundleTerms.finish() after it was fed every chunk, in order; `versions`: the
    site's, newest first (site/facets.py), which the box answers from by ranking/facets.py's rule; `dense`:
    (vectors, embedder, vector cache, progress) for the dense channel (dense.py), or None for a lexical box."""
    n = len(chunks)
    fields = {}
    scales = []
    for slot, name in enumerate(FIELDS):
        fields[name], scale = _impacts(postings, name, slot, n)
        scales.append(scale)
    files: dict[str, bytes] = {}
    shard_names, posting_names = _term_shards(fields, files)
    thesaurus = {fold(w): list(ts) for w, ts in sorted(thesaurus.items())}
    english = {slug.replace("-", " "): terms for slug, terms in sorted(english_terms().items())}
    dense_entry = _dense_files(chunks, fields, dense, files) if dense is not None else None
    record_names = []
    size = record_rows(n)
    for start in range(0, n, size):
        data = _json([[c.id, safe_link(c.url), readable(c.title), c.type, c.level, [readable(x) for x in c.learns], _excerpt(c.excerpt)]
                      for c in chunks[start:start + size]])
        files[file_name("r", digest(data))] = data
        record_names.append(digest(data))
    types = [t for t in TYPES if any(c.type == t for c in chunks)]
    levels = sorted({c.level for c in chunks if c.level})
    if len(levels) > MAX_LEVELS:
        log.warning("the search box's level filter offers the first %d of the site's %d levels (%s); the rest "
                    "are searched but cannot be chosen as a filter", MAX_LEVELS, len(levels), ", ".join(levels[MAX_LEVELS:]))
        levels = levels[:MAX_LEVELS]
    first: dict[str, int] = {}
    place = np.array([row - first.setdefault(c.url, row) for row, c in enumerate(chunks)], dtype=np.int64)
    # A row's type and level in one byte: the type's number in the low 4 bits, the level's in the high, 15 for none.
    codes = bytes((types.index(c.type) if c.type in types else NONE) | (levels.index(c.level) if c.level in levels else NONE) << 4
                  for c in chunks)
    facets = facet_entries(chunks, versions)
    for name, values in facets.items():  # only the facets the site has: per row its code, 255 for none
        order = [v["value"] for v in values]
        codes += bytes(order.index(getattr(c, name)) if getattr(c, name) in order else 255 for c in chunks)
    rows = varints(place)
    if "version" in facets:  # the place in every version (ranking/facets.py): what a search of all versions groups by
        first = {}
        rows += varints(np.array([row - first.setdefault(version_family(c.url, c.version) or c.url, row)
                                  for row, c in enumerate(chunks)], dtype=np.int64))
    rows += codes
    files[file_name("p", digest(rows))] = rows
    for name, data in static_files().items():
        files[name] = data
    entry = {
        "format": FORMAT, "rows": n, "fields": list(FIELDS), "weights": [WEIGHTS[f] for f in FIELDS],
        "scales": scales, "shards": pack(shard_names), **({"postings": pack(posting_names)} if posting_names else {}), "records": {"rows": size, "files": pack(record_names)},
        "places": pack([digest(rows)]),
        "types": type_entries(types),
        "romaji": romaji_table(),  # THE romaji syllable table (data/romaji.json), which the box reads romaji with
        "levels": [{"value": v, "label": v} for v in levels],
        "thesaurus": thesaurus,
        "english": english,
        **{f"{name}s": values for name, values in facets.items()},
        **({"dense": dense_entry} if dense_entry else {}),
    }
    files[ENTRY] = _json(entry)
    return files


def _dense_files(chunks, fields: dict, dense, files: dict[str, bytes]) -> dict | None:
    """Write the dense channel's files (dense.py) into `files`; the entry point's "dense", or None when the
    site has nothing to map."""
    from .analysis import Vocabulary, query_terms
    from .dense import dense_tables

    vectors, embedder, cache, progress = dense
    rows_of: dict[str, set] = {}
    for per_term in fields.values():
        for term, (rows, _) in per_term.items():
            rows_of.setdefault(term, set()).update(rows)
    # The pieces are the body's words (a query's body terms): a reading in katakana is a word's sound, which the
    # embedder reads as little more than noise (a kana question is found by the words' channel).
    vocabulary = {term: len(rows_of[term]) for term in fields["body"]}
    found = Vocabulary(rows_of)

    def pieces_of(text: str) -> list[str]:
        # the text's own pieces: a training text is not a student's wording to expand
        return [term for term in query_terms(text, {}, {}, found)[0] if term in vocabulary]

    tables = dense_tables(chunks, vectors, vocabulary, pieces_of, embedder, cache, progress)
    if tables is None:
        return None
    entry, pieces, codes, offset, centres = tables.files()
    written = {"v": pieces, "c": codes, "k": [offset]}
    keys = dict(DENSE_KINDS)
    if centres:
        written[CENTRES[0]], keys[CENTRES[0]] = [centres], CENTRES[1]
    for kind, parts in written.items():
        entry[keys[kind]] = pack(_write_files(parts, kind, files))
    return entry


def facet_entries(chunks, versions=()) -> dict[str, list[dict]]:
    """{"version": [{value, label}] newest first, "language": […] most pages first}: only those the site has."""
    out = {}
    present = {c.version for c in chunks if c.version}
    if present:
        out["version"] = [{"value": v, "label": v} for v in [*[v for v in versions if v in present],
                                                            *sorted(present - set(versions))]]
    languages = Counter(c.language for c in chunks if c.language)
    if languages:
        out["language"] = [{"value": v, "label": v} for v, _ in sorted(languages.items(), key=lambda x: (-x[1], x[0]))]
    return out


def _term_shards(fields: dict, files: dict[str, bytes]) -> tuple[list[bytes], list[bytes]]:
    """Write the term shards and the posting shards into `files`; the digests of each, by shard number."""
    every = sorted(set().union(*(f.keys() for f in fields.values())))
    encoded, moved = {}, {}
    for term in every:
        head = bytearray()
        put_text(term, head)
        data = bytearray(head)
        for name in FIELDS:
            rows, q = fields[name].get(term, ((), b""))
            put_rows(rows, data)
            data += q
        if len(data) - len(head) > INLINE_BYTES:  # in its key's shard with no postings; they are in a posting shard
            moved[term] = bytes(data)
            data = head + bytes(len(FIELDS))
        encoded[term] = bytes(data)
    terms = _write_files(shards(encoded, term_key, SHARD_BYTES, MAX_SHARDS), "t", files)
    return terms, _write_files(shards(moved, lambda term: term, SHARD_BYTES, MAX_SHARDS), "o", files) if moved else []


def _write_files(parts: list[bytes], kind: str, files: dict[str, bytes]) -> list[bytes]:
    """Put each of `parts` into `files` as a file of `kind`; their digests, in order."""
    names = []
    for data in parts:
        files[file_name(kind, digest(data))] = data
        names.append(digest(data))
    return names


def static_files() -> dict[str, bytes]:
    """The modules and styles of static/, by file name."""
    folder = resources.files("knowledge_build.browser").joinpath("static")
    return {item.name: item.read_bytes() for item in sorted(folder.iterdir(), key=lambda i: i.name)
            if item.is_file() and item.name.startswith(PREFIX)}
