"""Records keep bytes that are not UTF-8: stored as UTF-8 any JSON reader takes, read back exactly."""

from __future__ import annotations

import json
import os

from hypothesis import given, strategies as st

from wrapagent.history.record_json import ESCAPED_KEY, dumps, escape_bytes, loads, unescape_bytes

LATIN1_DIR = os.fsdecode(b"/home/u/caf\xe9")  # a directory name that is not UTF-8


def test_a_utf8_record_is_plain_json_without_the_escaped_key() -> None:
    record = {"cwd": "/home/u/größe", "argv": ["codex", "hi"]}
    text = dumps(record)
    assert json.loads(text) == record and ESCAPED_KEY not in text


def test_bytes_that_are_not_utf8_are_escaped_listed_and_read_back() -> None:
    record = {"cwd": LATIN1_DIR, "argv": ["codex", "a\\b", LATIN1_DIR], "nested": {"a/b": LATIN1_DIR}}
    text = dumps(record)
    text.encode("utf-8")  # always encodable
    plain = json.loads(text)
    assert plain["cwd"] == "/home/u/caf\\xe9"  # what jq shows
    assert plain[ESCAPED_KEY] == ["/cwd", "/argv/2", "/nested/a~1b"]
    back = loads(text.encode())
    assert back == record and os.fsencode(back["cwd"]) == b"/home/u/caf\xe9"


def test_a_backslash_next_to_an_escape_is_not_mistaken_for_one() -> None:
    text = "C:\\x41" + os.fsdecode(b"\xff")
    assert unescape_bytes(escape_bytes(text)) == text


def test_a_malformed_escape_is_kept_as_it_is() -> None:
    assert unescape_bytes("bad \\xZZ and \\u12") == "bad \\xZZ and \\u12"


def test_compact_output_and_objects_json_cannot_write() -> None:
    assert dumps({"a": 1, "b": [2]}, indent=None) == '{"a":1,"b":[2]}'
    assert json.loads(dumps({"when": object()}, default=lambda o: "an object")) == {"when": "an object"}


def test_pointers_to_nowhere_are_ignored() -> None:
    assert loads(json.dumps({"a": "x", ESCAPED_KEY: ["/missing/0", "", 7, "/a/9"]})) == {"a": "x"}


_TEXT = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from([os.fsdecode(bytes([b])) for b in
                                                                          range(0x80, 0x100)]) | st.just("\\"))


@given(st.recursive(_TEXT | st.integers() | st.none(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(min_size=1), inner,
                                                                                max_size=3),
                    max_leaves=8))
def test_any_record_round_trips(value: object) -> None:
    record = {"v": value}
    assert loads(dumps(record)) == record
