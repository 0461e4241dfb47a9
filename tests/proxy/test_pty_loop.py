"""The proxy <-> interceptor contract (v2), checked through the real loop in-process.

`pty_loop.run` gets a PTY pair the test owns as the user's terminal (its
slave is the loop's stdin and stdout; the test types into and reads from the
master), a real child (tests/helpers/rawbytes.py: prints `GOT xx` for every
byte it reads, ends on `q`) and a scripted interceptor that records every
call. Every wait is for a condition, with a generous timeout.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys
import termios
import threading
import time

import psutil
import pytest

from conftest import helper
from platform_modes import platform_mode  # noqa: F401 - autouse: Linux and macOS paths
from wrapagent.errors import ToolNotExecutable, ToolNotFound
from wrapagent.proxy import pty_loop, spawn

TIMEOUT = 20.0


class UserTerminal:
    """The user's side: a PTY whose master the test holds, read by a thread of its own."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        self.output = bytearray()
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self.cond:
                self.output += data
                self.cond.notify_all()

    def wait_for(self, marker: bytes, timeout: float = TIMEOUT) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: marker in self.output, timeout):
                raise AssertionError(f"{marker!r} not seen; output so far: {bytes(self.output)!r}")

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def close(self) -> None:
        # Slave first: the reader sees EIO and ends; only then may the master's
        # fd number be reused (a reader still running would read the next test's PTY).
        os.close(self.slave)
        self.reader.join(TIMEOUT)
        assert not self.reader.is_alive()
        os.close(self.master)


