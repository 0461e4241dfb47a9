"""The user's keys, one token at a time: which key starts a message, and what passes untouched.

The first key of a message (a paste's start, or typed text that is neither
blank nor a command) is held and triggers the delivery (`block_delivery.py`);
a command, or a message begun before the composer was ready, passes through
and the injection re-arms once it is submitted or cleared. Messages that
reach the tool without the blocks are noted with the reason (the record says
why). A mixin of `FirstMessageInjector`: it shares the injector's state.
"""

from __future__ import annotations

from wrapagent.inject.keys import (BACKSPACE, ENTER, ESCAPE, INTERRUPT, PASTE_END, PASTE_START, TEXT, Token,
                                   blank_paste, tokenize)
from wrapagent.inject.states import ARMED, AWAIT_SUBMIT, COMMAND, HOLD_STATES, HOLDING, WAIT_READY

TYPE_CHECKING = False
if TYPE_CHECKING:
    from wrapagent.inject.composer import Submission


class MessageKeys:
    """Finding the first key of a message in the user's input (part of `FirstMessageInjector`)."""

    def _feed(self, data: bytes, now: float) -> bytes:
        """Forward what may go to the child now; hold the rest from the first key of a message."""
        if self.state in HOLD_STATES:
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
            elif sub is not None and self._message == 1 and not sub.text.strip():
                self._note("a submission with no typed text (history recall?) was not injected; "
                           "the next message gets the blocks")
        elif state == COMMAND:
            self._command_token(tok, sub)
        elif state == AWAIT_SUBMIT:
            if sub is not None:
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
        self._trigger_at = now
        self.state = HOLDING
        # While keys are held, output moves the deadline EARLIER (settling ends
        # `settle_secs` after the composer redrew, not at `settle_max_secs`):
        # the proxy must call on_output so the main thread is woken to re-read
        # it. With watch_output false it only stores `last_output`, and a lone
        # first key waited for the next key or for settle_max_secs (issue 21).
        self.watch_output = True
