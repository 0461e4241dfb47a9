"""Readiness: the adapter's markers, else the generic rule after a quiet bound (inject/readiness.py).

Driven with a fake clock. The screens are the ones the tools draw (bench/ready_timeline.md:
codex before 0.150 shows rotating suggestions where its placeholder is now; the dialogs are
the trust/onboarding/reset dialogs of the four CLIs, pinned and older releases). CHANGED is
a codex whose composer no marker knows (a glyph and a footer of a future release).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.injector import SessionInjector
from wrapagent.inject.readiness import looks_like_dialog

PREFIX = '<prompt-guard name="g">\nbody\n</prompt-guard>\n\n'
PASTED = b"\x1b[200~" + PREFIX.encode() + b"\x1b[201~"
BP = b"\x1b[?2004h"

OLD_CODEX = (b"\x1b[2J\x1b[H>_ OpenAI Codex (v0.140.0)\r\n\r\n model: mock   directory: ~/p\r\n\r\n"
             b"\x1b[20;1H\xe2\x80\xba Run /review on my current changes\r\n\r\n"
             b"  \xe2\x8f\x8e send   ? for shortcuts        100% context left")
CHANGED = (b"\x1b[2J\x1b[H>_ OpenAI Codex (v0.999.0)\r\n\r\n\x1b[20;1H\xe2\x96\x8c Describe a task\r\n\r\n"
           b"  mock-model default \xc2\xb7 ~/p")
NEW_CODEX = b"\x1b[2J\x1b[H\xe2\x80\xba Ask Codex to do anything\r\n\r\n  ? for shortcuts"
CODEX_TRUST = ("You are running Codex in /home/u/p\r\n\r\nSince this folder is version controlled, you may "
               "wish to allow Codex to work in this folder without asking for approval.\r\n\r\n"
               "\u203a 1. Yes, allow Codex to work in this folder without asking for approval\r\n"
               "  2. Require approval of edits and commands\r\n\r\n"
               "  Press enter to continue").encode()


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class World:
    def __init__(self, tool: str = "codex", *, resets: bool = False) -> None:
        self.clock = Clock()
        self.prefix: str | None = PREFIX
        self.adapter = adapter_for(tool)
        self.inj = SessionInjector(
            self.adapter, rows=24, cols=100, get_prefix=lambda: self.prefix, wake_fd=None,
            clock=self.clock, on_reset=self.on_reset if resets else None)
        self.inj._t0 = self.clock.t

    def on_reset(self) -> None:
        self.prefix = PREFIX

    def output(self, data: bytes) -> None:
        self.inj.on_output(data, self.clock.t)

    def wait(self, secs: float) -> None:
        """Let `secs` pass with no output, polling whenever the injector asked to be woken."""
        end = self.clock.t + secs
        while True:
            due = self.inj.deadline()
            if due is None or due > end:
                break
            self.clock.t = max(self.clock.t + 0.001, due)  # a real clock moves on
            assert self.inj.poll(self.clock.t) == b""
        self.clock.t = end
        self.inj.poll(self.clock.t)

    def message(self, text: bytes) -> bytes:
        out = self.inj.on_input(text, self.clock.t) + self.inj.poll(self.clock.t)
        for _ in range(100):
            held = self.inj.keys.held
            if self.inj.state not in ("holding", "delivering", "settling") and held.next_due() is None:
                break
            if self.inj.state == "settling":  # the composer shows the blocks (the receipt)
                self.inj.on_output((self.inj.report.text or "").replace("\n", "\r\n").encode(), self.clock.t)
            self.clock.t += 0.05
            out += self.inj.poll(self.clock.t)
        return out + self.inj.on_input(b"\r", self.clock.t)


def bound(w: World) -> float:
    assert w.adapter.fallback_quiet_secs is not None
    return w.adapter.fallback_quiet_secs


def test_markers_fire_first_and_say_so() -> None:
    w = World()
    w.output(BP + NEW_CODEX)
    w.wait(0.2)
    assert w.inj.state == "armed" and w.inj.report.ready_by == "marker"


def test_a_release_without_the_markers_gets_the_blocks_by_the_generic_rule() -> None:
    """A release whose composer the markers miss (codex < 0.150 had no `Ask Codex to do anything`):
    before the fix, `lost` for the whole session."""
    w = World()
    w.output(BP + CHANGED)
    w.wait(bound(w) * 0.9)
    assert w.inj.state == "starting"                 # the bound is not over
    w.wait(bound(w) * 0.2)
    assert w.inj.state == "armed" and w.inj.report.ready_by == "generic"
    assert w.inj.report.ready_after_s is not None
    assert w.message(b"hello") == PASTED + b"hello\r"


def test_codex_before_0_150_is_recognised_by_its_prompt_glyph() -> None:
    """Markers that outlive releases: `›` with text after it, not the placeholder's wording."""
    w = World()
    w.output(BP + OLD_CODEX)
    w.wait(0.2)
    assert w.inj.state == "armed" and w.inj.report.ready_by == "marker"


