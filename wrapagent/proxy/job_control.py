"""Job control: Ctrl-Z, `kill -TSTP`, `bg` and `fg` of a wrapped tool, as without wrapagent.

Two ways a session gets suspended, one way back (all on the supervisor's thread):
- the tool stops itself (a TUI's Ctrl-Z: its modes off, SIGTSTP to its group):
  its session leader stops too (`session_leader`), the supervisor's wait sees
  it (`tool_stopped_itself`), and wrapagent stops its own job with SIGTSTP, as the
  tool would have without wrapagent;
- wrapagent itself gets SIGTSTP, SIGTTIN or SIGTTOU (`stop_requested`): it
  stops with that signal; the tool keeps running (its output waits in the PTY).
Before stopping, the user's terminal is given back: the copy threads pause
(no key read, no byte written: the shell has the terminal), every mode the
tool turned on is turned off (`ModeTracker.reset_sequence`) and the saved
settings are restored (cooked mode). Keys typed meanwhile are the shell's.

On SIGCONT (`fg`, `continued`): raw mode again, the tool's modes again
(`reapply_sequence`), the size copied (a resize while stopped reached no
one), the tool continued (its leader gives it the PTY's foreground back)
and asked to redraw (SIGWINCH). Continued in the background (`bg`), the
raw mode cannot be set: the kernel sends SIGTTOU, and wrapagent stops
again until `fg`. SIGSTOP cannot be caught: the terminal is only taken
back when continued.
"""

import os
import time

try:  # the C module: `signal` imports `enum` for its IntEnums (~8 ms of start-up)
    import _signal as signal
except ImportError:  # pragma: no cover - an interpreter without it
    import signal  # type: ignore[no-redef]
import termios

from wrapagent.proxy import terminal
from wrapagent.proxy.loop_state import killpg, poke, write_all

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from wrapagent.proxy.loop_state import LoopState
    from wrapagent.proxy.terminal_modes import ModeTracker

FLUSH_SECS = 0.5
"""How long a tool's output from before its stop may take to reach the terminal before the shell gets it."""

FLUSH_QUIET_SECS = 0.1
"""The master quiet this long: the tool's last output is all copied. What a tool writes just before
it stops reaches the master a moment after the write returned (Linux moves it from the tool's side
of the pseudo-terminal in a kernel worker), so "nothing to read now" is not enough: under load the
stop was seen first, and the shell's prompt came before the tool's last line."""

OWN_CONT_SECS = 1.0
"""A SIGCONT this soon after wrapagent resumed from its own stop is that stop's: already handled."""


