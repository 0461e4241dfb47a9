"""`wrapagent sessions list/show/path` on real sessions recorded by wrapagent running the demo agent.

One module fixture records three sessions with isolated HOME/XDG dirs:
an interactive demo session in project A (a guard injected into "hello"),
a pipe-mode demo session in project A (`echo hi | wrapagent demo -p`), and
`wrapagent sh -c 'exit 3'` in project B.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from wrapagent import paths
from wrapagent.commands import sessions as sessions_cmd

from demo_sessions import WRAPAGENT, interactive_demo_session
GUARD_TOML = '[[prompt_guard]]\nname = "g"\ncommand = "echo guard says hi"\n'
INJECTED = '<prompt-guard name="g">\nguard says hi\n</prompt-guard>\n'


def isolated_env(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WRAPAGENT_", "XDG_"))}
    env.update(HOME=str(base / "home"), XDG_CONFIG_HOME=str(base / "config"),
               XDG_STATE_HOME=str(base / "state"), XDG_DATA_HOME=str(base / "data"),
               TERM="xterm", GIT_CONFIG_NOSYSTEM="1")
    for key in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    return env


def make_project(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path.resolve()


def pipe_demo_session(env: dict[str, str], cwd: Path) -> None:
    proc = subprocess.run([*WRAPAGENT, "demo", "-p"], input=b"hi\n", env=env, cwd=cwd,
                          capture_output=True, timeout=20)
    assert proc.returncode == 0, proc.stderr
    assert b"guard says hi" in proc.stdout


def exit3_session(env: dict[str, str], cwd: Path) -> None:
    proc = subprocess.run([*WRAPAGENT, "sh", "-c", "exit 3"], env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
    assert proc.returncode == 3, proc.stderr


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("sessions_world")
    env = isolated_env(base)
    (Path(env["XDG_CONFIG_HOME"]) / "wrapagent").mkdir()
    (Path(env["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml").write_text(GUARD_TOML)
    project_a = make_project(base / "alpha")
    project_b = make_project(base / "beta")
    interactive_demo_session(env, project_a)
    pipe_demo_session(env, project_a)
    exit3_session(env, project_b)
    records = sessions_cmd.all_records(env)
    assert len(records) == 3
    sh, pipe, tty = records  # newest first
    return {"env": env, "a": project_a, "b": project_b, "tty": tty, "pipe": pipe, "sh": sh}


def run(world: dict, *args: str) -> tuple[int, str, str]:
    """`wrapagent sessions ARGS` typed in the world's repository (else in the test's own folder)."""
    out, err = io.StringIO(), io.StringIO()
    cwd = str(world["repo"]) if "repo" in world else None
    code = sessions_cmd.main(list(args), out=out, err=err, env=world["env"], cwd=cwd)
    return code, out.getvalue(), err.getvalue()


def table_rows(text: str) -> list[list[str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[0].split()[:3] == ["ID", "TOOL", "PROJECT"]
    return [line.split() for line in lines[1:] if not line.startswith("(")]


# --------------------------------------------------------------------------- the records


def test_fixture_recorded_what_the_runs_did(world: dict) -> None:
    tty, pipe, sh = world["tty"], world["pipe"], world["sh"]
    assert (tty["tool"], tty["mode"], tty["injection"]["status"]) == ("demo", "pty", "submitted")
    assert (pipe["tool"], pipe["mode"], pipe["injection"]["status"]) == ("demo", "pipe", "delivered")
    assert (sh["tool"], sh["exit_code"], sh["injection"]["status"]) == ("sh", 3, "none")
    assert tty["injection"]["text"].startswith(INJECTED)


# --------------------------------------------------------------------------- list


def shown_ids(rows: list, world: dict, *names: str) -> bool:
    """The ID column holds each session's unique prefix (list shows those, not the full ids)."""
    return (len(rows) == len(names)
            and all(world[n]["id"].startswith(r[0]) and len(r[0]) >= 7 for r, n in zip(rows, names)))


def test_list_all_projects_newest_first(world: dict) -> None:
    code, out, err = run(world, "list")
    assert code == 0 and err == ""
    rows = table_rows(out)
    assert shown_ids(rows, world, "sh", "pipe", "tty")
    # ID TOOL PROJECT DATE TIME DURATION EXIT INJECTED
    assert [(r[1], r[2], r[6], r[7]) for r in rows] == [
        ("sh", "beta", "3", "no"),
        ("demo", "alpha", "0", "yes"),
        ("demo", "alpha", "0", "yes"),
    ]
    assert all(r[5].endswith("s") for r in rows)  # a duration


