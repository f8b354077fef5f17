"""Killing the publisher at random points never leaves a mixed or empty table."""

import json
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


def _expected(index: Path) -> tuple[str, dict]:
    manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
    chunks = json.loads((index / "knowledge_chunks.json").read_text(encoding="utf-8"))
    return manifest["build_id"], {c["id"]: c["content_hash"] for c in chunks}


def _state(url: str) -> tuple[str | None, dict]:
    with psycopg.connect(url) as conn:
        if conn.execute("select to_regclass('knowledge_meta')").fetchone()[0] is None:
            return None, {}
        meta = dict(conn.execute("select key, value from knowledge_meta").fetchall())
        rows = dict(conn.execute("select id, content_hash from knowledge_chunks").fetchall())
    return meta.get("build_id"), rows


def _publisher_in_transaction(url: str) -> bool:
    with psycopg.connect(url) as conn:
        return bool(conn.execute("select count(*) from pg_stat_activity where datname = current_database()"
                                 " and pid <> pg_backend_pid() and xact_start is not null").fetchone()[0])


def test_a_publisher_killed_anywhere_leaves_one_complete_build(corpus_dir, fresh_db, tmp_path):
    cache = tmp_path / "cache"
    corpus = build(load_config(site=corpus_dir, output=tmp_path / "a", cache_dir=cache, env={}),
                   embedder=FakeEmbedder()).output
    site = tmp_path / "site"
    shutil.copytree(SITE, site, ignore=shutil.ignore_patterns("_site"))
    small = build(load_config(site=site, output=tmp_path / "b", cache_dir=cache, env={}), embedder=FakeEmbedder()).output
    builds = dict([_expected(corpus), _expected(small)])
    durations = {}
    for target in (small, corpus):  # how long a whole run takes here, to aim the kills inside it
        started = time.monotonic()
        subprocess.run([*CLI, "publish", "--index", str(target), "--database-url", fresh_db], check=True,
                       capture_output=True)
        durations[target] = time.monotonic() - started
    rng = random.Random(20261122)
    killed = mid_transaction = 0
    for trial in range(24):
        target = small if trial % 2 == 0 else corpus
        process = subprocess.Popen([*CLI, "publish", "--index", str(target), "--database-url", fresh_db],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + rng.uniform(0.4, 1.0) * durations[target]
        while time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.005)
        if process.poll() is None:
            mid_transaction += _publisher_in_transaction(fresh_db)
            process.kill()
            killed += 1
        process.wait()
        build_id, rows = _state(fresh_db)
        if build_id is None:
            assert rows == {}, trial
        else:
            assert rows == builds[build_id], f"trial {trial}: table does not hold build {build_id} whole"
    print(f"publisher killed in {killed} of 24 trials, {mid_transaction} of them inside its transaction")
    assert killed >= 10 and mid_transaction >= 3, (killed, mid_transaction)
    for target in (corpus, small):  # a re-run converges
        subprocess.run([*CLI, "publish", "--index", str(target), "--database-url", fresh_db], check=True,
                       capture_output=True)
        build_id, rows = _state(fresh_db)
        assert (build_id, rows) == (_expected(target)[0], _expected(target)[1])
