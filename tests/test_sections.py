"""Sections and tables of a page: splitting at headings, breadcrumbs, merging, what is not content,
links that land, stable keys, row chunks with their header, and content type detection.

All pages here are written for these tests."""

import lxml.html
import pytest

from knowledge_build.html.content_type import (
    detect_content_type,
    text_table_rows,
    text_tables,
)
from knowledge_build.html.fragments import fragment_lands, parse_text_directives
from knowledge_build.html.sections import page_parts, page_text
from knowledge_build.html.tables import chunk_table, html_table
from knowledge_build.kinds import KNOWLEDGE_ID

LONG = "二次関数のグラフは放物線と呼ばれる曲線になり、頂点と軸で形が決まります。"  # 36 chars


def parse(html):
    parser = lxml.html.HTMLParser(recover=True, remove_comments=True)
    return lxml.html.document_fromstring(html, parser=parser)


def parts_of(html, **options):
    root = parse(html)
    anchored = {e for e in root.iter() if isinstance(e.tag, str) and KNOWLEDGE_ID.match(e.get("id") or "")}
    return page_parts(root, anchored=anchored, **options), root


def sections(parts):
    return [p for p in parts if p.kind == "section"]


def test_page_is_split_at_headings_with_breadcrumb_and_level():
    parts, _ = parts_of(f"""
      <h2>関数</h2><p>{LONG}</p>
      <h3>一次関数</h3><p>{LONG}</p>
      <h4>傾き</h4><p>{LONG}</p>
      <h3>二次関数</h3><p>{LONG}</p>
      <h2>図形</h2><p>{LONG}</p>""", min_chars=10)
    assert [(p.heading, p.parents, p.level) for p in parts] == [
        ("関数", (), 2), ("一次関数", ("関数",), 3), ("傾き", ("関数", "一次関数"), 4),
        ("二次関数", ("関数",), 3), ("図形", (), 2)]
    assert all(p.text == LONG for p in parts)


def test_text_before_the_first_heading_is_a_part_linked_to_the_page_top():
    parts, _ = parts_of(f"<p>{LONG}</p><h2>次</h2><p>{LONG}</p>", min_chars=10)
    assert (parts[0].heading, parts[0].level, parts[0].fragment, parts[0].text) == ("", 0, "", LONG)


def test_article_is_the_main_content_and_nav_header_footer_are_not():
    parts, _ = parts_of(f"""<body><header><h1>サイト名</h1></header><nav><h2>目次</h2><a href="#a">関数</a></nav>
      <article><h2>関数</h2><p>{LONG}</p></article><h2>記事の外</h2><p>{LONG}</p>
      <footer><p>著作権表示</p></footer></body>""", min_chars=10)
    assert [p.heading for p in parts] == ["関数"]


def test_scripts_styles_svg_buttons_comments_and_summary_labels_are_not_section_text():
    parts, _ = parts_of(f"""<h2>関数</h2><p>{LONG}</p><script>var x = 1;</script><style>p {{}}</style>
      <svg><text x="1">ラベル</text></svg><button>送信</button><!-- メモ --><template><p>型</p></template>
      <details><summary>答えを見る</summary><p>答えは 3 です。</p></details>""", min_chars=10)
    assert parts[0].text == LONG + "\n答えは 3 です。"


def test_anchored_boxes_stay_out_of_the_section_text_and_are_flagged():
    parts, _ = parts_of(f"""<h2>公式</h2><p>{LONG}</p>
      <div class="rule-box" id="rule-kai-no-koshiki"><strong>解の公式</strong><p>箱の中の説明</p></div>
      <h2>練習</h2><p>{LONG}</p>""", min_chars=10)
    assert parts[0].text == LONG and parts[0].has_anchored_box
    assert not parts[1].has_anchored_box


def test_a_heading_inside_an_anchored_box_does_not_start_a_section():
    parts, _ = parts_of(f"""<h2>公式</h2><p>{LONG}</p>
      <div class="rule-box" id="rule-a"><h3>箱の見出し</h3><p>箱の中</p></div><p>箱の後の文章です。</p>""", min_chars=10)
    assert [p.heading for p in parts] == ["公式"]
    assert parts[0].text == LONG + "\n箱の後の文章です。"


def test_heading_with_a_knowledge_id_still_starts_its_section_linked_by_the_id():
    parts, _ = parts_of(f"<h2>例題</h2><p>{LONG}</p><h3 id=\"ex-dainyuu\">代入法で解く</h3><p>{LONG}</p>",
                        min_chars=10)
    assert (parts[1].heading, parts[1].fragment, parts[1].has_anchored_box) == ("代入法で解く", "ex-dainyuu", False)


