"""Injection into an interactive TUI, for the whole session.

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
4. Held keys keep their timing: each read the user's terminal handed over
   while keys were held is released as it came, with its original gap after
   the one before (capped: `held.py`). A paste's end and the Enter
   that followed it 0.8 s later never reach the tool as one burst (gemini
   then takes that Enter as part of the paste and nothing is submitted).

A first input that is a command (`/…`, `!…`, per adapter) passes through and
injection re-arms after it is submitted. A submission with no typed text
(history recall) is noted and the next message gets the blocks.

Whole-session mode (`turns` or `on_reset` given): after the blocks were
submitted the injector stays attached, following the user's keys with a
`Composer` (input is tiny). A submitted reset command (`/clear`, `/new`, per
adapter) starts a new conversation: `on_reset()` recomputes the blocks, keys
pass untouched until the composer is back (a dialog may come first), and the
next message gets them exactly as the first did. Every other submission
is reported to `turns`, which decides when the agent waits. Output then
costs the proxy one timestamp (`watch_output` is false, the loop stores
`last_output`); the emulator is only fed until the composer is ready.

First-message mode (neither given): the injector reports `done` once the
blocks were submitted and the proxy drops it.
"""

from __future__ import annotations

import os
import re
import time
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Callable

from wrapagent.inject.adapters.base import Adapter
from wrapagent.inject.composer import Composer, Submission
from wrapagent.inject.delivery import delivered_text, delivery_chunks, now_iso
from wrapagent.inject.held import HeldKeys
from wrapagent.inject.keys import (BACKSPACE, ENTER, ESCAPE, INTERRUPT, PASTE_END, PASTE_START, REPLY,
                                   TEXT, Token, blank_paste, tokenize)
from wrapagent.inject.report import InjectionReport, close_unsubmitted

if TYPE_CHECKING:
    from typing import Protocol

    from wrapagent.inject.outgoing import Outgoing

    class TurnListener(Protocol):
        """Told about submissions; owns the timer that says the agent waits (session/turns.py)."""

        def submitted(self, now: float) -> None: ...
        def resumed(self, now: float) -> None: ...
        def deadline(self, last_output: float) -> float | None: ...
        def poll(self, now: float, last_output: float) -> None: ...

# --- the injector -------------------------------------------------------------

STARTING = "starting"
WAIT_READY = "wait-ready"   # after a reset: keys pass, until the composer shows again
ARMED = "armed"
COMMAND = "command"
HOLDING = "holding"
DELIVERING = "delivering"
SETTLING = "settling"
AWAIT_SUBMIT = "await-submit"
CHATTING = "chatting"
DONE = "done"

_HOLD_STATES = (HOLDING, DELIVERING, SETTLING)

BP_ON = b"\x1b[?2004h"
READY_CHECK_INTERVAL = 0.05


