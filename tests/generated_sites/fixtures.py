"""Session fixtures: each generator's build of the site, once per session (per xdist worker), and its
knowledge-build index with the real local model, whose vectors go in the run's cache (`run_cache`):
the generators render the same texts, so most of them are embedded once for all six sites (one index
is built at a time in the whole run, or two workers would embed the same texts at once).
tests/conftest.py imports them.

Tests take `generated_site` through indirect parametrisation over `SITE_PARAMS`, whose marks put every
test of one generator in one xdist group, so a worker builds each site (and its index) once.

A generator that is not installed skips its tests, unless KB_REQUIRE_GENERATORS is set (CI sets it
in .ci/run): then it is an error. The variable is read at import, before the suite's autouse fixture
clears every KB_* variable for each test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from .build import GENERATORS, REQUIRE_ENV, TIMEOUT, BuiltSite, GeneratorMissing, build_site, check_available

REQUIRED = bool(os.environ.get(REQUIRE_ENV))
SITE_PARAMS = [pytest.param(g, id=g, marks=pytest.mark.xdist_group(f"generated-{g}")) for g in GENERATORS]


def require(generator: str, required: bool = REQUIRED) -> None:
    """Skips (or, when generators are required, fails) unless `generator` can run here."""
    try:
        check_available(generator)
    except GeneratorMissing as missing:
        if required:
            pytest.fail(f"{missing}; {REQUIRE_ENV} is set, so every generator must be installed "
                        "(`make generators` and `make install-test` install them)")
        pytest.skip(f"{missing} (set {REQUIRE_ENV}=1 to make this an error)")


@pytest.fixture(scope="session")
def generated_site(request, tmp_path_factory) -> BuiltSite:
    """The Tsumiki site built by `request.param` (a name from GENERATORS); `.version` says which."""
    generator = request.param
    require(generator)
    return build_site(generator, tmp_path_factory.mktemp(f"gen-{generator}"))


@dataclass(frozen=True)
class GeneratedIndex:
    site: BuiltSite
    index: Path  # the artifact set
    summary: dict  # `knowledge-build build --format json`
    chunks: list[dict]  # the rows of knowledge_chunks.jsonl
    cache: Path  # the run's vector cache


def knowledge_build(*args: str, cache: Path) -> subprocess.CompletedProcess:
    """The CLI of this checkout in a child process, with the cache `cache` and no KB_* of the developer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")}
    env["KB_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, "-m", "knowledge_build.cli", *args], capture_output=True, text=True,
                          env=env, timeout=TIMEOUT, check=False)


@pytest.fixture(scope="session")
def generated_index(generated_site, run_cache, tmp_path_factory) -> GeneratedIndex:
    """`knowledge-build build --site <output> --format json` on the built site, with the local model,
    as the site's owner would run it: no --baseurl (the base path is the tool's to find, in the
    generator's configuration beside the output); the set goes to `<output>/knowledge/v2`."""
    from filelock import FileLock

    from ..conftest import run_dir

    site = generated_site
    cache = run_cache
    args = ["build", "--site", str(site.output), "--format", "json"]
    with FileLock(run_dir(tmp_path_factory) / "generated-index.lock"):
        result = knowledge_build(*args, cache=cache)
    if result.returncode != 0:
        pytest.fail(f"knowledge-build {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    summary = json.loads(result.stdout)
    index = Path(summary["output"])
    with open(index / "knowledge_chunks.jsonl", encoding="utf-8") as rows:
        chunks = [json.loads(line) for line in rows if line.strip()]
    return GeneratedIndex(site, index, summary, chunks, cache)