def test_codex_dialogs_are_not_its_composer() -> None:
    """`›` on a numbered choice (trust, `/new`'s worktree question) is no composer: the
    keys answer it untouched."""
    w = World()
    w.output(BP + CODEX_TRUST)
    w.wait(10)
    assert w.inj.state == "starting"


def test_a_first_key_after_a_short_quiet_fires_the_generic_rule_at_once() -> None:
    """A person typing as soon as the composer shows: before the bound, the blocks still go first."""
    w = World()
    w.output(BP + CHANGED)
    w.wait(0.6)
    assert w.inj.state == "starting"
    assert w.message(b"hi") == PASTED + b"hi\r"
    assert w.inj.report.ready_by == "generic"


@pytest.mark.parametrize("key", [b"\r", b"\x1b[A", b"\x1b[12;40R"])
def test_keys_that_start_no_message_do_not_fire_it(key: bytes) -> None:
    w = World()
    w.output(BP + CHANGED)
    w.wait(0.6)
    assert w.inj.on_input(key, w.clock.t) == key
    assert w.inj.state == "starting"


def test_a_first_key_right_after_output_waits_for_the_rule() -> None:
    """Quiet under FIRST_KEY_QUIET_SECS: the tool may still be drawing; the key passes."""
    w = World()
    w.output(BP + CHANGED)
    w.wait(0.1)
    assert w.inj.on_input(b"h", w.clock.t) == b"h"
    assert w.inj.state == "starting"


def test_output_restarts_the_bound() -> None:
    """A tool still drawing its start-up is never taken for ready: the bound counts quiet time."""
    w = World()
    w.output(BP + b"loading")
    for _ in range(5):
        w.wait(bound(w) * 0.6)
        w.output(b".")
    assert w.inj.state == "starting"
    w.wait(bound(w) + 0.1)
    assert w.inj.report.ready_by == "generic"


@pytest.mark.parametrize("screen", [
    b"",                        # bracketed paste on, nothing drawn yet (opencode starting)
    b"\x1b[2J\x1b[H   \r\n  ",  # blanks only
])
def test_nothing_drawn_is_not_a_composer(screen: bytes) -> None:
    w = World("opencode")
    w.output(BP + screen)
    w.wait(bound(w) * 5)
    assert w.inj.state == "starting"


def test_no_bracketed_paste_no_fallback() -> None:
    w = World()
    w.output(CHANGED)
    w.wait(bound(w) * 5)
    assert w.inj.state == "starting"


def test_a_trust_dialog_is_never_taken_for_the_composer() -> None:
    """The dialog is quiet with bracketed paste on; its answer must reach it untouched."""
    w = World()
    w.output(BP + CODEX_TRUST)
    w.wait(bound(w) * 5)
    assert w.inj.state == "starting"
    assert w.inj.on_input(b"1", w.clock.t) == b"1"        # the answer passes, nothing held
    assert w.inj.on_input(b"\r", w.clock.t) == b"\r"
    w.output(CHANGED)                                   # the composer, without the markers
    w.wait(bound(w) + 0.1)
    assert w.inj.state == "armed" and w.inj.report.ready_by == "generic"


def test_unknown_tool_waits_out_its_dialog_too() -> None:
    w = World("sometui")
    w.output(BP + "Do you trust the files in this folder?\r\n\u276f 1. Yes, proceed\r\n  2. No, exit"
             .encode())
    w.wait(5)
    assert w.inj.state == "starting"
    w.output(b"\x1b[2J\x1b[H> ")
    w.wait(1)
    assert w.inj.state == "armed" and w.inj.report.ready_by == "generic"


