"""Turns of a session, and the `waiting_for_input` hook.

A wrapper sees the screen, not the agent's state. All four CLIs animate a
spinner or a timer while the model thinks or a tool runs (longest gap
measured: 1.40 s), so after a user submission, output quiet for
`quiet_secs` means the agent finished its turn (or shows a prompt) and
waits. That is one *wait*: it fires the hook once, then nothing is pending
(no timer) until the next submission.

`TurnTracker` is pure timing, driven by the injector (`submitted`,
`resumed`, `deadline`, `poll`, all on the proxy's thread, never blocking).
`HookFirer` runs the hook in a thread of its own, one run at a time, so a
slow hook never delays a key; its outcome is kept as one aggregated entry.
"""

from __future__ import annotations

import threading
import time
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Callable

MAX_TURNS_RECORDED = 1000
"""A session of hours has hundreds of turns; beyond this only the count grows."""
RESUME_LOOK_SECS = 0.25
"""Output paused this long after a wait: read the screen once (does the agent work again?).
Output that goes on without a pause (a spinner) is looked at every 2 x this."""
BEGIN_WAIT_SECS = 120.0
"""How long a submission's quiet may wait for the tool's screen to show the turn begun (see
`TurnTracker.watch_begin`). Measured: opencode on a loaded 2-core machine drew nothing for ~60 s
between a submission and its first spinner frame."""


def wall_iso(mono: float) -> str:
    """The wall-clock time (UTC, ISO 8601) of a `time.monotonic()` reading."""
    from datetime import datetime, timezone

    wall = time.time() - (time.monotonic() - mono)
    return datetime.fromtimestamp(wall, timezone.utc).isoformat()


