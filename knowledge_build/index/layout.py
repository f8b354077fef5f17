"""The file names of an artifact set (schema 2, the only one): one home, so the writers
(artifacts.py, artifacts_v2.py), the readers (verify.py, verify_v2.py) and the output-directory
check agree on what a set holds."""

from __future__ import annotations

import re

MANIFEST = "manifest.json"
LATEST = "latest.json"  # beside the set directories: which set a reader should take
MAX_MANIFEST_BYTES = 1 << 20  # a real manifest is about 1 KB

# Schema 2 (knowledge/v2/)
V2_SCHEMA_VERSION = 2
V2_CHUNKS = "knowledge_chunks.jsonl"
V2_ROWS = "rows.npy"
V2_COLUMNS = "columns.json"
V2_VECTORS = "vectors.faiss"
V2_LEXICAL_FILES = {"vocab": "lexical_vocab.bin", "offsets": "lexical_vocab_offsets.npy",
                    "indptr": "lexical_indptr.npy", "rows": "lexical_rows.npy", "tf": "lexical_tf.npy",
                    "lengths": "lexical_lengths.npy", "df_ref": "lexical_df_ref.npy"}
V2_CONTENT_FILES = (V2_CHUNKS, V2_ROWS, V2_COLUMNS, V2_VECTORS, *V2_LEXICAL_FILES.values())
V2_FILES = frozenset((MANIFEST, *V2_CONTENT_FILES))

# The search box's bundle in a v2 set (browser/bundle.py): fixed names (knowledge-search.json, .js, -ui.js,
# .css) and content-hashed ones (knowledge-search-t1a2b3c4d.bin, -r….json, -p….bin). A killed build's
# staging folder holds them before any manifest lists them, so they are known by their pattern.
BUNDLE_FILE = re.compile(r"knowledge-search(?:-[a-z]{1,16}|-[a-z][0-9a-f]{8,64})?\.(?:json|js|css|bin)")
