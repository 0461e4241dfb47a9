"""The supervisor: the proxy's main thread, while the two copy threads run.

It sleeps in one wait on the signal pipe, its own wake-up pipe and the
interceptor's wake fd, with the interceptor's deadline (or the kill grace)
as timeout, and:
- handles signals as bytes on a pipe (`signal.set_wakeup_fd`), so no work
  happens in a signal handler: SIGWINCH copies the size to the child,
  SIGCHLD reaps it, SIGTERM/SIGHUP/SIGINT/SIGQUIT go to its process group
  (SIGKILL after the kill grace);
- runs the interceptor's `poll` when its deadline passed or its wake fd
  fired (through `to_child`, which queues what it returns);
- keeps the child's exit status (0-255 as is, 128+N for signal N, see
  `spawn.status_to_exit_code`);
- stops when the output thread has stopped reading and the child was reaped.
"""

import os
import sys
import time

try:  # the C module: `signal` imports `enum` for its IntEnums (~8 ms of start-up)
    import _signal as signal
except ImportError:  # pragma: no cover - an interpreter without it
    import signal  # type: ignore[no-redef]
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings

from wrapagent.proxy import terminal
from wrapagent.proxy.loop_state import CopyThread, LoopState, drain_pipe, killpg, poke
from wrapagent.proxy.output_thread import DRAIN_QUIET_SECS, OutputCopier, wake
from wrapagent.proxy.spawn import FORWARDED_SIGNALS, JOB_SIGNALS, usable_size
from wrapagent.proxy.to_child import ToChild

if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.proxy.input_thread import InputCopier
    from wrapagent.proxy.job_control import JobControl
    from wrapagent.proxy.output_start import StartedOutput
    from wrapagent.proxy.spawn import SignalPipe
    from wrapagent.proxy.to_child import Interceptor

AFTER_START_WAIT_SECS = 0.5
"""`after_start` waits for the tool's first output, or this long, or the tool's end (see `run`)."""

AFTER_FIRST_OUTPUT_SECS = 0.05
"""…and then this long: the first bytes still have their way to the screen to make (the kernel
passes them from one terminal to the next in a worker thread), and a TUI draws its first screen."""

OUTPUT_START_WAIT_SECS = 0.05
"""How long the main thread waits for the new output thread to reach its first read before it loads
the key copier: held by those imports, the thread started up to ~0.8 ms late (measured)."""

FIRST_COPY_WAIT_SECS = 0.005
"""…and then for the tool's first output to be copied: a tool that has written already is shown first.
Keys typed meanwhile wait in the user's terminal; a tool that takes longer pays nothing more."""

SETUP_SWITCH_INTERVAL = 0.0005
"""GIL switch interval while `after_start` work runs beside the copy threads (see `_while_copying`)."""


