"""The build, as a script: site -> pages -> chunks -> vectors -> artifacts."""

from __future__ import annotations

import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator

import numpy as np

from .browser.bundle import BundleTerms
from .chunking.learns_gen import load_generated, old_generated_learns
from .chunking.stream import ChunkMaker
from .config import Config, generated_learns_path
from .diagnostics import Diagnostic, has_errors
from .embed import describe, get_embedder
from .embed.cache import VectorCache
from .embed.runner import EmbedStats, embed_rows
from .errors import BuildFailed, ConfigError
from .index.artifacts import (ArtifactSet, check_output_dir, checked_vectors, clean_stale, write_artifacts,
                              write_latest)
from .index.artifacts_v2 import assemble
from .index.build_memo import inputs_digest, kept_chunks, recall, remember
from .index.layout import MANIFEST
from .model import Chunk, retrieval_content
from .progress import Progress
from .site.jekyll import Site, find_pages, open_site, title_suffix
from .site.facets import Facets, site_facets
from .site.page import Page
from .site.scan import UNTITLED, scan_page
from .text.ja import ANALYZER, FIELDS, analyze_box
from .text.token_cache import FILE_NAME as TOKENS_FILE
from .text.token_cache import TokenCache, analyze_cached


@dataclass
class Extraction:
    site: Site
    pages: list[Page]
    chunks: list[Chunk]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    summary: dict = field(default_factory=dict)  # pages found, indexed and skipped with why (page_summary)
    foreign: frozenset = frozenset()  # pages (rel) in another language (text_language): analysed by their words
    facets: Facets = field(default_factory=Facets)  # the site's versions and languages (site/facets.py)


@dataclass
class BuildResult:
    output: Path
    artifacts: ArtifactSet
    chunks: list[Chunk]
    diagnostics: list[Diagnostic]
    embed_stats: EmbedStats
    seconds: float
    pages: dict = field(default_factory=dict)  # page_summary: found, indexed, skipped with why
    note: str = ""  # how the site folder was read, when not as given (generators.py)


def extract(config: Config, slugs: TokenCache | None = None, keep_pages: bool = True,
            progress: bool = False) -> Extraction:
    """Scan the site and turn its knowledge elements (and, by the `sections` setting, its sections and
    tables) into chunks (no model; no disk writes but the heading slugs put into `slugs`).
    keep_pages=False (the build) lets each page go once its chunks exist, so memory follows the
    chunks, not the site's HTML: `pages` is then empty. progress: pages read, on stderr (progress.py)."""
    if config.site is None:
        raise ConfigError("no site given. Provide a --site flag, a KB_SITE environment variable, "
                          "or a 'site' key in knowledge.yml.")
    site = open_site(config.site, baseurl=config.baseurl, exclude=config.exclude)
    learns_file = generated_learns_path(config, site)
    site.generated_learns = load_generated(learns_file)
    if config.generated_learns is None and not learns_file.exists():
        site.diagnostics += old_generated_learns(learns_file)
    maker, pages, page_diagnostics, reasons = ChunkMaker(site, config.sections), [], [], {}
    paths = find_pages(site)
    site.title_suffix = title_suffix(site, paths)
    languages, foreign, left_out, page_langs = Counter(), set(), Counter(), {}
    # closing(): an error ends the section memory at once
    with closing(_scan_pages(site, paths, config, slugs)) as scanned, \
            Progress("reading pages", len(paths), "page", progress) as bar:
        for page in scanned:
            bar.update()
            reasons[page.rel] = _unindexed_reason(page, config.sections)
            languages[page.lang] += bool(page.lang)
            page_langs[page.rel] = page.lang
            left_out.update(page.left_out)
            if page.lang and page.lang != "ja":
                foreign.add(page.rel)
            maker.add(page)
            page_diagnostics += page.diagnostics
            if keep_pages:
                pages.append(page)
    chunk_set = maker.finish()
    facets = site_facets(site.root, [path.relative_to(site.root).as_posix() for path in paths], page_langs) \
        if config.facets else Facets()
    chunks = with_facets([c for c in chunk_set.chunks if c.source_path not in facets.copies], facets)
    for rel, why in sorted(facets.copies.items()):  # named as skipped, not as pages without content
        reasons.pop(rel, None)
        site.skipped.append((rel, why))
    site.lang = site.lang or next((lang for lang, n in languages.most_common(1) if n), "")
    diagnostics = site.diagnostics + page_diagnostics + chunk_set.diagnostics
    summary = page_summary(site, reasons, chunks, left_out + chunk_set.left_out)
    return Extraction(site, pages, chunks, diagnostics, summary, frozenset(foreign), facets)


