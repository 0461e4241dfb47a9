"""The delivery receipt: the blocks on the screen before the user's keys go on."""

from __future__ import annotations

from wrapagent.inject import receipt
from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.injector import SessionInjector

PREFIX = '<system-reminder>\nctx line\n</system-reminder>\n<prompt-guard name="g">\nguard says hi\n</prompt-guard>\n\n'
READY_SCREEN = b"\x1b[?2004hbanner\r\ndemo> "
NUDGE = (b"\x1b[2J\x1b[H  Make auto mode your default permission mode?\r\n\r\n"
         b"  \xe2\x9d\xaf Yes, set auto mode as my default permission mode\r\n    No, keep manual mode\r\n")


def test_the_text_itself_is_a_receipt_with_blanks_as_drawn() -> None:
    screen = "\u276f\u00a0<system-reminder>\n  ctx   line\n  </system-reminder>\n  <prompt-guard name=\"g\">"
    assert receipt.verdict(screen, True, PREFIX, dialog=False) == receipt.SHOWN


def test_a_placeholder_is_a_receipt() -> None:
    for shown in ("[Pasted text #1 +6 lines]", "[Pasted Content 1200 chars]", "[Pasted Text: 6 lines]",
                  "[Pasted ~6 lines]"):
        assert receipt.verdict(f"> {shown}", True, PREFIX, dialog=False) == receipt.SHOWN


def test_a_long_last_line_is_probed_by_its_start_only() -> None:
    text = "first\n" + "x" * 200 + "\n\n"
    assert receipt.verdict("x" * 80 + "\n" + "x" * 80, True, text, dialog=False) == receipt.SHOWN


def test_no_receipt_says_why() -> None:
    assert receipt.verdict("", False, PREFIX, dialog=False) == receipt.NOTHING_DRAWN
    assert receipt.verdict("something else", True, PREFIX, dialog=False) == receipt.NOT_SHOWN
    assert receipt.verdict("\u276f Yes", True, PREFIX, dialog=True) == receipt.DIALOG
    assert receipt.retry_is_safe(receipt.NOTHING_DRAWN)
    assert not receipt.retry_is_safe(receipt.NOT_SHOWN) and not receipt.retry_is_safe(receipt.DIALOG)


def test_the_notice_is_one_line_on_the_last_row_cursor_kept() -> None:
    line = receipt.screen_notice("cl\x1baude", "the guard blocks", receipt.REASONS[receipt.DIALOG])
    assert line.startswith(b"\x1b7\x1b[999;1H") and line.endswith(b"\x1b8")
    assert b"\n" not in line and b"\x1baude" not in line


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def ready_injector() -> tuple[SessionInjector, Clock]:
    clock = Clock()
    inj = SessionInjector(adapter_for("demo"), rows=24, cols=80, get_prefix=lambda: PREFIX,
                          wake_fd=None, clock=clock)
    inj.on_output(READY_SCREEN, clock.t)
    clock.t += 0.2
    inj.poll(clock.t)
    assert inj.state == "armed"
    return inj, clock


def test_a_dialog_over_the_composer_is_not_delivered_and_the_user_is_told() -> None:
    inj, clock = ready_injector()
    assert inj.on_input(b"h", clock.t) == b""
    assert PREFIX.encode() in inj.poll(clock.t)
    inj.on_output(NUDGE, clock.t + 0.01)                    # the dialog took the keys
    clock.t += 2
    assert inj.poll(clock.t) == b""                         # (an echo may still come)
    clock.t += receipt.NOTHING_DRAWN_WAIT_SECS
    assert inj.poll(clock.t) == b"h"                        # the message goes on, once
    assert inj.report.status == "not delivered" and inj.report.attempts == 1
    assert any("dialog" in n for n in inj.report.notes)
    assert b"did not reach demo's composer" in inj.screen_notice
    inj.on_input(b"\r", clock.t)
    assert inj.report.status == "not delivered"             # submitted, but without the blocks


def test_nothing_drawn_writes_the_blocks_once_more() -> None:
    inj, clock = ready_injector()
    inj.on_input(b"h", clock.t)
    first = inj.poll(clock.t)
    clock.t += 2
    assert inj.poll(clock.t) == b""                         # nothing drawn: a slow echo gets longer
    clock.t += receipt.NOTHING_DRAWN_WAIT_SECS
    assert inj.poll(clock.t) == first                       # the same blocks again, keys still held
    inj.on_output(PREFIX.replace("\n", "\r\n").encode(), clock.t + 0.01)
    clock.t += 0.2
    assert inj.poll(clock.t) == b"h"
    assert inj.report.status == "delivered" and inj.report.attempts == 2


