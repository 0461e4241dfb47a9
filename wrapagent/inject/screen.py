"""The tool's screen as a user sees it, for readiness detection only.

A terminal emulator (pyte) is the right tool: markers such as claude's `❯`
between two rules are drawn with cursor movement, not printed in order. It
is fed only until injection is done, so the proxy costs nothing afterwards.

pyte does not know every sequence today's TUIs send (gemini's `ESC[>4;?m`
makes pyte 0.8 call `select_graphic_rendition(private=True)`, which it does
not accept). An emulator hiccup must never reach the user: unknown private
SGR is ignored, and if the parser still fails it is rebuilt on the same
screen and the chunk is dropped from the emulator (never from the output).
"""

from __future__ import annotations


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

    def feed(self, data: bytes) -> None:
        if self._closed:
            return
        try:
            if b"\x1b" in data:
                self._feed_escapes(data)
            else:
                self._stream.feed(data)
        except Exception:
            self.errors += 1
            self._stream = self._pyte.ByteStream(self._screen)

    def _feed_escapes(self, data: bytes) -> None:
        """Feed `data` so that an ESC always starts a new sequence, as in a real terminal.

        pyte takes the ESC that follows an unfinished sequence (a lone ESC at
        the end of a chunk, a cut-off CSI) as part of it, and then prints the
        rest of the next sequence as text: `ESC` + `ESC[H` drew "[H" on the
        screen. xterm and every terminal a user runs abandon the unfinished
        sequence instead; the parser is rebuilt on the same screen to do the same.
        """
        pieces = data.split(b"\x1b")
        stream = self._stream
        if pieces[0]:
            stream.feed(pieces[0])
        for piece in pieces[1:]:
            if not getattr(stream, "_taking_plain_text", True):
                stream = self._stream = self._pyte.ByteStream(self._screen)
            stream.feed(b"\x1b" + piece)

    def resize(self, rows: int, cols: int) -> None:
        if not self._closed:
            self._screen.resize(max(rows, 1), max(cols, 1))

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self._screen.display)

    def before_cursor(self) -> str:
        """The cursor's line up to the cursor: where a composer without a known shape shows
        what was just typed into it."""
        if self._closed:
            return ""
        cursor = self._screen.cursor
        return self._screen.display[cursor.y][:cursor.x].rstrip()

    def close(self) -> None:
        """Drop the emulator's buffers once injection no longer needs them."""
        self._closed = True
        self._stream = None  # type: ignore[assignment]