def test_after_a_reset_without_the_reset_markers_the_generic_rule_fires() -> None:
    """codex's `reset_ready_patterns` missing after `/new`: the next conversation still gets the blocks."""
    w = World(resets=True)
    w.output(BP + NEW_CODEX)
    w.wait(0.2)
    assert w.message(b"first") == PASTED + b"first\r"
    assert w.inj.on_input(b"/new\r", w.clock.t) == b"/new\r"
    assert w.inj.state == "wait-ready"
    w.output(b"\x1b[2J\x1b[H" + CHANGED)
    w.wait(bound(w) + 0.1)
    assert w.inj.state == "armed"
    assert [r.ready_by for r in w.inj.reports] == ["marker", "generic"]
    assert w.message(b"second") == PASTED + b"second\r"


def test_after_a_reset_a_dialog_waits_for_its_answer() -> None:
    w = World(resets=True)
    w.output(BP + NEW_CODEX)
    w.wait(0.2)
    w.message(b"first")
    w.inj.on_input(b"/new\r", w.clock.t)
    w.output("\x1b[2J\x1b[HStart the new chat in:\r\n\u203a 1. This folder\r\n  2. A new worktree\r\n"
             .encode())
    w.wait(bound(w) * 5)
    assert w.inj.state == "wait-ready"
    assert w.inj.on_input(b"\r", w.clock.t) == b"\r"
    w.output(b"\x1b[2J\x1b[H" + NEW_CODEX)
    w.wait(0.2)
    assert w.inj.state == "armed" and w.inj.reports[-1].ready_by == "marker"


@pytest.mark.parametrize("text", [
    CODEX_TRUST.decode(),
    # codex 0.169: trust, and `/new`'s question
    "Folder access\nTrust this folder? Codex can read, edit, and run files here\n\u203a 1. Trust and continue\n"
    "  2. Back to Agent Command Center\n\n  enter continue \u00b7 esc back",
    "Where should the new conversation run?\n\u203a 1. Use current Git worktree\n  2. Create new Git worktree\n"
    "  enter select \u00b7 esc back",
    # claude 2.1.330 numbers nothing; its theme picker has no footer
    "Accessing workspace:\n\n Quick safety check: Is this a project you created or one you trust?\n\n"
    " \u276f No, exit\n   Yes, I trust this folder\n\n Enter to confirm \u00b7 Esc to cancel",
    " Choose the text style that looks best with your terminal\n\n \u276f \u2714 Auto (match terminal)\n"
    "   Dark mode\n   Light mode\n\n Syntax theme: Monokai Extended (ctrl+t to disable)",
    "Do you trust the files in this folder?\n\n\u276f 1. Yes, proceed\n  2. No, exit\n\nEnter to confirm \u00b7 Esc to exit",
    "Choose the text style that looks best with your terminal\n \u276f 1. Dark mode \u2714\n   2. Light mode",
    "Do you trust this folder?\n\u25cf 1. Trust folder (p)\n  2. Trust parent folder\n  3. Don't trust (esc)",
    "\u2502 \u25cf 1. Trust folder                    \u2502",
    # login screens: a paste of a code or a key must reach them untouched
    "Browser didn't open? Use the url below to sign in\n\nhttps://claude.ai/oauth/authorize?x=1\n\n"
    " Paste code here if prompted > ",
    "Enter Gemini API Key\nPlease enter your Gemini API key. It will be securely stored.\n> ",
    "Paste or type your API key:\n> ",
])
def test_dialogs_are_recognised(text: str) -> None:
    assert looks_like_dialog(text)


