-- knowledge-build 003: the tutor's RPC functions. security invoker: they read with the caller's rights.
create or replace function search_knowledge(
    query_embedding vector(__DIM__),
    match_count int default 5,
    match_threshold float default null,
    filter_category text default null,
    filter_type text default null,
    filter_material text default null,
    filter_level text default null
)
returns table (
    id text, url text, title text, learns text[], excerpt text, similarity float,
    type text, material text, anchor text, category text, level text
)
language sql stable security invoker
set hnsw.ef_search = 200
set hnsw.iterative_scan = 'relaxed_order'
as $$
    select c.id, c.url, c.title, c.learns, c.excerpt,
           greatest(0, least(1, 1 - (c.embedding <=> query_embedding)))::float as similarity,
           c.type, c.material, c.anchor, c.category, c.level
    from knowledge_chunks c
    where (filter_category is null or c.category = filter_category)
      and (filter_type is null or c.type = filter_type)
      and (filter_material is null or c.material = filter_material)
      and (filter_level is null or c.level = filter_level)
      and (match_threshold is null or 1 - (c.embedding <=> query_embedding) >= match_threshold)
    order by c.embedding <=> query_embedding, c.id
    limit match_count
$$;

create or replace function get_chunk_by_id(chunk_id text)
returns setof knowledge_chunks
language sql stable security invoker
as $$
    select * from knowledge_chunks where id = chunk_id
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
