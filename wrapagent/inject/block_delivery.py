"""Delivering the blocks while the message's first keys are held, then releasing the keys.

HOLDING waits for the blocks (guards may still run; the wake fd says when
they finish), DELIVERING writes them in chunks (`delivery.py`), SETTLING
waits until the screen took them (output quiet `settle_secs`, at most
`settle_max_secs`), the receipt is read from the screen (`receipt.py`: the
blocks, or the tool's paste placeholder, drawn since the delivery began),
then the held keys are released with their timing (`held.py`) and fed as if
typed just now. Without a receipt the blocks are written once more if the
tool drew nothing at all, else the report says `not delivered` and why, and
the user sees one line.

`BlocksDelivery` owns one message's delivery: its blocks, the chunks still
to write, the receipt's emulator and when it was read. It is told the
injector's state and the time of the tool's latest output, and says what
comes next (chunks to write, all written, the receipt's verdict); the
injector changes state and releases the held keys.
"""

from __future__ import annotations

from wrapagent.inject.delivery import delivery_chunks
from wrapagent.inject.states import DELIVERING, HOLDING, SETTLING

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.inject.adapters.base import Adapter
    from wrapagent.inject.report import InjectionReport
    from wrapagent.inject.screen import Screen

NOT_DELIVERED = "not delivered"
"""The report's status when the screen never showed the blocks in the composer."""

MAX_ATTEMPTS = 2
"""The blocks are written at most twice per message (`receipt.retry_is_safe`)."""

RETRY = "retry"
"""The receipt's verdict: nothing was drawn, the blocks are written again."""
RELEASE = "release"
"""The receipt's verdict: the held keys go (the blocks were shown, or not delivered: the report says)."""


