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


def unmask_signals() -> None:
    """A helper thread started from a copy thread inherits its blocked signals, and so would
    the commands it starts (TERM would not stop them): clear the mask first."""
    import signal

    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
    except (AttributeError, OSError, ValueError):
        pass


class StopGate:
    """Runs the stop check at each stop and decides: go on (a continuation) or waiting_for_input."""

    def __init__(self, live: Live, spec, tracker: TurnTracker, outgoing: Outgoing | None,
                 fire_waiting: Callable[[int], None] | None) -> None:
        self.live = live
        self.spec = spec
        self.tracker = tracker
        self.outgoing = outgoing
        self.fire_waiting = fire_waiting
        self.streak = 0
        self._last_auto_turn: int | None = None
        self._running = False
        self._lock = threading.Lock()
        self.entry: dict[str, Any] = {"command": spec.command, "max_continues": spec.max_continues,
                                      "runs": [], "continuations": []}

    # -- the proxy's thread ------------------------------------------------------------

    def stopped(self, turn: int) -> None:
        """The agent stopped after `turn` (TurnTracker's fire)."""
        since = self.tracker.quiet_since
        if turn != self._last_auto_turn:
            self.streak = 0  # the user started this turn: the count restarts
        with self._lock:
            if self._running:
                self.live.record.log("stop_check: still running from the previous stop; this stop is skipped")
                return
            self._running = True
        thread = threading.Thread(target=self._check, args=(turn, since, self.streak),
                                  name="wrapagent-stop-check", daemon=True)
        thread.start()

    # -- the check's thread ------------------------------------------------------------

    def _check(self, turn: int, since: float, continues: int) -> None:
        unmask_signals()
        from wrapagent.hooks.stop_check import run_stop_check
        from wrapagent.session.records import now_iso

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
        if self.fire_waiting is not None:
            self.fire_waiting(turn)

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
        if status == "cancelled":
            self._may_stop(turn)  # the user took over: a stop like any other
        else:
            with self._lock:
                self._running = False

    def record_into(self, record: dict) -> None:
        record["stop_check"] = self.entry
