"""main_content, is_chrome and what a page says about itself, on small pages shaped like each
generator's output (Jekyll minima and a Jekyll source page, Hugo PaperMod and Docsy, MkDocs Material,
Sphinx alabaster html/dirhtml, the Read the Docs theme, a plain page). The shapes follow what those
generators write (class names, roles, nesting); the text is written for these tests."""

from __future__ import annotations

import lxml.etree
import pytest

from knowledge_build.html.main_content import (
    JAPANESE_KANA_SHARE,
    breadcrumbs,
    generator_meta,
    is_chrome,
    main_content,
    page_language,
    site_name_suffix,
    strip_site_name,
    written_in_japanese,
)
from knowledge_build.html.sections import page_parts
from knowledge_build.web.extract import parse_html

BODY = "<p>手順の説明です。インストールの前に必要なものをそろえます。</p>"
SECOND = "<p>コマンドを実行してインストールします。数分で終わります。</p>"

JEKYLL_MINIMA = f"""<!DOCTYPE html><html lang="en"><head><title>インストール | ツール名ドキュメント</title>
<meta name="generator" content="Jekyll v4.3.1" /><meta property="og:site_name" content="ツール名ドキュメント" /></head>
<body><header class="site-header" role="banner"><div class="wrapper"><a class="site-title" href="/">ツール名ドキュメント</a>
<nav class="site-nav"><div class="trigger"><a class="page-link" href="/about/">概要</a></div></nav></div></header>
<main class="page-content" aria-label="Content"><div class="wrapper">
<article class="post h-entry" itemscope itemtype="http://schema.org/BlogPosting">
<header class="post-header"><h1 class="post-title p-name">インストール</h1><p class="post-meta"><time>Jan 1, 2024</time></p></header>
<div class="post-content e-content"><h2 id="準備">準備</h2>{BODY}<h2 id="実行">実行</h2>{SECOND}</div>
<a class="u-url" href="/2024/01/01/install.html" hidden></a></article></div></main>
<footer class="site-footer h-card"><div class="wrapper"><h2 class="footer-heading">ツール名ドキュメント</h2></div></footer>
</body></html>"""

JEKYLL_SOURCE = f"""<h2>準備</h2>{BODY}<div class="rule-box" id="rule-install"><strong>手順</strong><p>箱の中</p></div>
<h2>実行</h2>{SECOND}"""

HUGO_PAPERMOD = f"""<!DOCTYPE html><html lang="ja" dir="auto"><head><title>インストール | ツール名ブログ</title>
<meta name="generator" content="Hugo 0.111.3"></head><body class="single" id="top">
<header class="header"><nav class="nav"><div class="logo"><a href="/">ツール名ブログ</a></div>
<ul id="menu"><li><a href="/posts/">記事</a></li></ul></nav></header>
<main class="main"><article class="post-single"><header class="post-header">
<div class="breadcrumbs"><a href="/">Home</a>&nbsp;»&nbsp;<a href="/posts/">Posts</a></div>
<h1 class="post-title entry-hint-parent">インストール</h1><div class="post-meta">2024年1月1日 · 1 分</div></header>
<div class="toc"><details><summary accesskey="c"><span class="details">目次</span></summary>
<div class="inner"><ul><li><a href="#準備">準備</a></li><li><a href="#実行">実行</a></li></ul></div></details></div>
<div class="post-content"><h2 id="準備">準備<a hidden class="anchor" aria-hidden="true" href="#準備">#</a></h2>{BODY}
<h2 id="実行">実行<a hidden class="anchor" aria-hidden="true" href="#実行">#</a></h2>{SECOND}</div>
<footer class="post-footer"><ul class="post-tags"><li><a href="/tags/setup/">setup</a></li></ul>
<nav class="paginav"><a class="prev" href="/posts/usage/"><span class="title">« 前へ</span><br><span>使い方</span></a></nav>
</footer></article></main><footer class="footer"><span>&copy; 2024 ツール名ブログ</span></footer></body></html>"""

