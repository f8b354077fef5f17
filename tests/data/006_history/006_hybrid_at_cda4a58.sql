-- knowledge-build 006: the lexical channel in SQL, and search_knowledge(query_text, ...): the hybrid RPC.
-- Terms are character bigrams (store/lexical.py writes them, and the constants below come from it).
-- Plain SQL and pgvector: it runs on Supabase as is.

-- Each chunk's number in the posting lists (stable while its id is published).
alter table knowledge_chunks add column if not exists num int;
create unique index if not exists knowledge_chunks_num on knowledge_chunks (num);

-- A chunk's own terms (`field \037 term`), how often, and its length per field (t, h, k):
-- what an incremental publish takes back out of the posting lists.
create table if not exists knowledge_chunk_terms (
    num int primary key,
    id text not null unique,
    lengths int[] not null,
    terms text[] not null,
    tfs smallint[] not null
);

-- The posting lists: per term, the chunks that hold it (num) and how often (tf). df = cardinality(nums).
create table if not exists knowledge_terms (
    term text primary key,
    nums int[] not null,
    tfs smallint[] not null
);
-- df beside the list: reading cardinality(nums) detoasts the whole list (up to 100,000 numbers), and the
-- RPC needs every query term's df, even of the terms whose lists it leaves unread.
alter table knowledge_terms add column if not exists df int generated always as (cardinality(nums)) stored;

-- What BM25 needs besides the lists, kept current by every publish: per field (t, h, k) the sum of
-- the lengths and each chunk's length by num; 'part' marks the sections and tables by num; 'docs' counts.
create table if not exists knowledge_lexical_stats (
    key text primary key,
    total bigint not null,
    by_num int[] not null
);

-- NFKC, ASCII lower case, every separator a space: a text cut into runs, its kana as written.
create or replace function knowledge_cut(t text) returns text
language sql immutable strict parallel safe
as $$ select translate(normalize(t, NFKC), __CUT_FROM__, __CUT_TO__) $$;

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

-- A Hepburn (or kunrei) romaji word as hiragana; null when it is not one (x, sin ... stay).
create or replace function knowledge_romaji(word text) returns text
language plpgsql immutable strict parallel safe
as $$
declare
    syllables constant jsonb := '{"a":"あ","i":"い","u":"う","e":"え","o":"お",
      "ka":"か","ki":"き","ku":"く","ke":"け","ko":"こ","kya":"きゃ","kyu":"きゅ","kyo":"きょ",
      "ga":"が","gi":"ぎ","gu":"ぐ","ge":"げ","go":"ご","gya":"ぎゃ","gyu":"ぎゅ","gyo":"ぎょ",
      "sa":"さ","shi":"し","si":"し","su":"す","se":"せ","so":"そ","sha":"しゃ","shu":"しゅ","sho":"しょ","she":"しぇ",
      "sya":"しゃ","syu":"しゅ","syo":"しょ",
      "za":"ざ","ji":"じ","zi":"じ","zu":"ず","ze":"ぜ","zo":"ぞ","ja":"じゃ","ju":"じゅ","jo":"じょ","je":"じぇ",
      "zya":"じゃ","zyu":"じゅ","zyo":"じょ","jya":"じゃ","jyu":"じゅ","jyo":"じょ",
      "ta":"た","chi":"ち","ti":"ち","tsu":"つ","tu":"つ","te":"て","to":"と","cha":"ちゃ","chu":"ちゅ","cho":"ちょ",
      "che":"ちぇ","tya":"ちゃ","tyu":"ちゅ","tyo":"ちょ",
      "da":"だ","di":"ぢ","du":"づ","de":"で","do":"ど",
      "na":"な","ni":"に","nu":"ぬ","ne":"ね","no":"の","nya":"にゃ","nyu":"にゅ","nyo":"にょ",
      "ha":"は","hi":"ひ","fu":"ふ","hu":"ふ","he":"へ","ho":"ほ","hya":"ひゃ","hyu":"ひゅ","hyo":"ひょ",
      "fa":"ふぁ","fi":"ふぃ","fe":"ふぇ","fo":"ふぉ",
      "ba":"ば","bi":"び","bu":"ぶ","be":"べ","bo":"ぼ","bya":"びゃ","byu":"びゅ","byo":"びょ",
      "pa":"ぱ","pi":"ぴ","pu":"ぷ","pe":"ぺ","po":"ぽ","pya":"ぴゃ","pyu":"ぴゅ","pyo":"ぴょ",
      "ma":"ま","mi":"み","mu":"む","me":"め","mo":"も","mya":"みゃ","myu":"みゅ","myo":"みょ",
      "ya":"や","yu":"ゆ","yo":"よ",
      "ra":"ら","ri":"り","ru":"る","re":"れ","ro":"ろ","rya":"りゃ","ryu":"りゅ","ryo":"りょ",
      "wa":"わ","wo":"を","vu":"ゔ"}';
    kana text := '';
    at int := 1;
    size int;
    found text;
    letter text;
