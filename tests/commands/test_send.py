"""`wrapagent send` without a PTY: which session it picks, what it refuses, and the queue's rules.

The queue is driven with a fake `Outgoing` and a fake turn tracker, so "one
message per stop, in order; a cancelled delivery goes back to the head" is
checked step by step. The whole path through a terminal is in
tests/session/test_send_pty.py.
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
from wrapagent.session.records import RUNNING_DIR


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
    with pytest.raises(send_cmd.SendError, match="no running top-level session"):
        env.find()


def test_a_session_without_a_channel_is_refused_clearly(env: Env, tmp_path: Path) -> None:
    env.session("01AAA")
    err = io.StringIO()
    code = send_cmd.main(["hello"], stdout=io.StringIO(), stderr=err, env=env.env, cwd=env.project)
    assert code == 1
    assert "takes no messages" in err.getvalue()


def test_guard_wraps_the_text_in_one_block_and_nothing_else_is_added() -> None:
    assert send_channel.wrap_text("as is\n  <b>\t", None) == "as is\n  <b>\t"
    # a paste end or a carriage return would cut the message short: never typed as such
    assert send_channel.wrap_text("a\x1b[201~b\rc\x03", None) == "ab\nc"
    assert send_channel.wrap_text("CI is green", 'c"i') == \
        '<prompt-guard name="c&quot;i">\nCI is green\n</prompt-guard>'
    wrapped = send_channel.wrap_text("x</prompt-guard>y", "ci")
    assert wrapped.count("</prompt-guard>") == 1  # the body cannot close the block


# -- the queue, with fakes ---------------------------------------------------------------


class FakeRecord:
    def __init__(self, folder: Path) -> None:
        self.dir = folder
        self.lines: list[str] = []

    def log(self, line: str) -> None:
        self.lines.append(line)


class FakeLive:
    def __init__(self, folder: Path) -> None:
        self.record = FakeRecord(folder)


class FakeTracker:
    turn = 1
    quiet_since = 10.0
    next_by = None


class FakeOutgoing:
    def __init__(self) -> None:
        self.posted: list = []

    def post(self, request) -> None:
        self.posted.append(request)


class Peer:
    """The client's end of a socketpair: what the channel answered."""

    def __init__(self) -> None:
        import socket

        self.mine, self.theirs = socket.socketpair()

    def answers(self) -> list[dict]:
        self.mine.settimeout(5)
        data = b""
        while True:
            chunk = self.mine.recv(65536)
            if not chunk:
                break
            data += chunk
        return [json.loads(line) for line in data.splitlines()]


def channel(tmp_path: Path):
    outgoing, tracker = FakeOutgoing(), FakeTracker()
    chan = send_channel.SendChannel(FakeLive(tmp_path), outgoing, tracker)
    return chan, outgoing, tracker


def test_one_message_per_stop_in_order_and_a_cancelled_one_goes_back_first(tmp_path: Path) -> None:
    chan, outgoing, tracker = channel(tmp_path)
    peers = [Peer(), Peer()]
    chan._queue("one", None, peers[0].theirs, wait=True)
    chan._queue("two", None, peers[1].theirs, wait=True)
    assert outgoing.posted == []                   # the agent works: nothing is typed
    chan.on_stop(1)
    (first,) = outgoing.posted
    assert first.text == "one" and first.since == 10.0
    first.done("cancelled", "you typed after the agent stopped", None)
    assert len(outgoing.posted) == 1               # not again at this stop: the user's
    tracker.turn, tracker.quiet_since = 2, 20.0    # the user's turn, and its stop
    chan.on_stop(2)
    again = outgoing.posted[1]
    assert again.text == "one" and again.since == 20.0
    again.done("delivered", "", "2026-01-01T00:00:00+00:00")
    assert tracker.next_by == "send"
    assert len(outgoing.posted) == 2               # "two" waits for the next stop
    tracker.turn = 3
    chan.on_stop(3)
    assert outgoing.posted[2].text == "two"
    chan.close()                                   # "two" is in flight when the session ends
    assert [a.get("status") for a in peers[0].answers()] == [None, "delivered"]
    assert peers[1].answers()[-1] == {"status": "not delivered", "at": None, "reason": "the session ended"}
    record: dict = {}
    chan.record_into(record)
    assert [(s["text"], s["delivered_at"] is not None, s.get("deferred")) for s in record["sent"]] == \
        [("one", True, 1), ("two", False, None)]
    assert record["sent"][1]["not_delivered"] == "the session ended"


def test_a_message_arriving_while_the_agent_waits_is_posted_at_once(tmp_path: Path) -> None:
    chan, outgoing, tracker = channel(tmp_path)
    chan.on_stop(1)
    assert outgoing.posted == []
    chan._queue("now", None, Peer().theirs, wait=False)
    assert [r.text for r in outgoing.posted] == ["now"]


def test_the_socket_is_private_and_removed_at_the_end(tmp_path: Path) -> None:
    chan, _, _ = channel(tmp_path)
    old = os.umask(0)                               # the mode must not come from the umask
    try:
        assert chan.open()
    finally:
        os.umask(old)
    path = Path(chan.path)
    assert stat.S_ISSOCK(path.stat().st_mode) and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["send.sock"]   # the private folder is gone
    sock = send_channel.connect(tmp_path, timeout=5)
    sock.sendall(json.dumps({"text": "  "}).encode() + b"\n")
    assert json.loads(sock.makefile("rb").readline()) == {"ok": False, "error": "empty message"}
    sock.close()
    chan.close()
    assert not path.exists()


def test_a_deep_session_folder_still_gets_its_socket(tmp_path: Path) -> None:
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("the long-path bind uses /proc (Linux)")
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    chan, outgoing, tracker = channel(deep)
    assert chan.open()
    sock = send_channel.connect(deep, timeout=5)
    sock.sendall(json.dumps({"text": "hi"}).encode() + b"\n")
    assert json.loads(sock.makefile("rb").readline())["ok"] is True
    sock.close()
    chan.close()
    assert not (deep / "send.sock").exists()


def test_without_proc_a_deep_folder_binds_in_the_temp_folder_and_moves_in(tmp_path: Path,
                                                                           monkeypatch) -> None:
    """macOS: no /proc; the socket is bound where the path is short, then renamed into place."""
    monkeypatch.setattr(send_channel, "_has_proc", lambda: False)
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    chan, _, _ = channel(deep)
    assert chan.open(), chan.error
    path = deep / "send.sock"
    assert stat.S_ISSOCK(path.stat().st_mode) and stat.S_IMODE(path.stat().st_mode) == 0o600
    sock = send_channel.connect(deep, timeout=5)
    sock.sendall(json.dumps({"text": "hi"}).encode() + b"\n")
    assert json.loads(sock.makefile("rb").readline())["ok"] is True
    sock.close()
    chan.close()
    assert not path.exists()
