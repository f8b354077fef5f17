-- knowledge-build 007: each row's fingerprint (store/postgres.py): a hash of its artifact record and of
-- what its lexical terms are made with, so a publish diffs on one column instead of every field. A row
-- published before this has none, and the next publish writes it again once.
alter table knowledge_chunks add column if not exists fingerprint text;
