-- knowledge-build 013: the questions the search box answered weakly, kept in the owner's database when the owner
-- turns the setting gap_log on (issue 42; store/gaps.py keeps those of serve, ask, slack and search in SQLite).
-- The anonymous and authenticated roles have no right on these tables at all: the box's only way in is the
-- insert-only function knowledge_report_gap (store/functions/gaps.sql, security definer), which checks the
-- settings row, the rate limit and the query, judges the answer and keeps the question only when it was weak.
create table if not exists knowledge_gaps (
    id bigserial primary key,
    day date not null,  -- UTC, no time
    channel text not null,
    query text not null,
    best float8 not null,
    results jsonb not null  -- [{"id", "relevance"}] of the first results
);
create index if not exists knowledge_gaps_day on knowledge_gaps (day);
-- Questions answered (not kept): a count per day and channel.
create table if not exists knowledge_gap_answered (
    day date not null,
    channel text not null,
    count bigint not null,
    primary key (day, channel)
);
-- The owner's settings (one row, written by publish and db migrate from the settings gap_log,
-- gap_retention_days, gap_weak_relevance and gap_box_per_minute); no row or enabled false: nothing is kept.
create table if not exists knowledge_gap_settings (
    one boolean primary key default true check (one),
    enabled boolean not null,
    retention_days int not null check (retention_days >= 1),
    weak float8 not null check (weak between 0 and 1),
    per_minute int not null check (per_minute >= 1)
);
-- Reports per minute (the rate limit: no identity is kept, so the limit is the database's); rows past a day go.
create table if not exists knowledge_gap_rate (
    minute timestamptz primary key,
    count int not null,
    dropped int not null default 0
);
-- Row-level security with no policy for anon or authenticated (and no grant): they read, change and delete
-- nothing; the owner (and so the security-definer function) is not subject to it.
do $$
declare
    t text;
begin
    foreach t in array array['knowledge_gaps', 'knowledge_gap_answered', 'knowledge_gap_settings',
                             'knowledge_gap_rate'] loop
        execute format('alter table %I enable row level security', t);
        execute format('revoke all on %I from anon, authenticated', t);
    end loop;
end
$$;
revoke all on sequence knowledge_gaps_id_seq from anon, authenticated;
-- The publisher writes the settings row (publish) and nothing else here.
drop policy if exists knowledge_gap_settings_publish on knowledge_gap_settings;
create policy knowledge_gap_settings_publish on knowledge_gap_settings for all to knowledge_publisher
    using (true) with check (true);
grant select, insert, update on knowledge_gap_settings to knowledge_publisher;
