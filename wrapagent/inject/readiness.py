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
selection pointer on a choice (numbered, `Yes`/`No`, a `✔`), the key hint of a
choice (`Enter to confirm`, `Press enter to continue`, `enter select`),
`Do you trust`, or a question for a secret or a code (a login's `Paste code
here`, `Enter your API key`). While one shows, the generic rule waits: the user's keys
answer it untouched, the tool draws its composer, and the rules are tried on
that screen once output is quiet again.

`ready_by` in the report (and the session record) says which rule fired;
`quiet` is a reset's own rule for tools that redraw nothing recognisable
after one (output quiet `reset_quiet_secs`).
"""

from __future__ import annotations

import re

from wrapagent.inject.states import CHATTING, STARTING, WAIT_READY

READY_CHECK_INTERVAL = 0.05

FIRST_KEY_QUIET_SECS = 0.5
"""A first message key while output has been quiet this long (bracketed paste on, something
drawn, not a dialog, no marker) makes the generic rule fire at once instead of at the bound.
The longest quiet stretch measured on a drawn screen before a composer was 0.32 s."""

TYPED_ECHO_SECS = 0.5
"""Keys typed while the tool starts show in its composer within this long (claude echoes typed
input 94-163 ms late, it batches input to find pastes; more on a loaded machine). Until then the
ready screen cannot tell whether they began a message (the blocks must not go in the middle of
it) or went elsewhere (a start-up question's answer): readiness waits for the echo."""

_POINTER = r"[›❯●◉▶►→]"
_DIALOG = re.compile(
    # A selection pointer on a choice: `› 1. Yes, allow…`, `❯ 2. No, exit`, `● 1. Trust folder`,
    # `❯ No, exit` (claude 2.1.330 numbers nothing), `❯ ✔ Auto (match terminal)` (a theme picker).
    r"(?m)^[ \t│┃|║]*" + _POINTER + r"[ \t]*(?:\d{1,2}[.)][ \t]+\S|✔|(?:Yes|No)\b)"
    # The key hints of choice dialogs: `Enter to confirm`, `Press enter to continue`,
    # `enter continue · esc back`, `enter select · esc back` (an Esc hint alone is no dialog:
    # composers show `esc to interrupt`-like hints too).
    # `enter resume · esc start new`: codex's `resume` picker, a `›` on the chosen session's row.
    r"|(?i:\b(?:enter|return|⏎)[ \t]+(?:to[ \t]+)?(?:confirm|continue|select|resume)\b)"
    r"|(?i:\bdo[ \t]+you[ \t]+trust\b)"
    # A question for a secret or a code (a login's `Paste code here if prompted >`, an API key
    # field): the user's paste there must never get the blocks in front of it.
    # Narrow on purpose: a resumed conversation's transcript ("paste your code here") is on
    # the screen too, and a dialog match there stops both rules.
    r"|(?i:\bpaste[ \t]+code[ \t]+here\b)"
    r"|(?i:\b(?:enter|paste|provide|type)[ \t]+(?:your[ \t]+|an?[ \t]+|the[ \t]+)?(?:\w+[ \t]+)?"
    r"(?:api[ \t-]?key|access[ \t]+token|password|passphrase)\b)"
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
        if self._typed_unseen(now):
            self._next_check = self._typed_at + TYPED_ECHO_SECS
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

    def _typed_unseen(self, now: float) -> bool:
        """Text typed on the tool's composer while it started, under TYPED_ECHO_SECS ago, that its
        screen does not show yet: where it went is not known, so it is not taken for ready yet.

        claude draws its composer before it is ready (`_markers_in_part`); a person types there.
        If the footer's key hint came before the first of those keys were echoed, the ready screen
        showed an empty composer and the blocks went in after them. Keys typed before any
        composer was drawn are not waited for: they answer start-up dialogs, or are lost.
        """
        if self.state != STARTING or not self._composer.has_text or now - self._typed_at >= TYPED_ECHO_SECS:
            return False
        return not (self._typed_on_screen() or self._ready_screen_holds_text())

    def _ready_on_key(self, data: bytes, now: float) -> bool:
        """The user's first message key came before the bound: fire the generic rule now if it holds.

        Without this, a person who starts typing as soon as the composer shows (before
        output was quiet for the whole bound) would submit their first message without
        the blocks on every release whose markers changed.
        """
        since = max(self.last_output, self._reset_at) if self.state == WAIT_READY else self.last_output
        if self._fallback_due() is None or now - since < FIRST_KEY_QUIET_SECS or self._typed_unseen(now):
            return False
        if self.state == WAIT_READY and self.last_output <= self._reset_at:
            return False  # nothing drawn since the reset: the timer path would never fire either
        from wrapagent.inject.keys import PASTE_START, TEXT, tokenize

        if not any(tok.kind in (TEXT, PASTE_START) for tok in tokenize(data)):
            return False
        if self._markers_in_part():
            return False
        if not self._generic_ready(quiet=True):
            return False
        self._became_ready(now, "generic", at_key=True)
        return True

    def _typed_on_screen(self) -> bool:
        """Text the user typed before the ready screen shows in it: a message has begun.

        The blocks cannot go in front of it (measured: claude, `typed at o` typed on its first
        frame, then ready, then the next key: `typed at o<system-reminder>…nce`). Text that is
        not on the screen went elsewhere (a start-up dialog's answer) and begins nothing.
        Fewer than 3 characters are never taken for a message: a one-key answer looks alike.
        """
        typed = self._composer.typed.strip()
        if len(typed) < 3 or self._composer.in_paste:
            return False
        lines = typed.splitlines()
        return bool(lines) and lines[-1].strip()[-30:] in self.screen.text()

    def _typed_at_cursor(self) -> bool:
        """An unknown TUI: text typed on its drawn screen before the quiet check is a begun
        message when the screen shows it right before the cursor (any length: `0`, `y` typed
        into its composer); else those keys answered whatever was drawn (a start-up question)."""
        composer = self._composer
        if not self._typed_on_drawn or not composer.has_text or composer.in_paste:
            return False
        typed = composer.typed.rstrip("\r\n").splitlines()
        return bool(typed) and bool(typed[-1].strip()) and self.screen.before_cursor().endswith(typed[-1].rstrip())
    def _composer_drawn(self) -> bool:
        """The screen so far shows the tool's composer (by its shape), ready or not."""
        if self.model.shape is None:
            return False
        from wrapagent.inject.screen_model import EMPTY, TEXT

        return self.model.read(self.screen.text()).composer in (EMPTY, TEXT)

    def _markers_in_part(self) -> bool:
        """Some of the markers show, not all: the tool's own screen, still being drawn.

        claude 2.1.330 draws its composer (`❯`) and the mode first, runs its start-up checks
        (a question may come up over the composer), and only then its footer's key hint: a
        key on that first frame is no reason to fall back, the rest of the screen is coming.
        """
        patterns = self._current_patterns()
        if len(patterns) < 2:
            return False
        text = self.screen.text()
        shown = sum(1 for p in patterns if p.search(text))
        return 0 < shown < len(patterns)

    def _current_patterns(self) -> list[re.Pattern[str]]:
        return self._reset_patterns if self.state == WAIT_READY else self._patterns

    def _screen_ready(self) -> bool:
        """The ready markers are on the screen as drawn so far (no markers: the generic rule)."""
        if not self._bp_seen:
            return False
        patterns = self._current_patterns()
        text = self.screen.text()
        if not patterns:
            return has_content(text) and not self._dialog_up(text)
        # A marker may show on a dialog too (codex's `›` on its resume picker's chosen row).
        reading = self.model.read(text)
        if reading.dialog:
            return False
        if all(p.search(text) for p in patterns):
            return True
        # The tool's empty composer found by its shape, where the marker text is gone (opencode's
        # `Ask anything` placeholder in a continued session): its own marker too, by structure.
        # Not while only some of the markers show: that is the tool's screen still being drawn
        # (claude's first frame has its composer and rules, and a start-up question may still
        # come over it before the footer's key hint).
        from wrapagent.inject.screen_model import EMPTY

        return (self.model.shape is not None and reading.composer == EMPTY and not reading.working
                and not self._markers_in_part())

    def _dialog_up(self, text: str) -> bool:
        """A dialog by the screen's structure (`screen_model.py`): the tool's composer is not at
        the bottom and a choice or its key hints are; never a transcript's look-alike lines."""
        return self.model.read(text).dialog

    def _fallback_due(self) -> float | None:
        """When the generic rule may fire if nothing more is drawn (None: it never will)."""
        bound = self.adapter.fallback_quiet_secs
        if bound is None or not self._bp_seen or not self._current_patterns():
            return None
        return self.last_output + bound

    def _generic_ready(self, quiet: bool = False) -> bool:
        text = self.screen.text()
        if self._dialog_up(text):
            if not quiet:
                self.log("injection: a dialog is on the screen; waiting for the composer")
            return False
        # After a reset the emulator starts blank and holds only what was drawn since.
        return has_content(text) or self.state == WAIT_READY

    def _became_ready(self, now: float, by: str, at_key: bool = False) -> None:
        self._screen_dirty = False
        self._next_check = None
        self.watch_output = self._keep_watching
        self._typed_shown = self._typed_on_screen() or self._typed_at_cursor()
        self.screen.close()
        self.report.ready_by = by
        if by == "generic" and self._current_patterns():
            self._fell_back(at_key)
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
        if not self.inject and self.prompt_given:
            self._prompt_submitted(now)

    def _fell_back(self, at_key: bool) -> None:
        """The adapter's markers did not show: say so once, and let wrapagent's own messages
        (stop check, `send`) find the composer by the same rule."""
        what = "reset_ready_patterns" if self.state == WAIT_READY else "ready_patterns"
        when = (f"at the first message key, after {FIRST_KEY_QUIET_SECS:g}s of quiet output" if at_key
                else f"after {self.adapter.fallback_quiet_secs:g}s of quiet output")
        self.log(f"injection: {self.adapter.name}'s {what} did not show; the generic rule fired {when} "
                 "(the tool's screen changed: injection still works)")
        if self.outgoing is not None:
            self.outgoing.use_generic_composer()
        from wrapagent.inject.screen_model import ScreenModel

        self.model = ScreenModel(None)  # the tool's shape does not fit its screen either
        if self.view is not None:
            self.view.model = self.model
