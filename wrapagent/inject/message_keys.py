"""The user's keys, one token at a time: which key starts a message, and what passes untouched.

The first key of a message (a paste's start, or typed text that is neither
blank nor a command) is held and triggers the delivery (`block_delivery.py`);
a command, or a message begun before the composer was ready, passes through
and the injection re-arms once it is submitted or cleared. Messages that
reach the tool without the blocks are noted with the reason (the record says
why).

`MessageKeys` owns what the keys tell: the `Composer` that follows them, the
keys held from the tool (`HeldKeys`), a command's paste passing through, a
message begun before the composer was ready. It reads tokens and the followed
screen and answers questions (does this key start a message, is this command
over, why did this message go bare); the injector changes state on the answers.
"""

from __future__ import annotations

from wrapagent.inject.composer import Composer
from wrapagent.inject.held import HeldKeys
from wrapagent.inject.keys import (BACKSPACE, ENTER, ESCAPE, INTERRUPT, PASTE_END, PASTE_START, TEXT, Token)
from wrapagent.inject.states import ARMED, CHATTING, COMMAND, WAIT_READY

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.inject.adapters.base import Adapter
    from wrapagent.inject.composer import Submission
    from wrapagent.inject.composer_screen import ComposerScreen


class MessageKeys:
    """What the user's keys say about the composer and the message (see module docstring)."""

    def __init__(self, adapter: Adapter, log: Callable[[str], None]) -> None:
        self.adapter = adapter
        self.log = log
        self.composer = Composer(esc_clears=adapter.esc_clears_composer)
        """What the tool's composer holds, as far as the keys tell (`composer.py`)."""
        self.held = HeldKeys()
        """The keys held from the tool, then released with their timing (`held.py`)."""
        self.in_paste = False
        """A paste passing through untouched (a command's, or one begun before readiness)."""
        self.begun_early = False
        """The message passing through was begun before the composer was ready."""
        self._unknown_seen: str | None = None

    def triggers(self, tok: Token) -> bool:
        """The first key of a message: a paste's start, or typed text that is not blank or a command.

        Blank text (spaces) is no message: blocks put in front of it would be
        submitted alone by the Enter after it, and the real message go bare. Nor
        is a key while the composer's content is unknown (fail safe: nothing is
        typed next to text wrapagent cannot see).
        """
        if self.in_paste or self.composer.unknown:
            return False
        return tok.kind == PASTE_START or (tok.kind == TEXT and bool(tok.data.strip())
                                           and not self._is_command(tok.data.lstrip()))

    def clears(self, tok: Token) -> bool:
        """Ctrl-C empties the composer; a lone Esc only if the adapter says so (else: unknown,
        and the blocks already in the composer are taken to be still there)."""
        return tok.kind == INTERRUPT or (tok.kind == ESCAPE and self.adapter.esc_clears_composer)

    def command_over(self, tok: Token, sub: Submission | None) -> bool:
        """COMMAND: the command (or the early message) was submitted, cleared or erased."""
        if tok.kind == PASTE_START:
            self.in_paste = True
        elif tok.kind == PASTE_END:
            self.in_paste = False
        elif self.in_paste:
            return False
        elif tok.kind == BACKSPACE:
            # The composer erased a whole character (UTF-8 aware); counting bytes here
            # left `/é` + two Backspaces a command, and the next message went bare.
            return not self.composer.has_text
        elif sub is not None or tok.kind == ENTER or self.clears(tok):
            return True
        return False

    def went_bare(self, sub: Submission, before: str, early: bool) -> str | None:
        """Why a submitted message reached the tool without the blocks (None: it did not, or it is
        no message). `before`: the injector's state before its Enter; `early`: it was begun
        before the composer was ready."""
        if sub.empty:
            return None
        if before == ARMED:
            if sub.unknown:  # (blank text or a blank paste is no message)
                return "a message was submitted with no typed text (history recall?)"
            if self.message_passed(sub):
                # Text in the composer while armed was typed before: no key of it triggered.
                return "a message typed before the composer was ready was submitted"
        elif before == COMMAND:
            if early:
                return "a message begun before the composer was ready was submitted"
            if self.message_passed(sub):
                # Its first key came while the screen showed other text in the composer (the
                # tool not yet caught up with the Enter before): no key of it triggered.
                return "a message begun before the screen showed the composer empty was submitted"
        elif before == WAIT_READY and not sub.is_command_like(self.adapter.command_prefixes):
            return "a message was submitted before the composer showed again"
        return None

    def message_passed(self, sub: Submission) -> bool:
        """`sub` was a message for the model that passed untouched (no key of it triggered): known
        typed text that does not start with a command prefix, or a paste."""
        return not sub.unknown and bool(sub.text.strip() or sub.pasted) \
            and not sub.is_command_like(self.adapter.command_prefixes)

    def _is_command(self, text: bytes) -> bool:
        return any(text.startswith(p.encode()) for p in self.adapter.command_prefixes)

    # -- the followed screen, where the keys cannot tell ------------------------------

    def read_screen(self, tok: Token, now: float, view: ComposerScreen, state: str, last_output: float) -> bool:
        """Where the keys cannot tell what the composer holds, ask the screen (`screen_model.py`).

        Read at the first key of a message (a known-empty composer: is a dialog up, which this
        key answers?), at the keys typed while the composer is unknown (does it show exactly
        what was typed since: nothing, or those keys?) and at an Enter while it is unknown
        (the same, or exactly a reset command). Not caught up, or the tool has not redrawn
        since the unreadable key: no reading, nothing changes. True when the key answered a
        dialog: the agent may go on working in this turn.
        """
        composer = self.composer
        if composer.in_paste or self.in_paste or state not in (ARMED, COMMAND, CHATTING):
            return False
        kind = tok.kind
        if kind == ENTER:
            if composer.unknown:
                self._enter_from_screen(now, view, last_output)
            return False
        if kind not in (TEXT, PASTE_START) or (composer.has_text and not composer.unknown):
            return False
        typed = composer.typed_since_unknown
        if composer.unknown and not typed and not self._screen_settled(now, last_output):
            return False
        reading = view.read()
        if reading is None:
            return False
        from wrapagent.inject import screen_model

        answered = False
        if reading.dialog and view.model.shape is not None:
            # (the generic reading's dialog is a guess from the bottom lines: no key is
            # taken from the composer on a guess)
            if not composer.unknown:
                self.log("injection: a key went to a dialog, not the composer")
            composer.make_unknown()  # a one-key answer is no text of the composer's
            answered = True
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
        return answered

    @staticmethod
    def _shows_exactly(reading, typed: str) -> bool:
        """The composer on the screen holds exactly `typed` (nothing, when nothing was typed)."""
        from wrapagent.inject import screen_model

        if not typed.strip():
            return reading.composer == screen_model.EMPTY and not typed
        return reading.composer == screen_model.TEXT and (reading.composer_text or "").strip() == typed.strip()

    def _note_unknown(self, seen: str) -> None:
        """Say once per composer reading why the composer stays unknown (the log, not the record)."""
        if self._unknown_seen != seen:
            self._unknown_seen = seen
            self.log(f"injection: the composer stays unknown; the screen shows it {seen}")

    def _screen_settled(self, now: float, last_output: float) -> bool:
        """The tool had time to draw what the unreadable key did (see SETTLE_SECS)."""
        from wrapagent.inject.composer_screen import SETTLE_SECS

        since = self.composer.unknown_at
        return last_output > since or now - since >= SETTLE_SECS

    def _enter_from_screen(self, now: float, view: ComposerScreen, last_output: float) -> None:
        """An Enter on an unknown composer: the screen may show exactly a reset command."""
        if not self._screen_settled(now, last_output):
            return
        reading = view.read()
        if reading is None or reading.dialog or reading.composer_text is None:
            return
        typed = self.composer.typed_since_unknown
        shown = reading.composer_text.strip()
        if shown in self.adapter.reset_commands or (typed.strip() and shown == typed.strip()):
            self.log(f"injection: the screen shows {shown[:40]!r} in the composer")
            self.composer.known_text(typed if shown == typed.strip() else shown)