HUGO_DOCSY = f"""<!doctype html><html itemscope itemtype="http://schema.org/WebPage" lang="ja" class="no-js"><head>
<meta name="generator" content="Hugo 0.111.3"><title>インストール | ツール名</title></head><body class="td-page">
<header><nav class="td-navbar js-navbar-scroll" data-bs-theme="dark"><a class="navbar-brand" href="/">ツール名</a></nav></header>
<div class="container-fluid td-outer"><div class="td-main"><div class="row flex-xl-nowrap">
<aside class="col-12 col-md-3 col-xl-2 td-sidebar d-print-none"><div id="td-sidebar-menu" class="td-sidebar__inner">
<nav class="td-sidebar-nav" id="td-section-nav"><ul><li><a href="/docs/">ドキュメント</a></li></ul></nav></div></aside>
<aside class="d-none d-xl-block col-xl-2 td-sidebar-toc d-print-none"><div class="td-page-meta ms-2 pb-1 pt-2 mb-0">
<a href="https://github.com/example/tool/edit/main/content/ja/docs/install.md" class="td-page-meta--edit" target="_blank">ページの編集</a></div>
<div class="td-toc"><nav id="TableOfContents"><ul><li><a href="#準備">準備</a></li></ul></nav></div></aside>
<main class="col-12 col-md-9 col-xl-8 ps-md-5" role="main">
<nav aria-label="breadcrumb" class="td-breadcrumbs"><ol class="breadcrumb">
<li class="breadcrumb-item"><a href="/docs/">ドキュメント</a></li><li class="breadcrumb-item"><a href="/docs/start/">はじめに</a></li>
<li class="breadcrumb-item active" aria-current="page">インストール</li></ol></nav>
<div class="td-content"><h1>インストール</h1><div class="lead">ツールを入れる方法。</div>
<h2 id="準備">準備<a class="td-heading-self-link" href="#準備" aria-label="Heading self-link"></a></h2>{BODY}
<h2 id="実行">実行<a class="td-heading-self-link" href="#実行" aria-label="Heading self-link"></a></h2>{SECOND}
</div></main></div></div><footer class="td-footer row d-print-none"><p>&copy; 2024 ツール名</p></footer></div></body></html>"""

MKDOCS_MATERIAL = f"""<!doctype html><html lang="ja" class="no-js"><head>
<meta name="generator" content="mkdocs-1.6.1, mkdocs-material-9.8.2"><title>インストール - ツール名ドキュメント</title></head>
<body dir="ltr"><input class="md-toggle" data-md-toggle="drawer" type="checkbox" id="__drawer">
<div data-md-component="skip"><a href="#準備" class="md-skip">コンテンツにスキップ</a></div>
<header class="md-header md-header--shadow" data-md-component="header"><nav class="md-header__inner md-grid" aria-label="ヘッダー">
<div class="md-header__title"><span class="md-ellipsis">ツール名ドキュメント</span></div>
<div class="md-search" data-md-component="search" role="dialog"><div class="md-search__inner" role="search">検索</div></div>
<div class="md-header__source"><a href="https://github.com/example/tool" class="md-source">GitHub</a></div></nav></header>
<div class="md-container" data-md-component="container">
<nav class="md-tabs" aria-label="タブ"><ul class="md-tabs__list"><li class="md-tabs__item"><a href="../.." class="md-tabs__link">ホーム</a></li></ul></nav>
<main class="md-main" data-md-component="main"><div class="md-main__inner md-grid">
<div class="md-sidebar md-sidebar--primary" data-md-component="sidebar" data-md-type="navigation">
<div class="md-sidebar__scrollwrap"><div class="md-sidebar__inner"><nav class="md-nav md-nav--primary" aria-label="ナビゲーション">
<ul class="md-nav__list"><li class="md-nav__item"><a href="../.." class="md-nav__link">ホーム</a></li></ul></nav></div></div></div>
<div class="md-sidebar md-sidebar--secondary" data-md-component="sidebar" data-md-type="toc">
<div class="md-sidebar__scrollwrap"><div class="md-sidebar__inner"><nav class="md-nav md-nav--secondary" aria-label="目次">
<label class="md-nav__title" for="__toc">目次</label><ul class="md-nav__list"><li class="md-nav__item">
<a href="#準備" class="md-nav__link">準備</a></li></ul></nav></div></div></div>
<div class="md-content" data-md-component="content"><article class="md-content__inner md-typeset">
<a href="https://github.com/example/tool/edit/main/docs/guide/install.md" title="編集" class="md-content__button md-icon" rel="edit">編集</a>
<h1 id="インストール">インストール<a class="headerlink" href="#インストール" title="Permanent link">¶</a></h1>
<h2 id="準備">準備<a class="headerlink" href="#準備" title="Permanent link">¶</a></h2>{BODY}
<div class="admonition note"><p class="admonition-title">注意</p><p>管理者の権限が要ります。</p></div>
<h2 id="実行">実行<a class="headerlink" href="#実行" title="Permanent link">¶</a></h2>{SECOND}
<aside class="md-source-file"><span class="md-source-file__fact">2024年1月1日</span></aside></article></div></div></main>
<footer class="md-footer"><nav class="md-footer__inner md-grid" aria-label="フッター">
<a href="../.." class="md-footer__link md-footer__link--prev" aria-label="前: ホーム"><span class="md-footer__direction">前</span>
<div class="md-ellipsis">ホーム</div></a></nav><div class="md-footer-meta md-typeset"><div class="md-copyright">Made with
<a href="https://squidfunk.github.io/mkdocs-material/" target="_blank" rel="noopener">Material for MkDocs</a></div></div></footer>
</div></body></html>"""


