"""What the user submits, seen from their keys alone.

A wrapper sees keys, not the tool's composer. That is enough to notice the
two things a whole session needs: a submission (Enter outside a paste, not
after a `\\` that claude and gemini turn into a newline), and whether it was
a reset command typed in full (`/clear`, `/new`…) on an otherwise empty
composer. Anything the keys cannot tell for sure (cursor keys, history
recall, Tab completion, a line too long to keep) makes the content
*unknown*: such a submission still counts, but is never taken for a reset,
so a guess can only miss a reset, never invent one.
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
            self._unknown = True  # cursor keys, Tab, Ctrl-letters: the line is no longer ours to read
        return None

    @property
    def has_text(self) -> bool:
        """Typed characters (a Backspace erases a whole one) or a paste since the last submission or clear."""
        return bool(self._buf) or self._pasted

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
        self._pasted = self._unknown = self._in_paste = self._backslash = False

    def _add(self, data: bytes) -> None:
        if len(self._buf) + len(data) > MAX_TRACKED:
            self._unknown = True
            return
        self._buf += data

    def _erase(self) -> None:
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
