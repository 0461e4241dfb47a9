"""The modes a tool turned on are undone at its end, and put back when its screen returns (job control).

`ModeTracker` is fed the tool's output as the output thread reads it: in
chunks cut anywhere, sequences split across them. What it says must undo
exactly what is still on, in an order that leaves the user on their shell's
screen, and redo exactly that, in the order that puts the tool's modes on the
tool's screen.
"""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from wrapagent.proxy.terminal_modes import ModeTracker

TUI_START = (b"\x1b[?1049h\x1b[?25l\x1b[?1000;1006h\x1b[>1u\x1b[>3u\x1b[=5;1u\x1b[>4;2m\x1b[?2004h"
             b"hello \x1b[1;31mred\x1b[0m")


def fed(*chunks: bytes) -> ModeTracker:
    tracker = ModeTracker()
    for chunk in chunks:
        tracker.feed(chunk, len(chunk))
    return tracker


def test_reset_undoes_everything_still_on_with_the_alternate_screen_last() -> None:
    assert fed(TUI_START).reset_sequence() == (
        b"\x1b[<2u\x1b[=0;1u\x1b[>4;0m"  # keyboard: both pushes popped, flags cleared, modifyOtherKeys off
        b"\x1b[?25h\x1b[?1000l\x1b[?1006l\x1b[?2004l"  # cursor shown again (on by default), the rest off
        b"\x1b[?1049l")  # the shell's screen back last


def test_reapply_redoes_the_same_modes_with_the_alternate_screen_first() -> None:
    assert fed(TUI_START).reapply_sequence() == (
        b"\x1b[?1049h"
        b"\x1b[?25l\x1b[?1000h\x1b[?1006h\x1b[?2004h"
        b"\x1b[>1u\x1b[>3u\x1b[=5;1u\x1b[>4;2m")  # the pushes again, in order, with their own flags


def test_a_tool_that_cleaned_up_needs_nothing() -> None:
    tracker = fed(TUI_START, b"\x1b[?2004l\x1b[?1000;1006l\x1b[?25h\x1b[<2u\x1b[=0;1u\x1b[>4;0m\x1b[?1049l")
    assert tracker.reset_sequence() == b"" and tracker.reapply_sequence() == b""


def test_plain_output_changes_nothing() -> None:
    tracker = fed(b"just text\r\n", b"\x1b[1mbold\x1b[0m and \x1b[2J cleared")
    assert tracker.changed == {} and tracker.reset_sequence() == b""


def test_modes_on_by_default_are_turned_back_on_and_off_again() -> None:
    tracker = fed(b"\x1b[?7l\x1b[?47h\x1b[?1h")
    assert tracker.reset_sequence() == b"\x1b[?1l\x1b[?7h\x1b[?47l"
    assert tracker.reapply_sequence() == b"\x1b[?47h\x1b[?1h\x1b[?7l"


def test_a_pop_of_more_than_was_pushed_leaves_nothing_to_pop() -> None:
    tracker = fed(b"\x1b[>1u\x1b[<5u")
    assert (tracker.kitty_pushed, tracker.kitty_stack) == (0, [])
    assert tracker.reset_sequence() == b""


@pytest.mark.parametrize("cut", range(1, len(TUI_START)))
def test_a_sequence_cut_between_two_reads_is_still_read(cut: int) -> None:
    whole = fed(TUI_START)
    split = fed(TUI_START[:cut], TUI_START[cut:])
    assert (split.reset_sequence(), split.reapply_sequence()) == (whole.reset_sequence(), whole.reapply_sequence())


_SEQUENCES = st.sampled_from([b"\x1b[?1049h", b"\x1b[?1049l", b"\x1b[?25l", b"\x1b[?25h", b"\x1b[?1002h",
                              b"\x1b[?1002l", b"\x1b[?2004h", b"\x1b[?2004l", b"\x1b[?7l", b"\x1b[?7h", b"text",
                              b"\x1b[31m", b"\r\n"])


@given(st.lists(_SEQUENCES, max_size=30))
def test_reapply_after_reset_leaves_the_tool_as_it_was(parts: list[bytes]) -> None:
    """Reset, then reapply, fed back in: the same modes differ from the defaults as before (a round trip)."""
    tool = fed(b"".join(parts))
    after = fed(b"".join(parts), tool.reset_sequence())
    assert after.reset_sequence() == b""
    again = fed(b"".join(parts), tool.reset_sequence(), tool.reapply_sequence())
    assert {m: on for m, on in again.changed.items() if on} == {m: on for m, on in tool.changed.items() if on}
