"""`build_site(generator, workdir)`: the Tsumiki site rendered for one real generator and built by it.

Generators: jekyll and hugo (Debian packages, `make generators`), mkdocs with mkdocs-material and
sphinx (the `test` extra), sphinx twice (the `html` and `dirhtml` builders), and `plain`, a folder of
hand-written HTML files. All run offline.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import render_html, site_hugo, site_jekyll, site_mkdocs, site_sphinx
from .content import SITE_TITLE
from .pages import PAGES, Page

GENERATORS = ("jekyll", "hugo", "mkdocs", "sphinx-html", "sphinx-dirhtml", "plain")
REQUIRE_ENV = "KB_REQUIRE_GENERATORS"
TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", "120")) * 5


class GeneratorMissing(Exception):
    """The generator's program or package is not installed here."""


class GeneratorFailed(Exception):
    """The generator ran and failed; the message holds its output."""


@dataclass(frozen=True)
class BuiltSite:
    generator: str
    version: str
    source: Path  # what the generator read (for plain: the output itself)
    output: Path  # the built site, as it would be served
    base_path: str  # the URL path the site is served at: "/tsumiki/" or "/"
    page_files: dict[str, str] = field(default_factory=dict)  # page path → file under output
    site_title: str = SITE_TITLE

    def file(self, page: str) -> Path:
        return self.output / self.page_files[page]

    def html_files(self) -> list[str]:
        """Every HTML file of the output (the knowledge-build artifacts left out), POSIX, sorted."""
        return sorted(p.relative_to(self.output).as_posix() for p in self.output.rglob("*.html")
                      if p.relative_to(self.output).parts[0] != "knowledge")

    def url_of(self, page: str) -> str:
        """The page's URL path as a browser asks for it: `/tsumiki/docs/guide/setup/`, `/guide/setup.html`."""
        file = self.page_files[page]
        return self.base_path + (file.removesuffix("index.html") if file.endswith("index.html") else file)


@dataclass(frozen=True)
class _Generator:
    available: Callable[[], bool]
    missing: str  # what to install
    build: Callable[[Path], tuple[Path, object]]  # source folder → output folder (the source is written)
    version: Callable[[], str]
    file_of: Callable[[Page], str]
    base_path: str


def _sphinx(builder: str) -> _Generator:
    return _Generator(lambda: _module("sphinx"), "the sphinx package (the test extra: `make install-test`)",
                      lambda src: _write_then(site_sphinx.write_source, lambda s: site_sphinx.build(s, builder), src),
                      site_sphinx.version, lambda page: site_sphinx.file_of(page, builder), site_sphinx.BASE_PATH)


def _plain_build(src: Path) -> tuple[Path, None]:
    for page in PAGES:
        path = src / render_html.file_of(page)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_html.document(page, PAGES), encoding="utf-8")
    return src, None


def _write_then(write, build, src: Path):
    write(src)
    return build(src)


def _module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


_GENERATORS: dict[str, _Generator] = {
    "jekyll": _Generator(lambda: shutil.which("jekyll") is not None, "Debian's jekyll package (`make generators`)",
                         lambda src: _write_then(site_jekyll.write_source, site_jekyll.build, src),
                         site_jekyll.version, site_jekyll.file_of, site_jekyll.BASE_PATH),
    "hugo": _Generator(lambda: shutil.which("hugo") is not None, "Debian's hugo package (`make generators`)",
                       lambda src: _write_then(site_hugo.write_source, site_hugo.build, src),
                       site_hugo.version, site_hugo.file_of, site_hugo.BASE_PATH),
    "mkdocs": _Generator(lambda: _module("mkdocs") and _module("material"),
                         "the mkdocs and mkdocs-material packages (the test extra: `make install-test`)",
                         lambda src: _write_then(site_mkdocs.write_source, site_mkdocs.build, src),
                         site_mkdocs.version, site_mkdocs.file_of, site_mkdocs.BASE_PATH),
    "sphinx-html": _sphinx("html"),
    "sphinx-dirhtml": _sphinx("dirhtml"),
    "plain": _Generator(lambda: True, "nothing", _plain_build, lambda: "hand-written HTML",
                        render_html.file_of, "/"),
}


def check_available(generator: str) -> None:
    """Raises GeneratorMissing, naming what to install, when `generator` cannot run here."""
    spec = _spec(generator)
    if not spec.available():
        raise GeneratorMissing(f"{generator}: {spec.missing} is not installed")


def build_site(generator: str, workdir: Path) -> BuiltSite:
    """Writes the generator's source under `workdir/src` and builds it; the output is checked to hold
    a file for every page (GeneratorFailed otherwise)."""
    spec = _spec(generator)
    check_available(generator)
    src = Path(workdir) / "src"
    src.mkdir(parents=True)
    output, _ = spec.build(src)
    site = BuiltSite(generator, spec.version(), src, output, spec.base_path,
                     {page.path: spec.file_of(page) for page in PAGES})
    missing = [f for f in site.page_files.values() if not (output / f).is_file()]
    if missing:
        raise GeneratorFailed(f"{generator} wrote no {', '.join(missing)} under {output} "
                              f"(it wrote {', '.join(site.html_files()) or 'no HTML'})")
    return site


def run(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """A generator's command; its output goes into the error when it fails."""
    try:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
                                check=False)
    except subprocess.TimeoutExpired as exc:
        raise GeneratorFailed(f"{' '.join(command)} did not finish in {TIMEOUT:.0f} s (KB_TEST_TIMEOUT × 5)") from exc
    if result.returncode != 0:
        raise GeneratorFailed(f"{' '.join(command)} (in {cwd}) exited {result.returncode}:\n"
                              f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result


def _spec(generator: str) -> _Generator:
    try:
        return _GENERATORS[generator]
    except KeyError:
        raise ValueError(f"unknown generator {generator!r}; one of {', '.join(GENERATORS)}") from None
