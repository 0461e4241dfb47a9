"""hooks: placeholder substitution and the bounded `sh -c` runner."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import psutil
import pytest

from wrapagent.hooks.config_loader import DEFAULT_SESSION_COMPLETE, LifecycleHook
from wrapagent.hooks.context import GuardContext
from wrapagent.hooks.hook_runner import (
    STDOUT_CAP,
    HookResult,
    hook_env,
    hook_variables,
    run_command,
    run_lifecycle,
    substitute,
)

HOSTILE_VALUES = [
    "plain",
    "with space",
    "it's",
    'dou"ble',
    "$(touch {canary})",
    "`touch {canary}`",
    "; touch {canary}",
    "&& touch {canary} #",
    "| touch {canary}",
    "$HOME ${HOME} $((1+1))",
    "back\\slash \\",
    "'; touch {canary}; echo '",
    '"; touch {canary}; echo "',
    "\"$(touch {canary})\"",
    "new\nline",
    "glob * ? [a]",
    "{tool}",
    "~",
    "",
    "-n",
]

TEMPLATES = [
    "printf '%s\\n' {v}",
    "printf '%s\\n' '{v}'",
    'printf \'%s\\n\' "{v}"',
    "printf '%s\\n' \"x{v}y\"",
    "printf '%s\\n' 'x{v}y'",
    'printf \'%s\\n\' "$(printf \'%s\' {v})"',
    'printf \'%s\\n\' "$(printf \'%s\' "{v}")"',
    "printf '%s\\n' `printf '%s' {v}`",
    "printf '%s\\n' \"`printf '%s' {v}`\"",
    "x={v}; printf '%s\\n' \"$x\"",
    "# don't be fooled\nprintf '%s\\n' {v}",
]


def _ctx(tmp_path: Path, **kw) -> GuardContext:
    base = dict(
        project_root=tmp_path,
        cwd=tmp_path / "sub",
        tool="codex",
        session_id="01JTESTSESSION",
        is_resume=False,
        session_dir=tmp_path / "sessions" / "01JTESTSESSION",
        sessions_root=tmp_path / "sessions",
    )
    base.update(kw)
    return GuardContext(**base)


def _run(command: str, cwd: Path, **kw) -> HookResult:
    logs: list[str] = kw.pop("logs", [])
    kw.setdefault("timeout", 60)  # generous: only a test that means to time out sets its own
    return run_command(command, name="t", kind="lifecycle", cwd=cwd, env=os.environ, log=logs.append, **kw)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# --------------------------------------------------------------------------- substitute


def test_substitute_basic_and_unknown():
    assert substitute("echo {tool} {nope} {}", {"tool": "codex"}) == "echo codex {nope} {}"
    assert substitute("echo {tool}", {"tool": "a b"}) == "echo 'a b'"
    assert substitute("echo {tool}", {"tool": ""}) == "echo ''"


def test_substitute_is_one_pass():
    out = substitute("echo {a} {b}", {"a": "{b}", "b": "B"})
    assert out == "echo '{b}' B"


def test_shell_parameter_syntax_and_escaped_braces_left_alone():
    assert substitute("echo ${tool} \\{tool}", {"tool": "x"}) == "echo ${tool} \\{tool}"


def test_substitute_quotes_inside_single_and_double_quotes():
    assert substitute("echo 'a {v} b'", {"v": "x y"}) == "echo 'a ''x y'' b'"
    assert substitute('echo "a {v} b"', {"v": "x y"}) == 'echo "a x y b"'
    assert substitute('echo "{v}"', {"v": 'a"$`\\'}) == 'echo "a\\"\\$\\`\\\\"'
    assert substitute("git commit -m 'session {v} complete'", {"v": "01J"}) == "git commit -m 'session '01J' complete'"


@pytest.mark.parametrize("template", TEMPLATES)
def test_hostile_values_are_never_executed(tmp_path, template):
    canary = tmp_path / "canary"
    for raw in HOSTILE_VALUES:
        value = raw.replace("{canary}", str(canary))
        command = substitute(template, {"v": value, "tool": "SHOULD-NOT-APPEAR"})
        proc = subprocess.run(["sh", "-c", command], capture_output=True, cwd=tmp_path, timeout=10)
        assert not canary.exists(), (template, value, command)
        assert proc.returncode == 0, (template, value, command, proc.stderr)
        out = proc.stdout.decode()
        if "`" in template or "$(" in template:
            # Command substitution strips trailing newlines; unquoted word splitting may split.
            assert value.rstrip("\n").split() == out.rstrip("\n").split() or value in out, (template, value, out)
        elif template.endswith("{v}") or "{v}\"" in template or "'{v}'" in template:
            assert out == value + "\n" or out == f"x{value}y\n", (template, value, out)
        assert "SHOULD-NOT-APPEAR" not in out


def test_here_document_bodies_get_the_value_and_run_nothing(tmp_path):
    canary = tmp_path / "canary"
    value = f"x\nEOF\ntouch {canary}\n$(touch {canary})"
    for template, body in (
        ("cat <<EOF\n{v}\nEOF\nprintf '%s' {v}", value + "\n"),
        ("cat <<-'E O'\n\t{v}\n\tE O\nprintf '%s' {v}", value + "\n"),
        ("cat <<'EOF'\n{v}\nEOF\nprintf '%s' {v}", "{v}\n"),  # would end the document: left alone
        ("cat <<A <<\"B\"\n{v}\nA\n{v}\nB\nprintf '%s' {v}", value + "\n"),  # cat reads the last one
        ("cat <<A <<\"B\"\n{v}\nA\n[{v}]\nB\nprintf '%s' {v}", f"[{value}]\n"),
    ):
        command = substitute(template, {"v": value})
        assert command.endswith("printf '%s' " + _quoted(value)), command
        out = subprocess.run(["sh", "-c", command], capture_output=True, cwd=tmp_path, timeout=10).stdout.decode()
        assert not canary.exists(), command
        assert out == body + value, (template, command, out)
    assert substitute("cat <<< {v}", {"v": "x y"}) == "cat <<< 'x y'"
    assert substitute("echo $((1<<2)) {v}", {"v": "x y"}) == "echo $((1<<2)) 'x y'"


def test_unquoted_form_matches_shlex_quote():
    import shlex

    for raw in HOSTILE_VALUES + ["01JABC", "/a/b-c_d.e", "a=b:c,d@e%f+g", "é", "a\tb"]:
        assert substitute("{v}", {"v": raw}) == shlex.quote(raw)


def _quoted(value: str) -> str:
    import shlex

    return shlex.quote(value)


def test_exact_round_trip_of_values(tmp_path):
    for raw in HOSTILE_VALUES:
        for template in ("printf '%s' {v}", "printf '%s' '{v}'", 'printf \'%s\' "{v}"'):
            command = substitute(template, {"v": raw})
            out = subprocess.run(["sh", "-c", command], capture_output=True, cwd=tmp_path, timeout=10).stdout
            assert out.decode() == raw, (template, raw, command)


def test_default_session_complete_template_with_hostile_id(tmp_path):
    canary = tmp_path / "canary"
    root = tmp_path / "sessions root"
    sid = f"x'; touch {canary}; '"
    (root / sid).mkdir(parents=True)
    (root / sid / "session.json").write_text("{}\n")  # a session folder always holds its record
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    command = substitute(DEFAULT_SESSION_COMPLETE, {"sessions_root": str(root), "session_id": sid})
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    proc = subprocess.run(["sh", "-c", command], capture_output=True, env=env, timeout=20)
    assert proc.returncode == 0, proc.stderr
    assert not canary.exists()
    log = subprocess.run(["git", "-C", str(root), "log", "--format=%s"], capture_output=True, text=True).stdout
    assert log.strip() == f"session {sid} complete"


def test_hook_variables_and_env(tmp_path):
    ctx = _ctx(tmp_path)
    variables = hook_variables(ctx)
    assert variables == {
        "session_id": "01JTESTSESSION",
        "session_dir": str(tmp_path / "sessions" / "01JTESTSESSION"),
        "sessions_root": str(tmp_path / "sessions"),
        "tool": "codex",
        "project_root": str(tmp_path),
        "cwd": str(tmp_path / "sub"),
        "exit_code": "",
        "turn": "",
        "reason": "",
    }
    assert hook_variables(ctx, 3)["exit_code"] == "3"
    assert hook_variables(ctx, turn=2)["turn"] == "2"
    bare = hook_variables(_ctx(tmp_path, session_dir=None, sessions_root=None))
    assert bare["session_dir"] == "" and bare["sessions_root"] == ""

    env = hook_env({"PATH": "/bin", "WRAPAGENT_TOOL": "old"}, ctx, {"EXTRA": "1"})
    assert env["PATH"] == "/bin" and env["EXTRA"] == "1"
    assert env["WRAPAGENT_SESSION_ID"] == "01JTESTSESSION"
    assert env["WRAPAGENT_TOOL"] == "codex"
    assert env["WRAPAGENT_PROJECT_ROOT"] == str(tmp_path)
    assert env["WRAPAGENT_WORKING_DIR"] == str(tmp_path / "sub")
    assert env["WRAPAGENT_SESSION_DIR"] == str(tmp_path / "sessions" / "01JTESTSESSION")


# --------------------------------------------------------------------------- run_command


def test_success_capture_and_stderr_to_log(tmp_path):
    logs: list[str] = []
    result = _run("echo out; echo err1 >&2; printf 'err2' >&2", tmp_path, logs=logs, capture_stdout=True)
    assert result.ok() and result.exit_code == 0 and not result.timed_out and result.error is None
    assert result.stdout == b"out\n"
    assert logs == ["[t] err1", "[t] err2"]


def test_stdout_goes_to_log_when_not_captured(tmp_path):
    logs: list[str] = []
    result = _run("echo visible", tmp_path, logs=logs)
    assert result.stdout == b"" and logs == ["[t] visible"]


def test_log_lines_are_stripped_of_terminal_controls(tmp_path):
    logs: list[str] = []
    _run("printf 'a\\033[31mred\\033]0;t\\007\\r\\n' >&2", tmp_path, logs=logs)
    assert logs == ["[t] ared"]


def test_cwd_env_and_stdin(tmp_path):
    result = _run(
        'pwd; echo "$FOO"; cat', tmp_path, capture_stdout=True, stdin=b"from stdin",
    )
    assert result.stdout.decode().splitlines() == [str(tmp_path), os.environ.get("FOO", ""), "from stdin"]
    env_result = run_command(
        'echo "$FOO"', name="e", kind="guard", cwd=tmp_path, env={"FOO": "bar", "PATH": os.environ["PATH"]},
        timeout=60, log=lambda _: None, capture_stdout=True,
    )
    assert env_result.stdout == b"bar\n"


def test_stdin_is_devnull_by_default(tmp_path):
    result = _run("cat; echo done", tmp_path, capture_stdout=True, timeout=60)
    assert result.stdout == b"done\n" and not result.timed_out  # `cat` on a pipe would wait 60 s


def test_large_stdin_and_stdout(tmp_path):
    data = os.urandom(300_000)
    result = _run("cat; head -c 3000000 /dev/zero", tmp_path, capture_stdout=True, stdin=data)
    assert result.ok()
    assert len(result.stdout) == STDOUT_CAP
    assert result.stdout[: len(data)] == data


def test_child_that_ignores_stdin(tmp_path):
    result = _run("exit 0", tmp_path, stdin=b"x" * 1_000_000)
    assert result.ok()


def test_nonzero_exit_and_missing_command(tmp_path):
    logs: list[str] = []
    result = _run("exit 3", tmp_path)
    assert not result.ok() and result.exit_code == 3 and result.error == "exited with 3"
    missing = _run("definitely-not-a-command-xyz", tmp_path, logs=logs)
    assert missing.exit_code == 127 and not missing.ok()
    assert any("not found" in line for line in logs)


def test_missing_cwd_falls_back_and_logs(tmp_path):
    logs: list[str] = []
    result = _run("pwd", tmp_path / "gone", logs=logs, capture_stdout=True)
    assert result.ok()
    assert result.stdout.decode().strip() == os.getcwd()
    assert any("does not exist" in line for line in logs)


def test_timeout_kills_whole_group(tmp_path):
    pidfile = tmp_path / "pids"
    result = _run(f"echo $$ > {pidfile}.sh; sleep 120 & echo $! > {pidfile}; sleep 120", tmp_path, timeout=1)
    # The deadline ended it (not the `sleep 120`s): timed out, and the shell and its child are gone.
    assert result.timed_out and not result.ok() and result.error == "timed out after 1s"
    grandchild, shell = int(pidfile.read_text()), int((tmp_path / "pids.sh").read_text())
    assert not _alive(grandchild) and not _alive(shell)


def test_timeout_escalates_to_sigkill(tmp_path):
    """TERM first (a member that heeds it records it), then KILL for the ones that ignore it."""
    pidfile, heeded = tmp_path / "pid", tmp_path / "heeded"
    # Its output goes to /dev/null: the runner has closed the hook's pipes by then, and dash's
    # "Terminated" (for its killed `sleep`) would end it by SIGPIPE before its trap ran.
    heeds = (f"exec >/dev/null 2>&1; trap 'echo TERM > {heeded}; exit 0' TERM; touch {heeded}.ready; "
             "while :; do sleep 0.05; done")
    ignores = f"trap '' TERM; echo $$ > {pidfile}; while :; do sleep 0.05; done"
    # The heeding member starts before `trap '' TERM`: a shell cannot trap what it inherited ignored.
    command = (f"sh -c \"{heeds}\" & trap '' TERM; sh -c \"{ignores}\" & "
               f"until [ -e {heeded}.ready ] && [ -s {pidfile} ]; do sleep 0.05; done; wait")
    result = _run(command, tmp_path, timeout=5)
    assert result.timed_out
    assert heeded.read_text() == "TERM\n"  # TERM came first, and was given time to be handled
    assert result.exit_code == 128 + signal.SIGKILL  # the shell ignoring TERM ended by KILL
    assert not _alive(int(pidfile.read_text()))


def test_background_child_holding_stdout_does_not_hang(tmp_path):
    pidfile = tmp_path / "pid"
    logs: list[str] = []
    result = _run(f"sleep 120 & echo $! > {pidfile}; echo hi", tmp_path, capture_stdout=True, logs=logs, timeout=90)
    assert not result.timed_out  # ended after PIPE_GRACE: waiting for the `sleep 120` would hit the 90 s timeout
    assert result.ok() and result.stdout == b"hi\n"
    assert not _alive(int(pidfile.read_text()))
    assert any("background process" in line for line in logs)


def test_detached_background_child_is_left_alone(tmp_path):
    pidfile = tmp_path / "pid"
    result = _run(f"sleep 120 >/dev/null 2>&1 & echo $! > {pidfile}", tmp_path, timeout=60)
    pid = int(pidfile.read_text())
    try:
        assert result.ok()
        assert _alive(pid)
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


def test_closed_pipes_still_bounded_by_timeout(tmp_path):
    pidfile = tmp_path / "pid"
    result = _run(f"echo $$ > {pidfile}; exec >/dev/null 2>&1; sleep 120", tmp_path, timeout=1)
    assert result.timed_out and result.error == "timed out after 1s"
    assert not _alive(int(pidfile.read_text()))  # the deadline ended it, not the `sleep 120`


def test_own_process_group(tmp_path):
    result = _run("ps -o pgid= -p $$; ps -o pid= -p $$", tmp_path, capture_stdout=True)
    pgid, pid = result.stdout.decode().split()
    assert pgid == pid and int(pgid) != os.getpgrp()


def test_signal_exit_code_and_record(tmp_path):
    result = _run("kill -TERM $$", tmp_path, capture_stdout=True)
    assert result.exit_code == 143 and not result.ok()
    record = result.to_record()
    assert set(record) == {"name", "kind", "command", "exit_code", "duration_s", "timed_out", "error"}
    json.dumps(record)


def test_failing_logger_does_not_break_runner(tmp_path):
    def bad_log(_: str) -> None:
        raise RuntimeError("logger broke")

    result = run_command("echo x >&2", name="t", kind="guard", cwd=tmp_path, env=os.environ, timeout=60, log=bad_log)
    assert result.ok()


def test_run_lifecycle_substitutes_and_uses_project_root(tmp_path):
    ctx = _ctx(tmp_path, tool="co'dex $(x)")
    out = tmp_path / "out"
    hook = LifecycleHook("post_run", f"printf '%s|%s|%s' {{tool}} {{exit_code}} \"$PWD\" > {out}", True, 5, "x")
    result = run_lifecycle(hook, ctx, base_env=os.environ, log=lambda _: None, exit_code=7)
    assert result.ok() and result.name == "post_run" and result.kind == "lifecycle"
    assert out.read_text() == f"co'dex $(x)|7|{tmp_path}"
