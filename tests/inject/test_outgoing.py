"""wrapagent's own messages (a stop check's continuation) through the injector, on a fake clock.

What must hold, whatever the tool: the text goes in as the blocks do, Enter is a
write of its own at least ENTER_GAP_SECS after the last text byte, nothing is
sent over the user (a key since the stop, text in the composer, a screen without
the empty composer), and keys typed during the delivery follow the Enter in order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.delivery import PASTE_BEGIN, PASTE_FINISH
from wrapagent.inject.injector import ARMED, CHATTING, COMMAND, SessionInjector
from wrapagent.inject import receipt
from wrapagent.inject.outgoing import ENTER_GAP_SECS, SCREEN_RETRY_SECS, SLOW_RETRY_SECS, Outgoing, Request

BP_ON = b"\x1b[?2004h"
SCREENS = Path(__file__).resolve().parent.parent / "screens"


def recorded(path: str) -> bytes:
    """A recorded screen of the real tool (tests/screens/), drawn from the top."""
    text = (SCREENS / path).read_text(encoding="utf-8").rstrip("\n")
    return b"\x1b[H\x1b[2J" + text.replace("\n", "\r\n").encode()


READY = {"demo": BP_ON + b"banner\r\ndemo> ",
         "claude": BP_ON + recorded("claude/2.1.330/empty-start.txt"),
         "opencode": BP_ON + recorded("opencode/1.18.33/empty-start.txt")}
TEXT = '<prompt-guard name="stop_check">\n' + "tests fail " * 40 + "\n</prompt-guard>"


class Turns:
    def __init__(self) -> None:
        self.submitted_at: list[float] = []

    def submitted(self, now: float, text: str = "") -> None:
        self.submitted_at.append(now)

    def resumed(self, now: float) -> None:
        pass

    def deadline(self, last_output: float) -> None:
        return None

    def poll(self, now: float, last_output: float) -> None:
        pass


class Rig:
    """An injector in a chatting session (no blocks), with an Outgoing, driven at fake times."""

    def __init__(self, tool: str, screen: bytes | None = None, inject: bool = False) -> None:
        self.adapter = adapter_for(tool)
        self.turns = Turns()
        self.outgoing = Outgoing(self.adapter, 40, 120, wake=lambda: None)  # the recorded screens
        self.inj = SessionInjector(self.adapter, rows=40, cols=120, get_prefix=lambda: "",
                                   wake_fd=None, inject=inject, turns=self.turns, outgoing=self.outgoing)
        self.writes: list[tuple[float, bytes]] = []
        self._start = 2.0
        self.done: list[tuple[str, str]] = []
        self.output(READY[tool] if screen is None else screen, 0.0)
        self.poll(0.2)
        fallback = self.adapter.fallback_quiet_secs or 0.0
        self.poll(fallback + 0.5)  # the generic rule's bound, if the markers did not show
        assert self.inj.state == (ARMED if inject else CHATTING)

    def output(self, data: bytes, now: float) -> None:
        if self.inj.watch_output:
            self.inj.on_output(data, now)
            self.caught_up()
        else:
            self.inj.last_output = now

    def caught_up(self) -> None:
        """Wait (real time) until the followed screen, a thread of its own, has emulated what the
        tool drew: the fake clock must not run past a loaded machine's emulator. (Under load, a
        reading due at a fake time found it behind every time and the message never went.)"""
        screen = self.outgoing.screen
        if screen is not None:
            assert screen.text(timeout=120) is not None, "the followed screen never caught up"

    def poll(self, now: float) -> None:
        out = self.inj.poll(now)
        if out:
            self.writes.append((now, out))

    def key(self, data: bytes, now: float) -> None:
        out = self.inj.on_input(data, now)
        if out:
            self.writes.append((now, out))
        self.poll(now)

    def post(self, since: float, now: float, echo: bool = True, patient: bool = False) -> None:
        self.outgoing.post(Request(TEXT, since, lambda status, reason, at: self.done.append((status, reason)),
                                   patient=patient))
        seen = len(self.writes)
        self.poll(now)
        if echo and len(self.writes) > seen:
            self.echo(now + 0.001)

    def echo(self, now: float) -> None:
        """The composer shows what was written last (what the receipt reads)."""
        shown = self.writes[-1][1].replace(b"\x1b[200~", b"").replace(b"\x1b[201~", b"")
        self.output(shown.replace(b"\n", b"\r\n"), now)

    def run_until(self, end: float, step: float = 0.001, echo: bool = True) -> None:
        """Advance the clock; the tool echoes each write (its screen changes) right away."""
        now = self.writes[-1][0] if self.writes else self._start
        seen = len(self.writes)
        while now < end:
            now = round(now + step, 6)
            self.poll(now)
            if echo and len(self.writes) > seen:
                seen = len(self.writes)
                self.echo(now)


@pytest.mark.parametrize("tool", ["demo", "claude", "opencode"])
def test_text_then_enter_as_its_own_write_at_least_the_gap_later(tool):
    rig = Rig(tool)
    rig.post(since=1.5, now=2.0)
    rig.run_until(6.0)
    assert rig.done == [("delivered", "")]
    *text_writes, (enter_at, enter) = rig.writes
    assert enter == b"\r"
    sent = b"".join(data for _, data in text_writes)
    if rig.adapter.delivery == "typed":
        assert sent == TEXT.encode() and len(text_writes) > 1
    else:
        assert sent == PASTE_BEGIN + TEXT.encode() + PASTE_FINISH
    assert enter_at - text_writes[-1][0] >= ENTER_GAP_SECS - 1e-9  # (float sums)
    assert rig.turns.submitted_at == [enter_at]      # the continuation is a turn


def test_a_key_since_the_stop_cancels():
    rig = Rig("demo")
    rig.key(b"h", 1.8)
    rig.post(since=1.5, now=2.0)
    rig.run_until(4.0)
    assert rig.done == [("cancelled", "you typed after the agent stopped")]
    assert rig.writes == [(1.8, b"h")]


def test_text_in_the_composer_cancels_even_when_typed_before_the_stop():
    rig = Rig("demo")
    rig.key(b"hal", 1.2)
    rig.post(since=1.5, now=2.0)
    rig.run_until(4.0)
    assert rig.done == [("cancelled", "the composer holds your text")]


def test_a_screen_without_the_empty_composer_cancels():
    rig = Rig("claude")
    rig.output("\x1b[2J\x1b[HDo you want to proceed?\r\n› 1. Yes\r\n  2. No".encode(), 1.2)
    rig.post(since=1.5, now=2.0)
    rig.run_until(2.0 + SCREEN_RETRY_SECS + 1.0, step=0.01)
    assert rig.done == [("cancelled", "the empty composer is not on the screen (a dialog?)")]
    assert rig.writes == []


def test_keys_during_the_delivery_follow_the_enter_in_order():
    rig = Rig("claude")                               # typed delivery: it takes a while
    rig.post(since=1.5, now=2.0)
    rig.key(b"st", 2.01)
    rig.key(b"op\r", 2.02)
    rig.run_until(6.0)
    datas = [data for _, data in rig.writes]
    enter = datas.index(b"\r")
    assert b"".join(datas[:enter]) == TEXT.encode()
    assert datas[enter + 1:] == [b"stop\r"]          # held, then released after wrapagent's Enter
    assert len(rig.turns.submitted_at) == 2          # the continuation, then the user's message


def test_the_tool_ending_reports_what_was_not_sent():
    rig = Rig("demo")
    rig.outgoing.post(Request(TEXT, 1.5, lambda status, reason, at: rig.done.append((status, reason))))
    rig.inj.finalize()
    assert rig.done == [("not delivered", "the tool ended")]


OLD_CODEX = BP_ON + "\x1b[2J\x1b[H\u258c Describe a task\r\n\r\n  mock-model default \u00b7 ~/p".encode()
"""A codex whose composer no marker knows (a release after the adapter was written)."""


def test_when_the_markers_never_showed_a_quiet_screen_that_is_not_a_dialog_is_the_composer():
    """A release the markers miss: before, a stop check's message was never sent."""
    rig = Rig("codex", screen=OLD_CODEX)
    assert rig.inj.report.ready_by == "generic"
    start = rig.adapter.fallback_quiet_secs + 1.0
    rig._start = start
    rig.post(since=start - 0.5, now=start)
    rig.run_until(start + 4.0)
    assert rig.done == [("delivered", "")]
    assert rig.writes[-1][1] == b"\r"


