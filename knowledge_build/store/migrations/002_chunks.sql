-- knowledge-build 002: the chunks and their vectors (dimension __DIM__, cosine metric).
create table if not exists knowledge_chunks (
    id text primary key,
    material text not null,
    anchor text not null,
    url text not null,
    title text not null,
    content text not null,
    excerpt text not null default '',
    learns text[] not null default '{}',
    learns_source text not null default '',
    type text not null check (type in ('rule', 'method', 'definition', 'example', 'tip')),
    category text not null default '',
    level text not null default '' check (level in ('基礎', '標準', '発展', '')),
    prerequisites text[] not null default '{}',
    content_hash text not null,
    embedding vector(__DIM__) not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);

create index if not exists knowledge_chunks_embedding_hnsw
    on knowledge_chunks using hnsw (embedding vector_cosine_ops);
create index if not exists knowledge_chunks_material on knowledge_chunks (material);