@pytest.mark.parametrize("text", [
    "\u2500" * 40 + "\n\u276f \n" + "\u2500" * 40 + "\n  \u23f5\u23f5 auto mode on (shift+tab to cycle) \u00b7 \u2190 for agents",
    "\u2500" * 40 + "\n\u276f \n" + "\u2500" * 40 + "\n  \u23f8 manual mode on \u00b7 ? for shortcuts \u00b7 \u2190 for agents",
    "\u2503  Ask anything... \"Fix broken tests\"\n\u2503  Build \u00b7 Mock Model Mock LLM\n  tab agents  ctrl+p commands",
    # gemini's start-up tips are a numbered list without a pointer
    "Tips for getting started:\n1. Ask questions, edit files, or run commands.\n2. Be specific.\n"
    "3. Create GEMINI.md files to customize your interactions.\n >   Type your message or @path/to/file",
    "\u203a Ask Codex to do anything\n\n  ? for shortcuts                 100% context left",
    # a resumed transcript speaking of code and tokens: not a question for a secret
    "> Paste your code and I'll review it. Type the code below, or enter the token count.\n"
    "\u203a Ask Codex to do anything",
    "\u203a Run /review on my current changes\n\n  \u23ce send   ? for shortcuts",
    "\u2500" * 40 + "\n\u276f \n" + "\u2500" * 40 + "\n  ? for shortcuts",
    " >   Type your message or @path/to/file\n~/p   no sandbox   gemini-2.5-pro (100% context left)",
    "  Ask anything... \"Fix a TODO in the codebase\"\n  Build \u00b7 Mock Model   tab agents  ctrl+p commands",
    # a resumed conversation whose history holds a numbered list: not a choice dialog
    "> how do I start?\n\n1. Install it\n2. Run it\n\n\u203a Ask Codex to do anything",
])
def test_composers_are_not_dialogs(text: str) -> None:
    assert not looks_like_dialog(text)


def test_a_key_after_a_reset_before_anything_was_drawn_does_not_fire_it() -> None:
    """Nothing drawn since `/new` (the tool still busy with it): the fresh emulator is blank, which
    the timer path never takes for ready; a key must not either, or the blocks go in front of a
    screen that is not there yet (the dialog codex may still show)."""
    w = World(resets=True)
    w.output(BP + NEW_CODEX)
    w.wait(0.2)
    assert w.message(b"first") == PASTED + b"first\r"
    assert w.inj.on_input(b"/new\r", w.clock.t) == b"/new\r"
    w.wait(0.6)                                       # quiet, nothing drawn since the reset
    assert not w.inj.on_input(b"h", w.clock.t).startswith(b"\x1b[200~")
    assert w.inj.state == "wait-ready"


CODEX_RESUME_PICKER = (
    "\x1b[2J\x1b[H Resume a previous session\r\n\r\n Filter:  Cwd  All    Status:  Active  Archived    "
    "Sort:  Updated  Created\r\n\r\n Type to search\r\n\r\n  \u203a 1s ago      hello there\r\n"
    "\x1b[21;1H\u2500\u2500\u2500\u2500\u2500\u2500 1 / 1 \u00b7 100% \u2500\r\n"
    " enter resume   ^a archive   esc start new   ^c quit   tab focus sort/filter   \u2190/\u2192 change option\r\n"
    " ^o comfortable view   ^t transcript   ^e expand   \u2191/\u2193 browse").encode()
"""`codex resume` (0.169, measured): bracketed paste on, quiet, a `›` on the selected session's row."""


def test_codex_resume_picker_is_not_its_composer() -> None:
    """Before, codex's `›` marker matched the picker's row (and the generic rule took the quiet
    picker for a composer too): the blocks were pasted into its search field at the first key."""
    w = World()
    w.output(BP + CODEX_RESUME_PICKER)
    w.wait(bound(w) * 5)
    assert w.inj.state == "starting"
    assert w.inj.on_input(b"h", w.clock.t) == b"h"      # typing to search: untouched
    assert w.inj.on_input(b"\r", w.clock.t) == b"\r"    # resume it
    w.output(b"\x1b[2J\x1b[H\xe2\x80\xba hello there\r\n\r\n\xe2\x80\xa2 MOCK-REPLY-1\r\n" + NEW_CODEX[7:])
    w.wait(0.2)
    assert w.inj.state == "armed" and w.inj.report.ready_by == "marker"


