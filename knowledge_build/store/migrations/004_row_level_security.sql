-- knowledge-build 004: anon may only read; writes only for the publishing role.
do $$
begin
    if not exists (select from pg_roles where rolname = 'anon') then
        create role anon nologin;
    end if;
    if not exists (select from pg_roles where rolname = 'knowledge_publisher') then
        create role knowledge_publisher nologin;
    end if;
end
$$;

alter table knowledge_chunks enable row level security;
alter table knowledge_meta enable row level security;

drop policy if exists knowledge_chunks_read on knowledge_chunks;
create policy knowledge_chunks_read on knowledge_chunks for select using (true);
drop policy if exists knowledge_chunks_publish on knowledge_chunks;
create policy knowledge_chunks_publish on knowledge_chunks for all to knowledge_publisher using (true) with check (true);
drop policy if exists knowledge_meta_read on knowledge_meta;
create policy knowledge_meta_read on knowledge_meta for select using (true);
drop policy if exists knowledge_meta_publish on knowledge_meta;
create policy knowledge_meta_publish on knowledge_meta for all to knowledge_publisher using (true) with check (true);

grant usage on schema public to anon, knowledge_publisher;
revoke all on knowledge_chunks, knowledge_meta, knowledge_migrations from anon;
grant select on knowledge_chunks, knowledge_meta to anon;
grant select, insert, update, delete on knowledge_chunks, knowledge_meta to knowledge_publisher;
grant execute on function search_knowledge(vector, int, float, text, text, text, text) to anon, knowledge_publisher;
grant execute on function get_chunk_by_id(text) to anon, knowledge_publisher;
grant execute on function list_concepts(text, text) to anon, knowledge_publisher;