def test_list_filters_project_tool_limit(world: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(world["a"])
    code, out, _ = run(world, "list", "--project", ".")
    assert code == 0
    assert shown_ids(table_rows(out), world, "pipe", "tty")

    code, out, _ = run(world, "list", "--project", str(world["b"]))
    assert shown_ids(table_rows(out), world, "sh")

    code, out, _ = run(world, "list", "--tool", "demo")
    assert [r[1] for r in table_rows(out)] == ["demo", "demo"]

    code, out, _ = run(world, "list", "--tool", "codex")
    assert code == 0 and out == "no sessions match\n"  # sessions exist, none of this tool

    code, out, _ = run(world, "list", "--limit", "1")
    assert shown_ids(table_rows(out), world, "sh")
    assert "2 older session(s) not shown" in out


def test_list_json(world: dict) -> None:
    code, out, _ = run(world, "list", "--json")
    assert code == 0
    data = json.loads(out)
    assert [d["id"] for d in data] == [world["sh"]["id"], world["pipe"]["id"], world["tty"]["id"]]
    assert [d["exit_code"] for d in data] == [3, 0, 0]
    assert [d["injected"] for d in data] == [False, True, True]
    assert [d["injection_status"] for d in data] == ["none", "delivered", "submitted"]
    assert data[2]["project_root"] == str(world["a"])
    assert data[2]["mode"] == "pty" and data[1]["mode"] == "pipe"
    assert isinstance(data[0]["duration_s"], (int, float))
    assert Path(data[0]["dir"], "session.json").is_file()


# --------------------------------------------------------------------------- show


def test_show_by_prefix(world: dict) -> None:
    tty = world["tty"]
    code, out, err = run(world, "show", tty["id"][:12].lower())
    assert code == 0, err
    assert out.startswith(f"session {tty['id']}\n")
    assert "demo (transport demo, mode pty)" in out
    assert "Injection: submitted (path interactive" in out
    # the injected text, verbatim (with the blank line that ends the blocks)
    assert f"verbatim ---\n{INJECTED}\n--- end of injected text ---" in out
    hooks = out.split("Hooks:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert hooks[0].split() == ["NAME", "KIND", "EXIT", "DURATION", "TIMED", "OUT"]
    cells = [line.split() for line in hooks[1:]]
    assert [(c[0], c[1], c[2], c[4]) for c in cells] == [("g", "guard", "0", "no"),
                                                         ("session_complete", "lifecycle", "0", "no")]
    log = out.split("Log (", 1)[1]
    assert "injection: demo ready after" in log
    assert "first message submitted with the blocks" in log


def test_show_pipe_session_without_log(world: dict) -> None:
    code, out, _ = run(world, "show", world["pipe"]["id"])
    assert code == 0
    assert "Injection: delivered (path stdin" in out
    assert INJECTED in out
    has_log = (Path(world["pipe"]["_dir"]) / "session.log").exists()
    assert ("Log (" if has_log else "Log: (none: nothing was logged)") in out


def test_show_exit_code_and_no_injection(world: dict) -> None:
    code, out, _ = run(world, "show", world["sh"]["id"])  # `sh` is no agent: not `last`
    assert code == 0
    assert out.startswith(f"session {world['sh']['id']}\n")
    assert "  exit        3\n" in out
    assert "argv        sh -c 'exit 3'" in out
    assert "(no injected text)" in out


def test_show_json(world: dict) -> None:
    code, out, _ = run(world, "show", world["tty"]["id"][:10], "--json")
    assert code == 0
    data = json.loads(out)
    assert data["id"] == world["tty"]["id"]
    assert data["injection"]["text"].startswith(INJECTED)
    assert [h["name"] for h in data["hooks"]] == ["g", "session_complete"]
    assert "injection: demo ready after" in data["log"]
    assert Path(data["dir"]).name == world["tty"]["id"]


def test_show_unknown_and_ambiguous_ids(world: dict) -> None:
    code, out, err = run(world, "show", "ZZZZ")
    assert (code, out) == (1, "")
    assert err == "wrapagent sessions: no session matches 'ZZZZ' (see `wrapagent sessions list`)\n"

    common = os.path.commonprefix([world["tty"]["id"], world["pipe"]["id"], world["sh"]["id"]])
    code, out, err = run(world, "show", common or "0")
    assert code == 1 and out == ""
    assert "matches 3 sessions" in err and err.count("\n") == 1


# --------------------------------------------------------------------------- path


def test_path_is_the_sessions_repository(world: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(world["a"])
    code, out, err = run(world, "path")
    assert code == 0 and err == ""
    root = Path(out.strip())
    assert root == paths.sessions_root(world["a"], world["env"])
    log = subprocess.run(["git", "-C", str(root), "log", "--format=%s"], capture_output=True, text=True,
                         check=True).stdout
    assert f"session {world['tty']['id']} complete" in log
    assert f"session {world['pipe']['id']} complete" in log

    code, out, _ = run(world, "path", "--project", str(world["b"]))
    assert Path(out.strip()) == paths.sessions_root(world["b"], world["env"])

    fresh = world["a"].parent / "gamma"
    fresh.mkdir(exist_ok=True)
    code, out, err = run(world, "path", "--project", str(fresh))
    assert code == 0 and out.strip().endswith(paths.sessions_root(fresh.resolve(), world["env"]).name)
    assert "does not exist" in err


# --------------------------------------------------------------------------- through the CLI


def test_cli_wiring(world: dict) -> None:
    proc = subprocess.run([*WRAPAGENT, "sessions", "list", "--json", "--limit", "0"], env=world["env"],
                          capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)) == 3

    proc = subprocess.run([*WRAPAGENT, "sessions", "show", "nope"], env=world["env"],
                          capture_output=True, text=True, timeout=20)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "no session matches 'nope'" in proc.stderr


# --------------------------------------------------------------------------- history: diff, undo, prune, resume
#
# A real `wrapagent sh -c …` session (pipe mode) in a git repository with the
# user's own uncommitted work: the shell plays the agent, changing files.

AGENT_SCRIPT = "printf 'agent edit\\n' > tracked.txt; printf 'new\\n' > created.txt; rm gone.txt"


def git_in(repo: Path, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def history_world(tmp_path: Path, script: str = AGENT_SCRIPT) -> dict:
    env = isolated_env(tmp_path / "iso")
    env.update(GIT_AUTHOR_NAME="T", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="T", GIT_COMMITTER_EMAIL="t@example.invalid")
    repo = make_project(tmp_path / "gamma")
    for name in ("tracked.txt", "gone.txt", "mine.txt"):
        (repo / name).write_text(f"{name} committed\n")
    git_in(repo, env, "add", "-A")
    git_in(repo, env, "commit", "-q", "-m", "initial")
    (repo / "mine.txt").write_text("the user's own unstaged edit\n")
    (repo / "scratch.txt").write_text("the user's untracked file\n")
    status = git_in(repo, env, "status", "--porcelain")
    proc = subprocess.run([*WRAPAGENT, "sh", "-c", script], env=env, cwd=repo,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    (record,) = sessions_cmd.all_records(env)
    return {"env": env, "repo": repo, "record": record, "status": status}


def test_session_record_has_both_checkpoints(tmp_path: Path) -> None:
    w = history_world(tmp_path)
    info = w["record"]["checkpoints"]
    assert info["status"] == "taken" and info["before"] and info["after"]
    assert info["repo"] == str(w["repo"])
    # the checkpoints are in the committed record: the sessions repository is clean
    root = Path(w["record"]["_dir"]).parent
    assert git_in(root, w["env"], "status", "--porcelain") == ""


def test_diff_stat_and_diff_show_only_the_sessions_changes(tmp_path: Path) -> None:
    w = history_world(tmp_path)
    env = {**w["env"], "GIT_PAGER": "cat"}
    proc = subprocess.run([*WRAPAGENT, "sessions", "diff", w["record"]["id"], "--stat"], env=env, cwd=w["repo"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    names = sorted(line.split("|")[0].strip() for line in proc.stdout.splitlines() if "|" in line)
    assert names == ["created.txt", "gone.txt", "tracked.txt"]
    assert "3 files changed" in proc.stdout
    proc = subprocess.run([*WRAPAGENT, "sessions", "diff", w["record"]["id"][:20]], env=env,
                          cwd=w["repo"], capture_output=True, text=True, timeout=30)
    assert "+agent edit" in proc.stdout and "-tracked.txt committed" in proc.stdout
    assert "mine.txt" not in proc.stdout and "scratch.txt" not in proc.stdout


def test_show_prints_checkpoints_and_stat(tmp_path: Path) -> None:
    w = history_world(tmp_path)
    code, out, _ = run(w, "show", w["record"]["id"])
    assert code == 0
    history = out.split("History:\n", 1)[1].split("\n\n", 1)[0]
    assert "native id   -" in history
    assert w["record"]["checkpoints"]["before"][:12] in history
    assert "created.txt" in history and "3 files changed" in history


def test_undo_restores_and_leaves_the_users_work(tmp_path: Path) -> None:
    w = history_world(tmp_path)
    code, out, err = run(w, "undo", w["record"]["id"])
    assert code == 0, err
    assert "created.txt: removed (created by the session)" in out
    assert "gone.txt: restored (deleted by the session)" in out
    assert "tracked.txt: restored" in out
    repo = w["repo"]
    assert not (repo / "created.txt").exists()
    assert (repo / "gone.txt").read_text() == "gone.txt committed\n"
    assert (repo / "tracked.txt").read_text() == "tracked.txt committed\n"
    assert (repo / "mine.txt").read_text() == "the user's own unstaged edit\n"
    assert git_in(repo, w["env"], "status", "--porcelain") == w["status"]


def test_undo_refuses_on_conflict_and_changes_nothing(tmp_path: Path) -> None:
    w = history_world(tmp_path)
    (w["repo"] / "tracked.txt").write_text("edited again after the session\n")
    code, out, err = run(w, "undo", w["record"]["id"])
    assert code == 1 and out == ""
    assert "refusing to undo" in err and "tracked.txt" in err
    assert (w["repo"] / "created.txt").exists()
    assert not (w["repo"] / "gone.txt").exists()


def test_undo_and_diff_without_checkpoints_say_why(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "iso")
    plain = tmp_path / "plain"
    plain.mkdir()
    proc = subprocess.run([*WRAPAGENT, "sh", "-c", "echo made > f.txt"], env=env, cwd=plain,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    w = {"env": env, "repo": plain}
    (record,) = sessions_cmd.all_records(env)
    for verb in ("undo", "diff"):
        code, _, err = run(w, verb, record["id"])
        assert code == 1 and "no checkpoints for this session: not a git repository" in err
    assert (plain / "f.txt").read_text() == "made\n"


def test_undo_of_a_session_that_changed_nothing(world: dict) -> None:
    code, out, _ = run(world, "undo", world["sh"]["id"])
    assert code == 0 and "changed no file: nothing to undo" in out


def test_prune_keeps_recent_and_drops_old(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = history_world(tmp_path)
    info = w["record"]["checkpoints"]
    refs = lambda: git_in(w["repo"], w["env"], f"--git-dir={info['store']}", "for-each-ref", "refs/")  # noqa: E731
    assert refs().count("\n") == 2
    code, out, _ = run(w, "prune", "--project", str(w["repo"]))
    assert code == 0 and "0 session(s)" in out and refs().count("\n") == 2
    code, out, _ = run(w, "prune", "--older-than", "0", "--project", str(w["repo"]))
    assert code == 0 and w["record"]["id"] in out and refs() == ""


def fake_tool(folder: Path, name: str) -> None:
    """A stand-in for a coding CLI that prints the arguments it got."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text("#!/bin/sh\necho \"$0 args: $*\"\necho \"cwd: $(pwd)\"\n")
    script.chmod(0o755)


@pytest.mark.parametrize("tool, expected", [
    ("codex", "--no-daemon resume NATIVE-1"),
    ("claude", "--resume NATIVE-1 --no-daemon"),
    ("gemini", "--resume NATIVE-1 --no-daemon"),
    ("opencode", "--session NATIVE-1 --no-daemon"),
])
def test_resume_starts_the_tool_wrapped_with_its_resume_option(tmp_path: Path, tool: str, expected: str) -> None:
    env = isolated_env(tmp_path / "iso")
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, tool)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    project = make_project(tmp_path / "delta")
    root = paths.sessions_root(project, env)
    session_dir = root / "01JAAAAAAAAAAAAAAAAAAAAAAA"
    session_dir.mkdir(parents=True)
    (session_dir / "session.json").write_text(json.dumps({
        "id": session_dir.name, "tool": tool, "transport": tool, "cwd": str(project),
        "project_root": str(project), "native_session_id": "NATIVE-1", "state": "finished"}))
    proc = subprocess.run([*WRAPAGENT, "sessions", "resume", "last", "--", "--no-daemon"], env=env,
                          cwd=project, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert f"args: {expected}\n" in proc.stdout
    assert f"cwd: {project}\n" in proc.stdout
    # it ran wrapped: a new session record of that tool, naming the resumed conversation in argv
    newest = sessions_cmd.all_records(env)[0]
    assert newest["id"] != session_dir.name and newest["tool"] == tool and newest["is_resume"] is True


def test_resume_without_a_native_id(world: dict) -> None:
    code, _, err = run(world, "resume", world["sh"]["id"])
    assert code == 1 and "no native session id" in err


def test_interactive_and_pipe_sessions_have_checkpoints_too(world: dict) -> None:
    """The PTY session (and the pipe one) of the fixture ran in a git repository without commits."""
    for key in ("tty", "pipe", "sh"):
        info = world[key]["checkpoints"]
        assert info["status"] == "taken" and info["head"] is None, (key, info)
        assert info["before"] and info["after"]
    native = world["tty"]["native_sessions"]  # the demo agent keeps a transcript, as the real CLIs do
    assert world["tty"]["native_session_id"] == native[-1]["id"]
    assert native[-1]["transcript"].startswith("transcript/demo-")
def test_show_prints_later_injections_and_turns_compactly() -> None:
    from wrapagent.commands.sessions import render_show

    block = '<prompt-guard name="g">\nrun 1\n</prompt-guard>\n\n'
    first = {"conversation": 1, "status": "submitted", "path": "interactive", "text": block,
             "attempts": 1, "notes": []}
    record = {
        "id": "01JX", "tool": "demo", "argv": ["demo"], "injection": first,
        "injections": [first,
                       {"conversation": 2, "status": "submitted", "text": block.replace("1", "2"),
                        "at": "2026-11-23T10:00:05+00:00", "first_key_delay_ms": 12.5, "notes": []},
                       {"conversation": 3, "status": "none", "text": None,
                        "notes": ["no message after the reset"]}],
        "turns": [{"n": 1, "at": "2026-11-23T10:00:00+00:00", "quiet_at": "2026-11-23T10:00:08.250000+00:00"},
                  {"n": 2, "at": "2026-11-23T10:00:10+00:00", "quiet_at": "2026-11-23T10:00:11+00:00",
                   "waits": 2},
                  {"n": 3, "at": "2026-11-23T10:00:20+00:00", "quiet_at": None}],
        "hooks": [{"name": "waiting_for_input", "kind": "lifecycle", "exit_code": 0, "duration_s": 0.01,
                   "timed_out": False, "error": None, "runs": 3, "failed": 0, "turn": 2}],
    }
    text = render_show(record, None)
    assert "Injection after reset, conversation 2: submitted" in text
    assert "first key held 12.5 ms" in text
    assert "run 2" in text and text.count("run 1") == 1
    assert "conversation 3: none" in text and "note: no message after the reset" in text
    assert "Turns: 3" in text
    assert "#1  submitted" in text and "output quiet from +8.2s" in text
    assert "output quiet from +1.0s (seen waiting quiet_secs later), 2 waits" in text
    assert "#3  submitted" in text and "not seen waiting" in text
    assert "waiting_for_input x3" in text


def test_show_lists_a_turn_the_user_interrupted() -> None:
    from wrapagent.commands.sessions import render_show

    record = {
        "id": "01JY", "tool": "demo", "argv": ["demo"], "injection": {"status": "none", "notes": []},
        "turns": [{"n": 1, "at": "2026-11-23T10:00:00+00:00", "quiet_at": "2026-11-23T10:00:04+00:00",
                   "interrupted": True},
                  {"n": 2, "at": "2026-11-23T10:01:00+00:00", "quiet_at": "2026-11-23T10:01:03+00:00"}],
        "stop_check": {"command": "make test", "max_continues": 3, "runs": [], "continuations": [],
                       "interrupted": [1]},
    }
    text = render_show(record, None)
    assert "#1  submitted" in text and "(seen waiting quiet_secs later), interrupted by the user" in text
    assert text.count("interrupted by the user") == 1
    assert "after turn 1: not run (the user interrupted the agent)" in text
