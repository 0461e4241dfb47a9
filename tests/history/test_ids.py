"""Session ids sort by creation time, and only safe names are taken from a parent's environment."""

from __future__ import annotations

import time

import pytest

from wrapagent.history.ids import CROCKFORD, looks_like_id, new_session_id, ulid_seconds


def test_an_id_is_a_26_character_crockford_ulid() -> None:
    sid = new_session_id()
    assert len(sid) == 26 and set(sid) <= set(CROCKFORD) and looks_like_id(sid)


def test_ids_made_later_sort_later() -> None:
    first = new_session_id()
    end = time.monotonic() + 60
    while (second := new_session_id())[:10] == first[:10]:  # the next millisecond (the time part)
        assert time.monotonic() < end
    assert first < second


def test_ids_made_in_the_same_millisecond_differ() -> None:
    assert len({new_session_id() for _ in range(1000)}) == 1000


@pytest.mark.parametrize("text", ["01HZX3", "test-session_1", "a" * 64])
def test_names_of_older_versions_and_tests_are_ids(text: str) -> None:
    assert looks_like_id(text)


@pytest.mark.parametrize("text", ["", "a" * 65, "../etc", "a/b", "x\x1b]0;title\x07", "é", "a b"])
def test_nothing_that_could_act_as_a_path_or_reach_a_terminal_is(text: str) -> None:
    assert not looks_like_id(text)


def test_ulid_seconds_reads_the_time_in_a_session_id() -> None:
    stamp = ulid_seconds(new_session_id())
    assert stamp is not None and abs(stamp - time.time()) < 60
    assert ulid_seconds("01ARZ3NDEKTSV4RRFFQ69G5FAV") == 1469922850.259
    for odd in ("not-a-ulid!", "01ARZ3NDEK", "01ARZ3NDEKTSV4RRFFQ69G5FAVX", "01ARZ3NDEU" + "0" * 16):
        assert ulid_seconds(odd) is None, odd  # too short, too long, a letter ULIDs leave out (U)
