"""Section fragments: text-directive encoding, context only when a heading repeats, landing checks.

What a real browser does with these links is checked in test_fragments_browser.py."""

from urllib.parse import unquote

import pytest

from knowledge_build.html.fragments import (
    encode_text_directive,
    fragment_lands,
    lands_on_heading,
    parse_text_directives,
    section_fragment,
)

# A page with a repeated h3 under two h2s, and a heading that is a prefix of an earlier one.
BEFORE = "\n".join([
    "1. テーマの定義", "▶ 長方形の面積", "長方形の面積は縦×横で求めます。",
    "練習問題", "三角形の面積を求めよ。", "2. 図形の問題",
])


def test_dash_comma_and_ampersand_are_percent_encoded():
    assert encode_text_directive("a-b,c&d") == "a%2Db%2Cc%26d"


def test_whitespace_runs_collapse_to_one_encoded_space():
    assert encode_text_directive("  例題 \n\t１\u3000 まとめ ") == "%E4%BE%8B%E9%A1%8C%20%EF%BC%91%20%E3%81%BE%E3%81%A8%E3%82%81"


def test_japanese_and_emoji_are_utf8_percent_encoded():
    assert encode_text_directive("▶ 例題") == "%E2%96%B6%20%E4%BE%8B%E9%A1%8C"
    assert encode_text_directive("📎") == "%F0%9F%93%8E"


def test_markdown_breaking_characters_are_encoded_but_unreserved_ones_are_kept():
    assert encode_text_directive("f(x) = x'") == "f%28x%29%20%3D%20x%27"
    assert encode_text_directive("a_b.c~d") == "a_b.c~d"


def test_encoded_term_decodes_back_to_the_folded_text():
    text = "二次関数 y = a(x - p)² + q, 頂点 & 軸"
    assert unquote(encode_text_directive(text)) == text


def test_heading_with_an_id_links_to_the_id():
    assert section_fragment("練習問題", anchor="section2", text_before=BEFORE, text_after="") == "section2"


def test_unique_heading_gets_a_plain_text_directive_without_context():
    fragment = section_fragment("3. まとめ", anchor=None, text_before=BEFORE, text_after="覚えておこう。")
    assert fragment == ":~:text=" + encode_text_directive("3. まとめ")


def test_first_heading_of_a_page_needs_no_context():
    assert section_fragment("練習問題", anchor=None, text_before="", text_after="次へ") == ":~:text=%E7%B7%B4%E7%BF%92%E5%95%8F%E9%A1%8C"


def test_repeated_heading_gets_the_shortest_context_that_makes_it_the_first_match():
    fragment = section_fragment("練習問題", anchor=None, text_before=BEFORE, text_after="長方形の周の長さを求めよ。\n二つ目")
    # The prefix (after the space of 「2. 図形の問題」) is shorter than any suffix cut on a word boundary.
    assert parse_text_directives(fragment) == [("練習問題", "図形の問題", None, None)]
    assert lands_on_heading(fragment, "練習問題", text_before=BEFORE, text_after="長方形の周の長さを求めよ。")


def test_suffix_is_used_when_it_is_shorter_than_any_prefix():
    before = "練習問題\n三角形の面積を求めよ。\nここからは長い説明の段落で、句読点もなく続いていくので切れ目がない文章です"
    fragment = section_fragment("練習問題", anchor=None, text_before=before, text_after="周の長さ。\n次")
    assert parse_text_directives(fragment)[0] == ("練習問題", None, None, "周の長さ")


def test_heading_that_is_a_prefix_of_an_earlier_heading_gets_context():
    fragment = section_fragment("▶ 長方形", anchor=None, text_before=BEFORE, text_after="縦と横を測ります。")
    directive = parse_text_directives(fragment)[0]
    assert directive.start == "▶ 長方形" and (directive.prefix or directive.suffix)
    assert lands_on_heading(fragment, "▶ 長方形", text_before=BEFORE, text_after="縦と横を測ります。")


