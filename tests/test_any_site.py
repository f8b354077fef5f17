"""Any site as its owner built it: which generator a folder is, page identity by path, boxes by
class or selector, and no page skipped in silence (issue 24). Real generators' output is tested in
test_generated_sites.py; these are small hand-made folders shaped like theirs."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge_build import extract, load_config, pipeline
from knowledge_build.cli import main
from knowledge_build.site.generators import SiteNeedsBuild, detect
from knowledge_build.site.identity import material_names

PAGE = ('<html lang="ja"><head><title>{title} | 架空ツール</title></head><body><nav>メニュー 前へ 次へ</nav>'
        '<main><h1>{title}</h1><h2 id="s1">{title}の概要</h2><p>{title}について説明する本文です。十分な長さがあります。</p>'
        '</main></body></html>')


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def fake_cli(monkeypatch, tmp_path):
    """The CLI with the FakeEmbedder and a cache of this test's own."""
    from .conftest import FakeEmbedder

    monkeypatch.setattr(pipeline, "get_embedder", lambda *args, **kwargs: FakeEmbedder())
    monkeypatch.setenv("KB_CACHE_DIR", str(tmp_path / "cache"))
    return CliRunner()


def test_material_is_the_file_name_when_unique_else_the_path():
    names, errors = material_names(["index.html", "junior/二次方程式.html", "guide/setup/index.html",
                                    "reference/setup/index.html", "guide/a.html", "reference/a.html"], "/s")
    assert names == {"index.html": "index", "junior/二次方程式.html": "二次方程式",
                     "guide/setup/index.html": "guide/setup", "reference/setup/index.html": "reference/setup",
                     "guide/a.html": "guide/a", "reference/a.html": "reference/a"}
    assert errors == []


def test_a_file_name_that_is_another_pages_path_is_not_shortened():
    names, errors = material_names(["x/bar.html", "bar/index.html"], "/s")
    assert names == {"x/bar.html": "x/bar", "bar/index.html": "bar"} and errors == []


def test_two_pages_with_one_path_are_an_error_naming_both():
    _, errors = material_names(["x/a.html", "y/a.html", "x/a/index.html"], "/s")
    (error,) = errors
    assert error.rule == "duplicate-page" and error.severity == "error"
    assert "'x/a.html' and 'x/a/index.html'" in error.message and "Fix" not in error.message and error.fix


@pytest.mark.parametrize("files, generator", [
    ({"hugo.toml": 'title = "架空ツール"\n', "content/_index.md": "# x\n", "public/index.html": PAGE}, "hugo"),
    ({"mkdocs.yml": "site_name: 架空ツール\n", "docs/index.md": "# x\n", "site/index.html": PAGE}, "mkdocs"),
    ({"conf.py": "project = '架空ツール'\n", "index.rst": "x\n=\n", "_build/html/index.html": PAGE}, "sphinx"),
])
def test_a_project_folder_is_read_through_its_built_output_and_says_so(tmp_path, files, generator):
    found = detect(_write(tmp_path, files))
    assert found.generator == generator and found.kind == "built" and found.pages_root.name in ("public", "site", "html")
    assert "built output" in found.note


@pytest.mark.parametrize("files, marks", [
    ({"conf.py": "project = 'x'\n", "index.rst": "x\n=\n"}, ("objects.inv",)),
    ({"conf.py": "project = 'x'\n", "index.rst": "x\n=\n"}, (".buildinfo",)),
    ({"conf.py": "project = 'x'\n", "index.rst": "x\n=\n"}, ("_static/basic.css", "searchindex.js")),
    ({"mkdocs.yml": "site_name: x\n", "docs/index.md": "# x\n"}, ("sitemap.xml", "search/search_index.json")),
    ({"hugo.toml": 'title = "x"\n', "content/_index.md": "# x\n"}, ("index.xml", "sitemap.xml")),
])
def test_an_output_in_a_folder_of_its_owners_choosing_is_known_by_the_generators_marks(tmp_path, files, marks):
    """A hand-made output under `out/` (no generator meta): the marks alone make it the project's output."""
    root = _write(tmp_path / "s", {**files, "out/index.html": PAGE, **{f"out/{m}": "" for m in marks}})
    assert detect(root).pages_root == root / "out"
    (root / "out" / marks[-1]).unlink()  # one mark short of a group: a folder of pages like any other
    with pytest.raises(SiteNeedsBuild):
        detect(root)


