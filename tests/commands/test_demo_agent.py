"""The demo agent outside a terminal: a one-shot reply with the message logged exactly, and its file edits.

(Its interactive side, the composer wrapagent types into, is driven through a
pseudo-terminal in tests/inject/test_injection_pty.py and tests/session/test_turns_pty.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wrapagent.commands.demo_agent import edit_files


def test_a_piped_message_is_logged_exactly_and_gets_one_reply(tmp_path: Path) -> None:
    log = tmp_path / "demo.jsonl"
    done = subprocess.run([sys.executable, "-m", "wrapagent.commands.demo_agent", "--log", str(log),
                           "--think-secs", "0"], input="hello there\n", capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "reply: MOCK-REPLY-1" in done.stdout
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert entries == [{"n": 1, "how": "pipe", "text": "hello there\n", "conversation": 1}]


def test_version_answers_as_the_real_clis_do() -> None:
    done = subprocess.run([sys.executable, "-m", "wrapagent.commands.demo_agent", "--version"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("wrapagent demo agent ")


@pytest.fixture
def inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def test_write_and_rm_below_the_folder(inside: Path) -> None:
    assert edit_files("please\nwrite sub/a.txt one two\nwrite b.txt") == "wrote sub/a.txt; wrote b.txt"
    assert (inside / "sub" / "a.txt").read_text() == "one two\n" and (inside / "b.txt").read_text() == "\n"
    assert edit_files("rm b.txt\nrm gone.txt").startswith("removed b.txt; rm gone.txt: ")
    assert edit_files("just a message") is None


def test_nothing_outside_the_folder_or_through_a_link(inside: Path) -> None:
    outside = inside.parent / "outside.txt"
    assert edit_files(f"write ../outside.txt x\nwrite {outside} y") == \
        f"refused: ../outside.txt is outside this folder; refused: {outside} is outside this folder"
    target = inside.parent / "victim.txt"
    target.write_text("theirs\n")
    os.symlink(target, inside / "link.txt")
    said = edit_files("write link.txt pwned")
    assert said.startswith("write link.txt: ") and target.read_text() == "theirs\n"


def test_a_long_reply_prints_its_lines_in_one_burst() -> None:
    import io

    from wrapagent.commands.demo_agent import Agent

    out = io.StringIO()
    agent = Agent(None, out)
    agent.print_long("(long 3) print the log")
    assert out.getvalue() == "\r\noutput line 1 of 3\r\noutput line 2 of 3\r\noutput line 3 of 3\r\n"
    agent.print_long("no (long) here, nor (long x)")
    assert out.getvalue().count("output line") == 3