def with_facets(chunks: list[Chunk], facets: Facets) -> list[Chunk]:
    """Each chunk with its page's version and language (unchanged on a site without facets)."""
    if not facets.version and not facets.language:
        return chunks
    return [replace(c, version=facets.version.get(c.source_path, ""), language=facets.language.get(c.source_path, ""))
            for c in chunks]


def _unindexed_reason(page: Page, sections: str) -> str:
    """Why this page would give no chunk (asked only of pages that give none)."""
    if page.unreadable or any(d.severity == "error" for d in page.diagnostics):
        return "error (see the page's diagnostics)"
    if page.redirect:
        return "redirect stub"
    if page.skip_reason:
        return page.skip_reason
    if sections == "off" and not page.elements:
        return "no knowledge box (sections: off)"
    return "no main content (no text outside navigation, or only lists of links)"


# Skips that say nothing is wrong with the site: what the generator writes for itself (its search and
# index pages, the pages of included fragments), what the setting asked for. They do not count when most pages were skipped.
_EXPECTED_SKIPS = ("generated by", "no knowledge box (sections: off)", UNTITLED)


def page_summary(site: Site, reasons: dict[str, str], chunks: list[Chunk], left_out: Counter | None = None) -> dict:
    """{"generator", "found", "indexed", "skipped": [{"path", "reason"}]} (sorted by path): every page
    the walk found is indexed (a chunk came from it) or skipped with the reason; and, when something
    the pages hold was not indexed, "left_out": {why: how many} (boxes outside the main content …)."""
    indexed = {c.source_path for c in chunks}
    skipped = [{"path": rel, "reason": reason} for rel, reason in site.skipped]
    skipped += [{"path": rel, "reason": reason} for rel, reason in reasons.items() if rel not in indexed]
    skipped.sort(key=lambda s: s["path"])
    return {"generator": site.generator, "found": len(reasons) + len(site.skipped),
            "indexed": sum(rel in indexed for rel in reasons), "skipped": skipped,
            **({"left_out": dict(sorted(left_out.items()))} if left_out else {})}


def check_skips(summary: dict, root, strict: bool = False) -> None:
    """PagesSkipped when --strict and a page was skipped (other than a generator's own pages), or when
    no page was found, or when most pages were skipped for reasons that mean something is wrong."""
    from .errors import PagesSkipped

    unexpected = [s for s in summary["skipped"] if not s["reason"].startswith(_EXPECTED_SKIPS)]
    counted = summary["indexed"] + len(unexpected)
    if summary["found"] == 0:
        raise PagesSkipped(f"no HTML page was found in '{root}'. Fix: point --site at the site's source folder "
                           "(with _config.yml, mkdocs.yml, hugo.toml or conf.py) or at its built output (_site, "
                           "site, public, _build/html).")
    if (strict and unexpected) or (counted >= 2 and 2 * len(unexpected) > counted):
        why = ", ".join(f"{n} {reason}" for reason, n in Counter(s["reason"] for s in unexpected).most_common())
        first = ", ".join(s["path"] for s in unexpected[:3])
        what = "--strict: " if strict and 2 * len(unexpected) <= counted else ""
        raise PagesSkipped(f"{what}{len(unexpected)} of {counted} pages of '{root}' were skipped ({why}; e.g. {first}). "
                           "Fix: if these pages are the site's content, point --site at the built output the "
                           "server serves, or tell the tool where the content is ('boxes', 'box_classes', "
                           "'exclude' in knowledge.yml); build -v lists every skipped page.")


PARTS_FLUSH = 200  # pages whose newly read parts are stored at once (a cold build holds no more)


def _scan_pages(site: Site, paths: list[Path], config: Config, slugs: TokenCache | None) -> Iterator[Page]:
    """Every page scanned, one at a time; with sections on and a cache, heading slugs (section chunk
    ids) and the parts of pages seen by an earlier build come from the cache, so a rebuild meeting no
    new page needs no tokenizer and reads no page as sections again (section_memory.py)."""
    if config.sections == "off" or slugs is None:
        yield from (scan_page(site, path, config.box_classes, config.sections, config.boxes, config.answer_selector)
                    for path in paths)
        return
    from .html.section_memory import parts_recipe, remembered, slug_recipe

    recipe, parts_of = slug_recipe(), parts_recipe()
    with remembered(slugs.slugs(recipe), slugs.parts_lookup(parts_of)) as memory:
        for number, path in enumerate(paths, 1):
            yield scan_page(site, path, config.box_classes, config.sections, config.boxes, config.answer_selector)
            if number % PARTS_FLUSH == 0:
                slugs.put_parts(parts_of, memory.fresh_parts)
                memory.fresh_parts = {}
    slugs.put_slugs(recipe, memory.fresh_slugs)
    slugs.put_parts(parts_of, memory.fresh_parts)