@pytest.mark.parametrize("files, command, pages", [
    ({"hugo.toml": 'title = "x"\n', "content/a.md": "# x\n"}, "`hugo`", "1 Markdown page"),
    ({"mkdocs.yml": "site_name: x\n", "docs/a.md": "# x\n"}, "`mkdocs build`", "1 Markdown page"),
    ({"conf.py": "project = 'x'\n", "index.rst": "x\n=\n"}, "`sphinx-build", "1 reStructuredText page"),
    ({"_config.yml": "title: x\n", "docs/a.md": "---\ntitle: A\n---\n# A\n"}, "`jekyll build", "1 Markdown page"),
])
def test_a_source_folder_without_output_names_the_command_that_builds_it(tmp_path, files, command, pages):
    root = _write(tmp_path / "s", files)
    with pytest.raises(SiteNeedsBuild, match=pages) as caught:
        detect(root)
    assert command in str(caught.value)
    result = _run("build", "--site", root)
    assert result.exit_code == 1 and command in result.output and "Traceback" not in result.output


def test_a_jekyll_source_of_markdown_pages_reads_its_site_output(tmp_path, fake_cli):
    root = _write(tmp_path / "s", {"_config.yml": "title: 架空ツール\n", "docs/a.md": "---\ntitle: A\n---\n# A\n",
                                   "_site/docs/a/index.html": PAGE.format(title="A")})
    found = detect(root)
    assert found.generator == "jekyll" and found.pages_root == root / "_site" and "Markdown" in found.note
    result = fake_cli.invoke(main, ["build", "--site", str(root)])
    assert result.exit_code == 0, result.output
    assert f"Note: 1 Markdown page(s) in the Jekyll source: reading the built site '{root / '_site'}'" in result.output
    assert "jekyll site: 1 pages found, 1 indexed." in result.output
    assert (root / "_site" / "knowledge" / "v2" / "manifest.json").is_file()


def test_built_output_is_known_by_its_generator_meta(tmp_path):
    page = PAGE.replace("<head>", '<head><meta name="generator" content="Hugo 0.111.3">')
    assert detect(_write(tmp_path / "out", {"index.html": page})).generator == "hugo"
    assert detect(_write(tmp_path / "plain", {"index.html": PAGE})).generator == "plain"


def test_index_pages_are_linked_as_their_folder_and_titles_lose_the_site_name(tmp_path):
    root = _write(tmp_path / "out", {f"docs/{n}/index.html": PAGE.format(title=t)
                                     for n, t in (("install", "インストール"), ("usage", "使い方"), ("faq", "よくある質問"))})
    extraction = extract(load_config(site=root, env={}))
    by_material = {c.material: c for c in extraction.chunks}
    assert sorted(by_material) == ["docs/faq", "docs/install", "docs/usage"]
    assert by_material["docs/install"].url == "/docs/install/#s1"
    assert by_material["docs/install"].material_title == "インストール"
    assert extraction.summary["found"] == extraction.summary["indexed"] == 3


def test_a_heading_id_that_looks_like_a_box_id_is_not_a_box(tmp_path):
    root = _write(tmp_path / "out", {"index.html": '<main><h2 id="rule-of-two">二つの規則</h2>'
                                                   '<p>二つ以上あるときの決まりを説明する十分に長い本文です。</p></main>'})
    extraction = extract(load_config(site=root, env={}))
    (chunk,) = extraction.chunks
    assert chunk.type == "section" and chunk.url == "/#rule-of-two" and "決まり" in chunk.content


def test_admonitions_and_definition_lists_are_boxes_by_default_and_the_section_keeps_its_text(tmp_path):
    root = _write(tmp_path / "out", {"index.html": (
        '<main><h2 id="setup">設定</h2><p>設定ファイルの書き方を説明する本文です。</p>'
        '<div class="admonition tip"><p class="admonition-title">ヒント</p><p>コメント行は無視されます。</p></div>'
        '<dl><dt>プロファイル</dt><dd>設定の組み合わせに付ける名前。</dd></dl></main>')})
    chunks = {c.type: c for c in extract(load_config(site=root, env={})).chunks}
    assert chunks["tip"].title == "ヒント：コメント行は無視されます。" and chunks["tip"].url == "/#setup"
    assert chunks["definition"].title == "プロファイル" and "設定の組み合わせ" in chunks["definition"].content
    assert "設定ファイルの書き方" in chunks["section"].content
    assert "コメント行" not in chunks["section"].content and "組み合わせ" not in chunks["section"].content


def test_boxes_setting_maps_a_selector_to_a_kind_and_replaces_the_default(tmp_path):
    root = _write(tmp_path / "out", {"index.html": (
        '<main><h2 id="a">見出し</h2><aside class="note"><strong>注意点</strong>保存前に確認します。</aside>'
        '<div class="admonition tip"><p class="admonition-title">ヒント</p><p>本文。</p></div></main>')})
    config = load_config(site=root, env={"KB_BOXES": '{"aside.note": "tip"}'}, sections="off")
    (chunk,) = extract(config).chunks
    assert chunk.type == "tip" and chunk.title == "注意点：保存前に確認します。"


