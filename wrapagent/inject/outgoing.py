"""Messages wrapagent itself submits: a stop check's continuation (and later, `wrapagent send`).

The one case where wrapagent presses Enter, and only because the user
configured it. The rules, measured on the four CLIs (docs/cli-behaviour.md):

- Only into an empty composer the user is not using: no key from the user
  since the agent stopped (`since`), nothing typed in the composer, and,
  for a tool with ready markers (its empty-composer placeholder), those
  markers on the screen as it is now (a permission dialog hides them: an
  Enter there would answer it). So the screen is followed all session long
  (only when such messages are configured), by a terminal emulator in a
  thread of its own: the output thread only appends each chunk to a buffer,
  so a tool that prints fast is never slowed to the emulator's pace
  (~1.2 MB/s of CPU for pyte on TUI output, measured here).
- The text goes in as the blocks do (bracketed paste, or typed chunks for
  claude); once the screen took it (output quiet `settle_secs`, at most
  `settle_max_secs`), Enter follows as its own write, at least
  ENTER_GAP_SECS after the last text byte.
- The user's keys during the delivery are held and follow the Enter, in
  order, RELEASE_GAP_SECS later (never in the Enter's write): the message
  cannot be cut in half.
- No Enter without a receipt (`receipt.py`): the screen drawn since the text
  was written must show it (or the tool's paste placeholder) by
  `settle_max_secs`; else the message is `not delivered` (the reason given,
  one line on the terminal), and no Enter goes where it may answer a dialog.

Requests come from any thread (`post`); everything else runs on the
proxy's thread under its lock, called by the injector.
"""

from __future__ import annotations

import threading
from collections import deque

from wrapagent.inject import receipt
from wrapagent.inject.delivery import delivery_chunks, now_iso
from wrapagent.inject.followed_screen import FollowedScreen

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.inject.adapters.base import Adapter
    from wrapagent.inject.screen import Screen

IDLE_COMPOSER = {
    # opencode's `Ask anything…` placeholder is gone after the first turn; the composer then
    # shows the agent and model line (`Build · Mock Model Mock LLM`).
    "opencode": (r"Ask anything|Build · |Plan · ",),
}
"""Screen markers of an empty composer after a turn, where they differ from the ready markers."""

ENTER_GAP_SECS = 0.15
"""codex takes an Enter within 120 ms of fast input for a newline; gemini within 40 ms of a paste."""

ENTER_GAPS = {
    # gemini's 40 ms after a paste is a timer of its event loop: on a loaded machine (load 5 on
    # 2 cores) an Enter 0.15 s after the paste still became a newline, the continuation unsent;
    # under 8 test processes on 2 cores, one 0.5 s after gemini had drawn the paste did too.
    # A wait, not a proof: the Enter's outcome is not read back yet (the closing note says so).
    "gemini": 1.0,
}
"""Per tool, where ENTER_GAP_SECS is not enough."""

SCREEN_CATCH_UP_SECS = 0.5
"""At most this long (on the proxy's thread) for the emulator to catch up with the output;
it only lags after a burst, and output has been quiet for `quiet_secs` at a stop."""

SCREEN_RETRY_SECS = 10.0
"""A message whose empty composer is not on the screen yet (the emulator lags behind a burst,
the tool still draws the end of its turn) is tried again every SCREEN_RETRY_GAP_SECS for this
long before it is cancelled: a dialog keeps it from going, a lagging screen does not lose it."""
SCREEN_RETRY_GAP_SECS = 0.25
SLOW_RETRY_SECS = 2.0
"""A patient request (a send) after SCREEN_RETRY_SECS: tried this often until it goes or the user types."""

RELEASE_GAP_SECS = 0.05

TOOL_ENDED = "the tool ended"
"""The reason given to every request still queued when the tool exits (`cancel_all`)."""
"""The user's keys held during a delivery go this long after the Enter: never in its write."""

IDLE = "idle"
DELIVERING = "delivering"
SETTLING = "settling"
ENTER_DUE = "enter-due"
RELEASING = "releasing"


class Request:
    """One message to submit; `done(status, reason, at)` is called once, on the proxy's thread."""

    __slots__ = ("text", "since", "done", "patient")

    def __init__(self, text: str, since: float, done: Callable[[str, str, str | None], None],
                 *, patient: bool = False) -> None:
        self.text = text
        self.since = since  # monotonic: a user key after this cancels the request
        self.done = done
        self.patient = patient
        """A `wrapagent send`: while the agent waits and the user types nothing, it is tried
        again (every SLOW_RETRY_SECS after SCREEN_RETRY_SECS) until the empty composer shows,
        never dropped for a screen that did not catch up. A continuation is about this stop:
        it gives up after SCREEN_RETRY_SECS and the agent may stop."""


