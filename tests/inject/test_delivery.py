"""The blocks go into the composer as one bracketed paste, or as typed chunks a gap apart."""

from __future__ import annotations

from hypothesis import given, strategies as st

from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.delivery import PASTE_BEGIN, PASTE_FINISH, delivered_text, delivery_chunks, now_iso, split_utf8

BLOCK = '<prompt-guard name="g">\n\tindented é\n</prompt-guard>\n\n'


def test_a_paste_tool_gets_one_bracketed_paste_with_its_tabs() -> None:
    codex = adapter_for("codex")
    assert delivered_text(codex, BLOCK) == BLOCK
    assert delivery_chunks(codex, BLOCK, 5.0) == [(5.0, PASTE_BEGIN + BLOCK.encode() + PASTE_FINISH)]


def test_a_typed_tool_gets_chunks_a_gap_apart_and_spaces_for_tabs() -> None:
    claude = adapter_for("claude")
    text = BLOCK * 40
    chunks = delivery_chunks(claude, text, 1.0)
    assert b"".join(c for _, c in chunks) == text.expandtabs(4).encode() and b"\t" not in chunks[0][1]
    assert all(len(c) <= claude.typed_chunk_bytes for _, c in chunks)
    assert [t for t, _ in chunks] == [1.0 + k * claude.typed_gap_secs for k in range(len(chunks))]


@given(st.text(), st.integers(min_value=4, max_value=64))
def test_chunks_never_split_a_character(text: str, size: int) -> None:
    data = text.encode()
    pieces = split_utf8(data, size)
    assert b"".join(pieces) == data and all(0 < len(p) <= size for p in pieces)
    for piece in pieces:
        piece.decode("utf-8")  # each one whole


def test_the_record_time_is_utc_iso() -> None:
    assert now_iso().endswith("+00:00")
