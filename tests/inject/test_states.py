"""The injector's table of states (`states.TRANSITIONS`): complete, and checked at each change."""

from __future__ import annotations

from wrapagent.inject import states
from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.injector import SessionInjector

ALL = {states.STARTING, states.WAIT_READY, states.ARMED, states.COMMAND, states.HOLDING, states.DELIVERING,
       states.SETTLING, states.AWAIT_SUBMIT, states.CHATTING, states.DONE}


def test_every_state_has_a_row_and_every_change_a_reason() -> None:
    assert set(states.TRANSITIONS) == ALL
    for old, row in states.TRANSITIONS.items():
        assert set(row) <= ALL, old
        assert old not in row, f"{old}: staying is no change"
        assert all(why.strip() for why in row.values()), old


def test_every_state_is_reachable_from_the_start() -> None:
    seen, todo = {states.STARTING}, [states.STARTING]
    while todo:
        for new in states.TRANSITIONS[todo.pop()]:
            if new not in seen:
                seen.add(new)
                todo.append(new)
    assert seen | {states.DONE} == ALL


def test_allowed_follows_the_table() -> None:
    assert states.allowed(states.ARMED, states.HOLDING)
    assert states.allowed(states.CHATTING, states.CHATTING)
    assert states.allowed(states.SETTLING, states.DONE)        # an internal error, from anywhere
    assert not states.allowed(states.STARTING, states.SETTLING)
    assert not states.allowed(states.DONE, states.ARMED)


def test_a_change_the_table_does_not_list_is_logged_and_kept() -> None:
    said: list[str] = []
    inj = SessionInjector(adapter_for("demo"), rows=24, cols=80, get_prefix=lambda: "", wake_fd=None,
                          log=said.append)
    inj._go(states.SETTLING)                                      # STARTING -> SETTLING: no such change
    assert inj.unexpected_transitions == [(states.STARTING, states.SETTLING)]
    assert inj.state == states.SETTLING                          # behaviour unchanged: only said
    assert any("unexpected change of state starting -> settling" in line for line in said)
