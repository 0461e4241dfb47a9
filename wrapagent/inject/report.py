"""What the session record says about one conversation's injection (`injection`, `injections`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class InjectionReport:
    """What the session record says about one conversation's injection."""

    status: str = "pending"   # pending | delivered | submitted | none | unused | lost
    """`unused`: the blocks were ready but no message was submitted (quit at once, commands
    only, not an agent); `lost`: a message reached the tool without them (notes say why)."""
    path: str = "interactive"
    text: str | None = None
    at: str | None = None
    attempts: int = 0
    ready_after_s: float | None = None
    ready_by: str | None = None
    """Which readiness rule fired for this conversation: "marker" (the adapter's own screen
    markers) or "generic" (bracketed paste on + output quiet, the fallback when the markers
    did not show: the tool's screen changed). None: the composer was never seen ready."""
    first_key_delay_ms: float | None = None
    notes: list[str] = field(default_factory=list)
    conversation: int = 1
    """1 for the session's first conversation, +1 after each reset command."""
    message: int = 1
    """Which message of its conversation got these blocks (>1: `every_message` guards, or the
    message after a compaction or after an undelivered one)."""
    compaction: bool = False
    """These blocks follow a compaction of the conversation (`/compact`, `/compress`)."""


def close_unsubmitted(report: InjectionReport, *, unfinished: str | None, bare: list[str]) -> str:
    """The tool exited before this conversation's blocks were submitted: settle the report.

    `lost` only when a message reached the tool without them (`bare`: why,
    one note each); the reason is returned for the log the user is pointed
    to. Else `unused` (no message needed them: quit at once, commands only,
    not an agent), or `none` after a reset with no message: nothing to say.
    """
    if unfinished:
        report.notes.append(unfinished)
    elif report.conversation > 1 and not bare:
        report.status = "none"
        report.notes.append("no message after the reset")
        return ""
    if bare:
        report.status = "lost"
        report.notes.extend(dict.fromkeys(bare))
        return "; ".join(report.notes)
    report.status = "unused"
    report.notes.append("no message was submitted")
    return ""
