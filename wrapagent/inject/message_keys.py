"""The user's keys, one token at a time: which key starts a message, and what passes untouched.

The first key of a message (a paste's start, or typed text that is neither
blank nor a command) is held and triggers the delivery (`block_delivery.py`);
a command, or a message begun before the composer was ready, passes through
and the injection re-arms once it is submitted or cleared. Messages that
reach the tool without the blocks are noted with the reason (the record says
why). A mixin of `SessionInjector`: it shares the injector's state.
"""

from __future__ import annotations

from wrapagent.inject.keys import (BACKSPACE, ENTER, ESCAPE, INTERRUPT, PASTE_END, PASTE_START, TEXT, Token,
                                   blank_paste, tokenize)
from wrapagent.inject.states import ARMED, AWAIT_SUBMIT, CHATTING, COMMAND, HOLD_STATES, HOLDING, WAIT_READY

TYPE_CHECKING = False
if TYPE_CHECKING:
    from wrapagent.inject.composer import Submission


class MessageKeys:
    """Finding the first key of a message in the user's input (part of `SessionInjector`)."""

    def _feed(self, data: bytes, now: float) -> bytes:
        """Forward what may go to the child now; hold the rest from the first key of a message."""
        if self.state in HOLD_STATES:
            self._keys.hold(now, data)
            return b""
        offset = 0
        tokens = tokenize(data)
        self._composer.now = now
        for i, tok in enumerate(tokens):
            if self.view is not None:
                self._composer_from_screen(tok, now)
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

    def _composer_from_screen(self, tok: Token, now: float) -> None:
        """Where the keys cannot tell what the composer holds, ask the screen (`screen_model.py`).

        Read at the first key of a message (a known-empty composer: is a dialog up, which this
        key answers?), at the keys typed while the composer is unknown (does it show exactly
        what was typed since: nothing, or those keys?) and at an Enter while it is unknown
        (the same, or exactly a reset command). Not caught up, or the tool has not redrawn
        since the unreadable key: no reading, nothing changes.
        """
        composer = self._composer
        if composer.in_paste or self._in_paste or self.state not in (ARMED, COMMAND, CHATTING):
            return
        kind = tok.kind
        if kind == ENTER:
            if composer.unknown:
                self._enter_from_screen(now)
            return
        if kind not in (TEXT, PASTE_START) or (composer.has_text and not composer.unknown):
            return
        typed = composer.typed_since_unknown
        if composer.unknown and not typed and not self._screen_settled(now):
            return
        reading = self.view.read()
        if reading is None:
            return
        from wrapagent.inject import screen_model

        if reading.dialog and self.view.model.shape is not None:
            # (the generic reading's dialog is a guess from the bottom lines: no key is
            # taken from the composer on a guess)
            if not composer.unknown:
                self.log("injection: a key went to a dialog, not the composer")
            composer.make_unknown()  # a one-key answer is no text of the composer's
            if self.turns is not None:
                self.turns.resumed(now)  # an answer: the agent may go on working in this turn
        elif not composer.unknown:
            if reading.composer == screen_model.TEXT:
                composer.make_unknown()  # text the keys did not put there (recalled, drawn late)
        elif self._shows_exactly(reading, typed):
            self.log("injection: the screen shows the composer empty again" if not typed else
                     "injection: the screen shows the composer holding exactly what was typed since")
            composer.known_text(typed)
        # No composer found where the tool's shape says (a release drew it elsewhere), or it
        # shows something else: the screen cannot tell, and the keys' picture stands.
        if composer.unknown:
            self._note_unknown(f"{reading.composer} {reading.composer_text or ''!r}"[:80])

    @staticmethod
    def _shows_exactly(reading, typed: str) -> bool:
        """The composer on the screen holds exactly `typed` (nothing, when nothing was typed)."""
        from wrapagent.inject import screen_model

        if not typed.strip():
            return reading.composer == screen_model.EMPTY and not typed
        return reading.composer == screen_model.TEXT and (reading.composer_text or "").strip() == typed.strip()

    def _note_unknown(self, seen: str) -> None:
        """Say once per composer reading why the composer stays unknown (the log, not the record)."""
        if getattr(self, "_unknown_seen", None) != seen:
            self._unknown_seen = seen
            self.log(f"injection: the composer stays unknown; the screen shows it {seen}")

    def _screen_settled(self, now: float) -> bool:
        """The tool had time to draw what the unreadable key did (see SETTLE_SECS)."""
        from wrapagent.inject.composer_screen import SETTLE_SECS

        since = self._composer.unknown_at
        return self.last_output > since or now - since >= SETTLE_SECS

    def _enter_from_screen(self, now: float) -> None:
        """An Enter on an unknown composer: the screen may show exactly a reset command."""
        if not self._screen_settled(now):
            return
        reading = self.view.read()
        if reading is None or reading.dialog or reading.composer_text is None:
            return
        typed = self._composer.typed_since_unknown
        shown = reading.composer_text.strip()
        if shown in self.adapter.reset_commands or (typed.strip() and shown == typed.strip()):
            self.log(f"injection: the screen shows {shown[:40]!r} in the composer")
            self._composer.known_text(typed if shown == typed.strip() else shown)

    def _triggers(self, tok: Token) -> bool:
        """The first key of a message: a paste's start, or typed text that is not blank or a command.

        Blank text (spaces) is no message: blocks put in front of it would be
        submitted alone by the Enter after it, and the real message go bare. Nor
        is a key while the composer's content is unknown (fail safe: nothing is
        typed next to text wrapagent cannot see).
        """
        if self._in_paste or self._composer.unknown:
            return False
        return tok.kind == PASTE_START or (tok.kind == TEXT and bool(tok.data.strip())
                                           and not self._is_command(tok.data.lstrip()))

    def _state_token(self, tok: Token, sub: Submission | None) -> None:
        state = self.state
        if state == ARMED:
            if tok.kind == TEXT:
                self.state = COMMAND
            elif sub is not None and self._message == 1 and not sub.text.strip():
                self._note("a submission with no typed text (history recall?) was not injected; "
                           "the next message gets the blocks")
        elif state == COMMAND:
            self._command_token(tok, sub)
        elif state == AWAIT_SUBMIT:
            if sub is not None and self.report.status == "none":
                self._finish()  # no blocks for this message: the next one is armed
            elif sub is not None:
                n, m = self.report.conversation, self.report.message
                if self.report.status == "not delivered":  # the screen never showed them: say so
                    self.log(f"injection: conversation {n}, message {m}: submitted WITHOUT the blocks "
                             "(not delivered)")
                    if self.whole_session:
                        self._after_undelivered()
                        return
                else:
                    self.report.status = "submitted"
                    # Messages of this conversation that went before it, bare (typed before the
                    # ready screen): the record says so even though the blocks did arrive later.
                    self.report.notes.extend(f"before this message: {why}" for why in dict.fromkeys(self._bare))
                    self.log("injection: first message submitted with the blocks" if (n, m) == (1, 1) else
                             f"injection: conversation {n}, message {m}: submitted with the blocks")
                self._finish()
            elif self._clears(tok):
                self._note("composer cleared before submit; injection re-armed")
                self.state = ARMED
                self._rearm()

    def _went_bare(self, sub: Submission, before: str, early: bool) -> None:
        """Note a message that reached the tool without the blocks (the record and log say why)."""
        if not self.inject or sub.empty:
            return
        if before == ARMED:
            if sub.unknown:  # (blank text or a blank paste is no message)
                self._bare.append("a message was submitted with no typed text (history recall?)")
            elif (sub.text.strip() or sub.pasted) and not sub.is_command_like(self.adapter.command_prefixes):
                # Text in the composer while armed was typed before: no key of it triggered.
                self._bare.append("a message typed before the composer was ready was submitted")
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
        self.delivery.held(now)
        self.state = HOLDING
        # While keys are held, output moves the deadline EARLIER (settling ends
        # `settle_secs` after the composer redrew, not at `settle_max_secs`):
        # the proxy must call on_output so the main thread is woken to re-read
        # it. With watch_output false it only stores `last_output`, and a lone
        # first key waited for the next key or for settle_max_secs.
        self.watch_output = True