begin
    if word !~ '^[a-z]{2,}$' then
        return null;
    end if;
    while at <= length(word) loop
        letter := substr(word, at, 1);
        -- a doubled consonant (kk, tt, tch) is a small tsu
        if letter ~ '[bcdfghjkmprstvwyz]' and (substr(word, at + 1, 1) = letter
                                                 or (letter = 't' and substr(word, at + 1, 2) = 'ch')) then
            kana := kana || 'っ';
            at := at + 1;
            continue;
        end if;
        -- nn is ん (as an IME and jaconv read it); so is n before a consonant or at the end
        if letter = 'n' and substr(word, at + 1, 1) = 'n' then
            kana := kana || 'ん';
            at := at + 2;
            continue;
        end if;
        if letter = 'n' and (at = length(word) or substr(word, at + 1, 1) !~ '[aiueoy]') then
            kana := kana || 'ん';
            at := at + 1;
            continue;
        end if;
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
    end loop;
    return kana;
end
$$;

-- Query expansions the publish writes (store/lexical.py): student wording -> textbook terms (the thesaurus,
-- matched anywhere in the folded query) and English terms -> Japanese (the glossary, matched as whole words).
create table if not exists knowledge_expansions (
    wording text primary key,
    english boolean not null,
    terms text not null
);

