"""An artifact set as a publish reads it: each row's fingerprint for the diff, and the chunk, vector
and reading tokens of the rows it writes, decoded only when asked.

What is checked: every byte of a schema 2 set's content files against the manifest (the build
verified their contents when it wrote them), and the rows about to be written in full (their fields,
finite vectors); when a publish writes more than REBUILD_SHARE of the set, all of it as `validate`
does. A schema 1 set is refused (SchemaOneRetired, by read_artifacts) before anything is written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..index.verify import read_artifacts
from .lexical import REBUILD_SHARE, TERMS_VERSION, Readings


class Publishable:
    def __init__(self, path: Path, manifest: dict, fingerprints: list[str], readings: Readings):
        self.path, self.manifest, self.fingerprints, self.readings = path, manifest, fingerprints, readings

    def __len__(self) -> int:
        return len(self.fingerprints)

    @staticmethod
    def salt(manifest: dict) -> bytes:
        """What a row's fingerprint hashes besides its record: what its terms are made with."""
        return f"{manifest['lexical']['analyzer']}\n{TERMS_VERSION}\n".encode()

    @staticmethod
    def open(index_dir: Path) -> Publishable:
        return _MappedSet(Path(index_dir), read_artifacts(index_dir).manifest)

    def row_of(self, chunk_id: str) -> int | None:
        raise NotImplementedError

    def chunk(self, row: int) -> dict:
        raise NotImplementedError

    def vectors(self, rows: list[int]) -> np.ndarray:
        raise NotImplementedError

    def check_rows(self, rows: list[int]) -> None:
        """Verify the rows a publish is about to write (all of the set when they are many)."""


class _MappedSet(Publishable):
    """The set, memory-mapped: checksummed whole, rows decoded when asked."""

    def __init__(self, path: Path, manifest: dict):
        from ..index.verify_v2 import check_checksums, open_set

        from concurrent.futures import ThreadPoolExecutor

        self._opened = open_set(path, manifest, full=False)
        records = self._opened.chunks
        # hashlib lets go of the GIL on large blocks: the files' checksums run beside the rows' digests
        with ThreadPoolExecutor(1) as pool:
            checked = pool.submit(check_checksums, path, manifest)
            digests = records.digests(self.salt(manifest))
            checked.result()
        super().__init__(path, manifest, digests, Readings(self._opened.postings, len(records)))
        self._checked = False

    def row_of(self, chunk_id: str) -> int | None:
        return self._opened.chunks.row_of(chunk_id)

    def chunk(self, row: int) -> dict:
        return self._opened.chunks.raw(row)

    def vectors(self, rows: list[int]) -> np.ndarray:
        index = self._opened.index
        return index.reconstruct_batch(np.asarray(rows, dtype=np.int64)) if rows else np.zeros((0, index.d), np.float32)

    def check_rows(self, rows: list[int]) -> None:
        from ..errors import ArtifactUnreadable
        from ..index.files import chunk_shape_problem
        from ..index.layout import V2_CHUNKS, V2_VECTORS
        from ..index.verify_v2 import check_contents

        if self._checked:
            return
        if len(rows) > REBUILD_SHARE * max(1, len(self)):
            check_contents(self.path, self.manifest, self._opened)
            self._checked = True
            return
        problem = chunk_shape_problem([self.chunk(row) for row in rows])
        if problem:
            raise ArtifactUnreadable(self.path, V2_CHUNKS, problem)
        vectors = self.vectors(list(rows))
        bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1)) if len(vectors) else []
        if len(bad):
            raise ArtifactUnreadable(self.path, V2_VECTORS, f"row {rows[int(bad[0])]} holds NaN or infinite values")