class BlocksDelivery:
    """One message's blocks on their way into the composer (see module docstring)."""

    def __init__(self, adapter: Adapter, get_prefix: Callable[[], str | None],
                 log: Callable[[str], None]) -> None:
        self.adapter = adapter
        self.get_prefix = get_prefix
        self.log = log
        """The blocks, once the guards finished (None until then)."""
        self.prefix: str | None = None
        self.trigger_at: float | None = None
        """When the message's first key was held."""
        self._outbox: list[tuple[float, bytes]] = []
        self._delivered_at: float | None = None
        self._receipt_screen: Screen | None = None
        """Fed with what the tool draws while the blocks go in."""
        self._receipt_drawn = False
        self._receipt_read_at = float("-inf")
        """`last_output` when the receipt was last read and not there yet."""
        self.notice = b""
        """One line for the user's terminal when the blocks were not delivered (taken by the injector)."""

    def held(self, now: float) -> None:
        """The first key of a message is held: the blocks are wanted."""
        self.trigger_at = now

    def blocks(self, report: InjectionReport) -> str | None:
        """The blocks, once the guards computed them (None: still running; the wake fd says when).
        The report says what the model will read, or that every block was empty."""
        if self.prefix is None:
            self.prefix = self.get_prefix()
        if self.prefix == "":
            report.status = "none"
            report.notes.append("all blocks empty: nothing injected")
        elif self.prefix is not None:
            from wrapagent.inject.delivery import delivered_text

            report.text = delivered_text(self.adapter, self.prefix)  # what the model will read
        return self.prefix

    def write(self, now: float, rows: int, cols: int, report: InjectionReport) -> None:
        """One attempt: a fresh emulator for the receipt, then the chunks (`due_chunks`)."""
        from wrapagent.inject.screen import Screen

        assert self.prefix
        report.attempts += 1
        self.close_receipt()
        self._receipt_screen = Screen(rows, cols)
        self._receipt_drawn = False
        self._receipt_read_at = float("-inf")
        self._outbox = delivery_chunks(self.adapter, self.prefix, now)

    def due_chunks(self, now: float) -> tuple[bytes, bool]:
        """The chunks whose time has come, and whether every chunk is written."""
        out = bytearray()
        while self._outbox and self._outbox[0][0] <= now:
            out += self._outbox.pop(0)[1]
        if not self._outbox:
            self._delivered_at = now
        return bytes(out), not self._outbox

    def on_output(self, data: bytes, state: str) -> None:
        """The tool's output while the blocks go in and settle: what the receipt reads."""
        if self._receipt_screen is not None and state in (DELIVERING, SETTLING):
            self._receipt_screen.feed(data)
            self._receipt_drawn = True

    def deadline(self, state: str, last_output: float) -> float | None:
        """When the injector must look again in a delivery's states (None: nothing timed)."""
        if state == HOLDING and self.prefix is not None:
            # Re-held in the middle of a release (a Ctrl-C, then a key, in one batch):
            # the blocks are known, deliver again at once instead of waiting for a key.
            return self.trigger_at or 0.0
        if state == DELIVERING and self._outbox:
            return self._outbox[0][0]
        if state == SETTLING:
            assert self._delivered_at is not None
            if self._output_since_receipt(last_output):
                return min(last_output + self.adapter.settle_secs, self._delivered_at + self._settle_limit())
            return self._delivered_at + self._settle_limit()
        return None

    def settled(self, now: float, last_output: float, report: InjectionReport) -> str | None:
        """SETTLING: RELEASE or RETRY once the receipt is decided (the report says which receipt);
        None: wait for more output.

        Without a receipt the blocks are written once more if that is safe
        (`receipt.retry_is_safe`), else the message goes on without them, the report says
        `not delivered` and why, and `notice` holds one line for the user."""
        outcome = self._receipt(now, last_output, report)
        if outcome is None:
            return None
        from wrapagent.inject import receipt

        if outcome == receipt.SHOWN:
            from wrapagent.inject.delivery import now_iso

            report.status = "delivered"
            report.at = now_iso()
            return RELEASE
        reason = receipt.REASONS[outcome]
        if receipt.retry_is_safe(outcome) and report.attempts < MAX_ATTEMPTS:
            self._note(report, f"attempt {report.attempts}: {reason}; writing the blocks again")
            return RETRY
        report.status = NOT_DELIVERED
        self._note(report, f"not delivered: {reason}")
        self.notice = receipt.screen_notice(self.adapter.name, "the guard blocks", reason)
        return RELEASE

    def _note(self, report: InjectionReport, message: str) -> None:
        report.notes.append(message)
        self.log(f"injection: {message}")

    def _receipt(self, now: float, last_output: float, report: InjectionReport) -> str | None:
        """The receipt's outcome once it is decided (`receipt.SHOWN`, or why the screen does not
        show the delivered blocks in the composer); None: wait for more."""
        assert self._delivered_at is not None and report.text is not None
        from wrapagent.inject import receipt

        quiet = self._output_since_receipt(last_output) and now - last_output >= self.adapter.settle_secs
        timed_out = now - self._delivered_at >= self._settle_limit()
        if not (quiet or timed_out):
            return None
        outcome = self._read_receipt(report.text)
        if outcome != receipt.SHOWN and not timed_out:
            # Quiet, but the composer does not show them yet: the tool may still be echoing
            # (claude echoes typed input ~100 ms late, after other redraws). Wait for more
            # output, at most until `receipt.settle_limit`.
            self._receipt_read_at = last_output
            return None
        self.close_receipt()
        return outcome

    def rearm(self) -> None:
        """Back to waiting for a first key; the blocks are kept and delivered again."""
        self._outbox.clear()
        self._delivered_at = None
        self.close_receipt()

    def forget(self) -> None:
        """A new message or conversation: its blocks are computed afresh."""
        self.prefix = None
        self.trigger_at = None
        self.rearm()

    def close_receipt(self) -> None:
        if self._receipt_screen is not None:
            self._receipt_screen.close()
            self._receipt_screen = None

    def _settle_limit(self) -> float:
        """Seconds after the delivery by which the receipt is decided, if the screen never shows it."""
        from wrapagent.inject.receipt import settle_limit

        return settle_limit(self.adapter.settle_max_secs)

    def _output_since_receipt(self, last_output: float) -> bool:
        """Output since the delivery, and since the receipt was last read without success."""
        return (self._delivered_at is not None and last_output > self._delivered_at
                and last_output > self._receipt_read_at)

    def _read_receipt(self, text: str) -> str:
        """receipt.SHOWN, or why the screen does not show the blocks in the composer."""
        from wrapagent.inject import receipt
        from wrapagent.inject.readiness import looks_like_dialog

        screen = self._receipt_screen
        assert screen is not None
        drawn = screen.text()
        return receipt.verdict(drawn, self._receipt_drawn, text, looks_like_dialog(drawn))