class FirstMessageInjector:
    """The proxy's interceptor for interactive sessions (see module docstring)."""

    def __init__(self, adapter: Adapter, *, rows: int, cols: int,
                 get_prefix: Callable[[], str | None], wake_fd: int | None,
                 log: Callable[[str], None] = lambda m: None,
                 clock: Callable[[], float] = time.monotonic,
                 inject: bool = True,
                 turns: TurnListener | None = None,
                 on_reset: Callable[[], None] | None = None,
                 on_message: Callable[[int, int], None] | None = None,
                 outgoing: Outgoing | None = None) -> None:
        from wrapagent.inject.screen import Screen

        self.adapter = adapter
        self.screen = Screen(rows, cols)
        self._size = (rows, cols)
        self.get_prefix = get_prefix
        self._wake_fd = wake_fd
        self.log = log
        self.clock = clock
        self.inject = inject
        """False: no blocks at all, only turns are followed (keys are never held)."""
        self.turns = turns
        self.on_reset = on_reset
        self.on_message = on_message
        """`every_message` guards: called with (conversation, message) when a later message is armed."""
        self.outgoing = outgoing
        """wrapagent's own messages (a stop check's continuation), submitted into the empty composer."""
        self._keep_watching = outgoing is not None and outgoing.screen is not None
        self.whole_session = turns is not None or on_reset is not None
        self._conversation = 1
        self._message = 1
        self.state = STARTING
        self.done = False
        self.watch_output = True
        """Read by the proxy per output chunk: False once the screen is no longer needed."""
        self.report = InjectionReport(status="pending" if inject else "none")
        self.reports = [self.report]
        self._t0 = clock()
        self._patterns = [re.compile(p) for p in adapter.ready_patterns]
        self._reset_patterns = [re.compile(p) for p in adapter.reset_ready_patterns]
        self._reset_at = 0.0
        self._bp_seen = not adapter.requires_bracketed_paste
        self._bp_tail = b""
        self.last_output = self._t0
        """Monotonic time of the child's latest output; the proxy stores it directly."""
        self._screen_dirty = False
        self._next_check: float | None = None
        self._keys = HeldKeys()
        """The keys held from the tool, then released with their timing."""
        self._trigger_at: float | None = None
        self._outbox: list[tuple[float, bytes]] = []
        self._delivered_at: float | None = None
        self._in_paste = False
        self._prefix: str | None = None
        self._release_on_error = b""
        self._composer = Composer(esc_clears=adapter.esc_clears_composer)
        self._bare: list[str] = []
        """This conversation's messages that reached the tool without the blocks, and why."""
        self._begun_early = False

    # -- Interceptor protocol -------------------------------------------------

    def wake_fd(self) -> int | None:
        return self._wake_fd if self.state == HOLDING or self.outgoing is not None else None

    def deadline(self) -> float | None:
        own = self._own_deadline()
        due = self._keys.next_due()
        if due is not None and (own is None or due < own):
            own = due
        if self.outgoing is not None:
            theirs = self.outgoing.deadline(self.last_output)
            if theirs is not None:
                own = theirs if own is None else min(own, theirs)
        if self.turns is None or self.state == STARTING:
            return own
        theirs = self.turns.deadline(self.last_output)
        if own is None or theirs is None:
            return theirs if own is None else own
        return min(own, theirs)

    def _own_deadline(self) -> float | None:
        if self.state == STARTING or (self.state == WAIT_READY and self._reset_patterns):
            return self._next_check
        if self.state == WAIT_READY:
            return max(self.last_output, self._reset_at) + self.adapter.reset_quiet_secs
        if self.state == HOLDING and self._prefix is not None:
            # Re-held in the middle of a release (a Ctrl-C, then a key, in one batch):
            # the blocks are known, deliver again at once instead of waiting for a key.
            return self._trigger_at or 0.0
        if self.state == DELIVERING and self._outbox:
            return self._outbox[0][0]
        if self.state == SETTLING:
            assert self._delivered_at is not None
            if self._output_since_delivery:
                return min(self.last_output + self.adapter.settle_secs,
                           self._delivered_at + self.adapter.settle_max_secs)
            return self._delivered_at + self.adapter.settle_max_secs
        return None

    @property
    def _output_since_delivery(self) -> bool:
        return self._delivered_at is not None and self.last_output > self._delivered_at

    def on_resize(self, rows: int, cols: int) -> None:
        self._size = (rows, cols)
        if self.outgoing is not None:
            self.outgoing.on_resize(rows, cols)
        if self.state in (STARTING, WAIT_READY):
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
            if self._keys.replay:  # released keys still to go: these go behind them, spaced the same way
                self._keys.queue(data, now)
                return b""
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
            if self.outgoing is not None:
                # One wake pipe for the guards and the outgoing queue: drained before
                # either looks, so a wake-up that comes after its look is never lost.
                self._drain_wake()
            out = self._due_replay(now) if self._keys.replay else b""
            out += self._poll(now)
            if self.outgoing is not None:
                out += self._poll_outgoing(now)
            if self.turns is not None and self.state != STARTING:
                self.turns.poll(now, self.last_output)
            return out
        except Exception as exc:
            self._fail(exc)
            out, self._release_on_error = self._release_on_error, b""
            return out

    def _fail(self, exc: Exception, data: bytes = b"") -> bytes:
        self._note(f"internal error ({exc!r}): injection switched off, keys passed through")
        self.report.status = "lost"
        held = self._keys.take_all() + data
        self.state = DONE
        self.done = True
        self.watch_output = False
        if not data:
            self._release_on_error += held
            return b""
        return held

    def _on_output(self, data: bytes, now: float) -> None:
        self.last_output = now
        if self.outgoing is not None:
            self.outgoing.on_output(data)
        if self.state in (STARTING, WAIT_READY):
            # The emulator is only needed to see the ready screen; after
            # that, output costs the proxy one timestamp.
            self.screen.feed(data)
            if not self._bp_seen:
                hay = self._bp_tail + data
                if BP_ON in hay:
                    self._bp_seen = True
                self._bp_tail = hay[-(len(BP_ON) - 1):]
            self._screen_dirty = True
            self._next_check = now + max(self.adapter.ready_quiet_secs, READY_CHECK_INTERVAL)

    def _on_input(self, data: bytes, now: float) -> bytes:
        if self.outgoing is not None:
            if self.outgoing.busy:
                self.outgoing.held += data  # they follow wrapagent's Enter, in order
                return b""
            if any(tok.kind != REPLY for tok in tokenize(data)):
                self.outgoing.last_user_key = now
        if self.state in (STARTING, WAIT_READY) and self._screen_dirty and self._screen_ready():
            # The composer is drawn but its quiet period is not over: a key now
            # starts a message, so the blocks must go before it, not after.
            self._became_ready(now)
        if self.state == STARTING:
            for tok in tokenize(data):
                sub = self._composer.feed(tok)  # a message begun before readiness is not ours to prefix
                if sub is not None and not sub.empty and not sub.is_command_like(self.adapter.command_prefixes):
                    self._bare.append("a message was submitted before the tool's ready screen was seen")
            return data
        return self._feed(data, now)

    def _poll(self, now: float) -> bytes:
        if self.state == WAIT_READY and not self._reset_patterns:
            if now - max(self.last_output, self._reset_at) >= self.adapter.reset_quiet_secs:
                self._arm()
                self.log(f"injection: output quiet after the reset; conversation "
                         f"{self.report.conversation} armed")
            return b""
        if self.state in (STARTING, WAIT_READY):
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
        if now - self.last_output < self.adapter.ready_quiet_secs:
            self._next_check = self.last_output + self.adapter.ready_quiet_secs
            return
        self._screen_dirty = False
        self._next_check = None
        if self._screen_ready():
            self._became_ready(now)

    def _screen_ready(self) -> bool:
        """The ready markers are on the screen as drawn so far."""
        if not self._bp_seen:
            return False
        text = self.screen.text()
        patterns = self._reset_patterns if self.state == WAIT_READY else self._patterns
        return all(p.search(text) for p in patterns)

    def _became_ready(self, now: float) -> None:
        self._screen_dirty = False
        self._next_check = None
        self.watch_output = self._keep_watching
        self.screen.close()
        if self.state == WAIT_READY:
            self._arm()
            self.log(f"injection: composer ready again for conversation {self.report.conversation}")
            return
        self.report.ready_after_s = round(now - self._t0, 3)
        if self.inject:
            self._arm()
        else:
            self.state = CHATTING
        self.log(f"injection: {self.adapter.name} ready after {self.report.ready_after_s:.2f}s")

    def _arm(self) -> None:
        """The composer is ready: the next message gets the blocks.

        Unless the user began one before it was (typed or pasted while the tool
        started, or before it came back after a reset): blocks cannot go in front
        of text already in the composer, so that message passes untouched, like a
        command, and the one after it gets them.
        """
        if not self._composer.in_paste:
            self.state = ARMED
            return
        self.state = COMMAND
        self._in_paste = True
        self._begun_early = True
        self._note("a paste begun before the composer was ready goes without the blocks; "
                   "the next message gets them")

    # -- the user's keys, one token at a time -----------------------------------

    def _feed(self, data: bytes, now: float) -> bytes:
        """Forward what may go to the child now; hold the rest from the first key of a message."""
        if self.state in _HOLD_STATES:
            self._keys.hold(now, data)
            return b""
        offset = 0
        tokens = tokenize(data)
        for i, tok in enumerate(tokens):
            if self.state == ARMED and self._triggers(tok) and not blank_paste(tokens, i):
                self._trigger(now, data[offset:])
                return data[:offset]
            before, early = self.state, self._begun_early
            sub = self._composer.feed(tok)
            self._state_token(tok, sub)
            if sub is not None:
                self._went_bare(sub, before, early)
                self._submitted(sub, before, now)
            offset += len(tok.data)
        return data

    def _triggers(self, tok: Token) -> bool:
        """The first key of a message: a paste's start, or typed text that is not blank or a command.

        Blank text (spaces) is no message: blocks put in front of it would be
        submitted alone by the Enter after it, and the real message go bare.
        """
        if self._in_paste:
            return False
        return tok.kind == PASTE_START or (tok.kind == TEXT and bool(tok.data.strip())
                                           and not self._is_command(tok.data.lstrip()))

    def _state_token(self, tok: Token, sub: Submission | None) -> None:
        state = self.state
        if state == ARMED:
            if tok.kind == TEXT:
                self.state = COMMAND
            elif sub is not None and self._message == 1:
                self._note("a submission with no typed text (history recall?) was not injected; "
                           "the next message gets the blocks")
        elif state == COMMAND:
            self._command_token(tok, sub)
        elif state == AWAIT_SUBMIT:
            if sub is not None:
                self.report.status = "submitted"
                n, m = self.report.conversation, self.report.message
                self.log("injection: first message submitted with the blocks" if (n, m) == (1, 1) else
                         f"injection: conversation {n}, message {m}: submitted with the blocks")
                self._finish()
            elif self._clears(tok):
                self._note("composer cleared before submit; injection re-armed")
                self.state = ARMED
                self._rearm()

    def _submitted(self, sub: Submission, before: str, now: float) -> None:
        """A submission reached the child: a reset starts a new conversation, the rest are turns."""
        if not self.whole_session:
            return
        if self.adapter.reset_commands and sub.is_command(self.adapter.reset_commands):
            later = self._message > 1 and before in (ARMED, COMMAND)  # armed for a later message
            if (before == CHATTING or later) and self.on_reset is not None:
                self._new_conversation(sub.text.strip(), now)
            return
        if self.turns is None:
            return
        if sub.empty:
            self.turns.resumed(now)
        else:
            self.turns.submitted(now)

    def _went_bare(self, sub: Submission, before: str, early: bool) -> None:
        """Note a message that reached the tool without the blocks (the record and log say why)."""
        if not self.inject or sub.empty:
            return
        if before == ARMED:
            if sub.unknown:  # (blank text or a blank paste is no message)
                self._bare.append("a message was submitted with no typed text (history recall?)")
        elif before == COMMAND and early:
            self._bare.append("a message begun before the composer was ready was submitted")
        elif before == WAIT_READY and not sub.is_command_like(self.adapter.command_prefixes):
            self._bare.append("a message was submitted before the composer showed again")

    def _clears(self, tok: Token) -> bool:
        """Ctrl-C empties the composer; a lone Esc only if the adapter says so (else: unknown,
        and the blocks already in the composer are taken to be still there)."""
        return tok.kind == INTERRUPT or (tok.kind == ESCAPE and self.adapter.esc_clears_composer)

    def _is_command(self, text: bytes) -> bool:
        return any(text.startswith(p.encode()) for p in self.adapter.command_prefixes)

    def _command_token(self, tok: Token, sub: Submission | None) -> None:
        if tok.kind == PASTE_START:
            self._in_paste = True
        elif tok.kind == PASTE_END:
            self._in_paste = False
        elif self._in_paste:
            return
        elif tok.kind == BACKSPACE:
            # The composer erased a whole character (UTF-8 aware); counting bytes here
            # left `/é` + two Backspaces a command, and the next message went bare.
            if not self._composer.has_text:
                self.state = ARMED
                self._begun_early = False
        elif sub is not None or tok.kind == ENTER or self._clears(tok):
            self.state = ARMED
            if tok.kind == ENTER and not self._begun_early and self._message == 1:
                self._note("first input was a command: passed through, injection re-armed")
            self._begun_early = False

    def _trigger(self, now: float, held: bytes) -> None:
        self._keys.hold(now, held)
        self._trigger_at = now
        self.state = HOLDING
        # While keys are held, output moves the deadline EARLIER (settling ends
        # `settle_secs` after the composer redrew, not at `settle_max_secs`):
        # the proxy must call on_output so the main thread is woken to re-read
        # it. With watch_output false it only stores `last_output`, and a lone
        # first key waited for the next key or for settle_max_secs (issue 21).
        self.watch_output = True

    def _new_conversation(self, command: str, now: float) -> None:
        """A reset command was submitted: fresh blocks for the next message, as for the first."""
        assert self.on_reset is not None
        self.on_reset()
        if self._message > 1 and self.report.status == "pending":
            self.reports.remove(self.report)  # armed for a later message that never came
        self._conversation += 1
        self._message = 1
        self.report = InjectionReport(conversation=self._conversation)
        self.reports.append(self.report)
        self._bare = []
        self._prefix = None
        self._trigger_at = None
        self._in_paste = False
        self._rearm()
        self._wait_ready_again(now)
        self.log(f"injection: {command} started conversation {self.report.conversation}; re-armed")

    def _next_message(self) -> None:
        """`every_message` guards: the next message of this conversation gets their blocks."""
        assert self.on_message is not None
        self._message += 1
        self.on_message(self._conversation, self._message)
        self.report = InjectionReport(conversation=self._conversation, message=self._message)
        self.reports.append(self.report)
        self._bare = []
        self._prefix = None
        self._trigger_at = None
        self._in_paste = False
        self._rearm()
        self.state = ARMED

    def _poll_outgoing(self, now: float) -> bytes:
        """wrapagent's own message: only between the user's messages, never over their typing."""
        outgoing = self.outgoing
        assert outgoing is not None
        if not outgoing.busy and (self.state not in (CHATTING, ARMED) or not outgoing.pending()):
            return b""
        out, submitted = outgoing.poll(now, self.last_output, self._composer.has_text)
        if submitted and self.turns is not None:
            self.turns.submitted(now)
        if not outgoing.busy and outgoing.held:
            out += self._feed(outgoing.take_held(), now)  # the user's keys held meanwhile, in order
        return out

    def _wait_ready_again(self, now: float) -> None:
        """After a reset the tool may show a dialog first (codex asks where the new chat runs).

        With `reset_ready_patterns`, the next message waits until they show on a fresh
        emulator fed only with what the tool draws from now on; without, until output
        has been quiet `reset_quiet_secs` since the reset (no emulator, no copy).
        """
        self.state = WAIT_READY
        self._reset_at = now
        self._screen_dirty = False
        self._next_check = None
        if not self._reset_patterns:
            return
        from wrapagent.inject.screen import Screen

        self.screen = Screen(*self._size)
        self.watch_output = True

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
        self.report.text = delivered_text(self.adapter, self._prefix)  # what the model will read
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
        return bytes(out)

    def _maybe_release(self, now: float) -> bytes:
        assert self._delivered_at is not None
        quiet = self._output_since_delivery and now - self.last_output >= self.adapter.settle_secs
        timed_out = now - self._delivered_at >= self.adapter.settle_max_secs
        if not (quiet or timed_out):
            return b""
        if timed_out and not self._output_since_delivery:
            self._note("the screen did not change after delivery; released the keys anyway")
        self.report.status = "delivered"
        self.report.at = now_iso()
        return self._release(now, finished=False)

    def _release(self, now: float, *, finished: bool) -> bytes:
        """Give the held keys to the child, read as if they had just been typed.

        They go through `_feed` in the new state, so an Enter among them
        submits, and a reset among them (fast typing) still counts. The first
        read goes now, the others when their turn comes (`held.HeldKeys`).
        """
        if self._trigger_at is not None:
            self.report.first_key_delay_ms = round((now - self._trigger_at) * 1000, 1)
        self.watch_output = self._keep_watching  # no deadline depends on output any more (a re-hold sets it again)
        size, count, first = self._keys.release(now)
        if finished:
            self._finish()
        else:
            self.state = AWAIT_SUBMIT
            self._in_paste = False
        self.log(f"injection: released {size} held bytes in {count} reads after "
                 f"{self.report.first_key_delay_ms} ms ({self.report.status})")
        out = self._feed(first, now)
        self._rehold_replay()
        return out + self._due_replay(now)  # reads that came together go together

    def _due_replay(self, now: float) -> bytes:
        """Replayed reads whose time has come, fed as if typed now."""
        out = bytearray()
        while self.state not in _HOLD_STATES:
            data = self._keys.pop_due(now)
            if data is None:
                break
            out += self._on_input(data, now)
            self._rehold_replay()
        if not self._keys.replay and self.state == DONE:
            self.done = True  # held back by `_finish` until the last replayed key went
        return bytes(out)

    def _rehold_replay(self) -> None:
        """A replayed key started a message again (a Ctrl-C, then a key): the rest is held with it."""
        if self._keys.replay and self.state in _HOLD_STATES:
            self._keys.rehold()

    def _rearm(self) -> None:
        """Back to waiting for a first message; the prefix is kept and delivered again."""
        self._outbox.clear()
        self._delivered_at = None
        self.report.status = "pending"

    def _finish(self) -> None:
        """This conversation's injection is over: stay for the session, or be dropped."""
        self.screen.close()
        self.watch_output = self._keep_watching
        if self.whole_session:
            self.state = CHATTING
            if self.on_message is not None:
                self._next_message()
            return
        self.state = DONE
        self.done = not self._keys.replay  # else once the last replayed key went (`_due_replay`)

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
        """Called when the tool exits: an injection never delivered or never submitted is said so.

        Returns the first conversation's report (`injection` in the record);
        `reports` holds every conversation's.
        """
        report = self.report
        if self.outgoing is not None:
            self.outgoing.cancel_all("the tool ended")
            self.outgoing.close()
        if report.message > 1 and self.state in (ARMED, COMMAND):
            self.reports.remove(report)  # armed for a later message that never came
            return self.reports[0]
        if report.status == "lost" or self.state not in (STARTING, WAIT_READY, ARMED, COMMAND, HOLDING):
            return self.reports[0]
        if not self.inject:
            return self.reports[0]
        if self._prefix == "":
            report.status = "none"
            return self.reports[0]
        unfinished = {STARTING: "the tool never showed its ready screen",
                      HOLDING: "the tool exited while the first key waited for the guards"}.get(self.state)
        why = close_unsubmitted(report, unfinished=unfinished, bare=self._bare)
        if why:  # said once on stderr after the session, pointing to this log
            self.log(f"injection: a message reached {self.adapter.name} without the blocks: {why}")
        return self.reports[0]

