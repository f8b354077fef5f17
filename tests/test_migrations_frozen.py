"""The versioned migrations are frozen (issue 39): each is recorded by name once applied, so an edit in place
would never reach a database that applied the earlier text. A change goes into a new migration, or, for a
function, into the repeatable files of store/functions (store/db_functions.py), applied again whenever
their rendered text changes."""

from __future__ import annotations

import hashlib
import re
from importlib import resources

FROZEN = {
    "001_extension_and_meta.sql": "accb08c935a11e176b3ae8eccc490570ffe623a61d5a38fd81d8e4a706f01242",
    "002_chunks.sql": "dbd600fda761f8b6a557867c1e6ce3ee685e65899f254faa0e23797133fcce10",
    "003_functions.sql": "a3599026dc86e216569b9ba6b6e201ab9e9524557abeff96faa1185d56520ae8",
    "004_row_level_security.sql": "b73daddb4c22d9bb2bb357f44a0dbcd4df0f309b55abb9dff9ff125d78e35ab2",
    "005_section_types.sql": "d5ab6b1319696bce26962b63451e481c83884171ff84180248405fc416feb537",
    "006_hybrid.sql": "cf4ae6c7c0841d593ed34faebe8aeb5411caf618e757779b9a67037ac59def88",
    "007_fingerprint.sql": "990ef61535335503090dbf0a07d0a0fdbefa94cf2d1788640680f5884fc8f7cf",
    "008_hnsw.sql": "ab644b6774d505bc7368ad32c58705ef3c316ac821897a000e0f02758b9d9e32",
    "009_public_access.sql": "87e7a9e7b099f8566e8b3ad64258c69d42c312802f8f42121dea3b2305a7856f",
    "010_repeatable_functions.sql": "b3a86c7576bf77118480a7125bd8349df08e9773a0d20f7f14fe049721f77b60",
    "011_facets.sql": "ca4ccea117bae812ecc7342e0a8f213dc57c98c225cf4d9d9f9ba1a6b56d369e",
    "012_aliases.sql": "caea51aa5461ed0d81b6696a054f7c1a15ec23bf947222ef8d4cbd375f9778ac",
    "013_gap_log.sql": "41d7924590d890375fbeea744ee5a686e5d08457a04b2817b42c6c21cdbf3ef6",
}
# The last migration that may create a function: later ones put functions in store/functions.
LAST_WITH_FUNCTIONS = "009_public_access.sql"


def _migrations() -> dict[str, str]:
    folder = resources.files("knowledge_build.store").joinpath("migrations")
    return {f.name: f.read_text(encoding="utf-8") for f in folder.iterdir() if f.name.endswith(".sql")}


def test_no_committed_migration_is_edited_in_place():
    migrations = _migrations()
    for name, digest in FROZEN.items():
        assert name in migrations, f"{name} is gone: a committed migration stays (a database recorded it)"
        actual = hashlib.sha256(migrations[name].encode("utf-8")).hexdigest()
        assert actual == digest, (
            f"{name} was edited in place (sha256 {actual}, pinned {digest}); a database that applied it never sees "
            "the edit. Undo it and add a new migration or put the function in the repeatable files "
            "(knowledge_build/store/functions)")


def test_a_new_migration_is_pinned_and_creates_no_function():
    for name, text in sorted(_migrations().items()):
        assert name in FROZEN, f"pin the new migration {name} here once it is committed (its sha256 in FROZEN)"
        if name > LAST_WITH_FUNCTIONS:
            assert not re.search(r"create (or replace )?function", text, re.IGNORECASE), (
                f"{name} creates a function: put it in the repeatable files (knowledge_build/store/functions), "
                "which reach every database when their text changes")