class TurnTracker:
    """Counts user submissions and says when the agent waits after one.

    A submission arms the watch. The agent waits once its output has been
    quiet for `quiet_secs` after it. An Enter on an empty composer (an
    answer to a permission prompt: the agent may resume) re-arms it for the
    same turn, but only counts if the tool drew something after it: an Enter
    that changes nothing is not a new wait.
    """

    def __init__(self, quiet_secs: float, fire: Callable[[int], None] | None = None,
                 *, to_wall: Callable[[float], str] = wall_iso,
                 log: Callable[[str], None] = lambda m: None) -> None:
        self.quiet_secs = quiet_secs
        self.fire = fire
        self.to_wall = to_wall
        self.log = log
        self.turn = 0
        self.turns: list[dict[str, Any]] = []
        self.waits = 0
        self.quiet_since = 0.0
        """Monotonic time the agent's output went quiet, for the latest wait (read by `fire`)."""
        self.next_by: str | None = None
        """Who makes the next submission when it is not the user ("stop_check"); kept in its entry."""
        self.interrupted: Callable[[int], bool] | None = None
        """Asked at each stop: did the user interrupt this turn (`inject/interrupts.py`)?"""
        self.interrupted_turn: int | None = None
        """The latest turn the user interrupted (its stop is theirs: no continuation, no send)."""
        self._armed_at: float | None = None
        self._needs_output = False
        self.started_at: float | None = None
        """When the latest turn was submitted or last resumed (kept after its stop)."""
        self.text = ""
        """The latest submission's text (a command's turn is the user's: `dialog_watch.py`)."""
        self.on_same_wait: Callable[[int], None] | None = None
        """Told (turn) when an Enter re-armed the watch but the tool drew nothing after it: the
        agent still waits, as it did (the stop gate may go on with what it holds)."""
        self.on_turn: Callable[[str, int], None] | None = None
        """Told ("start", n) at a submission and ("stop", n) at a wait: the turn checkpoints
        (history/turn_checkpoints.py). It must not block: it only queues."""
        self.on_marker: Callable[[int, str, str | None], None] | None = None
        """Told (turn, message text, by) at each submission: the recording's marker."""
        self.screen_working: Callable[[], bool] | None = None
        """Asked once the output was quiet for `quiet_secs`: does the tool's own screen still say
        the agent works (its interrupt hint, `screen_model.py`)? Then the quiet is a frozen
        spinner (a loaded machine stalled the tool), not the turn's end: the watch goes on.
        Measured: opencode under load drew nothing for 3 s right after starting a turn, with
        `esc interrupt` on screen; the stop check's continuation went in before the reply and
        was lost. False when the screen cannot tell (no shape, the emulator lags)."""
        self._screen_said_working: int | None = None
        self.watch_begin: Callable[[], bool] | None = None
        """True (asked) while a watch of the tool's screen tells `saw_working`: a submission's turn then
        ends only after the screen showed it under way. A loaded machine can freeze a tool between
        the Enter and its first spinner frame for far longer than `quiet_secs` (the quiet then
        says nothing); every turn of a model shows the tool's interrupt hint. Not for a `/command`
        or a `!shell line` (a local one shows none), an Enter that re-armed the watch, a turn the user interrupted,
        or past BEGIN_WAIT_SECS (a turn the watch missed still ends)."""
        self.interrupt_pressed: Callable[[int], bool] | None = None
        """Asked (turn) while a turn waits to be seen begun: did the user press the interrupt key in it?"""
        self._seen_working = 0
        """The latest turn the screen showed under way (`saw_working`, any thread)."""
        self._said_not_begun: int | None = None
        self._waited_at: float | None = None
        """The quiet time of the latest wait, while no submission followed: output after it is
        looked at (`RESUME_LOOK_SECS` after it pauses, or every 2 x that while it goes on: a
        working tool's spinner never pauses) for the tool working on the same turn."""
        self._output_after: float | None = None
        """The first output seen after the wait or the last look (`_look_due`)."""

    # -- told by the injector --------------------------------------------------

    def submitted(self, now: float, text: str = "") -> None:
        self.turn += 1
        by, self.next_by = self.next_by, None
        if self.on_marker is not None:
            self.on_marker(self.turn, text, by)
        if len(self.turns) < MAX_TURNS_RECORDED:
            entry = {"n": self.turn, "at": self.to_wall(now), "quiet_at": None}
            if by:
                entry["by"] = by
            self.turns.append(entry)
        self._armed_at = self.started_at = now
        self._waited_at = None
        self.text = text
        self._needs_output = False
        if self.on_turn is not None:
            self.on_turn("start", self.turn)

    @property
    def awaits_begin(self) -> bool:
        """A submitted turn is under way and its tool's hint was not seen yet (`watch_begin`)."""
        return self._armed_at is not None and self._seen_working != self.turn \
            and self.watch_begin is not None and self.watch_begin()

    def saw_working(self) -> None:
        """(The screen watch's thread.) The tool's screen shows the agent at work on the turn
        under way. A plain store: the proxy's thread reads it in `poll`."""
        self._seen_working = self.turn

    def resumed(self, now: float) -> None:
        if self.turn == 0:
            return  # before the first submission there is no turn to wait after
        self._armed_at = self.started_at = now
        self._waited_at = None
        self._needs_output = True

    def working(self) -> int | None:
        """The turn under way (a submission, no stop seen since), or None while the agent waits."""
        return self.turn if self._armed_at is not None and self.turn else None

    def deadline(self, last_output: float) -> float | None:
        if self._armed_at is None:
            if self._look_after_wait(last_output):
                return self._look_due(last_output)
            return None
        return max(last_output, self._armed_at) + self.quiet_secs

    def _look_after_wait(self, last_output: float) -> bool:
        """The tool drew something since the latest wait, and the screen was not read since."""
        return self.screen_working is not None and self._waited_at is not None and last_output > self._waited_at

    def _look_due(self, last_output: float) -> float:
        """When to look at output that came after a wait: once it paused, and at the latest
        2 x RESUME_LOOK_SECS after it began (output that never pauses is looked at too)."""
        first = self._output_after
        if first is None or self._waited_at is None or first <= self._waited_at:
            first = self._output_after = last_output
        return min(last_output, first + RESUME_LOOK_SECS) + RESUME_LOOK_SECS

    def _not_begun(self, now: float) -> bool:
        """A submission whose turn the screen never showed under way (see `watch_begin`)."""
        if self.watch_begin is None or self._needs_output or self._seen_working == self.turn \
                or not self.watch_begin():
            return False
        if self.text.lstrip()[:1] in ("/", "!"):
            return False  # a command, or a shell line: the tool itself may answer it
        if self.interrupt_pressed is not None and self.interrupt_pressed(self.turn):
            return False
        return now - (self.started_at if self.started_at is not None else now) < BEGIN_WAIT_SECS

    def _resumed_by_the_tool(self, now: float, last_output: float) -> None:
        """After a wait, the tool drew again and its screen says the agent works: the wait was a
        stall (a loaded machine froze the tool before its turn began), the same turn goes on and
        its real end is a wait of its own (the stop check runs again, waiting_for_input fires)."""
        self._waited_at = last_output  # one look per pause in the output (or per 2 x RESUME_LOOK_SECS)
        if self.screen_working is not None and self.screen_working():
            self._seen_working = self.turn
            self._armed_at = now
            self._needs_output = False
            self.log(f"turns: turn {self.turn}: the tool drew again after the wait and its screen says the "
                     "agent works: the same turn goes on")

    def poll(self, now: float, last_output: float) -> None:
        armed = self._armed_at
        if armed is None:
            if self._look_after_wait(last_output) and now >= self._look_due(last_output):
                self._resumed_by_the_tool(now, last_output)
            return
        quiet_since = max(last_output, armed)
        if now < quiet_since + self.quiet_secs:  # the same sum as `deadline`: due there, not a float later
            return
        if self.screen_working is not None and not (self._needs_output and last_output <= armed) \
                and self.screen_working():
            self._seen_working = self.turn
            self._armed_at = now  # the next look comes `quiet_secs` later (or after new output)
            if self._screen_said_working != self.turn:
                self._screen_said_working = self.turn
                self.log(f"turns: turn {self.turn}: output quiet {self.quiet_secs:g}s, but the screen says the "
                         "agent works: still its turn")
            return
        if self._not_begun(now):
            self._armed_at = now  # looked at again `quiet_secs` later
            if self._said_not_begun != self.turn:
                self._said_not_begun = self.turn
                self.log(f"turns: turn {self.turn}: output quiet {self.quiet_secs:g}s, but the screen never "
                         "showed the turn under way: the tool has not begun it")
            return
        self._armed_at = None
        if self._needs_output and last_output <= armed:
            # An Enter that changed nothing on screen: the same wait goes on.
            if self.on_same_wait is not None:
                self.on_same_wait(self.turn)
            return
        self._waiting(quiet_since)

    # -- a wait ---------------------------------------------------------------

    def _waiting(self, quiet_since: float) -> None:
        self.waits += 1
        entry = self.turns[-1] if self.turns and self.turns[-1]["n"] == self.turn else None
        if entry is not None:
            if entry["quiet_at"] is None:
                entry["quiet_at"] = self.to_wall(quiet_since)
            else:
                entry["waits"] = entry.get("waits", 1) + 1
        if self.interrupted is not None and self.interrupted(self.turn):
            self.interrupted_turn = self.turn
            if entry is not None:
                entry["interrupted"] = True
            self.log(f"turns: turn {self.turn}: the user interrupted the agent")
        self.log(f"turns: turn {self.turn}: the agent waits (output quiet {self.quiet_secs:g}s)")
        self.quiet_since = quiet_since
        self._waited_at = quiet_since
        if self.on_turn is not None:
            self.on_turn("stop", self.turn)
        if self.fire is not None:
            self.fire(self.turn)

    def record_into(self, record: dict[str, Any]) -> None:
        """The record's `turns`: one entry per submission (`turns_total` when capped)."""
        record["turns"] = list(self.turns)
        if self.turn > len(self.turns):
            record["turns_total"] = self.turn


