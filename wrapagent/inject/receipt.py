"""The delivery receipt: did the text wrapagent wrote reach the tool's composer?

Written bytes are no proof: a dialog drawn over the composer after it was
ready takes them (claude's "Make auto mode your default permission mode?"
ate the typed blocks, and the model got the user's text alone while the
record said "delivered"), and a composer may drop a paste. So before the
user's held keys (or wrapagent's own Enter) go on, the screen is read: an
emulator started when the delivery began, fed only what the tool drew since,
must show the text itself or the tool's paste placeholder.

What the screen shows of a delivered text, measured on the four CLIs: the
text (claude types it; opencode with its paste summary off; codex and gemini
for a short paste), or a placeholder for a long paste (`[Pasted text #1 +8
lines]` claude, `[Pasted Content 1200 chars]` codex, `[Pasted Text: 8 lines]`
gemini, `[Pasted ~8 lines]` opencode). A long text may be scrolled in the
composer, and a line wider than the composer wraps: the probes are the first
and the last non-blank line, each cut to `PROBE_CHARS` characters, compared
with runs of blanks made one space (TUIs skip blank cells with cursor moves,
claude puts a no-break space after its `❯`).

A fresh emulator sees only what was drawn after the delivery began, so an
earlier copy of the same blocks in the transcript cannot vouch for this one.
"""

from __future__ import annotations

import re

PROBE_CHARS = 30
"""Characters of a probe line: fits in any composer without wrapping."""

PLACEHOLDER = re.compile(r"\[Pasted[ ~][^\]\n]{0,40}\]")
"""The paste placeholders of the four CLIs (see the module docstring)."""

NOTHING_DRAWN_WAIT_SECS = 3.0
"""While the screen does not show the text, wait this long (not just the adapter's
`settle_max_secs`) before calling it not taken: a loaded machine may delay an echo (opencode's
paste handling is asynchronous; claude's echo of the typed blocks came 1.5 s late on a 2-core
machine under a load of 25, after other redraws, and was called not delivered although the model
got them). Writing the blocks twice (nothing drawn) would give the model two copies, and a false
`not delivered` gives the next message a second set."""


def settle_limit(settle_max_secs: float) -> float:
    """How long after a delivery the receipt is decided at the latest, if the screen never shows it."""
    return max(settle_max_secs, NOTHING_DRAWN_WAIT_SECS)


_BLANKS = re.compile(r"[ \t\u00a0]+")

SHOWN = "shown"
NOTHING_DRAWN = "nothing drawn"
NOT_SHOWN = "not shown"
DIALOG = "dialog"

REASONS = {
    NOTHING_DRAWN: "the tool drew nothing after the text was written (its composer did not take it)",
    NOT_SHOWN: "the composer did not show the text after it was written",
    DIALOG: "a dialog covered the composer when the text was written",
}
"""Why a text was not delivered, for the record and the one line on screen."""


def _flat(text: str) -> str:
    return _BLANKS.sub(" ", text)


def probes(text: str) -> list[str]:
    """The first and the last non-blank line of `text`, blanks collapsed, cut to PROBE_CHARS."""
    lines = [_flat(line).strip() for line in text.splitlines()]
    lines = [line[:PROBE_CHARS] for line in lines if line]
    if not lines:
        return []
    return list(dict.fromkeys([lines[-1], lines[0]]))


def verdict(screen_text: str, drawn: bool, text: str, dialog: bool) -> str:
    """SHOWN, or why not: NOTHING_DRAWN, DIALOG, NOT_SHOWN.

    `screen_text`: the emulator fed since the delivery began; `drawn`: it was
    fed anything at all; `dialog`: that screen looks like a dialog.
    """
    if not drawn:
        return NOTHING_DRAWN
    if PLACEHOLDER.search(screen_text):
        return SHOWN
    flat = "\n".join(_flat(line).strip() for line in screen_text.splitlines())
    wanted = probes(text)
    if not wanted or any(probe in flat for probe in wanted):
        return SHOWN
    return DIALOG if dialog else NOT_SHOWN


def retry_is_safe(outcome: str) -> bool:
    """Write the text again only when the tool showed no sign of it at all.

    A text that drew anything (even not recognisably) may be half in the
    composer; a dialog would take the second copy too.
    """
    return outcome == NOTHING_DRAWN


NOTICE_PREFIX = "wrapagent: "


def screen_notice(tool: str, what: str, reason: str) -> bytes:
    """One line for the user's terminal, on its last row (the tool redraws over it later)."""
    line = f"{NOTICE_PREFIX}{what} did not reach {tool}'s composer: {reason}"
    line = "".join(c if c.isprintable() else "?" for c in line)  # the tool's name is the user's word
    # Save the cursor, last row, erase it, the line in reverse video, restore the cursor.
    return b"\x1b7\x1b[999;1H\x1b[2K\x1b[7m" + line.encode() + b"\x1b[27m\x1b8"
