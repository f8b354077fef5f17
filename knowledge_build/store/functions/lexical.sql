-- knowledge-build functions: the query's analysis in SQL (first in migration 006; the query terms with
-- their input check, 009). Terms are character bigrams (store/lexical.py writes them, and the constants
-- below come from it). A repeatable file: re-applied whole whenever its rendered text differs from the
-- one the database recorded (store/db_functions.py).

-- A run of kanji numerals as its number (text/ja.py kanji_number): without a unit (十百千) its digits read
-- positionally (一二〇 -> 120); else each unit times the digit before it (1 without one) plus the last digit
-- (二十三 -> 23, 百二 -> 102). Text, not an integer, so that a long run cannot overflow.
create or replace function knowledge_number(run text) returns text
language sql immutable strict parallel safe
as $$
    select case when run !~ '[十百千]'
        then coalesce(nullif(ltrim(translate(run, '〇一二三四五六七八九', '0123456789'), '0'), ''), '0')
        else ((select coalesce(sum(case when right(u[1], 1) in ('', '〇') then 1
                                        else translate(right(u[1], 1), '一二三四五六七八九', '123456789')::numeric end
                                   * case u[2] when '十' then 10 when '百' then 100 else 1000 end), 0)
               from regexp_matches(run, '([〇一二三四五六七八九]*)([十百千])', 'g') as m(u))
              + case when right(run, 1) ~ '[〇一二三四五六七八九]'
                     then translate(right(run, 1), '〇一二三四五六七八九', '0123456789')::numeric else 0 end)::text
    end
$$;

-- Every run of kanji numerals in a text as its number (二十三 -> 23, 百分率 -> 100分率): text/ja.py numerals.
create or replace function knowledge_numerals(t text) returns text
language sql immutable strict parallel safe
as $$
    select case when t !~ '[〇一二三四五六七八九十百千]' then t else (
        select string_agg(case when r[1] ~ '^[〇一二三四五六七八九十百千]' then knowledge_number(r[1]) else r[1] end,
                          '' order by o)
        from regexp_matches(t, '[〇一二三四五六七八九十百千]+|[^〇一二三四五六七八九十百千]+', 'g')
             with ordinality as m(r, o)) end
$$;

