"""One reading of the tool's screen: where the composer is and what it holds, a dialog, working.

Everything wrapagent types on its own (the blocks, a stop check's continuation, a
`wrapagent send`) depends on three questions about the screen as the user sees it:

- **the composer**: is the tool's message input on the screen, and is it empty, holding
  text, or not to be read (`EMPTY`, `TEXT`, `ABSENT`, `UNKNOWN`)?
- **a dialog**: is one of the tool's own questions up (trust this folder, approve a
  command, pick a session to resume), which a key from wrapagent would answer?
- **working**: is the agent busy with a turn (its interrupt hint is shown)?

They are answered from the screen's *structure*, never from the words of one line: an
agent's reply full of `1. Yes` / `❯ No, exit` / "Do you want to proceed?" is transcript,
because it sits above the composer, and the composer is the tool's own prompt line at the
bottom of the screen, with only its footer below it (claude's also between two rules). A
dialog replaces the composer: no composer at the bottom, and the tool's key hints for a
choice (`enter select · esc back`, `Enter to resume · Esc to close`) or a pointer on a
choice in the last lines of the screen. What each tool draws is data (`ScreenShape`,
one per adapter name, measured on the screens in `tests/screens/`); a tool without a
shape (an unknown agent TUI) gets the generic reading: the composer is never known, and
a dialog is a choice pattern in the bottom lines of the screen.

A fourth question, **compaction notices**, is counted the same way: the line a tool draws
when it compacted the conversation on its own (`Context compacted · 0s`, claude's
`Compacting conversation…` status) is matched as a *whole line in the tool's own layout*,
so a user's message (drawn behind the tool's prompt glyph) or an agent's reply (behind its
reply glyph, indented after its first line) that quotes the words is not one.
"""

from __future__ import annotations

import re

from wrapagent.values import Frozen

EMPTY = "empty"
TEXT = "text"
ABSENT = "absent"
UNKNOWN = "unknown"

BOTTOM_LINES = 8
"""Non-blank lines at the bottom of the screen where a dialog's choices and key hints sit."""

_POINTER = r"[›❯●◉▶►→>]"
_CHOICE = re.compile(
    # a selection pointer on a choice: `› 1. Yes, allow…`, `❯ No, exit`, `● 1. Trust folder`
    r"(?m)^[ \t│┃|║]*" + _POINTER + r"[ \t]*(?:\d{1,2}[.)][ \t]+\S|✔|(?:Yes|No)\b)")
_KEY_HINT = re.compile(
    # the key hints of choice dialogs: `Enter to confirm`, `enter select · esc back`,
    # `enter resume · esc start new`, `Press enter to continue`, `(Use Enter to select)`
    r"(?i:\b(?:enter|return|⏎)[ \t]+(?:to[ \t]+)?(?:confirm|continue|select|resume|submit)\b)"
    r"|(?i:\besc[ \t]+(?:to[ \t]+)?(?:back|close|cancel|start[ \t]+new|exit)\b)"
    r"|(?i:\bdo[ \t]+you[ \t]+trust\b)"
    # a yes/no question: `(Y)es/(N)o`, `[y/N]`, `(y/n)` (an unknown TUI's start-up question)
    r"|(?i:\(y\)es\b|[\[(]y/n[\])])"
    r"|(?i:\bpaste[ \t]+code[ \t]+here\b)"
    r"|(?i:\b(?:enter|paste|provide|type)[ \t]+(?:your[ \t]+|an?[ \t]+|the[ \t]+)?(?:\w+[ \t]+)?"
    r"(?:api[ \t-]?key|access[ \t]+token|password|passphrase)\b)"
)
_NUMBERED = re.compile(r"^\d{1,2}[.)][ \t]")


