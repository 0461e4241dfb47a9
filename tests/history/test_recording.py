"""The recorder on its own: asciicast v3 lines, relative intervals, markers, the cap, drops, files, expiry."""

from __future__ import annotations

import gzip
import json
import os
import stat
import time
from pathlib import Path

import pytest

from wrapagent.history import cast_file, recording, recording_files
from wrapagent.history.recording import Recorder, marker_label


def lines_of(path: str) -> tuple[dict, list[list]]:
    raw = Path(path).read_bytes()
    text = (gzip.decompress(raw) if path.endswith(".gz") else raw).decode()
    rows = text.splitlines()
    return json.loads(rows[0]), [json.loads(r) for r in rows[1:]]


def test_events_have_relative_intervals_and_the_exit_last(tmp_path: Path) -> None:
    rec = Recorder(str(tmp_path / "s.cast"), 24, 80, max_bytes=0, term_type="xterm")
    rec(b"hello ")
    time.sleep(0.02)
    rec.marker("turn 1: hi")
    rec(b"w\xc3")  # a character cut between two chunks
    rec(b"\xa9rld\r\n")
    rec.resized(30, 100)
    info = rec.close(3)
    header, events = lines_of(info["file"])
    assert header == {"version": 3, "term": {"cols": 80, "rows": 24, "type": "xterm"},
                      "timestamp": header["timestamp"]}
    assert [e[1:] for e in events] == [["o", "hello "], ["m", "turn 1: hi"], ["o", "wérld\r\n"],
                                       ["r", "100x30"], ["x", "3"]]
    assert all(e[0] >= 0 for e in events) and events[1][0] >= 0.02
    assert sum(e[0] for e in events) < 60  # relative, not since the start each
    assert info["markers"] == 1 and info["events"] == 4 and info["file"].endswith(".cast.gz")
    assert stat.S_IMODE(os.stat(info["file"]).st_mode) == 0o600
    assert not os.path.exists(tmp_path / "s.cast")


def test_the_size_cap_stops_the_recording_with_a_note(tmp_path: Path) -> None:
    rec = Recorder(str(tmp_path / "s.cast"), 24, 80, max_bytes=2000)
    for _ in range(50):
        rec(b"x" * 100)
        time.sleep(0.006)  # apart: separate events
    deadline = time.monotonic() + 30
    while not rec.stopped and time.monotonic() < deadline:
        time.sleep(0.01)
    rec(b"after the cap")
    info = rec.close(0)
    _, events = lines_of(info["file"])
    assert info["capped"] is True and events[-1][1] == "m" and "size cap of 2000 bytes" in events[-1][2]
    assert all("after the cap" not in e[2] for e in events)
    assert os.path.getsize(tmp_path / "s.cast.gz") < 2000
    assert len(gzip.decompress((tmp_path / "s.cast.gz").read_bytes())) <= 2000 + 200


