"""Everything wrapagent does differently on macOS, in one place (any layer may import it).

Two differences matter:
- macOS `poll()` does not support devices (POLLNVAL on a tty or PTY fd, man
  page BUGS section); `select()` works on them. Linux uses `poll()` (no
  FD_SETSIZE limit on fd numbers), macOS `select()`.
- macOS has no `/proc`: the leftover sweep lists processes through psutil
  there (imported only when a sweep runs). Linux reads `/proc` directly,
  which costs nothing at start-up and about a millisecond at exit.

`WRAPAGENT_PLATFORM=darwin` makes Linux take the macOS paths, so the test
suite exercises them where macOS cannot run. The tool starts the same way on
both (`proxy/session_leader.py`: fork, a session leader, the tool in a group
of its own), so job control takes the same path too.
"""

import os
import sys

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Sequence

PLATFORM = os.environ.get("WRAPAGENT_PLATFORM") or sys.platform
"""`linux`, `darwin`, …; the override exists for tests only."""

DARWIN = PLATFORM.startswith("darwin")
USE_POLL = not DARWIN


class Waiter:
    """Wait until some fds are readable or writable: `poll()` on Linux, `select()` on macOS.

    The fds are registered once with `watch()` and the registration is kept
    across waits (a poll object is not rebuilt per wait), because the copy
    threads wait once per burst of output or per keystroke; `ready_fd()` is
    their per-key wait.
    """

    def __init__(self) -> None:
        import select  # here: this module is read before the tool starts, the waits come after

        self._select = select.select
        self._read: tuple[int, ...] = ()
        self._write: tuple[int, ...] = ()
        self._poller = select.poll() if USE_POLL else None
        self._registered: dict[int, int] = {}
        self._pollin, self._pollout = getattr(select, "POLLIN", 1), getattr(select, "POLLOUT", 4)
        if self._poller is not None:
            # A hang-up or error counts as readable: the read that follows reports it (EIO).
            failed = select.POLLHUP | select.POLLERR | select.POLLNVAL
            self._read_events, self._write_events = select.POLLIN | failed, select.POLLOUT | failed

    def watch(self, read: "Sequence[int]", write: "Sequence[int]" = ()) -> None:
        """Set the fds to wait for; cheap when nothing changed."""
        read, write = tuple(read), tuple(write)
        if read == self._read and write == self._write:
            return
        self._read, self._write = read, write
        poller = self._poller
        if poller is None:
            return
        want: dict[int, int] = {}
        for fd in read:
            want[fd] = self._pollin
        for fd in write:
            want[fd] = want.get(fd, 0) | self._pollout
        for fd in self._registered.keys() - want.keys():
            poller.unregister(fd)
        for fd, mask in want.items():
            if self._registered.get(fd) != mask:
                poller.register(fd, mask)  # register() also modifies
        self._registered = want

    def wait(self, timeout: "float | None") -> "tuple[list[int], list[int]]":
        """(readable fds, writable fds); both empty when `timeout` seconds passed first."""
        if self._poller is None:
            readable, writable, _ = self._select(self._read, self._write, (), timeout)
            return readable, writable
        events = self._poller.poll(None if timeout is None else max(0.0, timeout) * 1000.0)
        readable, writable = [], []
        read_events, write_events = self._read_events, self._write_events
        for fd, ev in events:
            if ev & read_events and fd in self._read:
                readable.append(fd)
            if ev & write_events and fd in self._write:
                writable.append(fd)
        return readable, writable

    def ready_fd(self) -> int:
        """Sleep until a watched fd is readable, with no timeout; one readable fd.

        For waits on read fds only (`watch(read)`, no write fds): the
        keystroke path of the copy threads, where a wait is the per-key cost.
        When several fds are readable, which one comes back is unspecified;
        the caller acts on it and waits again, and the others are still
        readable then. Every event poll() reports on an fd registered for
        POLLIN alone counts: data, hang-up, error or an invalid fd, which
        the read that follows reports. No list is built, no filter runs.
        """
        if self._poller is None:
            return self._select(self._read, (), ())[0][0]
        return self._poller.poll()[0][0]


