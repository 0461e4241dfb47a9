"""The PTY proxy, driven from outside: wrapagent on a real outer PTY (pexpect).

Each test starts `wrapagent` the way a user's terminal does and runs a tiny
program under it (tests/helpers, or `sh -c`) that prints what it sees: the
window size, the bytes it read, the signals it got. Assertions are on those
lines, on wrapagent's exit code, and on the processes left behind.
Most tests use `--no-hooks` (the bare proxy); the session-record tests and one
idle test run the full mode with the default configuration.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import ShellRun, helper, is_raw, wrapagent_argv
from platform_modes import platform_mode  # noqa: F401 - autouse: Linux and macOS paths

NO_HOOKS = "--no-hooks"


# -- every byte reaches the user ------------------------------------------------

def test_tail_of_instantly_exiting_child(run_wrapagent):
    # a few times: losing the tail is a race (pexpect's interact() lost it in 3 of 5 runs)
    for i in range(5):
        child = run_wrapagent(NO_HOOKS, "printf", f"tail-without-newline-{i}")
        assert child.finish() == 0
        assert child.output == f"tail-without-newline-{i}".encode()


def test_big_burst_arrives_complete(run_wrapagent):
    child = run_wrapagent(NO_HOOKS, "seq", "1", "200000")
    assert child.finish(timeout=30) == 0
    lines = child.output.split(b"\r\n")
    assert lines[-1] == b""  # ends with a complete line
    assert len(lines) - 1 == 200000
    assert lines[-2] == b"200000"
    assert lines[:-1] == [str(i).encode() for i in range(1, 200001)]


# -- exit status ------------------------------------------------------------------

@pytest.mark.parametrize("code", [0, 7, 255])
def test_exit_status_is_the_childs(run_wrapagent, code):
    child = run_wrapagent(NO_HOOKS, "sh", "-c", f"echo bye; exit {code}")
    assert child.finish() == code
    assert child.output == b"bye\r\n"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_child_killed_by_signal_gives_128_plus_n(run_wrapagent, sig):
    child = run_wrapagent(NO_HOOKS, "sh", "-c", f"kill -{sig.name[3:]} $$; echo not-reached")
    code = child.finish()
    assert code == 128 + sig
    # wrapagent exits normally with that code; it is not itself killed
    assert child.signalstatus is None
    assert b"not-reached" not in child.output


# -- window size ------------------------------------------------------------------

def test_window_size_before_start_and_on_every_sigwinch(run_wrapagent):
    child = run_wrapagent(NO_HOOKS, *helper("winsize.py"), dimensions=(33, 101))
    child.expect(rb"SIZE (\d+) (\d+)\r\n")
    assert child.match.groups() == (b"33", b"101")
    child.expect(b"READY")
    for rows, cols in ((40, 120), (12, 50), (41, 121)):
        child.setwinsize(rows, cols)
        child.expect(rb"WINCH (\d+) (\d+)\r\n")
        assert child.match.groups() == (str(rows).encode(), str(cols).encode())
    child.send(b"q\r")  # the helper's terminal is cooked: a line ends its read
    assert child.finish() == 0


def test_stty_size_at_start(run_wrapagent):
    child = run_wrapagent(NO_HOOKS, "stty", "size", dimensions=(17, 93))
    assert child.finish() == 0
    assert child.output == b"17 93\r\n"


# -- keys -------------------------------------------------------------------------

def test_control_keys_reach_a_raw_child_as_bytes(run_wrapagent):
    child = run_wrapagent(NO_HOOKS, *helper("rawbytes.py"))
    child.expect(b"READY\r\n")
    for key, hexa in ((b"\x03", b"03"), (b"\x1a", b"1a"), (b"\x1c", b"1c"),
                      (b"\x04", b"04"), (b"\x11", b"11"), (b"\x13", b"13")):
        child.send(key)
        child.expect(b"GOT " + hexa + b"\r\n")
    child.send(b"q")
    # Still alive after Ctrl-C/Ctrl-Z/Ctrl-\\: no key became a signal on the way (a
    # forwarded SIGINT would have killed the helper with KeyboardInterrupt).
    child.expect(b"GOT 71\r\n")
    assert child.finish() == 0


def test_ctrl_c_typed_interrupts_a_cooked_child(run_wrapagent):
    child = run_wrapagent(NO_HOOKS, "sh", "-c", "echo READY; exec sleep 30")
    child.expect(b"READY\r\n")
    child.send(b"\x03")  # to sh or to the sleep it became: SIGINT either way
    assert child.finish() == 130
    # the child's own line discipline turned the byte into SIGINT (and echoed it)
    assert child.output.endswith(b"^C")


# -- signals sent to wrapagent ------------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT])
def test_signal_to_wrapagent_is_forwarded_and_waited_for(run_wrapagent, sig):
    child = run_wrapagent(NO_HOOKS, *helper("sigtrap.py"))
    child.expect(rb"READY pid=(\d+) pgid=(\d+)")
    pid, pgid = map(int, child.match.groups())
    assert pgid != os.getpgid(child.pid)  # the child has its own group (and session)
    child.kill(sig)
    if sig != signal.SIGHUP:  # after SIGHUP the terminal counts as gone: nothing is shown
        child.expect(f"GOT {sig.name}".encode())
    # wrapagent waited for the child and exits with the child's own code
    assert child.finish() == 100 + sig
    assert not psutil.pid_exists(pid)


def test_sigkill_only_after_the_grace_period(run_wrapagent):
    child = run_wrapagent(NO_HOOKS, *helper("sigtrap.py", "--ignore"))
    child.expect(rb"READY pid=(\d+)")
    pid = int(child.match.group(1))
    child.kill(signal.SIGTERM)
    child.expect(b"GOT SIGTERM")
    # TERM alone: the child is still there and answers (no SIGKILL came with the TERM).
    os.kill(pid, signal.SIGQUIT)
    child.expect(b"GOT SIGQUIT")
    # The child ignores SIGTERM forever, so that it ended at all shows the SIGKILL came.
    assert child.finish(timeout=60) == 128 + signal.SIGKILL
    assert not psutil.pid_exists(pid)


# -- the user's terminal settings are restored on every path ------------------------

def _wrapagent_cmd(*args: str) -> str:
    return shlex.join([*wrapagent_argv(), *args])


def _wait_for(predicate, timeout: float = 5.0, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def test_terminal_restored_after_normal_exit(run_wrapagent):
    run = ShellRun(run_wrapagent, _wrapagent_cmd(NO_HOOKS, "sh", "-c", "echo RUNNING; read x; exit 3"))
    run.child.expect(b"RUNNING")
    assert run.saw_raw()
    run.child.send(b"\r")
    assert run.finish() == 3
    assert run.after == run.before
    assert not is_raw(run.child.child_fd)


def test_terminal_restored_after_child_crash(run_wrapagent):
    run = ShellRun(run_wrapagent, _wrapagent_cmd(NO_HOOKS, "sh", "-c", "echo RUNNING; read x; kill -SEGV $$"))
    run.child.expect(b"RUNNING")
    assert run.saw_raw()
    run.child.send(b"\r")
    assert run.finish() == 128 + signal.SIGSEGV
    assert run.after == run.before


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_terminal_restored_after_signal_to_wrapagent(run_wrapagent, sig):
    run = ShellRun(run_wrapagent, _wrapagent_cmd(NO_HOOKS, "sh", "-c", "echo WPID=$PPID; exec sleep 30"))
    run.child.expect(rb"WPID=(\d+)")
    assert run.saw_raw()
    os.kill(int(run.child.match.group(1)), sig)
    assert run.finish() == 128 + sig  # the child (sleep) died of the forwarded signal
    assert run.after == run.before


def test_terminal_restored_after_wrapagent_exception(run_wrapagent):
    """A bug in the copy loop: traceback after the terminal is back, child terminated."""
    marker = f"{os.getpid() % 10000 + 20000}"
    command = shlex.join([*helper("broken_wrapagent.py"), NO_HOOKS,
                          "sh", "-c", f"echo x; exec sleep {marker}"])
    run = ShellRun(run_wrapagent, command)
    assert run.finish() == 1
    assert run.after == run.before
    assert b"ZeroDivisionError: injected failure" in run.output
    # the traceback was printed with the terminal cooked again (\n became \r\n)
    assert b"injected failure\r\n" in run.output
    sleeps = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", marker]]
    assert sleeps == []


def test_wrapagent_exception_with_a_child_that_ignores_sigterm(run_wrapagent):
    """The exception path must not wait forever: SIGTERM, grace, SIGKILL, then the traceback."""
    env = dict(os.environ, BROKEN_KILL_GRACE="0.5")
    tag = f"tag-{os.getpid()}-{time.monotonic_ns()}"
    child = run_wrapagent(argv=[*helper("broken_wrapagent.py"), NO_HOOKS,
                                *helper("sigtrap.py", "--ignore", tag)], env=env)
    # the child ignores SIGTERM forever: that wrapagent ends at all is the point
    assert child.finish(timeout=60) == 1
    assert b"ZeroDivisionError: injected failure" in child.output
    assert _processes_with_arg(tag) == []


def _processes_with_arg(arg: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if arg in (proc.info["cmdline"] or []):
            found.append(proc)
    return found


# -- the child starts like it would from a shell ----------------------------------

def test_child_gets_default_signal_dispositions(run_wrapagent):
    """Python ignores SIGPIPE/SIGXFSZ at start-up; the tool must not inherit that.

    Otherwise `yes | head -1` inside the agent's shell prints "Broken pipe"
    errors instead of ending quietly, and pipelines behave unlike a terminal.
    """
    child = run_wrapagent(NO_HOOKS, "sh", "-c",
                          "grep -E '^Sig(Ign|Blk)' /proc/self/status; yes | head -n 1; echo done")
    assert child.finish() == 0
    blocked, ignored, rest = child.output.split(b"\r\n", 2)
    assert blocked == b"SigBlk:\t0000000000000000"
    assert ignored.startswith(b"SigIgn:\t")
    assert _ignored_signals(int(ignored.split(b"\t")[1], 16)) <= _GLIBC_RESERVED
    assert rest == b"y\r\ndone\r\n"


_GLIBC_RESERVED = set(range(32, getattr(signal, "SIGRTMIN", 32)))
"""Signals glibc keeps for itself (SIGCANCEL, SIGSETXID; programs see SIGRTMIN = 34).