def test_a_writer_that_falls_behind_drops_output_with_a_marker(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(recording, "MAX_BACKLOG_BYTES", 10)
    rec = Recorder(str(tmp_path / "s.cast"), 24, 80, max_bytes=0)
    rec(b"0123456789ab")  # queued: the backlog was 0
    rec(b"dropped")  # 12 bytes behind > 10: not queued, not waited for
    info = rec.close(0)
    _, events = lines_of(info["file"])
    assert info["dropped_bytes"] == 7
    assert ["m", "recording: 7 bytes of output not recorded (the recording fell behind)"] in [e[1:] for e in events]


def test_the_file_is_never_written_through_a_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    os.symlink(target, tmp_path / "s.cast")
    with pytest.raises(OSError):
        Recorder(str(tmp_path / "s.cast"), 24, 80, max_bytes=0)
    assert target.read_text() == "keep"


def test_start_refuses_a_recordings_folder_that_is_a_link(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "wrapagent").mkdir(parents=True)
    os.symlink(tmp_path, state / "wrapagent" / "recordings")
    settings = type("S", (), {"max_bytes": 0})()
    recorder, why = recording.start("01ARZ3NDEKTSV4RRFFQ69G5FAV", settings, {"XDG_STATE_HOME": str(state)}, 24, 80)
    assert recorder is None and "not a folder" in why


def test_a_deferred_recorder_keeps_what_came_before_its_file(tmp_path: Path) -> None:
    """A tool that goes first is recorded from its first byte; the file comes once that byte is out."""
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm"}
    rec = recording.prepare("01ARZ3NDEKTSV4RRFFQ69G5FAV", env, 24, 80, title="t")
    rec(b"first ")
    time.sleep(0.02)
    rec(b"bytes")
    assert not os.path.exists(recording_files.recordings_dir(env))  # nothing on disk yet
    assert recording.open_prepared(rec, env, 0) is None
    rec(b"\r\nlater")
    info = rec.close(0)
    header, events = lines_of(info["file"])
    assert header["title"] == "t" and header["term"]["type"] == "xterm"
    outputs = [e for e in events if e[1] == "o"]
    assert "".join(e[2] for e in outputs) == "first bytes\r\nlater"
    assert outputs[1][0] >= 0.02  # timed as they came, not when the file was made
    assert stat.S_IMODE(os.stat(recording_files.recordings_dir(env)).st_mode) == 0o700


def test_chunks_that_come_while_the_file_is_made_are_kept_in_order(tmp_path: Path) -> None:
    """The output thread feeds the recorder while the session's setup opens it: nothing lost or swapped."""
    import threading

    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    rec = recording.prepare("01ARZ3NDEKTSV4RRFFQ69G5FAV", env, 24, 80)
    sent = [f"{n};".encode() for n in range(3000)]
    started = threading.Event()

    def feed() -> None:
        for n, chunk in enumerate(sent):
            rec(chunk)
            if n == 100:
                started.set()

    feeder = threading.Thread(target=feed)
    feeder.start()
    assert started.wait(30)
    assert recording.open_prepared(rec, env, 0) is None
    feeder.join(30)
    info = rec.close(0)
    _, events = lines_of(info["file"])
    assert "".join(e[2] for e in events if e[1] == "o") == b"".join(sent).decode()


def test_a_deferred_recorder_whose_file_cannot_be_made_takes_nothing_more(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    (tmp_path / "state" / "wrapagent").mkdir(parents=True)
    os.symlink(tmp_path, tmp_path / "state" / "wrapagent" / "recordings")
    rec = recording.prepare("01ARZ3NDEKTSV4RRFFQ69G5FAV", env, 24, 80)
    rec(b"queued")
    why = recording.open_prepared(rec, env, 0)
    assert why is not None and "not a folder" in why
    rec(b"after")
    assert rec.stopped and rec._queue is None and rec._early == []
    assert not list(tmp_path.glob("*.cast*"))


def test_a_recorder_never_opened_closes_without_a_file(tmp_path: Path) -> None:
    rec = Recorder(str(tmp_path / "s.cast"), 24, 80, max_bytes=0, deferred=True)
    rec(b"x")
    info = rec.close(0)
    assert info["events"] == 0 and "never created" in info["error"]
    assert list(tmp_path.iterdir()) == []


def test_the_recorder_loads_json_only_with_its_file(tmp_path: Path) -> None:
    """Made before the tool's first byte, it must not load what `json` pulls in (re, enum: ~10 ms)."""
    import subprocess
    import sys

    code = ("import sys; from wrapagent.history import recording; "
            f"rec = recording.prepare('01ARZ3NDEKTSV4RRFFQ69G5FAV', {{'XDG_STATE_HOME': {str(tmp_path)!r}}}, 24, 80); "
            "rec(b'x'); "
            "print(' '.join(m for m in ('json', 're', 'enum', 'threading', 'queue', '_queue', 'wrapagent.history.private_files') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(Path(recording.__file__).parents[2]), timeout=60).stdout
    assert out.split() == []


def test_marker_labels_are_one_short_line() -> None:
    assert marker_label(2, "fix the\nlogin  bug please") == "turn 2: fix the login bug please"
    assert marker_label(1, "") == "turn 1"
    assert marker_label(3, "go on", "stop_check") == "turn 3 (stop_check): go on"
    long = marker_label(1, "word " * 4 + "x" * 100)
    assert len(long) <= len("turn 1: ") + recording.MARKER_CHARS and long.endswith("…")
    assert "\x1b" not in marker_label(1, "a \x1b[2J b")


def test_a_cut_gzip_stream_is_read_as_far_as_it_goes(tmp_path: Path) -> None:
    rec = Recorder(str(tmp_path / "s.cast"), 24, 80, max_bytes=0)
    for n in range(200):
        rec(f"line {n}\r\n".encode())
        rec.marker(f"m{n}")  # an event of its own: many lines in the file
    info = rec.close(0)
    data = Path(info["file"]).read_bytes()
    (tmp_path / "cut.cast.gz").write_bytes(data[: len(data) // 2])
    os.chmod(tmp_path / "cut.cast.gz", 0o600)
    header, events = cast_file.load(str(tmp_path / "cut.cast.gz"))
    assert header["version"] == 3 and events and events[0][1] == "o"


def test_turns_from_the_screen_follow_the_markers() -> None:
    header = {"version": 3, "term": {"cols": 40, "rows": 5}}
    events = [[0.1, "o", "banner\r\n> "], [0.1, "m", "turn 1: hello there"],
              [0.1, "o", "hello there\r\n" + "".join(f"row {n}\r\n" for n in range(8)) + "answer one\r\n> "],
              [0.1, "m", "turn 2: second"], [0.1, "o", "\x1b[2J\x1b[Hanswer two"], [0.1, "x", "0"]]
    turns = cast_file.turns_from_screen(header, events)
    assert [t["user"] for t in turns] == ["hello there", "second"]
    assert turns[0]["agent"].splitlines() == ["row 5", "row 6", "row 7", "answer one", ">"]  # the screen then
    assert turns[1]["agent"] == "answer two"
    assert cast_file.turns_from_screen(header, events, screens=False) == [
        {"user": "hello there", "agent": ""}, {"user": "second", "agent": ""}]
    assert cast_file.parse(b'{"version": 3, "term": {}}\n[0.1, "o", "x"]\n[0.2, "m", "turn 1"]\n', "m")[1] == [
        [0.2, "m", "turn 1"]]


def test_a_file_that_is_not_asciicast_v3_is_refused() -> None:
    with pytest.raises(cast_file.CastError):
        cast_file.parse(b'{"version": 2, "width": 80, "height": 24}\n')


def test_the_record_table_is_checked_key_by_key(tmp_path: Path) -> None:
    from wrapagent.hooks.config_loader import load_config
    from wrapagent.hooks.config_model import DEFAULT_RECORD_MAX_BYTES

    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)}
    hooks = tmp_path / "config" / "wrapagent" / "hooks.toml"
    hooks.parent.mkdir(parents=True)
    assert load_config(str(tmp_path), env=env).record.enabled is True
    hooks.write_text("[record]\nenabled = false\nmax_bytes = 1000\n")
    cfg = load_config(str(tmp_path), env=env)
    assert (cfg.record.enabled, cfg.record.max_bytes, cfg.record.source) == (False, 1000, str(hooks))
    hooks.write_text("[record]\nmax_bytes = -1\nenable = true\n")
    cfg = load_config(str(tmp_path), env=env)
    assert cfg.record.max_bytes == DEFAULT_RECORD_MAX_BYTES
    problems = {p.key: p.severity for p in cfg.problems}
    assert problems["record.max_bytes"] == "error" and problems["record.enable"] == "warning"


def wait_until(check, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.01)


def cast_lines(path: Path) -> list[list]:
    return [json.loads(r) for r in path.read_text().splitlines()[1:]]


def test_a_burst_is_spooled_raw_and_encoded_in_order_once_output_is_quiet(tmp_path: Path, monkeypatch) -> None:
    """While the tool floods its terminal the writer encodes nothing: the bytes wait in the spool."""
    monkeypatch.setattr(recording, "BURST_BYTES", 1000)
    monkeypatch.setattr(recording, "HELD_BYTES", 0)  # past what is held in memory: the spool file
    cast, spool = tmp_path / "s.cast", tmp_path / "s.cast.spool"
    seen: list[tuple] = []
    unspool = Recorder._unspool

    def watched(self: Recorder) -> None:  # what was on disk when the encoding began, and after
        before = (cast_lines(cast), spool.read_bytes())
        unspool(self)
        seen.append((*before, spool.stat().st_size))

    monkeypatch.setattr(Recorder, "_unspool", watched)
    rec = Recorder(str(cast), 24, 80, max_bytes=0)
    rec(b"a" * 600 + "é".encode()[:1])  # a character cut between two chunks, both in the burst
    rec.marker("turn 1: in the burst")
    rec("é".encode()[1:] + b"b" * 600)
    rec.resized(30, 100)
    wait_until(lambda: bool(seen))  # QUIET_SECS without output: the spool is encoded
    ((encoded_before, spooled, spool_after),) = seen
    assert encoded_before == []  # nothing encoded during the burst
    assert spooled == b"a" * 600 + "é".encode() + b"b" * 600 and spool_after == 0  # raw, then emptied
    rec(b"after")  # no burst: written as it comes, after the spooled events
    info = rec.close(0)
    _, events = lines_of(info["file"])
    assert [e[1:] for e in events] == [["o", "a" * 600], ["m", "turn 1: in the burst"], ["o", "é" + "b" * 600],
                                       ["r", "100x30"], ["o", "after"], ["x", "0"]]
    assert not spool.exists()


def test_bursts_held_in_memory_then_spooled_come_out_in_order_with_their_times(tmp_path: Path, monkeypatch) -> None:
    """Batches of output alone (kept as runs) and a batch with a marker (kept item by item), held
    in memory then in the spool file: encoded in the order queued, each event at its chunk's time."""
    monkeypatch.setattr(recording, "BURST_BYTES", 1000)
    monkeypatch.setattr(recording, "HELD_BYTES", 2700)
    monkeypatch.setattr(recording, "QUIET_SECS", 3600.0)  # only the end encodes the spool
    rec = Recorder(str(tmp_path / "s.cast"), 24, 80, max_bytes=0, started=100.0)
    # The writer's own batches, as its thread takes them off the queue (nothing is queued meanwhile).
    assert rec._take([(101.0, b"a" * 600), (101.001, b"b" * 600)])  # held in memory, a run
    assert rec._take([(102.0, b"c" * 700), (102.001, "m", "turn 2: mid-burst"), (102.002, b"d" * 700)])
    assert rec._take([(103.0, b"e" * 1200)])  # past HELD_BYTES: the spool file, a run
    spool = tmp_path / "s.cast.spool"
    assert spool.read_bytes() == b"e" * 1200
    assert rec.taken == 600 + 600 + 700 + 700 + 1200
    info = rec.close(0)
    _, events = lines_of(info["file"])
    assert [e[1:] for e in events[:-1]] == [["o", "a" * 600 + "b" * 600], ["o", "c" * 700],
                                            ["m", "turn 2: mid-burst"], ["o", "d" * 700], ["o", "e" * 1200]]
    times = [round(sum(e[0] for e in events[:i + 1]), 3) for i in range(len(events) - 1)]
    assert times == [1.0, 2.0, 2.001, 2.002, 3.0]
    assert not spool.exists()


def test_a_dip_in_a_burst_is_spooled_and_only_output_slow_for_quiet_secs_ends_it(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    """A batch below the burst rate between two of a burst's (the machine busy for a moment) goes
    to the spool too: encoding all that was spooled there stalled the copy in the middle of a
    `cat`. Output that stays slow for QUIET_SECS ends the burst: then everything is encoded."""
    monkeypatch.setattr(recording, "BURST_BYTES", 1000)
    monkeypatch.setattr(recording, "HELD_BYTES", 0)
    monkeypatch.setattr(recording, "QUIET_SECS", 0.2)
    clock = [101.0]
    monkeypatch.setattr(recording, "monotonic", lambda: clock[0])
    cast, spool = tmp_path / "s.cast", tmp_path / "s.cast.spool"
    rec = Recorder(str(cast), 24, 80, max_bytes=0, started=100.0)
    # The writer's own batches, as its thread takes them off the queue (nothing is queued meanwhile).
    for at, data in [(101.0, b"a" * 1200), (101.05, b"b" * 10), (101.1, b"c" * 1200), (101.15, b"d" * 10),
                     (101.3, b"e" * 10)]:
        clock[0] = at
        assert rec._take([(at, data)])
    assert cast_lines(cast) == [] and spool.read_bytes() == b"a" * 1200 + b"b" * 10 + b"c" * 1200 + b"d" * 10 + b"e" * 10
    clock[0] = 101.4  # slow since 101.15: the burst is over
    assert rec._take([(101.4, b"f" * 10)])
    assert [e[1:] for e in cast_lines(cast)] == [["o", "a" * 1200], ["o", "b" * 10], ["o", "c" * 1200],
                                                 ["o", "d" * 10], ["o", "e" * 10], ["o", "f" * 10]]
    assert spool.stat().st_size == 0
    rec.close(0)


def test_a_short_burst_is_held_in_memory_and_never_written_raw(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(recording, "BURST_BYTES", 1000)
    cast = tmp_path / "s.cast"
    seen: list[list] = []
    unspool = Recorder._unspool

    def watched(self: Recorder) -> None:
        seen.append(cast_lines(cast))
        unspool(self)

    monkeypatch.setattr(Recorder, "_unspool", watched)
    rec = Recorder(str(cast), 24, 80, max_bytes=0)
    rec(b"q" * 1500)
    wait_until(lambda: bool(seen))
    assert seen == [[]] and not (tmp_path / "s.cast.spool").exists()
    info = rec.close(0)
    _, events = lines_of(info["file"])
    assert [e[1:] for e in events] == [["o", "q" * 1500], ["x", "0"]]


def test_what_is_spooled_at_the_end_is_encoded_before_the_exit(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(recording, "BURST_BYTES", 100)
    monkeypatch.setattr(recording, "HELD_BYTES", 0)
    monkeypatch.setattr(recording, "QUIET_SECS", 3600.0)  # never quiet: only the end encodes it
    cast, spool = tmp_path / "s.cast", tmp_path / "s.cast.spool"
    rec = Recorder(str(cast), 24, 80, max_bytes=0)
    rec(b"x" * 500)
    wait_until(lambda: spool.exists() and spool.stat().st_size == 500)  # it stays: never quiet
    info = rec.close(7)
    _, events = lines_of(info["file"])
    assert [e[1:] for e in events] == [["o", "x" * 500], ["x", "7"]]
    assert not spool.exists()


def test_a_spool_past_its_bound_is_encoded_during_the_burst(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(recording, "BURST_BYTES", 100)
    monkeypatch.setattr(recording, "SPOOL_MAX_BYTES", 300)
    monkeypatch.setattr(recording, "HELD_BYTES", 200)  # 400 in one batch: past it, to the file
    monkeypatch.setattr(recording, "QUIET_SECS", 3600.0)
    cast = tmp_path / "s.cast"
    rec = Recorder(str(cast), 24, 80, max_bytes=0)
    rec(b"y" * 400)
    wait_until(lambda: any(e[1] == "o" for e in cast_lines(cast)))  # encoded without any quiet
    info = rec.close(0)
    _, events = lines_of(info["file"])
    assert "".join(e[2] for e in events if e[1] == "o") == "y" * 400


def test_the_size_cap_holds_for_a_spooled_burst(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(recording, "BURST_BYTES", 100)
    rec = Recorder(str(tmp_path / "s.cast"), 24, 80, max_bytes=2000)
    for _ in range(10):
        rec(b"z" * 1000)
    info = rec.close(0)
    _, events = lines_of(info["file"])
    assert info["capped"] is True and "size cap of 2000 bytes" in events[-1][2]
    assert len(gzip.decompress(Path(info["file"]).read_bytes())) <= 2000 + 200
    assert not (tmp_path / "s.cast.spool").exists()


def test_what_the_player_of_asciinema_plays_is_what_the_tool_wrote(tmp_path: Path, monkeypatch) -> None:
    """Every kind of byte, a burst through the spool, markers and a resize: asciinema-player (where
    it is installed) plays the same text, markers and sizes."""
    from asciinema_player import play

    monkeypatch.setattr(recording, "BURST_BYTES", 4096)
    monkeypatch.setattr(recording, "HELD_BYTES", 0)
    rec = Recorder(str(tmp_path / "s.cast"), 24, 80, max_bytes=0, term_type="xterm-256color")
    odd = 'quote " backslash \\ tab \t esc \x1b[1mbold\x1b[0m nul-ish \x01\x7f emoji 😀 é\r\n'.encode()
    rec(odd)
    rec.marker("turn 1: a \"quoted\" message")
    rec(b"\xff\xfe not utf-8\r\n")
    rec(b"x" * 10000 + "€".encode()[:2])  # a burst, a character cut at its end
    rec("€".encode()[2:] + b"\r\n")
    rec.resized(30, 100)
    info = rec.close(0)
    _, events = lines_of(info["file"])
    seen = play(Path(info["file"]))
    assert seen["errors"] == [] and seen["ended"]
    assert seen["output"] == "".join(e[2] for e in events if e[1] == "o")
    assert "😀 é" in seen["output"] and "x" * 10000 + "€\r\n" in seen["output"]
    assert seen["markers"] == ['turn 1: a "quoted" message'] and [100, 30] in seen["resizes"]
