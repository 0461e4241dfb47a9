"""Where the injector gives way to wrapagent's own messages (a stop check's continuation, `wrapagent send`).

The queue and its rules live in `outgoing.py`; these are the injector's
hooks into it: its deadline, the user's keys while one is being submitted
(held, then fed behind its Enter), the output and size it follows, and when
it may go (only between the user's messages, never over their typing). A
mixin of `SessionInjector`: it shares the injector's state.
"""

from __future__ import annotations

from wrapagent.inject.keys import REPLY, tokenize
from wrapagent.inject.states import ARMED, AWAIT_SUBMIT, CHATTING, COMMAND, HOLD_STATES

MID_MESSAGE = (COMMAND, *HOLD_STATES, AWAIT_SUBMIT)
"""A later message (armed for its blocks) is being typed: wrapagent's own message waits for the
next stop, as when the composer holds the user's text."""


class OutgoingHooks:
    """The injector's side of the outgoing queue (part of `SessionInjector`)."""

    def _outgoing_deadline(self, own: float | None) -> float | None:
        """The earlier of `own` and the queue's next deadline."""
        if self.outgoing is not None:
            theirs = self.outgoing.deadline(self.last_output)
            if theirs is not None:
                own = theirs if own is None else min(own, theirs)
        return own

    def _outgoing_holds(self, data: bytes, now: float) -> bool:
        """True when the user's keys must wait: they follow wrapagent's Enter, in order."""
        if self.outgoing is None:
            return False
        if self.outgoing.busy:
            self.outgoing.held += data
            return True
        if any(tok.kind != REPLY for tok in tokenize(data)):
            self.outgoing.last_user_key = now
        return False

    def _poll_outgoing(self, now: float) -> bytes:
        """wrapagent's own message: only between the user's messages, never over their typing."""
        outgoing = self.outgoing
        assert outgoing is not None
        if not outgoing.busy and not outgoing.pending():
            return b""
        typing = self.state in MID_MESSAGE and self._message > 1
        if not outgoing.busy and self.state not in (CHATTING, ARMED) and not typing:
            outgoing.drop_overtaken()  # the user's keys own the composer: what they overtook is told so
            return b""
        # Unknown content (a key the keys cannot read) counts as text unless the screen can tell.
        unknown = self._composer.unknown and outgoing.screen is None
        out, submitted = outgoing.poll(now, self.last_output, self._composer.has_text or unknown or typing)
        if outgoing.notice:
            self.screen_notice, outgoing.notice = outgoing.notice, b""
        if submitted and self.compaction_watch is not None:
            self.compaction_watch.submitted()  # its turn may compact the conversation too
        if submitted and self.turns is not None:
            self.turns.submitted(now)
        if not outgoing.busy and outgoing.held:
            out += self._feed(outgoing.take_held(), now)  # the user's keys held meanwhile, in order
        return out
