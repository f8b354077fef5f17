-- knowledge-build functions: the tutor's RPCs (first in migrations 003, 006 and 009): the hybrid and the
-- embedding-only search_knowledge, get_chunk_by_id and list_concepts, all security invoker (they read with
-- the caller's rights). A repeatable file: re-applied whole whenever its rendered text differs from the
-- one the database recorded (store/db_functions.py).

-- Whether a chunk passes search_knowledge's filters (a null filter passes every chunk): one definition for
-- the lexical candidates and the dense scans (inlined by the planner, so the HNSW scans filter as they go).
-- A version or language filter also passes the chunks of pages outside every version (language) folder
-- (version ''): they belong to none (ranking/facets.py; the artifacts' Columns.mask).
create or replace function knowledge_passes(c knowledge_chunks, category text, type text, material text, level text,
                                            version text default null, language text default null)
returns boolean
language sql immutable parallel safe
as $$
    select (category is null or c.category = category) and (type is null or c.type = type)
       and (material is null or c.material = material) and (level is null or c.level = level)
       and (version is null or c.version in (version, '')) and (language is null or c.language in (language, ''))
$$;

-- The kind a query names (「公式で解きたい」 -> rule: ranking/priors.py intended_type), null when it names none or
-- more than one.
create or replace function knowledge_intended_type(query_text text) returns text
language sql immutable strict parallel safe
as $$
    select min(i.type) from (values __INTENTS__) as i(type, word)
    where position(i.word in query_text) > 0 having count(distinct i.type) = 1
$$;

-- The multiplier of a chunk's fused score by its type: THE type-prior table (ranking/priors.py type_priors,
-- rendered by type_priors_sql_values), its `named` weight when the query names the chunk's kind; 1 when the
-- caller filters by type, or for a type the table lacks.
create or replace function knowledge_type_weight(chunk_type text, intended text, filtered boolean) returns float8
language sql immutable parallel safe
as $$
    select case when filtered then 1 else coalesce((
        select case when p.type = intended then p.named else p.weight end
        from (values __TYPE_PRIORS__) as p(type, weight, named) where p.type = chunk_type), 1) end::float8
$$;

-- One channel's share of the fused score of each of its candidates (ranking/fusion.py: dbsf and rrf): `dbsf`
-- maps the channel's scores through their mean +- 3 standard deviations to 0..1 (1 when they are all equal),
-- `rrf` is 1 / (k + rank); either times the channel's weight. The fused score is the sum over channels.
create or replace function knowledge_fused(method text, weight float8, k int, nums int[], scores float8[])
returns table (num int, value float8)
language sql immutable parallel safe
as $$
    with s as (select u.n, u.score from unnest(nums, scores) as u(n, score)),
    d as (select avg(s.score) as mean, 6 * stddev_pop(s.score) as spread from s)
    select s.n, (weight * case
           when method = 'rrf' then 1.0 / (k + row_number() over (order by s.score desc, s.n))
           when d.spread > 0 then (s.score - (d.mean - d.spread / 2)) / d.spread else 1 end)::float8
    from s, d
$$;

-- A candidate's own evidence of relevance (ranking/relevance.py relevances): a logistic of its lexical coverage
-- and, when the query has a vector, its cosine against the centre of its kind (sections and tables: their own).
create or replace function knowledge_evidence(cosine float8, coverage float8, part boolean) returns float8
language sql immutable parallel safe
as $$
    select 1 / (1 + exp(-greatest(-60, least(60,
        __COVERAGE_SLOPE__ * (coverage - __COVERAGE_CENTRE__)
        + case when cosine is null then 0
               else __COSINE_SLOPE__ * (cosine - case when part then __PART_COSINE_CENTRE__ else __COSINE_CENTRE__ end)
          end))))::float8
$$;

-- The query's best evidence: the highest among its first __RELEVANCE_WINDOW__ candidates (`owns` in ranked order), 0 for none.
create or replace function knowledge_best_evidence(owns float8[]) returns float8
language sql immutable parallel safe
as $$ select coalesce(max(o), 0)::float8 from unnest(owns[1:__RELEVANCE_WINDOW__]) as o $$;

-- A candidate's relevance: the mean of its own evidence and the query's best, to 6 places.
create or replace function knowledge_relevance(own float8, best float8) returns float8
language sql immutable parallel safe
as $$ select round(((own + best) / 2)::numeric, 6)::float8 $$;

-- The embedding-only RPC, with the vector checked first.
create or replace function search_knowledge(
    query_embedding vector(__DIM__),
    match_count int default 5,
    match_threshold float default null,
    filter_category text default null,
    filter_type text default null,
    filter_material text default null,
    filter_level text default null,
    filter_version text default null,
    filter_language text default null
)
returns table (
    id text, url text, title text, learns text[], excerpt text, similarity float,
    type text, material text, anchor text, category text, level text
)
language plpgsql stable security invoker
set hnsw.ef_search = 200
set hnsw.iterative_scan = 'relaxed_order'
as $$
#variable_conflict use_column
begin
    perform knowledge_checked_embedding(query_embedding);
    return query
    select c.id, c.url, c.title, c.learns, c.excerpt,
           greatest(0, least(1, 1 - (c.embedding <=> query_embedding)))::float as similarity,
           c.type, c.material, c.anchor, c.category, c.level
    from knowledge_chunks c
    where (filter_category is null or c.category = filter_category)
      and (filter_type is null or c.type = filter_type)
      and (filter_material is null or c.material = filter_material)
      and (filter_level is null or c.level = filter_level)
      and (filter_version is null or c.version in (filter_version, ''))
      and (filter_language is null or c.language in (filter_language, ''))
      and (match_threshold is null or 1 - (c.embedding <=> query_embedding) >= match_threshold)
    order by c.embedding <=> query_embedding, c.id
    limit match_count;
end
$$;

-- Hybrid search: BM25 over the published bigrams (fields t, h, k weighted as the artifacts' word, title
-- and kana-bigram fields), the dense ranking from the HNSW index, the top __CANDIDATES__ of each channel per
-- kind (boxes; sections and tables), fused (__FUSION__: dbsf by their spread, or rrf by rank, as ranking/fusion.py), type priors, and
-- relevance (a logistic of the cosine and the lexical coverage, as ranking/relevance.py). query_embedding null:
-- the lexical channel alone.
create or replace function search_knowledge(
    query_text text,
    query_embedding vector(__DIM__) default null,
    match_count int default 5,
    match_threshold float default null,
    filter_category text default null,
    filter_type text default null,
    filter_material text default null,
    filter_level text default null,
    filter_version text default null,
    filter_language text default null
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
    filtered boolean := coalesce(filter_category, filter_type, filter_material, filter_level, filter_version,
                                 filter_language) is not null;
    intended text;
    depth int := greatest(coalesce(match_count, 5), 1) + 20;
begin
    -- The inputs first, as the CLI checks them: a refused call does no other work.
    perform knowledge_checked_query(query_text);
    perform knowledge_checked_count(match_count);
    perform knowledge_checked_embedding(query_embedding);
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
    intended := knowledge_intended_type(query_text);

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
              and knowledge_passes(c, filter_category, filter_type, filter_material, filter_level,
                                               filter_version, filter_language)))
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
              and knowledge_passes(c, filter_category, filter_type, filter_material, filter_level,
                                               filter_version, filter_language)
            order by c.embedding <=> query_embedding
            limit __CANDIDATES__
        ) as d
    ),
    fused as (
        select x.num, sum(x.value) as score from (
            select f.num, f.value from knowledge_fused('__FUSION__', __LEXICAL_WEIGHT__, __RRF_K__,
                array(select l.num from lexical as l order by l.num), array(select l.score from lexical as l order by l.num)) as f
            union all
            select f.num, f.value from knowledge_fused('__FUSION__', __DENSE_WEIGHT__, __RRF_K__,
                array(select d.num from dense as d order by d.num), array(select d.cosine from dense as d order by d.num)) as f
        ) as x
        group by x.num
    ),
    weighted as (
        select c.num, c.id, c.type, c.embedding,
               f.score * knowledge_type_weight(c.type, intended, filter_type is not null) as score
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
               knowledge_evidence(m.cosine, cv.value, m.type in ('section', 'table')) as own
        from measured as m join coverage as cv on cv.num = m.num
    ),
    judged as (
        select e.*, knowledge_relevance(e.own, knowledge_best_evidence(
                        array(select b.own from evidence as b order by b.place))) as relevance
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

-- A chunk by its id, or by an id it had in an earlier build (knowledge_aliases, migration 012): the row it moved to.
create or replace function get_chunk_by_id(chunk_id text)
returns setof knowledge_chunks
language sql stable security invoker
as $$
    select * from knowledge_chunks where id = chunk_id
    union all
    select c.* from knowledge_aliases a join knowledge_chunks c on c.id = a.new_id
    where a.old_id = chunk_id and not exists (select 1 from knowledge_chunks where id = chunk_id)
$$;

create or replace function list_concepts(filter_category text default null, filter_type text default null)
returns table (id text, title text, type text, url text, learns text[], material text, category text)
language sql stable security invoker
as $$
    select c.id, c.title, c.type, c.url, c.learns, c.material, c.category
    from knowledge_chunks c
    where (filter_category is null or c.category = filter_category)
      and (filter_type is null or c.type = filter_type)
    order by c.id
$$;

grant execute on function search_knowledge(vector, int, float, text, text, text, text, text, text),
    search_knowledge(text, vector, int, float, text, text, text, text, text, text), get_chunk_by_id(text),
    list_concepts(text, text), knowledge_passes(knowledge_chunks, text, text, text, text, text, text),
    knowledge_intended_type(text),
    knowledge_type_weight(text, text, boolean), knowledge_fused(text, float8, int, int[], float8[]),
    knowledge_evidence(float8, float8, boolean), knowledge_best_evidence(float8[]), knowledge_relevance(float8, float8)
    to anon, authenticated, knowledge_publisher;
