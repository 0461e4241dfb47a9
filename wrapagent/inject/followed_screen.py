"""The tool's screen, followed all session long by a terminal emulator in a thread of its own.

The proxy's output path only appends each chunk to a buffer (`feed`), so a tool that prints
fast is never slowed to the emulator's pace (~1.2 MB/s of CPU for pyte on TUI output). The
emulator catches up when output pauses, when a reader asks for the screen (`text`), a little at
a time during an animation, and at once after output holding an observer's hint.

An observer (`observe`) is handed the screen as a terminal would show it: never in the middle
of a synchronized update (DEC private mode 2026, `CSI ? 2026 h` … `CSI ? 2026 l`). A tool that
uses it (codex does, for every frame) first erases the rows it redraws and then draws them
again; a reading between the two sees lines that are on no frame the user saw, and a notice
that is on every frame seems to vanish and appear again. A terminal shows the frame only when
the update ends, or after SYNC_MAX_SECS if it never does; so does this reading.
"""

from __future__ import annotations

import threading
from time import monotonic as _monotonic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

MAX_SCREEN_LAG_BYTES = 4 * 1024 * 1024
"""Output the emulator may lag behind by before it starts over (see FollowedScreen.feed)."""

FOLLOW_QUIET_SECS = 0.1
"""The emulator runs once the output paused this long (or `text` asks for the screen). Run on every
chunk, it took the interpreter lock from the copy threads all along a burst: a 30 MB `cat` came
through at 0.06x the throughput of the proxy alone (bench/steady_proxy.py `followed`)."""

FOLLOW_ANIMATION_SECS = 0.25
FOLLOW_ANIMATION_BYTES = 64 * 1024
"""Output that never pauses but stays small (a spinner, a status line redrawn ten times a second)
is emulated at least every FOLLOW_ANIMATION_SECS: what such a screen shows only while it animates
(claude's `Compacting conversation…`) is seen. A burst grows past FOLLOW_ANIMATION_BYTES within that
time and still waits for its pause."""

HINT_SECS = 0.5
"""After output holding an observer's hint, output is emulated as it comes for this long: the
rest of the line the hint began may come in the next chunks."""

FOLLOW_PIECE_BYTES = 8 * 1024
"""Output emulated at a time (tens of ms of pyte); output that resumes meanwhile defers the rest."""

SYNC_BEGIN = b"\x1b[?2026h"
SYNC_END = b"\x1b[?2026l"
SYNC_MAX_SECS = 1.0
"""A synchronized update still open after this long is shown anyway, as terminals do (a tool that
died in the middle of a frame must not hide its screen for ever)."""


