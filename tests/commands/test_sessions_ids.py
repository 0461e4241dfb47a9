"""Sessions as people refer to them: short ids, last~N, refusals, turns, filters, colour.

Failed before: `sessions list` printed 26-character ids, `last~1` was "no
session matches", a refused launch showed as `pre_run: error: exited with 2`,
turns said "waiting after 0.0s", `--tool nonexistent` said "no sessions
recorded", nothing was coloured, and NO_COLOR never reached git.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import agent_stand_in, wrapagent_argv
from wrapagent.commands.sessions_ids import relative_index, unique_prefixes

ESC = "\x1b["
# Three sessions within the same 33 s (shared first 9 characters) and one of another day.
IDS = ["01M87X4GYRYRPQK95N3YFESFHC", "01M87X4GTH47QGKR92TCNGJ88W", "01M87X4GTZ0000000000000000",
       "01M80000000000000000000000"]


def test_unique_prefixes():
    got = unique_prefixes(IDS)
    assert got == {IDS[0]: "01M87X4GY", IDS[1]: "01M87X4GTH", IDS[2]: "01M87X4GTZ", IDS[3]: "01M8000"}
    assert unique_prefixes(["01ABCDEFGH"]) == {"01ABCDEFGH": "01ABCDE"}  # at least 7, as git
    for ident, prefix in got.items():
        assert [i for i in IDS if i.startswith(prefix)] == [ident]


def test_relative_index():
    assert [relative_index(r) for r in ("last~0", "last~3", "LATEST~12", "last", "last~", "x~1")] == \
        [0, 3, 12, None, None, None]


@pytest.fixture
def records(tmp_path: Path, isolated_home: Path) -> dict:
    root = isolated_home / "state" / "wrapagent" / "projects" / "proj-12345678"
    base = {"project_root": str(tmp_path), "started_at": "2026-11-24T10:00:00+00:00", "duration_s": 1.0}
    rows = {
        IDS[0]: {"tool": "codex", "state": "finished", "exit_code": 0,
                 "turns": [{"n": 1, "at": "2026-11-24T10:00:01+00:00", "quiet_at": "2026-11-24T10:00:01+00:00"}]},
        IDS[1]: {"tool": "claude", "state": "blocked", "exit_code": None, "blocked_reason": "not on main",
                 "hooks": [{"name": "pre_run", "kind": "lifecycle", "exit_code": 2, "duration_s": 0.01,
                            "error": "exited with 2"}]},
        IDS[2]: {"tool": "gemini", "state": "abandoned", "exit_code": None},
        IDS[3]: {"tool": "codex", "state": "finished", "exit_code": 0},
    }
    for ident, fields in rows.items():
        (root / ident).mkdir(parents=True)
        (root / ident / "session.json").write_text(json.dumps({"id": ident, **base, **fields}))
    return rows


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*wrapagent_argv(), *args], capture_output=True, text=True, timeout=120, env=env)


def test_list_shows_unique_prefixes_that_show_accepts(records):
    out = run("sessions", "list").stdout
    shown = [line.split()[0] for line in out.splitlines()[1:]]
    assert shown == ["01M87X4GY", "01M87X4GTZ", "01M87X4GTH", "01M8000"]
    for prefix, ident in zip(shown, sorted(IDS, reverse=True)):
        assert run("sessions", "show", prefix, "--json").stdout and \
            json.loads(run("sessions", "show", prefix, "--json").stdout)["id"] == ident
    assert json.loads(run("sessions", "list", "--json").stdout)[0]["id"] == IDS[0]  # JSON keeps full ids


def test_last_tilde_n(records):
    newest_first = sorted(IDS, reverse=True)
    for n in range(4):
        assert json.loads(run("sessions", "show", f"last~{n}", "--json").stdout)["id"] == newest_first[n]
    beyond = run("sessions", "show", "last~4")
    assert beyond.returncode == 1 and "only 4 session(s)" in beyond.stderr


def test_refused_launch_reads_as_a_refusal(records):
    out = run("sessions", "show", IDS[1]).stdout
    assert "blocked: pre_run refused the launch: not on main" in out
    assert "pre_run: refused the launch: not on main" in out
    assert "error: exited with 2" not in out


def test_turns_say_when_output_went_quiet_not_waiting_after(records):
    out = run("sessions", "show", IDS[0]).stdout
    assert "#1  submitted" in out and "output quiet from +0.0s (seen waiting quiet_secs later)" in out
    assert "waiting after" not in out


def test_tool_filter_with_no_match(records):
    assert run("sessions", "list", "--tool", "nonexistent").stdout == "no sessions match\n"


def test_blocked_and_abandoned_coloured_only_when_asked_or_at_a_terminal(records):
    plain = run("sessions", "list").stdout
    assert ESC not in plain
    forced = run("sessions", "list", "--color=always").stdout
    assert f"{ESC}1;31mblocked{ESC}0m" in forced and f"{ESC}33mabandoned{ESC}0m" in forced
    # only the state cells: the finished rows' exit codes are plain
    assert f"{ESC}" not in forced.splitlines()[-1]


def test_no_color_reaches_git_for_sessions_diff(tmp_path, isolated_home):
    project = tmp_path / "project"
    project.mkdir()
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("[user]\n\tname = t\n\temail = t@t\n[color]\n\tui = always\n")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(gitconfig), "GIT_CONFIG_NOSYSTEM": "1"}
    env.pop("NO_COLOR", None)
    subprocess.run(["git", "init", "-q"], cwd=project, env=env, check=True)
    (project / "a.txt").write_text("one\n")
    subprocess.run(["git", "add", "a.txt"], cwd=project, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "a"], cwd=project, env=env, check=True)
    # Both checkpoints taken whatever the load: at the default 2 s budget a snapshot on a machine
    # busy starting the real CLIs was skipped (by design), and the diff had nothing to show.
    config = isolated_home / "config" / "wrapagent"
    config.mkdir(parents=True, exist_ok=True)
    (config / "hooks.toml").write_text("[checkpoints]\nbudget_secs = 60\n")
    tool = agent_stand_in(tmp_path / "bin", "echo two > a.txt\n")  # an agent's session: `last`
    done = subprocess.run([*wrapagent_argv(), str(tool)], cwd=project, env=env, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 0, done.stderr

    def diff(extra_env: dict, *flags: str) -> str:
        shown = subprocess.run([*wrapagent_argv(), "sessions", "diff", "last", *flags], cwd=project,
                               env={**env, **extra_env, "GIT_PAGER": "cat"}, capture_output=True, text=True,
                               timeout=120)
        assert shown.returncode == 0, shown.stderr
        return shown.stdout

    assert "+two" in diff({"NO_COLOR": "1"})
    assert ESC in diff({})  # the user's color.ui=always colours even a pipe...
    assert ESC not in diff({"NO_COLOR": "1"})  # ...unless NO_COLOR says otherwise
    assert ESC not in diff({}, "--color=never")
    assert ESC in diff({"NO_COLOR": "1"}, "--color=always")
