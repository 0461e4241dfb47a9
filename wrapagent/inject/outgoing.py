"""Messages wrapagent itself submits: a stop check's continuation (and later, `wrapagent send`).

The one case where wrapagent presses Enter, and only because the user
configured it. The rules, measured on the four CLIs (../shared/clis/README.md):

- Only into an empty composer the user is not using: no key from the user
  since the agent stopped (`since`), nothing typed in the composer, and,
  for a tool with ready markers (its empty-composer placeholder), those
  markers on the screen as it is now (a permission dialog hides them: an
  Enter there would answer it). So the screen is followed all session long
  (a terminal emulator on every output chunk: only when such messages are
  configured).
- The text goes in as the blocks do (bracketed paste, or typed chunks for
  claude); once the screen took it (output quiet `settle_secs`, at most
  `settle_max_secs`), Enter follows as its own write, at least
  ENTER_GAP_SECS after the last text byte.
- The user's keys during the delivery are held and follow the Enter, in
  order, RELEASE_GAP_SECS later (never in the Enter's write): the message
  cannot be cut in half.

Requests come from any thread (`post`); everything else runs on the
proxy's thread under its lock, called by the injector.
"""

from __future__ import annotations

import threading
from collections import deque

from wrapagent.inject.delivery import delivery_chunks, now_iso

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.inject.adapters.base import Adapter

IDLE_COMPOSER = {
    # opencode's `Ask anything…` placeholder is gone after the first turn; the composer then
    # shows the agent and model line (`Build · Mock Model Mock LLM`).
    "opencode": (r"Ask anything|Build · |Plan · ",),
}
"""Screen markers of an empty composer after a turn, where they differ from the ready markers."""

ENTER_GAP_SECS = 0.15
"""codex takes an Enter within 120 ms of fast input for a newline; gemini within 40 ms of a paste."""

RELEASE_GAP_SECS = 0.05
"""The user's keys held during a delivery go this long after the Enter: never in its write."""

IDLE = "idle"
DELIVERING = "delivering"
SETTLING = "settling"
ENTER_DUE = "enter-due"
RELEASING = "releasing"


class Request:
    """One message to submit; `done(status, reason, at)` is called once, on the proxy's thread."""

    __slots__ = ("text", "since", "done")

    def __init__(self, text: str, since: float, done: Callable[[str, str, str | None], None]) -> None:
        self.text = text
        self.since = since  # monotonic: a user key after this cancels the request
        self.done = done


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
        self.screen = None
        if self._patterns:
            # Followed all along: at a stop the screen is quiet, so an emulator
            # started then would never see the composer that is already drawn.
            from wrapagent.inject.screen import Screen

            self.screen = Screen(rows, cols)
        self.state = IDLE
        self.current: Request | None = None
        self.last_user_key = float("-inf")
        self._outbox: list[tuple[float, bytes]] = []
        self._last_text_at = 0.0
        self._delivered_at: float | None = None
        self._enter_at = 0.0
        self.held = bytearray()

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

    def on_resize(self, rows: int, cols: int) -> None:
        self._size = (rows, cols)
        if self.screen is not None:
            self.screen.resize(rows, cols)

    def deadline(self, last_output: float) -> float | None:
        if self.state == DELIVERING and self._outbox:
            return self._outbox[0][0]
        if self.state == SETTLING:
            assert self._delivered_at is not None
            if last_output > self._delivered_at:
                return min(last_output + self.adapter.settle_secs,
                           self._delivered_at + self.adapter.settle_max_secs)
            return self._delivered_at + self.adapter.settle_max_secs
        if self.state == ENTER_DUE:
            return self._enter_at
        if self.state == RELEASING:
            return self._enter_at + RELEASE_GAP_SECS
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
            took = last_output > self._delivered_at and now - last_output >= self.adapter.settle_secs
            if took or now - self._delivered_at >= self.adapter.settle_max_secs:
                if not took:
                    self.log("outgoing: the screen did not change after the text; Enter anyway")
                self.state = ENTER_DUE
                self._enter_at = max(now, self._last_text_at + ENTER_GAP_SECS)
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
        with self._lock:
            request = self._queue.popleft() if self._queue else None
        if request is None:
            return b""
        reason = ""
        if self.last_user_key > request.since:
            reason = "you typed after the agent stopped"
        elif composer_has_text:
            reason = "the composer holds your text"
        elif self.screen is not None and not all(p.search(self.screen.text()) for p in self._patterns):
            reason = "the empty composer is not on the screen (a dialog?)"
        if reason:
            self.log(f"outgoing: not sent: {reason}")
            request.done("cancelled", reason, None)
            return b""
        self.current = request
        self._outbox = delivery_chunks(self.adapter, request.text, now)
        self.state = DELIVERING
        return self._due(now)

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