def wait_until(predicate, timeout: float = TIMEOUT, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


class Recorder:
    """An interceptor that records calls and fails if two ever overlap."""

    def __init__(self) -> None:
        self.done = False
        self.watch_output = False
        self.last_output = 0.0
        self.calls: list[str] = []
        self.outputs: list[bytes] = []
        self.inputs: list[bytes] = []
        self.overlaps = 0
        self._busy = threading.Lock()
        self._deadline: float | None = None
        self._wake: int | None = None
        self.due = bytearray()

    def _enter(self, name: str) -> None:
        if not self._busy.acquire(blocking=False):
            self.overlaps += 1
            return
        self.calls.append(name)
        self._busy.release()

    def on_input(self, data: bytes, now: float) -> bytes:
        self._enter("on_input")
        self.inputs.append(data)
        return data

    def on_output(self, data: bytes, now: float) -> None:
        self._enter("on_output")
        self.outputs.append(data)

    def poll(self, now: float) -> bytes:
        self._enter("poll")
        out, self.due[:] = bytes(self.due), b""
        return out

    def deadline(self) -> float | None:
        self._enter("deadline")
        return self._deadline

    def wake_fd(self) -> int | None:
        self._enter("wake_fd")
        return self._wake


def run_loop(interceptor, term: UserTerminal, script, on_output=None) -> pty_loop.ProxyResult:
    """Run the real loop on `term` with rawbytes.py; `script(term)` drives it from a thread."""
    failure: list[BaseException] = []

    def drive() -> None:
        try:
            term.wait_for(b"READY\r\n")
            script(term)
        except BaseException as exc:  # reported by the test, after the loop ended
            failure.append(exc)
        finally:
            term.type(b"q")  # ends the child either way

    driver = threading.Thread(target=drive, daemon=True)
    driver.start()
    result = pty_loop.run(helper("rawbytes.py"), env=dict(os.environ), stdin_fd=term.slave,
                          stdout_fd=term.slave, interceptor=interceptor, on_output=on_output)
    driver.join(TIMEOUT)
    if failure:
        raise failure[0]
    return result


@pytest.fixture
def term():
    t = UserTerminal()
    yield t
    t.close()


def test_steady_state_output_costs_a_timestamp_only(term):
    """watch_output false: no on_output call, no copy; last_output moves; input still seen."""
    icpt = Recorder()

    def script(t: UserTerminal) -> None:
        before = time.monotonic()
        t.type(b"a")
        t.wait_for(b"GOT 61\r\n")
        wait_until(lambda: icpt.last_output >= before, what="last_output stored")

    result = run_loop(icpt, term, script)
    assert result.exit_code == 0
    assert "on_output" not in icpt.calls
    assert b"a" in b"".join(icpt.inputs)
    assert icpt.overlaps == 0


def test_watch_output_gets_every_byte_once(term):
    """watch_output true: on_output sees exactly what the user saw, in order."""
    icpt = Recorder()
    icpt.watch_output = True

    def script(t: UserTerminal) -> None:
        t.type(b"xyz")
        t.wait_for(b"GOT 7a\r\n")

    run_loop(icpt, term, script)
    seen = b"".join(icpt.outputs)
    term.wait_for(b"GOT 71\r\n")  # the test's reader has caught up with the last write (the `q`)
    assert seen == bytes(term.output)[:len(seen)]
    assert b"GOT 78\r\nGOT 79\r\nGOT 7a\r\n" in seen
    assert icpt.overlaps == 0


def test_an_output_observer_hands_over_to_the_one_it_returns(term):
    """The recording's stand-in returns the recorder once it exists: from the next chunk on only
    the recorder is called, and the two together saw every byte the user saw, once, in order."""
    first: list[bytes] = []
    then: list[bytes] = []

    def successor(data: bytearray) -> None:
        then.append(bytes(data))

    def stand_in(data: bytearray):
        first.append(bytes(data))
        return successor

    def script(t: UserTerminal) -> None:
        t.type(b"xyz")
        t.wait_for(b"GOT 7a\r\n")

    run_loop(None, term, script, on_output=stand_in)
    term.wait_for(b"GOT 71\r\n")
    assert len(first) == 1 and then  # called once, then never again
    seen = b"".join(first + then)
    assert seen == bytes(term.output)[:len(seen)] and b"GOT 7a\r\n" in seen


class Holder(Recorder):
    """Holds every key and releases it at a deadline it sets in on_input."""

    HOLD = 0.05

    def __init__(self) -> None:
        super().__init__()
        self.held = bytearray()
        self.released_at: float | None = None

    def on_input(self, data: bytes, now: float) -> bytes:
        super().on_input(data, now)
        self.held += data
        self._deadline = now + self.HOLD  # set from the input thread: the main thread must wake for it
        return b""

    def poll(self, now: float) -> bytes:
        super().poll(now)
        if self._deadline is not None and now >= self._deadline:
            self._deadline = None
            self.released_at = now
            out, self.held[:] = bytes(self.held), b""
            return out
        return b""


def test_deadline_set_by_an_input_call_wakes_the_loop(term):
    icpt = Holder()
    typed: list[float] = []

    def script(t: UserTerminal) -> None:
        typed.append(time.monotonic())
        t.type(b"h")
        t.wait_for(b"GOT 68\r\n")

    run_loop(icpt, term, script)
    assert icpt.released_at is not None and icpt.released_at >= typed[0] + Holder.HOLD
    assert icpt.overlaps == 0


class WakeOnPipe(Recorder):
    """Sends what the test queued when its wake fd turns readable (a guard finished)."""

    def __init__(self) -> None:
        super().__init__()
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        self._wake = self.r

    def poll(self, now: float) -> bytes:
        super().poll(now)
        try:
            os.read(self.r, 100)
        except BlockingIOError:
            return b""
        self._wake = None  # nothing more to wait for
        return b"w"


def test_wake_fd_makes_the_loop_poll(term):
    icpt = WakeOnPipe()

    def script(t: UserTerminal) -> None:
        os.write(icpt.w, b"!")
        t.wait_for(b"GOT 77\r\n")

    run_loop(icpt, term, script)
    os.close(icpt.r)
    os.close(icpt.w)
    assert icpt.overlaps == 0


class OneShot(Recorder):
    """Done after the first key (as the injector in first-message mode is)."""

    def on_input(self, data: bytes, now: float) -> bytes:
        super().on_input(data, now)
        self.done = True
        return data


def test_done_interceptor_is_never_called_again(term):
    icpt = OneShot()
    icpt.watch_output = True

    def script(t: UserTerminal) -> None:
        t.type(b"1")
        t.wait_for(b"GOT 31\r\n")
        calls = len(icpt.calls)
        t.type(b"2")
        t.wait_for(b"GOT 32\r\n")
        assert len(icpt.calls) == calls

    run_loop(icpt, term, script)
    assert icpt.inputs == [b"1"]


def test_poll_bytes_follow_what_is_queued(term):
    """on_input's bytes, then poll's, in that order, even from two calls in one pass."""

    class Appender(Recorder):
        def on_input(self, data: bytes, now: float) -> bytes:
            super().on_input(data, now)
            self.due += b"+"
            return data

    icpt = Appender()

    def script(t: UserTerminal) -> None:
        t.type(b"a")
        t.wait_for(b"GOT 2b\r\n")

    run_loop(icpt, term, script)
    out = bytes(term.output)
    assert out.index(b"GOT 61") < out.index(b"GOT 2b")


def test_keys_the_child_does_not_read_yet_are_queued_and_all_delivered(term, tmp_path):
    """No interceptor: typed far more than the child's PTY holds while it reads nothing.

    The keystroke path writes straight to the master until a write falls
    short; the rest is queued and sent, in order, once the child reads.
    """
    release = tmp_path / "release"
    typed = bytes(range(32, 127)) * 3000  # 285 KB, printable: beyond any PTY buffer
    failure: list[BaseException] = []

    def drive() -> None:
        try:
            term.wait_for(b"READY\r\n")
            term.type(typed)  # returns once wrapagent took it all (it keeps reading while it queues)
            release.touch()
            term.wait_for(b"SUM ")
        except BaseException as exc:
            failure.append(exc)
            release.touch()
            term.type(b"!" * len(typed))  # enough for the child to end, whatever it got

    driver = threading.Thread(target=drive, daemon=True)
    driver.start()
    result = pty_loop.run(helper("late_reader.py", str(release), str(len(typed))), env=dict(os.environ),
                          stdin_fd=term.slave, stdout_fd=term.slave)
    driver.join(TIMEOUT)
    if failure:
        raise failure[0]
    assert result.exit_code == 0
    term.wait_for(b"SUM %s %d\r\n" % (hashlib.sha256(typed).hexdigest().encode(), len(typed)))


def test_keys_typed_after_the_child_exited_stay_in_the_terminal(term):
    """Keys typed once the child is gone belong to whoever reads the terminal next (the shell)."""
    result = run_loop(None, term, lambda t: None)
    assert result.exit_code == 0
    term.type(b"after\r")  # the terminal is cooked again: a line
    os.set_blocking(term.slave, False)
    got = b""
    end = time.monotonic() + TIMEOUT
    while not got.endswith(b"\n") and time.monotonic() < end:
        try:
            got += os.read(term.slave, 100)
        except BlockingIOError:
            time.sleep(0.005)
    assert got == b"after\n"


def test_no_copy_thread_left_after_run(term):
    me = psutil.Process()
    before = me.num_threads()  # the test's own terminal reader included
    run_loop(None, term, lambda t: None)
    wait_until(lambda: me.num_threads() <= before, what="the driver thread to end")
    assert me.num_threads() == before


# -- spawn: the child's start, and exec failures reported in the parent ---------------------

def _read_until_gone(master: int) -> bytes:
    """All the child wrote, until EIO (every slave fd closed); closes `master`."""
    out = b""
    try:
        while True:
            try:
                chunk = os.read(master, 1024)
            except OSError:  # EIO: the child is gone
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    return out


@pytest.mark.parametrize("cwd", [None, "/"])
def test_spawned_tool_is_a_job_of_its_leader_on_a_sized_terminal(cwd):
    """The PTY is the tool's controlling terminal and its group the foreground one (Ctrl-C reaches
    it), its size set before it runs; its parent leads the session from another group, so the
    tool's group is not orphaned (a Ctrl-Z of the tool stops it)."""
    code = ("import os, sys, fcntl, termios, struct;"
            "r, c = struct.unpack('HHHH', fcntl.ioctl(0, termios.TIOCGWINSZ, b'0' * 8))[:2];"
            "print(r, c, os.getsid(0) == os.getppid(), os.getpgrp() == os.getpid(),"
            " os.getpgid(os.getppid()) != os.getpgrp(), os.tcgetpgrp(0) == os.getpgrp(),"
            " os.ttyname(0) == os.ttyname(1) == os.ttyname(2), os.getcwd())")
    pid, tool, master = spawn.spawn([sys.executable, "-c", code], env=dict(os.environ), cwd=cwd, size=(31, 97))
    out = _read_until_gone(master)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert out == f"31 97 True True True True True {cwd or os.getcwd()}\r\n".encode()
    assert tool != pid


@pytest.mark.parametrize("code, expected", [("raise SystemExit(7)", 7), ("import os; os.kill(os.getpid(), 15)", -15)])
def test_the_leader_ends_as_the_tool_did(code, expected):
    """wrapagent waits for the leader: its status is the tool's exit code or the signal that ended it."""
    pid, _, master = spawn.spawn([sys.executable, "-c", code], env=dict(os.environ), cwd=None, size=(24, 80))
    _read_until_gone(master)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == expected


@pytest.mark.parametrize("case, error, message", [
    ("missing", ToolNotFound, "command not found"),
    ("bad-interpreter", ToolNotFound, "required file not found"),
    ("not-executable", ToolNotExecutable, "Permission denied"),
])
def test_exec_failure_is_raised_in_the_parent(tmp_path, case, error, message):
    if case == "missing":
        argv = ["no-such-tool-anywhere-xyz"]
    else:
        path = tmp_path / case
        path.write_text("#!/no/such/interpreter\n")
        path.chmod(0o755 if case == "bad-interpreter" else 0o644)
        argv = [str(path)]
    with pytest.raises(error, match=message):
        spawn.spawn(argv, env=dict(os.environ), cwd=None, size=(24, 80))


# -- the output thread started before the proxy loads (`output_start`, the launch path) -------

def test_an_output_thread_started_early_copies_the_first_bytes_unchanged_and_is_adopted(term):
    """The terminal goes raw before the first byte can be copied: a tool's `a\nb` at once arrives
    as the tool's terminal made it (`a\r\nb`), not passed through the user's ONLCR a second time."""
    from wrapagent.proxy import output_start

    before = termios.tcgetattr(term.slave)
    child = spawn.start(["sh", "-c", "printf 'a\\nb'; sleep 0.2; printf END"], env=dict(os.environ),
                        stdin_fd=term.slave, stdout_fd=term.slave)
    seen: list[bytes] = []
    started = output_start.start(child, stdin_fd=term.slave, stdout_fd=term.slave,
                                 on_output=lambda chunk: seen.append(bytes(chunk)))
    assert sys.getswitchinterval() == pytest.approx(output_start.EARLY_SWITCH_INTERVAL)
    result = pty_loop.proxy(child, stdin_fd=term.slave, stdout_fd=term.slave, started=started)
    term.wait_for(b"END")
    assert result.exit_code == 0
    assert bytes(term.output) == b"a\r\nbEND" and b"".join(seen) == b"a\r\nbEND"
    assert termios.tcgetattr(term.slave) == before  # the user's settings, saved before going raw
    assert sys.getswitchinterval() == pytest.approx(0.005)  # put back


def test_an_output_thread_started_early_for_a_tool_whose_exec_failed_stops_and_gives_the_terminal_back(
        term, tmp_path):
    from wrapagent.proxy import output_start

    before = termios.tcgetattr(term.slave)
    path = tmp_path / "not-executable"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o644)
    child = spawn.start([str(path)], env=dict(os.environ), stdin_fd=term.slave, stdout_fd=term.slave)
    started = output_start.start(child, stdin_fd=term.slave, stdout_fd=term.slave)
    with pytest.raises(ToolNotExecutable, match="Permission denied"):
        child.check_exec()
    assert not started.thread.is_alive() and started.st.stop_output
    assert termios.tcgetattr(term.slave) == before
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_an_early_output_thread_abandoned_while_its_tool_runs_gives_the_terminal_back(term):
    """A start interrupted before the proxy adopted the thread: the terminal is the user's again."""
    from wrapagent.proxy import output_start

    before = termios.tcgetattr(term.slave)
    child = spawn.start(["sh", "-c", "printf up; exec sleep 30"], env=dict(os.environ),
                        stdin_fd=term.slave, stdout_fd=term.slave)
    started = output_start.start(child, stdin_fd=term.slave, stdout_fd=term.slave)
    term.wait_for(b"up")
    assert termios.tcgetattr(term.slave) != before  # raw meanwhile
    started.abandon()
    assert termios.tcgetattr(term.slave) == before and started.st.stop_output
    assert sys.getswitchinterval() == pytest.approx(0.005)
    child.check_exec()  # (it exec'd: the tool's pid)
    os.killpg(child.tool_pid, signal.SIGKILL)
    os.waitpid(child.pid, 0)  # the leader ends as its tool did
    assert started.thread.join(TIMEOUT)  # the terminal's end reached the abandoned thread
    started.st.close_pipes()
    os.close(child.master)
    child.signals.close()


