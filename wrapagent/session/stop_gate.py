"""What happens when the agent stops after a turn: the stop check, then waiting_for_input.

`TurnTracker` says when the agent stopped (output quiet after a
submission) and calls `StopGate.stopped` on the proxy's thread. Without a
`[stop_check]` that fires waiting_for_input at once. With one, the check
runs in a thread of its own (a key never waits for it); its verdict either
lets the agent stop (waiting_for_input fires) or posts the continuation to
the interceptor's `Outgoing` queue, which types and submits it only into an
empty composer the user has not touched since the stop. A continuation the
user pre-empted is a stop like any other: waiting_for_input fires.

`max_continues` counts continuations in a row: a turn the user started
(any submission of theirs) restarts the count. When the limit is reached
the check still runs once more, so the record can say it was still failing.

Messages from `wrapagent send` (`enqueue`, from the send channel's thread)
wait for a stop the agent may stop at: then the oldest one is submitted
instead of waiting_for_input firing, one per stop; one that comes while the
agent already waits goes at once. A key of the user's since the stop (or
since the message came, whichever is later) defers it to the next stop.
"Waits" means stopped and not resumed since: the user's answer to a dialog
(an Enter, a one-key answer) puts the agent back to work in the same turn,
and a message waits for that turn's stop. An answer the tool ignored (it drew
nothing after it) leaves the agent waiting: what that key deferred goes then
(`same_wait`). A send whose empty composer the screen does not show yet is
tried again until it does or the user types (`Request.patient`); nothing
queued is dropped silently: at the session's end its sender hears why.

A stop the user caused (they interrupted the agent: the tracker's
`interrupted_turn`, decided by `inject/interrupts.py`) is theirs: the check
does not run, waiting_for_input fires, the count of continuations starts
again, and queued messages wait for a stop after the user's next message.
"""

from __future__ import annotations

import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from wrapagent.inject.outgoing import Outgoing
    from wrapagent.session.live import Live
    from wrapagent.session.turns import TurnTracker

MAX_RUNS_RECORDED = 200
MAX_SENT_RECORDED = 500


class Send:
    """One message from `wrapagent send`; `reply(dict)` answers a waiting sender (or does nothing)."""

    __slots__ = ("text", "arrived", "entry", "reply", "deferred")

    def __init__(self, text: str, arrived: float, entry: dict, reply: Callable[[dict], None]) -> None:
        self.text = text
        self.arrived = arrived  # monotonic
        self.entry = entry      # its item in the record's `sent`
        self.reply = reply
        self.deferred = ""
        """Why it was last put back to wait for a stop ("" never): said if the session ends first."""


