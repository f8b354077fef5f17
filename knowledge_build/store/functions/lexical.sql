-- knowledge-build functions: the query's analysis in SQL (first in migration 006; the query terms with
-- their input check, 009). Terms are character bigrams (store/lexical.py writes them, and the constants
-- below come from it). A repeatable file: re-applied whole whenever its rendered text differs from the
-- one the database recorded (store/db_functions.py).

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

grant execute on function knowledge_cut(text), knowledge_fold(text), knowledge_bigrams(text), knowledge_romaji(text),
    knowledge_query_terms(text) to anon, authenticated, knowledge_publisher;
