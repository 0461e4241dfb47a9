"""The interrupt watch: keys while the agent works, confirmed by the tool's cancel notice.

Notices are the bytes measured on the pinned releases (escape sequences between words,
opencode writing only the cells that changed).
"""

from __future__ import annotations

from wrapagent.inject.interrupts import InterruptWatch, output_text, rule_for

CODEX_NOTICE = b"\x1b[2m\x1b[31m\xe2\x96\xa0 \x1b[39mConversation\x1b[1Cinterrupted - use /feedback"
GEMINI_NOTICE = "\x1b[36mℹ Request cancelled.\x1b[39m".encode()
OPENCODE_NOTICE = "\x1b[5;6H▣\x1b[5;30H · interrupted".encode()


class Turn:
    """The tracker's `working`: a turn under way, or None once the agent waits."""

    def __init__(self) -> None:
        self.turn: int | None = 1

    def __call__(self) -> int | None:
        return self.turn


def watch(tool: str) -> tuple[InterruptWatch, Turn]:
    turn = Turn()
    return InterruptWatch(rule_for(tool), turn), turn


def test_output_text_drops_escapes_and_joins_words() -> None:
    assert output_text(CODEX_NOTICE) == " ■ Conversation interrupted - use /feedback"


def test_esc_while_working_and_the_notice_is_an_interrupt() -> None:
    w, _ = watch("codex")
    w.keys(b"\x1b", 1.0)
    assert w.wants_output
    w.output(CODEX_NOTICE[:20])
    w.output(CODEX_NOTICE[20:])
    assert w.take(1) is True
    assert not w.wants_output and w.take(1) is False  # forgotten at the stop


def test_ctrl_c_counts_for_gemini() -> None:
    w, _ = watch("gemini")
    w.keys(b"\x03", 1.0)
    w.output(GEMINI_NOTICE)
    assert w.take(1) is True


def test_a_key_without_the_notice_is_an_ordinary_stop() -> None:
    logged: list[str] = []
    turn = Turn()
    w = InterruptWatch(rule_for("gemini"), turn, log=logged.append)
    w.keys(b"\x1b", 1.0)                           # closed a popup: the tool said nothing
    w.output(b"\x1b[2K> Type your message")
    assert w.take(1) is False
    assert "no cancel notice" in logged[-1]


def test_claude_needs_no_notice() -> None:
    w, _ = watch("claude")
    w.keys(b"\x1b", 1.0)
    assert not w.wants_output                      # nothing to look for in the output
    assert w.take(1) is True


def test_keys_while_the_agent_waits_are_no_interrupt() -> None:
    w, turn = watch("claude")
    turn.turn = None
    w.keys(b"\x1b", 1.0)
    w.keys(b"\x03", 1.1)
    turn.turn = 2
    assert w.take(2) is False


def test_type_ahead_mode_keys_and_dialog_answers_are_no_interrupt() -> None:
    w, _ = watch("claude")
    w.keys(b"fix the lint too", 1.0)               # type-ahead
    w.keys(b"\x1b[Z", 1.1)                         # shift+tab: the mode key
    w.keys(b"\t", 1.2)                             # opencode's agent switch
    w.keys(b"1", 1.3)                              # a dialog's choice
    w.keys(b"\r", 1.4)
    w.keys(b"\x1b[200~\x1b\x1b[201~", 1.5)          # an ESC inside a paste is text
    w.keys(b"\x1b[I\x1b[<35;10;5M", 1.6)           # focus and mouse reports
    assert w.take(1) is False


def test_esc_on_a_command_menu_is_no_interrupt() -> None:
    w, _ = watch("claude")
    w.keys(b"\x1b", 1.0, command=True)
    assert w.take(1) is False


def test_a_key_in_an_earlier_turn_does_not_mark_a_later_stop() -> None:
    w, turn = watch("claude")
    w.keys(b"\x1b", 1.0)
    turn.turn = 2
    assert w.take(2) is False


def test_opencode_needs_a_second_esc_within_its_window() -> None:
    w, _ = watch("opencode")
    w.keys(b"\x1b", 1.0)
    assert not w.wants_output                      # `esc again to interrupt`
    w.keys(b"\x1b", 9.0)                           # too late: a first press again
    assert not w.wants_output
    w.keys(b"\x1b[<35;1;1M", 9.5)                  # mouse motion does not break the pair
    w.keys(b"\x1b", 10.0)
    assert w.wants_output
    w.output(OPENCODE_NOTICE)
    assert w.take(1) is True


def test_opencode_another_key_between_the_escs_starts_over() -> None:
    w, _ = watch("opencode")
    w.keys(b"\x1b", 1.0)
    w.keys(b"a", 1.2)
    w.keys(b"\x1b", 1.4)
    assert not w.wants_output
    w.output(OPENCODE_NOTICE)
    assert w.take(1) is False


def test_opencode_ctrl_c_is_not_its_interrupt() -> None:
    w, _ = watch("opencode")
    w.keys(b"\x03", 1.0)
    w.keys(b"\x03", 1.1)
    assert w.take(1) is False


def test_the_scan_is_bounded() -> None:
    from wrapagent.inject.interrupts import MAX_SCANNED_BYTES

    w, _ = watch("codex")
    w.keys(b"\x1b", 1.0)
    w.output(b"x" * (MAX_SCANNED_BYTES + 10))
    w.output(CODEX_NOTICE)                         # past the bound: not seen
    assert len(w._output) == MAX_SCANNED_BYTES
    assert w.take(1) is False
