"""Non-terminal mode: stdin/stdout not both terminals → the tool runs with the same stdio, no PTY.

`echo hi | wrapagent cat | cat`, CI, `| jq`. Both the full mode (record,
hooks, signal forwarding by wrapagent) and `--no-hooks` (wrapagent execs the
tool) are covered. Run with subprocess pipes, except where a terminal is part
of the case.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from conftest import default_signals, helper, wrapagent_argv

MODES = [pytest.param([], id="full"), pytest.param(["--no-hooks"], id="no-hooks")]


def run(mode: list[str], *args: str, input: bytes = b"", cwd: Path | None = None,
        timeout: float = 10) -> subprocess.CompletedProcess:
    return subprocess.run([*wrapagent_argv(), *mode, *args], input=input, capture_output=True,
                          cwd=cwd, timeout=timeout, preexec_fn=default_signals)


@pytest.mark.parametrize("mode", MODES)
def test_pipe_through_cat(mode, tmp_path):
    result = run(mode, "cat", input=b"hi\n", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"hi\n", b"")


@pytest.mark.parametrize("mode", MODES)
def test_binary_stream_is_untouched(mode, tmp_path):
    """No PTY in the way: no \\r\\n translation, no control-character handling, no loss."""
    data = bytes(range(256)) * 4096 + b"\x03\x04\x1a\r\n"  # 1 MiB and change
    result = run(mode, "cat", input=data, cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout == data


@pytest.mark.parametrize("mode", MODES)
def test_child_stdio_is_not_a_terminal(mode, tmp_path):
    script = 'test -t 0; echo "in=$?"; test -t 1; echo "out=$?"; test -t 2; echo "err=$?"'
    result = run(mode, "sh", "-c", script, cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout == b"in=1\nout=1\nerr=1\n"


def shell_code(returncode: int) -> int:
    """What a shell's $? shows: with --no-hooks wrapagent *is* the tool, so it can die of a signal."""
    return 128 - returncode if returncode < 0 else returncode


@pytest.mark.parametrize("mode", MODES)
def test_exit_codes_propagate(mode, tmp_path):
    cases = {"exit 0": 0, "exit 7": 7, "exit 255": 255, "kill -TERM $$": 143, "kill -KILL $$": 137}
    # all at once: the full mode's start-up (config, record, commit) dominates
    procs = {script: subprocess.Popen([*wrapagent_argv(), *mode, "sh", "-c", script],
                                      stdin=subprocess.DEVNULL, cwd=tmp_path,
                                      preexec_fn=default_signals)
             for script in cases}
    codes = {script: shell_code(proc.wait(timeout=20)) for script, proc in procs.items()}
    assert codes == cases


def test_stdout_terminal_stdin_pipe_is_pipe_mode(run_wrapagent, tmp_path):
    """Only stdin AND stdout both terminals make PTY mode; otherwise the tool keeps wrapagent's stdio."""
    script = 'test -t 0; echo "in=$?"; test -t 1; echo "out=$?"; read line; echo "line=$line"'
    command = "echo piped | " + shlex.join([*wrapagent_argv(), "sh", "-c", script])
    child = run_wrapagent(argv=["sh", "-c", command], cwd=tmp_path)
    assert child.finish() == 0
    assert child.output == b"in=1\r\nout=0\r\nline=piped\r\n"


def test_stdin_terminal_stdout_pipe_is_pipe_mode(run_wrapagent, tmp_path):
    script = 'test -t 0; echo "in=$?"; test -t 1; echo "out=$?"'
    command = shlex.join([*wrapagent_argv(), "sh", "-c", script]) + " | cat"
    child = run_wrapagent(argv=["sh", "-c", command], cwd=tmp_path)
    assert child.finish() == 0
    assert child.output == b"in=0\r\nout=1\r\n"


def _start_trap(mode: list[str], cwd: Path, *extra: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([*wrapagent_argv(), *mode, *helper("sigtrap.py", *extra)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, cwd=cwd,
                            preexec_fn=default_signals)
    line = proc.stdout.readline()
    assert line.startswith(b"READY pid="), line
    return proc, int(line.split()[1].split(b"=")[1])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_to_wrapagent_reaches_the_tool(mode, sig, tmp_path):
    proc, pid = _start_trap(mode, tmp_path)
    try:
        if mode:  # --no-hooks: wrapagent replaced itself with the tool
            assert pid == proc.pid
        else:
            assert psutil.Process(pid).ppid() == proc.pid
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=10)
        assert out == f"GOT {sig.name}\n".encode()
        assert proc.returncode == 100 + sig
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_signal_another_thread_takes_still_reaches_the_tool():
    """The kernel gives a signal for the process to any thread that does not block it (hook
    and version-lookup threads block none): the main thread must still wake and forward it.
    It slept on in `wait4` before, and the tool never got it (1 run in ~180 under load)."""
    import threading

    from wrapagent.proxy import passthrough

    started = threading.Event()

    def signal_this_thread() -> None:
        if started.wait(30):
            signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

    sender = threading.Thread(target=signal_this_thread)
    sender.start()
    try:
        result = passthrough.run(["sleep", "120"], env=dict(os.environ), on_spawn=lambda pid: started.set())
    finally:
        started.set()
        sender.join()
    assert (result.exit_code, result.forwarded_signals) == (128 + signal.SIGTERM, [signal.SIGTERM])


def test_typed_ctrl_c_reaches_the_tool_once(run_wrapagent, tmp_path):
    """^C at the terminal signals the whole foreground group, which holds the tool:
    wrapagent must not forward a second SIGINT (agents read a second ^C as "exit")."""
    # The reader of the pipe must outlive the ^C, and so must the shell: the ^C signals it
    # too, and a shell killed by it is the session leader, whose end sends SIGHUP to the
    # group, `cat` included; under load that came before `cat` had copied the tool's line.
    command = ("trap : INT; " + shlex.join([*wrapagent_argv(), *helper("sigtrap.py", "--ignore")])
               + " | (trap '' INT; cat)")
    child = run_wrapagent(argv=["sh", "-c", command], cwd=tmp_path)
    child.expect(rb"READY pid=(\d+)")
    pid = int(child.match.group(1))
    try:
        child.send(b"\x03")
        child.expect(b"GOT SIGINT")
        # a forwarded duplicate would arrive within milliseconds; TERM is our end marker
        time.sleep(0.3)
        os.kill(pid, signal.SIGTERM)
        child.expect(b"GOT SIGTERM")
        assert child.before.count(b"GOT SIGINT") == 0  # none after the first
    finally:
        os.kill(pid, signal.SIGKILL)
    child.finish()


def test_record_in_pipe_mode(tmp_path, isolated_home):
    result = run([], "sh", "-c", "cat; exit 9", input=b"data\n", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (9, b"data\n")
    records = list((isolated_home / "state").glob("wrapagent/projects/*/*/session.json"))
    assert len(records) == 1
    rec = json.loads(records[0].read_text())
    assert rec["mode"] == "pipe"
    assert rec["exit_code"] == 9 and rec["state"] == "finished"


def test_no_hooks_pipe_mode_leaves_no_record(tmp_path, isolated_home):
    assert run(["--no-hooks"], "true", cwd=tmp_path).returncode == 0
    assert not (isolated_home / "state").exists()
