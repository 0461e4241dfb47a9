"""The tool's last output before it stops reaches the terminal before wrapagent stops (job_control).

A tool that suspends itself writes its modes off and a last line, then stops. On Linux what
it wrote reaches the master a moment after its write returned (a kernel worker moves it), so
the stop can be seen while the master still reads empty. Here the "master" is a pipe whose
bytes come a little after the flush began, and an "output thread" copies them as the proxy's
does: the flush must not end before they are copied. The previous flush ended at the first
empty read, before the bytes came (this test failed on it).
"""

from __future__ import annotations

import os
import threading

from platform_modes import platform_mode  # noqa: F401 - autouse: Linux and macOS paths
from wrapagent import portable
from wrapagent.proxy import job_control

LATE_SECS = 0.03
"""How long after the flush's first look at the master the tool's last line lands."""


class _State:
    """What the flush reads of the loop's state: the master, and the gate of a chunk being written."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.out_gate = threading.Lock()


def test_output_landing_after_the_stop_was_seen_is_copied_before_the_flush_ends(monkeypatch) -> None:
    # A quiet period far longer than the late line's delay: a loaded machine does not decide it.
    monkeypatch.setattr(job_control, "FLUSH_QUIET_SECS", 1.0, raising=False)  # (the old flush had none)
    monkeypatch.setattr(job_control, "FLUSH_SECS", 30.0)
    r, w = os.pipe()
    copied: list[bytes] = []
    first_look = threading.Event()
    original_wait = portable.Waiter.wait

    def wait(self, timeout):
        first_look.set()
        return original_wait(self, timeout)

    monkeypatch.setattr(portable.Waiter, "wait", wait)

    def tool() -> None:  # its last line lands once the flush has looked at the master
        first_look.wait(10)
        threading.Event().wait(LATE_SECS)
        os.write(w, b"SUSPENDING\r\n")

    def output_thread() -> None:
        data = os.read(r, 100)
        with st.out_gate:
            copied.append(data)

    st = _State(r)
    jc = job_control.JobControl(st, leader=0, modes=None)  # type: ignore[arg-type]
    threads = [threading.Thread(target=tool), threading.Thread(target=output_thread)]
    try:
        for t in threads:
            t.start()
        jc._copy_pending_output()
        when_the_flush_ended = list(copied)
    finally:
        for t in threads:
            t.join(10)
        os.close(r)
        os.close(w)
    assert when_the_flush_ended == [b"SUSPENDING\r\n"]