def sphinx_alabaster(next_href: str) -> str:
    """Sphinx 9 with alabaster; html and dirhtml differ only in their links (install.html, ../install/)."""
    return f"""<!DOCTYPE html><html lang="ja" data-content_root="./"><head><title>インストール — ツール名 1.0 ドキュメント</title>
<link rel="next" title="使い方" href="{next_href}" /></head><body>
<div class="document"><div class="documentwrapper"><div class="bodywrapper"><div class="body" role="main">
<section id="id1"><h1>インストール<a class="headerlink" href="#id1" title="Link to this heading">¶</a></h1>
<section id="navigation"><h2>準備<a class="headerlink" href="#navigation" title="Link to this heading">¶</a></h2>{BODY}
<div class="admonition note"><p class="admonition-title">注釈</p><p>管理者の権限が要ります。</p></div></section>
<section id="id3"><h2>実行<a class="headerlink" href="#id3" title="Link to this heading">¶</a></h2>{SECOND}</section></section>
</div></div></div>
<div class="sphinxsidebar" role="navigation" aria-label="Main"><div class="sphinxsidebarwrapper"><h1 class="logo"><a href="#">ツール名</a></h1>
<h3>ナビゲーション</h3><ul class="current"><li class="toctree-l1 current"><a class="current reference internal" href="#">インストール</a></li></ul>
<div class="relations"><h3>Related Topics</h3><ul><li><a href="#">Documentation overview</a><ul>
<li>Next: <a href="{next_href}" title="次の章へ">使い方</a></li></ul></li></ul></div>
<search id="searchbox" style="display: none" role="search"><h3 id="searchlabel">クイック検索</h3></search></div></div>
<div class="clearer"></div></div><div class="footer">&#169;2024. | Powered by <a href="https://www.sphinx-doc.org/">Sphinx 9.0.4</a></div>
</body></html>"""


