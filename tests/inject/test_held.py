"""Keys held while the blocks go in are released read by read, with their gaps (capped), in order."""

from __future__ import annotations

import pytest

from wrapagent.inject.held import HELD_GAP_CAP_SECS, HeldKeys


def test_the_first_read_goes_at_once_the_others_keep_their_gaps() -> None:
    held = HeldKeys()
    held.hold(10.0, b"h")
    held.hold(10.1, b"i")
    held.hold(15.0, b"\r")  # typed long after: its gap is capped
    assert held.release(20.0) == (3, 3, b"h")
    assert held.replay == [(pytest.approx(20.1), 10.1, b"i"), (pytest.approx(20.1 + HELD_GAP_CAP_SECS), 15.0, b"\r")]
    assert held.pop_due(20.05) is None and held.next_due() == pytest.approx(20.1)
    assert held.pop_due(20.1) == b"i"
    assert held.pop_due(30.0) == b"\r"
    # it went long after it came: a read arriving now is kept apart from it (the lag, below)
    assert held.next_due() == pytest.approx(30.0 + HELD_GAP_CAP_SECS)
    assert not held.busy(30.0 + HELD_GAP_CAP_SECS) and held.next_due() is None


def test_nothing_held_releases_nothing() -> None:
    held = HeldKeys()
    held.hold(1.0, b"")  # an empty read is no read
    assert held.release(2.0) == (0, 0, b"")


def test_a_read_arriving_during_the_replay_goes_behind_it() -> None:
    held = HeldKeys()
    held.hold(0.0, b"a")
    held.hold(0.05, b"b")
    held.release(1.0)
    held.queue(b"c", 1.02)  # arrived 0.97 s after b: capped
    assert [d for _, _, d in held.replay] == [b"b", b"c"]
    assert held.replay[-1][0] == pytest.approx(1.05 + HELD_GAP_CAP_SECS)


def test_rehold_and_take_all_keep_every_byte_in_order() -> None:
    held = HeldKeys()
    for t, d in ((0.0, b"a"), (0.1, b"b"), (0.2, b"c")):
        held.hold(t, d)
    held.release(1.0)
    held.rehold()  # a replayed Ctrl-C, then a key: the rest is held again
    assert [d for _, d in held.reads] == [b"b", b"c"] and held.replay == []
    held.hold(2.0, b"d")
    assert held.take_all() == b"bcd" and held.take_all() == b""


def test_a_read_after_the_replay_ran_late_keeps_its_gap_to_the_last_replayed_one() -> None:
    """The hold delays the replay: the Enter typed 0.47 s after the last letter arrives 0.07 s
    after that letter went. Sent at once, gemini under load submitted without the letter."""
    held = HeldKeys()
    held.hold(0.0, b"a")
    held.hold(0.05, b"n")
    held.release(0.4)                        # the blocks took 0.4 s
    assert held.pop_due(0.45) == b"n"         # the last letter went at 0.45, typed at 0.05
    assert held.busy(0.52)                    # the Enter, typed 0.47 s after it: not at once
    held.queue(b"\r", 0.52)
    assert held.pop_due(0.52 + 0.01) is None
    assert held.next_due() == pytest.approx(0.45 + HELD_GAP_CAP_SECS)
    assert held.pop_due(0.45 + HELD_GAP_CAP_SECS) == b"\r"


def test_a_replay_that_was_not_late_lets_the_next_read_go_at_once() -> None:
    held = HeldKeys()
    held.hold(1.0, b"a")
    held.release(1.0)                         # nothing delayed it
    assert not held.busy(1.01) and held.next_due() is None
    held.hold(2.0, b"a")
    held.release(2.2)
    assert held.busy(2.2 + HELD_GAP_CAP_SECS / 2)
    assert not held.busy(2.2 + HELD_GAP_CAP_SECS)   # the lag is over: as typed


def test_an_enter_after_a_paste_keeps_its_own_pause() -> None:
    """gemini under load takes an Enter 0.3 s after a paste's end as part of the paste: the
    pause the user made before it is kept (up to ENTER_AFTER_PASTE_CAP_SECS), other gaps capped."""
    from wrapagent.inject.held import ENTER_AFTER_PASTE_CAP_SECS

    held = HeldKeys()
    held.hold(0.0, b"\x1b[200~twelve lines\x1b[201~")
    held.hold(0.8, b"\r")                       # the user's pause, then Enter
    held.hold(5.0, b"x")                        # long after: capped as before
    held.release(10.0)
    assert [due for due, _, _ in held.replay] == [pytest.approx(10.8), pytest.approx(10.8 + HELD_GAP_CAP_SECS)]
    held = HeldKeys()
    held.hold(0.0, b"\x1b[200~text\x1b[201~")
    held.hold(3.0, b"\r")                       # a long pause: capped at the longer cap
    held.release(10.0)
    assert held.replay[0][0] == pytest.approx(10.0 + ENTER_AFTER_PASTE_CAP_SECS)
    # an Enter arriving while the paste is still to be replayed: the same
    held = HeldKeys()
    held.hold(0.0, b"a")
    held.hold(0.1, b"\x1b[200~text\x1b[201~")
    held.release(10.0)
    held.queue(b"\r", 10.6)                     # typed 10.5 s after the paste: the longer cap
    assert held.replay[-1][0] == pytest.approx(10.1 + ENTER_AFTER_PASTE_CAP_SECS)
