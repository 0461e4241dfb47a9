"""wrapagent/portable.py: the waits and the process listing, in Linux and in macOS mode."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from platform_modes import platform_mode  # noqa: F401 - autouse: Linux and macOS paths
from wrapagent import portable


def test_platform_override_is_read_at_import():
    code = "from wrapagent import portable as p; print(p.PLATFORM, p.DARWIN, p.USE_POLL)"
    for mode, expected in (("darwin", "darwin True False"), ("linux", "linux False True")):
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "WRAPAGENT_PLATFORM": mode},
                             capture_output=True, text=True, check=True).stdout.split()
        assert " ".join(out) == expected


def test_waiter_uses_select_in_macos_mode(platform_mode):
    assert (portable.Waiter()._poller is None) == (platform_mode == "darwin")


def test_waiter_reports_readable_and_writable_fds():
    r, w = os.pipe()
    try:
        waiter = portable.Waiter()
        waiter.watch((r,), (w,))
        assert waiter.wait(10.0) == ([], [w])  # empty pipe: writable, not readable
        os.write(w, b"x")
        readable, writable = waiter.wait(10.0)
        assert readable == [r] and writable == [w]
        waiter.watch((r,))  # no longer asks about w
        assert waiter.wait(10.0) == ([r], [])
    finally:
        os.close(r)
        os.close(w)


def test_waiter_ready_fd_sleeps_until_one_watched_fd_is_readable():
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    try:
        waiter = portable.Waiter()
        waiter.watch((r1, r2))
        got: list[int] = []
        sleeper = threading.Thread(target=lambda: got.append(waiter.ready_fd()))
        sleeper.start()
        os.write(w2, b"x")  # wakes it whether it is already asleep or not
        sleeper.join(10.0)
        assert got == [r2]
        os.write(w1, b"x")
        assert waiter.ready_fd() in (r1, r2)  # both readable: either one
        os.read(r2, 1)
        assert waiter.ready_fd() == r1
        os.close(w1)
        w1 = -1
        os.read(r1, 1)
        assert waiter.ready_fd() == r1  # end of file counts as readable: the read tells
    finally:
        for fd in (r1, w1, r2, w2):
            if fd >= 0:
                os.close(fd)


def test_waiter_times_out_with_nothing_ready():
    r, w = os.pipe()
    try:
        waiter = portable.Waiter()
        waiter.watch((r,))
        assert waiter.wait(0.01) == ([], [])
    finally:
        os.close(r)
        os.close(w)


def test_waiter_sees_a_hang_up_as_readable():
    """The writer closed: readable, so the read that follows sees EOF (as EIO on a PTY master)."""
    master, slave = os.openpty()
    try:
        waiter = portable.Waiter()
        waiter.watch((master,))
        os.close(slave)
        slave = -1
        assert waiter.wait(10.0)[0] == [master]
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)


def test_session_leftovers_lists_the_session_only():
    # a session leader with one background job; its pid is the session id
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE,
                              start_new_session=True, text=True)
    try:
        job = int(leader.stdout.readline())
        found = portable.session_leftovers(leader.pid)
        assert job in found
        assert leader.pid not in found and os.getpid() not in found
        assert job not in portable.session_leftovers(os.getsid(0))  # not in ours
    finally:
        os.killpg(leader.pid, 9)
        leader.wait()


def test_alive_is_false_for_a_zombie_and_after_reaping():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # exited, left unreaped: a zombie
        os.kill(pid, 0)  # the pid still exists (a naive check would call it alive)
        assert not portable.alive(pid)
    finally:
        os.waitpid(pid, 0)
    assert not portable.alive(pid)
    assert portable.alive(os.getpid())


def test_group_alive_ignores_zombies_and_other_groups():
    # A group leader with one member; both exit but stay unreaped (zombies): the group is not alive.
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE,
                              start_new_session=True, text=True)
    try:
        job = int(leader.stdout.readline())
        assert portable.group_alive(leader.pid)
        assert not portable.group_alive(leader.pid + 1_000_000)  # no such group
        os.kill(job, 9)
        os.kill(leader.pid, 9)
        os.waitid(os.P_PID, leader.pid, os.WEXITED | os.WNOWAIT)  # the leader is a zombie now
        # the orphaned job is reaped by init, in its own time: wait for the condition, not a duration
        for _ in range(2000):
            if not portable.group_alive(leader.pid):
                break
            time.sleep(0.005)
        assert not portable.group_alive(leader.pid)
    finally:
        try:
            os.killpg(leader.pid, 9)
        except ProcessLookupError:
            pass
        leader.wait()


def test_prepare_sweep_loads_psutil_only_in_macos_mode(platform_mode):
    code = ("import sys, time; from wrapagent import portable; portable.prepare_sweep(); "
            "end = time.monotonic() + 30\n"
            "while 'psutil' not in sys.modules and portable.DARWIN and time.monotonic() < end: time.sleep(0.005)\n"
            "print('psutil' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "WRAPAGENT_PLATFORM": platform_mode},
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == str(platform_mode == "darwin")


def test_process_start_time_agrees_with_psutil_and_is_none_when_gone():
    import psutil

    started = portable.process_start_time(os.getpid())
    assert started is not None
    # /proc's clock ticks (Linux path) and psutil (macOS path) describe the same moment
    assert abs(started - psutil.Process(os.getpid()).create_time()) < 1.0
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert portable.process_start_time(proc.pid) is None


def test_group_open_files_lists_what_the_group_holds_open(tmp_path):
    """What a git killed at its time limit was writing: its group's open files, nobody else's."""
    held = tmp_path / "tmp_pack_held"
    other = tmp_path / "tmp_pack_other"
    member = subprocess.Popen(["sh", "-c", f"exec 3>'{held}'; echo ready; exec sleep 60"],
                              stdout=subprocess.PIPE, start_new_session=True, text=True)
    outsider = subprocess.Popen(["sh", "-c", f"exec 3>'{other}'; echo ready; exec sleep 60"],
                                stdout=subprocess.PIPE, start_new_session=True, text=True)
    try:
        assert member.stdout.readline() == outsider.stdout.readline() == "ready\n"
        found = {os.path.realpath(p) for p in portable.group_open_files(member.pid)}
        assert os.path.realpath(held) in found
        assert os.path.realpath(other) not in found
    finally:
        for proc in (member, outsider):
            os.killpg(proc.pid, 9)
            proc.wait()


def test_processes_naming_finds_by_folder_and_by_argument(tmp_path):
    """A stale index.lock is one no live process working there (cwd) or naming it (argv) can hold."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "sub").mkdir()
    in_it = subprocess.Popen(["sleep", "60"], cwd=folder / "sub")
    naming = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", f"--git-dir={folder}/.git"])
    try:
        # a process just started may still show its parent's argv for a moment: wait for it
        deadline = time.monotonic() + 30
        while True:
            found = portable.processes_naming(os.path.realpath(folder))
            if {in_it.pid, naming.pid} <= set(found) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        assert in_it.pid in found and naming.pid in found
        assert os.getpid() not in found
        assert portable.processes_naming(str(tmp_path / "nowhere")) == []
    finally:
        for proc in (in_it, naming):
            proc.kill()
            proc.wait()
    assert in_it.pid not in portable.processes_naming(os.path.realpath(folder))
