-- knowledge-build 008: the HNSW index with ef_construction 128 (pgvector's default, which 002 used, is 64),
-- chosen by measurement (bench/bench_db_recall.py, docs/benchmarks.md, issue 28): at 100,000 chunks of
-- real-model vectors, dense recall@10 against exact search at the RPCs' hnsw.ef_search 200 was 0.94 with
-- the default and 0.98 with this, at the same index size; the build (and each publish's inserts into the
-- index) takes about 1.6 times as long. Rebuilt only when the index lacks these settings: on a large table
-- it takes minutes and blocks writes meanwhile (raise maintenance_work_mem for the session to speed it up).
do $$
begin
    if not exists (select 1 from pg_class c
                   where c.relname = 'knowledge_chunks_embedding_hnsw'
                     and c.reloptions @> array['m=16', 'ef_construction=128']) then
        drop index if exists knowledge_chunks_embedding_hnsw;
        create index knowledge_chunks_embedding_hnsw on knowledge_chunks
            using hnsw (embedding vector_cosine_ops) with (m = 16, ef_construction = 128);
    end if;
end
$$;