def lexical_text(chunk: Chunk) -> str:
    """What the lexical channel analyses (Chunk.lexical_text)."""
    return chunk.lexical_text


def lexical_fields(chunks: list[Chunk], cache: TokenCache | None = None,
                   foreign: frozenset[str] = frozenset()) -> dict[str, list[list[str]]]:
    """Per field, per chunk (row i = chunk i), the tokens of title, learns and content.
    With a cache, only texts it has not seen under this ANALYZER are analysed. `foreign`: the pages
    (source paths) in another language than Japanese, analysed by their words (analyze_plain)."""
    analyzed = _analyzed(chunks, cache, foreign)
    return {name: [a[name] for a in analyzed] for name in FIELDS}


def _analyzed(chunks: list[Chunk], cache: TokenCache | None, foreign: frozenset[str]) -> list[dict]:
    """Each chunk's tokens in order: Japanese ones by analyze_box, those of `foreign` pages by analyze_plain."""
    from .text.ja import CACHED_FIELDS, PLAIN_ANALYZER, analyze_plain

    cached = f"{ANALYZER}+surface"  # the fields and the words' surfaces (text/ja.py, CACHED_FIELDS)

    texts = [lexical_text(c) for c in chunks]
    if not foreign or not any(c.source_path in foreign for c in chunks):
        return analyze_cached(texts, analyze_box, cached, CACHED_FIELDS, cache)
    rows = {False: [], True: []}
    for row, chunk in enumerate(chunks):
        rows[chunk.source_path in foreign].append(row)
    out: list = [None] * len(chunks)
    for plain, (analyze, name) in ((False, (analyze_box, cached)), (True, (analyze_plain, f"{PLAIN_ANALYZER}+surface"))):
        for row, tokens in zip(rows[plain], analyze_cached([texts[r] for r in rows[plain]], analyze, name,
                                                           CACHED_FIELDS, cache)):
            out[row] = tokens
    return out


def lexical_postings(chunks: list[Chunk], cache: TokenCache | None = None, batch: int = 2000,
                     progress: bool = False, foreign: frozenset[str] = frozenset(), also=None):
    """The postings of every chunk's lexical tokens (row i = chunk i), analysed (or read from the cache)
    a batch at a time and folded in, so the build never holds every chunk's token lists at once.
    `also(chunks, analysed)` is given each batch too (the search box's BundleTerms)."""
    from .index.postings import PostingsBuilder
    from .kinds import PART_TYPES

    builder = PostingsBuilder(FIELDS)
    with Progress("indexing words", len(chunks), "chunk", progress) as bar:
        for start in range(0, len(chunks), batch):
            part = chunks[start:start + batch]
            analysed = _analyzed(part, cache, foreign)
            for tokens in analysed:
                builder.add(tokens)
            if also is not None:
                also(part, analysed)
            bar.update(len(part))
    return builder.finish(np.array([c.type not in PART_TYPES for c in chunks], dtype=bool))


def build(config: Config, embedder=None, progress: bool = False, strict: bool = False) -> BuildResult:
    """Build and write the artifact set. Raises BuildFailed (writing nothing) on site errors, and
    PagesSkipped when no page, or most pages (with strict: any page), gave no chunk (check_skips)."""
    started = time.perf_counter()
    if config.site is None:
        raise ConfigError("no site given. Provide a --site flag, a KB_SITE environment variable, "
                          "or a 'site' key in knowledge.yml.")
    site = open_site(config.site, baseurl=config.baseurl, exclude=config.exclude, data=False)
    output = check_output_dir(config.output or site.default_index_dir)  # refuse before embedding
    clean_stale(output)  # also when the set is kept below: a killed build's staging folder goes either way
    digest = inputs_digest(config, site, find_pages(site), describe(embedder) if embedder is not None else None,
                           generated_learns_path(config, site))
    kept = recall(Path(config.cache_dir), output, digest)
    if kept is not None and kept[2]:
        check_skips(kept[2], config.site, strict)
        return replace(_kept(output, *kept[:2], started), pages=kept[2], note=site.note)
    with TokenCache(Path(config.cache_dir) / TOKENS_FILE) as token_cache:
        extraction = extract(config, slugs=token_cache, keep_pages=False, progress=progress)
    if has_errors(extraction.diagnostics):
        raise BuildFailed(extraction.diagnostics)
    check_skips(extraction.summary, config.site, strict)
    chunks = extraction.chunks
    embedder = embedder or get_embedder(config.embedder, model=config.embedding_model,
                                        dimensions=config.embedding_dimensions, base_url=config.base_url,
                                        batch_size=config.batch_size, timeout=config.embedding_timeout)
    vectors, stats = embed_chunks(chunks, embedder, config, progress)
    vectors = checked_vectors(chunks, vectors, embedder.dim)  # NonFiniteVectors before anything reads them
    site = extraction.site
    facets = extraction.facets.to_json()
    site_info = {"url": site.url, "baseurl": site.baseurl, **({"categories": site.categories} if site.categories else {}),
                 "generator": site.generator, **{k: v for k, v in (("name", site.name), ("description", site.description),
                                                                   ("lang", site.lang)) if v},
                 "pages": {k: extraction.summary[k] for k in ("found", "indexed")},
                 **({"facets": facets} if facets else {})}
    with TokenCache(Path(config.cache_dir) / TOKENS_FILE) as token_cache:
        terms = BundleTerms(token_cache) if config.search_box else None
        postings = lexical_postings(chunks, token_cache, progress=progress, foreign=extraction.foreign,
                                    also=terms.add if terms else None)
        bundle = search_box_files(chunks, config, terms, extraction.facets.versions, vectors, embedder,
                                  progress) if terms else None
        aliases = moved_ids(output, chunks)
        artifacts = assemble(chunks, vectors, postings, ANALYZER, describe(embedder), site_info,
                             config.dense_index, config.exact_max_rows, Path(config.cache_dir),
                             extra_files={**(bundle or {}), **aliases})
    write_artifacts(artifacts, output)  # ArtifactWriteFailed (previous set untouched) on any OS error
    write_latest(output, artifacts)
    remember(Path(config.cache_dir), output, digest, artifacts.build_id, extraction.diagnostics, extraction.summary)
    return BuildResult(output, artifacts, chunks, extraction.diagnostics, stats,
                       time.perf_counter() - started, extraction.summary, site.note)


