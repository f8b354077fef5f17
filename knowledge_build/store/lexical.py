"""The database's lexical channel: terms that need no tokenizer at query time.

The `search_knowledge(query_text, …)` RPC (migration 006) analyses a query in SQL alone, so the
terms it matches are ones SQL can cut: character bigrams. Each published chunk gets three fields
of them, kept as posting lists in `knowledge_terms` (one row per term: the chunks that hold it and
how often) and as the chunk's own bag in `knowledge_chunk_terms` (what an incremental publish
takes back out):

- `t`: bigrams of the folded lexical text (page title, headings, box title, learns, content:
  pipeline.lexical_text), a run of one character as itself;
- `h`: the same of the titles alone (page title, headings, box title);
- `k`: bigrams of the text's kana reading, the artifacts' own `kana2` tokens (the tokenizer's
  readings, read at build time), in hiragana: 「たすきがけ」 typed in kana meets たすき掛け's
  reading たすきがけ;
- `r`: the readings of its nouns and noun runs, the artifacts' `kana_terms` tokens, in hiragana
  (判別式 -> はんべつしき): a query's kana stretches that are such terms match them whole.

A query's bigrams that are all hiragana (particles, verb endings: 「がわ」「って」) are not looked up
in `t`: they match every page; its kana reaches the readings through `k` and `r`.

Folding is the same on both sides and written once here: NFKC, each run of kanji numerals as its
number (text/ja.py's numeral rule), ASCII upper case to lower, katakana to hiragana, and the characters
of SEPARATORS cut runs. `sql_tokens()` gives the migration the
same constants (so SQL and Python cannot drift apart); tests hold the two to the same terms.
"""

from __future__ import annotations

import string
import unicodedata
from collections import Counter

from ..text.ja import numerals

FIELDS = ("t", "h", "k", "r", "w")
SEPARATOR = "\x1f"  # never in a folded text: it is a separator itself
# Whitespace, ASCII punctuation and the Japanese punctuation, brackets and marks that part words.
SEPARATORS = ("\t\n\r\x0b\x0c \x1f" + string.punctuation +
              "、。・「」『』【】〈〉《》〔〕〘〙〚〛…‥〜～“”‘’※→←↑↓⇒⇔○●◯△▲□■◆◇★☆♪")
_KATAKANA = "".join(chr(c) for c in range(0x30A1, 0x30F7))  # ァ … ヶ
_HIRAGANA = "".join(chr(c - 0x60) for c in range(0x30A1, 0x30F7))  # ぁ … ゖ
_CUT_FROM = string.ascii_uppercase + SEPARATORS
_CUT_TO = string.ascii_lowercase + " " * len(SEPARATORS)
_FOLD = str.maketrans(_CUT_FROM + _KATAKANA, _CUT_TO + _HIRAGANA)


def fold(text: str) -> str:
    """NFKC, each run of kanji numerals as its number (text/ja.py numerals: 二十三 -> 23, 二次 -> 2次), ASCII
    lower case, katakana as hiragana, every separator a space (SQL: knowledge_fold, knowledge_numerals)."""
    return numerals(unicodedata.normalize("NFKC", text or "")).translate(_FOLD)


def bigrams(folded: str) -> list[str]:
    """The character bigrams of each run of a folded text (a one-character run is its own term)."""
    out: list[str] = []
    for run in folded.split():
        out.extend([run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)])
    return out


def chunk_terms(lexical_text: str, titles: str, readings: dict[str, list[str]]) -> dict[str, Counter]:
    """A chunk's bag per field: `lexical_text` (Chunk.lexical_text), `titles` (page title,
    headings, box title) and the artifacts' reading tokens (`kana2`: katakana bigrams of its
    reading; `kana_terms`: readings of its nouns and noun runs)."""
    return {"t": Counter(bigrams(fold(lexical_text))), "h": Counter(bigrams(fold(titles))),
            "k": Counter(fold(token) for token in readings.get("kana2", ()) if token),
            "r": Counter(fold(token) for token in readings.get("kana_terms", ()) if token),
            "w": Counter(fold(token) for token in readings.get("lemma", ()) if token)}


