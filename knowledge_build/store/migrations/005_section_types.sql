-- knowledge-build 005: section and table chunks (issue 13) join the chunk types.
alter table knowledge_chunks drop constraint if exists knowledge_chunks_type_check;
alter table knowledge_chunks add constraint knowledge_chunks_type_check
    check (type in ('rule', 'method', 'definition', 'example', 'tip', 'section', 'table'));
