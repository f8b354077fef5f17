-- knowledge-build 012: links that survive edits (issue 42): an id a chunk had in an earlier build and the id it has
-- now (index/aliases.py), published with the chunks; get_chunk_by_id (store/functions/search.sql) resolves an old id.
create table if not exists knowledge_aliases (
    old_id text primary key,
    new_id text not null
);
alter table knowledge_aliases enable row level security;
drop policy if exists knowledge_aliases_read on knowledge_aliases;
create policy knowledge_aliases_read on knowledge_aliases for select using (true);
drop policy if exists knowledge_aliases_publish on knowledge_aliases;
create policy knowledge_aliases_publish on knowledge_aliases for all to knowledge_publisher using (true) with check (true);
revoke all on knowledge_aliases from anon, authenticated;
grant select on knowledge_aliases to anon, authenticated;
grant select, insert, update, delete on knowledge_aliases to knowledge_publisher;
