"""When the tool's composer is ready for the first message: the adapter's markers, else the generic rule.

Two rules, tried in this order:

- **marker**: the adapter's `ready_patterns` (after a reset, `reset_ready_patterns`)
  all match the screen as drawn, bracketed paste is on, output was quiet
  `ready_quiet_secs`. Fast and exact, but a line of text a release may change.
- **generic**: bracketed paste is on, the screen shows something that is not a
  dialog, and output has been quiet `fallback_quiet_secs` with no marker. It is
  the rule unknown TUIs get (with `ready_quiet_secs`, since they have no markers
  to wait for), and every adapter's fallback: a release that renamed its
  placeholder still gets the blocks instead of a silent session without them.

The fallback's bound must be longer than any quiet stretch a tool has, with
bracketed paste already on, before its composer is really there (opencode turns
it on seconds before it accepts input; gemini loses keys typed before its
composer shows), and it only starts counting once output stopped: a tool that
is still drawing its start-up is never taken for ready. Measured on the four
CLIs, pinned and older releases: `bench/ready_timeline.md`.

A start-up dialog (trust this folder, choose a theme, where the new chat runs)
is quiet too, with bracketed paste on: it must never be taken for the
composer, or the blocks would be pasted into it and the key that answers it
held. `looks_like_dialog` recognises what all the measured dialogs share: a
numbered list of choices with a selection pointer on one of them, or the
confirm/cancel footer (`Enter to confirm`, `Press enter to continue`,
`Esc to cancel`). While one shows, the generic rule waits: the user's keys
answer it untouched, the tool draws its composer, and the rules are tried on
that screen once output is quiet again.

`ready_by` in the report (and the session record) says which rule fired;
`quiet` is a reset's own rule for tools that redraw nothing recognisable
after one (output quiet `reset_quiet_secs`).
"""

from __future__ import annotations

import re

from wrapagent.inject.states import CHATTING, WAIT_READY

READY_CHECK_INTERVAL = 0.05

_POINTER = r"[›❯>▶▸►→●◉◆*]"
_DIALOG = re.compile(
    # A selection pointer on a numbered choice: `› 1. Yes, allow…`, `❯ 2. No, exit`, `● 1. Trust folder`.
    r"(?m)^[\s│┃|║]*" + _POINTER + r"\s*\d{1,2}[.)]\s+\S"
    # The footers of choice dialogs.
    r"|(?i:\b(?:enter|return|⏎)\s+to\s+(?:confirm|continue|select)\b)"
    r"|(?i:\bpress\s+enter\s+to\s+continue\b)"
    r"|(?i:\besc(?:ape)?\s+to\s+(?:cancel|exit|go\s+back)\b)"
    r"|(?i:\bdo\s+you\s+trust\b)"
)


def looks_like_dialog(text: str) -> bool:
    """A choice dialog is on the screen (see the module docstring): never the composer."""
    return _DIALOG.search(text) is not None


def has_content(text: str) -> bool:
    """Something is drawn: a tool that only switched bracketed paste on is still starting."""
    return any(not c.isspace() for c in text)


class Readiness:
    """The injector's part that decides when its composer is ready (see module docstring).

    Shares the injector's state: `state`, `screen`, `adapter`, `report`,
    `last_output`, `_bp_seen`, `_patterns`, `_reset_patterns`, `_screen_dirty`,
    `_next_check`.
    """

    def _check_ready(self, now: float) -> None:
        """Called by `poll` in STARTING (and WAIT_READY with reset markers) when `_next_check` is due."""
        if self._next_check is None or now < self._next_check:
            return
        quiet = self.adapter.ready_quiet_secs
        if now - self.last_output < quiet:
            self._next_check = self.last_output + quiet
            return
        if self._screen_dirty:
            self._screen_dirty = False
            if self._screen_ready():
                self._became_ready(now, "marker" if self._current_patterns() else "generic")
                return
            self._next_check = self._fallback_due()
            return
        # Nothing drawn since the markers were last looked for: the fallback's bound is up.
        self._next_check = None
        if self._generic_ready():
            self._became_ready(now, "generic")

    def _current_patterns(self) -> list[re.Pattern[str]]:
        return self._reset_patterns if self.state == WAIT_READY else self._patterns

    def _screen_ready(self) -> bool:
        """The ready markers are on the screen as drawn so far (no markers: the generic rule)."""
        if not self._bp_seen:
            return False
        patterns = self._current_patterns()
        text = self.screen.text()
        if not patterns:
            return has_content(text) and not looks_like_dialog(text)
        return all(p.search(text) for p in patterns)

    def _fallback_due(self) -> float | None:
        """When the generic rule may fire if nothing more is drawn (None: it never will)."""
        bound = self.adapter.fallback_quiet_secs
        if bound is None or not self._bp_seen or not self._current_patterns():
            return None
        return self.last_output + bound

    def _generic_ready(self) -> bool:
        text = self.screen.text()
        if looks_like_dialog(text):
            self.log("injection: a dialog is on the screen; waiting for the composer")
            return False
        # After a reset the emulator starts blank and holds only what was drawn since.
        return has_content(text) or self.state == WAIT_READY

    def _became_ready(self, now: float, by: str) -> None:
        self._screen_dirty = False
        self._next_check = None
        self.watch_output = self._keep_watching
        self.screen.close()
        self.report.ready_by = by
        if by == "generic" and self._current_patterns():
            self._fell_back(now)
        if self.state == WAIT_READY:
            self._arm()
            self.log(f"injection: composer ready again for conversation {self.report.conversation}"
                     f" ({by} rule)")
            return
        self.report.ready_after_s = round(now - self._t0, 3)
        if self.inject:
            self._arm()
        else:
            self.state = CHATTING
        self.log(f"injection: {self.adapter.name} ready after {self.report.ready_after_s:.2f}s"
                 f" ({by} rule)")

    def _fell_back(self, now: float) -> None:
        """The adapter's markers did not show: say so once, and let wrapagent's own messages
        (stop check, `send`) find the composer by the same rule."""
        what = "reset_ready_patterns" if self.state == WAIT_READY else "ready_patterns"
        self.log(f"injection: {self.adapter.name}'s {what} did not show within "
                 f"{self.adapter.fallback_quiet_secs:g}s of quiet output; the generic rule fired "
                 "(the tool's screen changed: injection still works)")
        if self.outgoing is not None:
            self.outgoing.use_generic_composer()
