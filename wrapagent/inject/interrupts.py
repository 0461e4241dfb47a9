"""Did the user interrupt the agent? Decided per tool from their keys and the tool's cancel notice.

A stop the user caused (they pressed the tool's interrupt key while the agent
worked) is theirs: the stop check must not send the agent back to work, and
queued `wrapagent send` messages wait for their next message. A wrapper sees
keys and output, not the agent's state, so two things must agree:

- **the key**: the tool's interrupt key reached it while a turn was under
  way (a submission, no stop seen since), pressed as often as the tool wants
  (opencode asks for a second Esc within a few seconds). Type-ahead, mode
  keys (shift+tab, Tab), Enter or digits answering a dialog are other keys
  and change nothing; a key while the composer holds a `/command` (its menu
  is open: Esc closes that) is no interrupt either;
- **the notice**: the tool's own cancel notice appeared in its output after
  that key. Without it the key did something else (closed a popup,
  dismissed a dialog the tool does not count as a cancel) and the stop is
  an ordinary one. claude shows no notice when it cancels a request that
  has produced nothing yet (it puts the message back into the composer), so
  for claude the key alone decides.

Measured on the pinned releases (mock model, a reply held back 25 s):

| tool | keys that interrupt | notice |
|---|---|---|
| codex 0.169 | Esc, Ctrl-C | `■ Conversation interrupted - use /feedback …` |
| claude 2.1.330 | Esc, Ctrl-C | `⎿ Interrupted · What should Claude do instead?`, or none |
| gemini 0.61 | Esc, Ctrl-C | `ℹ Request cancelled.` |
| opencode 1.18.33 | Esc twice (`esc again to interrupt`); Ctrl-C quits | `▣ Build · <model> · interrupted` |

The output after the key is scanned as text with the escape sequences
taken out (a TUI moves the cursor between words; opencode redraws only the
cells that changed, so only ` · interrupted` may be written), bounded.
"""

from __future__ import annotations

import re

from wrapagent.inject.keys import ESCAPE, INTERRUPT, PASTE_END, PASTE_START, REPLY, tokenize

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

MAX_SCANNED_BYTES = 256 * 1024
"""Output kept after an interrupt key until the stop: the notice comes within a frame or two."""

_ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]P_^X][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?")


class InterruptRule:
    """How one tool is interrupted: which keys, how many presses, and the notice it shows."""

    __slots__ = ("keys", "presses", "window_secs", "notice")

    def __init__(self, keys: tuple[str, ...], presses: int = 1, window_secs: float = 5.0,
                 notice: str | None = None) -> None:
        self.keys = keys
        """Token kinds (`keys.ESCAPE`, `keys.INTERRUPT`) that interrupt a working agent."""
        self.presses = presses
        """How many of them in a row, each within `window_secs` of the one before."""
        self.window_secs = window_secs
        self.notice = re.compile(notice) if notice else None
        """The tool's cancel notice (on escape-free output text); None: the keys alone decide."""


RULES: dict[str, InterruptRule] = {
    "codex": InterruptRule((ESCAPE, INTERRUPT), notice=r"Conversation\s+interrupted"),
    # No notice when claude cancels a request that produced nothing yet: the keys decide.
    "claude": InterruptRule((ESCAPE, INTERRUPT)),
    "gemini": InterruptRule((ESCAPE, INTERRUPT), notice=r"Request\s+cancelled"),
    # Ctrl-C quits opencode while it works; Esc once only shows `esc again to interrupt`.
    "opencode": InterruptRule((ESCAPE,), presses=2, notice=r"·\s*interrupted"),
}
DEFAULT_RULE = InterruptRule((ESCAPE, INTERRUPT))
"""A tool without measurements: Esc or Ctrl-C while it works is taken for an interrupt."""


def rule_for(tool: str) -> InterruptRule:
    return RULES.get(tool, DEFAULT_RULE)


def output_text(data: bytes) -> str:
    """Output as plain text: escape sequences become a space (a cursor move separates words)."""
    return re.sub(r"\s+", " ", _ESCAPES.sub(b" ", data).decode("utf-8", "replace"))


class InterruptWatch:
    """Follows the keys that reach the tool and says, at a stop, whether the user interrupted it.

    Everything runs on the proxy's thread (the injector's calls are never
    concurrent). `working` tells whether a turn is under way and which one.
    """

    def __init__(self, rule: InterruptRule, working: Callable[[], int | None],
                 log: Callable[[str], None] = lambda m: None) -> None:
        self.rule = rule
        self.working = working
        """The turn under way (submitted, no stop seen since), or None while the agent waits."""
        self.log = log
        self._presses = 0
        self._last_press = 0.0
        self._turn: int | None = None   # the turn the interrupt keys were pressed in
        self._key_at: float | None = None
        self._output = bytearray()
        self._in_paste = False

    @property
    def wants_output(self) -> bool:
        """An interrupt key was pressed and the tool's notice is still to be seen."""
        return self._key_at is not None and self.rule.notice is not None

    def keys(self, data: bytes, now: float, command: bool = False) -> None:
        """The user's bytes as they reach the tool; `command`: the composer holds a `/command`."""
        for tok in tokenize(data):
            if tok.kind == PASTE_START:
                self._in_paste = True
            elif tok.kind == PASTE_END:
                self._in_paste = False
            elif tok.kind in self.rule.keys and not self._in_paste:
                self._pressed(now, command)
            elif tok.kind != REPLY:
                self._presses = 0  # another key between two Escs: opencode starts over

    def _pressed(self, now: float, command: bool) -> None:
        turn = self.working()
        if turn is None or command:
            self._presses = 0
            return
        if self._presses and now - self._last_press > self.rule.window_secs:
            self._presses = 0
        self._presses += 1
        self._last_press = now
        if self._presses < self.rule.presses:
            return
        self._presses = 0
        if self._key_at is None or self._turn != turn:
            self._output.clear()
        self._turn, self._key_at = turn, now
        self.log(f"interrupts: turn {turn}: interrupt key pressed while the agent worked")

    def output(self, data: bytes) -> None:
        """The tool's output after an interrupt key (called while `wants_output`)."""
        if len(self._output) < MAX_SCANNED_BYTES:
            self._output += data[:MAX_SCANNED_BYTES - len(self._output)]

    def pressed_in(self, turn: int) -> bool:
        """Whether the interrupt key was pressed in `turn` (nothing forgotten: see `take`)."""
        return self._key_at is not None and self._turn == turn

    def take(self, turn: int) -> bool:
        """At the stop after `turn`: True when the user interrupted it. Forgets the key either way."""
        key_turn, self._turn, self._key_at = self._turn, None, None
        scanned, self._output = bytes(self._output), bytearray()
        self._presses = 0
        if key_turn is None or key_turn != turn:
            return False
        notice = self.rule.notice
        if notice is None:
            return True
        if notice.search(output_text(scanned)):
            return True
        self.log(f"interrupts: turn {turn}: no cancel notice after the key: an ordinary stop")
        return False