def open_pty_peer(master: int) -> "int | None":
    """The terminal side of the PTY `master`, opened anew (non-blocking, not as a controlling
    terminal), or None. The output thread sleeps in a blocking read of the master; a byte
    written here wakes it when nothing else will (a quiet leftover still holds the terminal).

    By the real kernel, not by WRAPAGENT_PLATFORM: these are its ioctls. Linux >= 4.13 hands
    the peer out directly (TIOCGPTPEER); else its name: `os.ptsname` (Python 3.13+), TIOCGPTN
    (Linux: /dev/pts/N), TIOCPTYGNAME (macOS).
    """
    import fcntl

    flags = os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK
    if sys.platform.startswith("linux"):
        try:
            return fcntl.ioctl(master, 0x5441, flags)  # TIOCGPTPEER
        except OSError:
            pass
    name = None
    try:
        ptsname = getattr(os, "ptsname", None)
        if ptsname is not None:
            name = ptsname(master)
        elif sys.platform.startswith("linux"):
            number = int.from_bytes(fcntl.ioctl(master, 0x80045430, b"\0" * 4), sys.byteorder)  # TIOCGPTN
            name = f"/dev/pts/{number}"
        elif sys.platform == "darwin":
            name = fcntl.ioctl(master, 0x40807453, b"\0" * 128).split(b"\0")[0].decode()  # TIOCPTYGNAME
    except (OSError, ValueError):
        return None
    if not name:
        return None
    try:
        return os.open(name, flags)
    except OSError:
        return None


def prepare_sweep() -> None:
    """On macOS, import psutil in the background while the tool runs.

    The leftover sweep runs at every exit and needs psutil there; its import
    (~35 ms idle, more under load) would otherwise sit between the tool's
    exit and the user's prompt. Nothing to prepare on Linux.
    """
    if not DARWIN:
        return
    import _thread

    def load() -> None:
        try:
            import psutil  # noqa: F401 - cached in sys.modules for the sweep
        except Exception:  # the sweep reports nothing then; never a crash in a thread
            pass

    _thread.start_new_thread(load, ())


def session_leftovers(sid: int) -> "list[int]":
    """Processes still in session `sid` (the child was its leader), wrapagent and `sid` excepted.

    A process the child moved to its own session (a daemon it meant to
    leave behind) is not listed: that was left on purpose.
    """
    me = os.getpid()
    found = []
    for pid in _all_pids():
        if pid in (me, sid):
            continue
        try:
            if os.getsid(pid) == sid:
                found.append(pid)
        except OSError:
            continue  # gone, or not ours to ask about
    return found


