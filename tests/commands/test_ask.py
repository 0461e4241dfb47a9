"""Only a person at a terminal says yes: a pipe, a file, a closed stream or no stream never does."""

from __future__ import annotations

import io
import os
import pty

import pytest

from wrapagent.commands.ask import yes_at_terminal


class Terminal(io.StringIO):
    """A stdin that says it is a terminal and holds what the person typed."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("typed,expected", [("y\n", True), ("YES\n", True), (" yes \n", True), ("n\n", False),
                                            ("\n", False), ("", False), ("yep\n", False)])
def test_the_answer_typed_at_a_terminal(typed: str, expected: bool) -> None:
    out = io.StringIO()
    assert yes_at_terminal(Terminal(typed), out, "Drop them?") is expected
    assert out.getvalue() == "Drop them? [y/N] "


def test_a_yes_from_a_pipe_is_not_read() -> None:
    stdin, out = io.StringIO("y\n"), io.StringIO()
    assert yes_at_terminal(stdin, out, "Drop them?") is False
    assert out.getvalue() == "" and stdin.read() == "y\n"  # not asked, not consumed


def test_a_closed_stdin_is_no() -> None:
    stdin = io.StringIO("y\n")
    stdin.close()  # its isatty raises ValueError
    assert yes_at_terminal(stdin, io.StringIO(), "Remove them?") is False


def test_a_real_pseudo_terminal_is_asked() -> None:
    leader, follower = pty.openpty()
    try:
        os.write(leader, b"yes\n")
        with open(follower, "r", closefd=False) as stdin:
            out = io.StringIO()
            assert yes_at_terminal(stdin, out, "Remove them?") is True
    finally:
        os.close(leader)
        os.close(follower)
