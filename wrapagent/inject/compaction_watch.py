"""Did the tool compact the conversation on its own? Read from the screen while a turn runs.

A tool compacts by itself when its context fills: claude and codex just before they send
the user's next message (the usage of the turn before was near the window), claude and
opencode also in the middle of a turn. The summary replaces the conversation and with it
the blocks wrapagent put before its first message, so the user's next message must get
them again, as after a typed `/compact`.

What says so is the tool's own line on the screen (`ScreenShape.compaction`, whole lines of
the tool's layout: a user's message or an agent's reply quoting the words is never one).
The followed screen (`composer_screen.py`) is handed to `observe` each time its emulator
has caught up (output paused ~0.1 s), in its own thread; the proxy's thread asks `take`.

A compaction is a notice line *appearing*: more of them on the screen than at the reading
before. So a notice still on the screen from an earlier compaction, or a transient one
(claude's `Compacting conversation…` spinner line, gone a second later), counts once.
Three things keep it honest:

- only while a turn is under way (from a user's submission on): a compaction needs a request;
- once per turn: the first one seen latches until the next submission (a tool that compacts
  twice in one turn needs the blocks once, in the message after both);
- not right after a resize, nor after a typed `/compact` (that one is counted by its
  command): a redraw draws the old notices again.
"""

from __future__ import annotations

import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.inject.screen_model import ScreenModel

NOTICE_HINTS = (b"ompact", b"ompress")
"""Bytes in the output that make the followed screen catch up at once, not at the next pause
(`FollowedScreen.observe`): a notice drawn and replaced within a burst (claude's animated
`Compacting conversation…` line) is then on the screen when it is read. Only a trigger: what
counts is still a whole notice line of the tool's layout on the screen."""

REDRAW_SECS = 3.0
"""After a resize, notices that appear are a redraw (codex redraws up to 2 s after SIGWINCH)."""


class CompactionWatch:
    """Follows the count of the tool's compaction notices on its screen (see module docstring)."""

    def __init__(self, model: ScreenModel, clock: Callable[[], float] = time.monotonic) -> None:
        self.model = model
        self.clock = clock
        self._lock = threading.Lock()
        self._last: int | None = None
        """Notices on the screen at the reading before (None: no reading yet)."""
        self._turn = False
        """A user's submission started a turn, and no compaction was seen in it yet."""
        self._seen = False
        self._quiet_until = 0.0

    def observe(self, text: str) -> None:
        """A caught-up screen (the emulator's thread): a notice that appeared is a compaction."""
        count = self.model.compaction_notices(text)
        with self._lock:
            last, self._last = self._last, count
            if last is None or count <= last or not self._turn:
                return
            if self.clock() < self._quiet_until:
                return
            self._turn = False
            self._seen = True

    def submitted(self) -> None:
        """A user's message (or wrapagent's own) was submitted: a turn is under way."""
        with self._lock:
            self._turn = True

    def mute(self) -> None:
        """A typed `/compact` or a reset: its notice is not an automatic compaction."""
        with self._lock:
            self._turn = False

    def resized(self) -> None:
        with self._lock:
            self._quiet_until = self.clock() + REDRAW_SECS

    def take(self) -> bool:
        """True once per compaction seen (the proxy's thread)."""
        if not self._seen:  # the common case, without the lock
            return False
        with self._lock:
            seen, self._seen = self._seen, False
        return seen
