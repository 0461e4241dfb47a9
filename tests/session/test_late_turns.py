"""The stand-in interceptor of a tool that went first: keeps, hands over in order, then forwards."""

from __future__ import annotations

import threading

from wrapagent.session.late_turns import LateInterceptor


class Recorded:
    """An interceptor that writes down every call (the real one's contract, nothing held)."""

    def __init__(self, on_output=None) -> None:
        self.calls: list[tuple] = []
        self.done = False
        self.watch_output = False
        self.last_output = 0.0
        self.screen_notice = b""
        self._on_output = on_output

    def on_input(self, data: bytes, now: float) -> bytes:
        self.calls.append(("i", data, now))
        return data

    def on_output(self, data: bytes, now: float) -> None:
        self.calls.append(("o", data, now))
        if self._on_output is not None:
            self._on_output(data)

    def on_resize(self, rows: int, cols: int) -> None:
        self.calls.append(("r", rows, cols))

    def poll(self, now: float) -> bytes:
        self.calls.append(("poll", now))
        return b""

    def deadline(self) -> float | None:
        return 42.0

    def wake_fd(self) -> int | None:
        return 7


def test_before_the_attach_keys_pass_untouched_and_nothing_is_due() -> None:
    stand_in = LateInterceptor()
    assert stand_in.on_input(b"abc", 1.0) == b"abc"
    stand_in.on_output(b"screen", 1.1)
    assert stand_in.poll(1.2) == b""
    assert stand_in.deadline() is None and stand_in.wake_fd() is None
    assert stand_in.watch_output and not stand_in.done  # every chunk is wanted until the attach


def test_the_attach_replays_every_call_in_order_with_its_time_then_forwards() -> None:
    stand_in = LateInterceptor()
    stand_in.on_output(b"first screen", 1.0)
    stand_in.on_resize(40, 120)
    stand_in.on_input(b"h", 2.0)
    stand_in.on_output(b"h", 2.1)
    real = Recorded()
    assert stand_in.attach(real)
    assert real.calls == [("o", b"first screen", 1.0), ("poll", 1.0), ("r", 40, 120),
                          ("i", b"h", 2.0), ("poll", 2.0), ("o", b"h", 2.1), ("poll", 2.1)]
    real.calls.clear()
    assert stand_in.on_input(b"i", 3.0) == b"i"
    stand_in.on_output(b"i", 3.1)
    assert real.calls == [("i", b"i", 3.0), ("o", b"i", 3.1)]
    assert stand_in.deadline() == 42.0 and stand_in.wake_fd() == 7


def test_after_the_attach_the_proxy_sees_the_real_ones_state() -> None:
    stand_in = LateInterceptor()
    real = Recorded()
    stand_in.attach(real)
    assert not stand_in.watch_output  # the steady state: the proxy only stores a time
    stand_in.last_output = 5.0
    assert real.last_output == 5.0
    real.screen_notice = b"note"
    assert stand_in.screen_notice == b"note"
    stand_in.screen_notice = b""
    assert real.screen_notice == b""
    real.done = True
    assert stand_in.done


def test_output_that_comes_while_it_catches_up_is_handed_over_too_never_lost() -> None:
    """The copy threads keep appending while the main thread replays: every chunk, in order."""
    stand_in = LateInterceptor()
    stand_in.on_output(b"0", 0.0)
    arrived = threading.Event()

    def output_thread() -> None:
        for n in range(1, 200):
            stand_in.on_output(str(n).encode(), float(n))
        arrived.set()

    started: list[threading.Thread] = []

    def on_output(data: bytes) -> None:  # the replay is under way: output keeps coming
        if not started:
            thread = threading.Thread(target=output_thread)
            started.append(thread)
            thread.start()
            arrived.wait(10)

    real = Recorded(on_output)
    assert stand_in.attach(real)
    started[0].join(10)
    seen = [c[1] for c in real.calls if c[0] == "o"]
    assert seen == [str(n).encode() for n in range(200)]


def test_it_gives_up_past_its_cap_and_the_proxy_drops_it() -> None:
    stand_in = LateInterceptor(max_kept=10)
    stand_in.on_output(b"12345", 1.0)
    assert not stand_in.done
    stand_in.on_output(b"678901", 1.1)
    assert stand_in.done and "more than 10 bytes" in (stand_in.gave_up or "")
    assert stand_in.on_input(b"k", 1.2) == b"k"  # keys still pass until the proxy drops it
    real = Recorded()
    assert not stand_in.attach(real) and real.calls == []


def test_a_catch_up_over_its_budget_gives_up() -> None:
    stand_in = LateInterceptor()
    for n in range(5):
        stand_in.on_output(b"x", float(n))
    assert not stand_in.attach(Recorded(), budget=-1.0)
    assert stand_in.done and "catching up" in (stand_in.gave_up or "")


def test_give_up_without_an_interceptor_to_come() -> None:
    stand_in = LateInterceptor()
    stand_in.give_up("nothing follows the turns")
    assert stand_in.done and stand_in.gave_up == "nothing follows the turns"


class _Launch:
    def __init__(self, name: str, interactive: bool = True) -> None:
        self.interactive = interactive
        self.adapter = type("Adapter", (), {"name": name})()


def _cfg(enabled: bool = True, agents: tuple[str, ...] = ()):
    from wrapagent.hooks.config_loader import load_config

    cfg = load_config("/nonexistent-project", env={"HOME": "/nonexistent-home"})
    from wrapagent.values import replace

    return replace(cfg, record=replace(cfg.record, enabled=enabled), agents=agents)


def test_turns_are_marked_for_agent_programs_only() -> None:
    """A shell or `cat` has no turns, and looking for its composer would emulate every byte."""
    from wrapagent.session.recorded import marks_turns

    assert marks_turns(_Launch("demo"), _cfg())
    assert marks_turns(_Launch("aider"), _cfg())  # a known agent without an adapter of its own
    assert not marks_turns(_Launch("sh"), _cfg())
    assert not marks_turns(_Launch("cat"), _cfg())
    assert marks_turns(_Launch("my-agent"), _cfg(agents=("my-agent",)))
    assert not marks_turns(_Launch("demo"), _cfg(enabled=False))
    assert not marks_turns(_Launch("demo", interactive=False), _cfg())
