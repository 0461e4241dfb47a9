"""The user's raw input as tokens: a typed message, a submit, a newline, and the terminal's own replies."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from wrapagent.inject import keys
from wrapagent.inject.keys import blank_paste, tokenize


def kinds(data: bytes) -> list[tuple[str, bytes]]:
    return [(t.kind, t.data) for t in tokenize(data)]


def test_text_then_enter() -> None:
    assert kinds("héllo\r".encode()) == [(keys.TEXT, "héllo".encode()), (keys.ENTER, b"\r")]


@pytest.mark.parametrize("data,kind", [
    (b"\n", keys.NEWLINE), (b"\x1b\r", keys.NEWLINE), (b"\x1b[13;2u", keys.NEWLINE),  # shift+enter (kitty)
    (b"\x1b[13u", keys.ENTER), (b"\x7f", keys.BACKSPACE), (b"\x08", keys.BACKSPACE), (b"\x1b[127u", keys.BACKSPACE),
    (b"\x03", keys.INTERRUPT), (b"\x1b[99;5u", keys.INTERRUPT), (b"\x1b", keys.ESCAPE), (b"\x1b[27u", keys.ESCAPE),
    (b"\x01", keys.CONTROL), (b"\x1b[A", keys.KEY), (b"\x1bOP", keys.KEY), (b"\x1bx", keys.KEY),
    (b"\x1b[200~", keys.PASTE_START), (b"\x1b[201~", keys.PASTE_END),
])
def test_one_key(data: bytes, kind: str) -> None:
    assert kinds(data) == [(kind, data)]


@pytest.mark.parametrize("data", [
    b"\x1b[12;40R",  # cursor position report
    b"\x1b[?62;22c", b"\x1b[>1;10;0c",  # device attributes
    b"\x1b[I", b"\x1b[O",  # focus
    b"\x1b[<0;10;5M", b"\x1b[M !!",  # mouse (SGR, X10)
    b"\x1b[?1u", b"\x1b[?2004;1$y", b"\x1b[8;24;80t", b"\x1b[0n",
    b"\x1b]11;rgb:0000/0000/0000\x07", b"\x1b]10;rgb:ffff/ffff/ffff\x1b\\", b"\x1bP>|xterm(388)\x1b\\",
])
def test_what_the_terminal_says_on_its_own_is_a_reply_not_a_key(data: bytes) -> None:
    assert kinds(data) == [(keys.REPLY, data)]


def test_a_reply_in_the_middle_of_typing_is_told_apart() -> None:
    assert [t.kind for t in tokenize(b"ab\x1b[5;1Rcd\r")] == [keys.TEXT, keys.REPLY, keys.TEXT, keys.ENTER]


def test_a_paste_of_blanks_types_no_message() -> None:
    tokens = tokenize(b"\x1b[200~  \n\r\x1b[201~")
    assert blank_paste(tokens, 0)
    assert not blank_paste(tokenize(b"\x1b[200~ x \x1b[201~"), 0)
    assert not blank_paste(tokenize(b"\x1b[200~  \n"), 0)  # cut: its end is in the next read
    assert not blank_paste(tokens, 1)


@given(st.binary(max_size=200))
def test_every_byte_is_in_exactly_one_token_in_order(data: bytes) -> None:
    assert b"".join(t.data for t in tokenize(data)) == data