# -- after_start: work beside the running copy threads (a session's record) ------------------

def test_after_start_runs_while_the_child_output_is_already_copied(term):
    """The child's first bytes reach the user while `after_start` is still running."""
    seen_during: list[bool] = []

    def work() -> None:
        term.wait_for(b"READY\r\n")  # would time out if copying waited for `work` to end
        seen_during.append(True)
        term.type(b"q")

    child = spawn.start(helper("rawbytes.py"), env=dict(os.environ), stdin_fd=term.slave,
                        stdout_fd=term.slave)
    result = pty_loop.proxy(child, stdin_fd=term.slave, stdout_fd=term.slave, after_start=work)
    assert seen_during == [True] and result.exit_code == 0
    assert sys.getswitchinterval() == pytest.approx(0.005)  # put back


def test_after_start_failing_ends_the_child_and_restores_the_terminal(term):
    before = termios.tcgetattr(term.slave)
    pids: list[int] = []

    def work() -> None:
        term.wait_for(b"READY\r\n")
        raise RuntimeError("record could not be written")

    child = spawn.start(helper("rawbytes.py"), env=dict(os.environ), stdin_fd=term.slave,
                        stdout_fd=term.slave)
    pids.append(child.pid)
    with pytest.raises(RuntimeError, match="record could not be written"):
        pty_loop.proxy(child, stdin_fd=term.slave, stdout_fd=term.slave, after_start=work)
    assert not psutil.pid_exists(pids[0]) or psutil.Process(pids[0]).status() == psutil.STATUS_ZOMBIE
    assert termios.tcgetattr(term.slave) == before


