"""The site's own name, description and language introduce it to the chat model and to MCP clients
(issue 24 item 5): from the manifest's `site`, under the settings `site_name` / `site_description`."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from mcp import Client

import knowledge_build as kb
from knowledge_build.errors import ConfigError
from knowledge_build.serve.answer import build_messages
from knowledge_build.serve.mcp_server import create_server
from knowledge_build.serve.service import SearchService
from knowledge_build.serve.site_identity import SiteIdentity, identity_of, site_identity

from .conftest import FakeEmbedder

MATH_SITE = "中学・高校数学の教材サイト"  # what the prompt said of every site before


def with_site(index_dir, target, **site):
    """A copy of the set at `index_dir` whose manifest's `site` has `site` (a value None: the key removed),
    with the build id that edit gives (the build id hashes the manifest's fields too), as a build of
    such a site would write it."""
    from knowledge_build.index.artifacts import build_id_of

    shutil.copytree(index_dir, target)
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    manifest["site"].update(site)
    manifest["site"] = {k: v for k, v in manifest["site"].items() if v is not None}
    manifest["build_id"] = build_id_of(manifest)
    (target / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    return target


def test_the_prompt_names_a_japanese_site_by_its_name_and_description():
    site = SiteIdentity("Rust 入門", "所有権から非同期までを順に学ぶ講座", "ja")
    system = build_messages("所有権とは", [], None, site)[0]["content"]
    assert system.splitlines()[0] == ("あなたは『Rust 入門』（所有権から非同期までを順に学ぶ講座）の案内役です。"
                                      "質問に日本語で、短く正確に答えてください。")
    assert MATH_SITE not in system


def test_an_english_site_gets_the_english_prompt_and_labels():
    site = SiteIdentity("Widget Docs", "How to build and ship widgets", "en-US")
    result = {"title": "Install", "url": "/install/", "learns": ["install it"], "text": "pip install widget",
              "parents": ["Start"], "heading": "Install"}
    system = build_messages("how to install?", [result], None, site)[0]["content"]
    assert system.startswith("You are the guide to “Widget Docs” (How to build and ship widgets). Answer briefly")
    assert "Sources:" in system and "Heading: Start › Install" in system and "You learn: install it" in system
    assert "Text: pip install widget" in system and "資料" not in system and "本文" not in system


@pytest.mark.parametrize("lang", [None, "", "ja", "ja-JP", "ja_JP", "JA"])
def test_a_site_of_unknown_or_japanese_language_gets_the_japanese_prompt(lang):
    assert SiteIdentity("x", None, lang).japanese


def test_with_nothing_known_the_site_is_this_site_and_nothing_else():
    system = build_messages("質問", [], "nothing relevant found", SiteIdentity())[0]["content"]
    assert system.splitlines()[0] == "あなたはこのサイトの案内役です。質問に日本語で、短く正確に答えてください。"
    assert SiteIdentity().label() == "the site this server indexes"
    assert SiteIdentity(lang="en").introduction().startswith("You are the guide to this site. ")


def test_the_settings_win_over_the_manifest_and_the_manifest_gives_the_rest(tmp_path):
    manifest = {"site": {"url": "", "baseurl": "", "name": "数学ノート", "description": "学習ノート", "lang": "ja"}}
    config = kb.load_config(cwd=tmp_path, env={"KB_SITE_NAME": "化学ノート"})
    assert site_identity(config, manifest) == SiteIdentity("化学ノート", "学習ノート", "ja")
    config = kb.load_config(cwd=tmp_path, env={}, site_description="高校化学の\n  要点")
    assert site_identity(config, manifest) == SiteIdentity("数学ノート", "高校化学の 要点", "ja")


def test_a_manifest_of_the_wrong_shape_or_size_leaves_a_sound_identity():
    assert site_identity(None, {"site": {"name": ["x"], "description": 3, "lang": {}}}) == SiteIdentity()
    assert site_identity(None, {"site": "数学"}) == SiteIdentity() == site_identity(None, None)
    long = site_identity(None, {"site": {"name": "名" * 1000, "description": "説明\n" * 1000}})
    assert len(long.name) == 100 and len(long.description) == 300 and "\n" not in long.description


def test_the_site_settings_read_one_line_of_text_from_knowledge_yml(tmp_path):
    (tmp_path / "knowledge.yml").write_text("site_name: 化学ノート\nsite_description:\n", encoding="utf-8")
    config = kb.load_config(cwd=tmp_path, env={})
    assert (config.site_name, config.site_description) == ("化学ノート", None)
    (tmp_path / "knowledge.yml").write_text("site_description: [a, b]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="site_description must be a single line of text"):
        kb.load_config(cwd=tmp_path, env={})


def test_without_an_index_the_identity_comes_from_the_manifest_of_the_configured_set(fake_index_dir, tmp_path):
    named = with_site(fake_index_dir, tmp_path / "v2", name="Rust 入門", description="講座", lang="ja")
    assert identity_of(kb.load_config(cwd=tmp_path, env={}, index=named)) == SiteIdentity("Rust 入門", "講座", "ja")
    missing = kb.load_config(cwd=tmp_path, env={}, index=tmp_path / "nothing", site_name="化学ノート")
    assert identity_of(missing) == SiteIdentity("化学ノート")


def test_the_mcp_server_introduces_the_site_its_manifest_names(fake_index_dir, tmp_path):
    named = with_site(fake_index_dir, tmp_path / "v2", name="Rust 入門", description="所有権から学ぶ講座", lang="ja")
    index = kb.KnowledgeIndex.open(named, embedder=FakeEmbedder())
    server = create_server(SearchService(index), kb.NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite"))

    async def session():
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            return client.instructions, tools["search_knowledge"].description

    instructions, description = asyncio.run(session())
    assert instructions.startswith("Search the Japanese site “Rust 入門” (所有権から学ぶ講座). search_knowledge ")
    assert description.startswith("Find what the Japanese site “Rust 入門” (所有権から学ぶ講座) says about a question")
    assert "mathematics" not in instructions + description
