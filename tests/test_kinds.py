"""One table of chunk kinds: every part of the tool agrees with it, and a new kind does not crash ranking."""

import json
import re
from importlib import resources

import numpy as np

from knowledge_build import KnowledgeIndex
from knowledge_build.config import Config
from knowledge_build.kinds import (
    ANCHORED_KINDS,
    ANCHORED_TYPES,
    BY_TYPE,
    CHUNK_PREFIXES,
    KINDS,
    LEVELS,
    PREFIXES,
    TYPES,
    type_of_id,
)
from knowledge_build.model import Chunk
from knowledge_build.ranking.priors import intended_type
from knowledge_build.site.ids import choose_prefix
from knowledge_build.text.ja import ANALYZER

from .conftest import FakeEmbedder


def test_the_chunk_json_schema_allows_exactly_the_kinds_and_levels_of_the_table():
    schema = json.loads(resources.files("knowledge_build.schemas").joinpath("knowledge_chunks.schema.json")
                        .read_text(encoding="utf-8"))
    fields = schema["items"]["properties"]
    assert fields["type"]["enum"] == list(TYPES)
    assert fields["level"]["enum"] == [*LEVELS, ""]
    assert fields["anchor"]["pattern"] == f"^({'|'.join(CHUNK_PREFIXES)})-"
    assert schema["items"]["if"]["properties"]["type"]["enum"] == list(ANCHORED_TYPES)
    assert schema["items"]["then"]["properties"]["url"]["pattern"] == f"^[^#]*#({'|'.join(PREFIXES)})-"


def test_the_sql_schema_checks_exactly_the_kinds_and_levels_of_the_table():
    folder = resources.files("knowledge_build.store").joinpath("migrations")
    sql = folder.joinpath("002_chunks.sql").read_text(encoding="utf-8")
    latest = "".join(f.read_text(encoding="utf-8") for f in sorted(folder.iterdir(), key=lambda f: f.name)
                     if f.name.endswith(".sql"))
    types = re.findall(r"check \(type in \(([^)]*)\)\)", latest)[-1]  # the last migration that sets it
    levels = re.search(r"check \(level in \(([^)]*)\)\)", sql).group(1)
    assert sorted(re.findall(r"'([^']*)'", types)) == sorted(TYPES)
    assert re.findall(r"'([^']*)'", levels) == [*LEVELS, ""]


def test_a_word_that_names_a_kind_picks_it_for_a_suggested_id_and_for_a_query():
    for kind in KINDS:
        for word in kind.words:
            assert intended_type(f"二次方程式の{word}") == kind.type, word
            prefix, reason = choose_prefix(kind.box_class, f"二次方程式の{word}")
            assert prefix == kind.prefix, (word, reason)


def test_ids_name_their_type_by_prefix_and_default_box_classes_come_from_the_table():
    assert {type_of_id(f"{k.prefix}-x") for k in ANCHORED_KINDS} == set(ANCHORED_TYPES)
    assert type_of_id("section-x") is None and type_of_id("rulex") is None
    # a section's anchor is derived from its heading: an HTML id sec-… is not a knowledge id
    assert type_of_id("sec-x") is None and type_of_id("tbl-x") is None
    assert Config().box_classes == tuple(k.box_class for k in KINDS if k.box_class)
    assert BY_TYPE["definition"].prefix == "def"


def test_a_chunk_of_a_kind_the_table_does_not_know_is_ranked_not_crashed(tmp_path):
    embedder = FakeEmbedder()
    import faiss

    chunks = [Chunk(id=f"p#{a}", material="p", anchor=a, url=f"/p.html#{a}", title=t, content=t, excerpt=t,
                    learns=(), learns_source="heuristic", type=kind, category="", level="", prerequisites=(),
                    content_hash=a)
              for a, t, kind in (("rule-a", "二次方程式の解の公式", "rule"), ("sec-b", "二次方程式の歴史", "section"))]
    index = faiss.IndexFlatIP(embedder.dim)
    index.add(np.stack([embedder.embed_documents([c.content])[0] for c in chunks]))
    lexical = {"analyzer": ANALYZER, "fields": {"lemma": [["2", "次", "方程", "式"], ["2", "次", "方程", "式", "歴史"]],
                                                 "reading": [[], []], "kana2": [[], []]}}
    search = KnowledgeIndex.from_parts(tmp_path, {"build_id": "x"}, chunks, index, lexical, embedder)
    results = search.search("二次方程式の歴史", k=2)
    assert [r.type for r in results] == ["section", "rule"]


def test_practice_words_make_a_suggested_id_an_example_but_do_not_steer_a_query():
    assert BY_TYPE["example"].label_words == ("練習", "演習", "問題")
    assert choose_prefix("rule-box", "練習1")[0] == "ex"
    assert intended_type("問題の解き方") == "method"
    assert intended_type("二次方程式の練習問題") is None
    assert intended_type("演習") is None
