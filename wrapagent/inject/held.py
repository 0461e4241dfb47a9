"""Keys held from the tool while the blocks go in, and released with the timing they came with.

A tool reads its input as it comes: a paste's end and the Enter typed 0.8 s
after it are two reads, and gemini 0.61 takes an Enter that comes in the same
read as a paste's end as part of the paste (the message is never submitted).
So held keys are released read by read: the first at once, each later one as
far behind the one before as it came, at most HELD_GAP_CAP_SECS (an Enter right after
a paste's end: its own pause up to ENTER_AFTER_PASTE_CAP_SECS). A read that
comes after the last replayed one went, but sooner after it than it was typed
(the replay runs late by the hold), is queued the same way: else an Enter typed
0.5 s after the last letter reaches the tool 0.07 s after it, and gemini 0.61
under load submits the composer without that letter. Pure data and
arithmetic on the injector's clock; the injector feeds each read when its
time comes (`pop_due`) and keeps them apart from the tool until then.
"""

from __future__ import annotations

HELD_GAP_CAP_SECS = 0.3
"""Released held keys keep the gaps between the reads they came in, each at most this long.

Above every CLI's "Enter right after text or a paste is not a submit" window
(codex 120 ms, gemini 30-40 ms: docs/cli-behaviour.md), so an Enter typed
apart stays apart; short enough that a long hold (slow guards) is not
replayed for seconds after it ended.
"""

ENTER_AFTER_PASTE_CAP_SECS = 1.0
"""…except an Enter right after a paste's end: it keeps its own pause, up to this long.

gemini 0.61 takes an Enter that comes while it is still taking in a paste as part of the
paste (nothing is submitted; the composer keeps `[Pasted Text: 12 lines]`). Under load that
was seen with the pause cut to HELD_GAP_CAP_SECS when the user had waited 0.8 s: released as
the user typed them, the tool gets what it would have got without wrapagent."""

PASTE_END = b"\x1b[201~"


def _cap(data: bytes, before: bytes) -> float:
    """The longest gap kept in front of the read `data`, after the read `before`."""
    if data[:1] in (b"\r", b"\n") and before.endswith(PASTE_END):
        return ENTER_AFTER_PASTE_CAP_SECS
    return HELD_GAP_CAP_SECS


class HeldKeys:
    """Reads held (each with the time it arrived), then replayed (each with the time it is due)."""

    def __init__(self) -> None:
        self.reads: list[tuple[float, bytes]] = []
        """Held: (arrival time, bytes), in order."""
        self.replay: list[tuple[float, float, bytes]] = []
        """Released, not given to the tool yet: (due time, arrival time, bytes), in order."""
        self._last: tuple[float, float] | None = None
        """(time it went, arrival time) of the last released read, while the replay runs late."""
        self._last_data = b""
        """The last released read's bytes (an Enter after a paste's end keeps a longer gap)."""

    def hold(self, now: float, data: bytes) -> None:
        if data:
            self.reads.append((now, data))

    def take_all(self) -> bytes:
        """Everything held or still to replay, at once (injection switched off after an error)."""
        out = b"".join(d for _, d in self.reads) + b"".join(d for _, _, d in self.replay)
        self.reads.clear()
        self.replay.clear()
        self._last = None
        return out

    def release(self, now: float) -> tuple[int, int, bytes]:
        """Release the held reads: (bytes held, reads held, the first read's bytes, due now).

        The others are scheduled behind it with their original gaps (capped).
        """
        reads, self.reads = self.reads, []
        if not reads:
            return 0, 0, b""
        self._last, self._last_data = (now, reads[0][0]), reads[0][1]
        due, previous, before = now, reads[0][0], reads[0][1]
        for arrived, data in reads[1:]:
            due += min(_cap(data, before), max(0.0, arrived - previous))
            previous, before = arrived, data
            self.replay.append((due, arrived, data))
        return sum(len(d) for _, d in reads), len(reads), reads[0][1]

    def queue(self, data: bytes, now: float) -> None:
        """A read that arrives while released reads are still to go: behind them, spaced the same way."""
        due, arrived = self.replay[-1][:2] if self.replay else self._last or (now, now)
        before = self.replay[-1][2] if self.replay else self._last_data
        self.replay.append((due + min(_cap(data, before), max(0.0, now - arrived)), now, data))

    def busy(self, now: float) -> bool:
        """Whether a read arriving `now` must be queued (`queue`) rather than go at once.

        True while released reads are still to go, and after the last one went
        until its gap to a read arriving now is as long as it was typed (capped).
        """
        if self.replay:
            return True
        end = self._lag_end()
        if end is None or now >= end:
            self._last = None
            return False
        return True

    def _lag_end(self) -> float | None:
        """Until when a new read would reach the tool closer to the last replayed one than typed."""
        if self._last is None:
            return None
        went, arrived = self._last
        return went + HELD_GAP_CAP_SECS if went > arrived else None

    def next_due(self) -> float | None:
        return self.replay[0][0] if self.replay else self._lag_end()

    def pop_due(self, now: float) -> bytes | None:
        """The next replayed read if its time has come, else None."""
        if self.replay and self.replay[0][0] <= now:
            _, arrived, data = self.replay.pop(0)
            self._last, self._last_data = (now, arrived), data
            return data
        return None

    def rehold(self) -> None:
        """A replayed key started a message again (a Ctrl-C, then a key): the rest is held with it."""
        self.reads.extend((arrived, data) for _, arrived, data in self.replay)
        self.replay.clear()
