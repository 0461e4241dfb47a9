"""The compaction watch: a notice appearing during a turn is one compaction, nothing else is."""

from __future__ import annotations

from pathlib import Path

from wrapagent.inject.compaction_watch import REDRAW_SECS, CompactionWatch
from wrapagent.inject.screen_model import model_for

SCREENS = Path(__file__).resolve().parent.parent / "screens"
NOTICE = "• Context compacted · 0s"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def screen(*lines: str) -> str:
    return "\n".join(["  >_ OpenAI Codex (v0.169.0)", "", *lines, "", "› Ask Codex to do anything",
                      "", "  mock-model default · ~/proj"])


def watch() -> tuple[CompactionWatch, Clock]:
    clock = Clock()
    return CompactionWatch(model_for("codex"), clock), clock


def test_a_notice_appearing_in_a_turn_is_one_compaction() -> None:
    w, _ = watch()
    w.observe(screen("› first", "• MOCK-REPLY-1"))
    w.submitted()
    w.observe(screen("› first", "• MOCK-REPLY-1", "› second"))
    assert not w.take()
    w.observe(screen("› first", "• MOCK-REPLY-1", "› second", NOTICE))
    assert w.take()
    assert not w.take()


def test_once_per_turn_and_again_in_the_next() -> None:
    w, _ = watch()
    w.observe(screen())
    w.submitted()
    w.observe(screen(NOTICE))
    w.observe(screen(NOTICE, "• MOCK-REPLY-1", NOTICE))  # a second one in the same turn
    assert w.take()
    assert not w.take()
    w.submitted()
    w.observe(screen(NOTICE, "• MOCK-REPLY-1", NOTICE, "› again", NOTICE))
    assert w.take()


def test_a_notice_already_on_the_screen_or_outside_a_turn_is_none() -> None:
    w, _ = watch()
    w.observe(screen(NOTICE))          # the first reading: nothing to compare with
    w.submitted()
    w.observe(screen(NOTICE, "› next"))
    assert not w.take()
    w, _ = watch()
    w.observe(screen())
    w.observe(screen(NOTICE))          # no submission: no turn
    assert not w.take()


def test_a_notice_that_scrolled_off_and_a_new_one_count() -> None:
    w, _ = watch()
    w.observe(screen(NOTICE))
    w.submitted()
    w.observe(screen("• MOCK-REPLY-9"))   # the old notice scrolled off
    w.observe(screen("• MOCK-REPLY-9", NOTICE))
    assert w.take()


def test_a_typed_compact_or_a_reset_mutes_the_turn() -> None:
    w, _ = watch()
    w.observe(screen())
    w.submitted()
    w.mute()
    w.observe(screen(NOTICE))
    assert not w.take()


def test_a_redraw_after_a_resize_is_no_compaction() -> None:
    w, clock = watch()
    w.observe(screen(NOTICE))
    w.submitted()
    w.resized()
    w.observe(screen())                 # cleared
    clock.now += 1
    w.observe(screen(NOTICE))           # redrawn
    assert not w.take()
    clock.now += REDRAW_SECS
    w.observe(screen())
    w.observe(screen(NOTICE, NOTICE))
    assert w.take()


def test_replies_and_messages_quoting_the_notices_are_none() -> None:
    """The recorded look-alike screens, shown to a watch in a turn after a blank screen."""
    for path in sorted(SCREENS.glob("*/*/*compacted-lookalike*.txt")):
        w = CompactionWatch(model_for(path.parts[-3]), Clock())
        w.observe("")
        w.submitted()
        w.observe(path.read_text(encoding="utf-8"))
        assert not w.take(), path
