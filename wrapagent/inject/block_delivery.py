"""Delivering the blocks while the message's first keys are held, then releasing the keys.

HOLDING waits for the blocks (guards may still run; the wake fd says when
they finish), DELIVERING writes them in chunks (`delivery.py`), SETTLING
waits until the screen took them (output quiet `settle_secs`, at most
`settle_max_secs`), then the held keys are released with their timing
(`held.py`) and fed as if typed just now. A mixin of `FirstMessageInjector`:
it shares the injector's state.
"""

from __future__ import annotations

from wrapagent.inject.delivery import delivered_text, delivery_chunks, now_iso
from wrapagent.inject.states import AWAIT_SUBMIT, DELIVERING, DONE, HOLD_STATES, SETTLING


class BlocksDelivery:
    """Hold, deliver, settle, release (part of `FirstMessageInjector`)."""

    @property
    def _output_since_delivery(self) -> bool:
        return self._delivered_at is not None and self.last_output > self._delivered_at

    def _start_delivery(self, now: float) -> bytes:
        if self._prefix is None:
            self._drain_wake()
            prefix = self.get_prefix()
            if prefix is None:
                return b""  # guards still running; the wake fd tells us when they finish
            self._prefix = prefix
        if not self._prefix:
            self.report.status = "none"
            self.report.notes.append("all blocks empty: nothing injected")
            # Later messages are armed at each submission: this one's keys go as they are, and the
            # next message is armed once this one is submitted (finishing now would re-arm at once
            # and hold this message's own keys again, one at a time, never submitting it).
            return self._release(now, finished=not (self.whole_session and self.on_message is not None))
        self.report.attempts += 1
        self.report.text = delivered_text(self.adapter, self._prefix)  # what the model will read
        self._outbox = delivery_chunks(self.adapter, self._prefix, now)
        self.state = DELIVERING
        return self._due_chunks(now)

    def _due_chunks(self, now: float) -> bytes:
        out = bytearray()
        while self._outbox and self._outbox[0][0] <= now:
            out += self._outbox.pop(0)[1]
        if not self._outbox:
            self.state = SETTLING
            self._delivered_at = now
        return bytes(out)

    def _maybe_release(self, now: float) -> bytes:
        assert self._delivered_at is not None
        quiet = self._output_since_delivery and now - self.last_output >= self.adapter.settle_secs
        timed_out = now - self._delivered_at >= self.adapter.settle_max_secs
        if not (quiet or timed_out):
            return b""
        if timed_out and not self._output_since_delivery:
            self._note("the screen did not change after delivery; released the keys anyway")
        self.report.status = "delivered"
        self.report.at = now_iso()
        return self._release(now, finished=False)

    def _release(self, now: float, *, finished: bool) -> bytes:
        """Give the held keys to the child, read as if they had just been typed.

        They go through `_feed` in the new state, so an Enter among them
        submits, and a reset among them (fast typing) still counts. The first
        read goes now, the others when their turn comes (`held.HeldKeys`).
        """
        if self._trigger_at is not None:
            self.report.first_key_delay_ms = round((now - self._trigger_at) * 1000, 1)
        self.watch_output = self._keep_watching  # no deadline depends on output any more (a re-hold sets it again)
        size, count, first = self._keys.release(now)
        if finished:
            self._finish()
        else:
            self.state = AWAIT_SUBMIT
            self._in_paste = False
        self.log(f"injection: released {size} held bytes in {count} reads after "
                 f"{self.report.first_key_delay_ms} ms ({self.report.status})")
        out = self._feed(first, now)
        self._rehold_replay()
        return out + self._due_replay(now)  # reads that came together go together

    def _due_replay(self, now: float) -> bytes:
        """Replayed reads whose time has come, fed as if typed now."""
        out = bytearray()
        while self.state not in HOLD_STATES:
            data = self._keys.pop_due(now)
            if data is None:
                break
            out += self._on_input(data, now)
            self._rehold_replay()
        if not self._keys.replay and self.state == DONE:
            self.done = True  # held back by `_finish` until the last replayed key went
        return bytes(out)

    def _rehold_replay(self) -> None:
        """A replayed key started a message again (a Ctrl-C, then a key): the rest is held with it."""
        if self._keys.replay and self.state in HOLD_STATES:
            self._keys.rehold()

    def _rearm(self) -> None:
        """Back to waiting for a first message; the prefix is kept and delivered again."""
        self._outbox.clear()
        self._delivered_at = None
        self.report.status = "pending"