def moved_ids(output: Path, chunks: list[Chunk]) -> dict[str, bytes]:
    """The set's aliases.json (index/aliases.py) when a chunk of the set now at `output` moved to another id, or
    earlier ones still resolve: {name: bytes}, or {}."""
    from .index.aliases import ALIASES, aliases_file, aliases_for, previous_set

    aliases = aliases_for(*previous_set(output), chunks)
    return {ALIASES: aliases_file(aliases)} if aliases else {}


def search_box_files(chunks: list[Chunk], config: Config, terms: BundleTerms | None = None,
                     versions=(), vectors=None, embedder=None, progress: bool = False) -> dict[str, bytes]:
    """The browser search bundle's files (browser/bundle.py), with the site's thesaurus; `terms`: the
    BundleTerms lexical_postings fed (without it the chunks are analysed here); with the chunks' `vectors` and
    their `embedder`, its dense channel too (browser/dense.py) unless config.search_box_dense is off."""
    from .browser.bundle import bundle_files
    from .text.thesaurus import load_thesaurus

    if terms is None:
        terms = BundleTerms()
        for start in range(0, len(chunks), 2000):
            batch = chunks[start:start + 2000]
            terms.add(batch, _analyzed(batch, None, frozenset()))
    thesaurus = load_thesaurus(config.thesaurus)
    if vectors is None or embedder is None or not config.search_box_dense:
        return bundle_files(chunks, thesaurus, terms.finish(), versions)
    with VectorCache(Path(config.cache_dir) / "vectors.sqlite") as cache:
        return bundle_files(chunks, thesaurus, terms.finish(), versions, (vectors, embedder, cache, progress))


def _kept(output: Path, build_id: str, diagnostics: list[Diagnostic], started: float) -> BuildResult:
    """The result of a build whose inputs are those of the set in `output` (build_memo.py)."""
    from .index.verify import load_manifest

    manifest, raw = load_manifest(output)
    artifacts = ArtifactSet(manifest=manifest, files={MANIFEST: raw})
    write_latest(output, artifacts)  # repairs a latest.json a killed build left naming another set
    chunks = kept_chunks(output)
    return BuildResult(output, artifacts, chunks, diagnostics, EmbedStats(len(chunks), len(chunks), 0),
                       time.perf_counter() - started)


def embed_chunks(chunks: list[Chunk], embedder, config: Config, progress: bool = False, out=None):
    """(vectors, stats): row i is chunk i's vector, written into `out` when given (any (n, dim) array,
    e.g. a memory map of the artifact being written), else into a new float32 matrix; only a window
    of texts and cached vectors is held besides it (embed/runner.py, embed_rows)."""
    matrix = np.zeros((len(chunks), embedder.dim), np.float32) if out is None else out
    with VectorCache(Path(config.cache_dir) / "vectors.sqlite") as cache:
        stats = embed_rows(embedder, [c.content_hash for c in chunks], lambda row: chunks[row].embed_text,
                           matrix, cache, config.batch_size, progress)
    return matrix, stats
