"""A built-in's text never goes past its `max_bytes`, cut at a line, with a line that says so."""

from __future__ import annotations

from hypothesis import given, strategies as st

from wrapagent.hooks.builtins.truncate import TRUNCATED, cap_text


def test_text_within_the_cap_is_kept_without_its_trailing_newlines() -> None:
    assert cap_text("one\ntwo\n\n", 100) == "one\ntwo"


def test_text_over_the_cap_is_cut_at_a_line_and_marked() -> None:
    text = "\n".join(f"line {i}" for i in range(100))
    capped = cap_text(text, 60)
    assert capped.endswith("\n" + TRUNCATED) and len(capped.encode()) <= 60
    kept = capped.split("\n")[:-1]
    assert kept == [f"line {i}" for i in range(len(kept))]  # whole lines, from the start


def test_a_cap_smaller_than_the_marker_gives_the_marker() -> None:
    assert cap_text("x" * 100, 5) == TRUNCATED


def test_a_line_longer_than_the_cap_is_cut_between_characters() -> None:
    capped = cap_text("é" * 100, 40)
    kept, marker = capped.split("\n")
    assert marker == TRUNCATED and kept == "é" * len(kept) and len(capped.encode()) <= 40


@given(st.text(), st.integers(min_value=len(TRUNCATED.encode()) + 1, max_value=400))
def test_the_result_never_exceeds_the_cap(text: str, cap: int) -> None:
    out = cap_text(text, cap)
    assert len(out.encode("utf-8")) <= cap
    assert out == text.rstrip("\n") or out.endswith(TRUNCATED)