glibc's posix_spawn (the Linux start, `proxy/spawn.py`) leaves them ignored
in the new program, which cannot even name them; its own glibc sets their
handlers when it uses them. The forked start (macOS mode) leaves none."""


def _ignored_signals(mask: int) -> set[int]:
    return {sig for sig in range(1, 65) if mask & (1 << (sig - 1))}


# -- no busy polling -------------------------------------------------------------

def _context_switches(pid: int) -> int:
    """Voluntary + involuntary context switches of every thread of `pid`."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except FileNotFoundError:
            continue  # a thread that just ended
    return total


def _wait_until_settled(pid: int, what: str, timeout: float = 60.0) -> None:
    """Until the proxy's threads sit in their first wait: no context switch over a short look.

    A condition, not a fixed sleep: on a loaded machine the threads reach
    their blocking wait later, and their start-up switches must not be
    counted as idle wake-ups.
    """
    from wrapagent.proxy.supervisor import AFTER_START_WAIT_SECS

    end = time.monotonic() + timeout
    last = _context_switches(pid)
    while time.monotonic() < end:
        # Longer than the wait for a first output: a quiet tool's session setup comes after it.
        time.sleep(AFTER_START_WAIT_SECS + 0.3)
        now = _context_switches(pid)
        if now == last:
            return
        last = now
    raise AssertionError(f"{what} never settled within {timeout:.0f} s")


