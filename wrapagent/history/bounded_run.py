"""Run a helper program (git, `opencode export`) with a time limit it cannot outlive.

The program gets its own session: no terminal to prompt on, none of the
user's Ctrl-C, and on the deadline its whole process group is killed, so a
child it started (git's clean filter, opencode's native binary behind its
node launcher) cannot keep the pipes, and the user, waiting.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Mapping, Sequence


def run_bounded(argv: Sequence[str], *, timeout: float | None, env: Mapping[str, str] | None = None,
                cwd: str | os.PathLike | None = None,
                input: bytes | None = None) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of `argv`; TimeoutError once `timeout` seconds have passed.

    A failure to start raises OSError (FileNotFoundError for a missing program).
    """
    import signal
    import subprocess

    child = subprocess.Popen(list(argv), cwd=None if cwd is None else str(cwd),
                             env=None if env is None else dict(env), start_new_session=True,
                             stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = child.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass
        child.communicate()
        raise TimeoutError(f"`{' '.join(argv)}` timed out after {timeout:.1f} s") from None
    return child.returncode, out, err
