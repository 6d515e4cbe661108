"""redline.textsafety: model text made safe for a terminal, a file a person opens, and JSON."""

from __future__ import annotations

import json
import sys
import unicodedata

import pytest

from redline.textsafety import dumps, escape_surrogates, inert, json_escape, visible

CATEGORIES = ("Cc", "Cf", "Cs", "Zl", "Zp")

HOSTILE = "a\x1b[31mred\x1b]0;title\x07 \x9b2J \u202eevil\u2066 \u200b\U000e0041 \udcff\r\nx\ty\bz\u2028"


def test_visible_shows_every_control_and_format_character():
    shown = visible(HOSTILE)
    assert shown == (
        "a\\x1b[31mred\\x1b]0;title\\x07 \\x9b2J \\u202eevil\\u2066 \\u200b\\U000e0041 \\udcff\nx\\ty\\x08z\\u2028"
    )
    assert all(ch == "\n" or unicodedata.category(ch) not in CATEGORIES for ch in shown)
    assert visible("caf\u00e9 \u65e5\u672c \\x1b") == "caf\u00e9 \u65e5\u672c \\x1b"  # kept as they are


def test_inert_keeps_tabs_newlines_and_emoji_joiners():
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert inert(f"{family}\tok\r\nnext") == f"{family}\tok\nnext"
    shown = inert(HOSTILE)
    for raw in ("\x1b", "\x9b", "\u202e", "\u2066", "\u200b", "\U000e0041", "\udcff", "\r", "\b", "\u2028"):
        assert raw not in shown
    assert "\\u202eevil" in shown and "\\udcff" in shown
    shown.encode("utf-8")  # valid UTF-8: no lone surrogate left


@pytest.mark.parametrize("text", [HOSTILE, "plain ascii", "", "\ud800 \udfff alone", "\U0010ffff \U000e007f"])
def test_dumps_is_lossless_printable_and_utf8(text):
    line = dumps({"text": text, text: [text]})
    assert json.loads(line) == {"text": text, text: [text]}
    line.encode("utf-8")
    assert all(ch == " " or unicodedata.category(ch) not in CATEGORIES for ch in line)


def test_dumps_keeps_other_scripts_readable():
    assert dumps(["caf\u00e9 \u65e5\u672c \U0001f600"]) == '["caf\u00e9 \u65e5\u672c \U0001f600"]'
    assert dumps("x", indent=2) == '"x"'


def test_a_high_and_a_low_surrogate_side_by_side_read_back_as_the_pair_they_encode():
    """As with json.dumps: the one case that is not lossless (no JSON answer, no UTF-8 file and
    no surrogateescape decoding yields it)."""
    assert json.loads(dumps("\ud83d\ude00")) == "\U0001f600"


def test_json_escape_writes_astral_characters_as_surrogate_pairs():
    assert json_escape(json.dumps("\U000e0041", ensure_ascii=False)) == '"\\udb40\\udc41"'


def test_escape_surrogates_changes_nothing_else():
    assert escape_surrogates("x\udcff\u202e\x1b\u00e9") == "x\\udcff\u202e\x1b\u00e9"
    assert escape_surrogates("plain") == "plain"


def test_the_table_covers_every_such_character_of_every_plane():
    unsafe = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in CATEGORIES]
    assert "\U000e0001" in unsafe and "\U000110bd" in unsafe  # planes 14 and 1 hold some
    left = set(visible("".join(unsafe))) & set(unsafe)
    assert left == {"\n"}
    assert set(json_escape("".join(unsafe))) & set(unsafe) == {"\n"}  # indentation's newlines


def test_indented_json_stays_valid_and_lossless():
    value = {"text": "line\nnext \x1b[2J \u202e \udcff", "n": [1, 2]}
    text = dumps(value, indent=2)
    assert json.loads(text) == value
    assert "\x1b" not in text and "\u202e" not in text and text.count("\n") == 6