class ScreenShape(Frozen):
    """How one tool draws its composer, as data (measured on its recorded screens)."""

    __slots__ = ("prompt", "rule_above", "rule_below", "rule_gap", "placeholders", "footer_lines",
                 "working", "dialog_hints", "anchor", "pad_lines", "compaction", "turns_show_working")
    _defaults = {"rule_above": None, "rule_below": None, "rule_gap": 0, "placeholders": (),
                 "footer_lines": 4, "working": (), "dialog_hints": (), "anchor": None, "pad_lines": 0,
                 "compaction": (), "turns_show_working": False}

    prompt: str
    """The composer's prompt line; the named group `text` is what the composer shows."""
    rule_above: str | None
    """The frame line above the composer (claude's and gemini's `────`), if it has one."""
    rule_below: str | None
    """The frame line below the composer (claude's `────`), if it has one."""
    rule_gap: int
    """Non-blank lines allowed between the prompt line and its frame lines (gemini's mode line)."""
    placeholders: tuple[str, ...]
    """What an empty composer shows instead of text (full-match regexes on `text`)."""
    footer_lines: int
    """At most this many non-blank lines below the prompt line (status, hints)."""
    working: tuple[str, ...]
    """Regexes on the composer's neighbourhood (4 lines above it to the end): a turn is running."""
    dialog_hints: tuple[str, ...]
    """The tool's own dialog frames or hints (bottom lines), beside the generic ones."""
    anchor: str | None
    """A box composer (opencode): the line closing the box at the bottom (its agent line,
    with `rule_below` right under it). The composer is the run of `prompt` lines directly
    above it, less `pad_lines` at each end; its text is theirs, joined."""
    pad_lines: int
    compaction: tuple[str, ...]
    """The tool's own lines saying it compacts or compacted the conversation by itself: each a
    regex that must match a whole screen line (trailing blanks dropped), measured on the pinned
    releases. Empty: automatic compaction is not recognised for this tool."""
    turns_show_working: bool
    """Every turn of the model shows `working` while it runs, from the request on (true of the
    four CLIs: their interrupt hint): a submission's turn ends only once it was seen
    (`TurnTracker.watch_begin`). False: a turn may end without it (the demo answers at once)."""


class ScreenReading(Frozen):
    """What the model decided on one screen (see the module docstring)."""

    __slots__ = ("composer", "composer_text", "dialog", "working", "composer_line")
    _defaults = {"composer_text": None, "composer_line": None}

    composer: str
    """EMPTY, TEXT, ABSENT (a shaped tool whose composer is not at the bottom) or UNKNOWN."""
    composer_text: str | None
    dialog: bool
    working: bool
    composer_line: int | None

    @property
    def idle_empty(self) -> bool:
        """The one screen wrapagent may type its own message into: an empty composer, no
        dialog, the agent not working."""
        return self.composer == EMPTY and not self.dialog and not self.working