def test_when_the_markers_never_showed_a_dialog_still_cancels():
    rig = Rig("codex", screen=OLD_CODEX)
    start = rig.adapter.fallback_quiet_secs + 1.0
    rig._start = start
    rig.output("\x1b[2J\x1b[HAllow command?\r\n\u203a 1. Yes\r\n  2. No, tell Codex what to do".encode(),
               start - 0.8)
    rig.post(since=start - 0.5, now=start)
    rig.run_until(start + SCREEN_RETRY_SECS + 1.0, step=0.01)
    assert rig.done == [("cancelled", "the empty composer is not on the screen (a dialog?)")]
    assert rig.writes == []


def test_codex_after_a_turn_a_permission_dialog_still_cancels():
    """codex's marker is its `›` prompt glyph, and codex's transcript shows each message of the
    user as `› <message>` (measured, 0.169): that line is on the screen while a permission
    dialog hides the composer. Before, the stop check's message was typed into the dialog and
    its Enter answered it (README: "a permission dialog hides them, and an Enter there would
    answer it")."""
    ready = BP_ON + "\x1b[2J\x1b[H  >_ OpenAI Codex (v0.169.0)\r\n\x1b[20;1H\u203a Ask Codex to do anything\r\n\r\n" \
        "  mock-model default \u00b7 ~/p".encode()
    rig = Rig("codex", screen=ready)
    assert rig.inj.report.ready_by == "marker"
    rig.output("\x1b[5;1H\u203a hello there\r\n\r\n\u2022 MOCK-REPLY-1\r\n\x1b[14;1H\x1b[J"
               "  Would you like to run the following command?\r\n\r\n  $ touch x\r\n\r\n"
               "\u203a 1. Yes, proceed (y)\r\n  2. No, and tell Codex what to do differently (esc)\r\n\r\n"
               "  Press enter to confirm or esc to cancel".encode(), 1.2)
    rig.post(since=1.5, now=2.0)
    rig.run_until(2.0 + SCREEN_RETRY_SECS + 1.0, step=0.01)
    assert rig.done == [("cancelled", "the empty composer is not on the screen (a dialog?)")]
    assert rig.writes == []


