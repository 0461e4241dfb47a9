"""The injector's states, by name: shared by the injector's parts and read by `wrapagent doctor`.

A conversation's first message goes STARTING (or WAIT_READY after a reset)
→ ARMED → HOLDING → DELIVERING → SETTLING → AWAIT_SUBMIT, then CHATTING for
the rest of a whole session or DONE; COMMAND is a command (or a message
begun too early) passing through untouched until it is submitted.
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