class Supervisor:
    """One proxy run: builds the shared state and the copy threads, then runs the main thread."""

    def __init__(self, pid: int, master: int, stdin_fd: int, stdout_fd: int,
                 interceptor: "Interceptor | None",
                 on_output: "Callable[[bytes], None] | None",
                 kill_grace: float, tool_pgid: "int | None" = None,
                 started: "StartedOutput | None" = None) -> None:
        """`started`: the output thread already runs (`output_start`); its state is adopted."""
        if started is not None:
            self.st = st = started.st
        else:
            self.st = st = LoopState(pid, master, stdin_fd, stdout_fd)
        self._started = started
        self.pid = pid
        """The tool's session leader: waited for (its status is the tool's)."""
        self.tool_pgid = pid if tool_pgid is None else tool_pgid
        """The tool's process group: where signals go."""
        self.master = master
        self.kill_grace = kill_grace
        if started is not None:
            self.to_child, self.output = started.to_child, started.output
        else:
            self.to_child = ToChild(st, interceptor)
            self.output = OutputCopier(st, self.to_child, on_output)
        self.input: "InputCopier | None" = None
        """The key copier, made by `run` once the output thread runs (`_start_input`)."""
        self.threads = [started.thread if started is not None else CopyThread(self.output.run)]
        """The output thread, then the input thread."""
        self._job: "JobControl | None" = None
        self.saved: "list | None" = None
        """The user's terminal settings (`pty_loop` sets them): job control gives the terminal back with these."""
        self.status: "int | None" = None
        self.rusage: "object | None" = None
        self.kill_deadline: "float | None" = None
        self.result_signals: "list[int]" = []
        self.killed = False
        self.output_abandoned = False

    @property
    def job(self) -> "JobControl":
        """Job control, made with its module on the first stop or job signal: a start never waits for it."""
        if self._job is None:
            from wrapagent.proxy.job_control import JobControl

            job = JobControl(self.st, self.pid, self.output.modes)
            job.tool_pgid = self.tool_pgid
            job.saved = self.saved
            self._job = job
        return self._job

    def threads_alive(self) -> bool:
        return any(thread.is_alive() for thread in self.threads)

    def close(self) -> None:
        """Close the wake-up pipes, unless a copy thread outlived `stop()`.

        A thread stuck in a write to a frozen terminal would otherwise find
        its fd numbers reused by the next open(): leaking six fds is the
        lesser harm, at exit.
        """
        if not self.threads_alive():
            self.st.close_pipes()

    # -- signals and the child ----------------------------------------------------------

    def handle_signals(self, signals: "list[int]") -> None:
        for sig in signals:
            if sig == signal.SIGWINCH:
                terminal.copy_winsize(self.st.stdin_fd, self.master)  # not a 0x0: the child keeps its size
                observer = getattr(self.output.on_output, "resized", None)  # a recorder's resize event
                if self.to_child.wants_size() or observer is not None:
                    size = usable_size(terminal.get_winsize(self.master))  # what the child draws into
                    if size:
                        self.to_child.resized(size[0], size[1])
                        if observer is not None:
                            observer(size[0], size[1])
            elif sig == signal.SIGCHLD:
                self.try_reap()
            elif sig in FORWARDED_SIGNALS:
                self.forward(sig)
            elif sig in JOB_SIGNALS and self.status is None:
                if sig == signal.SIGCONT:
                    self.job.continued()
                else:
                    self.job.stop_requested(sig)

    def forward(self, sig: int) -> None:
        """Pass a signal sent to wrapagent on to the child's process group, then wait for it."""
        self.result_signals.append(sig)
        if self.status is None:
            killpg(self.tool_pgid, sig)
            job = self._job
            if job is not None and job.tool_stopped:  # a stopped tool acts on it once continued (as `kill` in a shell)
                job.tool_stopped = False
                killpg(self.tool_pgid, signal.SIGCONT)
                killpg(self.pid, signal.SIGCONT)
            if self.kill_deadline is None:
                self.kill_deadline = time.monotonic() + self.kill_grace
        if sig == signal.SIGHUP:
            # The user's terminal is gone: nothing more to read or show.
            self.st.stdin_open = False
            self.st.stdout_ok = False
            poke(self.st.in_w)

    def try_reap(self) -> None:
        if self.status is not None:
            return
        try:
            pid, status, rusage = os.wait4(self.pid, os.WNOHANG | os.WUNTRACED)
        except ChildProcessError:
            pid, status, rusage = self.pid, 0, None
        if pid == self.pid and os.WIFSTOPPED(status):
            # The tool suspended itself (Ctrl-Z in a TUI); its leader stopped with it.
            self.job.tool_stopped_itself()
            return
        if pid == self.pid:
            self.status = status
            self.rusage = rusage
            st = self.st
            # The child is gone: keys typed from now on are not its. The output
            # thread drains the master with the DRAIN_* limits from here on, its
            # reads no longer blocking: the flag first, so that a thread that
            # sees `reaped_at` never starts a read that sleeps (one asleep from
            # before is woken by `_wake_output_if_asleep`).
            self.to_child.master_nonblocking_for_good()
            st.reaped_at = time.monotonic()
            st.stop_input = True
            poke(st.in_w)
            poke(st.out_w)

    # -- the main thread -------------------------------------------------------------

    def timeout(self, now: float, deadline: "float | None") -> "float | None":
        """Seconds until the main thread must act without any event, or None (sleep until one)."""
        deadlines = [d for d in (deadline, None if self.status is not None else self.kill_deadline,
                                 self._drain_check()) if d is not None]
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - now)

    def _drain_check(self) -> "float | None":
        """When to look whether the output thread sleeps in a read that nothing will end."""
        st = self.st
        if st.reaped_at is None or not st.master_open or st.drain_seen or st.woken:
            return None
        return st.reaped_at + DRAIN_QUIET_SECS

    def _wake_output_if_asleep(self, now: float) -> None:
        """The child was reaped DRAIN_QUIET_SECS ago and the output thread has not read since:
        it sleeps in a read started before the reap (a quiet leftover holds the terminal)."""
        check = self._drain_check()
        st = self.st
        if check is None or now < check:
            return
        # (Or in a write to a slow terminal: then the NUL comes after the tail and is dropped.)
        st.woken = True
        if not wake(self.master):
            self.output_abandoned = True  # cannot be woken: stop waiting for it

    def run(self, sigpipe: "SignalPipe", after_start: "Callable[[], None] | None" = None) -> None:
        """Start the copy threads; handle signals, deadlines and the child until all is done.

        `after_start` runs on this thread AFTER_FIRST_OUTPUT_SECS after the
        tool's first output was copied (or AFTER_START_WAIT_SECS after the
        start, or once its output ended): work that
        need not precede the tool (a session's record, its version lookup)
        must not take the CPU and the interpreter lock from the tool's start
        and the copy of its first bytes. Signals that come meanwhile wait on
        the pipe.
        """
        started = self._started
        if started is None:
            self.threads[0].start()  # first: the tool's first bytes wait for nothing else
        self.output.wait_started(OUTPUT_START_WAIT_SECS, FIRST_COPY_WAIT_SECS)  # (not even the key copier)
        if started is not None:
            started.restore_switch_interval()
        self._start_input()
        self.copy_whole_size()
        st, to_child = self.st, self.to_child
        pending = after_start
        pending_until = time.monotonic() + AFTER_START_WAIT_SECS
        first_seen = False
        from wrapagent import portable

        portable.prepare_sweep()
        waiter = portable.Waiter()
        sigfd = sigpipe.rfd
        while (st.master_open and not self.output_abandoned) or self.status is None or pending is not None:
            if pending is not None:
                now = time.monotonic()
                if st.first_output and not first_seen:
                    first_seen = True
                    pending_until = min(pending_until, now + AFTER_FIRST_OUTPUT_SECS)
                if not st.master_open or now >= pending_until:
                    work, pending = pending, None
                    _while_copying(work)
                    continue
            deadline, wake = to_child.plan()
            if pending is not None:
                deadline = pending_until if deadline is None else min(deadline, pending_until)
            waiter.watch((sigfd, st.main_r) if wake is None else (sigfd, st.main_r, wake))
            readable, _ = waiter.wait(self.timeout(time.monotonic(), deadline))
            if st.error is not None:
                raise st.error
            if sigfd in readable:
                self.handle_signals(sigpipe.read())
            if st.main_r in readable:
                drain_pipe(st.main_r)
            now = time.monotonic()
            woken = wake is not None and wake in readable
            if to_child.interceptor is not None and (woken or (deadline is not None and now >= deadline)):
                to_child.poll(now, woken)
            self._wake_output_if_asleep(now)
            if self.status is None and not st.master_open:
                # EIO came first: the child closed its terminal; wait for it
                # to exit (SIGCHLD wakes us), still forwarding signals.
                self.try_reap()
            if self.status is None and self.kill_deadline is not None and now >= self.kill_deadline:
                killpg(self.tool_pgid, signal.SIGKILL)
                self.killed = True
                self.kill_deadline = None
        if st.error is not None:
            raise st.error

    def _start_input(self) -> None:
        """Load and start the key copier (and `portable`, its wait) once the output thread runs.

        Keys typed meanwhile wait in the user's terminal, lost by no one; the
        tool's first output is copied while these modules load (the output
        thread takes the interpreter lock at each of the import's system calls).
        """
        from wrapagent.proxy.input_thread import InputCopier

        self.input = InputCopier(self.st, self.to_child)
        thread = CopyThread(self.input.run)
        self.threads.append(thread)
        thread.start()

    def copy_whole_size(self) -> None:
        """Give the child the user's terminal size with its pixels (`spawn` set rows and cols).

        Once the copy threads run: it loads `fcntl`, which the tool's first
        output need not wait for. A resize since the start was queued on the
        signal pipe and is copied again when handled.
        """
        st = self.st
        size = terminal.get_winsize(st.stdin_fd) or terminal.get_winsize(st.stdout_fd)
        if size and size[0] and size[1]:
            terminal.set_winsize(self.master, size)

    def stop(self) -> None:
        """Stop both copy threads and wait for them (also on the exception path)."""
        st = self.st
        if self._job is not None:
            self._job.release()
        st.stop_input = st.stop_output = True
        poke(st.in_w)
        poke(st.out_w)
        if self.threads[0].is_alive():
            st.woken = True
            wake(self.master)  # a read asleep: it returns and sees the stop
        for thread in self.threads:
            thread.join(timeout=2.0)


def _while_copying(work: "Callable[[], None]") -> None:
    """Run `work` with a short GIL switch interval (0.5 ms instead of 5).

    `work` is Python code (imports, JSON) that holds the interpreter lock;
    a copy thread woken by the tool's first bytes would otherwise wait up to
    the default 5 ms interval for it before it can copy them.
    """
    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, SETUP_SWITCH_INTERVAL))
    try:
        work()
    finally:
        sys.setswitchinterval(old)