def test_claude_resume_picker_is_a_dialog() -> None:
    """`claude --resume` (2.1.330, measured): no footer, so before, the generic rule took the
    quiet picker for the composer (after the bound, or at a search key after 0.5 s)."""
    picker = ("\u2500" * 40 + "\n  Resume session\n  \u256d" + "\u2500" * 30 + "\u256e\n  \u2502 \u2315 Search\u2026"
              "\n  \u2570" + "\u2500" * 30 + "\u256f\n    proj-claude\n\n  \u276f hello there\n"
              "    now \u00b7 main \u00b7 157.3KB\n\n  Ctrl+A to show all projects \u00b7 Ctrl+B to only show current "
              "branch \u00b7 Space to preview \u00b7 Ctrl+R to rename \u00b7 Type to\n  search \u00b7 Enter to resume"
              " \u00b7 Esc to close")
    assert looks_like_dialog(picker)
    w = World("claude")
    w.output(BP + picker.replace("\n", "\r\n").encode())
    w.wait(bound(w) * 5)
    assert w.inj.state == "starting"
    assert w.inj.on_input(b"h", w.clock.t) == b"h"


# claude 2.1.330 at start-up (measured in every permission mode, integration/test_modes.py): a first
# frame with the composer between its rules and the mode alone in the footer; then, on a profile
# that never answered it, a question over the composer; only then the footer's key hint.
CLAUDE_RULE = "\u2500" * 60


def claude_frame(composer: str = "", hint: bool = True) -> bytes:
    footer = "  \u23f8 plan mode on" + (" (shift+tab to cycle) \u00b7 \u2190 for agents" if hint else "")
    return ("\x1b[2J\x1b[H \u2590\u259b\u2588\u2588\u2588\u259b\u2588   Claude Code v2.1.330\r\n\r\n"
            f"{CLAUDE_RULE}\r\n\u276f {composer}\r\n{CLAUDE_RULE}\r\n{footer}").encode()


CLAUDE_NUDGE = ("\x1b[2J\x1b[H Claude Code v2.1.330\r\n\r\n" + CLAUDE_RULE + "\r\n"
                "  Make auto mode your default permission mode?\r\n"
                "  Auto mode lets Claude handle permission prompts automatically.\r\n"
                "  \u276f Yes, set auto mode as my default permission mode\r\n"
                "    No, keep plan mode\r\n").encode()


def test_claude_first_frame_is_not_its_ready_screen() -> None:
    """Its composer is drawn and empty (the screen model's structure says so), but the key hint
    is not there yet: neither the structure nor a short quiet may take it for ready. Before, the
    structure did, and the blocks were typed into the question that came next."""
    w = World("claude")
    w.output(BP + claude_frame(hint=False))
    w.wait(1.3)                                   # longer than claude took to ask, on a loaded box
    assert w.inj.state == "starting"
    assert w.inj.on_input(b"h", w.clock.t) == b"h"  # a key there passes: it fires no rule
    assert w.inj.state == "starting"
    w.output(CLAUDE_NUDGE)
    w.wait(bound(w) * 3)
    assert w.inj.state == "starting"
    assert w.inj.on_input(b"\r", w.clock.t) == b"\r"  # (the answer)
    w.output(claude_frame())
    w.wait(0.2)
    assert w.inj.state == "armed" and w.inj.report.ready_by == "marker"


def test_claude_ready_before_the_echo_of_keys_typed_on_its_first_frame() -> None:
    """The key hint came while the first keys typed on the first frame were not echoed yet (claude
    echoes ~100 ms late): the ready screen shows an empty composer. Before, the next key got the
    blocks in the middle of the message (`ty<system-reminder>…ped at once`)."""
    w = World("claude")
    w.output(BP + claude_frame(hint=False))
    w.wait(0.3)
    assert w.inj.on_input(b"t", w.clock.t) == b"t"
    w.clock.t += 0.03
    assert w.inj.on_input(b"y", w.clock.t) == b"y"
    w.clock.t += 0.02
    w.output(claude_frame())                      # the hint, the composer still drawn empty
    w.clock.t += 0.01
    assert w.inj.on_input(b"p", w.clock.t) == b"p"  # not held: no blocks go in front of it
    w.wait(0.1)
    assert w.inj.state == "starting"
    w.output(claude_frame("typ"))                 # the echo
    w.wait(0.2)
    assert w.inj.state == "command"               # a message begun: it goes without the blocks
    assert any("typed before the composer was ready" in n for n in w.inj.report.notes)
    for key in (b"ed", b" at once", b"\r"):
        assert w.inj.on_input(key, w.clock.t) == key
    assert w.inj.state == "armed"                 # and the next message gets them
    out = w.inj.on_input(b"n", w.clock.t)
    assert out == b"" and w.inj.state == "holding"


