"""The loader: an artifact set opened and verified for queries, and what it holds by row.

Rows are chunks in id order; `columns` (index/rows.py) read a row's type, category, material or concept
without decoding it. The set's postings feed the lexical channel and relevance's coverage, its FAISS
index the dense channel (channels.py).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import ChunkNotFound
from ..index.postings import Postings, from_token_lists
from ..index.rows import ChunkRecords, Columns
from ..index.verify import open_verified
from ..model import Chunk
from ..ranking.facets import version_family
from .filters import FilterVocabulary


class ArtifactSet:
    def __init__(self, path: Path, manifest: dict, chunks: ChunkRecords, index, postings: Postings, embedder,
                 columns: Columns | None = None):
        """`chunks`: the set's ChunkRecords; `index`: its FAISS index; `columns`: its row columns (made
        from the chunks when not given)."""
        self.path = Path(path)
        self.manifest = manifest
        self.chunks = chunks
        self.dense_index = index
        self.embedder = embedder  # the one the set was built with: queries are embedded with it
        self.columns = columns if columns is not None else Columns.from_chunks(chunks)
        site = manifest.get("site") or {}
        self.site_url = str(site.get("url") or "")
        facets = site.get("facets") or {}
        self.versions = tuple(facets.get("versions") or ())  # newest first (ranking/facets.py)
        self.version_rank = {v: i for i, v in enumerate(self.versions)}  # 0: the newest
        self.languages = tuple(facets.get("languages") or ())
        self.filters = FilterVocabulary(categories=site.get("categories"), columns=self.columns,
                                        version_aliases=facets.get("version_aliases"))
        self.parts = self.columns.parts
        # Boxes and page parts (sections, tables) together: each kind gets its own candidates, and a
        # part may be lifted among the first places (ranking/places.py). Read once, not on every query.
        self.mixed = bool(self.parts.any() and not self.parts.all())
        self.postings = postings
        self._family_materials: dict[str, list[str]] | None = None
        self._aliases: dict[str, str] | None = None

    @classmethod
    def open(cls, path, embedder=None, embedder_options: dict | None = None, verify: bool | None = None) -> "ArtifactSet":
        """Open a set that `verify_set` accepts (the one check `validate` runs too); refuse one
        built with another embedder than `embedder` (default: the one it was built with).
        The set gets the cheap checks on open (verify_v2.py) unless `verify` is True (every byte);
        None: every byte when the set is small. A schema 1 set is refused (SchemaOneRetired)."""
        verified = open_verified(path, embedder, embedder_options=embedder_options, full=verify)
        return cls(verified.path, verified.manifest, verified.chunks, verified.index, verified.lexical,
                   verified.embedder, verified.opened.columns)

    @classmethod
    def of(cls, path, manifest: dict, chunks: list[Chunk], index, fields: dict[str, list[list[str]]],
           embedder) -> "ArtifactSet":
        """A set held in memory (benchmarks, tests): its chunks, a FAISS index of their vectors and each
        field's token lists by row, as a build would write them."""
        parts = Columns.from_chunks(chunks).parts
        # Relevance's coverage is measured against the anchored boxes it was calibrated on.
        return cls(path, manifest, ChunkRecords.of(chunks), index, from_token_lists(fields if chunks else {}, ~parts),
                   embedder)

    def other_versions(self, chunk: Chunk) -> list[dict]:
        """The same place (same path below the version folder, same anchor) in the site's other versions,
        newest first (site/facets.py)."""
        if not chunk.version or len(self.versions) < 2:
            return []
        family = version_family(chunk.material, chunk.version)
        found = []
        for material in self._families().get(family, ()):
            row = self.row_of(f"{material}#{chunk.anchor}") if material != chunk.material else None
            if row is not None:
                other = self.chunks[row]
                found.append({"version": other.version, "id": other.id, "url": other.url,
                              "absolute_url": self.absolute_url(other.url)})
        return sorted(found, key=lambda x: self.version_rank.get(x["version"], len(self.versions)))

    def _families(self) -> dict[str, list[str]]:
        """Family (version_family) -> the materials of it, made on the first result that asks."""
        if self._family_materials is not None:
            return self._family_materials
        versions = self.columns.facets.get("version") or []
        families: dict[str, list[str]] = {}
        for material, version in zip(self.columns.values["material"], versions):
            family = version_family(material, version)
            if family:
                families.setdefault(family, []).append(material)
        self._family_materials = families
        return families

    @property
    def build_id(self) -> str:
        return self.manifest["build_id"]

    def __len__(self) -> int:
        return len(self.chunks)

    def get(self, chunk_id: str) -> Chunk:
        """The chunk of `chunk_id`, or of the id it moved to (resolve)."""
        return self.resolve(chunk_id)[0]

    def resolve(self, chunk_id: str) -> tuple[Chunk, str | None]:
        """(the chunk, None) for a current id; (the chunk it moved to, the id asked) for an alias (index/aliases.py);
        ChunkNotFound for neither."""
        row = self.row_of(chunk_id)
        if row is not None:
            return self.chunks[row], None
        moved = self.aliases.get(chunk_id)
        row = self.row_of(moved) if moved else None
        if row is None:
            raise ChunkNotFound(chunk_id)
        return self.chunks[row], chunk_id

    @property
    def aliases(self) -> dict[str, str]:
        """{old id: current id} of the set's aliases.json (checked against the manifest's sha256), {} without one."""
        if self._aliases is None:
            from ..index.aliases import read_aliases

            self._aliases = read_aliases(self.path, self.manifest)
        return self._aliases

    def row_of(self, chunk_id: str) -> int | None:
        return self.chunks.row_of(chunk_id)

    def concepts(self, type: str | None = None, category: str | None = None) -> list[Chunk]:
        """Every chunk of the type and category (display names accepted; UnknownFilterValue for a
        value no chunk has), in id order."""
        filters = self.filters.resolve_all(type=type, category=category)
        allowed = self.columns.allowed(filters)
        rows = range(len(self.chunks)) if allowed is None else np.flatnonzero(allowed)
        return [self.chunks[int(row)] for row in rows]

    def absolute_url(self, url: str) -> str | None:
        """`url` on the site's host, percent-encoded; None when the site's URL is unknown."""
        return join_site_url(self.site_url, url)

    def url(self, row: int) -> str:
        """The row's link (its place) without decoding a v2 chunk."""
        return self.chunks.brief(row)[1]

    def place_in_every_version(self, row: int) -> str:
        """The row's place with its version folder taken out: the same place in every version of the site
        (a search over all versions shows it once, ranking/facets.py)."""
        url = self.url(row)
        return version_family(url, self.columns.facet_of(row, "version")) or url

    def locations(self, row: int) -> tuple[dict, ...]:
        """The other places that teach the row's concept (the same title on another page): id, url,
        material, and absolute_url when the site's URL is known."""
        return tuple(self._location(other) for other in self.columns.same_concept(row))

    def _location(self, row: int) -> dict:
        chunk_id, url, material = self.chunks.brief(row)
        where = {"id": chunk_id, "url": url, "material": material}
        if self.site_url:
            where["absolute_url"] = self.absolute_url(url)
        return where


@lru_cache(maxsize=65536)
def join_site_url(site_url: str, url: str) -> str | None:
    """`site_url` + `url` with the path percent-encoded (Japanese file names, spaces) so that chat
    clients and mail keep the whole link; an escape already in `url` is kept. None without a site URL."""
    from urllib.parse import quote

    if not site_url:
        return None
    return site_url.rstrip("/") + quote(url, safe="/#:%")