-- NFKC, kanji numerals as numbers, ASCII lower case, every separator a space: a text cut into runs, its kana
-- as written (store/lexical.py's fold, before its katakana).
create or replace function knowledge_cut(t text) returns text
language sql immutable strict parallel safe
as $$ select translate(knowledge_numerals(normalize(t, NFKC)), __CUT_FROM__, __CUT_TO__) $$;

-- knowledge_cut, then katakana as hiragana: what the terms are made of (store/lexical.py's fold).
create or replace function knowledge_fold(t text) returns text
language sql immutable strict parallel safe
as $$ select translate(knowledge_cut(t), __KANA_FROM__, __KANA_TO__) $$;

-- The character bigrams of each run of a folded text (a one-character run is its own term).
create or replace function knowledge_bigrams(folded text) returns setof text
language sql immutable strict parallel safe
as $$
    select case when length(r) = 1 then r else substr(r, i, 2) end
    from regexp_split_to_table(folded, ' +') as r,
         generate_series(1, greatest(1, length(r) - 1)) as i
    where r <> ''
$$;

-- A romaji word as hiragana, by THE syllable table and its four rules (knowledge_build/data/romaji.json, read
-- by text/romaji.py's read: rendered here by romaji_sql_values); null when no rule reads it (x, cos ... stay).
create or replace function knowledge_romaji(word text) returns text
language plpgsql immutable strict parallel safe
as $$
declare
    romaji constant jsonb := __ROMAJI__;
    syllables constant jsonb := romaji -> 'syllables';
    moraic constant text := romaji ->> 'n';
    sokuon constant text := romaji ->> 'sokuon';
    doubled constant text := romaji ->> 'doubled';
    vowels constant text := romaji ->> 'vowels';
    kana text := '';
    at int := 1;
    size int;
    found text;
    letter text;
    after text;
begin
    if word !~ '^[a-z]{2,}$' then
        return null;
    end if;
    while at <= length(word) loop
        letter := substr(word, at, 1);
        after := substr(word, at + 1, 1);
        if letter = 'n' and after = 'n' and substr(word, at + 2, 1) <> 'y' then  -- rule 1: nn, not before y
            kana := kana || moraic;
            at := at + 2;
        elsif letter = 'n' and (after = '' or position(after in vowels || 'y') = 0) then  -- rule 2
            kana := kana || moraic;
            at := at + 1;
        elsif position(letter in doubled) > 0 and (after = letter
                                                   or (letter = 't' and substr(word, at + 1, 2) = 'ch')) then
            kana := kana || sokuon;  -- rule 3: a doubled consonant (kk, tt, tch)
            at := at + 1;
        else  -- rule 4: the longest syllable
            found := null;
            for size in reverse 3..1 loop
                found := syllables ->> substr(word, at, size);
                if found is not null then
                    kana := kana || found;
                    at := at + size;
                    exit;
                end if;
            end loop;
            if found is null then
                return null;
            end if;
        end if;
    end loop;
    return kana;
end
$$;

-- A query's terms by field (`t`, `h` and `k` \037 bigram) and how often each occurs: the bigrams of the
-- folded text, of its romaji words read as kana and of its expansions (text and titles: each distinct bigram
-- once), and the bigrams of its runs of kana against the readings. A query all in romaji words is read as
-- its kana alone (its Latin letters would match any English or TeX).
create or replace function knowledge_query_terms(query_text text) returns table (term text, qtf int)
language sql stable strict parallel safe
as $$
    with cut as (select knowledge_cut(knowledge_checked_query(query_text)) as c),
    folded as (select translate(c, __KANA_FROM__, __KANA_TO__) as f from cut),
    words as (select w[1] as w, o from folded, regexp_matches(f, '[a-z]+', 'g') with ordinality as m(w, o)),
    romaji as (select coalesce(string_agg(knowledge_romaji(w), '' order by o), '') as kana,
                      count(*) filter (where knowledge_romaji(w) is null) = 0 and count(*) > 0
                      and (select btrim(regexp_replace(f, '[a-z]+', '', 'g')) = '' from folded) as whole
               from words),
    phrase as (select ' ' || coalesce(string_agg(w, ' ' order by o), '') || ' ' as p from words),
    found as (
        select e.wording, e.english, e.terms
        from knowledge_expansions as e, folded, phrase
        where (not e.english and position(e.wording in folded.f) > 0)
           or (e.english and position(' ' || e.wording || ' ' in phrase.p) > 0)
    ),
    -- A thesaurus wording found only inside longer ones found is not expanded (さいん in こさいん; in
    -- さいんとこさいん it is), as text/thesaurus.py's spans: it must occur more often than inside them.
    expanded as (
        select coalesce(string_agg(distinct x.terms, ' '), '') as terms
        from found as x, folded
        where x.english or (length(folded.f) - length(replace(folded.f, x.wording, ''))) / length(x.wording) > coalesce((
            select sum((length(folded.f) - length(replace(folded.f, y.wording, ''))) / length(y.wording)
                       * (length(y.wording) - length(replace(y.wording, x.wording, ''))) / length(x.wording))
            from found as y where not y.english and y.wording <> x.wording and position(x.wording in y.wording) > 0), 0)
    ),
    -- As written (katakana kept) for the text field, which skips bigrams all in hiragana; folded for the rest.
    written as (select case when r.whole then '' else cut.c end || ' ' || r.kana || ' ' || knowledge_cut(x.terms) as t
                from cut, romaji as r, expanded as x),
    texts as (select translate(t, __KANA_FROM__, __KANA_TO__) as t from written),
    written_terms as (select b from written, knowledge_bigrams(t) as b),
    text_terms as (select b from texts, knowledge_bigrams(t) as b),
    kana_runs as (select r from texts, regexp_split_to_table(regexp_replace(t, '[^ぁ-ゖー]+', ' ', 'g'), ' +') as r
                  where length(r) >= 2),
    kana_terms as (select substr(r, i, 2) as b from kana_runs, generate_series(1, length(r) - 1) as i),
    -- The readings the site holds as terms (field r): in each run of kana (its first __MAX_KANA_RUN__ characters),
    -- the stretches of at least __MIN_SPAN__ that are terms, inside no longer one (はんべつしきのつかいかた ->
    -- はんべつしき, つかいかた), as text/ja.py's kana_spans finds them without the tagger.
    long_runs as (select left(r, __MAX_KANA_RUN__) as r, row_number() over () as run from kana_runs
                  where length(r) >= __MIN_SPAN__),
    stretches as (select l.run, i, j, substr(l.r, i, j - i) as s from long_runs as l,
                  generate_series(1, length(l.r) - __MIN_SPAN__ + 1) as i,
                  generate_series(i + __MIN_SPAN__, length(l.r) + 1) as j),
    -- The terms are looked up by the primary key with = any (the planner, misled by generate_series's default
    -- row estimate, would otherwise hash the whole table: 20 ms at 100,000 chunks), and a stretch inside
    -- another found by a subplan over the few found (offset 0 keeps it one: as an anti join its hash table
    -- was sized for a million rows).
    reading_found as (select kt.term from knowledge_terms as kt
                      where kt.term = any (array(select 'r' || E'\037' || x.s from stretches as x))),
    known as (select x.* from stretches as x where 'r' || E'\037' || x.s in (select f.term from reading_found as f)),
    reading_terms as (select a.s from known as a where not exists (
                          select from known as b where b.run = a.run and b.i <= a.i and a.j <= b.j
                                                   and (b.i, b.j) <> (a.i, a.j) offset 0)),
    -- The site's words (field w, the artifacts' lemmas): in each run of the folded text, the stretches of up to
    -- __MAX_WORD__ characters that are words, inside no longer one (三角形の1辺と平行な線 -> 三角, 形, 1, 辺, 平行, 線):
    -- a word segmentation by the site's own vocabulary, without a tokenizer.
    text_runs as (select left(r, 200) as r, row_number() over () as run
                  from texts, regexp_split_to_table(t, ' +') as r where r <> ''),
    pieces as (select x.run, i, i + n as j, substr(x.r, i, n) as s from text_runs as x,
               generate_series(1, length(x.r)) as i, generate_series(1, least(__MAX_WORD__, length(x.r) - i + 1)) as n),
    words_found as (select kt.term from knowledge_terms as kt
                    where kt.term = any (array(select 'w' || E'\037' || p.s from pieces as p))),
    words_known as (select p.* from pieces as p where 'w' || E'\037' || p.s in (select f.term from words_found as f)),
    word_terms as (select a.s from words_known as a where not exists (
                       select from words_known as b where b.run = a.run and b.i <= a.i and a.j <= b.j
                                                      and (b.i, b.j) <> (a.i, a.j) offset 0))
    select 't' || E'\037' || translate(b, __KANA_FROM__, __KANA_TO__), count(*)::int from written_terms
    where b !~ '^[ぁ-ゖー]+$' group by 1
    union all
    select 'h' || E'\037' || b, 1 from (select distinct b from text_terms) as d
    union all
    select 'k' || E'\037' || b, count(*)::int from kana_terms group by b
    union all
    select 'r' || E'\037' || s, count(*)::int from reading_terms group by s
    union all
    select 'w' || E'\037' || s, count(*)::int from word_terms group by s
$$;

grant execute on function knowledge_number(text), knowledge_numerals(text), knowledge_cut(text), knowledge_fold(text),
    knowledge_bigrams(text), knowledge_romaji(text), knowledge_query_terms(text) to anon, authenticated, knowledge_publisher;