READ_THE_DOCS = f"""<!DOCTYPE html><html class="writer-html5" lang="ja" data-content_root="./"><head>
<title>インストール &mdash; ツール名 1.0 ドキュメント</title></head><body class="wy-body-for-nav"><div class="wy-grid-for-nav">
<nav data-toggle="wy-nav-shift" class="wy-nav-side"><div class="wy-side-scroll"><div class="wy-side-nav-search">
<a href="index.html" class="icon icon-home">ツール名</a><div role="search"><form id="rtd-search-form" class="wy-form"></form></div></div>
<div class="wy-menu wy-menu-vertical" data-spy="affix" role="navigation" aria-label="Navigation menu"><ul class="current">
<li class="toctree-l1 current"><a class="current reference internal" href="#">インストール</a></li></ul></div></div></nav>
<section data-toggle="wy-nav-shift" class="wy-nav-content-wrap"><nav class="wy-nav-top" aria-label="Mobile navigation menu">
<a href="index.html">ツール名</a></nav><div class="wy-nav-content"><div class="rst-content">
<div role="navigation" aria-label="Page navigation"><ul class="wy-breadcrumbs">
<li><a href="index.html" class="icon icon-home" aria-label="Home"></a></li><li class="breadcrumb-item active">インストール</li>
<li class="wy-breadcrumbs-aside"><a href="_sources/install.rst.txt" rel="nofollow"> View page source</a></li></ul><hr/></div>
<div role="main" class="document" itemscope="itemscope" itemtype="http://schema.org/Article"><div itemprop="articleBody">
<section id="id1"><h1>インストール<a class="headerlink" href="#id1" title="Link to this heading"></a></h1>
<section id="id2"><h2>準備<a class="headerlink" href="#id2" title="Link to this heading"></a></h2>{BODY}</section>
<section id="id3"><h2>実行<a class="headerlink" href="#id3" title="Link to this heading"></a></h2>{SECOND}</section></section>
</div></div><footer><div class="rst-footer-buttons" role="navigation" aria-label="Footer">
<a href="index.html" class="btn btn-neutral float-left" title="ツール名" accesskey="p" rel="prev">Previous</a>
<a href="usage.html" class="btn btn-neutral float-right" title="使い方" accesskey="n" rel="next">Next</a></div><hr/>
<div role="contentinfo"><p>&#169; Copyright 2024.</p></div>Built with <a href="https://www.sphinx-doc.org/">Sphinx</a></footer>
</div></div></section></div></body></html>"""

PLAIN = f"""<html><head><title>インストール</title></head><body>
<a class="skip-link" href="#main">Skip to content</a>
<p><a href="index.html">← 前へ</a> <a href="usage.html">次へ →</a></p>
<div class="sidebar"><h3>このサイトのページ</h3><ul><li><a href="a.html">ページA</a></li></ul></div>
<h1>インストール</h1><h2>準備</h2>{BODY}<aside class="note"><p>注意: 管理者の権限が要ります。</p></aside>
<h2>実行</h2>{SECOND}<div class="stock"><p>在庫は十分にあります。</p></div>
<p class="edit-link"><a href="https://github.com/example/site/edit/main/install.html">このページを編集</a></p>
<p><a href="index.html">« Previous</a> <a href="usage.html">Next »</a></p></body></html>"""

OUTSIDE_THE_CONTENT = ("ツール名ドキュメント", "概要", "目次", "前へ", "次へ", "ページの編集", "ナビゲーション",
                       "クイック検索", "Copyright", "Made with", "GitHub", "Previous", "Next", "View page source",
                       "Skip to content", "このページを編集", "このサイトのページ", "使い方", "setup", "2024")


def parse(html: str):
    return parse_html(html)


def parts(html: str):
    return page_parts(parse(html), anchored=set(), min_chars=10)


def text_of(html: str) -> str:
    found = parts(html)
    return "\n".join([p.heading for p in found] + [h for p in found for h in p.parents] + [p.text for p in found])


def describe(el) -> str:
    return el.tag + "".join(f"[{k}={el.get(k)}]" for k in ("id", "class", "role") if el.get(k))


# -- main_content ----------------------------------------------------------------------------------

@pytest.mark.parametrize("html, expected", [
    (JEKYLL_MINIMA, "article[class=post h-entry]"),
    (JEKYLL_SOURCE, "body"),
    (HUGO_PAPERMOD, "article[class=post-single]"),
    (HUGO_DOCSY, "main[class=col-12 col-md-9 col-xl-8 ps-md-5][role=main]"),
    (MKDOCS_MATERIAL, "article[class=md-content__inner md-typeset]"),
    (sphinx_alabaster("usage.html"), "div[class=body][role=main]"),
    (sphinx_alabaster("../usage/"), "div[class=body][role=main]"),
    (READ_THE_DOCS, "div[class=document][role=main]"),
    (PLAIN, "body"),
], ids=["jekyll-minima", "jekyll-source", "hugo-papermod", "hugo-docsy", "mkdocs-material", "sphinx-html",
        "sphinx-dirhtml", "read-the-docs", "plain"])
