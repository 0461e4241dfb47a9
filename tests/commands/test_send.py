"""`wrapagent send` without a PTY: which session it picks, what it refuses, the socket's rules.

The server is driven with a fake stop gate (the queue's rules are the gate's,
tested through a terminal in tests/session/test_send_channel_pty.py).
"""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import pytest

from wrapagent import portable
from wrapagent.commands import send as send_cmd
from wrapagent.session import send_channel
from wrapagent.history.records import RUNNING_DIR

from waiting import wait_for


class Env:
    def __init__(self, tmp: Path) -> None:
        self.project = tmp / "project"
        self.project.mkdir()
        self.root = tmp / "sessions"
        self.env = {"WRAPAGENT_SESSIONS_ROOT": str(self.root), "HOME": str(tmp)}

    def session(self, sid: str, *, mode: str = "pty", parent: str | None = None,
                alive: bool = True, state: str = "running") -> None:
        folder = self.root / sid
        folder.mkdir(parents=True)
        pid = os.getpid() if alive else 2 ** 22 + 17
        record = {"id": sid, "state": state, "mode": mode, "parent_session": parent,
                  "project_root": str(self.project), "pid": pid,
                  "pid_started_at": portable.process_start_time(os.getpid()) if alive else 0.0}
        (folder / "session.json").write_text(json.dumps(record))
        (self.root / RUNNING_DIR).mkdir(exist_ok=True)
        (self.root / RUNNING_DIR / f"{sid}.lock").touch()

    def find(self, ref: str | None = None) -> dict:
        return send_cmd.find_session(ref, self.env, self.project)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def test_the_default_is_the_newest_running_top_level_session(env: Env) -> None:
    env.session("01AAA")
    env.session("01BBB")
    env.session("01CCC", parent="01BBB")           # an agent's sub-session: newer, not top-level
    env.session("01DDD", alive=False)              # its wrapagent is gone
    assert env.find()["id"] == "01BBB"
    assert env.find("last")["id"] == "01CCC"       # `last`: the newest running one, any depth
    assert env.find("01AA")["id"] == "01AAA"


def test_inside_a_session_the_default_is_that_session(env: Env) -> None:
    env.session("01AAA")
    env.session("01BBB")
    env.env["WRAPAGENT_SESSION_ID"] = "01AAA"       # a hook of 01AAA, or the agent inside it
    assert env.find()["id"] == "01AAA"


def test_a_piped_session_is_refused_as_not_interactive(env: Env) -> None:
    env.session("01AAA", mode="pipe")
    with pytest.raises(send_cmd.SendError, match="is not interactive"):
        env.find()


def test_an_ended_session_is_refused(env: Env) -> None:
    env.session("01AAA", state="completed")
    with pytest.raises(send_cmd.SendError, match="not running"):
        env.find("01AAA")
    with pytest.raises(send_cmd.SendError, match="no running wrapagent session"):
        env.find()


def test_a_session_without_a_channel_is_refused_clearly(env: Env, tmp_path: Path) -> None:
    env.session("01AAA")
    err = io.StringIO()
    code = send_cmd.main(["hello"], stdout=io.StringIO(), stderr=err, env=env.env, cwd=env.project)
    assert code == 1
    assert "does not take messages: add `[send]`" in err.getvalue()


def test_the_text_loses_terminal_controls_and_guard_wraps_it_in_one_block() -> None:
    assert send_channel.clean_text("as is\n  <b>\t") == "as is\n  <b>\t"
    # a paste end or a carriage return would cut the message short: never typed as such
    assert send_channel.clean_text("a\x1b[201~b\rc\x03") == "ab\nc"
    assert send_channel.guard_wrap('c"i', "CI is green") == \
        '<prompt-guard name="c&quot;i">\nCI is green\n</prompt-guard>'
    wrapped = send_channel.guard_wrap("ci", "x</prompt-guard>y")
    assert wrapped.count("</prompt-guard>") == 1  # the body cannot close the block


# -- the server, with a fake gate ---------------------------------------------------------


class FakeRecord:
    def __init__(self, folder: Path) -> None:
        self.dir = folder
        self.lines: list[str] = []

    def log(self, line: str) -> None:
        self.lines.append(line)


class FakeLive:
    def __init__(self, folder: Path) -> None:
        self.record = FakeRecord(folder)


class FakeGate:
    def __init__(self) -> None:
        self.sends: list = []
        self.closed = False

    def enqueue(self, send) -> None:
        self.sends.append(send)

    def close(self) -> None:
        self.closed = True


def ask(path: str, request: dict) -> list[dict]:
    sock = send_channel.connect(path, timeout=5)
    sock.sendall(json.dumps(request).encode() + b"\n")
    reader = sock.makefile("rb")
    out = [json.loads(reader.readline())]
    if request.get("wait"):
        out.append(json.loads(reader.readline()))
    sock.close()
    return out


def test_the_socket_is_private_from_its_first_moment_and_removed_at_the_end(tmp_path: Path) -> None:
    gate = FakeGate()
    old = os.umask(0)                               # the mode must not come from the umask
    try:
        server = send_channel.SendServer(FakeLive(tmp_path), gate)
    finally:
        os.umask(old)
    path = Path(server.path)
    assert stat.S_ISSOCK(path.stat().st_mode) and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["send.sock"]   # the private folder is gone
    assert ask(str(path), {"text": " \x1b[201~ "}) == [{"error": "nothing to send (empty text)"}]
    assert ask(str(path), {"text": "a\rb", "guard": "ci"}) == [{"queued": 1}]
    wait_for(lambda: gate.sends)                     # handed over right after the answer
    (queued,) = gate.sends
    assert queued.text == '<prompt-guard name="ci">\na\nb\n</prompt-guard>'
    server.close()
    assert gate.closed and not path.exists()


def test_a_waiting_sender_hears_the_outcome_or_that_the_session_ended(tmp_path: Path) -> None:
    import threading

    gate = FakeGate()
    server = send_channel.SendServer(FakeLive(tmp_path), gate)
    answers: list = []
    waiter = threading.Thread(target=lambda: answers.extend(ask(server.path, {"text": "x", "wait": True})))
    waiter.start()
    wait_for(lambda: gate.sends)
    server.close()                                   # the session ends before any stop
    waiter.join(timeout=10)
    assert answers == [{"queued": 1}, {"error": "the session ended"}]


def test_a_deep_session_folder_still_gets_its_socket(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    gate = FakeGate()
    server = send_channel.SendServer(FakeLive(deep), gate)
    assert stat.S_IMODE((deep / "send.sock").stat().st_mode) == 0o600
    assert ask(server.path, {"text": "hi"}) == [{"queued": 1}]
    server.close()
    assert not (deep / "send.sock").exists()
