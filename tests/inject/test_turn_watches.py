"""The begin scan: a submitted turn is seen begun from the tool's output, however briefly its
working hint showed (`inject/turn_watches.BeginScan`)."""

from __future__ import annotations

from wrapagent.inject.screen_model import shape_for
from wrapagent.inject.turn_watches import BeginScan
from wrapagent.session.turns import TurnTracker

# codex 0.169 drawing its working line for 0.1 s before a quick reply replaced it (recorded):
# the hint's words styled apart, and the chunk cut in the middle of the last one
CODEX_WORKING = (b"\x1b]0;\xe2\xa0\x8f proj-codex\x07\x1b[?2026h\x1b[?25l\x1b[34;1H\xe2\x80\xa2\x1b[34;3H"
                 b"\x1b[2mWorking\x1b[34;11H(0s \xe2\x80\xa2 \x1b[22m\x1b[1mesc\x1b[22m\x1b[2m to inte",
                 b"rrupt)\x1b[39m\x1b[49m\x1b[0m\x1b[37;3H\x1b[?25h\x1b[?2026l")


def scan(tool: str) -> tuple[TurnTracker, BeginScan]:
    turns = TurnTracker(3.0, lambda n: None, to_wall=str)
    turns.watch_begin = lambda: True
    shape = shape_for(tool)
    assert shape is not None and shape.turns_show_working
    return turns, BeginScan(shape.working, turns)


def test_a_hint_cut_between_two_chunks_and_styled_apart_is_seen() -> None:
    turns, begun = scan("codex")
    turns.submitted(1.0, "fix the tests")
    assert turns.awaits_begin
    begun.output(CODEX_WORKING[0])
    assert turns.awaits_begin
    begun.output(CODEX_WORKING[1])
    assert not turns.awaits_begin


def test_output_before_a_submission_tells_nothing_of_the_next_turn() -> None:
    turns, begun = scan("codex")
    begun.output(CODEX_WORKING[0])               # no turn under way: not looked at, nothing kept
    turns.submitted(1.0, "go")
    begun.output(CODEX_WORKING[1])               # only the end of the hint after the Enter
    assert turns.awaits_begin
    begun.output(b"\x1b[2K" + b"x" * 5000)       # a long output without it
    assert turns.awaits_begin


def test_each_cli_hint_is_seen_in_its_own_drawing() -> None:
    drawn = {"claude": b"\x1b[2m\xe2\x9c\xbb Thinking\xe2\x80\xa6 (esc to interrupt)\x1b[22m",
             "gemini": b"\x1b[35m\xe2\xa0\x8b\x1b[39m Thinking (esc to cancel, 2s)",
             "opencode": b"\x1b[1mesc\x1b[22m\x1b[38;2;128;128;128m interrupt\x1b[0m"}
    for tool, data in drawn.items():
        turns, begun = scan(tool)
        turns.submitted(1.0, "go")
        begun.output(data)
        assert not turns.awaits_begin, tool
