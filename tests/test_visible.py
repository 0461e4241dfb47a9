"""What wrapagent prints of others' text cannot drive the terminal or hide itself.

(The attacker-style checks, a hostile repository's names reaching listings
and the trust review, are in tests/security/test_output_escaped.py.)
"""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given, strategies as st

from wrapagent.visible import data, field, json_text, visible


def test_plain_text_is_returned_as_it_is() -> None:
    assert visible("src/main.py: ok") == "src/main.py: ok"
    assert visible("größe ü 日本") == "größe ü 日本"


@pytest.mark.parametrize("raw,shown", [
    ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),  # a window title
    ("a\x7fb", "a\\x7fb"), ("\x9b31m", "\\x9b31m"),  # DEL, a C1 CSI
    ("ab\u202etxt.exe", "ab\\u202etxt.exe"),  # a bidi override
    ("rm\u200b -rf", "rm\\u200b -rf"),  # a zero-width space
    ("tag\U000e0041", "tag\\U000e0041"),  # a tag character (Cf)
    ("caf\udce9", "caf\\xe9"),  # a byte that was not UTF-8 (surrogateescape)
])
def test_what_could_act_or_hide_is_escaped(raw: str, shown: str) -> None:
    assert visible(raw) == shown


def test_multi_line_text_keeps_its_lines_and_a_field_does_not() -> None:
    assert visible("one\n\ttwo") == "one\n\ttwo"
    assert field("one\n\ttwo") == "one\\x0a\\x09two"
    assert field(42) == "42"


def test_data_escapes_every_string_value_and_keeps_the_shape() -> None:
    report = {"name": "x\x1b[2J", "n": 3, "list": ["ok", "a\nb"], "pair": ("\x07", None)}
    assert data(report) == {"name": "x\\x1b[2J", "n": 3, "list": ["ok", "a\\x0ab"], "pair": ("\\x07", None)}


def test_json_text_is_the_same_document_but_inert() -> None:
    doc = {"cmd": "echo \u202eevil\x7f", "emoji": "\U0001F600\u200d", "raw": "caf\udce9"}
    text = json_text(json.dumps(doc, ensure_ascii=False, indent=2))
    assert text.isascii() or all(ch.isprintable() or ch == "\n" for ch in text)
    back = json.loads(text)
    assert back["cmd"] == doc["cmd"] and back["emoji"] == doc["emoji"]
    assert "\u202e" not in text and "\x7f" not in text and "\u200d" not in text


@given(st.text())
def test_a_field_never_holds_a_control_or_format_character(text: str) -> None:
    """(Unassigned code points are shown: a newer terminal may know them, and none of them acts.)"""
    shown = field(text)
    assert not [ch for ch in shown if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")]