class Outgoing:
    """Delivers and submits queued messages into the tool's empty composer (see module docstring)."""

    def __init__(self, adapter: Adapter, rows: int, cols: int, wake: Callable[[], None],
                 log: Callable[[str], None] = lambda m: None) -> None:
        import re

        self.adapter = adapter
        self.log = log
        self._wake = wake
        self._lock = threading.Lock()
        self._queue: deque[Request] = deque()
        self._patterns = [re.compile(p) for p in IDLE_COMPOSER.get(adapter.name, adapter.ready_patterns)]
        self._size = (rows, cols)
        self.screen: FollowedScreen | None = None
        if self._patterns:
            # Followed all along: at a stop the screen is quiet, so an emulator
            # started then would never see the composer that is already drawn.
            self.screen = FollowedScreen(rows, cols)
        self.state = IDLE
        self.current: Request | None = None
        self.last_user_key = float("-inf")
        self._outbox: list[tuple[float, bytes]] = []
        self._last_text_at = 0.0
        self._delivered_at: float | None = None
        self._enter_at = 0.0
        self.held = bytearray()
        self._generic = False
        self._receipt: Screen | None = None
        self._receipt_drawn = False
        self._receipt_read_at = float("-inf")
        self.notice = b""
        """One line for the user's terminal (a message without a receipt); the injector hands it on."""
        self._retry_since: float | None = None
        self._retry_at: float | None = None
        self._retry_slow = False

    # -- any thread ------------------------------------------------------------------

    def post(self, request: Request) -> None:
        with self._lock:
            self._queue.append(request)
        self._wake()

    # -- the proxy's thread ----------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A message is being written: the user's keys wait for its Enter."""
        return self.state != IDLE

    def pending(self) -> bool:
        with self._lock:
            return bool(self._queue)

    def on_output(self, data: bytes) -> None:
        if self.screen is not None:
            self.screen.feed(data)
        if self._receipt is not None and self.state in (DELIVERING, SETTLING):
            self._receipt.feed(data)
            self._receipt_drawn = True

    def on_resize(self, rows: int, cols: int) -> None:
        self._size = (rows, cols)
        if self.screen is not None:
            self.screen.resize(rows, cols)

    def deadline(self, last_output: float) -> float | None:
        if self.state == DELIVERING and self._outbox:
            return self._outbox[0][0]
        if self.state == SETTLING:
            assert self._delivered_at is not None
            limit = receipt.settle_limit(self.adapter.settle_max_secs)
            if last_output > self._delivered_at and last_output > self._receipt_read_at:
                return min(last_output + self.adapter.settle_secs, self._delivered_at + limit)
            return self._delivered_at + limit
        if self.state == ENTER_DUE:
            return self._enter_at
        if self.state == RELEASING:
            return self._enter_at + RELEASE_GAP_SECS
        if self.state == IDLE and self._retry_at is not None:
            return self._retry_at
        return None

    def poll(self, now: float, last_output: float, composer_has_text: bool) -> tuple[bytes, bool]:
        """(bytes for the child, True when a message was just submitted).

        Held keys are taken (`take_held`) once this is no longer `busy`.
        """
        if self.state == RELEASING:
            if now >= self._enter_at + RELEASE_GAP_SECS:
                self.state = IDLE
            return b"", False
        if self.state == IDLE:
            return self._start(now, composer_has_text), False
        if self.state == DELIVERING:
            return self._due(now), False
        if self.state == SETTLING:
            assert self._delivered_at is not None
            took = (last_output > self._delivered_at and last_output > self._receipt_read_at
                    and now - last_output >= self.adapter.settle_secs)
            timed_out = now - self._delivered_at >= receipt.settle_limit(self.adapter.settle_max_secs)
            if took or timed_out:
                outcome = self._read_receipt()
                if outcome != receipt.SHOWN and not timed_out:
                    self._receipt_read_at = last_output  # still echoing: wait for more output
                    return b"", False
                self._close_receipt()
                if outcome != receipt.SHOWN:
                    return self._not_delivered(receipt.REASONS[outcome]), False
                self.state = ENTER_DUE
                gap = ENTER_GAPS.get(self.adapter.name, ENTER_GAP_SECS)
                self._enter_at = max(now, self._last_text_at + gap)
            if self.state != ENTER_DUE or now < self._enter_at:
                return b"", False
        if self.state == ENTER_DUE and now >= self._enter_at:
            request = self.current
            assert request is not None
            self.state = RELEASING if self.held else IDLE
            self._enter_at = now
            self.current = None
            request.done("delivered", "", now_iso())
            return b"\r", True
        return b"", False

    def _read_receipt(self) -> str:
        from wrapagent.inject.readiness import looks_like_dialog

        assert self._receipt is not None and self.current is not None
        text = self._receipt.text()
        return receipt.verdict(text, self._receipt_drawn, self.current.text, looks_like_dialog(text))

    def _close_receipt(self) -> None:
        if self._receipt is not None:
            self._receipt.close()
            self._receipt = None

    def _not_delivered(self, reason: str) -> bytes:
        """No receipt: no Enter (it could answer whatever took the text); the request says why."""
        request = self.current
        assert request is not None
        self.current = None
        self.state = RELEASING if self.held else IDLE
        self._enter_at = self._last_text_at
        self.log(f"outgoing: not delivered: {reason}")
        self.notice = receipt.screen_notice(self.adapter.name, "wrapagent's message", reason)
        request.done("not delivered", reason, None)
        return b""

    def take_held(self) -> bytes:
        held = bytes(self.held)
        self.held.clear()
        return held

    def cancel_all(self, reason: str) -> None:
        """The tool ended: what is still queued was not delivered."""
        with self._lock:
            queued, self._queue = list(self._queue), deque()
        if self.current is not None:
            queued.insert(0, self.current)
            self.current = None
        for request in queued:
            request.done("not delivered", reason, None)

    # -- inside -----------------------------------------------------------------------

    def _start(self, now: float, composer_has_text: bool) -> bytes:
        if self._retry_at is not None and now < self._retry_at:
            return b""
        with self._lock:
            request = self._queue.popleft() if self._queue else None
        if request is None:
            return b""
        reason = ""
        if self.last_user_key > request.since:
            reason = "you typed after the agent stopped"
        elif composer_has_text:
            reason = "the composer holds your text"
        elif self.screen is not None and not self._composer_shown():
            if self._retry_later(request, now):
                return b""
            reason = "the empty composer is not on the screen (a dialog?)"
        self._retry_since = self._retry_at = None
        self._retry_slow = False
        if reason:
            self.log(f"outgoing: not sent: {reason}")
            request.done("cancelled", reason, None)
            return b""
        from wrapagent.inject.screen import Screen

        self.current = request
        self._close_receipt()
        self._receipt = Screen(*self._size)
        self._receipt_drawn = False
        self._receipt_read_at = float("-inf")
        self._outbox = delivery_chunks(self.adapter, request.text, now)
        self.state = DELIVERING
        return self._due(now)

    def _retry_later(self, request: Request, now: float) -> bool:
        """Put `request` back at the head of the queue to be tried again (SCREEN_RETRY_SECS)."""
        since = now if self._retry_since is None else self._retry_since
        gap = SCREEN_RETRY_GAP_SECS
        if now - since >= SCREEN_RETRY_SECS:
            if not request.patient:
                return False
            if not self._retry_slow:
                self._retry_slow = True
                self.log(f"outgoing: still no empty composer on the screen; trying every "
                         f"{SLOW_RETRY_SECS:g}s until it shows or you type")
            gap = SLOW_RETRY_SECS
        if self._retry_since is None:
            self.log("outgoing: the empty composer is not on the screen yet; trying again")
        with self._lock:
            self._queue.appendleft(request)
        self._retry_since = since
        self._retry_at = now + gap
        return True

    def drop_overtaken(self) -> None:
        """(Between deliveries, while the user's keys own the composer: a command or a message
        being typed, a reset's composer not back yet.) The request at the head that the user's
        keys overtook is cancelled now, not when the composer is free again: its sender (the
        stop check, a send) hears it and goes on (waiting_for_input fires, the send waits for
        the next stop) instead of holding every later stop."""
        if self.state != IDLE:
            return
        with self._lock:
            request = self._queue[0] if self._queue else None
            if request is None or self.last_user_key <= request.since:
                return
            self._queue.popleft()
        self._retry_since = self._retry_at = None
        self._retry_slow = False
        self.log("outgoing: not sent: you typed after the agent stopped")
        request.done("cancelled", "you typed after the agent stopped", None)

    def use_generic_composer(self) -> None:
        """The tool's ready markers never showed (its screen changed in a release): an empty
        composer is then any quiet screen that is not a dialog, as for the first message."""
        self._generic = True

    def _composer_shown(self) -> bool:
        assert self.screen is not None
        text = self.screen.text(timeout=SCREEN_CATCH_UP_SECS)
        if text is None:
            return False
        from wrapagent.inject.screen_model import model_for

        # By the screen's structure (`screen_model.py`): the tool's composer at the bottom,
        # empty, no dialog, not working; a transcript full of `1. Yes` / `› No` lines is no
        # dialog. A tool whose shape did not fit its screen: any quiet screen that is no dialog.
        model = model_for("" if self._generic else self.adapter.name)
        reading = model.read(text)
        if model.shape is not None:
            return reading.idle_empty
        return not reading.dialog and (self._generic or all(p.search(text) for p in self._patterns))

    def close(self) -> None:
        if self.screen is not None:
            self.screen.close()

    def _due(self, now: float) -> bytes:
        out = bytearray()
        while self._outbox and self._outbox[0][0] <= now:
            out += self._outbox.pop(0)[1]
        if out:
            self._last_text_at = now
        if not self._outbox:
            self.state = SETTLING
            self._delivered_at = now
        return bytes(out)