def test_link_list_section_is_dropped_and_a_section_with_a_link_is_kept():
    links = "".join(f'<li><a href="/p{i}.html">関連ページ{i} の説明つきリンク</a></li>' for i in range(5))
    parts, _ = parts_of(f"""<h2>本文</h2><p>{LONG}<a href="#x">こちら</a></p>
      <div id="related"><h3>📎 関連教材</h3><ul>{links}</ul></div>""", min_chars=10)
    assert [p.heading for p in parts] == ["本文"]


def test_small_section_merges_into_its_previous_sibling_with_its_heading_as_a_line():
    parts, _ = parts_of(f"<h2>関数</h2><p>{LONG}</p><h3>一次</h3><p>{LONG}</p><h3>補足</h3><p>短い。</p>",
                        min_chars=30, max_chars=90)
    assert [(p.heading, p.text) for p in parts] == [("関数", LONG), ("一次", LONG + "\n補足\n短い。")]


def test_small_section_merges_into_its_parent_when_it_is_the_first_child():
    parts, _ = parts_of(f"<h2>関数</h2><p>{LONG}</p><h3>補足</h3><p>短い。</p><h2>図形</h2><p>{LONG}</p>",
                        min_chars=30)
    assert [(p.heading, p.text) for p in parts] == [("関数", LONG + "\n補足\n短い。"), ("図形", LONG)]


def test_merging_stops_at_max_chars():
    parts, _ = parts_of(f"<h2>関数</h2><p>{LONG}</p><h3>補足</h3><p>短い。</p>", min_chars=30, max_chars=40)
    assert [p.heading for p in parts] == ["関数", "補足"]


def test_an_empty_parent_takes_nothing_in_so_its_first_child_keeps_its_own_heading_and_link():
    parts, _ = parts_of(f"""<section id="section3"><h2>3. 例題</h2><div class="section">
      <h3>▶ 長方形</h3><p>{LONG}</p><h3>▶ 円</h3><p>短い。</p></div></section>""", min_chars=50)
    assert [(p.heading, p.parents) for p in parts] == [("▶ 長方形", ("3. 例題",))]
    assert parts[0].fragment.startswith(":~:text=") and "3. 例題" not in parts[0].text
    assert parts[0].text == LONG + "\n▶ 円\n短い。"  # a small sibling after it still joins it


def test_a_small_section_never_joins_an_empty_one_across_it():
    parts, _ = parts_of(f"""<h2>導入</h2><p>{LONG}</p><h2>練習問題</h2><h3>問1</h3><p>短い。</p>""", min_chars=50)
    assert [(p.heading, p.parents, p.text) for p in parts] == [("導入", (), LONG), ("問1", ("練習問題",), "短い。")]


def test_sections_are_not_merged_across_the_anchored_box_flag_and_empty_box_sections_vanish():
    parts, _ = parts_of(f"""<h2>例題</h2><p>{LONG}</p>
      <h3>▶ 例1</h3><div class="example-box" id="ex-one"><p>例題の本文</p></div>
      <h3>▶ まとめ</h3><p>短い。</p>""", min_chars=50)
    assert [(p.heading, p.has_anchored_box) for p in parts] == [("例題", False)]
    assert parts[0].text == LONG + "\n▶ まとめ\n短い。"


def test_small_sections_that_cannot_merge_are_kept_whole():
    parts, _ = parts_of("<h2>一</h2><p>短い。</p>", min_chars=50)
    assert [(p.heading, p.text) for p in parts] == [("一", "短い。")]


def test_long_section_is_split_at_paragraphs_with_overlap_and_numbered_keys():
    paragraphs = "".join(f"<p>{i}番目の段落。{LONG * 3}</p>" for i in range(6))
    parts, _ = parts_of(f"<h2>長い節</h2>{paragraphs}", max_chars=300, overlap=40)
    assert len(parts) >= 3 and all(len(p.text) <= 300 for p in parts)
    assert all(p.heading == "長い節" and p.fragment == parts[0].fragment for p in parts)
    assert [p.key for p in parts[:3]] == [parts[0].key, parts[0].key + "-p2", parts[0].key + "-p3"]
    assert parts[0].text[-20:] in parts[1].text  # the overlap