class ReleasesOnWake(Recorder):
    """Holds every key; when its wake fd fires, releases them all and is done (the injector in
    first-message mode)."""

    def __init__(self) -> None:
        super().__init__()
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        self._wake = self.r
        self.held = bytearray()
        self._done = False
        self.done_seen = threading.Event()

    @property
    def done(self) -> bool:  # the loop reads it right before it drops the interceptor
        if self._done:
            self.done_seen.set()
        return self._done

    @done.setter
    def done(self, value: bool) -> None:
        self._done = value

    def on_input(self, data: bytes, now: float) -> bytes:
        super().on_input(data, now)
        self.held += data
        return b""

    def poll(self, now: float) -> bytes:
        super().poll(now)
        try:
            os.read(self.r, 100)
        except BlockingIOError:
            return b""
        self._done = True
        out, self.held[:] = bytes(self.held), b""
        return out


def test_a_key_read_while_the_interceptor_finishes_goes_behind_what_it_released(term, monkeypatch):
    """Typed `a b` (held), then `c`: the interceptor releases `a b` and is dropped by the main
    thread WHILE `c` is being read. The child must get `a b c`.

    The interleaving is forced: the read of `c` (in the input thread) fires the wake fd and
    returns only once the main thread has dropped the interceptor and is back in its wait.
    Before `to_child` enforced the order, the keystroke path checked only "no interceptor"
    and wrote `c` straight to the child, ahead of the queued `a b`: `GOT 63` came first.
    """
    import sys as _sys

    icpt = ReleasesOnWake()
    main_id = threading.get_ident()
    real_read = os.read
    forced: list[bool] = []

    def main_thread_waits() -> bool:
        frame = _sys._current_frames().get(main_id)
        return frame is not None and frame.f_code.co_name in ("wait", "ready_fd")

    def read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        if fd == term.slave and data == b"c" and not forced:
            forced.append(True)
            os.write(icpt.w, b"!")
            assert icpt.done_seen.wait(TIMEOUT), "the main thread never polled"
            wait_until(main_thread_waits, what="the main thread back in its wait")
        return data

    def script(t: UserTerminal) -> None:
        t.type(b"a")
        wait_until(lambda: b"a" in icpt.held, what="a held")
        t.type(b"b")
        wait_until(lambda: b"ab" in icpt.held, what="b held")
        t.type(b"c")
        t.wait_for(b"GOT 63\r\n")

    monkeypatch.setattr(os, "read", read)
    run_loop(icpt, term, script)
    os.close(icpt.r)
    os.close(icpt.w)
    assert forced == [True]
    out = bytes(term.output)
    assert out.index(b"GOT 61") < out.index(b"GOT 62") < out.index(b"GOT 63")


