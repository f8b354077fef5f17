-- knowledge-build 001: pgvector and the bookkeeping tables.
create extension if not exists vector;

create table if not exists knowledge_migrations (
    version text primary key,
    applied_at timestamptz not null default now()
);

create table if not exists knowledge_meta (
    key text primary key,
    value text not null,
    updated_at timestamptz not null default now()
);
