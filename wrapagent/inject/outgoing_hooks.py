"""Where the injector gives way to wrapagent's own messages (a stop check's continuation, `wrapagent send`).

The queue and its rules live in `outgoing.py`; this is the injector's side
of it: its deadline, the user's keys while one is being submitted (held,
then fed behind its Enter), and when it may go (only between the user's
messages, never over their typing). An object of its own with explicit
inputs (the injector's state and message number, the composer the user's
keys are followed with): the injector applies what it returns.
"""

from __future__ import annotations

from wrapagent.inject.keys import REPLY, tokenize
from wrapagent.inject.states import ARMED, AWAIT_SUBMIT, CHATTING, COMMAND, HOLD_STATES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from wrapagent.inject.composer import Composer
    from wrapagent.inject.outgoing import Outgoing

MID_MESSAGE = (COMMAND, *HOLD_STATES, AWAIT_SUBMIT)
"""A later message (armed for its blocks) is being typed: wrapagent's own message waits for the
next stop, as when the composer holds the user's text."""


class OutgoingHooks:
    """The injector's side of the outgoing queue (see module docstring)."""

    def __init__(self, outgoing: Outgoing, composer: Composer) -> None:
        self.outgoing = outgoing
        self.composer = composer
        """The user's keys as the injector follows them: does the composer hold their text."""

    def deadline(self, own: float | None, last_output: float) -> float | None:
        """The earlier of `own` and the queue's next deadline."""
        theirs = self.outgoing.deadline(last_output)
        if theirs is not None:
            own = theirs if own is None else min(own, theirs)
        return own

    def holds(self, data: bytes, now: float) -> bool:
        """True when the user's keys must wait: they follow wrapagent's Enter, in order."""
        if self.outgoing.busy:
            self.outgoing.held += data
            return True
        if any(tok.kind != REPLY for tok in tokenize(data)):
            self.outgoing.last_user_key = now
        return False

    def poll(self, now: float, last_output: float, state: str, message: int) -> tuple[bytes, bool]:
        """wrapagent's own message: only between the user's messages, never over their typing.

        Returns the bytes for the tool and whether a message was submitted (a turn begins);
        the user's keys held meanwhile are then taken with `held_keys`.
        """
        outgoing = self.outgoing
        if not outgoing.busy and not outgoing.pending():
            return b"", False
        typing = state in MID_MESSAGE and message > 1
        if not outgoing.busy and state not in (CHATTING, ARMED) and not typing:
            outgoing.drop_overtaken()  # the user's keys own the composer: what they overtook is told so
            return b"", False
        # Unknown content (a key the keys cannot read) counts as text unless the screen can tell.
        unknown = self.composer.unknown and outgoing.screen is None
        return outgoing.poll(now, last_output, self.composer.has_text or unknown or typing)

    def held_keys(self) -> bytes:
        """The user's keys held while wrapagent's message went, once it is no longer busy."""
        if self.outgoing.busy or not self.outgoing.held:
            return b""
        return self.outgoing.take_held()

    def take_notice(self) -> bytes:
        """One line for the user's terminal (wrapagent's message not delivered), once."""
        notice, self.outgoing.notice = self.outgoing.notice, b""
        return notice
