"""The gate to the interceptor: output handed over at most every OUTPUT_POLL_SECS, every byte, in
order, and always before a key, a resize or the supervisor's poll that came after it."""

from __future__ import annotations

import os

import pytest

from wrapagent.proxy import to_child as to_child_module
from wrapagent.proxy.loop_state import LoopState
from wrapagent.proxy.to_child import ToChild


class Recorder:
    """An interceptor that writes down every call, in order."""

    done = False
    watch_output = True
    last_output = 0.0

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.output_times: list[float] = []

    def on_output(self, data: bytes, now: float) -> None:
        self.calls.append(("output", data))
        self.output_times.append(now)

    def on_input(self, data: bytes, now: float) -> bytes:
        self.calls.append(("input", data))
        return data

    def on_resize(self, rows: int, cols: int) -> None:
        self.calls.append(("resize", rows, cols))

    def poll(self, now: float) -> bytes:
        self.calls.append(("poll",))
        return b""

    def deadline(self) -> float | None:
        return None

    def wake_fd(self) -> int | None:
        return None


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def gate(monkeypatch):
    master, slave = os.openpty()
    st = LoopState(os.getpid(), master, -1, -1)
    clock = Clock()
    monkeypatch.setattr(to_child_module.time, "monotonic", clock)
    icpt = Recorder()
    yield ToChild(st, icpt), icpt, clock, st
    for fd in (master, slave):
        os.close(fd)


def outputs(icpt: Recorder) -> bytes:
    return b"".join(c[1] for c in icpt.calls if c[0] == "output")


def test_a_flood_is_handed_over_once_per_period_every_byte_in_order(gate) -> None:
    to_child, icpt, clock, st = gate
    sent = [b"chunk %03d;" % n for n in range(400)]
    for n, chunk in enumerate(sent):
        to_child.output(icpt, chunk)
        clock.t += 0.0001  # 400 chunks in 40 ms: 8 periods of 5 ms
    assert to_child.plan()[0] == to_child._output_poll_due  # the supervisor's deadline: the owed poll
    clock.t = to_child._output_poll_due
    to_child.poll(clock.t)
    assert outputs(icpt) == b"".join(sent)
    calls = [c[0] for c in icpt.calls]
    assert calls.count("output") <= 10 and calls.count("poll") == calls.count("output")


def test_output_kept_within_a_period_reaches_the_interceptor_before_the_next_key(gate) -> None:
    to_child, icpt, clock, st = gate
    to_child.output(icpt, b"first")   # handed over at once: the period had not begun
    to_child.output(icpt, b" echo")   # within it: kept
    assert outputs(icpt) == b"first"
    to_child.user_bytes(b"k")
    assert [c[:2] for c in icpt.calls if c[0] != "poll"] == [("output", b"first"), ("output", b" echo"),
                                                              ("input", b"k")]


def test_output_kept_within_a_period_is_drawn_before_a_resize(gate) -> None:
    to_child, icpt, clock, st = gate
    to_child.output(icpt, b"a")
    to_child.output(icpt, b"b")
    to_child.resized(30, 100)
    assert [c for c in icpt.calls if c[0] != "poll"] == [("output", b"a"), ("output", b"b"), ("resize", 30, 100)]


def test_a_done_interceptor_keeps_nothing(gate) -> None:
    to_child, icpt, clock, st = gate
    to_child.output(icpt, b"a")
    to_child.output(icpt, b"kept")
    icpt.done = True
    clock.t += 1
    to_child.poll(clock.t)
    assert to_child.interceptor is None and not to_child._held_output


def pokes(st) -> int:
    """Wake-ups written to the supervisor's pipe since the last look."""
    try:
        return len(os.read(st.main_r, 4096))
    except BlockingIOError:
        return 0


def test_while_output_flows_the_supervisor_looks_once_per_period_and_is_poked_once(gate) -> None:
    to_child, icpt, clock, st = gate
    pokes(st)
    to_child.output(icpt, b"a")      # handed over by the output thread
    to_child.output(icpt, b"b")      # kept: the supervisor is told once
    assert pokes(st) == 1
    for period in range(5):
        to_child.plan()
        clock.t = to_child.main_deadline   # the supervisor's look at the period's end
        to_child.poll(clock.t, woken=False)
        clock.t += 0.001
        to_child.output(icpt, b"c")      # the next period's output: kept, nobody poked
        to_child.output(icpt, b"d")
        assert pokes(st) == 0
    before = len(icpt.calls)
    to_child.plan()
    clock.t = to_child.main_deadline
    to_child.poll(clock.t, woken=False)   # hands over the last "cd"
    to_child.plan()
    clock.t = to_child.main_deadline      # output stopped: one more look, which calls nothing
    to_child.poll(clock.t, woken=False)
    assert [c[0] for c in icpt.calls[before:]] == ["output", "poll"]
    assert to_child.plan()[0] is None     # and the supervisor sleeps on the interceptor's own deadline
    assert outputs(icpt) == b"ab" + b"cd" * 5


def test_a_period_in_which_nothing_came_is_closed_and_the_next_chunk_goes_at_once(gate) -> None:
    to_child, icpt, clock, st = gate
    to_child.output(icpt, b"a")            # opens a period
    clock.t = to_child._output_poll_due
    to_child.poll(clock.t, woken=False)    # nothing came in it: closed
    assert to_child.plan()[0] is None
    to_child.output(icpt, b"b")            # after a quiet spell: handed over by the output thread
    assert outputs(icpt) == b"ab"


