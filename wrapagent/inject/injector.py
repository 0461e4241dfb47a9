"""Injection into an interactive TUI, for the whole session.

Until the tool's composer is ready every key passes through untouched; the
first key of the first message is held, the blocks go into the empty
composer, and the held keys follow with their own timing; the user's own
Enter submits (wrapagent never sends one). Commands pass through and re-arm;
a reset or a compaction starts a conversation whose first message gets the
blocks again. The design, and why each step is so: docs/ARCHITECTURE.md,
"How a message gets its blocks".

The injector is made of objects, one concern each, with their inputs given
explicitly (constructor arguments, the injector's state and the tool's latest
output passed at each call) and their answers returned: `Readiness` (when the
composer is ready), `MessageKeys` (what the user's keys say), `BlocksDelivery`
(one message's blocks and their receipt), `Conversations` (resets,
compactions, later messages, the reports), `OutgoingHooks` (wrapagent's own
messages) and `TurnWatches` (turns, dialogs, interrupts). The injector holds
the proxy's entry points and the state machine: it alone changes `state`,
through `_go`, checked against `states.TRANSITIONS`.
"""

from __future__ import annotations

import os
import time
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Callable

from wrapagent.inject.adapters.base import Adapter
from wrapagent.inject.block_delivery import RELEASE, RETRY, BlocksDelivery
from wrapagent.inject.conversations import COMPACTED, NEXT_MESSAGE, RESET, Conversations
from wrapagent.inject.keys import ENTER, TEXT, Token, blank_paste, tokenize
from wrapagent.inject.message_keys import MessageKeys
from wrapagent.inject.outgoing_hooks import OutgoingHooks
from wrapagent.inject.readiness import Readiness
from wrapagent.inject.report import InjectionReport
from wrapagent.inject.states import (ARMED, AWAIT_SUBMIT, CHATTING, COMMAND, DELIVERING, DONE, HOLD_STATES,
                                     HOLDING, SETTLING, STARTING, WAIT_READY, allowed)
from wrapagent.inject.turn_watches import TurnWatches

__all__ = ["SessionInjector", "STARTING", "WAIT_READY", "ARMED", "COMMAND", "HOLDING", "DELIVERING",
           "SETTLING", "AWAIT_SUBMIT", "CHATTING", "DONE"]

if TYPE_CHECKING:
    from wrapagent.inject.composer import Submission
    from wrapagent.inject.composer_screen import ComposerScreen
    from wrapagent.inject.dialog_watch import DialogTurn
    from wrapagent.inject.compaction_watch import CompactionWatch
    from wrapagent.inject.interrupts import InterruptWatch
    from wrapagent.inject.conversations import TurnListener
    from wrapagent.inject.outgoing import Outgoing

# --- the injector -------------------------------------------------------------


