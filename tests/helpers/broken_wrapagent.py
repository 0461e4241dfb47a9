"""wrapagent with a bug injected into the copy loop: the first read of the child's output raises.

Usage: broken_wrapagent.py [WRAPAGENT-ARGS...] — same as `wrapagent`. Used to
check what a wrapagent exception leaves behind (terminal settings, the child).
BROKEN_KILL_GRACE=SECS shortens the SIGTERM→SIGKILL grace (default 5 s).
"""

import os
import sys

from wrapagent.proxy import pty_loop


def boom(*args: object) -> None:
    raise ZeroDivisionError("injected failure")


os.readv = boom  # only the output thread reads with readv  # type: ignore[assignment]
if os.environ.get("BROKEN_KILL_GRACE"):
    pty_loop.run.__kwdefaults__["kill_grace"] = float(os.environ["BROKEN_KILL_GRACE"])

from wrapagent.__main__ import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
