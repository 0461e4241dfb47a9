"""The composer line followed from the user's keys alone: what was submitted, and when it cannot be told."""

from __future__ import annotations

from wrapagent.inject.composer import Composer, Submission
from wrapagent.inject.keys import tokenize


def feed(composer: Composer, data: bytes) -> list[Submission]:
    return [s for tok in tokenize(data) if (s := composer.feed(tok)) is not None]


def test_typed_text_erased_and_submitted() -> None:
    (sub,) = feed(Composer(), "/clex\x7far\r".encode())
    assert (sub.text, sub.pasted, sub.unknown) == ("/clear", False, False)
    assert sub.is_command(("/clear", "/new")) and sub.is_command_line(("/clear",))


def test_a_backslash_before_enter_and_a_paste_do_not_submit() -> None:
    composer = Composer()
    assert feed(composer, b"line one\\\r") == []
    assert feed(composer, b"\x1b[200~pasted\r\x1b[201~") == []
    (sub,) = feed(composer, b"\r")
    assert sub.pasted and not sub.is_command_like(("/",))


def test_a_key_it_cannot_read_makes_the_line_unknown_and_ctrl_c_clears_it() -> None:
    composer = Composer()
    composer.now = 7.0
    feed(composer, b"ab\x1b[Acd")
    assert composer.unknown and composer.unknown_at == 7.0 and composer.typed_since_unknown == "cd"
    feed(composer, b"\x03")
    assert not composer.unknown and not composer.has_text


def test_esc_clears_only_when_the_tool_does() -> None:
    keeps, clears = Composer(), Composer(esc_clears=True)
    for composer in (keeps, clears):
        feed(composer, b"text\x1b")
    assert keeps.unknown and not clears.has_text and not clears.unknown


def test_terminal_replies_are_not_typing_and_an_empty_enter_is_empty() -> None:
    composer = Composer()
    (sub,) = feed(composer, b"\x1b[12;1R\x1b[I\r")
    assert sub.empty


def test_commands_with_arguments_and_menus() -> None:
    composer = Composer()
    feed(composer, b"  /mod")
    assert composer.holds_command(("/",))
    (sub,) = feed(composer, b"el gpt\r")
    assert sub.is_command_line(("/model",)) and not sub.is_command(("/model",)) and sub.is_command_like(("/",))