def test_no_receipt_no_enter_and_the_user_is_told():
    """The composer never shows the text (a dialog took it, or nothing was drawn): no Enter, which
    could answer a dialog; the request is `not delivered` with the reason; one line for the user."""
    rig = Rig("demo")
    rig.post(since=1.5, now=2.0, echo=False)
    rig.output(b"\x1b[2J\x1b[H  Allow this command?\r\n  \xe2\x9d\xaf 1. Yes\r\n    2. No\r\n", 2.01)
    rig.run_until(6.0, echo=False)
    assert [w for _, w in rig.writes if w == b"\r"] == []
    assert rig.done == [("not delivered", receipt.REASONS[receipt.DIALOG])]
    assert b"wrapagent's message did not reach demo's composer" in rig.inj.screen_notice


@pytest.mark.parametrize("screen", ["codex/0.169.0/empty-after-lookalike-reply.txt",
                                    "claude/2.1.330/empty-after-lookalike-reply.txt",
                                    "codex/0.169.0/empty-resumed-lookalike.txt"])
def test_a_reply_full_of_numbered_yes_no_choices_is_no_dialog(screen):
    """The transcript above the composer shows `1. Yes`, `› 1. Yes, allow once`, `❯ No, exit`,
    "Do you want to proceed?": the continuation still goes (before: cancelled, "a dialog?")."""
    tool = screen.split("/")[0]
    rig = Rig(tool, screen=BP_ON + recorded(screen))
    rig.post(since=1.5, now=2.0)
    rig.run_until(6.0)
    assert rig.done == [("delivered", "")]


