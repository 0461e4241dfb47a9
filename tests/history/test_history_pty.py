"""A two-message demo-agent session through a real PTY, then read back: recording, replay, export, search.

Waits are on screen text and on the session's own log, never on time.
"""

from __future__ import annotations

import gzip
import json
import stat
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from pty_session import DemoWorld, wait_for_log

FIRST = "first message about pelicans"
SECOND = "second message on walruses"
GUARD = "guard-said-this-line"


class World(DemoWorld):
    """A world of its own with a guard configured, and a folder outside the project."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self.elsewhere = tmp / "elsewhere"
        self.elsewhere.mkdir()
        self.hooks(f'[[prompt_guard]]\nname = "g"\ncommand = "echo {GUARD}"\n')

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "wrapagent", *args], env=self.env(),
                              cwd=str(cwd or self.project), capture_output=True, timeout=120)


def type_message(child: pexpect.spawn, text: str, n: int) -> None:
    child.send(text)
    child.expect_exact(text[-10:])
    child.send("\r")
    child.expect_exact(f"end of message {n}")
    child.expect_exact("demo> ")


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> World:
    """One two-message session, shared by the tests below (each reads it, none changes it)."""
    world = World(tmp_path_factory.mktemp("history"))
    child = world.spawn("demo")
    try:
        child.expect_exact("demo> ")
        wait_for_log(world.state, " ready after ")
        type_message(child, FIRST, 1)
        child.setwinsize(32, 110)
        type_message(child, SECOND, 2)
        child.send("\x04")  # Ctrl-D: the demo agent leaves (a `/quit` would be a third turn)
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
    return world


def cast_of(world: World) -> tuple[dict, list[list], Path]:
    info = world.record()["recording"]
    path = Path(info["file"])
    lines = gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]], path


def test_the_recording_is_asciicast_v3_with_a_marker_per_message(session: World) -> None:
    header, events, path = cast_of(session)
    assert header["version"] == 3 and header["term"]["cols"] == 100 and header["term"]["rows"] == 30
    assert isinstance(header["timestamp"], int) and header["term"]["type"] == "xterm-256color"
    assert all(len(e) == 3 and isinstance(e[0], (int, float)) and e[0] >= 0 for e in events)
    assert {e[1] for e in events} <= {"o", "r", "m", "x"}
    markers = [e[2] for e in events if e[1] == "m"]
    assert markers == [f"turn 1: {FIRST}", f"turn 2: {SECOND}"]
    output = "".join(e[2] for e in events if e[1] == "o")
    assert "MOCK-REPLY-1" in output and "--- message 2 received" in output and "MOCK-REPLY-2" in output
    assert ["r", "110x32"] in [e[1:] for e in events]
    order = [e[1] if e[1] != "o" else ("o2" if "MOCK-REPLY-2" in e[2] else "o") for e in events]
    assert order.index("m") < order.index("r") < len(order) - 1 - order[::-1].index("m") < order.index("o2")
    assert events[-1][1:] == ["x", "0"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.name.endswith(".cast.gz")
    assert not path.with_suffix("").exists()  # the raw file was replaced by the compressed one
    assert session.record()["recording"]["markers"] == 2


def test_export_cast_is_the_recording(session: World) -> None:
    proc = session.run("sessions", "export", "last", "--format", "cast")
    assert proc.returncode == 0, proc.stderr
    _, _, path = cast_of(session)
    assert proc.stdout == gzip.decompress(path.read_bytes())


def test_replay_plays_to_the_end(session: World) -> None:
    child = session.spawn("sessions", "replay", "last", "--speed", "50", "--idle-limit", "0.5")
    try:
        child.expect_exact("MOCK-REPLY-1")
        child.expect_exact("MOCK-REPLY-2")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


def test_markdown_holds_both_messages_in_order_with_the_blocks(session: World) -> None:
    proc = session.run("sessions", "export", "last", "--format", "md")
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout.decode()
    record = session.record()
    assert md.startswith(f"# Session {record['id']}\n") and "- tool: demo" in md
    assert "- source: transcript/demo-" in md
    first, second = md.split("## Turn 1\n", 1)[1].split("## Turn 2\n", 1)
    assert f'<prompt-guard name="g">\n{GUARD}\n</prompt-guard>' in first and FIRST in first
    assert "### demo\n\nMOCK-REPLY-1" in first
    assert SECOND in second and GUARD not in second and "MOCK-REPLY-2" in second


def test_json_is_the_same_conversation_as_data(session: World) -> None:
    proc = session.run("sessions", "export", "last", "--format", "json")
    conv = json.loads(proc.stdout)
    assert [t["n"] for t in conv["turns"]] == [1, 2]
    assert conv["turns"][0]["user"].endswith(FIRST) and conv["turns"][1]["user"] == SECOND
    assert [t["agent"] for t in conv["turns"]] == ["MOCK-REPLY-1", "MOCK-REPLY-2"]
    assert conv["session"]["tool"] == "demo" and conv["session"]["exit_code"] == 0


def test_export_to_a_file_is_private_and_never_overwrites(session: World) -> None:
    target = session.tmp / "out.md"
    assert session.run("sessions", "export", "last", "--format", "md", "-o", str(target)).returncode == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and FIRST in target.read_text()
    again = session.run("sessions", "export", "last", "--format", "md", "-o", str(target))
    assert again.returncode == 1 and b"not overwritten" in again.stderr


def test_search_finds_the_session_from_outside_the_project(session: World) -> None:
    record = session.record()
    proc = session.run("sessions", "search", "WALRUS", cwd=session.elsewhere)
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.decode().splitlines()
    assert line.startswith(record["id"][:7]) and "  demo  " in line and f"turn 2 you: {SECOND}" in line
    replies = session.run("sessions", "search", "mock-reply", "--tool", "demo", cwd=session.elsewhere)
    assert len(replies.stdout.decode().splitlines()) == 2


def test_search_for_a_word_nobody_wrote_exits_1(session: World) -> None:
    proc = session.run("sessions", "search", "zebra-nobody-wrote", cwd=session.elsewhere)
    assert proc.returncode == 1 and proc.stdout == b""
    other_tool = session.run("sessions", "search", "walruses", "--tool", "codex", cwd=session.elsewhere)
    assert other_tool.returncode == 1
    other_project = session.run("sessions", "search", "walruses", "--project", ".", cwd=session.elsewhere)
    assert other_project.returncode == 1




def test_a_tool_that_starts_first_gets_a_marker_per_message(tmp_path: Path) -> None:
    """Nothing configured, outside git: the demo agent starts before the record exists, and the
    interceptor that follows its turns comes later, catching up on what it missed."""
    world = World(tmp_path)
    (world.config / "wrapagent" / "hooks.toml").write_text("")
    child = world.spawn("demo")
    try:
        child.expect_exact("demo> ")
        wait_for_log(world.state, " ready after ")
        type_message(child, FIRST, 1)
        type_message(child, SECOND, 2)
        child.send("\x04")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
    record = world.record()
    assert "guards" not in json.dumps(record.get("hooks", []))  # nothing configured: nothing ran
    assert goes_first_in(world.state), "the demo agent was expected to start before its record"
    _, events, _ = cast_of(world)
    markers = [e[2] for e in events if e[1] == "m"]
    assert markers == [f"turn 1: {FIRST}", f"turn 2: {SECOND}"]
    shown = "".join(e[2] for e in events if e[1] == "o")
    assert shown.index(FIRST) < shown.index("end of message 1") < shown.index(SECOND)
    assert [t["n"] for t in record["turns"]] == [1, 2]
    assert record["recording"]["markers"] == 2


def goes_first_in(state: Path) -> bool:
    """The session log says the tool started before the record (`lifecycle._run_tool_first`)."""
    (log,) = state.glob("wrapagent/projects/*/*/session.log")
    return "demo started first: nothing had to come before it" in log.read_text()


def test_a_tool_that_starts_first_is_recorded_from_its_first_byte(tmp_path: Path) -> None:
    """No hooks, outside git: the tool goes first (start-up); its output is recorded all the same."""
    world = World(tmp_path)
    (world.config / "wrapagent" / "hooks.toml").write_text("")
    child = world.spawn("/bin/sh", "-c", "printf 'first-byte-here\\n'; sleep 0.2; printf 'last'")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    record = world.record()
    header, events, _ = cast_of(world)
    assert "".join(e[2] for e in events if e[1] == "o") == "first-byte-here\r\nlast"
    assert not [e for e in events if e[1] == "m"] and events[-1][1:] == ["x", "0"]
    assert record["recording"]["markers"] == 0


def test_record_enabled_false_records_nothing(tmp_path: Path) -> None:
    world = World(tmp_path)
    (world.config / "wrapagent" / "hooks.toml").write_text("[record]\nenabled = false\n")
    child = world.spawn("/bin/sh", "-c", "printf 'not-recorded'")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    record = world.record()
    assert "recording" not in record
    assert not (world.state / "wrapagent" / "recordings").exists()
    replay = world.run("sessions", "replay", record["id"])  # by id: `last` is an agent's session, sh is none
    assert replay.returncode == 1 and b"no recording: it was not recorded" in replay.stderr


def test_keys_typed_are_not_recorded_only_what_the_screen_showed(tmp_path: Path) -> None:
    world = World(tmp_path)
    (world.config / "wrapagent" / "hooks.toml").write_text("")
    child = world.spawn("/bin/sh", "-c", "stty -echo; printf 'password: '; read x; echo; echo got-${#x}-chars")
    child.expect_exact("password: ")
    child.send("typed-secret-42\r")
    child.expect_exact("got-15-chars")
    child.expect(pexpect.EOF)
    child.close()
    _, events, path = cast_of(world)
    shown = "".join(e[2] for e in events if e[1] == "o")
    assert "password: " in shown and "got-15-chars" in shown
    assert b"typed-secret" not in gzip.decompress(path.read_bytes())
    assert not [e for e in events if e[1] == "i"]


def test_the_recording_plays_in_asciinema_player(session: World) -> None:
    """asciinema's own player (its parser and driver; skipped where it is not installed)."""
    from asciinema_player import play

    _, events, path = cast_of(session)
    seen = play(path)
    assert seen["errors"] == [] and seen["ended"]
    assert seen["output"] == "".join(e[2] for e in events if e[1] == "o")
    assert seen["markers"] == [f"turn 1: {FIRST}", f"turn 2: {SECOND}"]
    assert [110, 32] in seen["resizes"]
