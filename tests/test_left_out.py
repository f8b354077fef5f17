"""What a built page holds but the index leaves out, and says so (issue 40, item 5): boxes in the
site's chrome outside the main content, pages without a title of their own, parts without words.
Small hand-made folders shaped like real themes' output, built through the CLI."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge_build import pipeline
from knowledge_build.chunking.chunks import NO_WORDS
from knowledge_build.cli import main
from knowledge_build.site.scan import OUTSIDE_MAIN, UNTITLED

from .test_any_site import _write


@pytest.fixture
def fake_cli(monkeypatch, tmp_path):
    """The CLI with the FakeEmbedder and a cache of this test's own."""
    from .conftest import FakeEmbedder

    monkeypatch.setattr(pipeline, "get_embedder", lambda *args, **kwargs: FakeEmbedder())
    monkeypatch.setenv("KB_CACHE_DIR", str(tmp_path / "cache"))
    return CliRunner()


def _build(cli, root: Path, *flags) -> tuple[dict, list[dict]]:
    """(the build's JSON summary, the chunks it wrote)."""
    result = cli.invoke(main, ["build", "--site", str(root), "--format", "json", *flags])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    lines = (Path(summary["output"]) / "knowledge_chunks.jsonl").read_text(encoding="utf-8").splitlines()
    return summary, [json.loads(line) for line in lines]


# A theme's frame: a version and language menu (a <dl>, which the default `dl` selector picks) in a
# toolbar after the main area, as a Read-the-Docs-like theme puts it.
TOOLBAR = ('<div class="versions-flyout" role="note"><span>v2.0</span><div class="other">'
           '<dl><dt>バージョン</dt><dd><a href="/v1.0/">v1.0</a></dd><dd><a href="/v2.0/">v2.0</a></dd></dl>'
           '<dl><dt>言語</dt><dd><a href="/en/">English</a></dd><dd><a href="/ja/">日本語</a></dd></dl>'
           '</div></div>')
CONTENT = ('<h1>設定</h1><p>設定ファイルの書き方を説明する本文です。十分な長さの説明があります。</p>'
           '<h2 id="terms">用語</h2><dl><dt>プロファイル</dt><dd>設定の組み合わせに付ける名前。</dd></dl>')


def test_a_definition_list_in_the_themes_toolbar_outside_the_main_area_is_not_a_box(tmp_path, fake_cli):
    page = (f'<html lang="ja"><head><title>設定</title></head><body><div class="wrap"><div role="main">{CONTENT}'
            f'</div></div>{TOOLBAR}</body></html>')
    root = _write(tmp_path / "out", {"index.html": page, "guide.html": page.replace("設定", "案内")})
    summary, chunks = _build(fake_cli, root)
    titles = {c["title"] for c in chunks if c["type"] == "definition"}
    assert titles == {"プロファイル"}
    assert not any("バージョン" in c["content"] or "English" in c["content"] for c in chunks)
    assert summary["pages"]["left_out"] == {OUTSIDE_MAIN: 4}
    text = fake_cli.invoke(main, ["build", "--site", str(root)]).output
    assert f"Left out: 4 {OUTSIDE_MAIN}." in text


def test_a_box_inside_a_sidebar_within_the_main_landmark_is_not_a_box_either(tmp_path, fake_cli):
    page = (f'<html lang="ja"><head><title>設定</title></head><body><main>{CONTENT}'
            f'<aside class="sidebar"><dl><dt>目次</dt><dd><a href="#terms">用語</a></dd></dl></aside>'
            '</main></body></html>')
    root = _write(tmp_path / "out", {"index.html": page})
    summary, chunks = _build(fake_cli, root, "-v")
    assert [c["title"] for c in chunks if c["type"] == "definition"] == ["プロファイル"]
    assert summary["pages"]["left_out"] == {OUTSIDE_MAIN: 1}


def test_the_info_names_the_lines_of_boxes_left_outside_the_main_content(tmp_path, fake_cli):
    page = f'<html lang="ja"><body>\n<main>{CONTENT}</main>\n{TOOLBAR}\n</body></html>'
    root = _write(tmp_path / "out", {"index.html": page})
    result = fake_cli.invoke(main, ["check", "--site", str(root), "--format", "json"])
    (info,) = [d for d in json.loads(result.stdout)["diagnostics"] if d["rule"] == "box-outside-main"]
    assert info["line"] == 3 and "2 element(s)" in info["message"] and info["severity"] == "info"
    assert json.loads(result.stdout)["summary"]["left_out"] == {OUTSIDE_MAIN: 2}
    text = fake_cli.invoke(main, ["check", "--site", str(root)]).output
    assert text.endswith(f"Left out: 2 {OUTSIDE_MAIN}.\n0 error(s), 0 warning(s).\n")


def _glyph_table(rows: int) -> str:
    cells = "".join(f"<tr><td>{chr(0xE000 + i)}</td><td>{chr(0xF000 + i)} ★</td></tr>" for i in range(rows))
    return f"<table><thead><tr><th>アイコン</th><th>記号</th></tr></thead><tbody>{cells}</tbody></table>"