class JobControl:
    """The suspend and resume of one proxy run; `saved` is the user's terminal settings (None: no terminal)."""

    def __init__(self, st: "LoopState", leader: int, modes: "ModeTracker") -> None:
        self.st = st
        self.leader = leader
        self.tool_pgid: "int | None" = None
        self.modes = modes
        self.saved: "list | None" = None
        self.suspended = False
        """The terminal is the shell's: the copy threads pause (`LoopState.paused`, the output gate held)."""
        self.tool_stopped = False
        """The tool (and its leader) are stopped: `resume` continues the leader, which continues the tool."""
        self.resumed_at: "float | None" = None

    # -- what the supervisor reports -----------------------------------------------------

    def tool_stopped_itself(self) -> None:
        """The tool's leader stopped (the tool suspended itself): stop wrapagent's job the same way.

        What the tool wrote before it stopped (its modes off, a last line)
        reaches the terminal first: the stop can be seen before the output
        thread has copied it.
        """
        self.tool_stopped = True
        self._copy_pending_output()
        self._stop(signal.SIGTSTP, whole_job=True)

    def _copy_pending_output(self) -> None:
        """Wait (at most FLUSH_SECS) until the master has been empty for FLUSH_QUIET_SECS and no chunk
        is being written."""
        from wrapagent import portable

        st = self.st
        waiter = portable.Waiter()
        waiter.watch((st.master,))
        deadline = time.monotonic() + FLUSH_SECS
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if not waiter.wait(min(FLUSH_QUIET_SECS, left))[0]:
                with st.out_gate:  # a chunk the output thread is writing is finished first
                    if not waiter.wait(0)[0]:
                        return
            time.sleep(0.002)  # only while a stopped tool's last output is copied

    def stop_requested(self, sig: int) -> None:
        """wrapagent got SIGTSTP, SIGTTIN or SIGTTOU: give the terminal back and stop with `sig`.

        A SIGTTIN or SIGTTOU that finds wrapagent in the foreground is stale:
        the kernel's answer to a terminal access made while it was in the
        background (a resume after `bg`), already followed by a `fg`.
        """
        if sig != signal.SIGTSTP and self.in_foreground():
            return
        self._stop(sig, whole_job=False)

    def in_foreground(self) -> bool:
        """Whether wrapagent's job is the user's terminal's foreground job (or there is no terminal)."""
        return self._foreground() is not False

    def is_terminal_job(self) -> bool:
        """Whether wrapagent's group is the foreground job of its controlling terminal (its stdin).

        Only then is there a shell to give the terminal to and to `fg` it
        back.
        """
        return self._foreground() is True

    def _foreground(self) -> "bool | None":
        """Whether wrapagent's group is its stdin's foreground group; None without a terminal, or on
        one that is not wrapagent's controlling terminal (`tcgetpgrp` fails there)."""
        if self.saved is None:
            return None
        try:
            return os.tcgetpgrp(self.st.stdin_fd) == os.getpgrp()
        except OSError:
            return None

    def continued(self) -> None:
        """A SIGCONT: take the terminal back, unless it is the one of wrapagent's own stop (done then)."""
        if self.resumed_at is not None and time.monotonic() - self.resumed_at < OWN_CONT_SECS \
                and not self.suspended:
            self.resumed_at = None
            return
        self.resume()  # after a SIGSTOP, or a stop that went unhandled

    def release(self) -> None:
        """The proxy ends: the copy threads must be able to finish (gate open, input not paused)."""
        if self.suspended:
            self.suspended = False
            self.st.paused = False
            self.st.out_gate.release()
            poke(self.st.in_w)

    # -- suspend ----------------------------------------------------------------------

    def _stop(self, sig: int, whole_job: bool) -> None:
        self.give_back()
        if whole_job and not self.is_terminal_job():
            # No shell could `fg` it: the kernel would discard the stop of an orphaned job, and
            # a group shared with a caller that runs wrapagent in-process is not ours to stop.
            self.resume()
            self.resumed_at = time.monotonic()
            return
        old = signal.signal(sig, signal.SIG_DFL)
        try:
            # The tool's Ctrl-Z stops wrapagent's job (a pipeline) as a Ctrl-Z typed to it would;
            # a signal sent to wrapagent alone stops wrapagent alone. Here it sleeps until SIGCONT.
            os.kill(0 if whole_job else os.getpid(), sig)
        finally:
            signal.signal(sig, old)
        # Continued (or the stop was discarded: an orphaned job cannot stop): take the terminal back.
        self.resume()
        self.resumed_at = time.monotonic()

    def give_back(self) -> None:
        """Pause the copy threads, turn the tool's modes off, restore the user's settings."""
        st = self.st
        if self.suspended:
            return  # given back already (continued in the background, stopping again)
        st.paused = True
        poke(st.in_w)  # the input thread leaves its wait on the terminal
        st.out_gate.acquire()  # a chunk being written is finished first
        self.suspended = True
        if st.stdout_ok:
            reset = self.modes.reset_sequence()
            if reset:
                st.stdout_ok = write_all(st.stdout_fd, reset)
        if self.saved is not None:
            terminal.restore(st.stdin_fd, self.saved)  # TCSADRAIN: keys typed ahead stay the shell's

    # -- resume -----------------------------------------------------------------------

    def resume(self) -> bool:
        """Raw mode, the tool's modes, its size; the tool continued and asked to redraw.

        False when wrapagent is not the terminal's foreground job (`bg`):
        setting raw mode then raises SIGTTOU, which stops wrapagent again
        (`stop_requested`) until the user's `fg`.
        """
        st = self.st
        if self.saved is not None:
            try:
                termios.tcsetattr(st.stdin_fd, termios.TCSANOW, terminal.make_raw(self.saved))
            except (termios.error, OSError) as exc:
                if _errno(exc) in (4, 5):  # EINTR (SIGTTOU: in the background), EIO (orphaned)
                    self.give_back()  # (a SIGSTOP's continue: nothing was given back yet)
                    return False
        if st.stdout_ok:
            again = self.modes.reapply_sequence()
            if again:
                st.stdout_ok = write_all(st.stdout_fd, again)
        terminal.copy_winsize(st.stdin_fd, st.master)
        was_suspended, self.suspended = self.suspended, False
        if was_suspended:
            st.paused = False
            st.out_gate.release()
            poke(st.in_w)
        if self.tool_stopped:
            self.tool_stopped = False
            try:
                os.kill(self.leader, signal.SIGCONT)  # it gives the PTY to the tool and continues it
            except OSError:
                pass
        if self.tool_pgid is not None:
            killpg(self.tool_pgid, signal.SIGWINCH)  # a redraw: the shell drew over its screen
        return True


def _errno(exc: BaseException) -> "int | None":
    """The errno of an OSError or of a termios.error (which carries it as its first argument)."""
    if isinstance(exc, OSError):
        return exc.errno
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None