def test_japanese_context_is_cut_only_on_certain_word_boundaries():
    # Chromium does not match a suffix that ends inside a word (`-長方` before 長方形), so the suffix
    # runs to punctuation, whitespace or the end of the block.
    before = "例題\n" + "あ" * 100
    fragment = section_fragment("例題", anchor=None, text_before=before, text_after="長方形の周の長さを求めよ。次は三角形")
    assert parse_text_directives(fragment)[0].suffix == "長方形の周の長さを求めよ"


def test_context_never_spans_two_blocks():
    before = "例題\n" + "あ" * 100
    fragment = section_fragment("例題", anchor=None, text_before=before, text_after="短い\n次の段落")
    assert parse_text_directives(fragment)[0].suffix == "短い"


def test_repeated_case_and_width_variants_count_as_the_same_heading():
    # Chromium matches ignoring case and width: `Ｑ１` on the page matches `q1`.
    fragment = section_fragment("Q1 確認", anchor=None, text_before="ｑ１ 確認\n前の問い", text_after="後の問い")
    assert parse_text_directives(fragment)[0].suffix == "後の問い"


def test_heading_that_nothing_makes_unique_returns_the_plain_directive():
    before = "前書き\n練習問題\n同じ本文"
    fragment = section_fragment("練習問題", anchor=None, text_before=before + "\n前書き", text_after="同じ本文")
    assert fragment == ":~:text=" + encode_text_directive("練習問題")
    assert not lands_on_heading(fragment, "練習問題", text_before=before + "\n前書き", text_after="同じ本文")


def test_heading_without_text_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="give it an id"):
        section_fragment(" \n", anchor=None, text_before="", text_after="")


def test_fragment_lands_when_its_text_and_context_occur_in_the_page():
    page = BEFORE + "\n練習問題\n長方形の周の長さを求めよ。"
    assert fragment_lands("#:~:text=" + encode_text_directive("練習問題") + ",-" + encode_text_directive("長方形"), page)
    assert fragment_lands(":~:text=" + encode_text_directive("2. 図形の問題") + "-,%E7%B7%B4%E7%BF%92", page)
    assert fragment_lands(":~:text=%E2%96%B6%EF%B8%8F%20%E9%95%B7%E6%96%B9%E5%BD%A2", page)  # ▶️ matches ▶


def test_fragment_does_not_land_when_text_or_context_is_missing():
    assert not fragment_lands(":~:text=" + encode_text_directive("確率"), BEFORE)
    assert not fragment_lands(":~:text=" + encode_text_directive("練習問題") + ",-" + encode_text_directive("円"), BEFORE)
    # A term never spans two blocks.
    assert not fragment_lands(":~:text=" + encode_text_directive("練習問題 三角形"), BEFORE)


def test_fragment_with_several_directives_lands_only_when_all_do():
    ok, missing = encode_text_directive("練習問題"), encode_text_directive("確率")
    assert fragment_lands(f":~:text={ok}&text={ok}", BEFORE)
    assert not fragment_lands(f":~:text={ok}&text={missing}", BEFORE)


def test_id_fragment_is_left_to_the_caller():
    with pytest.raises(ValueError, match="page's ids"):
        fragment_lands("section2", BEFORE)


def test_malformed_directives_are_ignored_like_a_browser_does():
    assert parse_text_directives(":~:text=a-b") == []  # an unencoded dash
    assert parse_text_directives(":~:text=a,b,c,d,e") == []
    assert parse_text_directives(":~:text=-,a") == []
    assert parse_text_directives("intro:~:text=a%2Cb,-c") == [("a,b", None, None, "c")]


def test_japanese_prefix_begins_on_a_certain_word_boundary():
    # Chromium does not match a prefix that begins inside a word (`形の問題-,` after 図形の問題).
    before = "練習問題\n本文\n次は図形の問題"
    fragment = section_fragment("練習問題", anchor=None, text_before=before, text_after="本文")
    assert parse_text_directives(fragment)[0].prefix == "次は図形の問題"


def test_block_holding_tex_is_never_context():
    # KaTeX renders \(…\) into other text, so context taken from it would not be on the page.
    before = "▶ 直線\n説明\n\\[ y = ax + b \\]"
    fragment = section_fragment("▶ 直線", anchor=None, text_before=before, text_after="例3 傾きから求める")
    assert parse_text_directives(fragment)[0] == ("▶ 直線", None, None, "例3")
