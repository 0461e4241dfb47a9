"""StopGate after a stop the user caused: no check, no continuation, queued sends wait for them.

The tracker and the gate are driven directly (no tool): `interrupted` stands for the
interrupt watch's verdict at each stop.
"""

from __future__ import annotations

from wrapagent.session.stop_gate import Send, StopGate
from wrapagent.session.turns import TurnTracker


class Record:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def log(self, message: str) -> None:
        self.lines.append(message)

    warn = log


class Live:
    def __init__(self) -> None:
        self.record = Record()
        self.failures: list[str] = []


class Posted:
    """The outgoing queue: keeps what the gate posts."""

    def __init__(self) -> None:
        self.requests: list = []

    def post(self, request) -> None:
        self.requests.append(request)


def world(interrupted: set[int]):
    fired: list[int] = []
    tracker = TurnTracker(3.0, to_wall=str)
    tracker.interrupted = lambda turn: turn in interrupted
    outgoing = Posted()
    gate = StopGate(Live(), None, tracker, outgoing, fired.append, sends=True)
    tracker.fire = gate.stopped
    return tracker, gate, outgoing, fired


def send(text: str, replies: list) -> Send:
    return Send(text, 0.0, {"text": text, "status": "queued"}, replies.append)


def test_a_send_queued_during_an_interrupted_turn_waits_for_the_users_next_message() -> None:
    tracker, gate, outgoing, fired = world(interrupted={1})
    replies: list = []
    tracker.submitted(0.0)
    gate.enqueue(send("from outside", replies))          # the agent works: queued
    tracker.poll(10.0, 1.0)                              # the user interrupted turn 1: its stop
    assert fired == [1] and outgoing.requests == []      # waiting_for_input, no send
    gate.enqueue(send("another", replies))               # the agent waits, but the user has taken over
    assert outgoing.requests == []
    tracker.submitted(20.0)                              # the user's next message
    tracker.poll(30.0, 21.0)
    assert [r.text for r in outgoing.requests] == ["from outside"]
    assert fired == [1]                                  # this stop submits the send instead
    assert any("interrupted by the user" in line for line in gate.live.record.lines)


def test_an_ordinary_stop_still_sends_at_once() -> None:
    tracker, gate, outgoing, fired = world(interrupted=set())
    tracker.submitted(0.0)
    gate.enqueue(send("from outside", []))
    tracker.poll(10.0, 1.0)
    assert [r.text for r in outgoing.requests] == ["from outside"] and fired == []


def test_the_check_does_not_run_for_an_interrupted_turn_and_the_count_restarts() -> None:
    from wrapagent.hooks.config_model import StopCheckSpec

    fired: list[int] = []
    tracker = TurnTracker(3.0, to_wall=str)
    tracker.interrupted = lambda turn: turn == 2
    gate = StopGate(Live(), StopCheckSpec(command="exit 2", max_continues=2), tracker, Posted(), fired.append)
    tracker.fire = gate.stopped
    tracker.submitted(0.0)
    gate.streak = 1                                      # turn 2 stands for a continuation
    gate._last_auto_turn = 2
    tracker.submitted(5.0)
    tracker.poll(10.0, 6.0)
    assert fired == [2] and gate.streak == 0 and not gate._running   # no check started
    assert gate.entry["interrupted"] == [2] and gate.entry["runs"] == []
    assert tracker.turns[-1]["interrupted"] is True