def test_rows_of_icon_glyphs_are_no_chunks_and_the_build_counts_them(tmp_path, fake_cli):
    words = "".join(f"<tr><td>項目{i}</td><td>値{i}</td></tr>" for i in range(12))
    page = ('<html lang="ja"><head><title>アイコン一覧</title></head><body><main><h1>アイコン一覧</h1>'
            '<p>この表はアイコンの一覧です。各行に記号を示します。十分な長さの本文があります。</p>'
            f'<h2 id="icons">アイコン</h2>{_glyph_table(12)}'
            f'<h2 id="values">値</h2><table><thead><tr><th>項目</th><th>値</th></tr></thead><tbody>{words}</tbody></table>'
            '</main></body></html>')
    root = _write(tmp_path / "out", {"index.html": page})
    summary, chunks = _build(fake_cli, root)
    tables = [c for c in chunks if c["type"] == "table"]
    assert len(tables) == 12 and all("項目" in c["content"] for c in tables)
    assert not any(chr(0xE000) in c["content"] for c in chunks)
    assert summary["pages"]["left_out"] == {NO_WORDS: 12}
    assert f"Left out: 12 {NO_WORDS}." in fake_cli.invoke(main, ["build", "--site", str(root)]).output


def test_the_sample_sites_boxes_are_all_still_found_and_nothing_is_left_out():
    from knowledge_build import extract, load_config
    from knowledge_build.kinds import PART_TYPES

    extraction = extract(load_config(site=Path(__file__).parents[1] / "site", env={}))
    assert sum(c.type not in PART_TYPES for c in extraction.chunks) == 121
    assert "left_out" not in extraction.summary


# A small Sphinx project whose page includes a fragment file (no section title of its own), as manuals
# share a common note: Sphinx also renders the fragment as a page, titled "<no title>".
SPHINX_FILES = {
    "conf.py": 'project = "Kumiki"\nlanguage = "ja"\n',
    "index.rst": ("Kumiki の手引き\n===============\n\nKumiki は部品を組み合わせて作業を自動にする道具です。この手引きでその使い方を説明します。\n\n"
                  ".. toctree::\n\n   guide\n"),
    "guide.rst": ("使い方\n======\n\nインストールした後の最初の設定について説明します。設定ファイルは作業フォルダーに置きます。\n\n"
                  ".. include:: snippets/common.rst\n\n設定の確認\n----------\n\n"
                  "設定が正しいかどうかは確認コマンドで調べます。結果は画面に表示されます。\n"),
    "snippets/common.rst": "共通の注意として、設定ファイルの文字コードは UTF-8 にしてください。ほかの文字コードでは読み込みに失敗します。\n",
}


@pytest.mark.generators
def test_a_sphinx_page_rendered_from_an_included_fragment_is_skipped_with_its_reason(tmp_path, fake_cli):
    import subprocess
    import sys

    from .generated_sites.fixtures import require

    require("sphinx-html")
    src = _write(tmp_path / "src", SPHINX_FILES)
    subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(src / "_build" / "html")],
                   check=True, capture_output=True)
    assert "&lt;no title&gt;" in (src / "_build" / "html" / "snippets" / "common.html").read_text(encoding="utf-8")
    summary, chunks = _build(fake_cli, src / "_build" / "html", "--strict")
    assert not any("no title" in c["title"] or "no title" in c.get("material_title", "") for c in chunks)
    (fragment,) = [s for s in summary["pages"]["skipped"] if s["path"] == "snippets/common.html"]
    assert fragment["reason"].startswith(f"{UNTITLED} (<no title>, no heading)")
    assert any("文字コード" in c["content"] and c["material"] == "guide" for c in chunks)
    result = fake_cli.invoke(main, ["build", "--site", str(src / "_build" / "html"), "-v"])
    assert f"skipped snippets/common.html: {UNTITLED}" in result.output


def test_a_page_titled_with_the_generators_placeholder_takes_its_first_heading(tmp_path, fake_cli):
    page = ('<html lang="ja"><head><title>&lt;no title&gt; &#8212; Kumiki ドキュメント</title></head><body>'
            '<div class="sphinxsidebar"><h1 class="logo">Kumiki</h1></div><div role="main">'
            '<p class="rubric">前置き</p><h2 id="notes">共通の注意<a class="headerlink" href="#notes">¶</a></h2>'
            '<p>設定ファイルの文字コードは UTF-8 にしてください。ほかの文字コードでは読み込みに失敗します。</p></div>'
            '</body></html>')
    root = _write(tmp_path / "out", {"index.html": page})
    _, chunks = _build(fake_cli, root)
    assert {c["material_title"] for c in chunks} == {"共通の注意"}


def test_a_page_without_a_title_takes_the_first_heading_of_its_main_content_not_the_sidebars(tmp_path, fake_cli):
    page = ('<html lang="ja"><head></head><body><div class="sphinxsidebar"><h1 class="logo">Kumiki</h1></div>'
            '<div role="main"><h2 id="notes">共通の注意</h2>'
            '<p>設定ファイルの文字コードは UTF-8 にしてください。ほかの文字コードでは読み込みに失敗します。</p></div>'
            '</body></html>')
    root = _write(tmp_path / "out", {"notes.html": page, "plain.html": page.replace('<h2 id="notes">共通の注意</h2>', "")})
    _, chunks = _build(fake_cli, root)
    assert {c["material"]: c["material_title"] for c in chunks} == {"notes": "共通の注意", "plain": "plain"}