READING_FIELDS = ("kana2", "kana_terms", "lemma")  # the artifacts' fields the reading and word terms come from


class Readings:
    """The artifacts' READING_FIELDS tokens of the chunks, read for the rows asked for: a few rows
    (an incremental publish) by one pass over each field's postings, many by inverting them whole."""

    def __init__(self, postings, size: int):
        self._postings, self._size = postings, size
        self._lists: dict[str, list[list[str]]] | None = None  # every row's tokens, once many rows are asked for

    def of(self, rows: list[int]) -> list[dict[str, list[str]]]:
        postings = self._postings
        if self._lists is None and len(rows) > REBUILD_SHARE * max(1, self._size):
            self._lists = {name: postings.field_lists(name) if name in postings.fields else [[] for _ in
                                                                                           range(self._size)]
                           for name in READING_FIELDS}
        if self._lists is not None:
            return [{name: lists[row] for name, lists in self._lists.items()} for row in rows]
        found = {name: postings.row_tokens(name, rows) if name in postings.fields else {}
                 for name in READING_FIELDS}
        return [{name: found[name].get(row, []) for name in READING_FIELDS} for row in rows]


def bag(fields: dict[str, Counter]) -> tuple[list[str], list[int], list[int]]:
    """(terms, tfs, lengths) as stored: terms keyed `field \\x1f term` in sorted order, tf capped at
    32767 (smallint), each field's length (its token count, at least 1, as the artifacts count)."""
    terms, tfs = [], []
    for name in FIELDS:
        for term, tf in sorted(fields.get(name, Counter()).items()):
            terms.append(f"{name}{SEPARATOR}{term}")
            tfs.append(min(tf, 32767))
    lengths = [max(1, sum(fields.get(name, Counter()).values())) for name in FIELDS]
    return terms, tfs, lengths


