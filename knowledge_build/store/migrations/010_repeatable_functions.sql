-- knowledge-build 010: the functions leave the versioned migrations (issue 39). The migrations are frozen
-- (tests/test_migrations_frozen.py pins each file's sha256); every function lives in store/functions/*.sql,
-- which migrate and publish apply again whenever a file's rendered text differs from the sha256 recorded
-- here (store/db_functions.py).
create table if not exists knowledge_functions (
    name text primary key,
    sha256 text not null,
    applied_at timestamptz not null default now()
);
alter table knowledge_functions enable row level security;
drop policy if exists knowledge_functions_publish on knowledge_functions;
create policy knowledge_functions_publish on knowledge_functions for select to knowledge_publisher using (true);
revoke all on knowledge_functions from anon, authenticated;
-- The publisher reads which functions are current (publish checks before it writes).
grant select on knowledge_functions to knowledge_publisher;

-- The lexical tables as 006 makes them today: 006 was edited in place before the migrations were frozen,
-- and a database that applied an earlier text lacks the expansions, the df column and some grants.
create table if not exists knowledge_expansions (
    wording text primary key,
    english boolean not null,
    terms text not null
);
alter table knowledge_terms add column if not exists df int generated always as (cardinality(nums)) stored;
alter table knowledge_expansions enable row level security;
drop policy if exists knowledge_expansions_read on knowledge_expansions;
create policy knowledge_expansions_read on knowledge_expansions for select using (true);
drop policy if exists knowledge_expansions_publish on knowledge_expansions;
create policy knowledge_expansions_publish on knowledge_expansions for all to knowledge_publisher using (true) with check (true);
revoke all on knowledge_expansions from anon, authenticated;
grant select on knowledge_expansions to anon, authenticated;
grant select on knowledge_migrations to knowledge_publisher;
grant select, insert, update, delete, truncate on knowledge_chunk_terms, knowledge_terms, knowledge_lexical_stats,
    knowledge_expansions to knowledge_publisher;
