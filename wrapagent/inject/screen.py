"""The tool's screen as a user sees it, for readiness detection only.

A terminal emulator (pyte) is the right tool: markers such as claude's `❯`
between two rules are drawn with cursor movement, not printed in order. It
is fed only until injection is done, so the proxy costs nothing afterwards.

pyte does not know every sequence today's TUIs send (gemini's `ESC[>4;?m`
makes pyte 0.8 call `select_graphic_rendition(private=True)`, which it does
not accept). An emulator hiccup must never reach the user: unknown private
SGR is ignored, and if the parser still fails it is rebuilt on the same
screen and the chunk is dropped from the emulator (never from the output).

`feed` only keeps the chunk (a list append, on the proxy's output path); the
emulator runs when the screen is read (`text`, `before_cursor`, `cursor`,
`resize`). pyte costs ~1.2 s of CPU per MB of TUI output: run on every chunk,
a tool that printed megabytes before its composer showed (a long transcript
redrawn at resume, or any flood from a program named in `[agents]`) came out at
the emulator's pace, and took the interpreter lock from the copy threads. Of
output not yet read, only the last LAZY_MAX_BYTES (to 2x that) are kept: past that the
emulator starts over on a blank screen from there (what a reader looks for,
a composer or a dialog, is drawn after the flood, not before it).
"""

from __future__ import annotations

LAZY_MAX_BYTES = 128 * 1024
"""Output kept for the emulator until the screen is read (a full frame of a TUI is 10-30 KB).
Past twice this, the oldest is dropped and the emulator starts over: a reading costs at most
2 x this much pyte (~0.3 s, once, after a flood)."""


def _screen_class():
    import pyte

    class _TolerantScreen(pyte.Screen):
        def select_graphic_rendition(self, *attrs: int, private: bool = False) -> None:
            if private:
                return  # xterm modifyOtherKeys & co.: not a rendition change
            super().select_graphic_rendition(*attrs)

    return pyte, _TolerantScreen


class Screen:
    def __init__(self, rows: int, cols: int) -> None:
        pyte, cls = _screen_class()
        self._pyte = pyte
        self._screen = cls(max(cols, 1), max(rows, 1))
        self._stream = pyte.ByteStream(self._screen)
        self._closed = False
        self.errors = 0
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._restart = False

    def feed(self, data: bytes) -> None:
        """Keep `data` for the emulator (see the module docstring): no emulation here."""
        if self._closed or not data:
            return
        self._pending.append(data)
        self._pending_bytes += len(data)
        if self._pending_bytes > 2 * LAZY_MAX_BYTES:
            self._drop_oldest()

    def feed_now(self, data: bytes) -> None:
        """Emulate `data` now, in the caller's thread: for a reader with a thread of its own
        (`followed_screen.FollowedScreen`, which bounds its own lag), so that its readers never
        pay for the emulation."""
        if self._closed or not data:
            return
        self._catch_up()
        self._emulate(data)

    def _drop_oldest(self) -> None:
        """Keep the last LAZY_MAX_BYTES of the output not yet emulated; the emulator starts over.
        (At twice the bound, not at the bound: one cut per LAZY_MAX_BYTES of output, not per chunk.)"""
        pending = self._pending
        kept, first = 0, len(pending)
        while first > 0 and kept < LAZY_MAX_BYTES:
            first -= 1
            kept += len(pending[first])
        del pending[:first]
        if kept > LAZY_MAX_BYTES:  # the oldest chunk kept, cut to the bound
            pending[0] = pending[0][kept - LAZY_MAX_BYTES:]
            kept = LAZY_MAX_BYTES
        self._pending_bytes = kept
        self._restart = True

    def _catch_up(self) -> None:
        """Emulate what was fed since the last reading (from a blank screen after a drop)."""
        if self._closed or not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        if self._restart:
            self._restart = False
            self._screen.reset()
            self._stream = self._pyte.ByteStream(self._screen)
            data = _from_a_boundary(data)
        self._emulate(data)

    def _emulate(self, data: bytes) -> None:
        """Feed `data` so that an ESC always starts a new sequence, as in a real terminal.

        pyte takes the ESC that follows an unfinished sequence (a lone ESC at
        the end of a chunk, a cut-off CSI) as part of it, and then prints the
        rest of the next sequence as text: `ESC` + `ESC[H` drew "[H" on the
        screen. xterm and every terminal a user runs abandon the unfinished
        sequence instead; the parser is rebuilt on the same screen to do the same.
        A sequence pyte fails on is dropped the same way, and the output after it
        is still drawn.
        """
        pieces = data.split(b"\x1b")
        if pieces[0]:
            self._feed_piece(pieces[0])
        for piece in pieces[1:]:
            if not getattr(self._stream, "_taking_plain_text", True):
                self._stream = self._pyte.ByteStream(self._screen)
            self._feed_piece(b"\x1b" + piece)

    def _feed_piece(self, piece: bytes) -> None:
        try:
            self._stream.feed(piece)
        except Exception:
            self.errors += 1
            self._stream = self._pyte.ByteStream(self._screen)

    def resize(self, rows: int, cols: int) -> None:
        if not self._closed:
            self._catch_up()  # the output before the resize was drawn at the old size
            self._screen.resize(max(rows, 1), max(cols, 1))

    def text(self) -> str:
        self._catch_up()
        return "\n".join(line.rstrip() for line in self._screen.display)

    def cursor(self) -> tuple[int, int]:
        """The cursor's row and column (0-based), once what was fed is emulated."""
        self._catch_up()
        cursor = self._screen.cursor
        return cursor.y, cursor.x

    def before_cursor(self) -> str:
        """The cursor's line up to the cursor: where a composer without a known shape shows
        what was just typed into it."""
        if self._closed:
            return ""
        self._catch_up()
        cursor = self._screen.cursor
        return self._screen.display[cursor.y][:cursor.x].rstrip()

    def close(self) -> None:
        """Drop the emulator's buffers once injection no longer needs them."""
        self._catch_up()  # (a reading after the close, such as doctor's, sees all that was drawn)
        self._closed = True
        self._pending.clear()
        self._pending_bytes = 0
        self._stream = None  # type: ignore[assignment]


def _from_a_boundary(data: bytes) -> bytes:
    """Output cut at an arbitrary byte, from the first place a terminal would read it the same
    way: a line's start or an escape sequence's (not inside a sequence or a UTF-8 character)."""
    starts = [i for i in (data.find(b"\n"), data.find(b"\x1b")) if i >= 0]
    return data[min(starts):] if starts else b""
