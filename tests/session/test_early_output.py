"""A tool that goes first is recorded from its first byte (`late_turns.EarlyOutput`), its recorder made later."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from wrapagent.session import late_turns
from wrapagent.session.late_turns import EarlyOutput
from wrapagent.session.recorded import open_early

SESSION = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


def _launch(tmp_path: Path) -> SimpleNamespace:
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm"}
    return SimpleNamespace(env=env, interactive=True, name="tool", root_str=str(tmp_path))


def _cfg(enabled: bool = True) -> SimpleNamespace:
    return SimpleNamespace(record=SimpleNamespace(enabled=enabled, max_bytes=0))


def _events(path: str) -> tuple[dict, list[list]]:
    raw = Path(path).read_bytes()
    rows = (gzip.decompress(raw) if path.endswith(".gz") else raw).decode().splitlines()
    return json.loads(rows[0]), [json.loads(r) for r in rows[1:]]


def test_what_came_before_the_recorder_is_recorded_in_order_and_timed_from_the_start(tmp_path: Path) -> None:
    launch = _launch(tmp_path)
    early = EarlyOutput(24, 80)
    time.sleep(0.03)
    early(b"first ")
    early.resized(30, 100)
    early(b"screen")
    recorder, why_not = open_early(early, SESSION, launch, _cfg())
    assert why_not is None and recorder is not None
    assert early(b" later") is recorder  # forwarded, and the proxy told to call the recorder from now on
    recorder(b" on")  # (as the output thread then does)
    early.resized(40, 120)
    info = recorder.close(0)
    header, events = _events(info["file"])
    assert header["term"] == {"cols": 80, "rows": 24, "type": "xterm"} and header["title"] == f"tool in {tmp_path}"
    shown = "".join(e[2] if e[1] == "o" else f"<{e[2]}>" for e in events if e[1] in "or")
    assert shown == "first <100x30>screen later on<120x40>"  # (close output chunks may be one event)
    assert events[0][0] >= 0.03  # from the tool's start, not from when the recorder was made


def test_chunks_fed_while_the_recorder_is_made_are_all_kept_in_order(tmp_path: Path) -> None:
    early = EarlyOutput(24, 80)
    sent = [f"{n};".encode() for n in range(3000)]
    begun = threading.Event()

    def feed() -> None:
        for n, chunk in enumerate(sent):
            early(chunk)
            if n == 100:
                begun.set()

    feeder = threading.Thread(target=feed)
    feeder.start()
    assert begun.wait(30)
    recorder, why_not = open_early(early, SESSION, _launch(tmp_path), _cfg())
    feeder.join(30)
    assert why_not is None
    info = recorder.close(0)
    _, events = _events(info["file"])
    assert "".join(e[2] for e in events if e[1] == "o") == b"".join(sent).decode()


def test_no_recording_wanted_drops_what_was_kept_and_takes_nothing_more(tmp_path: Path) -> None:
    launch = _launch(tmp_path)
    early = EarlyOutput(24, 80)
    assert early(b"x") is None  # kept: the proxy goes on calling the early object
    assert open_early(early, SESSION, launch, _cfg(enabled=False)) == (None, None)
    assert early(b"y") is late_turns._unrecorded  # the proxy's observer from now on: takes nothing
    early.resized(30, 100)
    assert early._kept == [] and not os.path.exists(tmp_path / "state")


def test_a_recording_that_cannot_be_made_says_why_and_takes_nothing_more(tmp_path: Path) -> None:
    launch = _launch(tmp_path)
    (tmp_path / "state" / "wrapagent").mkdir(parents=True)
    os.symlink(tmp_path, tmp_path / "state" / "wrapagent" / "recordings")  # never written through
    early = EarlyOutput(24, 80)
    early(b"x")
    recorder, why_not = open_early(early, SESSION, launch, _cfg())
    assert recorder is None and why_not is not None and why_not.startswith("recording: not recorded")
    early(b"y")
    assert early._kept == []


def test_output_past_the_limit_is_dropped_and_counted(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(late_turns, "EARLY_MAX_BYTES", 10)
    early = EarlyOutput(24, 80)
    early(b"12345678")
    early(b"abcdef")  # past the limit: dropped
    early(b"90")
    recorder, _ = open_early(early, SESSION, _launch(tmp_path), _cfg())
    info = recorder.close(0)
    _, events = _events(info["file"])
    assert "".join(e[2] for e in events if e[1] == "o") == "1234567890"
    assert info["dropped_bytes"] == 6


def test_the_early_recording_loads_nothing_of_the_recorder() -> None:
    code = ("import sys; from wrapagent.session.late_turns import EarlyOutput; EarlyOutput(24, 80)(b'x'); "
            "print(','.join(m for m in ('wrapagent.session.recorded', 'wrapagent.history', "
            "'wrapagent.history.recording', 'json', '_queue') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
