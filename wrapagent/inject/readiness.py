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

from wrapagent.inject.states import STARTING, WAIT_READY

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.inject.adapters.base import Adapter
    from wrapagent.inject.composer import Composer
    from wrapagent.inject.screen_model import ScreenModel

BP_ON = b"\x1b[?2004h"
_BP_TAIL = len(BP_ON) - 1

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
    """Whether the tool's composer is ready (see module docstring): an object of its own.

    Owns the readiness emulator (fed only while the injector waits for the ready
    screen: STARTING, or WAIT_READY after a reset), the markers, whether
    bracketed paste was seen, when to look again, and what the keys typed
    before readiness left on the screen. Its inputs: the adapter, the composer
    the injector follows the user's keys with (read only), and at each call the
    injector's state and the time of the tool's latest output. It never changes
    the injector's state: `check` and `on_key` return the rule that fired, and
    the injector makes the composer ready (`ready` here for this part's share).
    """

    def __init__(self, adapter: Adapter, composer: Composer, model: ScreenModel, rows: int, cols: int,
                 log: Callable[[str], None]) -> None:
        from wrapagent.inject.screen import Screen

        self.adapter = adapter
        self.composer = composer
        self.model = model
        """The tool's screen model (`screen_model.py`); the generic one once the markers failed."""
        self.log = log
        self.screen = Screen(rows, cols)
        """The readiness emulator: what the tool drew, until its composer is ready."""
        self.patterns = [re.compile(p) for p in adapter.ready_patterns]
        self.reset_patterns = [re.compile(p) for p in adapter.reset_ready_patterns]
        self.reset_at = 0.0
        """When the latest reset (or typed compaction) was submitted."""
        self.bp_seen = not adapter.requires_bracketed_paste
        self._bp_tail = b""
        self._check_after = max(adapter.ready_quiet_secs, READY_CHECK_INTERVAL)
        """After output, the ready screen is looked for once it has been quiet this long."""
        self.dirty = False
        """Output came since the markers were last looked for."""
        self.next_check: float | None = None
        self.typed_on_drawn = False
        """A key came while an unknown TUI's screen was drawn but not yet quiet (`_quiet_enough`):
        at readiness, its text is a begun message if the screen shows it at the cursor, else
        it answered whatever was drawn (`_typed_at_cursor`)."""
        self.typed_shown = False
        """At the ready screen, text typed before it showed in it (`_typed_on_screen`)."""
        self.typed_at = float("-inf")
        """When a key typed on the tool's composer, before it was ready, last reached it
        (`_typed_unseen`)."""

    # -- what the injector feeds it ----------------------------------------------

    def feed(self, data: bytes, now: float) -> None:
        """The tool's output while the ready screen is awaited."""
        self.screen.feed(data)
        if not self.bp_seen:
            # The sequence may be split between two chunks: the last bytes of the one before,
            # joined to the first bytes of this one (never the whole chunk copied: a tool's
            # flood comes in reads of ~2.5 KB, each passing here).
            # An ESC first (memchr: a plain-text flood of megabytes passes at memory speed; the
            # sequence search itself ran at ~1.4 GB/s, 88 ms of a 120 MB `cat`'s output thread).
            if (b"\x1b" in data and BP_ON in data) or BP_ON in self._bp_tail + data[:_BP_TAIL]:
                self.bp_seen = True
            self._bp_tail = data[-_BP_TAIL:] if len(data) >= _BP_TAIL else (self._bp_tail + data)[-_BP_TAIL:]
        self.dirty = True
        self.next_check = now + self._check_after

    def key_before_ready(self, kind: str, now: float) -> None:
        """A key of the user's while the tool starts: text typed on its drawn composer is waited
        for until it shows (`_typed_unseen`)."""
        from wrapagent.inject.keys import PASTE_START, TEXT

        if kind in (TEXT, PASTE_START) and self._composer_drawn():
            self.typed_at = now

    def wait_again(self, now: float, rows: int, cols: int) -> bool:
        """After a reset the tool may show a dialog first (codex asks where the new chat runs).

        With `reset_ready_patterns`, the next message waits until they show on a fresh
        emulator fed only with what the tool draws from now on; without, until output
        has been quiet `reset_quiet_secs` since the reset (no emulator, no copy).
        Returns whether the tool's output is needed for it.
        """
        self.reset_at = now
        self.dirty = False
        self.next_check = None
        if not self.reset_patterns:
            return False
        from wrapagent.inject.screen import Screen

        self.screen = Screen(rows, cols)
        return True

    def close(self) -> None:
        self.screen.close()

    # -- what it says --------------------------------------------------------------

    def deadline(self, state: str, last_output: float) -> float | None:
        """When the injector must look again, in STARTING or WAIT_READY."""
        if state == STARTING or self.reset_patterns:
            return self.next_check
        return max(last_output, self.reset_at) + self.adapter.reset_quiet_secs

    def quiet_after_reset(self, now: float, last_output: float) -> bool | None:
        """A tool without reset markers: output quiet `reset_quiet_secs` since the reset (None:
        the tool has markers, `check` decides)."""
        if self.reset_patterns:
            return None
        return now - max(last_output, self.reset_at) >= self.adapter.reset_quiet_secs

    def check(self, now: float, state: str, last_output: float) -> str | None:
        """Called by `poll` in STARTING (and WAIT_READY with reset markers): the rule that fired
        once `next_check` is due (`marker`, `generic`), or None."""
        if self.next_check is None or now < self.next_check:
            return None
        quiet = self.adapter.ready_quiet_secs
        if now - last_output < quiet:
            self.next_check = last_output + quiet
            return None
        if self._typed_unseen(now, state):
            self.next_check = self.typed_at + TYPED_ECHO_SECS
            return None
        if self.dirty:
            self.dirty = False
            if self.screen_ready(state):
                return "marker" if self._current_patterns(state) else "generic"
            self.next_check = self._fallback_due(state, last_output)
            return None
        # Nothing drawn since the markers were last looked for: the fallback's bound is up.
        self.next_check = None
        return "generic" if self._generic_ready(state) else None

    def on_key(self, data: bytes, now: float, state: str, last_output: float) -> tuple[str, bool] | None:
        """A key of the user's while the ready screen is awaited: the rule it makes fire now, and
        whether it fired at the key only (else None: the key passes as it is)."""
        if self.dirty and self.screen_ready(state) and not self._typed_unseen(now, state):
            if self._quiet_enough(now, state, last_output):
                # The composer is drawn but its quiet period is not over: a key now
                # starts a message, so the blocks must go before it, not after.
                return ("marker" if self._current_patterns(state) else "generic"), False
            self.typed_on_drawn = True
            return None
        if state == STARTING or self.reset_patterns:
            return ("generic", True) if self._ready_on_key(data, now, state, last_output) else None
        return None

    def ready(self, by: str, at_key: bool, state: str) -> bool:
        """The composer is ready (`by` a rule): this part's share. True when the generic rule fired
        where the adapter has markers: the screen model is the generic one from now on."""
        self.dirty = False
        self.next_check = None
        self.typed_shown = self._typed_on_screen() or self._typed_at_cursor()
        self.screen.close()
        if by == "generic" and self._current_patterns(state):
            self._fell_back(at_key, state)
            return True
        return False

    def begun_message(self, state: str, followed: bool) -> bool:
        """At readiness (`state` the injector's, before it arms): did keys typed before it begin a
        message the blocks cannot go in front of? Settles the composer empty when they did not
        (a key that answered a start-up dialog, `followed`: the screen is followed all session
        and tells at the first key)."""
        composer = self.composer
        typed_shown, self.typed_shown = self.typed_shown, False
        if self.typed_on_drawn and not typed_shown and not composer.in_paste:
            composer.settled_empty()  # keys on a screen not quiet yet that it does not show: an answer
        self.typed_on_drawn = False
        if composer.in_paste:
            return True
        if composer.unknown and not followed:
            # Keys that answered a start-up dialog (↓, Tab) or came before a reset's
            # composer: the ready screen is the composer's, empty (no screen model
            # to ask at the first key).
            composer.settled_empty()
        return typed_shown or (composer.has_text and self._ready_screen_holds_text(state))

    # -- the rules -------------------------------------------------------------------

    def _quiet_enough(self, now: float, state: str, last_output: float) -> bool:
        """A key on a drawn screen may make it ready before its quiet period is over only for a
        tool whose markers showed: an unknown TUI's screen that merely has something drawn may
        be a start-up question (`(Y)es/(N)o`, drawn 50 ms ago) the key answers. Its key waits
        for the quiet check like the timer; text it leaves in the composer begins a message
        that goes without the blocks (the next one gets them)."""
        if state != STARTING or self.patterns:
            return True  # (after a reset: the tool's own rules, `wait_again`)
        return now - last_output >= self.adapter.ready_quiet_secs

    def _ready_screen_holds_text(self, state: str) -> bool:
        """Keys typed before readiness: the ready screen shows them in the tool's composer (by
        the screen model), so blocks cannot go in front of them. Without a shape, or when the
        screen shows the composer empty (they answered a start-up dialog, or the tool dropped
        them), the next key starts the message as before."""
        if self.model.shape is None or state != STARTING:
            return False
        from wrapagent.inject.screen_model import TEXT

        return self.model.read(self.screen.text()).composer == TEXT

    def _typed_unseen(self, now: float, state: str) -> bool:
        """Text typed on the tool's composer while it started, under TYPED_ECHO_SECS ago, that its
        screen does not show yet: where it went is not known, so it is not taken for ready yet.

        claude draws its composer before it is ready (`_markers_in_part`); a person types there.
        If the footer's key hint came before the first of those keys were echoed, the ready screen
        showed an empty composer and the blocks went in after them. Keys typed before any
        composer was drawn are not waited for: they answer start-up dialogs, or are lost.
        """
        if state != STARTING or not self.composer.has_text or now - self.typed_at >= TYPED_ECHO_SECS:
            return False
        return not (self._typed_on_screen() or self._ready_screen_holds_text(state))

    def _ready_on_key(self, data: bytes, now: float, state: str, last_output: float) -> bool:
        """The user's first message key came before the bound: the generic rule fires now if it holds.

        Without this, a person who starts typing as soon as the composer shows (before
        output was quiet for the whole bound) would submit their first message without
        the blocks on every release whose markers changed.
        """
        since = max(last_output, self.reset_at) if state == WAIT_READY else last_output
        if (self._fallback_due(state, last_output) is None or now - since < FIRST_KEY_QUIET_SECS
                or self._typed_unseen(now, state)):
            return False
        if state == WAIT_READY and last_output <= self.reset_at:
            return False  # nothing drawn since the reset: the timer path would never fire either
        from wrapagent.inject.keys import PASTE_START, TEXT, tokenize

        if not any(tok.kind in (TEXT, PASTE_START) for tok in tokenize(data)):
            return False
        if self._markers_in_part(state):
            return False
        return self._generic_ready(state, quiet=True)

    def _typed_on_screen(self) -> bool:
        """Text the user typed before the ready screen shows in it: a message has begun.

        The blocks cannot go in front of it (measured: claude, `typed at o` typed on its first
        frame, then ready, then the next key: `typed at o<system-reminder>…nce`). Text that is
        not on the screen went elsewhere (a start-up dialog's answer) and begins nothing.
        Fewer than 3 characters are never taken for a message: a one-key answer looks alike.
        """
        typed = self.composer.typed.strip()
        if len(typed) < 3 or self.composer.in_paste:
            return False
        lines = typed.splitlines()
        return bool(lines) and lines[-1].strip()[-30:] in self.screen.text()

    def _typed_at_cursor(self) -> bool:
        """An unknown TUI: text typed on its drawn screen before the quiet check is a begun
        message when the screen shows it right before the cursor (any length: `0`, `y` typed
        into its composer); else those keys answered whatever was drawn (a start-up question)."""
        composer = self.composer
        if not self.typed_on_drawn or not composer.has_text or composer.in_paste:
            return False
        typed = composer.typed.rstrip("\r\n").splitlines()
        return bool(typed) and bool(typed[-1].strip()) and self.screen.before_cursor().endswith(typed[-1].rstrip())

    def _composer_drawn(self) -> bool:
        """The screen so far shows the tool's composer (by its shape), ready or not."""
        if self.model.shape is None:
            return False
        from wrapagent.inject.screen_model import EMPTY, TEXT

        return self.model.read(self.screen.text()).composer in (EMPTY, TEXT)

    def _markers_in_part(self, state: str) -> bool:
        """Some of the markers show, not all: the tool's own screen, still being drawn.

        claude 2.1.330 draws its composer (`❯`) and the mode first, runs its start-up checks
        (a question may come up over the composer), and only then its footer's key hint: a
        key on that first frame is no reason to fall back, the rest of the screen is coming.
        """
        patterns = self._current_patterns(state)
        if len(patterns) < 2:
            return False
        text = self.screen.text()
        shown = sum(1 for p in patterns if p.search(text))
        return 0 < shown < len(patterns)

    def _current_patterns(self, state: str) -> list[re.Pattern[str]]:
        return self.reset_patterns if state == WAIT_READY else self.patterns

    def screen_ready(self, state: str) -> bool:
        """The ready markers are on the screen as drawn so far (no markers: the generic rule)."""
        if not self.bp_seen:
            return False
        patterns = self._current_patterns(state)
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
                and not self._markers_in_part(state))

    def _dialog_up(self, text: str) -> bool:
        """A dialog by the screen's structure (`screen_model.py`): the tool's composer is not at
        the bottom and a choice or its key hints are; never a transcript's look-alike lines."""
        return self.model.read(text).dialog

    def _fallback_due(self, state: str, last_output: float) -> float | None:
        """When the generic rule may fire if nothing more is drawn (None: it never will)."""
        bound = self.adapter.fallback_quiet_secs
        if bound is None or not self.bp_seen or not self._current_patterns(state):
            return None
        return last_output + bound

    def _generic_ready(self, state: str, quiet: bool = False) -> bool:
        text = self.screen.text()
        if self._dialog_up(text):
            if not quiet:
                self.log("injection: a dialog is on the screen; waiting for the composer")
            return False
        # After a reset the emulator starts blank and holds only what was drawn since.
        return has_content(text) or state == WAIT_READY

    def _fell_back(self, at_key: bool, state: str) -> None:
        """The adapter's markers did not show: say so once; the tool's shape does not fit its
        screen either (the injector lets wrapagent's own messages find the composer by the
        same rule)."""
        what = "reset_ready_patterns" if state == WAIT_READY else "ready_patterns"
        when = (f"at the first message key, after {FIRST_KEY_QUIET_SECS:g}s of quiet output" if at_key
                else f"after {self.adapter.fallback_quiet_secs:g}s of quiet output")
        self.log(f"injection: {self.adapter.name}'s {what} did not show; the generic rule fired {when} "
                 "(the tool's screen changed: injection still works)")
        from wrapagent.inject.screen_model import ScreenModel

        self.model = ScreenModel(None)