-- A query's terms by field (`t`, `h` and `k` \037 bigram) and how often each occurs: the bigrams of the
-- folded text, of its romaji words read as kana and of its expansions (text and titles: each distinct bigram
-- once), and the bigrams of its runs of kana against the readings. A query all in romaji words is read as
-- its kana alone (its Latin letters would match any English or TeX).
create or replace function knowledge_query_terms(query_text text) returns table (term text, qtf int)
language sql stable strict parallel safe
as $$
    with cut as (select knowledge_cut(query_text) as c),
    folded as (select translate(c, __KANA_FROM__, __KANA_TO__) as f from cut),
    words as (select w[1] as w, o from folded, regexp_matches(f, '[a-z]+', 'g') with ordinality as m(w, o)),
    romaji as (select coalesce(string_agg(knowledge_romaji(w), '' order by o), '') as kana,
                      count(*) filter (where knowledge_romaji(w) is null) = 0 and count(*) > 0
                      and (select btrim(regexp_replace(f, '[a-z]+', '', 'g')) = '' from folded) as whole
               from words),
    phrase as (select ' ' || coalesce(string_agg(w, ' ' order by o), '') || ' ' as p from words),
    expanded as (
        select coalesce(string_agg(distinct e.terms, ' '), '') as terms
        from knowledge_expansions as e, folded, phrase
        where (not e.english and position(e.wording in folded.f) > 0)
           or (e.english and position(' ' || e.wording || ' ' in phrase.p) > 0)
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

-- Whether a chunk passes search_knowledge's filters (a null filter passes every chunk): one definition for
-- the lexical candidates and the dense scans (inlined by the planner, so the HNSW scans filter as they go).
create or replace function knowledge_passes(c knowledge_chunks, category text, type text, material text, level text)
returns boolean
language sql immutable parallel safe
as $$
    select (category is null or c.category = category) and (type is null or c.type = type)
       and (material is null or c.material = material) and (level is null or c.level = level)
$$;

-- Hybrid search: BM25 over the published bigrams (fields t, h, k weighted as the artifacts' word, title
-- and kana-bigram fields), the dense ranking from the HNSW index, the top __CANDIDATES__ of each channel per
-- kind (boxes; sections and tables), fused (__FUSION__: dbsf by their spread, or rrf by rank, as ranking.py), type priors, and
-- relevance (a logistic of the cosine and the lexical coverage, as relevance.py). query_embedding null:
-- the lexical channel alone.
create or replace function search_knowledge(
    query_text text,
    query_embedding vector(__DIM__) default null,
    match_count int default 5,
    match_threshold float default null,
    filter_category text default null,
    filter_type text default null,
    filter_material text default null,
    filter_level text default null
)
returns table (
    id text, url text, title text, learns text[], excerpt text, similarity float,
    type text, material text, anchor text, category text, level text,
    score float, relevance float, relevant boolean
)
language plpgsql stable security invoker
set hnsw.ef_search = 200
set hnsw.iterative_scan = 'relaxed_order'
-- A query of common bigrams scores 100,000 chunks or more at 100,000 chunks: its aggregate and candidate
-- lists spill to disk at the default work_mem (4 MB here; a few MB on Supabase).
set work_mem = '32MB'
as $$
#variable_conflict use_column
declare
    docs float8;
    avg_t float8;
    avg_h float8;
    avg_k float8;
    avg_r float8;
    avg_w float8;
    len_t int[];
    len_h int[];
    len_k int[];
    len_r int[];
    len_w int[];
    parts int[];
    common float8;
    filtered boolean := coalesce(filter_category, filter_type, filter_material, filter_level) is not null;
    intended text;
    depth int := greatest(coalesce(match_count, 5), 1) + 20;
begin
    if coalesce(btrim(query_text), '') = '' or coalesce(match_count, 5) < 1 then
        return;
    end if;
    select s.total into docs from knowledge_lexical_stats s where s.key = 'docs';
    select s.total::float8 / greatest(docs, 1), s.by_num into avg_t, len_t from knowledge_lexical_stats s where s.key = 't';
    select s.total::float8 / greatest(docs, 1), s.by_num into avg_h, len_h from knowledge_lexical_stats s where s.key = 'h';
    select s.total::float8 / greatest(docs, 1), s.by_num into avg_k, len_k from knowledge_lexical_stats s where s.key = 'k';
    select s.total::float8 / greatest(docs, 1), s.by_num into avg_r, len_r from knowledge_lexical_stats s where s.key = 'r';
    select s.total::float8 / greatest(docs, 1), s.by_num into avg_w, len_w from knowledge_lexical_stats s where s.key = 'w';
    select s.by_num into parts from knowledge_lexical_stats s where s.key = 'part';
    docs := coalesce(docs, 0);
    common := greatest(__COMMON_SHARE__ * docs, __COMMON_FLOOR__);
    select min(i.type) into intended from (values __INTENTS__) as i(type, word)
        where position(i.word in query_text) > 0 having count(distinct i.type) = 1;

    return query
    with qt as (
        select q.term, q.qtf from knowledge_query_terms(query_text) as q
    ),
    -- The query terms found, by the primary key (= any: qt's row estimate is the function's default, 1000),
    -- rarest first. A term held by more chunks than `common` (__COMMON_SHARE__ of them, at least
    -- __COMMON_FLOOR__) is left out of the scoring, as a stop word, unless it is among the __MIN_TERMS__ rarest:
    -- its list is most of the work (at 100,000 chunks a query's terms hold a median 276,000 postings, 28,000
    -- without these) and adds little to the ranking. df is read without the list.
    found as (
        select t.term, t.df, row_number() over (order by t.df, t.term) as rarity
        from knowledge_terms as t
        where t.term = any (array(select q2.term from qt as q2))
    ),
    -- Per term scored: its posting list, idf, field (slot), average length and weight, worked out once per
    -- term, not per posting.
    matched as materialized (
        select t.nums, t.tfs, q.qtf,
               ln(1 + (docs - f.df + 0.5) / (f.df + 0.5)) as idf,
               case left(t.term, 1) when 't' then 1 when 'h' then 2 when 'k' then 3 when 'r' then 4 else 5 end as slot,
               case left(t.term, 1) when 't' then avg_t when 'h' then avg_h when 'k' then avg_k when 'r' then avg_r
                    else avg_w end as avg,
               (case left(t.term, 1) when 't' then __WEIGHT_T__ when 'h' then __WEIGHT_H__ when 'k' then __WEIGHT_K__
                when 'r' then __WEIGHT_R__ else __WEIGHT_W__ end)::float8 as weight
        from found as f
        join knowledge_terms as t on t.term = f.term
        join qt as q on q.term = f.term
        where docs > 0 and (f.df <= common or f.rarity <= __MIN_TERMS__)
    ),
    -- unnest in the select list streams (ProjectSet); in from, each list is first copied to a tuplestore
    postings as (
        select unnest(m.nums) as num, unnest(m.tfs) as tf, m.slot, m.avg, m.weight, m.qtf, m.idf
        from matched as m
    ),
    -- BM25 in float8 (the constants are numeric literals, and numeric arithmetic per posting is slow).
    lexical_all as (
        select p.num, sum(p.qtf * p.idf * p.tf / (p.tf + (__K1__)::float8 * ((1 - __B__)::float8 + (__B__)::float8
                    * case p.slot when 1 then len_t[p.num] when 2 then len_h[p.num] when 3 then len_k[p.num]
                      when 4 then len_r[p.num] else len_w[p.num] end / p.avg)) * p.weight) as score
        from postings as p
        group by p.num
    ),
    lexical_kind as (
        select l.num, l.score, coalesce(parts[l.num], 0) = 1 as part
        from lexical_all as l
        where l.score > 0 and (not filtered or exists (
            select 1 from knowledge_chunks as c where c.num = l.num
              and knowledge_passes(c, filter_category, filter_type, filter_material, filter_level)))
    ),
    -- The best __CANDIDATES__ of each kind: two top-N sorts, not a sort of every chunk that matched.
    lexical as (
        (select k.num, k.score from lexical_kind as k where k.part order by k.score desc, k.num limit __CANDIDATES__)
        union all
        (select k.num, k.score from lexical_kind as k where not k.part order by k.score desc, k.num limit __CANDIDATES__)
    ),
    -- The nearest __CANDIDATES__ of each kind (boxes; sections and tables), an HNSW scan per kind.
    dense as (
        select d.num, d.cosine
        from (values (false), (true)) as kinds(part)
        cross join lateral (
            select c.num, 1 - (c.embedding <=> query_embedding) as cosine
            from knowledge_chunks as c
            where query_embedding is not null and (c.type in ('section', 'table')) = kinds.part
              and knowledge_passes(c, filter_category, filter_type, filter_material, filter_level)
            order by c.embedding <=> query_embedding
            limit __CANDIDATES__
        ) as d
    ),
    spreads as (
        select 'lexical' as channel, avg(l.score) as mean, 6 * stddev_pop(l.score) as spread from lexical as l
        union all
        select 'dense', avg(d.cosine), 6 * stddev_pop(d.cosine) from dense as d
    ),
    fused as (
        select x.num, sum(x.value) as score from (
            select l.num, __LEXICAL_WEIGHT__ * case
                   when '__FUSION__' = 'rrf' then 1.0 / (__RRF_K__ + row_number() over (order by l.score desc, l.num))
                   when s.spread > 0 then (l.score - (s.mean - s.spread / 2)) / s.spread else 1 end as value
            from lexical as l, spreads as s where s.channel = 'lexical'
            union all
            select d.num, __DENSE_WEIGHT__ * case
                   when '__FUSION__' = 'rrf' then 1.0 / (__RRF_K__ + row_number() over (order by d.cosine desc, d.num))
                   when s.spread > 0 then (d.cosine - (s.mean - s.spread / 2)) / s.spread else 1 end
            from dense as d, spreads as s where s.channel = 'dense'
        ) as x
        group by x.num
    ),
    weighted as (
        select c.num, c.id, c.type, c.embedding,
               f.score * case when filter_type is not null then 1
                              when c.type = 'section' then __SECTION_WEIGHT__
                              when c.type = 'table' then __TABLE_WEIGHT__
                              when c.type = 'example' and intended is distinct from 'example' then __EXAMPLE_WEIGHT__
                              when c.type = intended then __INTENT_BOOST__
                              else 1 end as score
        from fused as f join knowledge_chunks as c on c.num = f.num
    ),
    ranked as (
        select w.*, (select d.cosine from dense as d where d.num = w.num) as cosine,
               row_number() over (order by w.score desc, w.id collate "C") as place
        from weighted as w
        order by w.score desc, w.id collate "C"
        limit depth
    ),
    measured as (
        select r.num, r.id, r.type, r.score, r.place,
               case when query_embedding is null then null
                    else coalesce(r.cosine, 1 - (r.embedding <=> query_embedding)) end as cosine
        from ranked as r
    ),
    query_distinct as (
        select q.term, left(q.term, 1) as field,
               ln(1 + (docs - coalesce(f.df, 0) + 0.5) / (coalesce(f.df, 0) + 0.5)) as idf
        from qt as q left join found as f on f.term = q.term
        where left(q.term, 1) in (__COVERAGE_FIELDS__)
    ),
    coverage as (
        select m.num, coalesce(max(fc.value), 0) as value from measured as m
        left join lateral (
            select qd.field, sum(qd.idf * least(1.0, coalesce(h.tf, 0)::float8 / (coalesce(h.tf, 0) + __K1__ * (1 - __B__
                       + __B__ * case qd.field when 't' then len_t[m.num] / greatest(avg_t, 1e-9)
                                               when 'k' then len_k[m.num] / greatest(avg_k, 1e-9)
                                               when 'r' then len_r[m.num] / greatest(avg_r, 1e-9)
                                               else len_w[m.num] / greatest(avg_w, 1e-9) end))))
                   / nullif(sum(qd.idf), 0) as value
            from query_distinct as qd
            left join (select u.term, u.tf from knowledge_chunk_terms as ct, unnest(ct.terms, ct.tfs) as u(term, tf)
                       where ct.num = m.num) as h on h.term = qd.term
            group by qd.field
        ) as fc on true
        group by m.num
    ),
    evidence as (
        select m.num, m.id, m.score, m.place, m.cosine,
               1 / (1 + exp(-greatest(-60, least(60,
                   __COVERAGE_SLOPE__ * (cv.value - __COVERAGE_CENTRE__)
                   + case when m.cosine is null then 0
                          else __COSINE_SLOPE__ * (m.cosine - case when m.type in ('section', 'table')
                               then __PART_COSINE_CENTRE__ else __COSINE_CENTRE__ end) end)))) as own
        from measured as m join coverage as cv on cv.num = m.num
    ),
    judged as (
        select e.*, round(((e.own + (select max(b.own) from evidence as b where b.place <= __RELEVANCE_WINDOW__)) / 2)::numeric, 6)::float8
                    as relevance
        from evidence as e
    )
    select c.id, c.url, c.title, c.learns, c.excerpt,
           round(greatest(0, least(1, coalesce(j.cosine, 0)))::numeric, 6)::float8 as similarity,
           c.type, c.material, c.anchor, c.category, c.level,
           round(j.score::numeric, 6)::float8 as score, j.relevance, j.relevance >= __RELEVANCE_THRESHOLD__ as relevant
    from judged as j join knowledge_chunks as c on c.num = j.num
    where match_threshold is null or coalesce(j.cosine, 0) >= match_threshold
    order by j.place
    limit match_count;
end
$$;

alter table knowledge_chunk_terms enable row level security;
alter table knowledge_terms enable row level security;
alter table knowledge_lexical_stats enable row level security;
alter table knowledge_expansions enable row level security;
drop policy if exists knowledge_expansions_read on knowledge_expansions;
create policy knowledge_expansions_read on knowledge_expansions for select using (true);
drop policy if exists knowledge_expansions_publish on knowledge_expansions;
create policy knowledge_expansions_publish on knowledge_expansions for all to knowledge_publisher using (true) with check (true);
drop policy if exists knowledge_chunk_terms_read on knowledge_chunk_terms;
create policy knowledge_chunk_terms_read on knowledge_chunk_terms for select using (true);
drop policy if exists knowledge_chunk_terms_publish on knowledge_chunk_terms;
create policy knowledge_chunk_terms_publish on knowledge_chunk_terms for all to knowledge_publisher using (true) with check (true);
drop policy if exists knowledge_terms_read on knowledge_terms;
create policy knowledge_terms_read on knowledge_terms for select using (true);
drop policy if exists knowledge_terms_publish on knowledge_terms;
create policy knowledge_terms_publish on knowledge_terms for all to knowledge_publisher using (true) with check (true);
drop policy if exists knowledge_lexical_stats_read on knowledge_lexical_stats;
create policy knowledge_lexical_stats_read on knowledge_lexical_stats for select using (true);
drop policy if exists knowledge_lexical_stats_publish on knowledge_lexical_stats;
create policy knowledge_lexical_stats_publish on knowledge_lexical_stats for all to knowledge_publisher using (true) with check (true);

revoke all on knowledge_chunk_terms, knowledge_terms, knowledge_lexical_stats, knowledge_expansions from anon;
grant select on knowledge_chunk_terms, knowledge_terms, knowledge_lexical_stats, knowledge_expansions to anon;
-- The publisher reads which migrations are applied (publish checks before it writes).
grant select on knowledge_migrations to knowledge_publisher;
grant select, insert, update, delete, truncate on knowledge_chunk_terms, knowledge_terms, knowledge_lexical_stats,
    knowledge_expansions to knowledge_publisher;
grant execute on function search_knowledge(text, vector, int, float, text, text, text, text) to anon, knowledge_publisher;
grant execute on function knowledge_cut(text), knowledge_fold(text), knowledge_bigrams(text), knowledge_romaji(text),
    knowledge_query_terms(text), knowledge_passes(knowledge_chunks, text, text, text, text) to anon, knowledge_publisher;