def test_main_content_of_each_generator(html, expected):
    assert describe(main_content(parse(html))) == expected


@pytest.mark.parametrize("html", [JEKYLL_MINIMA, HUGO_PAPERMOD, HUGO_DOCSY, MKDOCS_MATERIAL, sphinx_alabaster("usage.html"),
                                  READ_THE_DOCS, PLAIN],
                         ids=["jekyll-minima", "hugo-papermod", "hugo-docsy", "mkdocs-material", "sphinx", "read-the-docs",
                              "plain"])
def test_sections_hold_the_page_text_and_none_of_its_chrome(html):
    found = parts(html)
    assert [p.heading for p in found if p.heading in ("準備", "実行")] == ["準備", "実行"]
    text = text_of(html)
    assert "必要なものをそろえます" in text and "数分で終わります" in text
    for chrome in OUTSIDE_THE_CONTENT:
        assert chrome not in text, chrome


def test_heading_text_leaves_out_headerlinks_and_self_links():
    for html in (MKDOCS_MATERIAL, sphinx_alabaster("usage.html"), HUGO_PAPERMOD, HUGO_DOCSY):
        headings = [p.heading for p in parts(html)] + [h for p in parts(html) for h in p.parents]
        assert not [h for h in headings if "¶" in h or h.endswith("#")], headings


def test_an_aside_note_is_content_and_an_admonition_too():
    assert "注意: 管理者の権限が要ります。" in text_of(PLAIN)
    assert "管理者の権限が要ります。" in text_of(MKDOCS_MATERIAL)


def test_a_class_that_only_contains_a_chrome_word_is_content():
    assert "在庫は十分にあります。" in text_of(PLAIN)  # "stock" holds "toc"


def test_one_article_among_several_is_the_content_only_when_it_holds_most_text():
    long = "本文です。" * 40
    one = f"<body><main><article><h2>記事</h2><p>{long}</p></article><article><p>関連記事</p></article></main></body>"
    assert describe(main_content(parse(one))) == "article"
    listing = "".join(f"<article><h2>記事{n}</h2><p>{long}</p></article>" for n in range(3))
    assert describe(main_content(parse(f"<body><main>{listing}</main></body>"))) == "main"


def test_nested_main_landmarks_give_the_innermost_and_a_hidden_main_is_skipped():
    page = '<body><div role="main" id="outer"><main id="inner"><p>本文</p></main></div></body>'
    assert main_content(parse(page)).get("id") == "inner"
    page = '<body><main hidden id="old"><p>古い</p></main><main id="new"><p>本文</p></main></body>'
    assert main_content(parse(page)).get("id") == "new"


def test_a_named_container_is_the_content_only_when_it_holds_enough_of_the_page():
    page = "<body><div class='sidebar'>横</div><div id='content'><h2>見出し</h2><p>" + "本文" * 50 + "</p></div></body>"
    assert describe(main_content(parse(page))) == "div[id=content]"
    card = "<body><p>" + "本文" * 50 + "</p><div class='content'>カード</div></body>"
    assert describe(main_content(parse(card))) == "body"


# -- is_chrome -------------------------------------------------------------------------------------

def element(html: str):
    root = lxml.etree.fromstring(f"<html><body>{html}</body></html>", lxml.etree.HTMLParser())
    return root.find("body")[0]