class StopGate:
    """Runs the stop check at each stop and decides: go on (a continuation) or waiting_for_input."""

    def __init__(self, live: Live, spec, tracker: TurnTracker, outgoing: Outgoing | None,
                 fire_waiting: Callable[[int], None] | None, *, sends: bool = False) -> None:
        self.live = live
        self.spec = spec
        self.tracker = tracker
        self.outgoing = outgoing
        self.fire_waiting = fire_waiting
        self.streak = 0
        self._last_auto_turn: int | None = None
        self._running = False
        self._lock = threading.Lock()
        self.entry: dict[str, Any] | None = None
        if spec is not None:
            self.entry = {"command": spec.command, "max_continues": spec.max_continues,
                          "runs": [], "continuations": []}
        self.sends_on = sends
        self.sent: list[dict[str, Any]] = []
        self._queue: list[Send] = []
        self._idle_turn: int | None = None  # the agent waits after this turn (no submission since)
        self._idle_since = 0.0
        self._sending: Send | None = None

    # -- the proxy's thread ------------------------------------------------------------

    def stopped(self, turn: int) -> None:
        """The agent stopped after `turn` (TurnTracker's fire)."""
        since = self.tracker.quiet_since
        if self.tracker.interrupted_turn == turn:
            self._user_stopped(turn)
            return
        if self.spec is None:
            self._may_stop(turn)
            return
        if turn != self._last_auto_turn:
            self.streak = 0  # the user started this turn: the count restarts
        with self._lock:
            if self._running:
                self.live.record.log("stop_check: still running from the previous stop; this stop is skipped")
                return
            self._running = True
        from wrapagent.hooks.hook_runner import start_hook_thread  # the main thread's signals left to it

        streak = self.streak
        start_hook_thread(lambda: self._check(turn, since, streak), "wrapagent-stop-check")

    def _user_stopped(self, turn: int) -> None:
        """The user interrupted `turn`: no check, no continuation, no queued message; they have the keyboard."""
        self.streak = 0
        with self._lock:
            self._idle_turn, self._idle_since = turn, self.tracker.quiet_since
            queued = len(self._queue)
        if self.entry is not None:
            self.entry.setdefault("interrupted", []).append(turn)
        self.live.record.log(f"stop_check and send: turn {turn} was interrupted by the user: no continuation"
                             + (f"; {queued} queued message(s) wait for the user's next message" if queued else ""))
        if self.fire_waiting is not None:
            self.fire_waiting(turn)

    # -- the check's thread ------------------------------------------------------------

    def _check(self, turn: int, since: float, continues: int) -> None:
        from wrapagent.hooks.stop_check import run_stop_check
        from wrapagent.history.records import now_iso

        live = self.live
        try:
            verdict = run_stop_check(self.spec, live.ctx, base_env=live.env, log=live.record.log,
                                     turn=turn, continues=continues)
        except Exception as exc:  # fail-open: the agent may stop
            live.record.warn(f"stop_check failed: {exc!r}")
            self._may_stop(turn)
            return
        run = {"turn": turn, "at": now_iso(), "exit_code": verdict.result.exit_code,
               "timed_out": verdict.result.timed_out,
               "duration_s": round(verdict.result.duration_s, 3)}
        if len(self.entry["runs"]) < MAX_RUNS_RECORDED:
            self.entry["runs"].append(run)
        if verdict.warning:
            live.record.warn(verdict.warning)
            if "stop_check failed" not in live.failures:
                live.failures.append("stop_check failed")
        if not verdict.go_on:
            self._may_stop(turn)
            return
        if continues >= self.spec.max_continues or self.outgoing is None:
            self.entry["still_failing"] = {"turn": turn, "after_continues": continues}
            live.record.log(f"stop_check: still failing after {continues} continuation(s) in a row; "
                            "the agent may stop")
            self._may_stop(turn)
            return
        live.record.log(f"stop_check: turn {turn}: the check asks the agent to go on")
        from wrapagent.inject.outgoing import Request

        def done(status: str, reason: str, at: str | None) -> None:
            self._done(turn, verdict.text, status, reason, at)

        self.outgoing.post(Request(verdict.text, since, done))

    def _may_stop(self, turn: int) -> None:
        with self._lock:
            self._running = False
            self._idle_turn, self._idle_since = turn, self.tracker.quiet_since
            sent = (self.tracker.interrupted_turn != turn
                    and self._send_next_locked(self.tracker.quiet_since))
        if not sent and self.fire_waiting is not None:
            self.fire_waiting(turn)

    # -- `wrapagent send` -----------------------------------------------------------------

    def enqueue(self, send: Send) -> None:
        """A message from `wrapagent send` (the channel's thread): now if the agent waits, else at a stop."""
        import time

        with self._lock:
            if len(self.sent) < MAX_SENT_RECORDED:
                self.sent.append(send.entry)
            self._queue.append(send)
            if self._waits_locked():
                self._send_next_locked(max(self._idle_since, time.monotonic()))

    def _waits_locked(self) -> bool:
        """The agent waits after its latest turn: stopped, not resumed since (an answer to its
        dialog puts it back to work until the next stop), and not interrupted (the user first)."""
        tracker = self.tracker
        return (self._idle_turn is not None and self._idle_turn == tracker.turn
                and tracker.working() is None and tracker.interrupted_turn != self._idle_turn)

    def same_wait(self, turn: int) -> None:
        """(The proxy's thread.) An Enter re-armed the turn but the tool drew nothing after it: the
        agent still waits, so a message deferred by that key goes now instead of at a stop that
        will not come."""
        import time

        with self._lock:
            if self._running or turn != self.tracker.turn or self.tracker.interrupted_turn == turn:
                return
            self._idle_turn = turn
            if self._queue and self._sending is None:
                self.live.record.log("send: the agent still waits after that key: trying the queued message again")
            self._send_next_locked(time.monotonic())

    def _send_next_locked(self, since: float) -> bool:
        if self._sending is not None or not self._queue or self.outgoing is None:
            return self._sending is not None
        send = self._queue[0]
        self._sending = send
        from wrapagent.inject.outgoing import Request

        def done(status: str, reason: str, at: str | None) -> None:
            self._send_done(send, status, reason, at)

        self.outgoing.post(Request(send.text, max(since, send.arrived), done, patient=True))
        return True

    def _send_done(self, send: Send, status: str, reason: str, at: str | None) -> None:
        """On the proxy's thread: delivered, deferred to the next stop (the user typed), or lost."""
        with self._lock:
            self._sending = None
            if status == "cancelled":
                self._idle_turn = None  # the user has the keyboard: the next stop
                send.deferred = reason
                self.live.record.log(f"send: deferred to the next stop: {reason}")
                return
            self._queue.remove(send)
        if status == "delivered":
            self.tracker.next_by = "send"
            send.entry.update(status="delivered", delivered_at=at, turn=self.tracker.turn + 1)
            send.reply({"delivered_at": at})
            self.live.record.log(f"send: message submitted (turn {self.tracker.turn + 1})")
            return
        self._fail_send(send, reason)
        import time

        from wrapagent.inject.outgoing import TOOL_ENDED

        if reason == TOOL_ENDED:
            return
        with self._lock:  # nothing was submitted: the agent still waits, the next one may go
            if self._waits_locked():
                self._send_next_locked(time.monotonic())

    def _fail_send(self, send: Send, reason: str) -> None:
        send.entry.update(status="not delivered", reason=reason)
        send.reply({"error": reason})

    def close(self) -> None:
        """The tool ended: what is still queued is not delivered (its sender hears why)."""
        with self._lock:
            queued, self._queue = self._queue, []
        for send in queued:
            if send.entry.get("status") == "queued":
                why = f" (it waited for the agent's next stop: {send.deferred})" if send.deferred else ""
                self._fail_send(send, "the session ended" + why)

    # -- the proxy's thread again (Outgoing calls `done`) ----------------------------

    def _done(self, turn: int, text: str, status: str, reason: str, at: str | None) -> None:
        if status == "delivered":
            self.streak += 1
            self._last_auto_turn = self.tracker.turn + 1  # the submission that follows this call
            self.tracker.next_by = "stop_check"
            self.entry["continuations"].append({"turn": self._last_auto_turn, "after_turn": turn,
                                                "at": at, "text": text})
            self.live.record.log(f"stop_check: continuation {self.streak} submitted (turn {self._last_auto_turn})")
            with self._lock:
                self._running = False
            return
        self.entry.setdefault("not_sent", []).append({"after_turn": turn, "status": status, "reason": reason})
        self.live.record.log(f"stop_check: continuation not sent: {reason}")
        from wrapagent.inject.outgoing import TOOL_ENDED

        if status == "cancelled" or status == "not delivered" and reason != TOOL_ENDED:
            # The user took over, or the text was not taken (no Enter went): either way nothing
            # was submitted and the agent waits, a stop like any other (waiting_for_input, the
            # next queued send), not one that holds every later stop and send.
            self._may_stop(turn)
        else:
            with self._lock:
                self._running = False

    def record_into(self, record: dict) -> None:
        if self.entry is not None:
            record["stop_check"] = self.entry
        if self.sends_on:
            record["sent"] = self.sent
