"""A misspelt subcommand is answered with the command meant, and runs nothing, records nothing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from wrapagent.commands.typo import suggestion
from tests.conftest import wrapagent_argv


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*wrapagent_argv(), *args], capture_output=True, text=True, timeout=60,
                          env=env, cwd=cwd, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("argv, meant", [
    (["sesions", "list"], "wrapagent sessions list"),
    (["sesions", "lsit"], "wrapagent sessions list"),
    (["confg", "init"], "wrapagent config init"),
    (["doctr", "--json"], "wrapagent doctor --json"),
    (["undo", "last"], "wrapagent sessions undo last"),
    (["cluade", "-p", "fix it"], "wrapagent claude -p 'fix it'"),
    (["xyzzy"], None),
    (["./sesions"], None),
    (["codex"], None),  # an agent that is not installed is not a typo
])
def test_suggestion(argv, meant):
    assert suggestion(argv[0], argv[1:]) == meant


def test_typo_says_what_was_meant_and_records_nothing(tmp_path, isolated_home):
    result = run("sesions", "list", cwd=tmp_path)
    assert result.returncode == 127
    assert result.stderr == ("wrapagent: sesions: no such subcommand, and no program of that name on PATH; "
                             "did you mean: wrapagent sessions list?\n")
    assert result.stdout == ""
    assert not (isolated_home / "state" / "wrapagent").exists()


def test_a_real_program_of_that_name_runs(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "sesions"
    program.write_text("#!/bin/sh\necho \"real sesions $*\"\nexit 7\n")
    program.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    result = run("sesions", "list", env=env, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (7, "real sesions list\n")
    assert "did you mean" not in result.stderr


def test_nothing_close_keeps_the_lookup_message(tmp_path):
    result = run("xyzzy-no-such-tool", cwd=tmp_path)
    assert result.returncode == 127
    assert "xyzzy-no-such-tool: command not found (searched PATH: " in result.stderr
    assert "did you mean" not in result.stderr


def test_after_dash_dash_the_word_is_a_program_and_no_suggestion_is_made(tmp_path):
    result = run("--", "sesions", cwd=tmp_path)
    assert result.returncode == 127
    assert "command not found" in result.stderr and "did you mean" not in result.stderr


@pytest.mark.parametrize("argv, hint", [
    (["diff", "last"], "wrapagent: running the program 'diff'; did you mean: wrapagent sessions diff last?"),
    (["show", "last~2"], "wrapagent: running the program 'show'; did you mean: wrapagent sessions show last~2?"),
    (["diff", "a.txt", "b.txt"], None),
    (["diff", "lastly.txt"], None),
])
def test_session_hint(argv, hint):
    from wrapagent.commands.typo import session_hint

    assert session_hint(argv[0], argv[1:]) == hint


def test_a_program_named_like_a_sessions_action_runs_with_one_hint(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "diff"
    program.write_text("#!/bin/sh\necho \"real diff $*\"\nexit 2\n")
    program.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    result = run("diff", "last", env=env, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "real diff last\n")
    assert result.stderr.splitlines()[0] == ("wrapagent: running the program 'diff'; "
                                             "did you mean: wrapagent sessions diff last?")