@pytest.mark.parametrize("html", [
    "<nav><a href='/'>ホーム</a></nav>", "<header>サイト</header>", "<footer>著作権</footer>",
    "<div role='navigation'>x</div>", "<div role='complementary'>x</div>", "<aside role='complementary'>x</aside>",
    "<aside class='sidebar'>x</aside>", "<div class='md-sidebar md-sidebar--primary'>x</div>",
    "<div class='sphinxsidebar'>x</div>", "<div id='toc'>x</div>", "<div class='table-of-contents'>x</div>",
    "<nav id='TableOfContents'>x</nav>", "<ol class='breadcrumb'>x</ol>", "<ul class='pagination'>x</ul>",
    "<div class='prev-next'>x</div>", "<div class='md-footer'>x</div>", "<div class='edit-this-page'>x</div>",
    "<a class='skip-link' href='#main'>x</a>", "<a class='sr-only' href='#content'>本文へ</a>",
    "<a href='b.html' rel='next'>使い方</a>", "<a href='a.html'>← 前へ</a>", "<a href='b.html'>次へ →</a>",
    "<a href='b.html'>Next »</a>", "<a href='https://github.com/o/r/edit/main/docs/x.md'>編集</a>",
    "<a href='x'>このページを編集</a>", "<p class='navbar'>x</p>", "<div role='banner'>x</div>",
    "<div role='contentinfo'>x</div>", "<form role='search'>x</form>", "<search>x</search>", "<ul class='menu'>x</ul>",
    "<a rel='edit' href='x'>x</a>", "<a href='/edit'>Edit this page</a>", "<a href='#main'>Skip to content</a>",
    "<a href='a.html'>← 前へ: インストール</a>", "<a href='b.html'>Next: Usage »</a>",
])
def test_chrome(html):
    assert is_chrome(element(html))


@pytest.mark.parametrize("html", [
    "<aside class='note'>注意</aside>", "<aside>広告</aside>", "<div class='stock'>在庫</div>",
    "<canvas class='navcanvas'></canvas>", "<div class='content'>x</div>", "<section id='navigation'>x</section>",
    "<div class='section' id='table-of-contents'>x</div>", "<h2 id='sidebar'>サイドバー</h2>",
    "<div class='wy-nav-content'>x</div>", "<ul class='nav nav-tabs' role='tablist'>x</ul>",
    "<a href='b.html'>次の例題へ進む前に</a>", "<a href='#id1'>本文への参照</a>", "<a href='b.html'>Next steps</a>",
    "<a href='b.html'>次へ進む: 応用編</a>",
    "<a href='https://github.com/o/r/blob/main/x.py'>ソース</a>", "<div class='related-materials' id='related'>x</div>",
    "<span class='footnote-backref'>x</span>",
])
def test_not_chrome(html):
    assert not is_chrome(element(html))


def test_the_body_and_html_are_never_chrome_whatever_their_class():
    root = parse('<html class="nav-open"><body class="wy-body-for-nav"><p>本文</p></body></html>')
    assert not is_chrome(root) and not is_chrome(root.find("body"))


def test_a_self_link_mark_in_a_heading_is_chrome_and_a_heading_link_with_text_is_not():
    root = parse('<h2 id="a">準備<a class="anchor" href="#a">#</a></h2><h2><a href="#b">実行</a></h2>')
    first, second = root.iter("h2")
    assert is_chrome(first[0]) and not is_chrome(second[0])


# -- what the page says about itself ---------------------------------------------------------------

def test_page_language_is_the_primary_subtag_of_html_lang():
    assert page_language(parse('<html lang="ja-JP"><body></body></html>')) == "ja"
    assert page_language(parse(JEKYLL_MINIMA)) == "en"
    assert page_language(parse('<html xml:lang="EN_us"><body></body></html>')) == "en"
    assert page_language(parse(JEKYLL_SOURCE)) == ""


def test_generator_meta():
    assert generator_meta(parse(JEKYLL_MINIMA)) == "Jekyll v4.3.1"
    assert generator_meta(parse(HUGO_DOCSY)) == "Hugo 0.111.3"
    assert generator_meta(parse(MKDOCS_MATERIAL)) == "mkdocs-1.6.1, mkdocs-material-9.8.2"
    assert generator_meta(parse(PLAIN)) == ""


