"""The tool's screen as the user sees it: drawn with cursor moves, resized, and never broken by odd bytes."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from wrapagent.inject.screen import Screen


def test_text_drawn_out_of_order_with_cursor_moves_reads_as_shown() -> None:
    screen = Screen(4, 20)
    screen.feed(b"\x1b[3;1H\xe2\x94\x80\xe2\x94\x80 rule\x1b[1;1Htop line\x1b[2;3H\xe2\x9d\xaf ")
    assert screen.text().split("\n") == ["top line", "  \u276f", "\u2500\u2500 rule", ""]


def test_private_sgr_is_not_a_rendition_and_breaks_nothing() -> None:
    screen = Screen(2, 20)
    screen.feed(b"\x1b[>4;2m\x1b[?4mready")  # xterm modifyOtherKeys, as gemini sends it
    assert screen.text().startswith("ready") and screen.errors == 0


def test_a_resize_follows_the_terminal() -> None:
    screen = Screen(2, 5)
    screen.resize(3, 10)
    screen.feed(b"0123456789")
    assert screen.text().split("\n")[0] == "0123456789"


def test_a_closed_screen_takes_no_more_output() -> None:
    screen = Screen(2, 10)
    screen.feed(b"kept")
    screen.close()
    screen.feed(b"\x1b[2Jdropped")
    screen.resize(5, 5)
    assert screen.text().startswith("kept")


@settings(max_examples=200)
@given(st.lists(st.binary(max_size=64), max_size=10))
def test_any_bytes_leave_a_screen_that_still_reads(chunks: list[bytes]) -> None:
    screen = Screen(5, 20)
    for chunk in chunks:
        screen.feed(chunk)
    screen.feed(b"\x1b[H\x1b[2Jafter")
    assert screen.text().startswith("after")