def test_no_wakeups_while_idle(run_wrapagent, tmp_path):
    """Bare proxy and full mode (default config, no guards): 0 wakeups/s with an idle child.

    Both run at once to keep the suite fast; each gets its own 2 s window.
    """
    runs = {"--no-hooks": run_wrapagent(NO_HOOKS, "sleep", "60", cwd=tmp_path),
            "full mode": run_wrapagent("sleep", "60", cwd=tmp_path)}
    procs = {name: psutil.Process(child.pid) for name, child in runs.items()}
    for name, proc in procs.items():
        _wait_for(lambda: any(c.name() == "sleep" for c in proc.children(recursive=True)), what=f"{name} child")
        # the copy threads exist once the terminal is raw and the loop runs
        _wait_for(lambda: is_raw(runs[name].child_fd) and proc.num_threads() >= 3,
                  timeout=30, what=f"{name} loop")
    for name, proc in procs.items():
        _wait_until_settled(proc.pid, what=f"{name} threads")
    before = {name: _context_switches(proc.pid) for name, proc in procs.items()}
    time.sleep(2.0)
    after = {name: _context_switches(proc.pid) for name, proc in procs.items()}
    for name, proc in procs.items():
        assert any(c.name() == "sleep" for c in proc.children(recursive=True)), f"{name}: window not idle"
    wakeups = {name: after[name] - before[name] for name in procs}
    assert all(n <= 2 for n in wakeups.values()), wakeups
    for proc in procs.values():
        for c in proc.children(recursive=True):
            c.terminate()  # the idle child; a long sleep so no load can end it inside the window
    for child in runs.values():
        assert child.finish() == 128 + signal.SIGTERM