class SessionInjector:
    """The proxy's interceptor for interactive sessions (see module docstring).

    Here: the proxy's entry points, the state machine, the end of the session.
    Its parts: `readiness` (`readiness.py`), `keys` (`message_keys.py`),
    `delivery` (`block_delivery.py`), `conversations` (`conversations.py`),
    `outgoing_hooks` (`outgoing_hooks.py`), `watches` (`turn_watches.py`).
    """

    def __init__(self, adapter: Adapter, *, rows: int, cols: int,
                 get_prefix: Callable[[], str | None], wake_fd: int | None,
                 log: Callable[[str], None] = lambda m: None,
                 clock: Callable[[], float] = time.monotonic,
                 inject: bool = True,
                 turns: TurnListener | None = None,
                 on_reset: Callable[[], None] | None = None,
                 on_message: Callable[[int, int], None] | None = None,
                 on_compaction: Callable[[int, int], None] | None = None,
                 outgoing: Outgoing | None = None,
                 interrupts: InterruptWatch | None = None,
                 prompt_given: bool = False) -> None:
        self.adapter = adapter
        self._size = (rows, cols)
        self._wake_fd = wake_fd
        self.log = log
        self.clock = clock
        self.inject = inject
        """False: no blocks at all, only turns are followed (keys are never held)."""
        self.turns = turns
        self.outgoing = outgoing
        """wrapagent's own messages (a stop check's continuation), submitted into the empty composer."""
        self.prompt_given = prompt_given
        """The first message came on the command line (with its blocks): the tool submits it itself."""
        self.whole_session = turns is not None or on_reset is not None or on_compaction is not None
        from wrapagent.inject.screen_model import model_for

        self.keys = MessageKeys(adapter, log)
        """What the user's keys say: the composer, the keys held from the tool (`message_keys.py`)."""
        self.readiness = Readiness(adapter, self.keys.composer, model_for(adapter.name), rows, cols, log)
        """When the composer is ready (`readiness.py`); its screen model reads dialogs and the
        composer for the followed screen too (`screen_model.py`)."""
        self.view = self._follow_screen(rows, cols, outgoing)
        """The screen followed all session (a tool with a screen shape, whole session): the
        composer's content when the keys cannot tell (`composer_screen.py`)."""
        self.watches = TurnWatches(adapter, self.keys.composer, turns, interrupts)
        """The turn tracker, the dialog watch, the interrupt watch (`turn_watches.py`)."""
        self.compaction_watch = self._watch_compaction(on_compaction, clock)
        """The tool's own compaction notices on the followed screen (`compaction_watch.py`)."""
        self.conversations = Conversations(adapter, inject=inject, prompt_given=prompt_given, turns=turns,
                                           compaction_watch=self.compaction_watch, on_reset=on_reset,
                                           on_message=on_message, on_compaction=on_compaction)
        """Which conversation and message, their reports (`conversations.py`)."""
        self.delivery = BlocksDelivery(adapter, get_prefix, log)
        """The blocks of the message under way, on their way into the composer (`block_delivery.py`)."""
        self.outgoing_hooks = OutgoingHooks(outgoing, self.keys.composer) if outgoing is not None else None
        """Where wrapagent's own messages go between the user's (`outgoing_hooks.py`)."""
        self._keep_watching = self.view is not None or (outgoing is not None and outgoing.screen is not None)
        self.unexpected_transitions: list[tuple[str, str]] = []
        """Changes of state the table (`states.TRANSITIONS`) does not list: none, or a bug."""
        self._state = STARTING
        self.done = False
        self.watch_output = True
        """Read by the proxy per output chunk: False once the screen is no longer needed."""
        self._t0 = clock()
        self.last_output = self._t0
        """Monotonic time of the child's latest output; the proxy stores it directly."""
        self._release_on_error = b""
        self.screen_notice = b""
        """One line for the user's terminal (a delivery without a receipt); the proxy writes
        it after the tool's next output and empties it."""

    def _follow_screen(self, rows: int, cols: int, outgoing: Outgoing | None) -> ComposerScreen | None:
        model = self.readiness.model
        if not self.whole_session or model.shape is None:
            return None
        from wrapagent.inject.composer_screen import ComposerScreen

        shared = outgoing.screen if outgoing is not None else None
        return ComposerScreen.create(model, rows, cols, shared)

    def _watch_compaction(self, on_compaction: Callable[[int, int], None] | None,
                          clock: Callable[[], float]) -> CompactionWatch | None:
        model = self.readiness.model
        if self.view is None or on_compaction is None or not model.knows_compaction:
            return None
        from wrapagent.inject.compaction_watch import NOTICE_HINTS, CompactionWatch

        watch = CompactionWatch(model, clock)
        self.view.observe(watch.observe, hints=NOTICE_HINTS)
        return watch

    @property
    def state(self) -> str:
        """Where the injector is (`states.py`); changed only by `_go`."""
        return self._state

    def _go(self, new: str) -> None:
        """Every change of state, checked against the table (`states.TRANSITIONS`)."""
        old = self._state
        if not allowed(old, new):
            self.unexpected_transitions.append((old, new))
            self.log(f"injection: unexpected change of state {old} -> {new} (not in the table)")
        self._state = new

    @property
    def report(self) -> InjectionReport:
        """The report of the message the blocks are for now (`conversations.py`)."""
        return self.conversations.report

    @property
    def reports(self) -> list[InjectionReport]:
        """Every conversation's and message's report; the first is the record's `injection`."""
        return self.conversations.reports

    @property
    def compactions(self) -> list[dict[str, object]]:
        """Each compaction seen: conversation, how, at (`conversations.py`)."""
        return self.conversations.compactions

    # -- Interceptor protocol -------------------------------------------------

    def wake_fd(self) -> int | None:
        return self._wake_fd if self.state == HOLDING or self.outgoing is not None else None

    def deadline(self) -> float | None:
        own = self._own_deadline()
        due = self.keys.held.next_due()
        if due is not None and (own is None or due < own):
            own = due
        if self.outgoing_hooks is not None:
            own = self.outgoing_hooks.deadline(own, self.last_output)
        if self.state == STARTING:
            return own
        theirs = self.watches.deadline(self.last_output)
        if own is None or theirs is None:
            return theirs if own is None else own
        return min(own, theirs)

    def _own_deadline(self) -> float | None:
        if self.state in (STARTING, WAIT_READY):
            return self.readiness.deadline(self.state, self.last_output)
        return self.delivery.deadline(self.state, self.last_output)

    def on_resize(self, rows: int, cols: int) -> None:
        self._size = (rows, cols)
        if self.outgoing is not None:
            self.outgoing.on_resize(rows, cols)
        if self.view is not None:
            self.view.resize(rows, cols)
        if self.compaction_watch is not None:
            self.compaction_watch.resized()
        if self.state in (STARTING, WAIT_READY):
            self.readiness.screen.resize(rows, cols)

    # Public entry points never raise: a bug or an emulator surprise must not
    # cost the user a key or take the session down. On error, injection is
    # switched off for this session, held keys are released, and the
    # session record says so.

    def on_output(self, data: bytes, now: float) -> None:
        try:
            self._on_output(data, now)
            self._check_compaction(now)
            self.watches.output(data)
        except Exception as exc:
            self._fail(exc)

    def on_input(self, data: bytes, now: float) -> bytes:
        try:
            self.watches.key(data, now)
            # Released keys still to go (or just gone): behind them, spaced the same way. Not while
            # keys are held: a replayed key that started a message holds what comes after it with
            # it (queued instead, a read typed in the replay's wake went out before the keys
            # held with that first key).
            if self.state not in HOLD_STATES and self.keys.held.busy(now):
                self.keys.held.queue(data, now)
                return b""
            self._check_compaction(now)
            command = self.watches.holds_command()
            return self._to_tool(self._on_input(data, now), now, command)
        except Exception as exc:
            return self._fail(exc, data)

    def dialog_turn(self, turns) -> DialogTurn:
        """The turn under way as the dialog watch sees it: the tracker's, the user's keys."""
        return self.watches.dialog_turn(turns, lambda: self.state in (CHATTING, ARMED))

    def _to_tool(self, out: bytes, now: float, command: bool) -> bytes:
        """Bytes on their way to the tool: the interrupt watch sees the keys that really reach it."""
        if self.watches.to_tool(out, now, command):
            self.watch_output = True  # the tool's cancel notice is looked for in its output
        return out

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
            self._check_compaction(now)
            command = self.watches.holds_command()
            out = self._due_replay(now)  # also ends a first-message injection once the replay's lag is over
            out += self._poll(now)
            if self.outgoing_hooks is not None:
                out += self._poll_outgoing(self.outgoing_hooks, now)
            out = self._to_tool(out, now, command)
            if self.turns is not None and self.state != STARTING:
                self.watches.poll(now, self.last_output)
                self._stop_watching_for_notice()
            return out
        except Exception as exc:
            self._fail(exc)
            out, self._release_on_error = self._release_on_error, b""
            return out

    def _poll_outgoing(self, hooks: OutgoingHooks, now: float) -> bytes:
        """wrapagent's own message (`outgoing_hooks.py`); a submitted one begins a turn."""
        out, submitted = hooks.poll(now, self.last_output, self.state, self.conversations.message)
        notice = hooks.take_notice()
        if notice:
            self.screen_notice = notice
        if submitted and self.compaction_watch is not None:
            self.compaction_watch.submitted()  # its turn may compact the conversation too
        if submitted and self.turns is not None:
            self.turns.submitted(now)
        held = hooks.held_keys()
        if held:
            out += self._feed(held, now)  # the user's keys held meanwhile, in order
        return out

    def _stop_watching_for_notice(self) -> None:
        """The stop was seen (the watch forgot its key): output is no longer needed for it."""
        if not self.watches.notice_seen() or not self.watch_output:
            return
        if self.state in (CHATTING, ARMED, COMMAND, AWAIT_SUBMIT):
            self.watch_output = self._keep_watching

    def _fail(self, exc: Exception, data: bytes = b"") -> bytes:
        self._note(f"internal error ({exc!r}): injection switched off, keys passed through")
        self.report.status = "lost"
        held = self.keys.held.take_all() + data
        self._go(DONE)
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
        self.delivery.on_output(data, self.state)
        if self.view is not None:
            self.view.feed(data)
        if self.state in (STARTING, WAIT_READY):
            self.readiness.feed(data, now)  # only needed to see the ready screen

    def _on_input(self, data: bytes, now: float) -> bytes:
        if self.outgoing_hooks is not None and self.outgoing_hooks.holds(data, now):
            return b""
        if self.state in (STARTING, WAIT_READY):
            fired = self.readiness.on_key(data, now, self.state, self.last_output)
            if fired is not None:
                self._became_ready(now, *fired)
        if self.state == STARTING:
            self.keys.composer.now = now
            for tok in tokenize(data):
                self.readiness.key_before_ready(tok.kind, now)  # (its echo is waited for)
                sub = self.keys.composer.feed(tok)  # a message begun before readiness is not ours to prefix
                if sub is not None and not sub.empty and not sub.is_command_like(self.adapter.command_prefixes):
                    self.conversations.bare.append(
                        "a message was submitted before the tool's ready screen was seen")
            return data
        return self._feed(data, now)

    def _poll(self, now: float) -> bytes:
        quiet = self.readiness.quiet_after_reset(now, self.last_output) if self.state == WAIT_READY else None
        if quiet is not None:
            if quiet:
                self.report.ready_by = "quiet"
                self._arm()
                self.log(f"injection: output quiet after the reset; conversation "
                         f"{self.report.conversation} armed")
            return b""
        if self.state in (STARTING, WAIT_READY):
            fired = self.readiness.check(now, self.state, self.last_output)
            if fired is not None:
                self._became_ready(now, fired)
            return b""
        if self.state == HOLDING:
            return self._start_delivery(now)
        if self.state == DELIVERING:
            return self._due_chunks(now)
        if self.state == SETTLING:
            return self._maybe_release(now)
        return b""

    # -- the user's keys: message_keys.py ------------------------------------------

    def _feed(self, data: bytes, now: float) -> bytes:
        """Forward what may go to the child now; hold the rest from the first key of a message."""
        keys = self.keys
        if self.state in HOLD_STATES:
            keys.held.hold(now, data)
            return b""
        offset = 0
        tokens = tokenize(data)
        keys.composer.now = now
        for i, tok in enumerate(tokens):
            if self.view is not None and keys.read_screen(tok, now, self.view, self.state, self.last_output) \
                    and self.turns is not None:
                self.turns.resumed(now)  # a key answered a dialog: the agent may go on working in this turn
            if self.state == ARMED and keys.triggers(tok) and not blank_paste(tokens, i):
                self._trigger(now, data[offset:])
                return data[:offset]
            before, early = self.state, keys.begun_early
            sub = keys.composer.feed(tok)
            self._state_token(tok, sub)
            if sub is not None:
                why = keys.went_bare(sub, before, early) if self.inject else None
                if why is not None:
                    self.conversations.bare.append(why)
                self._submitted(sub, before, now)
            offset += len(tok.data)
        return data

    def _state_token(self, tok: Token, sub: Submission | None) -> None:
        state = self.state
        if state == ARMED:
            if tok.kind == TEXT:
                self._go(COMMAND)
            elif sub is not None and self.conversations.message == 1 and not sub.text.strip():
                self._note("a submission with no typed text (history recall?) was not injected; "
                           "the next message gets the blocks")
        elif state == COMMAND:
            if self.keys.command_over(tok, sub):
                self._go(ARMED)
                if tok.kind == ENTER and not self.keys.begun_early and self.conversations.message == 1 \
                        and not (sub is not None and self.keys.message_passed(sub)):
                    self._note("first input was a command: passed through, injection re-armed")
                self.keys.begun_early = False
        elif state == AWAIT_SUBMIT:
            if sub is not None:
                self._submitted_with_blocks()
            elif self.keys.clears(tok):
                self._note("composer cleared before submit; injection re-armed")
                self._go(ARMED)
                self._rearm()

    def _submitted_with_blocks(self) -> None:
        """AWAIT_SUBMIT: the message the blocks went in front of was submitted."""
        if self.conversations.submitted_with_blocks(self.log) and self.whole_session:
            self._after_undelivered()  # the next message gets the same blocks
        else:
            self._finish()

    def _trigger(self, now: float, held: bytes) -> None:
        self.keys.held.hold(now, held)
        self.delivery.held(now)
        self._go(HOLDING)
        # While keys are held, output moves the deadline EARLIER (settling ends
        # `settle_secs` after the composer redrew, not at `settle_max_secs`):
        # the proxy must call on_output so the main thread is woken to re-read
        # it. With watch_output false it only stores `last_output`, and a lone
        # first key waited for the next key or for settle_max_secs.
        self.watch_output = True

    # -- the blocks' delivery: block_delivery.py ----------------------------------

    def _start_delivery(self, now: float) -> bytes:
        """HOLDING: the blocks are written once the guards computed them."""
        if self.delivery.prefix is None:
            self._drain_wake()
        prefix = self.delivery.blocks(self.report)
        if prefix is None:
            return b""  # guards still running; the wake fd tells us when they finish
        if not prefix:
            # Later messages are armed at each submission: this one's keys go as they are, and the
            # next message is armed once this one is submitted (finishing now would re-arm at once
            # and hold this message's own keys again, one at a time, never submitting it).
            later_armed = self.whole_session and self.conversations.on_message is not None
            return self._release(now, finished=not later_armed)
        return self._write_blocks(now)

    def _write_blocks(self, now: float) -> bytes:
        self.delivery.write(now, *self._size, self.report)
        self._go(DELIVERING)
        return self._due_chunks(now)

    def _due_chunks(self, now: float) -> bytes:
        out, written = self.delivery.due_chunks(now)
        if written:
            self._go(SETTLING)
        return out

    def _maybe_release(self, now: float) -> bytes:
        """SETTLING: once the receipt is decided, the held keys go (or the blocks once more)."""
        verdict = self.delivery.settled(now, self.last_output, self.report)
        if self.delivery.notice:
            self.screen_notice, self.delivery.notice = self.delivery.notice, b""
        if verdict == RETRY:
            return self._write_blocks(now)
        return self._release(now, finished=False) if verdict == RELEASE else b""

    def _release(self, now: float, *, finished: bool) -> bytes:
        """Give the held keys to the child, read as if they had just been typed.

        They go through `_feed` in the new state, so an Enter among them
        submits, and a reset among them (fast typing) still counts. The first
        read goes now, the others when their turn comes (`held.HeldKeys`).
        """
        if self.delivery.trigger_at is not None:
            self.report.first_key_delay_ms = round((now - self.delivery.trigger_at) * 1000, 1)
        self.watch_output = self._keep_watching  # no deadline depends on output any more (a re-hold sets it again)
        size, count, first = self.keys.held.release(now)
        if finished:
            self._finish()
        else:
            self._go(AWAIT_SUBMIT)
            self.keys.in_paste = False
        self.log(f"injection: released {size} held bytes in {count} reads after "
                 f"{self.report.first_key_delay_ms} ms ({self.report.status})")
        out = self._feed(first, now)
        self._rehold_replay()
        return out + self._due_replay(now)  # reads that came together go together

    def _due_replay(self, now: float) -> bytes:
        """Replayed reads whose time has come, fed as if typed now."""
        out = bytearray()
        while self.state not in HOLD_STATES:
            data = self.keys.held.pop_due(now)
            if data is None:
                break
            out += self._on_input(data, now)
            self._rehold_replay()
        if not self.keys.held.busy(now) and self.state == DONE:  # (busy forgets a lag that is over)
            self.done = True  # held back by `_finish` until the last replayed key went
        return bytes(out)

    def _rehold_replay(self) -> None:
        """A replayed key started a message again (a Ctrl-C, then a key): the rest is held with it."""
        if self.keys.held.replay and self.state in HOLD_STATES:
            self.keys.held.rehold()

    def _rearm(self) -> None:
        """Back to waiting for a first message; the blocks are kept and delivered again."""
        self.delivery.rearm()
        self.report.status = "pending"

    # -- readiness: readiness.py ------------------------------------------------

    def _became_ready(self, now: float, by: str, at_key: bool = False) -> None:
        """The composer is ready (`by` a rule of `readiness.py`): arm for the next message."""
        self.watch_output = self._keep_watching
        if self.readiness.ready(by, at_key, self.state):
            # The markers did not show: wrapagent's own messages (stop check, `send`) find the
            # composer by the same rule, and the followed screen is read by the generic model.
            if self.outgoing is not None:
                self.outgoing.use_generic_composer()
            if self.view is not None:
                self.view.model = self.readiness.model
        self.report.ready_by = by
        if self.state == WAIT_READY:
            self._arm()
            self.log(f"injection: composer ready again for conversation {self.report.conversation}"
                     f" ({by} rule)")
            return
        self.report.ready_after_s = round(now - self._t0, 3)
        if self.inject:
            self._arm()
        else:
            self._go(CHATTING)
        self.log(f"injection: {self.adapter.name} ready after {self.report.ready_after_s:.2f}s"
                 f" ({by} rule)")
        if not self.inject and self.prompt_given:
            self._prompt_submitted(now)

    def _arm(self) -> None:
        """The composer is ready: the next message gets the blocks.

        Unless the user began one before it was (typed or pasted while the tool
        started, or before it came back after a reset): blocks cannot go in front
        of text already in the composer, so that message passes untouched, like a
        command, and the one after it gets them.
        """
        begun = self.readiness.begun_message(self.state, followed=self.view is not None)
        if self.keys.composer.in_paste:
            self._go(COMMAND)
            self.keys.in_paste = True
            self.keys.begun_early = True
            self._note("a paste begun before the composer was ready goes without the blocks; "
                       "the next message gets them")
        elif not begun:
            self._go(ARMED)
        else:
            self._go(COMMAND)
            self.keys.begun_early = True
            self._note("a message typed before the composer was ready goes without the blocks; "
                       "the next message gets them")

    # -- conversations: conversations.py --------------------------------------------

    def _submitted(self, sub: Submission, before: str, now: float) -> None:
        """A submission reached the child: a reset starts a new conversation, the rest are turns."""
        if not self.whole_session:
            return
        what = self.conversations.submitted(sub, before, now)
        if what == COMPACTED:
            self._compacted(sub.text.strip().split()[0], now)
        elif what == RESET:
            self._new_conversation(sub.text.strip(), now)
        elif what == NEXT_MESSAGE:
            self._next_message()

    def _prompt_submitted(self, now: float) -> None:
        """The tool is up with the command line's prompt submitted: it is the first turn, and with
        `every_message` guards the next typed message of this conversation gets their blocks."""
        if self.conversations.prompt_submitted(now):
            self._next_message()

    def _check_compaction(self, now: float) -> None:
        """The tool compacted by itself (`compaction_watch.py`): the next message gets the blocks."""
        if self.compaction_watch is not None and self.conversations.compacted_by_itself(self.state, self.log):
            self._compacted("automatic", now)

    def _new_conversation(self, command: str, now: float) -> None:
        """A reset command was submitted: fresh blocks for the next message, as for the first."""
        self.conversations.new_conversation()
        self._fresh_message()
        self._wait_ready_again(now)
        self.log(f"injection: {command} started conversation {self.report.conversation}; re-armed")

    def _compacted(self, how: str, now: float) -> None:
        """The conversation was compacted: the next message gets fresh blocks.

        After a typed command the tool redraws (and may ask something) before its composer is
        back: wait for it as after a reset. An automatic compaction happened inside a turn, the
        composer never left: the next message is armed at once (a message the user has begun
        typing meanwhile goes as it is, and the one after it gets them)."""
        self.conversations.compacted(how)
        self._fresh_message()
        if how == "automatic":
            self._arm()
        else:
            self._wait_ready_again(now)
        self.log(f"injection: conversation {self.conversations.number} compacted ({how}); "
                 "the next message gets the blocks")

    def _next_message(self) -> None:
        """`every_message` guards: the next message of this conversation gets their blocks."""
        self.conversations.next_message()
        self._fresh_message()
        self._go(ARMED)

    def _after_undelivered(self) -> None:
        """The screen never showed the blocks and the message went without them: the next
        message of this conversation gets the same blocks, once the composer shows again
        (whatever took them, a dialog most likely, is answered by then)."""
        self.conversations.after_undelivered()
        self._fresh_message()
        self._wait_ready_again(self.clock())

    def _fresh_message(self) -> None:
        """A fresh report was opened: a fresh hold for the next delivery."""
        self.keys.in_paste = False
        self.delivery.forget()

    def _wait_ready_again(self, now: float) -> None:
        """After a reset the tool may show a dialog first: keys pass until the composer is back
        (`readiness.Readiness.wait_again`)."""
        self._go(WAIT_READY)
        if self.readiness.wait_again(now, *self._size):
            self.watch_output = True

    def _finish(self) -> None:
        """This conversation's injection is over: stay for the session, or be dropped."""
        self.readiness.close()
        self.watch_output = self._keep_watching
        if self.whole_session:
            self._go(CHATTING)
            if self.conversations.on_message is not None:
                self._next_message()
            return
        self._go(DONE)
        # else once the last replayed key went and its gap to the next is kept (`_due_replay`)
        self.done = self.keys.held.next_due() is None

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
        if self.outgoing is not None:
            from wrapagent.inject.outgoing import TOOL_ENDED

            self.outgoing.cancel_all(TOOL_ENDED)
            self.outgoing.close()
        if self.view is not None:
            self.view.close()
        return self.conversations.close(self.state, self.delivery.prefix, self.log)