def test_heading_in_a_wrapper_with_an_id_links_to_the_wrapper_and_other_headings_by_text():
    parts, root = parts_of(f"""<section id="section1"><h2>1. 定義</h2><div class="section"><p>{LONG}</p>
      <h3>▶ 詳しく</h3><p>{LONG}</p></div></section>""", min_chars=10)
    assert parts[0].fragment == "section1"
    assert parts[1].fragment.startswith(":~:text=") and fragment_lands(parts[1].fragment, page_text(root))


def test_wrapper_id_is_not_used_when_text_comes_before_the_heading():
    parts, _ = parts_of(f'<div id="box"><p>{LONG}</p><h2>見出し</h2><p>{LONG}</p></div>', min_chars=10)
    assert parts[1].fragment.startswith(":~:text=")


def test_repeated_heading_gets_context_so_its_link_lands_on_the_second():
    parts, root = parts_of(f"""<h2>1. 面積</h2><p>{LONG}</p><h3>▶ 長方形</h3><p>縦と横をかける。{LONG}</p>
      <h2>2. 周の長さ</h2><p>{LONG}</p><h3>▶ 長方形</h3><p>縦と横を足して二倍。{LONG}</p>""", min_chars=10)
    first, second = [p for p in parts if p.heading == "▶ 長方形"]
    assert parse_text_directives(first.fragment)[0].suffix is None
    directive = parse_text_directives(second.fragment)[0]
    assert directive.start == "▶ 長方形" and (directive.suffix or directive.prefix)
    assert fragment_lands(second.fragment, page_text(root))


def test_keys_are_ascii_slugs_of_the_heading_path_unique_and_stable():
    html = f"""<h2>二次関数</h2><p>{LONG}</p><h3>\\(x^2\\) の最大値</h3><p>{LONG}</p>
      <h2>二次関数</h2><p>{LONG}</p><h2>①</h2><p>{LONG}</p>"""
    keys = [p.key for p in parts_of(html, min_chars=10)[0]]
    assert keys == [p.key for p in parts_of(html, min_chars=10)[0]]
    assert len(set(keys)) == len(keys) and keys[2] == keys[0] + "-2"
    assert all(k and k.isascii() and "\\" not in k and " " not in k for k in keys)
    assert keys[1].startswith(keys[0] + "-")


def table_html(rows, header=True):
    head = "<tr><th>名前</th><th>タイプ</th><th>HP</th></tr>" if header else ""
    body = "".join(f"<tr><td>{a}</td><td>{b}</td><td>{c}</td></tr>" for a, b, c in rows)
    return f"<table>{head}{body}</table>"


CHARACTERS = [(f"キャラ{i:02d}", ["炎", "水", "草"][i % 3], str(100 + i)) for i in range(1, 26)]


def test_a_25_row_table_is_chunked_by_rows_each_with_the_header_and_its_neighbours():
    parts, _ = parts_of(f"<h2>キャラクター一覧</h2><p>{LONG}</p>{table_html(CHARACTERS)}")
    tables = [p for p in parts if p.kind == "table"]
    assert len(tables) == 25
    for number, part in enumerate(tables, 1):
        lines = part.text.splitlines()
        assert lines[:2] == [LONG, "名前 | タイプ | HP"] and part.header == ("名前", "タイプ", "HP")
        assert part.rows == (number, number) and part.heading == "キャラクター一覧"
        neighbours = [f"キャラ{n:02d}" for n in (number - 1, number, number + 1) if 1 <= n <= 25]
        assert [line.split(" | ")[0] for line in lines[2:]] == neighbours
    assert len({p.key for p in tables}) == 25
    assert "キャラ" not in sections(parts)[0].text  # the rows are not repeated in the section


def test_a_word_of_one_cell_is_in_its_rows_chunk_with_the_column_names():
    tables = [p for p in parts_of(table_html(CHARACTERS))[0] if p.kind == "table"]
    holding = [p for p in tables if p.rows == (17, 17)]
    assert "キャラ17 | 草 | 117" in holding[0].text and holding[0].text.startswith("名前 | タイプ | HP")


def test_small_table_is_one_chunk():
    tables = [p for p in parts_of(table_html(CHARACTERS[:4]))[0] if p.kind == "table"]
    assert [(p.rows, len(p.text.splitlines())) for p in tables] == [((1, 4), 5)]


def test_rowspan_and_colspan_are_copied_into_every_cell_they_cover():
    table = html_table(parse("""<table><tr><th>学年</th><th>単元</th><th>時間</th></tr>
      <tr><td rowspan="2">中1</td><td>正負の数</td><td>10</td></tr><tr><td>文字式</td><td>8</td></tr>
      <tr><td colspan="2">合計</td><td>18</td></tr></table>""").find(".//table"))
    assert table.header == ("学年", "単元", "時間")
    assert table.rows == (("中1", "正負の数", "10"), ("中1", "文字式", "8"), ("合計", "合計", "18"))