def test_keys_on_claude_first_frame_that_never_show_do_not_stop_readiness() -> None:
    """Keys that went elsewhere (a start-up question took them): waited for TYPED_ECHO_SECS at most."""
    from wrapagent.inject.readiness import TYPED_ECHO_SECS

    w = World("claude")
    w.output(BP + claude_frame(hint=False))
    w.wait(0.3)
    assert w.inj.on_input(b"ab", w.clock.t) == b"ab"
    w.output(claude_frame())
    w.wait(0.1)
    assert w.inj.state == "starting"
    w.wait(TYPED_ECHO_SECS)
    assert w.inj.state == "armed" and w.inj.report.ready_by == "marker"


SCREENS = Path(__file__).resolve().parent.parent / "screens" / "claude"


CLAUDE_RECORDED = sorted(SCREENS.glob("*/empty-mode-*.txt")) + sorted(SCREENS.glob("*/empty-first-frame-*.txt"))


@pytest.mark.parametrize("path", CLAUDE_RECORDED, ids=lambda p: "/".join(p.parts[-2:]))
def test_claude_markers_on_its_recorded_screens(path: Path) -> None:
    """Every permission mode's ready screen shows claude's markers (pinned and older release);
    its first frame, recorded on a fresh profile before the start-up question, does not, nor does
    it count as a composer found by structure (the screen model calls it empty: it is one)."""
    first_frame = path.name.startswith("empty-first-frame-")
    w = World("claude")
    w.output(BP + b"\x1b[2J\x1b[H" + path.read_text(encoding="utf-8").replace("\n", "\r\n").encode())
    assert w.inj.readiness.screen_ready(w.inj.state) is not first_frame
    w.wait(0.2)
    assert w.inj.state == ("starting" if first_frame else "armed")


def test_a_message_typed_while_the_screen_still_shows_the_command_goes_bare_and_is_said() -> None:
    """Under load claude drew `/clear` in its composer for half a second after its Enter; the first
    key of the next message came then. The screen cannot tell what that key lands in, so it passes
    (no blocks are typed on a stale screen) and the next message gets them; the record says this
    message went without them (it said "no message was submitted")."""
    w = World("claude", resets=True)
    w.output(BP + claude_frame())
    w.wait(0.3)
    assert w.inj.state == "armed"
    for key in (b"/clear", b"\r"):
        assert w.inj.on_input(key, w.clock.t) == key
        w.output(claude_frame("/clear"))
        w.clock.t += 0.1
    assert w.inj.state == "armed"
    w.clock.t += 0.4
    assert w.inj.on_input(b"f", w.clock.t) == b"f"  # the screen still shows the command
    assert w.inj.state == "command"
    w.output(claude_frame())                        # claude caught up: its Enter, then the key
    w.output(claude_frame("f"))
    w.clock.t += 0.1
    assert w.inj.on_input(b"irst", w.clock.t) == b"irst"
    w.output(claude_frame("first"))
    w.clock.t += 0.1
    assert w.inj.on_input(b"\r", w.clock.t) == b"\r"
    assert w.inj.state == "armed"                   # the next message gets the blocks
    w.inj.finalize()
    report = w.inj.conversations.reports[-1]
    assert (report.conversation, report.status) == (1, "lost"), report.notes
    assert any("before the screen showed the composer empty" in n for n in report.notes), report.notes
    assert sum("was a command" in n for n in report.notes) == 1, report.notes  # `/clear`, not the message


@settings(max_examples=300)
@given(st.binary(max_size=40), st.binary(max_size=40), st.lists(st.integers(0, 100), max_size=6), st.booleans())
def test_bracketed_paste_is_seen_wherever_the_chunks_cut_it(before: bytes, after: bytes, cuts: list[int],
                                                            present: bool) -> None:
    """The sequence that turns bracketed paste on, cut between reads at any byte (one-byte reads
    too), is seen; output without it never is."""
    data = before + (BP if present else b"") + after
    readiness = World("gemini").inj.readiness
    assert not readiness.bp_seen
    bounds = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    for start, end in zip(bounds, bounds[1:]):
        readiness.feed(data[start:end], 100.0)
    assert readiness.bp_seen == (BP in data)