class ScreenModel:
    """Reads screens of one tool: `read(text)` → `ScreenReading`."""

    def __init__(self, shape: ScreenShape | None) -> None:
        self.shape = shape
        if shape is None:
            return
        self._prompt = re.compile(shape.prompt)
        self._above = re.compile(shape.rule_above) if shape.rule_above else None
        self._below = re.compile(shape.rule_below) if shape.rule_below else None
        self._placeholders = [re.compile(p) for p in shape.placeholders]
        self._working = [re.compile(p) for p in shape.working]
        self._hints = [re.compile(p) for p in shape.dialog_hints]
        self._anchor = re.compile(shape.anchor) if shape.anchor else None
        self._compaction = [re.compile(p) for p in shape.compaction]

    @property
    def knows_compaction(self) -> bool:
        """The tool's compaction notices are known (see `compaction_notices`)."""
        return self.shape is not None and bool(self.shape.compaction)

    @property
    def working_hints(self) -> tuple[bytes, ...]:
        """The tool's working patterns that are plain text, as bytes: output holding one is
        emulated at once (`FollowedScreen.observe`), so a turn's hint that shows only briefly
        is still seen. A pattern with regex syntax has no such hint (it is seen at a pause)."""
        if self.shape is None:
            return ()
        return tuple(p.encode() for p in self.shape.working if re.fullmatch(r"[\w ]+", p))

    def compaction_notices(self, text: str) -> int:
        """How many of the tool's compaction lines the screen shows (see the module docstring).

        Whole lines only: the notice is a line of the tool's own layout, never a part of one.
        """
        if self.shape is None or not self._compaction:
            return 0
        return sum(1 for line in text.split("\n")
                   if any(p.fullmatch(line.rstrip()) for p in self._compaction))

    def read(self, text: str) -> ScreenReading:
        lines = text.split("\n")
        while lines and not lines[-1].strip():
            lines.pop()
        if self.shape is None:
            return ScreenReading(UNKNOWN, dialog=_bottom_dialog(lines), working=False)
        if self._anchor is not None:
            at, shown = self._box(lines)
        else:
            at = self._composer_line(lines)
            shown = _shown(self._prompt.match(lines[at])) if at is not None else ""
        if at is None:
            bottom = "\n".join(_bottom(lines))
            working = any(p.search(bottom) for p in self._working)
            dialog = not working and (_bottom_dialog(lines) or self._own_hint(lines))
            return ScreenReading(ABSENT, dialog=dialog, working=working)
        empty = not shown or any(p.fullmatch(shown) for p in self._placeholders)
        near = "\n".join(lines[max(0, at - 4):])
        working = any(p.search(near) for p in self._working)
        return ScreenReading(EMPTY if empty else TEXT, composer_text="" if empty else shown,
                             dialog=False, working=working, composer_line=at)

    def _composer_line(self, lines: list[str]) -> int | None:
        """The last prompt line with only its footer below it (and its rules, if any)."""
        assert self.shape is not None
        below = 0
        for i in range(len(lines) - 1, -1, -1):
            match = self._prompt.match(lines[i])
            if match is not None and not _NUMBERED.match(_shown(match)):
                if self._framed(lines, i):
                    return i
            if lines[i].strip():
                below += 1
                if below > self.shape.footer_lines + (1 if self._below else 0):
                    return None
        return None

    def _box(self, lines: list[str]) -> tuple[int | None, str]:
        """(line of the box's text, its text) for a box composer; (None, "") when not found."""
        assert self.shape is not None and self._anchor is not None
        below = 0
        for i in range(len(lines) - 1, -1, -1):
            if self._anchor.match(lines[i]) and self._framed(lines, i, above=False):
                run = i
                while run > 0 and self._prompt.match(lines[run - 1]):
                    run -= 1
                pad = self.shape.pad_lines
                body = lines[run + pad:i - pad]
                if len(body) < 1:
                    return None, ""
                texts = [_shown(self._prompt.match(line)) for line in body]
                return i - pad - 1, " ".join(t for t in texts if t)
            if lines[i].strip():
                below += 1
                if below > self.shape.footer_lines:
                    return None, ""
        return None, ""

    def _framed(self, lines: list[str], i: int, above: bool = True) -> bool:
        """The prompt line sits in the tool's frame: its rules within `rule_gap` lines."""
        assert self.shape is not None
        gap = self.shape.rule_gap + 1
        if above and self._above is not None:
            above = [line for line in lines[:i] if line.strip()][-gap:]
            if not any(self._above.match(line) for line in above):
                return False
        if self._below is not None:
            below = [line for line in lines[i + 1:] if line.strip()][:gap]
            if not any(self._below.match(line) for line in below):
                return False
        return True

    def _own_hint(self, lines: list[str]) -> bool:
        bottom = "\n".join(_bottom(lines))
        return any(p.search(bottom) for p in self._hints)


def _shown(match: re.Match[str] | None) -> str:
    return (match.group("text") or "").strip() if match is not None else ""


def _bottom(lines: list[str]) -> list[str]:
    return [line for line in lines if line.strip()][-BOTTOM_LINES:]


def _bottom_dialog(lines: list[str]) -> bool:
    """A choice or a dialog's key hint in the last lines of the screen (never the transcript above)."""
    bottom = "\n".join(_bottom(lines))
    return _CHOICE.search(bottom) is not None or _KEY_HINT.search(bottom) is not None


# -- the four CLIs (measured: tests/screens/<tool>/<release>/) ---------------------------------

