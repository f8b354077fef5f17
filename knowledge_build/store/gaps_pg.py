"""The search box's gap log in the owner's database (issue 42, item 1; migration 013, store/functions/gaps.sql).

The box reports a question through the function knowledge_report_gap, the only right the anonymous role has on it;
the function keeps the question only when the owner's settings row says so and its answer was weak. This module is
the owner's side: `configure` writes the settings row from the settings (publish and db migrate do), `read` gives
the rows and counts as store/gaps.GapLog gives its own, `answered` moves the questions the model answers after all
from the rows to the counts (the box judged them by their words and the student's clicks alone), `forget` deletes
them all.
"""

from __future__ import annotations

import json

from .gaps import TOP


def configure(conn, config) -> None:
    """The settings row from `config`: gap_log (enabled), gap_retention_days, gap_weak_relevance, gap_box_per_minute."""
    conn.execute("insert into knowledge_gap_settings (one, enabled, retention_days, weak, per_minute)"
                 " values (true, %s, %s, %s, %s) on conflict (one) do update set enabled = excluded.enabled,"
                 " retention_days = excluded.retention_days, weak = excluded.weak, per_minute = excluded.per_minute",
                 (bool(config.gap_log), int(config.gap_retention_days), float(config.gap_weak_relevance),
                  int(config.gap_box_per_minute)))


def has_log(conn) -> bool:
    return conn.execute("select to_regclass('knowledge_gaps') is not null").fetchone()[0]


def read(conn) -> tuple[list[dict], dict[str, int], int]:
    """(rows, answered per channel, reports dropped by the rate limit) of the database's gap log; rows as
    GapLog.rows gives them (day as YYYY-MM-DD), each with its `ref` (its id in the table)."""
    rows = [{"day": day.isoformat(), "channel": channel, "query": query, "best": best,
             "results": (results if isinstance(results, list) else json.loads(results))[:TOP], "ref": ref}
            for ref, day, channel, query, best, results in conn.execute(
                "select id, day, channel, query, best, results from knowledge_gaps order by id")]
    answered = dict(conn.execute("select channel, sum(count)::bigint from knowledge_gap_answered group by channel"
                                 " order by channel").fetchall())
    dropped = conn.execute("select coalesce(sum(dropped), 0)::bigint from knowledge_gap_rate").fetchone()[0]
    return rows, {k: int(v) for k, v in answered.items()}, int(dropped)


def answered(conn, rows: list[dict]) -> None:
    """The `rows` (of `read`) are answered after all: deleted, each counted on its day and channel instead."""
    with conn.transaction():
        for row in rows:
            conn.execute("delete from knowledge_gaps where id = %s", (row["ref"],))
            conn.execute("insert into knowledge_gap_answered as a (day, channel, count) values (%s, %s, 1)"
                         " on conflict (day, channel) do update set count = a.count + 1", (row["day"], row["channel"]))


def forget(conn) -> int:
    """Delete every question and count; how many questions went."""
    with conn.transaction():
        gone = conn.execute("delete from knowledge_gaps").rowcount
        conn.execute("delete from knowledge_gap_answered")
        conn.execute("delete from knowledge_gap_rate")
    return gone
