"""Notices, mid-turn, that the agent put up a dialog (an approval, a question) and says so at once.

The quiet wait (`session/turns.py`) tells that the agent waits only once its
output was quiet for `quiet_secs`; a dialog is known sooner, from the
followed screen (`composer_screen.py`). While a turn is under way, a short
pause in the output (CHECK_SECS) is the moment to read the screen: a dialog
there fires `fire(turn)` once, and not again until a reading without it
(the user answered). Reads happen on the proxy's thread at its deadlines,
bounded by READ_SECS, so a lagging emulator costs a retry, never a key.

Only a dialog the agent opened counts, never one the user's own key opened:
codex's "Where should the new conversation run?" after `/new`, a model
picker after `/model`, claude's rewind list after Esc Esc. So a dialog is
the agent's only when

- the turn under way was started by a message (or resumed by an answer to
  one of the agent's dialogs), not by a command (`/…`, per adapter): a
  command's pickers and questions are the user's, resumes included;
- no key of the user's reached the tool since the turn started or resumed
  (the Enter that submitted it is that moment): a key typed meanwhile may
  have opened whatever shows. A dialog that follows type-ahead is then told
  by the quiet wait, as `idle`, a little later: the safe side.

A reset or a compaction is no turn (the tracker is not armed by it), so the
dialogs that follow those are never fired for either.
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


class DialogTurn:
    """What the watch needs to know about the turn under way (the tracker and the injector)."""

    def __init__(self, working: Callable[[], int | None], started_at: Callable[[], float | None],
                 by_command: Callable[[], bool], last_key: Callable[[], float],
                 may_read: Callable[[], bool] = lambda: True) -> None:
        self.working = working
        """The turn under way, or None while the agent waits."""
        self.started_at = started_at
        """When the turn under way was submitted or last resumed (monotonic)."""
        self.by_command = by_command
        """The turn under way was started by a command of the user's."""
        self.last_key = last_key
        """When the user's latest key reached the tool (monotonic; -inf: none yet)."""
        self.may_read = may_read
        """The injector is between messages (not waiting for a reset's composer, not holding keys)."""

    def agents(self) -> int | None:
        """The turn under way when a dialog now would be the agent's (see module docstring)."""
        turn = self.working()
        if turn is None or not self.may_read() or self.by_command():
            return None
        started = self.started_at()
        if started is None or self.last_key() > started:
            return None
        return turn


class DialogWatch:
    """Fires once per dialog the agent shows while a turn is under way (see module docstring)."""

    def __init__(self, view: ComposerScreen, turn: DialogTurn, fire: Callable[[int], None],
                 log: Callable[[str], None] = lambda m: None) -> None:
        self.view = view
        self.turn = turn
        self.fire = fire
        self.log = log
        self._fired_for: float | None = None
        """`started_at` of the turn a dialog was fired for, until a reading shows it gone."""
        self.fired = 0
        self._checked = 0.0
        self._retry_at = 0.0

    @property
    def showing(self) -> bool:
        """A dialog was fired for in the turn under way (or just ended) and no reading since
        showed it gone: the quiet wait that follows is the same wait, not fired again."""
        return self._fired_for is not None and self._fired_for == self.turn.started_at()

    def deadline(self, last_output: float) -> float | None:
        """When to read the screen next; None: nothing new drawn, or no turn of the agent's under way."""
        if last_output <= self._checked or self.turn.agents() is None:
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
            self._fired_for = None
            return
        if self.showing:
            return
        turn = self.turn.agents()
        if turn is None:
            return
        self._fired_for = self.turn.started_at()
        self.fired += 1
        self.log(f"turns: turn {turn}: a dialog is up: the agent waits for you")
        self.fire(turn)