def _e_string(text: str) -> str:
    """`text` as a Postgres E'' literal."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    for char, name in (("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r"), ("\x0b", "\\013"), ("\x0c", "\\f"),
                       ("\x1f", "\\037")):
        escaped = escaped.replace(char, name)
    return f"E'{escaped}'"


def sql_tokens(settings) -> dict[str, str]:
    """The migration's placeholders that come from Python: the fold's character tables, the search
    settings the RPC shares with the artifacts path (ranking/), the words that name a kind."""
    from ..kinds import KINDS
    from ..ranking.priors import type_priors_sql_values
    from ..ranking.settings import (B, COMMON_FLOOR, COMMON_SHARE, DATABASE_COVERAGE_CENTRE,
                                    DATABASE_COVERAGE_FIELDS, DATABASE_FIELD_WEIGHTS, DATABASE_FUSION,
                                    DATABASE_LEXICAL_WEIGHT, K1, MAX_WORD, MIN_TERMS)
    from ..text.ja import MAX_KANA_RUN, MIN_SPAN
    from ..text.romaji import romaji_sql_values

    intents = ", ".join(f"({_e_string(k.type)}, {_e_string(word)})" for k in KINDS for word in k.words)
    weights = DATABASE_FIELD_WEIGHTS
    return {
        "__CUT_FROM__": _e_string(_CUT_FROM), "__CUT_TO__": _e_string(_CUT_TO),
        "__KANA_FROM__": _e_string(_KATAKANA), "__KANA_TO__": _e_string(_HIRAGANA),
        "__K1__": repr(K1), "__B__": repr(B),
        "__CANDIDATES__": str(int(settings.candidates)),
        "__DENSE_WEIGHT__": repr(float(settings.channel_weights["dense"])),
        "__LEXICAL_WEIGHT__": repr(float(DATABASE_LEXICAL_WEIGHT)),
        "__FUSION__": DATABASE_FUSION, "__RRF_K__": str(int(settings.rrf_k)),
        "__WEIGHT_T__": repr(float(weights["t"])), "__WEIGHT_H__": repr(float(weights["h"])),
        "__WEIGHT_K__": repr(float(weights["k"])), "__WEIGHT_R__": repr(float(weights["r"])),
        "__WEIGHT_W__": repr(float(weights["w"])), "__MAX_WORD__": str(int(MAX_WORD)),
        "__COMMON_SHARE__": repr(float(COMMON_SHARE)), "__COMMON_FLOOR__": str(int(COMMON_FLOOR)),
        "__MIN_TERMS__": str(int(MIN_TERMS)),
        "__MIN_SPAN__": str(int(MIN_SPAN)), "__MAX_KANA_RUN__": str(int(MAX_KANA_RUN)),
        # the frozen migration 006 reads the four weights; the functions read __TYPE_PRIORS__
        "__EXAMPLE_WEIGHT__": repr(float(settings.example_weight)),
        "__SECTION_WEIGHT__": repr(float(settings.section_weight)),
        "__TABLE_WEIGHT__": repr(float(settings.table_weight)),
        "__INTENT_BOOST__": repr(float(settings.intent_boost)),
        "__TYPE_PRIORS__": type_priors_sql_values(settings), "__INTENTS__": intents,
        "__ROMAJI__": romaji_sql_values(),
        "__COSINE_CENTRE__": repr(float(settings.relevance_cosine_centre)),
        "__PART_COSINE_CENTRE__": repr(float(settings.relevance_part_cosine_centre)),
        "__COSINE_SLOPE__": repr(float(settings.relevance_cosine_slope)),
        "__COVERAGE_CENTRE__": repr(float(DATABASE_COVERAGE_CENTRE)),
        "__COVERAGE_FIELDS__": ", ".join(f"'{name}'" for name in DATABASE_COVERAGE_FIELDS),
        "__COVERAGE_SLOPE__": repr(float(settings.relevance_coverage_slope)),
        "__RELEVANCE_WINDOW__": str(int(settings.relevance_window)),
        "__RELEVANCE_THRESHOLD__": repr(float(settings.relevance_threshold)),
    }




# --- publish ---------------------------------------------------------------------------------

# Above this share of the published chunks to (re)write, the posting lists are rebuilt whole.
REBUILD_SHARE = 0.2
# Part of every row's fingerprint (store/publishable.py): a change to what chunk_bag makes of a chunk
# takes a new number, and the next publish writes every row's terms again.
TERMS_VERSION = 2  # 2: kanji numeral runs read as numbers (二十三 -> 23; 1 read each digit: 2十3)


def chunk_bag(chunk: dict, readings: dict[str, list[str]]) -> tuple[list[str], list[int], list[int]]:
    """The stored bag (terms, tfs, lengths) of one published chunk dict."""
    from ..model import Chunk

    item = Chunk.from_dict(chunk)
    titles = " ".join((item.material_title, *item.parents, item.title))
    return bag(chunk_terms(item.lexical_text, titles, readings))


def publish_terms(conn, source, plan, progress: bool = False) -> int:
    """Bring the lexical tables in line with the chunks just published (inside the publish's
    transaction, after the rows were written): the posting lists change by the difference between
    the old bags of changed and deleted chunks and the new bags (a retitled box touches the lists of
    the few terms its title changed), and the statistics are recounted. `source`: the set being
    published (store/publishable.py: its rows' chunks and reading tokens); `plan`: the ids it
    inserted, updated and deleted (postgres.PublishPlan). Returns how many chunks got new bags."""
    from ..progress import Progress

    needed = sorted({*plan.insert, *plan.update})
    bags, published = conn.execute("select (select count(*) from knowledge_chunk_terms),"
                                   " (select count(*) from knowledge_chunks)").fetchone()
    # Every chunk published before has its bag, or the lists are made again from all of them (a
    # database published before migration 006, or one whose lexical tables were emptied).
    whole = bags == published - len(plan.insert) + len(plan.delete)
    rebuild = not whole or len(needed) > REBUILD_SHARE * max(1, len(source)) or \
        conn.execute("select not exists (select from knowledge_terms)").fetchone()[0]
    if rebuild:
        conn.execute("truncate knowledge_terms, knowledge_chunk_terms")
        needed = [r[0] for r in conn.execute("select id from knowledge_chunks order by id collate \"C\"")]
        target, touched = copy_target(conn, "knowledge_chunk_terms"), None
    else:
        stale = dict(conn.execute("select id, num from knowledge_chunk_terms where id = any(%s)",
                                  (sorted({*plan.update, *plan.delete}),)).fetchall())
        if not needed and not stale:
            return 0
        conn.execute("create temporary table if not exists knowledge_new_bags (like knowledge_chunk_terms) on commit drop")
        conn.execute("truncate knowledge_new_bags")
        target, touched = "knowledge_new_bags", {num: None for num in stale.values()}  # num -> new lengths
    _number_new_chunks(conn)
    nums = dict(conn.execute("select id, num from knowledge_chunks where id = any(%s)", (needed,)).fetchall())
    with Progress("indexing terms", len(needed), "chunk", progress) as bar, \
            conn.cursor().copy(f"copy {target} (num, id, lengths, terms, tfs) from stdin") as copy:
        for start in range(0, len(needed), 2000):
            batch = needed[start:start + 2000]
            rows = [source.row_of(chunk_id) for chunk_id in batch]
            for chunk_id, row, tokens in zip(batch, rows, source.readings.of(rows)):
                terms, tfs, lengths = chunk_bag(source.chunk(row), tokens)
                copy.write_row([nums[chunk_id], chunk_id, lengths, terms, tfs])
                if touched is not None:
                    touched[nums[chunk_id]] = lengths
                bar.update(1)
    if rebuild:
        copied(conn, "knowledge_chunk_terms", target)
        conn.execute("insert into knowledge_terms (term, nums, tfs)"
                     " select u.term, array_agg(ct.num order by ct.num), array_agg(u.tf order by ct.num)"
                     " from knowledge_chunk_terms as ct, unnest(ct.terms, ct.tfs) as u(term, tf) group by u.term")
    else:
        _replace_bags(conn, sorted(stale))
    _recount(conn, touched)
    return len(needed)


def _replace_bags(conn, stale: list[str]) -> None:
    """Swap the old bags of the `stale` chunks (changed or deleted) for the new ones in
    knowledge_new_bags, changing the posting lists by their difference only: an entry (term, chunk,
    tf) in an old bag and not in its new one is taken out, one in a new bag and not in its old one
    is appended (a list need not be in chunk order)."""
    conn.execute(
        "create temporary table knowledge_bag_change on commit drop as"
        " with old as (select u.term, ct.num, u.tf from knowledge_chunk_terms as ct, unnest(ct.terms, ct.tfs) as u(term, tf)"
        "              where ct.id = any(%s)),"
        " new as (select u.term, n.num, u.tf from knowledge_new_bags as n, unnest(n.terms, n.tfs) as u(term, tf))"
        " select x.term, x.num, x.tf, false as added from (select * from old except all select * from new) as x"
        " union all"
        " select x.term, x.num, x.tf, true from (select * from new except all select * from old) as x", (stale,))
    _take_out(conn)
    conn.execute("delete from knowledge_chunk_terms where id = any(%s)", (stale,))
    copied(conn, "knowledge_chunk_terms", "knowledge_new_bags")
    conn.execute("insert into knowledge_terms as t (term, nums, tfs)"
                 " select c.term, array_agg(c.num order by c.num), array_agg(c.tf order by c.num)"
                 " from knowledge_bag_change as c where c.added group by c.term"
                 " on conflict (term) do update set nums = t.nums || excluded.nums, tfs = t.tfs || excluded.tfs")
    conn.execute("drop table knowledge_bag_change")


def _take_out(conn) -> None:
    """Remove the entries knowledge_bag_change marks as gone from the posting lists (a term no chunk
    holds any more goes). A list that loses one chunk is cut around its place (array_position, in C);
    one that loses several is filtered element by element. Only the lists touched are checked for
    emptiness (cardinality() detoasts a whole list)."""
    emptied = conn.execute(
        "update knowledge_terms as t set"
        " nums = case when x.at is not null then t.nums[:x.at - 1] || t.nums[x.at + 1:] else array("
        "        select u.n from unnest(t.nums) with ordinality as u(n, o) where u.n <> all(x.gone) order by u.o) end,"
        " tfs = case when x.at is not null then t.tfs[:x.at - 1] || t.tfs[x.at + 1:] else array("
        "       select u.f from unnest(t.nums, t.tfs) with ordinality as u(n, f, o) where u.n <> all(x.gone) order by u.o) end"
        " from (select g.term, g.gone, case when cardinality(g.gone) = 1"
        "              then array_position(k.nums, g.gone[1]) end as at"
        "       from (select c.term, array_agg(c.num) as gone from knowledge_bag_change as c where not c.added"
        "             group by c.term) as g"
        "       join knowledge_terms as k on k.term = g.term) as x"
        " where t.term = x.term returning t.term, cardinality(t.nums) = 0").fetchall()
    gone = [term for term, empty in emptied if empty]
    if gone:
        conn.execute("delete from knowledge_terms where term = any(%s)", (gone,))


def _number_new_chunks(conn) -> None:
    """Give every chunk without a number the next ones, in id order (a chunk keeps its number while
    its id is published, so the posting lists of other chunks never change for it)."""
    new = [r[0] for r in conn.execute("select id from knowledge_chunks where num is null order by id collate \"C\"")]
    if not new:
        return
    start = conn.execute("select coalesce(max(num), 0) from knowledge_chunks").fetchone()[0]
    conn.execute("update knowledge_chunks as c set num = x.num from unnest(%s::text[], %s::int[]) as x(id, num)"
                 " where c.id = x.id", (new, list(range(start + 1, start + 1 + len(new)))))


def _recount(conn, touched: dict[int, list[int] | None] | None = None) -> None:
    """knowledge_lexical_stats from the stored bags: per field the total length and each chunk's
    length by number, which numbers are sections or tables, how many chunks there are. `touched`
    (number -> the new bag's lengths, None for a bag taken out): only these changed since the last
    count, whose entries are then set in place (reading every bag again takes seconds at 100,000
    chunks). A list may then run past the highest number in use: a number no chunk holds is 0."""
    keys = {key for (key,) in conn.execute("select key from knowledge_lexical_stats")}
    if touched is not None and keys == {*FIELDS, "part", "docs"}:
        return _patch(conn, touched)
    top = conn.execute("select coalesce(max(num), 0) from knowledge_chunks").fetchone()[0]
    lengths = [[0] * top for _ in FIELDS]
    for num, found in conn.execute("select num, lengths from knowledge_chunk_terms"):
        for slot, value in enumerate(found):
            lengths[slot][num - 1] = value
    parts = [0] * top
    for (num,) in conn.execute("select num from knowledge_chunks where type in ('section', 'table')"):
        parts[num - 1] = 1
    docs = conn.execute("select count(*) from knowledge_chunk_terms").fetchone()[0]
    stats = [(name, sum(values), values) for name, values in zip(FIELDS, lengths)]
    stats += [("part", sum(parts), parts), ("docs", docs, [])]
    conn.execute("delete from knowledge_lexical_stats")
    target = copy_target(conn, "knowledge_lexical_stats")
    with conn.cursor().copy(f"copy {target} (key, total, by_num) from stdin") as copy:
        for key, total, values in stats:  # an array as its text: psycopg dumps a list element by element
            copy.write_row((key, total, "{" + ",".join(map(str, values)) + "}"))
    copied(conn, "knowledge_lexical_stats", target)


def _patch(conn, touched: dict[int, list[int] | None]) -> None:
    """Set the touched chunks' entries of the last count in place: one UPDATE per key, its total
    moved by the difference (the right-hand side reads the row as it was). New numbers follow the
    highest one counted, so the lists grow without gaps."""
    if not touched:
        return
    nums = sorted(touched)
    parts = {num for (num,) in conn.execute("select num from knowledge_chunks where num = any(%s)"
                                            " and type in ('section', 'table')", (nums,))}

    def length(num: int, slot: int) -> int:
        found = touched[num] or []
        return found[slot] if slot < len(found) else 0

    columns = {name: [length(num, slot) for num in nums] for slot, name in enumerate(FIELDS)}
    columns["part"] = [int(num in parts) for num in nums]
    for key, values in columns.items():
        pairs = [(int(num), int(value)) for num, value in zip(nums, values)]
        for start in range(0, len(pairs), 1000):  # a statement's target list holds at most 1,664 entries
            batch = pairs[start:start + 1000]
            sets = ", ".join(f"by_num[{num}] = {value}" for num, value in batch)
            moved = " + ".join(f"({value} - coalesce(by_num[{num}], 0))" for num, value in batch)
            conn.execute(f"update knowledge_lexical_stats set {sets}, total = total + {moved} where key = %s", (key,))
    conn.execute("update knowledge_lexical_stats set total = (select count(*) from knowledge_chunk_terms)"
                 " where key = 'docs'")


def expansion_rows(thesaurus=None) -> list[tuple[str, bool, str]]:
    """(wording, english, terms) of knowledge_expansions: the thesaurus (shipped, plus the site's
    `thesaurus` file) folded as queries are, and the glossary's English slugs as space-separated words."""
    from ..text.slugs import load_glossary
    from ..text.thesaurus import load_thesaurus

    rows: dict[str, tuple[bool, list[str]]] = {}
    for wording, terms in load_thesaurus(thesaurus).items():
        folded = " ".join(fold(wording).split())
        if folded:
            rows.setdefault(folded, (False, []))[1].extend(terms)
    for term, slug in load_glossary().items():
        phrase = " ".join(fold(slug.replace("-", " ")).split())
        if phrase and phrase not in rows:
            rows[phrase] = (True, [])
        if phrase and rows[phrase][0]:
            rows[phrase][1].append(term)
    return [(wording, english, " ".join(dict.fromkeys(terms))) for wording, (english, terms) in sorted(rows.items())]


def publish_expansions(conn, thesaurus=None) -> None:
    conn.execute("delete from knowledge_expansions")
    target = copy_target(conn, "knowledge_expansions")
    with conn.cursor().copy(f"copy {target} (wording, english, terms) from stdin") as copy:
        for row in expansion_rows(thesaurus):
            copy.write_row(row)
    copied(conn, "knowledge_expansions", target)


def copy_target(conn, table: str) -> str:
    """Where to COPY rows for `table` (a fixed name): the table itself when row-level security does
    not apply to the current user (its owner, a superuser), else a temporary copy of it, since COPY
    FROM refuses tables under row-level security (a member of knowledge_publisher); `copied` then
    moves the rows over."""
    applies = conn.execute(
        "select c.relrowsecurity and not (r.rolsuper or r.rolbypassrls or pg_has_role(current_user, c.relowner, 'MEMBER'))"
        " from pg_class as c, pg_roles as r where c.oid = to_regclass(%s) and r.rolname = current_user",
        (table,)).fetchone()
    if not applies or not applies[0]:
        return table
    conn.execute(f"create temporary table if not exists incoming_{table} (like {table}) on commit drop")
    conn.execute(f"truncate incoming_{table}")
    return f"incoming_{table}"


def copied(conn, table: str, target: str) -> None:
    if target != table:
        conn.execute(f"insert into {table} select * from {target}")
        conn.execute(f"truncate {target}")