# -- no orphans ------------------------------------------------------------------------

def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_no_orphans_left_in_the_childs_session(run_wrapagent):
    """Background jobs the child leaves in its session die with the session, even
    if they ignore SIGHUP (and SIGTERM), hold the terminal, or sit in their own
    process group (job control)."""
    script = ('trap "" HUP; sleep 300 & echo BG1=$!; '
              'trap "" TERM; sleep 301 & echo BG2=$!; '
              'set -m; sleep 302 & echo BG3=$!; '
              'exit 5')
    child = run_wrapagent(NO_HOOKS, "sh", "-c", script)
    pids = []
    for n in (1, 2, 3):
        child.expect(rb"BG%d=(\d+)" % n)
        pids.append(int(child.match.group(1)))
    try:
        assert child.finish(timeout=120) == 5  # drained without waiting for the sleeps (300 s)
        # SIGKILL is sent before wrapagent exits; the kernel finishes it a moment later.
        _wait_for(lambda: not [pid for pid in pids if _alive(pid)], timeout=30,
                  what=f"leftovers {pids} gone")
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_leftover_that_keeps_writing_does_not_keep_wrapagent_alive(run_wrapagent):
    """A background job that ignores SIGHUP and writes to the terminal every 50 ms
    (a dev server's log) must not hold wrapagent open after the tool exited."""
    script = ('trap "" HUP; (while :; do echo spam; sleep 0.05; done) & echo BG=$!; '
              'sleep 0.2; echo TOOL-DONE; exit 4')
    child = run_wrapagent(NO_HOOKS, "sh", "-c", script)
    child.expect(rb"BG=(\d+)")
    pid = int(child.match.group(1))
    try:
        child.expect(b"TOOL-DONE")
        # the job writes forever: that wrapagent ends at all is the point
        assert child.finish(timeout=60) == 4
        assert not _alive(pid)
    finally:
        if _alive(pid):
            os.killpg(os.getpgid(pid), signal.SIGKILL)


def test_daemon_left_on_purpose_survives(run_wrapagent):
    """A process the child moved to its own session (setsid) was left on purpose."""
    # wait until setsid() happened (field 6 of /proc/PID/stat is the session),
    # or the test races the child's exit
    script = ('setsid sleep 303 & bg=$!; '
              'until [ "$(cut -d" " -f6 /proc/$bg/stat)" = "$bg" ]; do :; done; '
              'echo BG=$bg; exit 0')
    child = run_wrapagent(NO_HOOKS, "sh", "-c", script)
    child.expect(rb"BG=(\d+)")
    pid = int(child.match.group(1))
    try:
        assert child.finish(timeout=120) == 0
        assert _alive(pid)  # wrapagent ended while the daemon runs on: it did not wait for it
        assert psutil.Process(pid).cmdline() == ["sleep", "303"]
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


# -- the session record (full mode) ---------------------------------------------------

