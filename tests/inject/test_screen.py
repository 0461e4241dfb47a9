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


def test_feeding_emulates_nothing_and_a_flood_costs_a_reading_at_most_twice_the_bound(monkeypatch) -> None:
    """A tool printing megabytes before its composer shows: the output path only keeps chunks,
    and the reading after the flood emulates its tail (never the megabytes)."""
    from wrapagent.inject import screen as screen_module

    emulated: list[int] = []
    real = Screen._emulate
    monkeypatch.setattr(Screen, "_emulate", lambda self, data: (emulated.append(len(data)), real(self, data))[1])
    screen = Screen(5, 40)
    line = b"".join(b"log line %06d \x1b[1mbold\x1b[0m\r\n" % n for n in range(1000))
    for _ in range(300):  # ~11 MB, in chunks of ~38 KB
        screen.feed(line)
    screen.feed(b"\x1b[H\x1b[2J> the composer")
    assert emulated == []
    assert screen.text().split("\n")[0] == "> the composer"
    assert len(emulated) == 1 and emulated[0] <= 2 * screen_module.LAZY_MAX_BYTES


def test_after_a_drop_the_screen_is_drawn_from_a_line_or_a_sequence_not_from_inside_one(monkeypatch) -> None:
    from wrapagent.inject import screen as screen_module

    monkeypatch.setattr(screen_module, "LAZY_MAX_BYTES", 64)
    screen = Screen(3, 30)
    screen.feed(b"x" * 500)
    screen.feed(b"\x1b[31m" + b"y" * 200 + b"\x1b[0m\r\ntail line")  # the cut falls inside the 'y's
    assert screen.text().split("\n") == ["", "tail line", ""]


_OUTPUT_PIECES = (b"ab", b"word ", b"\r\n", b"\x1b[2J", b"\x1b[H", b"\x1b[31m", b"\x1b[0m", b"\x1b[3;5H",
                  b"\x1b[K", b"\x1b[?2004h", "\u00e9".encode(), "\u2500\u276f".encode(), b"\x1b]0;title\x07")


@settings(max_examples=200)
@given(st.lists(st.sampled_from(_OUTPUT_PIECES), max_size=30), st.lists(st.integers(0, 200), max_size=8))
def test_reading_in_between_draws_the_same_screen_as_reading_once(pieces: list[bytes], cuts: list[int]) -> None:
    """Below the bound, when the screen is read changes nothing of what it shows: a TUI's output
    (text, UTF-8, sequences), cut into chunks anywhere (inside a sequence or a character too),
    read after every chunk or once at the end."""
    data = b"".join(pieces)
    bounds = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    once, often = Screen(4, 16), Screen(4, 16)
    for start, end in zip(bounds, bounds[1:]):
        once.feed(data[start:end])
        often.feed(data[start:end])
        often.text()
    assert often.text() == once.text() and often.cursor() == once.cursor()


def test_feed_now_emulates_at_once(monkeypatch) -> None:
    """The followed screen's thread emulates as it goes: its readers never pay for it."""
    emulated: list[bytes] = []
    real = Screen._emulate
    monkeypatch.setattr(Screen, "_emulate", lambda self, data: (emulated.append(data), real(self, data))[1])
    screen = Screen(2, 10)
    screen.feed(b"a")
    screen.feed_now(b"b")
    assert emulated == [b"a", b"b"]  # what was fed before, first
    assert screen.text() == "ab\n" and emulated == [b"a", b"b"]