class HookFirer:
    """Runs `run(turn, reason)` in a background thread, one at a time, in order.

    `fire` never blocks (it is called on the proxy's thread). Runs queue up
    behind a slow hook; at most one waits, later ones replace it (the hook
    is about *now*: three stale notifications help nobody).
    """

    def __init__(self, run: Callable[[int, str], Any], log: Callable[[str], None] = lambda m: None) -> None:
        self.run = run
        self.log = log
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queued: tuple[int, str] | None = None
        self._closed = False
        self._busy = False
        self._thread: threading.Thread | None = None
        self.runs = 0
        self.failed = 0
        self.skipped = 0
        self.last: dict[str, Any] | None = None
        self.last_turn: int | None = None
        self.reasons: dict[str, int] = {}
        """Runs per reason ("idle": the turn ended; "dialog": an approval or question is up)."""

    def fire(self, turn: int, reason: str = "idle") -> None:
        with self._lock:
            if self._closed:
                return
            if self._queued is not None:
                self.skipped += 1
            self._queued = (turn, reason)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="wrapagent-waiting",
                                                daemon=True)
                self._thread.start()
            self._wake.notify()

    def _work(self) -> None:
        from wrapagent.child_process import leave_signals_to_the_main_thread

        leave_signals_to_the_main_thread()  # (the hooks it runs start with an empty mask all the same)
        while True:
            with self._lock:
                while self._queued is None and not self._closed:
                    self._wake.wait()
                if self._queued is None:
                    return
                (turn, reason), self._queued = self._queued, None
                self._busy = True
            try:
                from wrapagent.hooks.hook_runner import ENDED_AT_EXIT

                result = self.run(turn, reason)
                outcome = result.to_record()
                ok = result.ok() or result.error == ENDED_AT_EXIT  # the tool exited: not the hook's fault
            except Exception as exc:  # fail-open: a hook problem never reaches the tool
                outcome = {"error": repr(exc)}
                ok = False
                self.log(f"waiting_for_input failed: {exc!r}")
            with self._lock:
                self._busy = False
                self.runs += 1
                self.failed += 0 if ok else 1
                self.last = outcome
                self.last_turn = turn
                self.reasons[reason] = self.reasons.get(reason, 0) + 1
                self._wake.notify_all()

    def close(self, timeout: float) -> None:
        """The tool exited: drop a run not started yet (nobody waits for it any more) and wait
        up to `timeout` for a running one to report (its group was ended: it returns at once)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._closed = True
            if self._queued is not None:
                self._queued = None
                self.skipped += 1
            self._wake.notify_all()
            while self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._wake.wait(left)

    @property
    def busy(self) -> bool:
        """A run is in progress."""
        with self._lock:
            return self._busy

    @property
    def closed(self) -> bool:
        with self._lock:
            return self._closed

    def record_entry(self) -> dict[str, Any] | None:
        """One hooks-list entry for all runs: the last run's outcome plus counts."""
        with self._lock:
            if self.last is None:
                return None
            entry = dict(self.last)
            entry.update(name="waiting_for_input", kind="lifecycle", turn=self.last_turn,
                         runs=self.runs, failed=self.failed)
            if self.skipped:
                entry["skipped"] = self.skipped
            if set(self.reasons) - {"idle"}:
                entry["reasons"] = dict(self.reasons)
            return entry