def test_first_row_without_th_is_a_header_only_when_it_looks_like_one():
    looks = html_table(parse(table_html([("名前", "タイプ", "HP"), ("ピカ", "雷", "35")], header=False)).find(".//table"))
    data = html_table(parse(table_html([("ピカ", "雷", "35"), ("ゼニ", "水", "44")], header=False)).find(".//table"))
    assert looks.header == ("名前", "タイプ", "HP") and len(looks.rows) == 1
    assert data.header == () and len(data.rows) == 2


def test_tex_in_cells_is_written_readably():
    table = html_table(parse(r"<table><tr><th>式</th><th>値</th></tr><tr><td>\(x^2\)</td><td>\(\frac{1}{2}\)</td></tr></table>").find(".//table"))
    assert table.rows == (("x²", "1/2"),)


def test_markdown_table_in_a_pre_block_becomes_table_parts():
    md = "| 名前 | 値 |\n|---|---|\n| 速さ | 3 |\n| 時間 | 4 |"
    parts, _ = parts_of(f"<h2>表</h2><p>{LONG}</p><pre>{md}</pre>")
    tables = [p for p in parts if p.kind == "table"]
    assert [(t.header, t.text) for t in tables] == [(("名前", "値"), f"{LONG}\n名前 | 値\n速さ | 3\n時間 | 4")]
    assert sections(parts)[0].text == LONG


def test_chunk_table_on_text_rows_keeps_header_on_every_chunk():
    from knowledge_build.html.tables import text_table

    rows = [["名前", "点"]] + [[f"生徒{i}", str(i)] for i in range(30)]
    chunks = chunk_table(text_table(rows), max_chars=800)
    assert len(chunks) == 30 and all(c.text.startswith("名前 | 点\n") for c in chunks)


@pytest.mark.parametrize("text, expected", [
    ("", "prose"),
    ("二次関数は放物線になる。\n頂点と軸がある。", "prose"),
    ("| a | b |\n|---|---|\n| 1 | 2 |", "table"),
    ("名前\t型\tHP\nピカ\t雷\t35\nゼニ\t水\t44", "table"),
    ("名前  型  HP\nピカ  雷  35\nゼニ  水  44", "table"),
    ("2020 105 230\n2021 110 240", "table"),
    ("次の表を見てください。\n| a | b |\n|---|---|\n| 1 | 2 |\n表から分かることを書きます。\nまとめです。", "mixed"),
    ("一つ目の文。\n二つ目の文。\n三つ目の文。\n2020年 3月 5日 12時", "prose"),
    ("a | b だけの一行とふつうの文。\nもう一行。", "prose"),
])
def test_detect_content_type(text, expected):
    assert detect_content_type(text) == expected


def test_text_table_rows_finds_the_rows_of_a_markdown_or_tab_table():
    assert text_table_rows("前置き。\n| a | b |\n|---|---|\n| 1 | 2 |\n後書き。") == [["a", "b"], ["1", "2"]]
    assert text_table_rows("x\ty\tz\n1\t2\t3") == [["x", "y", "z"], ["1", "2", "3"]]
    assert text_table_rows("ただの文章。") is None
    assert text_tables("| a | b |\n|---|---|\n| 1 | 2 |")[0].header


def test_page_text_has_one_block_a_line_and_leaves_math_out():
    root = parse(r"<h2>見出し</h2><p>式 \(x^2\) の値</p><ul><li>一</li><li>二</li></ul>")
    assert page_text(root) == "見出し\n式\nの値\n一\n二"


def test_a_lone_h1_is_the_page_title_in_breadcrumbs_but_not_in_keys():
    body = f"<section id=\"s1\"><h2>1. 定義</h2><p>{LONG}</p><h3>▶ 詳しく</h3><p>{LONG}</p></section>"
    source, _ = parts_of(body, min_chars=10)
    built, _ = parts_of(f"<h1>🥧 おうぎ形</h1><p>標準</p>{body}", min_chars=10)
    assert [(p.key, p.fragment) for p in source] == [(p.key, p.fragment) for p in built if p.level > 1]
    assert built[-1].parents == ("🥧 おうぎ形", "1. 定義")


def test_sections_are_not_merged_into_the_page_title():
    parts, _ = parts_of("<h1>題</h1><p>標準</p><h2>短い節</h2><p>短い。</p>", min_chars=50)
    assert [p.heading for p in parts] == ["題", "短い節"]