def group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` is still running; zombies do not count.

    A hook's orphaned children are reaped by PID 1, which in containers may
    take its time; a zombie holds no pipe and needs no SIGKILL. Linux reads
    `/proc/*/stat` (state and pgrp), macOS asks psutil.
    """
    if DARWIN:
        import psutil

        for proc in psutil.process_iter():
            try:
                if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                    return True
            except (OSError, psutil.Error):
                continue
        return False
    for pid in _all_pids():
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _all_pids() -> "list[int]":
    if DARWIN:
        import psutil

        return psutil.pids()
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, not yet reaped by its parent) is not alive."""
    if DARWIN:
        import psutil

        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            # field 3 is the state; Z = zombie
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def process_start_time(pid: int) -> "float | None":
    """When process `pid` started (epoch seconds), None when there is no such process.

    Recorded next to a session's pid so that a later session does not take a
    new process that reused the pid for the session's wrapagent. Linux reads
    /proc (two small reads: psutil costs ~37 ms to import, on the start-up
    path); macOS asks psutil.
    """
    if DARWIN:
        return _psutil_start_time(pid)
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        with open("/proc/stat", "rb") as f:
            btime = next(int(line.split()[1]) for line in f if line.startswith(b"btime "))
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return None  # Linux, and the process is gone
        return _psutil_start_time(pid)
    except (OSError, StopIteration, ValueError, IndexError):
        return _psutil_start_time(pid)
    fields = stat[stat.rfind(b")") + 2:].split()
    return btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def process_start_key(pid: int) -> "str | None":
    """An identity of process `pid`'s start that no wall-clock step moves; None when it is gone.

    The epoch start time (`process_start_time`) is, on Linux, the current
    boot time plus the start ticks, and the kernel moves the boot time with
    every clock step (NTP after a resume, a VM migration): a live session
    would look like a reused pid. Linux: the boot id and field 22 of
    /proc/<pid>/stat (clock ticks since boot). macOS: psutil's create_time,
    the start time the kernel stored when the process started
    (kinfo_proc.p_starttime), which a later step does not rewrite.
    """
    if not DARWIN:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            ticks = stat[stat.rfind(b")") + 2:].split()[19].decode("ascii")
            return f"{_boot_id()}:{ticks}"
        except FileNotFoundError:
            if os.path.isdir("/proc/self"):
                return None  # Linux, and the process is gone
        except (OSError, IndexError, UnicodeDecodeError):
            pass
    started = _psutil_start_time(pid)
    return None if started is None else f"created:{started!r}"


def _boot_id() -> str:
    """This boot's id (ticks since boot repeat across boots); "boot" where the kernel has none."""
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            return f.read().strip().decode("ascii") or "boot"
    except (OSError, UnicodeDecodeError):
        return "boot"


def _psutil_start_time(pid: int) -> "float | None":
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:  # NoSuchProcess, ZombieProcess, AccessDenied
        return None


def group_open_files(pgid: int) -> "list[str]":
    """Paths of the regular files that live processes of group `pgid` hold open.

    For a git process killed at its time limit: the temporary files it was
    writing (`objects/pack/tmp_pack_*`, lock files) are known exactly, by
    what it had open, never guessed from names and times (a concurrent
    `git fetch` of the user's writes the same names). Linux reads
    `/proc/<pid>/fd`, macOS asks psutil. Best effort: unreadable means none.
    """
    found: list[str] = []
    if DARWIN:
        import psutil

        for proc in psutil.process_iter():
            try:
                if os.getpgid(proc.pid) == pgid:
                    found += [f.path for f in proc.open_files()]
            except (OSError, psutil.Error):
                continue
        return found
    for pid in _all_pids():
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read()
            fields = stat[stat.rfind(b")") + 2:].split()
            if len(fields) < 3 or fields[2] != str(pgid).encode():
                continue
            fd_dir = f"/proc/{pid}/fd"
            for fd in os.listdir(fd_dir):
                try:
                    target = os.readlink(f"{fd_dir}/{fd}")
                except OSError:
                    continue
                if target.startswith("/"):
                    found.append(target)
        except OSError:
            continue
    return found


def processes_naming(path: str) -> "list[int]":
    """Live processes (not this one) working in `path` (or below it) or whose arguments mention it.

    The sessions repository's `index.lock` is stale only when no git of ours
    can still be writing it: every git wrapagent starts there has
    `--git-dir=<root>/.git` on its command line, and a configured
    session_complete hook runs `cd <root> && git …`. Linux reads `/proc`,
    macOS asks psutil.
    """
    me = os.getpid()
    found: list[int] = []
    if DARWIN:
        import psutil

        for proc in psutil.process_iter():
            try:
                if proc.pid == me or proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                cwd = proc.cwd()
                if cwd == path or cwd.startswith(path.rstrip("/") + "/") or any(path in arg for arg in proc.cmdline()):
                    found.append(proc.pid)
            except (OSError, psutil.Error):
                continue
        return found
    needle = os.fsencode(path)
    for pid in _all_pids():
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                cmdline = handle.read()
            cwd = os.readlink(f"/proc/{pid}/cwd") if needle not in cmdline else path
            if cwd == path or cwd.startswith(path.rstrip("/") + "/"):
                if alive(pid):
                    found.append(pid)
        except OSError:
            continue
    return found
