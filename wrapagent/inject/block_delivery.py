"""Delivering the blocks while the message's first keys are held, then releasing the keys.

HOLDING waits for the blocks (guards may still run; the wake fd says when
they finish), DELIVERING writes them in chunks (`delivery.py`), SETTLING
waits until the screen took them (output quiet `settle_secs`, at most
`settle_max_secs`), the receipt is read from the screen (`receipt.py`: the
blocks, or the tool's paste placeholder, drawn since the delivery began),
then the held keys are released with their timing (`held.py`) and fed as if
typed just now. Without a receipt the blocks are written once more if the
tool drew nothing at all, else the report says `not delivered` and why, and
the user sees one line. A mixin of `SessionInjector`: it shares the
injector's state.
"""

from __future__ import annotations

from wrapagent.inject.delivery import delivered_text, delivery_chunks, now_iso
from wrapagent.inject.states import AWAIT_SUBMIT, DELIVERING, DONE, HOLD_STATES, SETTLING

NOT_DELIVERED = "not delivered"
"""The report's status when the screen never showed the blocks in the composer."""

MAX_ATTEMPTS = 2
"""The blocks are written at most twice per message (`receipt.retry_is_safe`)."""


class BlocksDelivery:
    """Hold, deliver, settle, release (part of `SessionInjector`)."""

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
        self.report.text = delivered_text(self.adapter, self._prefix)  # what the model will read
        return self._write_blocks(now)

    def _write_blocks(self, now: float) -> bytes:
        """One attempt: a fresh emulator for the receipt, then the chunks."""
        from wrapagent.inject.screen import Screen

        assert self._prefix
        self.report.attempts += 1
        self._close_receipt()
        self._receipt_screen = Screen(*self._size)
        self._receipt_drawn = False
        self._receipt_read_at = float("-inf")
        self._outbox = delivery_chunks(self.adapter, self._prefix, now)
        self.state = DELIVERING
        return self._due_chunks(now)

    def _receipt_feed(self, data: bytes) -> None:
        """The tool's output while the blocks go in and settle: what the receipt reads."""
        if self._receipt_screen is not None and self.state in (DELIVERING, SETTLING):
            self._receipt_screen.feed(data)
            self._receipt_drawn = True

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
        from wrapagent.inject import receipt

        quiet = self._output_since_receipt and now - self.last_output >= self.adapter.settle_secs
        timed_out = now - self._delivered_at >= self._settle_limit()
        if not (quiet or timed_out):
            return b""

        outcome = self._read_receipt()
        if outcome != receipt.SHOWN and not timed_out:
            # Quiet, but the composer does not show them yet: the tool may still be echoing
            # (claude echoes typed input ~100 ms late, after other redraws). Wait for more
            # output, at most until `receipt.settle_limit`.
            self._receipt_read_at = self.last_output
            return b""
        self._close_receipt()
        if outcome != receipt.SHOWN:
            if receipt.retry_is_safe(outcome) and self.report.attempts < MAX_ATTEMPTS:
                self._note(f"attempt {self.report.attempts}: {receipt.REASONS[outcome]}; writing the blocks again")
                return self._write_blocks(now)
            return self._not_delivered(now, receipt.REASONS[outcome])
        self.report.status = "delivered"
        self.report.at = now_iso()
        return self._release(now, finished=False)

    def _settle_limit(self) -> float:
        """Seconds after the delivery by which the receipt is decided, if the screen never shows it."""
        from wrapagent.inject.receipt import settle_limit

        return settle_limit(self.adapter.settle_max_secs)

    @property
    def _output_since_receipt(self) -> bool:
        """Output since the delivery, and since the receipt was last read without success."""
        return self._output_since_delivery and self.last_output > self._receipt_read_at

    def _read_receipt(self) -> str:
        """receipt.SHOWN, or why the screen does not show the blocks in the composer."""
        from wrapagent.inject import receipt
        from wrapagent.inject.readiness import looks_like_dialog

        screen = self._receipt_screen
        assert screen is not None and self.report.text is not None
        text = screen.text()
        return receipt.verdict(text, self._receipt_drawn, self.report.text, looks_like_dialog(text))

    def _close_receipt(self) -> None:
        if self._receipt_screen is not None:
            self._receipt_screen.close()
            self._receipt_screen = None

    def _not_delivered(self, now: float, reason: str) -> bytes:
        """No receipt: the message goes on without the blocks, and the user is told in one line."""
        from wrapagent.inject.receipt import screen_notice

        self.report.status = NOT_DELIVERED
        self._note(f"not delivered: {reason}")
        self.screen_notice = screen_notice(self.adapter.name, "the guard blocks", reason)
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
        if not self._keys.busy(now) and self.state == DONE:  # (busy forgets a lag that is over)
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
        self._close_receipt()
