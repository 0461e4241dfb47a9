"""First-message injection into an interactive TUI.

The design (validated against codex, claude, gemini and opencode, see
../shared/clis/README.md, "Delivering a block"):

1. Until the tool's composer is ready (per-adapter screen markers, read with
   a terminal emulator), every key passes through untouched: startup dialogs
   need them.
2. When the first key of the first *message* arrives (a printable key or the
   start of a paste), hold it and everything after it, deliver the blocks +
   a blank line into the empty composer (bracketed paste, or typed chunks for
   claude), wait until the screen changed and output was quiet ~50 ms, then
   release the held keys in order.
3. wrapagent never sends Enter: the user's own Enter submits, at human speed,
   so none of the CLIs' Enter-after-paste heuristics can bite.

A first input that is a command (`/…`, `!…`, per adapter) passes through and
injection re-arms after it is submitted. A submission with no typed text
(history recall) is noted and the next message gets the blocks.

Once the blocks are delivered and the user submitted, the injector reports
`done` and the proxy stops calling it: the steady state costs nothing.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Callable

from wrapagent.inject.adapters.base import Adapter
from wrapagent.inject.delivery import delivery_chunks, now_iso
from wrapagent.inject.keys import (BACKSPACE, ENTER, INTERRUPT, PASTE_END, PASTE_START, TEXT,
                                   Token, tokenize)

# --- the injector -------------------------------------------------------------

STARTING = "starting"
ARMED = "armed"
COMMAND = "command"
HOLDING = "holding"
DELIVERING = "delivering"
SETTLING = "settling"
AWAIT_SUBMIT = "await-submit"
DONE = "done"

BP_ON = b"\x1b[?2004h"
READY_CHECK_INTERVAL = 0.05


@dataclass
class InjectionReport:
    """What the session record says about injection."""

    status: str = "pending"   # pending | delivered | submitted | none | lost
    path: str = "interactive"
    text: str | None = None
    at: str | None = None
    attempts: int = 0
    ready_after_s: float | None = None
    first_key_delay_ms: float | None = None
    notes: list[str] = field(default_factory=list)


class FirstMessageInjector:
    """The proxy's interceptor for interactive sessions (see module docstring)."""

    def __init__(self, adapter: Adapter, *, rows: int, cols: int,
                 get_prefix: Callable[[], str | None], wake_fd: int | None,
                 log: Callable[[str], None] = lambda m: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        from wrapagent.inject.screen import Screen

        self.adapter = adapter
        self.screen = Screen(rows, cols)
        self.get_prefix = get_prefix
        self._wake_fd = wake_fd
        self.log = log
        self.clock = clock
        self.state = STARTING
        self.done = False
        self.report = InjectionReport()
        self._t0 = clock()
        self._patterns = [re.compile(p) for p in adapter.ready_patterns]
        self._bp_seen = not adapter.requires_bracketed_paste
        self._bp_tail = b""
        self._last_output = self._t0
        self._screen_dirty = False
        self._next_check: float | None = None
        self._held = bytearray()
        self._trigger_at: float | None = None
        self._outbox: list[tuple[float, bytes]] = []
        self._delivered_at: float | None = None
        self._output_since_delivery = False
        self._cmd_len = 0
        self._in_paste = False
        self._prefix: str | None = None
        self._release_on_error = b""
        self._last_text_backslash = False

    # -- Interceptor protocol -------------------------------------------------

    def wake_fd(self) -> int | None:
        return self._wake_fd if self.state == HOLDING else None

    @property
    def watch_output(self) -> bool:
        """Output bytes are needed only while the screen reader runs or delivery settles.

        In every other state output only moves `last_output`, which the
        proxy stores itself without calling in (contract v2).
        """
        return self.state == STARTING or self.state == SETTLING

    @property
    def last_output(self) -> float:
        return self._last_output

    @last_output.setter
    def last_output(self, now: float) -> None:
        self._last_output = now

    def deadline(self) -> float | None:
        if self.state == STARTING:
            return self._next_check
        if self.state == DELIVERING and self._outbox:
            return self._outbox[0][0]
        if self.state == SETTLING:
            assert self._delivered_at is not None
            if self._output_since_delivery:
                return min(self._last_output + self.adapter.settle_secs,
                           self._delivered_at + self.adapter.settle_max_secs)
            return self._delivered_at + self.adapter.settle_max_secs
        return None

    def on_resize(self, rows: int, cols: int) -> None:
        if self.state == STARTING:
            self.screen.resize(rows, cols)

    # Public entry points never raise: a bug or an emulator surprise must not
    # cost the user a key or take the session down. On error, injection is
    # switched off for this session, held keys are released, and the
    # session record says so.

    def on_output(self, data: bytes, now: float) -> None:
        try:
            self._on_output(data, now)
        except Exception as exc:
            self._fail(exc)

    def on_input(self, data: bytes, now: float) -> bytes:
        try:
            return self._on_input(data, now)
        except Exception as exc:
            return self._fail(exc, data)

    def poll(self, now: float) -> bytes:
        if self._release_on_error:
            out, self._release_on_error = self._release_on_error, b""
            return out
        if self.done:
            return b""
        try:
            return self._poll(now)
        except Exception as exc:
            self._fail(exc)
            out, self._release_on_error = self._release_on_error, b""
            return out

    def _fail(self, exc: Exception, data: bytes = b"") -> bytes:
        self._note(f"internal error ({exc!r}): injection switched off, keys passed through")
        self.report.status = "lost"
        held = bytes(self._held) + data
        self._held.clear()
        self.state = DONE
        self.done = True
        if not data:
            self._release_on_error += held
            return b""
        return held

    def _on_output(self, data: bytes, now: float) -> None:
        self._last_output = now
        if self.state == STARTING:
            # The emulator is only needed to see the ready screen; after
            # that, output costs one timestamp until injection is done.
            self.screen.feed(data)
            if not self._bp_seen:
                hay = self._bp_tail + data
                if BP_ON in hay:
                    self._bp_seen = True
                self._bp_tail = hay[-(len(BP_ON) - 1):]
            self._screen_dirty = True
            self._next_check = now + max(self.adapter.ready_quiet_secs, READY_CHECK_INTERVAL)
        elif self.state == SETTLING:
            self._output_since_delivery = True

    def _on_input(self, data: bytes, now: float) -> bytes:
        if self.state in (HOLDING, DELIVERING, SETTLING):
            self._held += data
            return b""
        if self.state == STARTING:
            return data
        if self.state == AWAIT_SUBMIT:
            self._watch_submit(data)
            return data
        return self._armed_input(data, now)

    def _poll(self, now: float) -> bytes:
        if self.state == STARTING:
            self._check_ready(now)
            return b""
        if self.state == HOLDING:
            return self._start_delivery(now)
        if self.state == DELIVERING:
            return self._due_chunks(now)
        if self.state == SETTLING:
            return self._maybe_release(now)
        return b""

    # -- readiness ----------------------------------------------------------------

    def _check_ready(self, now: float) -> None:
        if self._next_check is None or now < self._next_check or not self._screen_dirty:
            return
        if now - self._last_output < self.adapter.ready_quiet_secs:
            self._next_check = self._last_output + self.adapter.ready_quiet_secs
            return
        self._screen_dirty = False
        self._next_check = None
        if not self._bp_seen:
            return
        text = self.screen.text()
        if all(p.search(text) for p in self._patterns):
            self.state = ARMED
            self.screen.close()
            self.report.ready_after_s = round(now - self._t0, 3)
            self.log(f"injection: {self.adapter.name} ready after {self.report.ready_after_s:.2f}s")

    # -- armed: find the first message ----------------------------------------

    def _armed_input(self, data: bytes, now: float) -> bytes:
        tokens = tokenize(data)
        offset = 0
        for tok in tokens:
            if self.state == ARMED and not self._in_paste:
                if tok.kind == PASTE_START or (tok.kind == TEXT and not self._is_command(tok.data)):
                    self._trigger(now, data[offset:])
                    return data[:offset]
                if tok.kind == TEXT:
                    self.state = COMMAND
                    self._cmd_len = len(tok.data)
                elif tok.kind == ENTER:
                    self._note("a submission with no typed text (history recall?) was not injected; "
                               "the next message gets the blocks")
            elif self.state == COMMAND:
                self._command_token(tok)
            offset += len(tok.data)
        return data

    def _is_command(self, text: bytes) -> bool:
        return any(text.startswith(p.encode()) for p in self.adapter.command_prefixes)

    def _command_token(self, tok: Token) -> None:
        if tok.kind == PASTE_START:
            self._in_paste = True
        elif tok.kind == PASTE_END:
            self._in_paste = False
        elif self._in_paste:
            return
        elif tok.kind == TEXT:
            self._cmd_len += len(tok.data)
        elif tok.kind == BACKSPACE:
            self._cmd_len -= 1
            if self._cmd_len <= 0:
                self.state = ARMED
        elif tok.kind in (ENTER, INTERRUPT):
            self.state = ARMED
            self._cmd_len = 0
            if tok.kind == ENTER:
                self._note("first input was a command: passed through, injection re-armed")

    def _trigger(self, now: float, held: bytes) -> None:
        self._held += held
        self._trigger_at = now
        self.state = HOLDING

    # -- delivery -------------------------------------------------------------------

    def _start_delivery(self, now: float) -> bytes:
        if self._prefix is None:
            self._drain_wake()
            prefix = self.get_prefix()
            if prefix is None:
                return b""  # guards still running; the wake fd tells us when they finish
            self._prefix = prefix
        if not self._prefix:
            self.report.status = "none"
            self.report.notes.append("all blocks empty: nothing injected")
            return self._release(now, finished=True)
        self.report.attempts += 1
        self.report.text = self._prefix
        self._outbox = delivery_chunks(self.adapter, self._prefix, now)
        self.state = DELIVERING
        return self._due_chunks(now)

    def _due_chunks(self, now: float) -> bytes:
        out = bytearray()
        while self._outbox and self._outbox[0][0] <= now:
            out += self._outbox.pop(0)[1]
        if not self._outbox:
            self.state = SETTLING
            self._delivered_at = now
            self._output_since_delivery = False
        return bytes(out)

    def _maybe_release(self, now: float) -> bytes:
        assert self._delivered_at is not None
        quiet = self._output_since_delivery and now - self._last_output >= self.adapter.settle_secs
        timed_out = now - self._delivered_at >= self.adapter.settle_max_secs
        if not (quiet or timed_out):
            return b""
        if timed_out and not self._output_since_delivery:
            self._note("the screen did not change after delivery; released the keys anyway")
        self.report.status = "delivered"
        self.report.at = now_iso()
        return self._release(now, finished=False)

    def _release(self, now: float, *, finished: bool) -> bytes:
        held = bytes(self._held)
        self._held.clear()
        if self._trigger_at is not None:
            self.report.first_key_delay_ms = round((now - self._trigger_at) * 1000, 1)
        if finished:
            self._finish()
        else:
            self.state = AWAIT_SUBMIT
            self._in_paste = False
            self._watch_submit(held)
        self.log(f"injection: released {len(held)} held bytes after "
                 f"{self.report.first_key_delay_ms} ms ({self.report.status})")
        return held

    def _watch_submit(self, data: bytes) -> None:
        """After delivery: the user's Enter submits (done); Ctrl-C/Esc clear the composer (re-arm)."""
        for tok in tokenize(data):
            backslash = self._last_text_backslash
            self._last_text_backslash = tok.kind == TEXT and tok.data.endswith(b"\\")
            if tok.kind == PASTE_START:
                self._in_paste = True
            elif tok.kind == PASTE_END:
                self._in_paste = False
            elif self._in_paste:
                continue
            elif tok.kind == ENTER and backslash:
                continue  # `\` + Enter inserts a newline in claude and gemini
            elif tok.kind == ENTER:
                self.report.status = "submitted"
                self.log("injection: first message submitted with the blocks")
                self._finish()
                return
            elif tok.kind == INTERRUPT:
                self._note("composer cleared before submit; injection re-armed")
                self.state = ARMED
                self._rearm()
                return

    def _rearm(self) -> None:
        """Back to waiting for a first message; the prefix is kept and delivered again."""
        self._outbox.clear()
        self._delivered_at = None
        self.report.status = "pending"

    def _finish(self) -> None:
        self.state = DONE
        self.done = True
        self.screen.close()

    def _drain_wake(self) -> None:
        if self._wake_fd is None:
            return
        try:
            os.read(self._wake_fd, 64)
        except (BlockingIOError, OSError):
            pass

    def _note(self, message: str) -> None:
        self.report.notes.append(message)
        self.log(f"injection: {message}")

    def finalize(self) -> InjectionReport:
        """Called when the tool exits: an injection never delivered or never submitted is said so."""
        if self.report.status == "lost":
            return self.report
        if self.state in (STARTING, ARMED, COMMAND, HOLDING):
            if self._prefix == "":
                self.report.status = "none"
            elif self.state == STARTING:
                self.report.status = "lost"
                self.report.notes.append("the tool never showed its ready screen")
            else:
                self.report.status = "lost"
                self.report.notes.append("no message was typed after the tool became ready")
        return self.report
