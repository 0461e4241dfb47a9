"""The output thread started right after the tool's fork, before the rest of the proxy loads.

A tool's first byte reaches the user once the output thread reads it. On
the launch path the thread used to start after the proxy's modules had
loaded (the supervisor, the key copier, `pty_loop`: ~1.5 ms, more with the
copy-on-write faults that follow a fork), which was after a quick tool had
written already (`bench/startup_phases.py`). So the launch path starts it
here, with only what it needs: the shared state, the key path's lock
(`to_child`, which holds the interceptor) and the copier itself; the
user's terminal goes raw first, as the proxy would set it, so the tool's
bytes reach it unchanged. `pty_loop.proxy` then adopts the running thread
(`Supervisor(started=…)`) and restores the terminal as usual.

While the rest loads on the main thread the interpreter lock switches
every EARLY_SWITCH_INTERVAL: the thread woken by the tool's first bytes
would otherwise wait up to the default 5 ms for the imports to let go of it.
The supervisor puts the interval back once the first output was copied.
"""

import sys

from wrapagent.proxy import terminal
from wrapagent.proxy.loop_state import CopyThread, LoopState
from wrapagent.proxy.output_thread import OutputCopier
from wrapagent.proxy.to_child import ToChild

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.proxy.spawn import Child
    from wrapagent.proxy.to_child import Interceptor

EARLY_SWITCH_INTERVAL = 0.0001
"""GIL switch interval from the thread's start until the first output was copied (see the module docstring)."""

ABANDON_JOIN_SECS = 1.0
"""A tool whose exec failed: how long its output thread gets to see the end of its terminal."""


class StartedOutput:
    """An output thread running for a child that `pty_loop.proxy` has not taken over yet."""

    def __init__(self, child: "Child", stdin_fd: int, stdout_fd: int,
                 on_output: "Callable[[bytearray], object] | None",
                 interceptor: "Interceptor | None") -> None:
        self.on_output, self.interceptor = on_output, interceptor
        """As given (the copier may hand them over or drop them later)."""
        self.raw = terminal.raw_mode(stdin_fd)
        """Entered here; `pty_loop.proxy` leaves it (the user's settings back)."""
        self.raw.__enter__()
        self.st = LoopState(child.pid, child.master, stdin_fd, stdout_fd)
        self.to_child = ToChild(self.st, interceptor)
        self.output = OutputCopier(self.st, self.to_child, on_output)
        self.thread = CopyThread(self.output.run)
        self.old_switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self.old_switch_interval, EARLY_SWITCH_INTERVAL))
        try:
            self.thread.start()
        except BaseException:
            self.restore_switch_interval()
            self.raw.__exit__(None, None, None)
            self.st.close_pipes()
            raise
        child.before_close = self.abandon

    def restore_switch_interval(self) -> None:
        sys.setswitchinterval(self.old_switch_interval)

    def abandon(self) -> None:
        """The tool's exec failed (its terminal is ending): the thread stopped, the terminal restored.

        Called before the master is closed, so the thread never reads a
        descriptor number that another open() may have reused."""
        self.restore_switch_interval()
        self.st.stop_output = True
        self.thread.join(ABANDON_JOIN_SECS)
        self.raw.__exit__(None, None, None)
        if not self.thread.is_alive():
            self.st.close_pipes()


def start(child: "Child", *, stdin_fd: int = 0, stdout_fd: int = 1,
          on_output: "Callable[[bytearray], object] | None" = None,
          interceptor: "Interceptor | None" = None) -> "StartedOutput":
    """Start copying `child`'s output now (see the module docstring); hand the result to `pty_loop.proxy`."""
    return StartedOutput(child, stdin_fd, stdout_fd, on_output, interceptor)
