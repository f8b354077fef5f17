-- knowledge-build functions: the public functions' input checks (first in migration 009). A repeatable
-- file: re-applied whole (its functions dropped and created again, with these grants) whenever its rendered
-- text differs from the one the database recorded in knowledge_functions (store/db_functions.py).

-- The checks, each one line naming the limit and the fix (SQLSTATE 22023, invalid_parameter_value).
-- The limits come from Python (search/knowledge_index.py): the same numbers as the CLI and MCP.
create or replace function knowledge_checked_query(query_text text) returns text
language plpgsql immutable parallel safe
as $$
begin
    if length(query_text) > __MAX_QUERY_CHARS__
       and length(btrim(query_text, E' \t\n\r\f\u3000' || chr(11))) > __MAX_QUERY_CHARS__ then
        raise exception using errcode = '22023',
            message = format('the query is %s characters long; the limit is %s. Ask with the question itself '
                             '(a sentence or a short paragraph), not a whole document.',
                             to_char(length(btrim(query_text, E' \t\n\r\f\u3000' || chr(11))), 'FM999,999,999,999'),
                             to_char(__MAX_QUERY_CHARS__, 'FM999,999,999'));
    end if;
    return query_text;
end
$$;

create or replace function knowledge_checked_count(match_count int) returns int
language plpgsql immutable parallel safe
as $$
begin
    if match_count > __MAX_MATCH_COUNT__ then
        raise exception using errcode = '22023',
            message = format('match_count is %s; the limit is %s rows per call. Ask for fewer rows.',
                             match_count, __MAX_MATCH_COUNT__);
    end if;
    return match_count;
end
$$;

-- A zero vector (what a failed embedder may send) has no direction: its cosine with every chunk would
-- read as a perfect match. pgvector refuses NaN and infinite components itself; a norm that overflows is refused here.
create or replace function knowledge_checked_embedding(query_embedding vector) returns vector
language plpgsql immutable parallel safe
as $$
begin
    if query_embedding is not null and not (vector_norm(query_embedding) > 0
                                            and vector_norm(query_embedding) < 'Infinity'::float8) then
        raise exception using errcode = '22023',
            message = 'query_embedding is a zero or non-finite vector, which matches nothing. Send the '
                      'embedding of the query from the site''s embedder, or null for the lexical channel alone.';
    end if;
    return query_embedding;
end
$$;

grant execute on function knowledge_checked_query(text), knowledge_checked_count(int), knowledge_checked_embedding(vector)
    to anon, authenticated, knowledge_publisher;
