"""The followed screen (`wrapagent/inject/followed_screen.py`): the emulator catches up off the
output path, and its observer only ever sees frames a terminal would show."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wrapagent.inject.compaction_watch import NOTICE_HINTS, CompactionWatch
from wrapagent.inject.followed_screen import SYNC_BEGIN, SYNC_END, FollowedScreen
from wrapagent.inject.screen_model import SHAPES, ScreenModel

CODEX_MID_TURN = Path(__file__).resolve().parents[1] / "screens" / "codex" / "0.169.0" / "output-compaction-mid-turn.raw"


def wait_until(condition, what: str, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, what
        time.sleep(0.01)


def caught_up(followed: FollowedScreen) -> bool:
    with followed._cond:
        return not followed._pending and not followed._busy


def test_followed_screen_catches_up_when_asked_and_after_a_pause() -> None:
    """The emulator waits for a pause in the output (a burst never hands it the interpreter lock),
    but `text` gets the screen as of the last chunk at once, and a pause lets it catch up alone."""
    import time

    from wrapagent.inject.followed_screen import FollowedScreen

    followed = FollowedScreen(5, 40)
    try:
        for i in range(200):
            followed.feed(b"\r\nline %d" % i)
        assert "line 199" in (followed.text(timeout=30.0) or "")
        followed.feed(b"\r\nafter a pause")
        end = time.monotonic() + 30.0
        while True:  # nobody asks: the pause alone brings the emulator up to date
            with followed._cond:
                if not followed._pending and not followed._busy:
                    break
            assert time.monotonic() < end, "the emulator never caught up after the output paused"
            time.sleep(0.02)
        assert "after a pause" in followed._screen.text()
    finally:
        followed.close()


def test_followed_screen_shows_an_animation_that_never_pauses() -> None:
    """A spinner redrawn faster than the pause the emulator waits for: what shows only while it
    animates (claude's `Compacting conversation…`) still reaches the observer, while it animates."""
    import threading
    import time

    from wrapagent.inject.followed_screen import FOLLOW_QUIET_SECS, FollowedScreen

    followed = FollowedScreen(5, 40)
    seen = threading.Event()
    followed.observe(lambda text: seen.set() if "Compacting" in text else None)
    try:
        frames = "|/-\\"
        end = time.monotonic() + 60.0
        i = 0
        while not seen.is_set():  # a frame every half of the pause: the output never pauses
            assert time.monotonic() < end, "the animation's screen never reached the observer"
            followed.feed(b"\r%s Compacting conversation" % frames[i % 4].encode())
            i += 1
            time.sleep(FOLLOW_QUIET_SECS / 2)
    finally:
        followed.close()


def test_followed_screen_catches_a_hinted_line_replaced_within_a_burst() -> None:
    """A notice drawn and replaced while the output never pauses (claude's compaction line):
    output holding an observer's hint is emulated at once, so the observer sees the line."""
    import threading
    import time

    from wrapagent.inject.followed_screen import FollowedScreen

    followed = FollowedScreen(5, 60)
    seen = threading.Event()
    followed.observe(lambda text: seen.set() if "Compacting conversation" in text else None,
                     hints=(b"ompact",))
    try:
        followed.feed(b"\r\x1b[2K* Compacting conversation (0s)")
        for i in range(40):  # replaced at once, then redrawn every 20 ms: no pause to wait for
            followed.feed(b"\r\x1b[2K* working %d" % i)
            time.sleep(0.02)
        end = time.monotonic() + 30.0
        while not seen.is_set():
            assert time.monotonic() < end, "the hinted line never reached the observer"
            time.sleep(0.02)
    finally:
        followed.close()


def test_the_observer_never_sees_the_inside_of_a_synchronized_update() -> None:
    """A frame that erases a line and draws it again inside one update: the observer sees the
    line on every frame, never the erased state in between (a terminal never shows that)."""
    followed = FollowedScreen(5, 40)
    texts: list[str] = []
    followed.observe(texts.append, hints=(b"ompact",))
    try:
        followed.feed(b"\x1b[1;1H* Context compacted\x1b[2;1Hready")
        wait_until(lambda: any("compacted" in t for t in texts), "the first frame was never read")
        for i in range(30):  # the erase ends a chunk that holds the hint: a reading is due there
            followed.feed(SYNC_BEGIN + b"\x1b[1;1H\x1b[K\x1b[2;1H\x1b[K ompact")
            followed.feed(b"\x1b[1;1H* Context compacted\x1b[2;1Hframe %d" % i + SYNC_END)
        wait_until(lambda: caught_up(followed) and "frame 29" in texts[-1], "the last frame was never read")
        assert all("Context compacted" in t for t in texts), [t for t in texts if "compacted" not in t]
    finally:
        followed.close()


def test_an_update_that_never_ends_is_shown_after_a_while() -> None:
    """A tool that died in the middle of a frame: its screen still reaches the observer."""
    followed = FollowedScreen(5, 40)
    texts: list[str] = []
    followed.observe(texts.append)
    try:
        followed.feed(SYNC_BEGIN + b"half a frame")
        wait_until(lambda: any("half a frame" in t for t in texts), "the open update hid the screen for ever")
    finally:
        followed.close()


def test_sequences_split_between_chunks_are_followed() -> None:
    followed = FollowedScreen(5, 40)
    texts: list[str] = []
    followed.observe(texts.append, hints=(b"ompact",))
    try:
        followed.feed(b"* Context compacted" + SYNC_BEGIN[:4])
        followed.feed(SYNC_BEGIN[4:] + b"\x1b[1;1H\x1b[K ompact")
        followed.feed(b"\x1b[1;1H* Context compacted again" + SYNC_END[:3])
        followed.feed(SYNC_END[3:])
        wait_until(lambda: caught_up(followed) and bool(texts) and "again" in texts[-1], "never caught up")
        assert all("Context compacted" in t for t in texts), texts
    finally:
        followed.close()


def feed_in_pieces(data: bytes, ends: list[int]) -> int:
    """Compactions seen when codex's output comes in pieces ending at `ends`, each piece a turn
    of its own (so only a notice that appears may count, as in a session)."""
    watch = CompactionWatch(ScreenModel(SHAPES["codex"]))
    followed = FollowedScreen(40, 120)
    followed.observe(watch.observe, hints=NOTICE_HINTS)
    seen, at = 0, 0
    try:
        for end in [*ends, len(data)]:
            watch.submitted()
            followed.feed(data[at:end])
            at = end
            # `text` returns once the emulator caught up, after it told the observer
            assert followed.text(timeout=30.0) is not None, "the emulator never caught up"
            seen += watch.take()
    finally:
        followed.close()
    return seen


ERASE_RUN = re.compile(rb"(?:\x1b\[\d+;\d+H(?:\x1b\[[0-9;]*m)*\x1b\[K){3,}")


def test_codex_compacting_in_the_middle_of_a_turn_is_one_compaction() -> None:
    """codex's real output (a compaction in the middle of a turn, then two more messages), cut
    where each frame has erased its rows and where it ends: the notice appears once. Read inside
    codex's synchronized updates, it vanished and came back with every frame, and each return
    counted as one more compaction (9 here)."""
    data = CODEX_MID_TURN.read_bytes()
    ends = sorted({m.end() for m in ERASE_RUN.finditer(data)} | {m.end() for m in re.finditer(re.escape(SYNC_END), data)})
    assert len(ends) > 100
    assert feed_in_pieces(data, ends) == 1


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(size=st.integers(min_value=256, max_value=8192))
def test_codex_output_in_pieces_of_any_size_is_one_compaction(size: int) -> None:
    data = CODEX_MID_TURN.read_bytes()
    assert feed_in_pieces(data, list(range(size, len(data), size))) == 1


def test_two_observers_each_see_their_hinted_line_and_a_failing_one_leaves() -> None:
    """The compaction watch and the turn's begin watch observe the same screen: each gets every
    reading, the hints of both make output emulated at once, and an observer that raises is
    dropped without taking the other with it."""
    import threading
    import time

    from wrapagent.inject.followed_screen import FollowedScreen

    followed = FollowedScreen(5, 60)
    compacting, working = threading.Event(), threading.Event()
    calls = {"broken": 0}

    def broken(text: str) -> None:
        calls["broken"] += 1
        raise RuntimeError("an observer's bug")

    followed.observe(broken)
    followed.observe(lambda text: compacting.set() if "Compacting" in text else None, hints=(b"ompact",))
    followed.observe(lambda text: working.set() if "esc to interrupt" in text else None,
                     hints=(b"esc to interrupt",))
    try:
        for line in (b"* Compacting conversation (0s)", b"* Thinking (1s, esc to interrupt)"):
            followed.feed(b"\r\x1b[2K" + line)
            for i in range(40):  # replaced at once, then redrawn every 20 ms: no pause to wait for
                followed.feed(b"\r\x1b[2K* working %d" % i)
                time.sleep(0.02)
        end = time.monotonic() + 30.0
        while not (compacting.is_set() and working.is_set()):
            assert time.monotonic() < end, (compacting.is_set(), working.is_set())
            time.sleep(0.02)
        assert calls["broken"] == 1
    finally:
        followed.close()
