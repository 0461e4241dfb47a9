"""StopGate after the user answered a dialog: the agent works again, so nothing is typed until
its next stop; an answer the tool ignored leaves the agent waiting, and what waits goes on.

The tracker and the gate are driven directly (no tool).
"""

from __future__ import annotations

from test_stop_gate import send
from test_stop_gate import world as bare_world


def world(interrupted: set[int]):
    """The gate wired to the tracker as the session wires them."""
    tracker, gate, outgoing, fired = bare_world(interrupted)
    tracker.on_same_wait = gate.same_wait
    return tracker, gate, outgoing, fired


def test_a_send_after_an_answer_waits_for_the_resumed_turns_stop() -> None:
    tracker, gate, outgoing, fired = world(interrupted=set())
    tracker.submitted(0.0)
    tracker.poll(10.0, 1.0)                              # the agent stops at its permission prompt
    assert fired == [1]
    tracker.resumed(11.0)                                # the user answers it with Enter
    gate.enqueue(send("from outside", []))               # the agent works again: not now
    assert outgoing.requests == []
    tracker.poll(20.0, 15.0)                             # the resumed turn's stop
    assert [r.text for r in outgoing.requests] == ["from outside"]
    assert fired == [1]                                  # this stop submits the send instead


def test_an_enter_the_tool_ignored_gives_the_deferred_send_its_turn() -> None:
    tracker, gate, outgoing, fired = world(interrupted=set())
    replies: list = []
    tracker.submitted(0.0)
    tracker.poll(10.0, 1.0)
    gate.enqueue(send("from outside", replies))
    (request,) = outgoing.requests
    request.done("cancelled", "you typed after the agent stopped", None)   # the user's Enter
    tracker.resumed(11.0)
    tracker.poll(20.0, 10.5)                             # nothing drawn after the Enter: still waiting
    assert [r.text for r in outgoing.requests] == ["from outside", "from outside"]
    assert outgoing.requests[1].since >= 11.0            # only a key after this one defers it again
    assert fired == [1] and replies == []


def test_the_session_ending_says_why_a_deferred_send_waited() -> None:
    tracker, gate, outgoing, fired = world(interrupted=set())
    replies: list = []
    tracker.submitted(0.0)
    tracker.poll(10.0, 1.0)
    gate.enqueue(send("from outside", replies))
    outgoing.requests[0].done("cancelled", "you typed after the agent stopped", None)
    gate.close()
    assert replies == [{"error": "the session ended (it waited for the agent's next stop: "
                                 "you typed after the agent stopped)"}]


def test_a_continuation_the_tool_did_not_take_is_a_stop_like_any_other() -> None:
    """No receipt, no Enter: nothing was submitted, so waiting_for_input fires and a queued send
    goes (before: the gate waited for a stop that never came, the send with it)."""
    from wrapagent.hooks.config_model import StopCheckSpec

    tracker, gate, outgoing, fired = world(interrupted=set())
    gate.spec = StopCheckSpec(command="exit 2")
    gate.entry = {"command": "exit 2", "max_continues": 3, "runs": [], "continuations": []}
    tracker.fire = None                                  # the stop, without running the check here
    tracker.submitted(0.0)
    tracker.poll(10.0, 1.0)
    gate.enqueue(send("from outside", []))
    assert outgoing.requests == []
    with gate._lock:
        gate._running = True                             # the check asked for a continuation
    gate._done(1, "go on", "not delivered", "the composer did not show the text after it was written", None)
    assert fired == [] and [r.text for r in outgoing.requests] == ["from outside"]
    assert not gate._running


def test_a_send_the_tool_did_not_take_lets_the_next_one_go() -> None:
    tracker, gate, outgoing, fired = world(interrupted=set())
    replies: list = []
    tracker.submitted(0.0)
    tracker.poll(10.0, 1.0)
    gate.enqueue(send("one", replies))
    gate.enqueue(send("two", replies))
    assert [r.text for r in outgoing.requests] == ["one"]
    outgoing.requests[0].done("not delivered", "the composer did not show the text after it was written", None)
    assert replies == [{"error": "the composer did not show the text after it was written"}]
    assert [r.text for r in outgoing.requests] == ["one", "two"]
    outgoing.requests[1].done("not delivered", "the tool ended", None)
    assert len(outgoing.requests) == 2                   # the session is over: nothing more posted
