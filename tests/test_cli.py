"""The command line from outside: option splitting, `--`, --version, WRAPAGENT_DISABLE, exec errors."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

import wrapagent
from conftest import ShellRun, default_signals, wrapagent_argv

MODES = [pytest.param([], id="full"), pytest.param(["--no-hooks"], id="no-hooks")]


def run(*args: str, env: dict | None = None, cwd: Path | None = None,
        input: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([*wrapagent_argv(), *args], input=input, capture_output=True,
                          env=env, cwd=cwd, timeout=20, preexec_fn=default_signals)


def test_version():
    result = run("--version")
    assert (result.returncode, result.stdout, result.stderr) == \
        (0, f"wrapagent {wrapagent.__version__}\n".encode(), b"")


def test_help():
    result = run("--help")
    assert result.returncode == 0
    assert result.stdout.startswith(b"usage: wrapagent [OPTIONS] TOOL")


@pytest.mark.parametrize("args", [["--bogus", "sh"], ["-x", "sh"], ["--no-hooks", "--nope", "true"],
                                  ["--shim-dir"]])
def test_bad_option_before_tool_is_one_line_exit_2(args, tmp_path):
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("wrapagent: "), result.stderr
    assert "Traceback" not in result.stderr.decode()


@pytest.mark.parametrize("mode", MODES)
def test_options_after_tool_belong_to_the_tool(mode, tmp_path):
    result = run(*mode, "sh", "-c", 'printf "%s|" "$@"', "sh", "--bogus", "--version", "--",
                 "--no-hooks", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, b"--bogus|--version|--|--no-hooks|")


@pytest.fixture
def fake_demo(tmp_path, monkeypatch) -> Path:
    """A program named `demo` first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    prog = bin_dir / "demo"
    prog.write_text('#!/bin/sh\necho "FAKE DEMO $*"\n')
    prog.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return prog


@pytest.mark.parametrize("mode", MODES)
def test_double_dash_runs_a_program_named_like_a_subcommand(mode, fake_demo, tmp_path):
    result = run(*mode, "--", "demo", "--flag", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, b"FAKE DEMO --flag\n")


def test_without_double_dash_demo_is_the_subcommand(fake_demo, tmp_path):
    result = run("demo", "hello", cwd=tmp_path)  # the built-in demo agent, one message
    assert result.returncode == 0
    assert b"FAKE DEMO" not in result.stdout
    assert b"hello" in result.stdout


@pytest.mark.parametrize("mode", MODES)
def test_disable_execs_the_tool_directly(mode, tmp_path, isolated_home):
    env = dict(os.environ, WRAPAGENT_DISABLE="1")
    proc = subprocess.Popen([*wrapagent_argv(), *mode, "sh", "-c", 'echo "$$"'], env=env,
                            stdout=subprocess.PIPE, cwd=tmp_path, preexec_fn=default_signals)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert int(out) == proc.pid  # same process: wrapagent exec'd sh
    assert not (isolated_home / "state").exists()  # no session record


def test_disable_at_a_terminal_execs_the_tool_directly(run_wrapagent, tmp_path, isolated_home):
    env = dict(os.environ, WRAPAGENT_DISABLE="1")
    child = run_wrapagent("sh", "-c", 'echo "PID=$$"; test -t 0 && echo TTY', env=env, cwd=tmp_path)
    assert child.finish() == 0
    assert child.output == f"PID={child.pid}\r\nTTY\r\n".encode()
    assert not (isolated_home / "state").exists()


# -- the tool cannot be run: one line, shell exit codes, before the terminal goes raw --------

@pytest.fixture
def bad_tools(tmp_path) -> dict[str, tuple[str, int, str]]:
    """name → (path or command, expected exit code, expected words in the message)."""
    not_exec = tmp_path / "not-executable"
    not_exec.write_text("#!/bin/sh\necho should not run\n")
    not_exec.chmod(0o644)
    bad_interp = tmp_path / "bad-interpreter"
    bad_interp.write_text("#!/nonexistent/interpreter\n")
    bad_interp.chmod(0o755)
    directory = tmp_path / "a-directory"
    directory.mkdir()
    return {
        "missing": ("no-such-tool-7f3a", 127, "command not found"),
        "not-executable": (str(not_exec), 126, "Permission denied"),
        "directory": (str(directory), 126, "Is a directory"),
        "bad-interpreter": (str(bad_interp), 127, "required file not found"),
    }


CASES = ["missing", "not-executable", "directory", "bad-interpreter"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_tool_cannot_run_at_a_terminal(run_wrapagent, bad_tools, case, mode, tmp_path):
    tool, code, words = bad_tools[case]
    shell = ShellRun(run_wrapagent, shlex.join([*wrapagent_argv(), *mode, tool]), cwd=tmp_path)
    assert shell.finish() == code
    # one line, and printed with the terminal still cooked (\n became \r\n)
    lines = shell.output.split(b"\r\n")
    assert lines[-1] == b"" and len(lines) == 2, shell.output
    assert lines[0].startswith(f"wrapagent: {tool}".encode()), shell.output
    assert words.encode() in lines[0]
    assert shell.after == shell.before


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_tool_cannot_run_in_pipe_mode(bad_tools, case, mode, tmp_path):
    tool, code, words = bad_tools[case]
    result = run(*mode, tool, cwd=tmp_path)
    assert result.returncode == code
    assert result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"wrapagent: {tool}"), result.stderr
    assert words in lines[0]


@pytest.mark.parametrize("how", ["WRAPAGENT_DISABLE=1", "--no-hooks in pipe mode"])
def test_directly_execd_tool_gets_default_signal_dispositions(how, tmp_path):
    """`yes | head -1` must end quietly; an inherited SIG_IGN makes `yes` report EPIPE."""
    env = dict(os.environ, WRAPAGENT_DISABLE="1") if how.startswith("WRAP") else None
    mode = [] if env else ["--no-hooks"]
    script = "grep '^SigIgn' /proc/self/status; yes | head -n 1"
    result = run(*mode, "sh", "-c", script, env=env, cwd=tmp_path)
    # What the same command gets run directly (subprocess restores SIGPIPE/SIGXFSZ as a shell
    # would): wrapagent must not add an ignored signal, nor drop one the caller's shell set
    # (a background job of a non-interactive shell runs with SIGINT and SIGQUIT ignored).
    direct = subprocess.run(["sh", "-c", script], capture_output=True, cwd=tmp_path)
    assert direct.stdout.endswith(b"\ny\n") and direct.stderr == b""
    assert (result.stdout, result.stderr) == (direct.stdout, b"")


def test_no_arguments_is_a_usage_error_on_stderr(tmp_path):
    result = run(cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == b""
    assert result.stderr.startswith(b"usage: wrapagent [OPTIONS] TOOL")