def test_a_slow_terminal_gets_the_whole_tail_after_the_reap(term, monkeypatch):
    """The child writes a burst and exits while the user's side reads nothing (a slow link).

    The drain's limit (DRAIN_MAX_SECS, lowered here) counts while the output
    thread reads, not while its write waits for the terminal: the whole tail
    arrives. Before, the drain stopped DRAIN_MAX_SECS after the reap even with
    the last buffer still being written, and the rest of the child's output was lost.
    """
    import fcntl

    from wrapagent.proxy import output_thread

    monkeypatch.setattr(output_thread, "DRAIN_MAX_SECS", 0.2)
    if not hasattr(fcntl, "F_SETPIPE_SZ"):
        pytest.skip("needs a pipe smaller than the burst (F_SETPIPE_SZ: Linux)")
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 4096)  # the smallest pipe: wrapagent's write blocks early
    size = 12 * 1024  # fits the child's PTY buffer (~17 KiB), so the child exits; 3x the pipe
    pids: list[int] = []
    got = bytearray()
    failure: list[BaseException] = []

    def gone(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    def slow_user() -> None:
        try:
            wait_until(lambda: bool(pids) and gone(pids[0]), what="the child reaped")
            time.sleep(1.0)  # the link stays slow (not a check): 5x the drain's limit
            while True:
                data = os.read(r, 65536)
                if not data:
                    return
                got.extend(data)
        except BaseException as exc:
            failure.append(exc)

    reader = threading.Thread(target=slow_user, daemon=True)
    reader.start()
    result = pty_loop.run(helper("burst_exit.py", str(size)), env=dict(os.environ),
                          stdin_fd=term.slave, stdout_fd=w, on_spawn=pids.append)
    os.close(w)
    reader.join(TIMEOUT)
    os.close(r)
    if failure:
        raise failure[0]
    assert result.exit_code == 0
    line = b"0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789"
    assert bytes(got).endswith(b"TAIL-MARK"), bytes(got[-200:])
    assert got.count(line) == size // (len(line) + 1)


@pytest.mark.parametrize("modes_left_on", [True, False])
def test_modes_a_killed_child_left_on_are_turned_off(term, modes_left_on):
    """The kill grace SIGKILLs a TUI that ignores SIGTERM: the modes it turned on are undone.

    Only what is still on: a child that turned its modes off again gets nothing written.
    Before, only termios was restored, and the user's shell stayed on the alternate
    screen with mouse reporting, bracketed paste and kitty flags on, the cursor hidden.
    """
    failure: list[BaseException] = []
    argv = helper("sigtrap.py", "--ignore", "--modes")
    if not modes_left_on:
        argv = [sys.executable, "-c",
                "import os, subprocess, sys; os.write(1, b'\\x1b[?1049h\\x1b[?25l');"
                "os.write(1, b'\\x1b[?25h\\x1b[?1049l');"
                f"os.execv(sys.executable, {helper('sigtrap.py', '--ignore')!r})"]

    def drive() -> None:
        try:
            term.wait_for(b"READY pid=")
            os.kill(os.getpid(), signal.SIGTERM)  # forwarded to the child, which ignores it
            term.wait_for(b"GOT SIGTERM")
        except BaseException as exc:
            failure.append(exc)

    driver = threading.Thread(target=drive, daemon=True)
    driver.start()
    result = pty_loop.run(argv, env=dict(os.environ), stdin_fd=term.slave, stdout_fd=term.slave,
                          kill_grace=0.3)
    driver.join(TIMEOUT)
    if failure:
        raise failure[0]
    assert result.killed_after_grace and result.exit_code == 128 + signal.SIGKILL
    reset = b"\x1b[<1u\x1b[?25h\x1b[?1000l\x1b[?1006l\x1b[?2004l\x1b[?1049l"
    if modes_left_on:
        term.wait_for(b"GOT SIGTERM\r\n" + reset)
    else:
        term.wait_for(b"GOT SIGTERM\r\n")
        assert b"\x1b[?1049l" not in bytes(term.output).split(b"READY")[-1]


def test_mode_tracker_reads_sequences_cut_between_chunks():
    from wrapagent.proxy.terminal_modes import ModeTracker

    tracker = ModeTracker()
    stream = b"text\x1b[31mred\x1b[?1049h\x1b[?2004h more \x1b[>4;2m\x1b[?2004l\x1b[?1002h"
    for i in range(len(stream)):  # every place a chunk boundary can fall
        tracker = ModeTracker()
        first, second = bytearray(stream[:i]), bytearray(stream[i:])
        tracker.feed(first, len(first))
        tracker.feed(second, len(second))
        assert tracker.reset_sequence() == b"\x1b[>4;0m\x1b[?1002l\x1b[?1049l", i


def test_mode_tracker_reapplies_what_it_resets():
    """Job control turns the tool's modes off while the shell has the terminal and on again after `fg`:
    the alternate screen first, kitty flags pushed again with their values, modifyOtherKeys' level."""
    from wrapagent.proxy.terminal_modes import ModeTracker

    tracker = ModeTracker()
    data = b"\x1b[?1049h\x1b[?1000;1006h\x1b[?2004h\x1b[?25l\x1b[>1u\x1b[>5u\x1b[<1u\x1b[>4;2m"
    tracker.feed(data, len(data))
    assert tracker.reset_sequence() == (b"\x1b[<1u\x1b[>4;0m\x1b[?25h\x1b[?1000l\x1b[?1006l\x1b[?2004l"
                                        b"\x1b[?1049l")
    assert tracker.reapply_sequence() == (b"\x1b[?1049h\x1b[?25l\x1b[?1000h\x1b[?1006h\x1b[?2004h"
                                          b"\x1b[>1u\x1b[>4;2m")
    off = b"\x1b[?1049l\x1b[?1000;1006l\x1b[?2004l\x1b[?25h\x1b[<1u\x1b[>4;0m"
    tracker.feed(off, len(off))
    assert tracker.reset_sequence() == b"" and tracker.reapply_sequence() == b""
