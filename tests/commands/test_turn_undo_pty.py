"""Undo a turn, not only a session: the demo agent writes files in three turns, `wrapagent undo`
takes them back one turn at a time while the session runs, `wrapagent redo` puts one back, the
agent's next message says so, and a file the user edited after a turn makes its undo refuse.

Conditions are waited for (a checkpoint ref appearing, a reply on screen), never a fixed time.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pexpect
import pytest

from platform_modes import platform_mode  # noqa: F401 - autouse: Linux and macOS paths
from pty_session import DemoWorld, say


class World(DemoWorld):
    """A world of its own with a git project holding one file."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp, git=True)
        (self.project / "README.md").write_text("readme\n")

    def spawn(self) -> pexpect.spawn:  # type: ignore[override]
        return super().spawn("demo", dimensions=(30, 120))

    def refs(self) -> list[str]:
        stores = list((self.state / "wrapagent" / "stores").glob("*"))
        if not stores:
            return []
        out = subprocess.run(["git", f"--git-dir={stores[0]}", "for-each-ref", "--format=%(refname)"],
                             capture_output=True, text=True).stdout
        return [r.rsplit("/", 1)[-1] for r in out.split()]

    def wait_ref(self, name: str, timeout: float = 90.0) -> None:
        end = time.monotonic() + timeout
        while name not in self.refs():
            assert time.monotonic() < end, f"{name} never came: {self.refs()}"
            time.sleep(0.05)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def write_turns(world: World, child, *messages: str) -> None:
    """At the demo's prompt, one turn per message (each `write PATH TEXT`), each waited to its stop."""
    child.expect("demo> ")
    world.wait_ref("before")
    time.sleep(0.2)  # the injector arms once output has been quiet
    for n, message in enumerate(messages, 1):
        say(child, message, n)
        world.wait_ref(f"turn-{n}-stop")


