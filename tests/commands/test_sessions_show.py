"""What `sessions list` and `sessions show` make of a record's fields, each one printed inert."""

from __future__ import annotations

import signal

import pytest

from wrapagent.commands.sessions_show import (format_duration, format_exit, format_injected, format_time, injected,
                                              ready_text, render_list)


@pytest.mark.parametrize("seconds,text", [(1.234, "1.23s"), (42.25, "42.2s"), (61, "1m01s"), (3725, "1h02m"),
                                          (None, "-"), (True, "-")])
def test_durations(seconds: object, text: str) -> None:
    assert format_duration(seconds) == text


def test_times_are_local_and_odd_ones_are_shown_as_they_are() -> None:
    assert format_time(None) == "-" and format_time("yesterday") == "yesterday"
    assert format_time("2026-03-09T10:00:00") == "2026-03-09 10:00:00"


@pytest.mark.parametrize("record,text", [
    ({"exit_code": 0}, "0"), ({"exit_code": 130, "signal": signal.SIGINT}, "130 (SIGINT)"),
    ({"exit_code": 1, "signal": 250}, "1 (signal 250)"), ({"state": "blocked"}, "blocked"),
    ({"state": "abandoned"}, "abandoned"), ({"state": "finished"}, "-"),
])
def test_exit_column(record: dict, text: str) -> None:
    assert format_exit(record) == text


def test_whether_the_blocks_went_in() -> None:
    assert injected({"injection": {"status": "submitted"}})
    assert format_injected({"injection": {"status": "delivered"}}) == "yes"
    assert format_injected({"injection": {"status": "lost"}}) == "no (lost)" and format_injected({}) == "no"


def test_which_rule_saw_the_tool_ready() -> None:
    assert ready_text({"ready_after_s": 1.2, "ready_by": "marker"}, "codex") == \
        "ready after 1.20s (its own screen markers)"
    assert ready_text({"ready_after_s": 2, "ready_by": "generic"}, "codex") == \
        "ready after 2.00s (generic rule: codex's own markers did not show)"
    assert ready_text({"ready_by": "generic"}, "aider") == "ready (generic rule)"
    assert ready_text({}, "codex") is None


def test_a_project_name_from_a_hostile_repository_cannot_drive_the_terminal() -> None:
    record = {"id": "01KLIST", "tool": "codex", "project_root": "/p/evil\x1b]0;pwned\x07", "exit_code": 0,
              "started_at": "2026-03-09T10:00:00", "duration_s": 3}
    table = render_list([record], 1)
    assert "\x1b" not in table and "\\x1b]0;pwned\\x07" in table and "01KLIST" in table
