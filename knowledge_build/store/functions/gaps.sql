-- knowledge-build functions: the search box's report of a question it answered weakly (issue 42; the tables are
-- migration 013's). A repeatable file (store/db_functions.py).
--
-- knowledge_report_gap(query_text, chosen): the only thing the anonymous role may do with the gap log. Security
-- definer (it writes tables the caller has no right on), insert-only: it reads nothing back to the caller but whether
-- the question was kept. In order: nothing at all unless the owner's settings row says enabled (the setting gap_log,
-- written by publish and db migrate); the query checked as every public function checks it; the rate limit (at
-- most per_minute reports a minute, for the whole database: no identity is kept to limit by; the others are
-- counted as dropped, not kept); the retention (rows older than retention_days go). Then the answer is judged with
-- the evidence the box has (it has no query embedding): the question is kept, with the day, the channel 'box' and
-- the first results' ids and relevance as search_knowledge gives them with no query vector (the words decide),
-- when its best relevance is below weak, or when the student left the results without opening one (`chosen`
-- false); else it is only counted. `knowledge-build gaps` judges the kept ones again with the model and keeps
-- only those it too answers weakly (store/gaps_pg.py).
create or replace function knowledge_report_gap(query_text text, chosen boolean default false) returns boolean
language plpgsql volatile security definer
set search_path from current
as $$
declare
    settings knowledge_gap_settings;
    this_minute timestamptz := date_trunc('minute', now());
    today date := (now() at time zone 'UTC')::date;
    reports int;
    best float8;
    results jsonb;
begin
    select * into settings from knowledge_gap_settings;
    if settings is null or not settings.enabled then
        return false;
    end if;
    perform knowledge_checked_query(query_text);
    if query_text is null or btrim(query_text, E' \t\n\r\f\u3000' || chr(11)) = '' then
        return false;
    end if;
    delete from knowledge_gap_rate where minute < this_minute - interval '1 day';
    insert into knowledge_gap_rate as r (minute, count) values (this_minute, 1)
        on conflict (minute) do update set count = r.count + 1
        returning r.count into reports;
    if reports > settings.per_minute then
        update knowledge_gap_rate set dropped = dropped + 1 where minute = this_minute;
        return false;
    end if;
    delete from knowledge_gaps where day < today - settings.retention_days;
    delete from knowledge_gap_answered where day < today - settings.retention_days;
    select coalesce(max(r.relevance), 0),
           coalesce(jsonb_agg(jsonb_build_object('id', r.id, 'relevance', round(r.relevance::numeric, 4))
                              order by r.score desc, r.id), '[]'::jsonb)
        into best, results
        from search_knowledge(query_text, null::vector, 5) as r;
    if best >= settings.weak and coalesce(chosen, false) then
        insert into knowledge_gap_answered as a (day, channel, count) values (today, 'box', 1)
            on conflict (day, channel) do update set count = a.count + 1;
        return false;
    end if;
    insert into knowledge_gaps (day, channel, query, best, results)
        values (today, 'box', query_text, round(best::numeric, 4)::float8, results);
    return true;
end
$$;

revoke all on function knowledge_report_gap(text, boolean) from public;
grant execute on function knowledge_report_gap(text, boolean) to anon, authenticated;