def test_breadcrumbs_without_the_page_itself():
    assert breadcrumbs(parse(HUGO_DOCSY)) == ("ドキュメント", "はじめに")
    assert breadcrumbs(parse(READ_THE_DOCS)) == ("Home",)
    assert breadcrumbs(parse(HUGO_PAPERMOD)) == ("Home", "Posts")
    schema = """<ol itemscope itemtype="https://schema.org/BreadcrumbList"><li itemprop="itemListElement"><a href="/">ホーム</a></li>
      <li itemprop="itemListElement"><a href="/docs/">ドキュメント</a></li><li itemprop="itemListElement">インストール</li></ol>
      <h1>インストール</h1>"""
    assert breadcrumbs(parse(schema)) == ("ホーム", "ドキュメント")
    sphinx_related = """<div class="related" role="navigation" aria-label="Related"><ul>
      <li class="right"><a href="genindex.html">索引</a></li><li class="nav-item nav-item-0"><a href="index.html">ツール名 1.0</a> &#187;</li>
      <li class="nav-item nav-item-1"><a href="guide.html">ガイド</a> &#187;</li><li class="nav-item nav-item-this"><a href="">インストール</a></li></ul></div>"""
    assert breadcrumbs(parse(sphinx_related)) == ("ツール名 1.0", "ガイド")
    for html in (PLAIN, MKDOCS_MATERIAL, JEKYLL_SOURCE):
        assert breadcrumbs(parse(html)) == ()


@pytest.mark.parametrize("titles, expected", [
    (["インストール | ツール名ドキュメント", "使い方 | ツール名ドキュメント", "ツール名ドキュメント"], "ツール名ドキュメント"),
    (["インストール — ツール名 1.0 ドキュメント", "使い方 — ツール名 1.0 ドキュメント", "索引 — ツール名 1.0 ドキュメント"],
     "ツール名 1.0 ドキュメント"),
    (["Install - Tool docs", "Usage - Tool docs", "A - B - Tool docs"], "Tool docs"),
    (["Install · Site", "Usage · Site", "About"], "Site"),
    (["Install :: Site", "Usage :: Site"], "Site"),
    (["Install – Site", "Usage – Site"], "Site"),
    (["インストール｜ツール名", "使い方｜ツール名"], "ツール名"),
    (["Install - Tool | Org", "Usage - Tool | Org"], "Tool | Org"),
    (["Install | Site", "Usage", "About", "Contact"], ""),  # one title is no majority
    (["Install | Site"], ""),
    ([], ""),
])
def test_site_name_suffix_is_what_most_titles_end_with(titles, expected):
    assert site_name_suffix(titles) == expected


@pytest.mark.parametrize("title, site_name, expected", [
    ("インストール | ツール名ドキュメント", "ツール名ドキュメント", "インストール"),
    ("インストール — ツール名 1.0 ドキュメント", "ツール名 1.0 ドキュメント", "インストール"),
    ("インストール — ツール名 1.0 ドキュメント", "ツール名", "インストール"),  # Sphinx, given the project name
    ("Install — Tool 2.3 documentation", "Tool", "Install"),
    ("Install - Tool", "Tool", "Install"),
    ("A - B · Site", "Site", "A - B"),
    ("ツール名ドキュメント", "ツール名ドキュメント", "ツール名ドキュメント"),  # the home page is the site name
    ("Install - Toolbox", "Tool", "Install - Toolbox"),
    ("Install - Tool tips", "Tool", "Install - Tool tips"),
    ("Install", "", "Install"),
])
def test_strip_site_name(title, site_name, expected):
    assert strip_site_name(title, site_name) == expected


def test_a_main_area_is_japanese_from_five_percent_kana_of_its_letters():
    assert JAPANESE_KANA_SHARE == 0.05  # the README's "at least 5 % kana"

    def main(kana: int, latin: int):
        return parse(f"<html><body><main><p>{'あ' * kana}{'a' * latin}</p><script>{'い' * 500}</script></main></body></html>")

    assert written_in_japanese(main(5, 95))  # 5 of 100 letters
    assert not written_in_japanese(main(4, 96))
    assert not written_in_japanese(main(0, 0))  # no letters: nothing says Japanese (the script's kana do not count)
    assert written_in_japanese(parse("<html><body><main><p>関数の引数を指定します。</p></main></body></html>"))