def test_a_late_echo_after_other_redraws_is_a_receipt() -> None:
    """Measured on claude under a load of 25: its redraws came at once, the echo of the typed blocks
    1.5 s later (`settle_max_secs`). It was called not delivered although the model got them, and
    the next message would have got a second set."""
    inj, clock = ready_injector()
    inj.on_input(b"h", clock.t)
    inj.poll(clock.t)
    inj.on_output(b"\x1b[H\x1b[2Kdemo> ", clock.t + 0.01)     # a redraw, not the blocks
    clock.t += inj.adapter.settle_max_secs + 0.05
    assert inj.poll(clock.t) == b""                         # still waiting for the echo
    inj.on_output(PREFIX.replace("\n", "\r\n").encode(), clock.t)
    clock.t += 0.1
    assert inj.poll(clock.t) == b"h"
    assert inj.report.status == "delivered" and inj.report.attempts == 1


def test_nothing_drawn_twice_is_not_delivered() -> None:
    inj, clock = ready_injector()
    inj.on_input(b"h", clock.t)
    inj.poll(clock.t)
    clock.t += receipt.NOTHING_DRAWN_WAIT_SECS
    inj.poll(clock.t)
    clock.t += receipt.NOTHING_DRAWN_WAIT_SECS
    assert inj.poll(clock.t) == b"h"
    assert inj.report.status == "not delivered" and inj.report.attempts == 2
    assert inj.screen_notice


def test_in_a_whole_session_the_next_message_gets_the_blocks_after_an_undelivered_one() -> None:
    clock = Clock()

    class Turns:
        def submitted(self, now: float, text: str = "") -> None: ...
        def resumed(self, now: float) -> None: ...
        def deadline(self, last_output: float) -> float | None: return None
        def poll(self, now: float, last_output: float) -> None: ...

    inj = SessionInjector(adapter_for("demo"), rows=24, cols=80, get_prefix=lambda: PREFIX,
                          wake_fd=None, clock=clock, turns=Turns())
    inj.on_output(READY_SCREEN, clock.t)
    clock.t += 0.2
    inj.poll(clock.t)
    inj.on_input(b"h", clock.t)
    inj.poll(clock.t)
    inj.on_output(NUDGE, clock.t + 0.01)
    clock.t += receipt.NOTHING_DRAWN_WAIT_SECS
    assert inj.poll(clock.t) == b"h"
    clock.t += 0.3                                           # typed well after the "h" went
    inj.on_input(b"\r", clock.t)                             # answers the dialog, or goes bare
    assert inj.state == "wait-ready"
    inj.on_output(b"\x1b[2J\x1b[Hdemo> ", clock.t + 0.01)   # the composer is back
    clock.t += 0.5
    inj.poll(clock.t)
    assert inj.state == "armed"
    assert inj.on_input(b"n", clock.t) == b""
    assert PREFIX.encode() in inj.poll(clock.t)
    assert [(r.message, r.status) for r in inj.reports] == [(1, "not delivered"), (2, "pending")]


def test_text_typed_before_the_ready_screen_and_shown_in_it_is_a_begun_message() -> None:
    """Typed on a frame before the ready one, still typing when it comes: the blocks never go
    into the middle of it (measured on claude: `typed at o<system-reminder>…nce`)."""
    clock = Clock()
    inj = SessionInjector(adapter_for("demo"), rows=24, cols=80, get_prefix=lambda: PREFIX,
                          wake_fd=None, clock=clock)
    assert inj.on_input(b"typed at o", clock.t) == b"typed at o"        # before ready: passes
    inj.on_output(b"\x1b[?2004hbanner\r\ndemo> typed at o", clock.t)
    clock.t += 0.2
    inj.poll(clock.t)
    assert inj.state == "command"
    assert inj.on_input(b"nce", clock.t) == b"nce"                      # no blocks in the middle
    inj.on_input(b"\r", clock.t)
    assert inj.state == "armed"                                         # the next message gets them
    assert inj.on_input(b"n", clock.t) == b""


def test_a_one_key_answer_before_the_ready_screen_begins_no_message() -> None:
    clock = Clock()
    inj = SessionInjector(adapter_for("demo"), rows=24, cols=80, get_prefix=lambda: PREFIX,
                          wake_fd=None, clock=clock)
    inj.on_input(b"1", clock.t)                                          # a start-up dialog's answer
    inj.on_output(READY_SCREEN, clock.t)
    clock.t += 0.2
    inj.poll(clock.t)
    assert inj.state == "armed"
