"""A built-in's text never goes past its `max_bytes`, cut at a line, with a line that says so."""

from __future__ import annotations

from hypothesis import given, strategies as st

from wrapagent.hooks.builtins.truncate import TRUNCATED, cap_text


def test_cap_text_cuts_at_line_boundary_within_budget() -> None:
    text = "\n".join(f"line {i:02d}" for i in range(20))
    out = cap_text(text, 40)
    assert out == "line 00\nline 01\nline 02\n" + TRUNCATED
    assert len(out.encode()) <= 40
    assert cap_text("short", 40) == "short"
    assert cap_text("x" * 100, 5) == TRUNCATED


def test_cap_text_never_splits_a_multibyte_character() -> None:
    out = cap_text("é" * 100, 30)  # one long line: cut inside the line
    assert out.endswith(TRUNCATED)
    assert len(out.encode()) <= 30
    out.encode("utf-8")  # valid


def test_text_within_the_cap_is_kept_without_its_trailing_newlines() -> None:
    assert cap_text("one\ntwo\n\n", 100) == "one\ntwo"


@given(st.text(), st.integers(min_value=len(TRUNCATED.encode()) + 1, max_value=400))
def test_the_result_never_exceeds_the_cap(text: str, cap: int) -> None:
    out = cap_text(text, cap)
    assert len(out.encode("utf-8")) <= cap
    assert out == text.rstrip("\n") or out.endswith(TRUNCATED)