def _records(state: Path) -> list[tuple[Path, dict]]:
    return [(p, json.loads(p.read_text()))
            for p in sorted(state.glob("wrapagent/projects/*/*/session.json"))]


def _git_log(repo: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "log", "--format=%s"], capture_output=True,
                         text=True, check=True)
    return out.stdout.splitlines()


def test_session_record_and_commit(run_wrapagent, tmp_path, isolated_home):
    # The child burns CPU until its own clock says 0.2 s: the same amount on
    # any machine, fast or slow (a fixed loop count was 0.2 s only on one).
    burn = shlex.join([sys.executable, "-c",
                       "import time\nwhile time.process_time() < 0.2: pass"])
    script = f'echo "SID=$WRAPAGENT_SESSION_ID"; {burn}; exit 3'
    child = run_wrapagent("sh", "-c", script, cwd=tmp_path)
    assert child.finish() == 3
    sid = re.search(rb"SID=(\w+)\r\n", child.output).group(1).decode()
    (path, rec), = _records(isolated_home / "state")
    assert path.parent.name == sid == rec["id"]
    assert rec["tool"] == "sh"
    assert rec["argv"] == ["sh", "-c", script]
    assert rec["mode"] == "pty"
    assert rec["state"] == "finished"
    assert rec["exit_code"] == 3 and rec["signal"] is None
    # wait4's rusage counts the reaped child tree: at least what it burnt, and
    # (one thread at a time) no more than the wall time, to a clock tick
    assert rec["cpu_seconds"] >= 0.2
    assert rec["cpu_seconds"] <= rec["duration_s"] + 0.05
    assert rec["peak_rss_bytes"] > 100_000  # sh's, from wait4: kilobytes turned into bytes
    assert rec["project_root"] == str(tmp_path.resolve())
    assert f"session {sid} complete" in _git_log(path.parent.parent)


def test_session_record_saved_and_committed_on_sighup(run_wrapagent, tmp_path, isolated_home):
    child = run_wrapagent("sh", "-c", "echo READY; exec sleep 30", cwd=tmp_path)
    child.expect(b"READY")
    child.kill(signal.SIGHUP)
    assert child.finish() == 128 + signal.SIGHUP
    (path, rec), = _records(isolated_home / "state")
    assert rec["state"] == "finished"
    assert rec["exit_code"] == 128 + signal.SIGHUP and rec["signal"] == signal.SIGHUP
    assert rec["ended_at"] is not None
    assert f"session {rec['id']} complete" in _git_log(path.parent.parent)


# -- the terminal goes away; the child closes its terminal ---------------------------------

def test_terminal_closed_under_wrapagent(run_wrapagent, tmp_path, isolated_home):
    """The user closes the window: wrapagent gets SIGHUP and EIO on the terminal,
    passes the hang-up on, waits for the child, saves and commits the record."""
    child = run_wrapagent(*helper("sigtrap.py"), cwd=tmp_path)
    child.expect(rb"READY pid=(\d+)")
    pid = int(child.match.group(1))
    wrapagent_proc = psutil.Process(child.pid)
    # Hang up: the outer PTY's master goes away. Through pexpect's own file
    # object, marked closed, so its __del__ can't close a reused fd number later.
    child.ptyproc.fileobj.close()
    child.ptyproc.closed = child.closed = True
    child.child_fd = -1
    assert wrapagent_proc.wait(timeout=5) == 100 + signal.SIGHUP
    assert not _alive(pid)
    (path, rec), = _records(isolated_home / "state")
    assert (rec["state"], rec["exit_code"]) == ("finished", 100 + signal.SIGHUP)
    assert f"session {rec['id']} complete" in _git_log(path.parent.parent)


def test_child_that_closes_its_terminal_is_still_waited_for(run_wrapagent):
    """EIO on the master before the child exits: keep waiting, keep its exit code."""
    child = run_wrapagent(NO_HOOKS, "sh", "-c",
                          "echo CLOSING; exec </dev/null >/dev/null 2>&1; sleep 0.3; exit 4")
    child.expect(b"CLOSING")
    assert child.finish() == 4  # the child's own code, set after the EIO: wrapagent kept waiting for it
