"""Notices, mid-turn, that the tool put up a dialog (an approval, a question) and says so at once.

The quiet wait (`session/turns.py`) tells that the agent waits only once its
output was quiet for `quiet_secs`; a dialog is known sooner, from the
followed screen (`composer_screen.py`). While a turn is under way, a short
pause in the output (CHECK_SECS) is the moment to read the screen: a dialog
there fires `fire(turn)` once, and not again until a reading without it
(the user answered). Reads happen on the proxy's thread at its deadlines,
bounded by READ_SECS, so a lagging emulator costs a retry, never a key.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.inject.composer_screen import ComposerScreen

CHECK_SECS = 0.25
"""Output paused this long during a turn: read the screen (a dialog is drawn in one burst)."""

READ_SECS = 0.05
"""At most this long for the emulator to catch up; not caught up: try again CHECK_SECS later."""


class DialogWatch:
    """Fires once per dialog shown while a turn is under way (see module docstring)."""

    def __init__(self, view: ComposerScreen, working: Callable[[], int | None],
                 fire: Callable[[int], None], log: Callable[[str], None] = lambda m: None) -> None:
        self.view = view
        self.working = working
        self.fire = fire
        self.log = log
        self.showing = False
        """A dialog was fired for and no reading since showed it gone."""
        self.fired = 0
        self._checked = 0.0
        self._retry_at = 0.0

    def deadline(self, last_output: float) -> float | None:
        """When to read the screen next; None: nothing new drawn, or no turn under way."""
        if last_output <= self._checked or self.working() is None:
            return None
        return max(last_output + CHECK_SECS, self._retry_at)

    def poll(self, now: float, last_output: float) -> None:
        due = self.deadline(last_output)
        if due is None or now < due:
            return
        reading = self.view.read(timeout=READ_SECS)
        if reading is None:
            self._retry_at = now + CHECK_SECS
            return
        self._checked = last_output
        if not reading.dialog:
            self.showing = False
            return
        if self.showing:
            return
        turn = self.working()
        if turn is None:
            return
        self.showing = True
        self.fired += 1
        self.log(f"turns: turn {turn}: a dialog is up: the agent waits for you")
        self.fire(turn)