def test_three_turns_undone_one_at_a_time_redone_and_the_agent_told(world: World) -> None:
    child = world.spawn()
    try:
        write_turns(world, child, "write a.txt one", "write b.txt two", "write a.txt three")
        a, b = world.project / "a.txt", world.project / "b.txt"
        assert (a.read_text(), b.read_text()) == ("three\n", "two\n")

        first = world.wrapagent("undo")
        assert first.returncode == 0, first.stderr
        assert "undid turn 3" in first.stdout
        assert (a.read_text(), b.read_text()) == ("one\n", "two\n")  # the state after turn 2
        second = world.wrapagent("undo")
        assert second.returncode == 0, second.stderr
        assert "undid turn 2" in second.stdout
        assert a.read_text() == "one\n" and not b.exists()  # the state after turn 1
        again = world.wrapagent("redo")
        assert again.returncode == 0, again.stderr
        assert "redid turn 2" in again.stdout
        assert (a.read_text(), b.read_text()) == ("one\n", "two\n")  # turn 2's state back

        b.write_text("the user's own edit\n")  # after turn 2: its undo must refuse
        refused = world.wrapagent("undo")
        assert refused.returncode == 1 and "b.txt" in refused.stderr and "changed after" in refused.stderr
        assert b.read_text() == "the user's own edit\n" and a.read_text() == "one\n"

        say(child, "hello", 4)
        last = world.messages()[-1]
        assert '<prompt-guard name="undo">' in last and "b.txt" in last and last.endswith("hello")
        say(child, "again", 5)
        assert '<prompt-guard name="undo">' not in world.messages()[-1]  # once
        child.send("/quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    (path,) = (world.state / "wrapagent" / "projects").glob("*/*/session.json")
    turns = json.loads(path.read_text())["turns"]
    assert turns[0]["files"] == ["a.txt"] and turns[1]["files"] == ["b.txt"]
    assert turns[0]["checkpoint"]["start"] and turns[0]["checkpoint"]["stop"]


def test_sessions_diff_and_undo_of_one_turn(world: World) -> None:
    """`sessions diff last --turn N` shows exactly turn N; `sessions undo last --turn N` undoes it."""
    child = world.spawn()
    try:
        write_turns(world, child, "write a.txt one", "write b.txt two")
        child.send("/quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    diff = world.wrapagent("sessions", "diff", "last", "--turn", "2")
    assert diff.returncode == 0, diff.stderr
    assert "b.txt" in diff.stdout and "a.txt" not in diff.stdout
    show = world.wrapagent("sessions", "show", "last")
    assert "changed: a.txt" in show.stdout and "changed: b.txt" in show.stdout
    undo = world.wrapagent("sessions", "undo", "last", "--turn", "1")
    assert undo.returncode == 0, undo.stderr
    assert not (world.project / "a.txt").exists() and (world.project / "b.txt").read_text() == "two\n"


def test_a_turn_after_an_undo_starts_from_the_tree_the_undo_left(world: World) -> None:
    """The undo is the next turn's start: a plain message after it changes nothing, so `undo` again
    takes back the turn before (not the first undo), and `redo` puts that turn back."""
    child = world.spawn()
    try:
        write_turns(world, child, "write a.txt one", "write b.txt two")
        a, b = world.project / "a.txt", world.project / "b.txt"

        first = world.wrapagent("undo")
        assert first.returncode == 0 and "undid turn 2" in first.stdout, first.stdout + first.stderr
        assert a.read_text() == "one\n" and not b.exists()
        say(child, "hello", 3)  # a plain answer, no file written
        world.wait_ref("turn-3-stop")

        second = world.wrapagent("undo")
        assert second.returncode == 0 and "undid turn 1" in second.stdout, second.stdout + second.stderr
        assert not a.exists() and not b.exists()  # back to the project as the session found it
        again = world.wrapagent("redo")
        assert again.returncode == 0 and "redid turn 1" in again.stdout, again.stdout + again.stderr
        assert a.read_bytes() == b"one\n" and not b.exists()

        say(child, "thanks", 4)  # starts from the redo's tree
        world.wait_ref("turn-4-stop")
        child.send("/quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    (path,) = (world.state / "wrapagent" / "projects").glob("*/*/session.json")
    turns = {t["n"]: t for t in json.loads(path.read_text())["turns"]}
    assert turns[1]["files"] == ["a.txt"] and turns[2]["files"] == ["b.txt"]
    assert turns[3]["files"] == [] and turns[4]["files"] == []
    assert "next-start" not in world.refs()  # each was taken by the turn it started


def test_a_turn_after_sessions_undo_of_one_turn_starts_from_the_tree_it_left(world: World) -> None:
    """`sessions undo ID --turn N` on a running session marks the next turn's start as `undo` does:
    a plain message after it lists no files, instead of counting the undo as its own change; and
    `wrapagent redo` puts back what it removed."""
    child = world.spawn()
    try:
        write_turns(world, child, "write a.txt one", "write b.txt two")
        (path,) = (world.state / "wrapagent" / "projects").glob("*/*/session.json")
        sid = json.loads(path.read_text())["id"]

        undo = world.wrapagent("sessions", "undo", sid, "--turn", "2")
        assert undo.returncode == 0, undo.stdout + undo.stderr
        assert (world.project / "a.txt").read_text() == "one\n" and not (world.project / "b.txt").exists()
        assert "next-start" in world.refs()  # left for the running session's next turn
        say(child, "hello", 3)  # a plain answer, no file written
        world.wait_ref("turn-3-stop")
        redo = world.wrapagent("redo")  # what `sessions undo --turn 2` removed comes back
        assert redo.returncode == 0 and "redid turn 2" in redo.stdout, redo.stdout + redo.stderr
        assert (world.project / "b.txt").read_bytes() == b"two\n"
        child.send("/quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    turns = {t["n"]: t for t in json.loads(path.read_text())["turns"]}
    assert turns[1]["files"] == ["a.txt"] and turns[2]["files"] == ["b.txt"]
    assert turns[3]["files"] == []
    assert "next-start" not in world.refs()  # taken by the turn it started