@pytest.mark.parametrize("screen", ["codex/0.169.0/dialog-new-where.txt", "claude/2.1.330/dialog-resume-picker.txt"])
def test_a_dialog_of_the_tool_cancels(screen):
    tool = screen.split("/")[0]
    rig = Rig(tool, screen=BP_ON + recorded(screen.replace("dialog-new-where", "empty-start")
                                           .replace("dialog-resume-picker", "empty-start")))
    rig.output(b"\x1b[H\x1b[2J" + recorded(screen), 1.0)
    rig.post(since=1.5, now=2.0)
    rig.run_until(2.0 + SCREEN_RETRY_SECS + 1.0, step=0.01)
    assert rig.done == [("cancelled", "the empty composer is not on the screen (a dialog?)")]


def test_a_composer_that_shows_late_still_gets_the_message():
    """The screen catches up after the stop (a lagging emulator, the end of the turn still being
    drawn): the message is tried again, not cancelled (before: cancelled as "a dialog?" and,
    with the agent idle, never retried)."""
    rig = Rig("claude")
    rig.output(b"\x1b[H\x1b[2J" + recorded("claude/2.1.330/working-thinking.txt"), 1.0)
    rig.post(since=1.5, now=2.0)
    rig.run_until(3.0, step=0.01, echo=False)
    assert rig.done == [] and rig.writes == []            # still working on the screen: waits
    rig.output(b"\x1b[H\x1b[2J" + recorded("claude/2.1.330/empty-after-lookalike-reply.txt"), 3.0)
    rig.run_until(8.0, step=0.01)
    assert rig.done == [("delivered", "")]


def test_a_send_waits_for_the_composer_past_the_retry_bound_and_goes_when_it_shows():
    """A `wrapagent send` (patient) is not dropped when the empty composer takes long to show
    (a lagging emulator, a dialog the user has not answered yet): tried again every
    SLOW_RETRY_SECS until it shows, with no key of the user's since."""
    rig = Rig("claude")
    rig.output("\x1b[2J\x1b[HDo you want to proceed?\r\n› 1. Yes\r\n  2. No".encode(), 1.2)
    rig.post(since=1.5, now=2.0, patient=True)
    rig.run_until(2.0 + 3 * SCREEN_RETRY_SECS, step=0.05, echo=False)
    assert rig.done == [] and rig.writes == []
    assert rig.outgoing.deadline(rig.inj.last_output) <= 2.0 + 3 * SCREEN_RETRY_SECS + SLOW_RETRY_SECS
    rig.output(b"\x1b[H\x1b[2J" + recorded("claude/2.1.330/empty-after-lookalike-reply.txt"), 40.0)
    rig.run_until(45.0, step=0.01)
    assert rig.done == [("delivered", "")]


def test_a_send_waiting_for_the_composer_is_deferred_by_a_key():
    rig = Rig("claude")
    rig.output("\x1b[2J\x1b[HDo you want to proceed?\r\n› 1. Yes\r\n  2. No".encode(), 1.2)
    rig.post(since=1.5, now=2.0, patient=True)
    rig.run_until(2.0 + 2 * SCREEN_RETRY_SECS, step=0.05, echo=False)
    rig.key(b"1", 30.0)                                # the user answers the dialog
    rig.run_until(35.0, step=0.05, echo=False)
    assert rig.done == [("cancelled", "you typed after the agent stopped")]
    assert rig.writes == [(30.0, b"1")]


def test_a_message_the_users_keys_overtook_is_told_while_they_still_own_the_composer():
    """A continuation posted while the user types a command (`/mo`, no Enter): it is cancelled
    at once, so its sender goes on (waiting_for_input fires), instead of waiting for the
    composer to be free again and holding every later stop."""
    rig = Rig("demo", inject=True)                     # the first message is still to come
    rig.key(b"/mo", 1.8)
    assert rig.inj.state == COMMAND
    rig.post(since=1.5, now=2.0)
    assert rig.done == [("cancelled", "you typed after the agent stopped")]
    rig.post(since=3.0, now=3.0)                       # one after the keys: waits for the composer
    rig.run_until(4.0)
    assert rig.done == [("cancelled", "you typed after the agent stopped")]
    assert rig.writes == [(1.8, b"/mo")]
