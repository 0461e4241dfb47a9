"""The user's terminal: raw mode always undone, sizes read and set, on a real pseudo-terminal pair."""

from __future__ import annotations

import os
import pty
import termios

import pytest

from wrapagent.proxy.terminal import copy_winsize, get_winsize, is_tty, make_raw, raw_mode, set_winsize


@pytest.fixture
def pair():
    leader, follower = pty.openpty()
    yield leader, follower
    for fd in (leader, follower):
        try:
            os.close(fd)
        except OSError:
            pass


def test_raw_mode_passes_every_key_and_puts_the_settings_back(pair) -> None:
    _, follower = pair
    before = termios.tcgetattr(follower)
    with raw_mode(follower) as saved:
        assert saved == before
        now = termios.tcgetattr(follower)
        assert not now[3] & (termios.ECHO | termios.ICANON | termios.ISIG)  # Ctrl-C is a byte, not a signal
        assert not now[1] & termios.OPOST and now[6][termios.VMIN] == 1
    assert termios.tcgetattr(follower) == before


def test_the_settings_come_back_after_an_exception_too(pair) -> None:
    _, follower = pair
    before = termios.tcgetattr(follower)
    with pytest.raises(RuntimeError):
        with raw_mode(follower):
            raise RuntimeError("the tool crashed")
    assert termios.tcgetattr(follower) == before


def test_not_a_terminal_is_left_alone(tmp_path) -> None:
    with open(tmp_path / "file", "w") as f:
        with raw_mode(f.fileno()) as saved:
            assert saved is None
        assert not is_tty(f.fileno()) and get_winsize(f.fileno()) is None
    assert not is_tty(987654)


def test_sizes_are_read_set_and_copied(pair) -> None:
    leader, follower = pair
    set_winsize(leader, (30, 100, 0, 0))
    assert get_winsize(follower) == (30, 100, 0, 0)
    other_leader, other_follower = pty.openpty()
    try:
        copy_winsize(follower, other_leader)
        assert get_winsize(other_follower)[:2] == (30, 100)
        set_winsize(leader, (0, 0, 0, 0))  # an unset size is not copied over a good one
        copy_winsize(follower, other_leader)
        assert get_winsize(other_follower)[:2] == (30, 100)
    finally:
        os.close(other_leader)
        os.close(other_follower)


def test_make_raw_does_not_change_its_input(pair) -> None:
    _, follower = pair
    attrs = termios.tcgetattr(follower)
    copy = [list(a) if isinstance(a, list) else a for a in attrs]
    make_raw(attrs)
    assert attrs == copy