CODEX_SUGGESTIONS = (
    # codex's empty composer: the placeholder (0.150+), or a rotating suggestion (before)
    r"Ask Codex to do anything",
    r"Explain this codebase",
    r"Summarize recent commits",
    r"Implement \{feature\}",
    r"Find and fix a bug in @filename",
    r"Write tests for @filename",
    r"Improve documentation in @filename",
    r"Run /review on my current changes",
    r"Use /skills to list available skills",
)

SHAPES: dict[str, ScreenShape] = {
    "codex": ScreenShape(
        prompt=r"›(?:[ \xa0](?P<text>.*))?$",
        placeholders=CODEX_SUGGESTIONS,
        footer_lines=3,
        turns_show_working=True,
        working=(r"esc to interrupt",),
        # a history cell at column 0, with its elapsed time (0.169) or without (0.140). codex
        # draws replies behind the same `•`: only a reply whose first line is exactly these
        # words would look the same (its later lines are indented)
        compaction=(r"• Context compacted(?: · (?:\d+h )?(?:\d+m )?\d+s)?",),
    ),
    "claude": ScreenShape(
        prompt=r"❯(?:[ \xa0](?P<text>.*))?$",
        rule_above=r"^─{3,}\s*$",
        rule_below=r"^─{3,}\s*$",
        footer_lines=3,
        turns_show_working=True,
        working=(r"esc to interrupt",),
        # its spinner line while it compacts (2.1.330 draws no notice after an automatic one),
        # and the boundary notice where it draws one; glyph at column 0, which neither a user
        # message (`❯ `) nor a reply (`● `, then indented) has
        compaction=(r"[^\s❯●⏺>│] Compacting conversation… \(\d+[hms]?[^)]*\).*",
                    r"[^\s❯●⏺>│] Conversation compacted(?: · .*| \(.*\))?"),
        # a first start's theme picker (onboarding): its choices sit above a code preview, and
        # the bottom lines hold its own key hint under the preview
        dialog_hints=(r"\(ctrl\+t to disable\)",),
    ),
    "gemini": ScreenShape(
        # ` > text`, the placeholder after three spaces; a mode line may sit under its rule
        prompt=r" >(?:[ \xa0]+(?P<text>.*))?$",
        rule_above=r"^─{20,}",
        rule_gap=1,
        placeholders=(r"Type your message or @path/to/file",),
        footer_lines=12,  # the slash-command list opens below it
        turns_show_working=True,
        working=(r"esc to cancel",),
        # an info line at column 0 (replies are `✦ ` and indented, user messages ` > `)
        compaction=(r"ℹ Context compressed from \d+% to \d+%\.(?: Change threshold in /settings\.)?",),
    ),
    "opencode": ScreenShape(
        # a box: `┃` + two spaces + text, a padding line above and below the text, then the
        # agent line (`┃  Build · Mock Model …`) and the box's bottom `╹▀▀▀`
        prompt=r"\s*┃(?:\s{2}(?P<text>.*))?$",
        anchor=r"\s*┃\s{2}\S.* · ",
        rule_below=r"\s*╹▀",
        pad_lines=1,
        placeholders=(r"Ask anything(?:…|\.\.\.).*",),
        # hints, a tip, the path line: two lines or more when the project's path is long
        # (`path:` on one, the branch on the next: tests/screens/opencode/*/empty-home-long-path.txt)
        footer_lines=6,
        turns_show_working=True,
        working=(r"esc interrupt",),
        # the divider before the summary, two columns in (a reply's lines are five in)
        compaction=(r"  ─{3,} Compaction ─{3,}",),
    ),
    "demo": ScreenShape(
        # wrapagent's own demo agent: an inline `demo> ` prompt on the last line
        prompt=r"demo>(?: (?P<text>.*))?$",
        footer_lines=0,
        working=(r"(?m)^[|/\\-] thinking +\d",),
        dialog_hints=(r"press Enter to allow", r"press 1 or 2"),
        compaction=(r"\(conversation compacted automatically\)",),
    ),
}


def shape_for(name: str) -> ScreenShape | None:
    """The screen shape of a tool by adapter name (None: the generic reading)."""
    return SHAPES.get(name)


def model_for(name: str) -> ScreenModel:
    return ScreenModel(shape_for(name))
