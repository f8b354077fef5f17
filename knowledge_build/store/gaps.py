"""Questions nobody answered (issue 42, item 1): kept only when the site's owner turns `gap_log` on, in a SQLite file of
their own (`gap_log_file`, default .knowledge-gaps.sqlite).

A question is stored only when its answer was weak: its best result's relevance below `gap_weak_relevance` (no result
relevant, or barely). Stored: the day (UTC, no time), the channel (mcp, ask, slack, search), the question's text and
the ids and relevance of its first results; nothing of who asked (no user, client or address). A question that was
answered is counted per day and channel, its text not kept. Retention: on every write, rows older than
`gap_retention_days` days go. `knowledge-build gaps --forget` deletes every row.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

SCHEMA = """
create table if not exists gaps (
    id integer primary key,
    day text not null,
    channel text not null,
    query text not null,
    best real not null,
    results text not null
);
create table if not exists answered (
    day text not null,
    channel text not null,
    count integer not null,
    primary key (day, channel)
);
"""
CHANNELS = ("mcp", "ask", "slack", "search", "box")
TOP = 5  # results kept per question


def today() -> date:
    return datetime.now(timezone.utc).date()


class GapLog:
    """The gap log's file. `day`: what today is (tests give another)."""

    def __init__(self, path: Path, retention_days: int = 90, day: date | None = None):
        self.path, self.retention_days, self.day = Path(path), retention_days, day
        self.db = sqlite3.connect(self.path)
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "GapLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def record(self, channel: str, query: str, results: list[tuple[str, float]], weak: float) -> bool:
        """Store the question when its best relevance is below `weak`, else count it answered; True when stored.
        Rows past the retention go first."""
        if channel not in CHANNELS:
            raise ValueError(f"unknown channel {channel!r}")
        now = self.day or today()
        day = now.isoformat()
        best = max((relevance for _, relevance in results), default=0.0)
        with self.db:
            cutoff = (now - timedelta(days=self.retention_days)).isoformat()
            self.db.execute("delete from gaps where day < ?", (cutoff,))
            self.db.execute("delete from answered where day < ?", (cutoff,))
            if best >= weak:
                self.db.execute("insert into answered (day, channel, count) values (?, ?, 1) on conflict (day, channel)"
                                " do update set count = count + 1", (day, channel))
                return False
            kept = [{"id": chunk_id, "relevance": round(float(relevance), 4)} for chunk_id, relevance in results[:TOP]]
            self.db.execute("insert into gaps (day, channel, query, best, results) values (?, ?, ?, ?, ?)",
                            (day, channel, query, round(float(best), 4), json.dumps(kept, ensure_ascii=False)))
            return True

    def rows(self) -> list[dict]:
        cursor = self.db.execute("select day, channel, query, best, results from gaps order by id")
        return [{"day": d, "channel": c, "query": q, "best": b, "results": json.loads(r)} for d, c, q, b, r in cursor]

    def answered(self) -> dict[str, int]:
        """Questions answered, per channel, over the retention."""
        return dict(self.db.execute("select channel, sum(count) from answered group by channel order by channel"))

    def forget(self) -> int:
        """Delete every row; how many questions went."""
        with self.db:
            gone = self.db.execute("delete from gaps").rowcount
            self.db.execute("delete from answered")
        self.db.execute("vacuum")  # the questions' text leaves the file, not only the table
        return gone


def note(config, channel: str, query: str, results) -> None:
    """After a search of `channel`: record it in the gap log when the owner turned it on (config.gap_log); `results`
    are SearchResults (id, relevance). Nothing is written when it is off."""
    if not config.gap_log:
        return
    with GapLog(gap_log_path(config), config.gap_retention_days) as log:
        log.record(channel, query, [(r.id, r.relevance) for r in results], config.gap_weak_relevance)


def gap_hook(config):
    """What a channel calls after a search (serve's on_search): `note` under `channel`."""
    return lambda channel: (lambda query, results: note(config, channel, query, results))


def gap_log_path(config) -> Path:
    return Path(config.gap_log_file) if config.gap_log_file else Path(".knowledge-gaps.sqlite")