class FollowedScreen:
    """The tool's screen, emulated in a background thread from the output it is handed.

    `feed` (the proxy's output path) appends to a buffer and wakes the thread;
    `text` waits (bounded) until the buffer is drained and returns the screen,
    or None when the emulator did not catch up in time; `observe` hands each
    shown frame to an observer (see the module docstring).
    """

    def __init__(self, rows: int, cols: int) -> None:
        from wrapagent.inject.screen import Screen

        self._screen = Screen(rows, cols)
        self._pending = bytearray()
        self._fed_at = 0.0
        self._pending_since = 0.0
        self._hints: tuple[bytes, ...] = ()
        self._urgent_until = 0.0
        """Until then output is emulated as it comes (`observe`'s hints)."""
        self._hint_ends: list[int] = []
        """Offsets in `_pending` where a chunk holding a hint ended: the observer reads the screen
        there, before the output after it is emulated (it may replace the line at once)."""
        """When the oldest output not yet emulated came (`_wait_for_a_pause`)."""
        self._wanted = 0
        """`text` calls waiting: the emulator catches up now, pause or not."""
        self._size: tuple[int, int] | None = None
        self._closed = False
        self._cond = threading.Condition()
        self._busy = False
        self._restart = False
        self._rows_cols = (rows, cols)
        self._observers: list[Callable[[str], None]] = []
        self._sync_open_at: float | None = None
        """(The emulator's thread.) The emulated output is inside a synchronized update since then."""
        self._sync_tail = b""
        self._deferred = False
        """(The emulator's thread.) A reading for the observer waits for the update's end."""
        threading.Thread(target=self._work, name="wrapagent-screen", daemon=True).start()

    def feed(self, data: bytes) -> None:
        """Append (the output thread: no emulation here); the emulator is woken only when it was idle."""
        with self._cond:
            if len(self._pending) > MAX_SCREEN_LAG_BYTES:
                # Far behind (a tool printing megabytes): start over from here, on a blank
                # screen. Until the tool redraws its composer, none is seen: the safe side.
                self._pending.clear()
                self._hint_ends.clear()
                self._restart = True
            idle = not self._pending
            self._pending += data
            self._fed_at = _monotonic()
            if self._hints and any(hint in data for hint in self._hints):
                self._urgent_until = self._fed_at + HINT_SECS
                self._hint_ends.append(len(self._pending))
                self._cond.notify_all()
            if idle:
                self._pending_since = self._fed_at
                self._cond.notify_all()

    def resize(self, rows: int, cols: int) -> None:
        with self._cond:
            self._size = (rows, cols)
            self._cond.notify_all()

    def text(self, timeout: float) -> str | None:
        import time

        end = time.monotonic() + timeout
        with self._cond:
            self._wanted += 1
            self._cond.notify_all()
            try:
                while self._pending or self._busy or self._size is not None:
                    left = end - time.monotonic()
                    if left <= 0 or self._closed:
                        return None
                    self._cond.wait(left)
                return self._screen.text()
            finally:
                self._wanted -= 1

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._pending.clear()
            self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._pending and self._size is None and not self._closed:
                    due = self._deferred_due()
                    if due is not None and due <= 0:
                        break  # an update that never ended: its frame is shown now
                    self._cond.wait(due)
                self._wait_for_a_pause()
                if self._closed:
                    self._screen.close()
                    return
                take = self._piece()
                data = bytes(self._pending[:take])
                del self._pending[:take]
                self._hint_ends = [end - take for end in self._hint_ends]
                at_hint = bool(self._hint_ends) and self._hint_ends[0] <= 0
                self._hint_ends = [end for end in self._hint_ends if end > 0]
                size, self._size = self._size, None
                restart, self._restart = self._restart, False
                self._busy = True
            # pyte runs outside the lock: `feed` never waits for it. `text` waits for `_busy`.
            if size is not None:
                self._rows_cols = size
            if restart:
                from wrapagent.inject.screen import Screen

                self._screen.close()
                self._screen = Screen(*self._rows_cols)
                self._sync_open_at, self._sync_tail = None, b""
            elif size is not None:
                self._screen.resize(*size)
            if data:
                self._screen.feed_now(data)
                self._follow_sync(data)
            self._tell_observer(at_hint)
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def observe(self, observer: Callable[[str], None], hints: tuple[bytes, ...] = ()) -> None:
        """Hand `observer` the screen's text each time the emulator has caught up (its thread).

        Output holding one of `hints` is emulated at once, and so is all output for
        HINT_SECS after it, without waiting for a pause: what the observer looks
        for may show only for a moment, in the middle of a burst. Observers add up
        (each gets every reading; the hints are all of theirs).
        """
        with self._cond:
            self._hints = self._hints + tuple(h for h in hints if h not in self._hints)
            self._observers = [*self._observers, observer]

    def _piece(self) -> int:
        """(Lock held.) How much output to emulate next: at most FOLLOW_PIECE_BYTES, up to where a
        chunk holding a hint ended, and, while a reading waits for a synchronized update to end,
        up to that end."""
        take = min(FOLLOW_PIECE_BYTES, self._hint_ends[0]) if self._hint_ends else FOLLOW_PIECE_BYTES
        if self._deferred:
            end = self._pending.find(SYNC_END)
            if end >= 0:
                take = min(take, end + len(SYNC_END))
        return take

    def _follow_sync(self, data: bytes) -> None:
        """(The emulator's thread.) Whether the output emulated so far ends inside a synchronized
        update (the begin and end sequences may be split between chunks)."""
        seen = self._sync_tail + data
        begin, end = seen.rfind(SYNC_BEGIN), seen.rfind(SYNC_END)
        if begin > end:
            if self._sync_open_at is None:
                self._sync_open_at = _monotonic()
        elif end > begin:
            self._sync_open_at = None
        self._sync_tail = seen[-(len(SYNC_BEGIN) - 1):]

    def _in_update(self) -> bool:
        opened = self._sync_open_at
        return opened is not None and _monotonic() - opened < SYNC_MAX_SECS

    def _deferred_due(self) -> float | None:
        """(Lock held.) Seconds until a deferred reading is due although its update never ended."""
        if not self._deferred or self._sync_open_at is None:
            return None
        return max(0.0, self._sync_open_at + SYNC_MAX_SECS - _monotonic())

    def _tell_observer(self, at_hint: bool = False) -> None:
        """(The emulator's thread, `_busy` set: nobody else reads the screen now.) Once caught up,
        or where a chunk holding a hint ended (`at_hint`), caught up or not; never inside a
        synchronized update (the reading waits for its end: module docstring)."""
        observers = self._observers
        if not observers or self._closed:
            return
        if self._pending and not (at_hint or self._deferred):
            return
        if self._in_update():
            self._deferred = True
            return
        self._deferred = False
        text = self._screen.text()
        for observer in observers:
            try:
                observer(text)
            except Exception:  # an observer's bug must never stop the screen being followed
                with self._cond:
                    self._observers = [o for o in self._observers if o is not observer]

    def _wait_for_a_pause(self) -> None:
        """(Lock held.) Until the output paused FOLLOW_QUIET_SECS, `text` wants the screen, or close."""
        while self._pending and not self._wanted and not self._closed:
            now = _monotonic()
            quiet = now - self._fed_at
            if quiet >= FOLLOW_QUIET_SECS:
                return
            if now < self._urgent_until:
                return
            behind = now - self._pending_since
            if behind >= FOLLOW_ANIMATION_SECS and len(self._pending) <= FOLLOW_ANIMATION_BYTES:
                return  # an animation that never pauses: emulated anyway, a little at a time
            self._cond.wait(min(FOLLOW_QUIET_SECS - quiet, max(FOLLOW_ANIMATION_SECS - behind, 0.01)))
