"""The tool's screen as a user sees it, for readiness detection only.

A terminal emulator (pyte) is the right tool: markers such as claude's `❯`
between two rules are drawn with cursor movement, not printed in order. It
is fed only until injection is done, so the proxy costs nothing afterwards.
"""

from __future__ import annotations


class Screen:
    def __init__(self, rows: int, cols: int) -> None:
        import pyte

        self._screen = pyte.Screen(max(cols, 1), max(rows, 1))
        self._stream = pyte.ByteStream(self._screen)
        self._closed = False

    def feed(self, data: bytes) -> None:
        if not self._closed:
            self._stream.feed(data)

    def resize(self, rows: int, cols: int) -> None:
        if not self._closed:
            self._screen.resize(max(rows, 1), max(cols, 1))

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self._screen.display)

    def close(self) -> None:
        """Drop the emulator's buffers once injection no longer needs them."""
        self._closed = True
        self._stream = None  # type: ignore[assignment]
