"""A recording read back: asciicast v3 header and events, a crash's cut file, and each turn's screen."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from wrapagent.history.cast_file import CastError, load, parse, term_size, timed, turns_from_screen

HEADER = {"version": 3, "term": {"cols": 40, "rows": 5}}


def cast(*events: list, header: dict = HEADER) -> bytes:
    return "\n".join([json.dumps(header), *(json.dumps(e) for e in events)]).encode() + b"\n"


def test_header_and_events_comments_and_a_cut_last_line() -> None:
    data = cast([0.1, "o", "hi"], [0.2, "m", "turn 1: hello"]) + b"# a comment\n[0.3, \"o\", \"cut sh"
    header, events = parse(data)
    assert header == HEADER and events == [[0.1, "o", "hi"], [0.2, "m", "turn 1: hello"]]


def test_only_the_events_of_one_code() -> None:
    _, events = parse(cast([0.1, "o", "x"], [0.2, "m", "turn 1: a"], [0.1, "o", "y"]), only="m")
    assert events == [[0.2, "m", "turn 1: a"]]


@pytest.mark.parametrize("first", [b"not json", b'{"version": 2, "width": 80}', b'{"version": 3}'])
def test_anything_but_a_v3_header_is_refused(first: bytes) -> None:
    with pytest.raises(CastError):
        parse(first + b"\n")


def test_a_gzip_recording_cut_short_by_a_crash_is_read_as_far_as_it_goes(tmp_path: Path) -> None:
    whole = gzip.compress(cast(*([0.01, "o", f"line {i}\r\n"] for i in range(2000))))
    (tmp_path / "rec.cast.gz").write_bytes(whole[: len(whole) * 2 // 3])
    header, events = load(str(tmp_path / "rec.cast.gz"))
    assert header == HEADER and 0 < len(events) < 2000
    assert [e[2] for e in events] == [f"line {i}\r\n" for i in range(len(events))]
    (tmp_path / "bad.cast.gz").write_bytes(b"not gzip at all")
    with pytest.raises(CastError):
        load(str(tmp_path / "bad.cast.gz"))


def test_the_terminal_size_with_a_fallback() -> None:
    assert term_size(HEADER) == (5, 40)
    assert term_size({"term": {"cols": "80"}}) == (24, 80) and term_size({}) == (24, 80)


def test_playing_caps_idle_time_and_follows_the_speed() -> None:
    events = [[0.5, "o", "a"], [30.0, "o", "b"], [-1, "o", "c"]]
    assert [w for w, _ in timed(events, speed=2.0, idle_limit=2.0)] == [0.25, 1.0, 0.0]


def test_turns_read_off_the_screen_follow_a_resize() -> None:
    events = [[0, "m", "turn 1: what is up"], [0, "o", "\x1b[2J\x1b[Hreply one"],
              [0, "r", "10x3"], [0, "m", "turn 2: and then"], [0, "o", "\x1b[2J\x1b[Hsecond reply is long"]]
    turns = turns_from_screen(HEADER, events)
    assert turns == [{"user": "what is up", "agent": "reply one"},
                     {"user": "and then", "agent": "second rep\nly is long"}]
    assert turns_from_screen(HEADER, events, screens=False) == [{"user": "what is up", "agent": ""},
                                                               {"user": "and then", "agent": ""}]