class AppendsDuringALook(list):
    """The held list, with the output thread's append (and its read of `_holding` after it)
    landing during the supervisor's look number `at` (a copy of the list, `held[:]`)."""

    def __init__(self, to_child: ToChild, at: int) -> None:
        super().__init__()
        self.to_child, self.at, self.looks = to_child, at, 0
        self.saw_holding: bool | None = None

    def __getitem__(self, index):
        got = super().__getitem__(index)
        if isinstance(index, slice):
            self.looks += 1
            if self.looks == self.at:
                self.append(b"late")
                self.saw_holding = self.to_child._holding   # what the output thread reads next
        return got


@pytest.mark.parametrize("at", [1, 2])
def test_a_chunk_appended_as_the_period_closes_is_never_left_behind(gate, at) -> None:
    """Appended during the supervisor's first look (which found nothing), it is handed over by the
    second; during the second, the output thread must see the period closed and hand it over
    itself. A supervisor that looked twice and only then closed the period would leave it."""
    to_child, icpt, clock, st = gate
    to_child.output(icpt, b"a")
    held = to_child._held_output = AppendsDuringALook(to_child, at)
    clock.t = to_child._output_poll_due
    to_child.poll(clock.t, woken=False)
    handed = outputs(icpt) == b"alate"
    assert handed or (held.saw_holding is False and list(held) == [b"late"]), (outputs(icpt), held.saw_holding)
    if not handed:
        to_child.output(icpt, b"")   # the output thread, having seen the period closed
        assert outputs(icpt) == b"alate"


def test_output_handed_over_by_a_key_carries_the_time_it_came(gate) -> None:
    to_child, icpt, clock, st = gate
    to_child.output(icpt, b"a")
    clock.t += 0.001
    came = clock.t
    to_child.output(icpt, b"b")      # kept
    clock.t += 0.003
    to_child.user_bytes(b"k")        # takes it first, with the time it came, not the key's
    assert outputs(icpt) == b"ab" and icpt.output_times[-1] == came


def test_a_busy_supervisor_leaves_the_hand_over_to_the_output_thread(gate) -> None:
    to_child, icpt, clock, st = gate
    to_child.output(icpt, b"a")                        # opens a period
    clock.t = to_child._output_poll_due + to_child_module.OVERDUE_SECS / 2
    to_child.output(icpt, b"b")                        # the period is over: the supervisor's
    assert outputs(icpt) == b"a"
    clock.t = to_child._output_poll_due + to_child_module.OVERDUE_SECS
    to_child.output(icpt, b"c")                        # and overdue: the output thread's
    assert outputs(icpt) == b"abc"


def test_every_byte_in_order_with_the_output_thread_the_supervisor_and_keys_at_once(monkeypatch) -> None:
    """Real threads, the real clock: whatever the interleaving, the interceptor gets every chunk
    once, in order, and each key after every chunk the output thread had given before the key
    was pressed."""
    import sys
    import threading
    import time

    class Checking(Recorder):
        def __init__(self) -> None:
            super().__init__()
            self.received = 0
            self.given_before_key = 0
            self.late: list[tuple[int, int]] = []

        def on_output(self, data: bytes, now: float) -> None:
            super().on_output(data, now)
            self.received += len(data) // 6

        def on_input(self, data: bytes, now: float) -> bytes:
            if self.received < self.given_before_key:
                self.late.append((self.received, self.given_before_key))
            return super().on_input(data, now)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # the threads take turns often
    master, slave = os.openpty()
    try:
        st = LoopState(os.getpid(), master, -1, -1)
        icpt = Checking()
        to_child = ToChild(st, icpt)
        monkeypatch.setattr(to_child, "_write_now", lambda data: None)  # keys go nowhere
        sent = [b"%05d;" % n for n in range(20000)]
        given = [0]
        finished, pressed = threading.Event(), threading.Event()

        def output_thread() -> None:
            for n, chunk in enumerate(sent):
                if n % 5000 == 0:  # a key pressed while the output flows, however the threads run
                    pressed.clear()
                    pressed.wait(30)
                to_child.output(icpt, chunk)
                given[0] += 1
            finished.set()

        def supervisor() -> None:
            while not finished.is_set():
                deadline, _ = to_child.plan()
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    to_child.poll(now, woken=False)
                else:
                    time.sleep(0.0005)

        def keys() -> None:
            while not finished.is_set():
                icpt.given_before_key = given[0]
                to_child.user_bytes(b"k")
                pressed.set()
                time.sleep(0.0002)

        threads = [threading.Thread(target=f) for f in (output_thread, supervisor, keys)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        while to_child.plan()[0] is not None:   # the supervisor's last looks, until output is quiet
            to_child.poll(max(time.monotonic(), to_child.main_deadline), woken=False)
        assert outputs(icpt) == b"".join(sent)
        assert not to_child._held_output and not icpt.late
        assert len([c for c in icpt.calls if c[0] == "input"]) >= 4
    finally:
        sys.setswitchinterval(interval)
        for fd in (master, slave):
            os.close(fd)
