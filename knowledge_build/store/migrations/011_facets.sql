-- knowledge-build 011: each chunk's version and language (site/facets.py), '' on a site with one of each.
-- search_knowledge's filter_version and filter_language read them (store/functions/search.sql).
alter table knowledge_chunks add column if not exists version text not null default '';
alter table knowledge_chunks add column if not exists language text not null default '';
create index if not exists knowledge_chunks_version on knowledge_chunks (version);
