"""What the user submits, seen from their keys alone.

A wrapper sees keys, not the tool's composer. That is enough to notice the
two things a whole session needs: a submission (Enter outside a paste, not
after a `\\` that claude and gemini turn into a newline), and whether it was
a reset command typed in full (`/clear`, `/new`…) on an otherwise empty
composer. Anything the keys cannot tell for sure (cursor keys, history
recall, Tab completion or a mode key, Esc, a line too long to keep, a key
that answered a dialog) makes the content *unknown*: such a submission still
counts, but is never taken for a reset, so a guess can only miss a reset,
never invent one. The screen ends the unknown: when the injector's screen
model shows the composer empty again, `settled_empty` makes it known (and
empty) once more (`inject/screen_model.py`).
"""

from __future__ import annotations

from wrapagent.inject.keys import (BACKSPACE, ENTER, ESCAPE, INTERRUPT, NEWLINE, PASTE_END,
                                   PASTE_START, REPLY, TEXT, Token)

MAX_TRACKED = 512
"""Bytes of typed text kept per composer line: resets are short, messages need not be kept."""


class Submission:
    """One Enter that submitted the composer. A plain class: kept off the start-up path."""

    __slots__ = ("text", "pasted", "unknown")

    def __init__(self, text: str, pasted: bool, unknown: bool) -> None:
        self.text = text
        self.pasted = pasted
        self.unknown = unknown

    @property
    def empty(self) -> bool:
        """Nothing typed: an Enter that answers a prompt (or does nothing), not a message."""
        return not self.text.strip() and not self.pasted and not self.unknown

    def is_command_like(self, prefixes: tuple[str, ...]) -> bool:
        """Typed text starting with a command prefix (`/`, `!`): not a message for the model."""
        return not self.pasted and self.text.lstrip(" ").startswith(prefixes)

    def is_command_line(self, commands: tuple[str, ...]) -> bool:
        """One of `commands` typed in full on an empty composer, maybe with arguments after a blank."""
        if self.pasted or self.unknown:
            return False
        text = self.text.strip(" \t")
        return any(text == c or text.startswith(c + " ") for c in commands)

    def is_command(self, commands: tuple[str, ...]) -> bool:
        """True when the composer held exactly one of `commands` (trailing blanks allowed)."""
        if self.pasted or self.unknown:
            return False
        return self.text.strip(" \t") in commands

    def __repr__(self) -> str:
        return f"Submission({self.text!r}, pasted={self.pasted}, unknown={self.unknown})"


class Composer:
    """Follows the composer line from the user's tokens; `feed` returns a Submission on Enter."""

    def __init__(self, esc_clears: bool = False) -> None:
        self.esc_clears = esc_clears
        """A lone Esc clears the composer (the adapter says so); else what it did is unknown."""
        self._buf = bytearray()
        self._pasted = False
        self._unknown = False
        self._in_paste = False
        self._backslash = False
        self._tail = bytearray()
        """While unknown: what was typed since it became so (the screen must show exactly this)."""
        self.unknown_at = float("-inf")
        """When the composer last became unknown (the clock of `feed`'s caller)."""
        self.now = 0.0
        """Set by the caller before `feed`: the time of the key being fed."""

    def feed(self, tok: Token) -> Submission | None:
        kind = tok.kind
        if kind == REPLY:
            return None  # the terminal talking, not the user
        backslash, self._backslash = self._backslash, kind == TEXT and tok.data.endswith(b"\\")
        if kind == PASTE_START:
            self._in_paste = True
        elif kind == PASTE_END:
            self._in_paste = False
        elif self._in_paste:
            self._pasted = True  # (an empty paste puts nothing in the composer)
            return None
        elif kind == ENTER and not backslash:
            return self._submit()
        elif kind == TEXT:
            self._add(tok.data)
        elif kind in (NEWLINE, ENTER):
            self._add(b"\n")
        elif kind == BACKSPACE:
            self._erase()
        elif kind == INTERRUPT or (kind == ESCAPE and self.esc_clears):
            self.clear()
        else:
            self._set_unknown()  # cursor keys, Tab, Ctrl-letters: the line is no longer ours to read
        return None

    def _set_unknown(self) -> None:
        self._unknown = True
        self._tail.clear()
        self.unknown_at = self.now

    @property
    def typed_since_unknown(self) -> str:
        """The text typed since the composer became unknown ("" when none, or when known)."""
        return self._tail.decode("utf-8", "replace") if self._unknown else ""

    @property
    def has_text(self) -> bool:
        """Typed characters (a Backspace erases a whole one) or a paste since the last submission or clear."""
        return bool(self._buf) or self._pasted

    def holds_command(self, prefixes: tuple[str, ...]) -> bool:
        """The line typed so far starts with a command prefix (`/`…): the tool shows its menu."""
        return not self._pasted and self._buf.lstrip(b" ").startswith(tuple(p.encode() for p in prefixes))

    @property
    def unknown(self) -> bool:
        """A key the composer model cannot read came since the last submission or clear."""
        return self._unknown

    def make_unknown(self) -> None:
        """What the composer holds is no longer the keys' to tell (a key answered a dialog)."""
        self._buf.clear()
        self._pasted = False
        self._set_unknown()

    def known_text(self, text: str) -> None:
        """The screen shows exactly this in the composer: the keys' picture is replaced by it."""
        if self._in_paste:
            return
        self.clear()
        self._buf += text.encode("utf-8")

    def settled_empty(self) -> None:
        """The screen shows the composer empty: its content is known again (nothing)."""
        if not self._in_paste:
            self.clear()

    @property
    def typed(self) -> str:
        """The typed text since the last submission or clear (as far as the keys tell)."""
        return self._buf.decode("utf-8", "replace")

    @property
    def in_paste(self) -> bool:
        """Between a paste's start and its end: the keys are the paste's, not the user's typing."""
        return self._in_paste

    def clear(self) -> None:
        self._buf.clear()
        self._tail.clear()
        self._pasted = self._unknown = self._in_paste = self._backslash = False

    def _add(self, data: bytes) -> None:
        if len(self._buf) + len(data) > MAX_TRACKED:
            self._set_unknown()
            return
        self._buf += data
        if self._unknown:
            self._tail += data

    def _erase(self) -> None:
        if self._unknown and self._tail:
            _erase_last(self._tail)
        if not self._buf:
            return
        start = len(self._buf) - 1
        while start > 0 and (self._buf[start] & 0xC0) == 0x80:
            start -= 1  # back to the first byte of the last UTF-8 character
        del self._buf[start:]

    def _submit(self) -> Submission:
        sub = Submission(self._buf.decode("utf-8", "replace"), self._pasted, self._unknown)
        self.clear()
        return sub


def _erase_last(buf: bytearray) -> None:
    """Drop the last UTF-8 character of `buf`."""
    start = len(buf) - 1
    while start > 0 and (buf[start] & 0xC0) == 0x80:
        start -= 1
    del buf[start:]
