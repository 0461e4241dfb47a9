"""The injector's states, by name: shared by the injector's parts and read by `wrapagent doctor`.

A conversation's first message goes STARTING (or WAIT_READY after a reset)
→ ARMED → HOLDING → DELIVERING → SETTLING → AWAIT_SUBMIT, then CHATTING for
the rest of a whole session or DONE; COMMAND is a command (or a message
begun too early) passing through untouched until it is submitted.

`TRANSITIONS` is the one table of every change of state the injector makes,
each with why; the injector checks each change against it (`allowed`) and
logs one it does not list (a bug: the table or the code is wrong), and the
injector's key property checks that none happens.
"""

from __future__ import annotations

STARTING = "starting"
WAIT_READY = "wait-ready"   # after a reset: keys pass, until the composer shows again
ARMED = "armed"
COMMAND = "command"
HOLDING = "holding"
DELIVERING = "delivering"
SETTLING = "settling"
AWAIT_SUBMIT = "await-submit"
CHATTING = "chatting"
DONE = "done"

HOLD_STATES = (HOLDING, DELIVERING, SETTLING)
"""The user's keys are held from the tool in these (the blocks are on their way)."""

TRANSITIONS: dict[str, dict[str, str]] = {
    STARTING: {
        ARMED: "the tool's composer is ready and empty: the next message gets the blocks",
        COMMAND: "ready, but a message was begun before it: it goes untouched",
        CHATTING: "ready, with no blocks to give: turns only",
    },
    WAIT_READY: {
        ARMED: "the composer shows again after a reset or a compaction",
        COMMAND: "it shows again, with a message begun before it",
    },
    ARMED: {
        HOLDING: "the first key of a message: held while the blocks go in",
        COMMAND: "a command, or text the keys do not start a message with, passes untouched",
        WAIT_READY: "a reset or a compaction was submitted",
    },
    COMMAND: {
        ARMED: "the command (or the early message) was submitted or cleared",
        WAIT_READY: "it was a reset or a compaction",
    },
    HOLDING: {
        DELIVERING: "the guards' blocks are known: they are written",
        AWAIT_SUBMIT: "every block is empty: the held keys go as they are",
        CHATTING: "every block is empty, and nothing is held for later messages",
        DONE: "every block is empty (first-message mode)",
    },
    DELIVERING: {
        SETTLING: "every chunk is written: the receipt is awaited",
    },
    SETTLING: {
        AWAIT_SUBMIT: "the receipt (or its absence) decided: the held keys go",
        DELIVERING: "nothing was drawn: the blocks are written again",
    },
    AWAIT_SUBMIT: {
        ARMED: "the composer was cleared before the submission, or the next message is armed",
        CHATTING: "the message was submitted: the rest of the session",
        DONE: "the message was submitted (first-message mode)",
        WAIT_READY: "submitted without the blocks: the next message gets them once the composer shows",
    },
    CHATTING: {
        ARMED: "`every_message` guards: the next message is armed",
        WAIT_READY: "a reset or a compaction was submitted",
    },
    DONE: {},
}
"""Every change of state: from → {to: why}. Any state may also go to DONE on an internal error."""


def allowed(old: str, new: str) -> bool:
    """`old` → `new` is in `TRANSITIONS` (staying is always allowed, and DONE on an error)."""
    return old == new or new == DONE or new in TRANSITIONS.get(old, {})
