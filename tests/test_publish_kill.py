"""Killing the publisher at random points, and inside its transaction with every row written,
never leaves a mixed or empty table."""

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from knowledge_build import build, load_config

from .conftest import SITE, FakeEmbedder

pytestmark = [pytest.mark.db, pytest.mark.corpus]
CLI = [sys.executable, "-m", "knowledge_build.cli"]
# The runs alternate two sites (the corpus and the sample site) in one database: each replaces the
# other, which publish refuses without --replace (tests/test_publish_site.py).
TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", "120"))  # seconds a publisher may take to reach the lock


def _expected(index: Path) -> tuple[str, dict]:
    manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
    lines = index / "knowledge_chunks.jsonl"  # schema 2; schema 1 keeps one JSON array
    chunks = [json.loads(line) for line in lines.read_text(encoding="utf-8").splitlines()] if lines.exists() \
        else json.loads((index / "knowledge_chunks.json").read_text(encoding="utf-8"))
    return manifest["build_id"], {c["id"]: c["content_hash"] for c in chunks}


def _state(url: str) -> tuple[str | None, dict]:
    with psycopg.connect(url) as conn:
        if conn.execute("select to_regclass('knowledge_meta')").fetchone()[0] is None:
            return None, {}
        meta = dict(conn.execute("select key, value from knowledge_meta").fetchall())
        rows = dict(conn.execute("select id, content_hash from knowledge_chunks").fetchall())
    return meta.get("build_id"), rows


def _publisher_waiting(url: str, holder_pid: int) -> bool:
    """Whether another session waits for a lock (the publisher, blocked by the test's table lock)."""
    with psycopg.connect(url) as conn:
        return bool(conn.execute("select count(*) from pg_stat_activity where datname = current_database()"
                                 " and pid not in (pg_backend_pid(), %s) and wait_event_type = 'Lock'"
                                 " and xact_start is not null", (holder_pid,)).fetchone()[0])


def _kill_inside_the_transaction(url: str, command: list[str]) -> bool:
    """Run the publisher while this test holds knowledge_meta in EXCLUSIVE mode: its reads and its
    chunk upserts go through, its last write (the build id) waits, inside its transaction, with
    every chunk row written. Kill it there; True when it was waiting when killed."""
    with psycopg.connect(url) as holder:
        holder.execute("lock table knowledge_meta in exclusive mode")
        pid = holder.execute("select pg_backend_pid()").fetchone()[0]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + TIMEOUT
        waiting = False
        while time.monotonic() < deadline and process.poll() is None and not waiting:
            waiting = _publisher_waiting(url, pid)
            time.sleep(0.02)
        process.kill()
        process.wait()
        holder.rollback()
    return waiting


def test_a_publisher_killed_anywhere_leaves_one_complete_build(corpus_dir, fresh_db, tmp_path):
    cache = tmp_path / "cache"
    corpus = build(load_config(site=corpus_dir, output=tmp_path / "a", cache_dir=cache, env={}),
                   embedder=FakeEmbedder()).output
    site = tmp_path / "site"
    shutil.copytree(SITE, site, ignore=shutil.ignore_patterns("_site"))
    small = build(load_config(site=site, output=tmp_path / "b", cache_dir=cache, env={}), embedder=FakeEmbedder()).output
    builds = dict([_expected(corpus), _expected(small)])
    durations = {}
    for target in (small, corpus):  # how long a whole run takes here, to aim the random kills inside it
        started = time.monotonic()
        subprocess.run([*CLI, "publish", "--index", str(target), "--database-url", fresh_db, "--replace"], check=True,
                       capture_output=True)
        durations[target] = time.monotonic() - started
    rng = random.Random(20261122)
    in_transaction = 0
    for trial in range(24):
        target = small if trial % 4 < 2 else corpus
        if trial % 2:  # the build not in the table, so that the killed run has rows to write
            target = small if _state(fresh_db)[0] == _expected(corpus)[0] else corpus
        command = [*CLI, "publish", "--index", str(target), "--database-url", fresh_db, "--replace"]
        if trial % 2:  # killed at its last write, every chunk written (not timed: it waits for our lock)
            in_transaction += _kill_inside_the_transaction(fresh_db, command)
        else:  # killed at a random moment of a run, or not at all if it is done by then
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + rng.uniform(0.1, 1.0) * durations[target]
            while time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.005)
            process.kill()
            process.wait()
        build_id, rows = _state(fresh_db)
        if build_id is None:
            assert rows == {}, trial
        else:
            assert rows == builds[build_id], f"trial {trial}: table does not hold build {build_id} whole"
    assert in_transaction == 12  # every lock-held trial was killed inside the publisher's transaction
    for target in (corpus, small):  # a re-run converges
        subprocess.run([*CLI, "publish", "--index", str(target), "--database-url", fresh_db, "--replace"], check=True,
                       capture_output=True)
        build_id, rows = _state(fresh_db)
        assert (build_id, rows) == (_expected(target)[0], _expected(target)[1])