def test_a_bad_boxes_setting_is_one_clear_error(tmp_path):
    with pytest.raises(Exception, match="not a CSS selector") as caught:
        load_config(env={"KB_BOXES": '{"div[": "tip"}'})
    assert "Fix:" in str(caught.value)
    with pytest.raises(Exception, match="kind 'box'"):
        load_config(env={"KB_BOXES": '{"aside": "box"}'})


def test_an_empty_site_folder_fails_with_one_line(tmp_path, fake_cli):
    (tmp_path / "empty").mkdir()
    result = fake_cli.invoke(main, ["build", "--site", str(tmp_path / "empty")])
    assert result.exit_code == 1 and "no HTML page was found" in result.output and "Fix:" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "empty" / "knowledge").exists()


def test_an_empty_jekyll_config_still_writes_to_site(tmp_path, fake_cli):
    root = _write(tmp_path / "s", {"_config.yml": "# comments only\n",
                                   "a.html": '---\ntitle: A\n---\n<div class="rule-box" id="rule-a"><strong>A</strong>本文</div>'})
    result = fake_cli.invoke(main, ["build", "--site", str(root), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["output"] == str(root / "_site" / "knowledge" / "v2")


def test_most_pages_skipped_fails_and_strict_fails_on_any(tmp_path, fake_cli):
    stub = '<html><head><meta http-equiv="refresh" content="0; url=/a/"></head><body></body></html>'
    root = _write(tmp_path / "out", {"a/index.html": PAGE.format(title="A"), "b.html": stub, "c.html": stub})
    result = fake_cli.invoke(main, ["build", "--site", str(root)])
    assert result.exit_code == 1 and "2 of 3 pages" in result.output and "2 redirect stub" in result.output
    assert "Traceback" not in result.output and not (root / "knowledge").exists()
    (root / "c.html").unlink()
    result = fake_cli.invoke(main, ["build", "--site", str(root), "-v"])
    assert result.exit_code == 0, result.output
    assert "plain site: 2 pages found, 1 indexed, 1 skipped (1 redirect stub)." in result.output
    assert "  skipped b.html: redirect stub" in result.output
    result = fake_cli.invoke(main, ["build", "--site", str(root), "--strict"])
    assert result.exit_code == 1 and "--strict: 1 of 2 pages" in result.output


def test_generated_pages_are_named_as_skipped_and_do_not_fail_the_build(tmp_path, fake_cli):
    root = _write(tmp_path / "out", {"index.html": PAGE.format(title="A"), "404.html": PAGE.format(title="404"),
                                     "search.html": "<html><body><main></main></body></html>",
                                     "genindex.html": "<html><body><main></main></body></html>"})
    (root / "objects.inv").write_bytes(b"")
    result = fake_cli.invoke(main, ["build", "--site", str(root), "--strict", "--format", "json"])
    assert result.exit_code == 0, result.output
    pages = json.loads(result.stdout)["pages"]
    assert pages["generator"] == "sphinx" and pages["found"] == 4 and pages["indexed"] == 1
    assert [s["path"] for s in pages["skipped"]] == ["404.html", "genindex.html", "search.html"]
    assert all(s["reason"].startswith("generated by sphinx") for s in pages["skipped"])


def test_a_rebuild_with_no_change_reports_the_same_pages(tmp_path, fake_cli):
    root = _write(tmp_path / "out", {"a/index.html": PAGE.format(title="A"), "b/index.html": PAGE.format(title="B")})
    first = json.loads(fake_cli.invoke(main, ["build", "--site", str(root), "--format", "json"]).stdout)
    again = json.loads(fake_cli.invoke(main, ["build", "--site", str(root), "--format", "json"]).stdout)
    assert again["embedded"] == 0 and again["pages"] == first["pages"] == {
        "generator": "plain", "found": 2, "indexed": 2, "skipped": []}


def test_the_report_credits_each_index_page_with_its_own_chunks(tmp_path):
    from knowledge_build.checks.report import coverage

    root = _write(tmp_path / "out", {"a/index.html": PAGE.format(title="A"),
                                     "b/index.html": PAGE.format(title="B").replace(
                                         "</main>", '<h2 id="s2">追加</h2><p>' + "二つ目の節の十分に長い本文です。" * 12 + '</p></main>')})
    rows = {r["path"]: r for r in coverage(load_config(site=root, env={}), tmp_path / "none")["rows"]}
    assert rows["a/index.html"]["section"] == 1 and rows["b/index.html"]["section"] == 2


def test_a_page_in_another_language_is_analysed_by_its_words_not_by_the_japanese_dictionary(tmp_path):
    from knowledge_build.pipeline import lexical_fields

    root = _write(tmp_path / "out", {
        "ja/index.html": PAGE.format(title="更新履歴"),
        "en/index.html": PAGE.format(title="Changelog").replace('lang="ja"', 'lang="en"').replace(
            "について説明する本文です。十分な長さがあります。", " lists every update of the tool since version one.")})
    extraction = extract(load_config(site=root, env={}))
    assert extraction.foreign == {"en/index.html"}
    chunks = extraction.chunks
    fields = lexical_fields(chunks, foreign=extraction.foreign)
    row = {c.source_path: i for i, c in enumerate(chunks)}
    english, japanese = row["en/index.html"], row["ja/index.html"]
    assert fields["kana2"][english] == [] and fields["reading"][english] == []
    assert {"update", "tool", "changelog"} <= set(fields["lemma"][english])
    assert fields["kana2"][japanese] and "更新" in fields["lemma"][japanese]


def test_hugo_and_mkdocs_configuration_give_the_sites_address_name_and_language(tmp_path):
    from knowledge_build.site.jekyll import open_site

    hugo = _write(tmp_path / "h", {"hugo.toml": 'baseURL = "https://example.org/docs/"\ntitle = "架空ツール"\n'
                                                'languageCode = "ja"\n[params]\ndescription = "架空ツールの説明書"\n',
                                   "content/_index.md": "# x\n", "public/index.html": PAGE})
    site = open_site(hugo)
    assert (site.generator, site.url, site.baseurl, site.name, site.description, site.lang) == (
        "hugo", "https://example.org", "/docs", "架空ツール", "架空ツールの説明書", "ja")
    mkdocs = _write(tmp_path / "m", {"mkdocs.yml": "site_name: 架空ツール\nsite_url: https://example.org/tool/\n"
                                                   "theme:\n  name: material\n  language: ja\n"
                                                   "markdown_extensions:\n  - pymdownx.emoji:\n"
                                                   "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n",
                                     "docs/index.md": "# x\n", "site/index.html": PAGE})
    site = open_site(mkdocs)
    assert (site.generator, site.url, site.baseurl, site.name, site.lang) == (
        "mkdocs", "https://example.org", "/tool", "架空ツール", "ja")


def test_sphinx_dirhtml_generated_pages_are_named_as_generated(tmp_path, fake_cli):
    root = _write(tmp_path / "out", {"index.html": PAGE.format(title="A"),
                                     "genindex/index.html": "<html><body><main></main></body></html>",
                                     "search/index.html": "<html><body><main></main></body></html>"})
    (root / "objects.inv").write_bytes(b"")
    result = fake_cli.invoke(main, ["build", "--site", str(root), "--format", "json"])
    assert [s["reason"] for s in json.loads(result.stdout)["pages"]["skipped"]] == [
        "generated by sphinx: generated index", "generated by sphinx: search page"]


def test_a_built_pages_breadcrumbs_lead_its_sections_breadcrumb(tmp_path):
    page = PAGE.format(title="応用").replace(
        "<main>", '<main><nav aria-label="breadcrumb"><ol><li><a href="/">ホーム</a></li>'
                  '<li><a href="/guide/">ガイド</a></li><li aria-current="page">応用</li></ol></nav>')
    root = _write(tmp_path / "out", {"guide/advanced/index.html": page})
    (chunk,) = extract(load_config(site=root, env={})).chunks
    assert chunk.parents[:2] == ("ホーム", "ガイド") and "ホーム" not in chunk.content


def test_a_page_whose_theme_declares_english_but_whose_text_is_japanese_is_analysed_as_japanese(tmp_path):
    from knowledge_build.pipeline import lexical_fields

    english_theme = PAGE.replace('lang="ja"', 'lang="en"')  # MkDocs' readthedocs theme, a Jekyll theme: lang="en"
    root = _write(tmp_path / "out", {
        "install/index.html": english_theme.format(title="インストール"),
        "usage/index.html": english_theme.format(title="使い方"),
        "api/index.html": english_theme.format(title="API").replace(
            "について説明する本文です。十分な長さがあります。",
            " reference: every function of the tool, with its arguments. The 設定 file is read first.")})
    extraction = extract(load_config(site=root, env={}))
    assert extraction.foreign == {"api/index.html"}  # English with one Japanese word stays English
    assert extraction.site.lang == "ja"
    fields = lexical_fields(extraction.chunks, foreign=extraction.foreign)
    row = {c.source_path: i for i, c in enumerate(extraction.chunks)}
    assert "説明" in fields["lemma"][row["install/index.html"]] and fields["kana2"][row["install/index.html"]]
    assert {"reference", "function"} <= set(fields["lemma"][row["api/index.html"]])
