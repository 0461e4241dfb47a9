"""When the tool exits before the blocks were submitted, the record says which of three things happened."""

from __future__ import annotations

from wrapagent.inject.report import InjectionReport, close_unsubmitted


def test_no_message_at_all_is_unused_with_nothing_to_tell() -> None:
    report = InjectionReport()
    assert close_unsubmitted(report, unfinished=None, bare=[]) == ""
    assert (report.status, report.notes) == ("unused", ["no message was submitted"])


def test_a_message_without_the_blocks_is_lost_and_says_why_once() -> None:
    report = InjectionReport()
    why = close_unsubmitted(report, unfinished=None, bare=["typed before ready", "typed before ready"])
    assert report.status == "lost" and report.notes == ["typed before ready"] and why == "typed before ready"


def test_an_unfinished_delivery_is_noted_before_the_outcome() -> None:
    report = InjectionReport(status="delivering")
    why = close_unsubmitted(report, unfinished="the tool exited while the blocks were typed", bare=["pasted"])
    assert report.status == "lost"
    assert why == "the tool exited while the blocks were typed; pasted"


def test_after_a_reset_with_no_message_there_is_nothing_to_say() -> None:
    report = InjectionReport(conversation=2)
    assert close_unsubmitted(report, unfinished=None, bare=[]) == ""
    assert (report.status, report.notes) == ("none", ["no message after the reset"])
