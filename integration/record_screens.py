"""Record screens of a real CLI for the screen-model corpus (`tests/screens/`).

    python -m integration.record_screens codex claude gemini opencode [--set pinned|older]
                                          [--only NAME,...] [--out tests/screens]

Each CLI runs directly (not through wrapagent: the corpus is the tool's own screen) in a
120x40 pseudo-terminal against the mock model, in a temporary HOME, and is driven through
scripted steps. At each step the rendered screen is saved as
`<out>/<tool>/<release>/<state>-<name>.txt`, where `<state>` is the answer the screen model
must give on it (`tests/inject/test_screen_corpus.py` reads it from the name):

- `empty`: the composer is on the screen and empty, no dialog, the agent is not working;
- `text`: the composer holds text the user typed;
- `working`: the agent is working on a turn (its spinner or interrupt hint shows);
- `dialog`: a dialog of the tool's own is up (trust, resume picker, a question).

A new screen is one more step here (or one file saved by hand, named the same way). A
step that fails (a dialog that this release does not show) is reported and skipped; the
others still run.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .clienv import SPECS, CliEnv
from .cliversions import installed_version
from .install_clis import SETS, bin_dir
from .mock_server import MockServer

ROOT = Path(__file__).resolve().parent.parent
MODE_KEY = {"codex": b"\x1b[Z", "claude": b"\x1b[Z", "gemini": b"\x1b[Z", "opencode": b"\t"}
RESET = {"codex": "/new", "claude": "/clear", "gemini": "/clear", "opencode": "/new"}
RESUME_PICKER = {"codex": ["resume"], "claude": ["--resume"], "gemini": None, "opencode": None}
RESUME_LAST = {"codex": ["resume", "--last"], "claude": ["--resume"], "gemini": ["--resume", "latest"],
               "opencode": ["--continue"]}
THINK_LOOKALIKE = "(think) (lookalike) show me the choices"
TYPED = "a message I have not sent yet"


class Recorder:
    """Saves named screens of one CLI release into the corpus folder."""

    def __init__(self, out: Path, only: set[str]) -> None:
        self.out = out
        self.only = only
        self.saved: list[str] = []
        self.failed: list[str] = []

    def save(self, term, state: str, name: str, text: str | None = None) -> None:
        """Save the screen as it is now (or `text`, a screen read earlier: a frame that lasts
        only a moment)."""
        if self.only and name not in self.only:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / f"{state}-{name}.txt"
        path.write_text((text if text is not None else term.screen_text()).rstrip() + "\n", encoding="utf-8")
        self.saved.append(path.name)
        print(f"  saved {path.relative_to(ROOT)}", flush=True)

    def step(self, name: str, fn) -> None:
        try:
            fn()
        except Exception as exc:  # one dialog a release lacks must not lose the others
            self.failed.append(f"{name}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            print(f"  step {name} failed: {self.failed[-1]}", flush=True)


def _start(env: CliEnv, args: list[str] | None = None):
    spec = env.spec
    term = env.spawn(list(env.interactive_args()) + list(args or []), wrapped=False)
    return spec, term


def _ready(env: CliEnv, term) -> None:
    term.wait_for(re.compile(env.spec.ready), timeout=env.spec.ready_timeout)
    term.wait_quiet(max(env.spec.settle, 0.5), timeout=15)


def _quit(env: CliEnv, term) -> None:
    try:
        term.quit(env.spec.quit_keys, gap=env.spec.quit_gap, timeout=15)
    except Exception:
        pass
    term.close()


def record_main_session(env: CliEnv, rec: Recorder) -> None:
    """Start, type, work, a reply full of look-alikes, mode keys, the reset (and its dialog)."""
    tool = env.tool
    spec, term = _start(env)
    try:
        _ready(env, term)
        rec.save(term, "empty", "start")
        term.type(TYPED)
        term.wait_for(TYPED[-12:], timeout=15)
        term.wait_quiet(0.5, timeout=10)
        rec.save(term, "text", "typed")
        for _ in TYPED:
            term.key(b"\x7f")
            time.sleep(0.01)
        term.wait_quiet(0.8, timeout=10)
        term.type(THINK_LOOKALIKE)
        term.wait_for(THINK_LOOKALIKE[-12:], timeout=15)
        term.enter(after=0.3)
        # working once the tool shows its interrupt hint (opencode takes seconds to start a turn)
        term.wait_for(re.compile(r"(?i)\besc\b[^\n]{0,12}\b(interrupt|cancel)"), timeout=90)
        time.sleep(1.0)
        rec.save(term, "working", "thinking")
        term.wait_for("MOCK-REPLY-1", timeout=spec.reply_timeout + env.mock.think_secs)
        term.wait_quiet(1.5, timeout=30)
        rec.save(term, "empty", "after-lookalike-reply")

        def mode_key() -> None:
            term.key(MODE_KEY[tool])
            term.wait_quiet(0.8, timeout=10)
            rec.save(term, "empty", "mode-key-once")
            term.key(MODE_KEY[tool])
            term.wait_quiet(0.8, timeout=10)
            rec.save(term, "empty", "mode-key-twice")

        rec.step("mode-key", mode_key)

        def up_arrow() -> None:
            term.key(b"\x1b[A")
            term.wait_quiet(0.8, timeout=10)
            # ↑ recalls the last message on some releases and does nothing on others (measured:
            # nothing on the pinned codex, claude and gemini in a fresh HOME): name what it did.
            bottom = "\n".join(term.screen_text().rstrip().splitlines()[-8:])
            recalled = "show me the choices" in bottom
            rec.save(term, "text" if recalled else "empty", "history-recall" if recalled else "up-key")
            term.key(b"\x03" if tool != "claude" else b"\x1b")
            term.wait_quiet(0.8, timeout=10)

        rec.step("history", up_arrow)

        def slash() -> None:
            term.type(RESET[tool])
            term.wait_quiet(0.8, timeout=10)
            rec.save(term, "text", "reset-typed")
            term.enter(after=0.3)
            term.wait_quiet(1.5, timeout=20)
            screen = term.screen_text()
            if re.search(r"Where should the new conversation run", screen):
                rec.save(term, "dialog", "new-where")
                term.enter(after=0.3)
                term.wait_gone("Where should the new conversation run", timeout=20)
                term.wait_quiet(1.5, timeout=20)
            rec.save(term, "empty", "after-reset")

        rec.step("reset", slash)
    finally:
        _quit(env, term)


def record_resumed(env: CliEnv, rec: Recorder) -> None:
    """The resume picker (a dialog) and a resumed transcript full of look-alikes (no dialog)."""
    tool = env.tool
    if RESUME_PICKER.get(tool):
        def picker() -> None:
            _, term = _start(env, RESUME_PICKER[tool])
            try:
                term.wait_for(re.compile(r"MOCK|lookalike|choices|[Rr]esume"), timeout=60)
                term.wait_quiet(1.5, timeout=20)
                rec.save(term, "dialog", "resume-picker")
            finally:
                _quit(env, term)

        rec.step("resume-picker", picker)

    def resumed() -> None:
        _, term = _start(env, RESUME_LAST[tool])
        try:
            if tool == "claude":
                # `--continue` would take the conversation `/clear` left empty: pick the first
                # row of the picker (the newest conversation with a reply) instead
                term.wait_for("Enter to resume", timeout=60)
                term.wait_quiet(1.0, timeout=20)
                term.enter(after=0.3)
            term.wait_for("MOCK-REPLY-1", timeout=90)
            term.wait_quiet(2.0, timeout=30)
            rec.save(term, "empty", "resumed-lookalike")
        finally:
            _quit(env, term)

    rec.step("resumed", resumed)


def record_untrusted(env: CliEnv, rec: Recorder) -> None:
    """Start in a folder the tool was never told to trust: its trust dialog."""
    if env.tool not in ("codex", "claude"):
        return

    def trust() -> None:
        fresh = env.root / "work" / "untrusted"
        fresh.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q"], cwd=fresh, env=env.env, check=True)
        saved, env.cwd = env.cwd, fresh
        try:
            _, term = _start(env)
            try:
                term.wait_for(re.compile(r"(?i)trust"), timeout=60)
                term.wait_quiet(1.0, timeout=20)
                rec.save(term, "dialog", "folder-trust")
            finally:
                _quit(env, term)
        finally:
            env.cwd = saved

    rec.step("folder-trust", trust)


CLAUDE_MODES = {"default": ("manual", "manual mode on"), "acceptEdits": ("accept-edits", "accept edits on"),
                "plan": ("plan", "plan mode on"), "auto": ("auto", "auto mode on")}
AUTO_MODE_QUESTION = "Make auto mode your default permission mode?"


def _claude_profile(env: CliEnv, mode: str, *, question_answered: bool) -> None:
    """`permissions.defaultMode` in the user's settings; whether the one-time question about auto
    mode was answered (`hasSeenAutoDefaultNudge`: claude asks it in every mode but auto)."""
    settings = env.home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"permissions": {"defaultMode": mode}}))
    path = env.home / ".claude.json"
    data = json.loads(path.read_text())
    data["hasSeenAutoDefaultNudge"] = question_answered
    path.write_text(json.dumps(data))


def record_claude_modes(env: CliEnv, rec: Recorder) -> None:
    """claude's permission modes: each mode's footer on the ready screen (the question about auto
    mode answered), and, on a profile that never answered it, the first frame (the composer and
    the mode, no key hint yet: not the ready screen) and that question over the composer."""
    if env.tool != "claude":
        return
    settings = env.home / ".claude" / "settings.json"
    saved = (settings.read_text() if settings.exists() else None, (env.home / ".claude.json").read_text())
    try:
        for mode, (name, footer) in CLAUDE_MODES.items():
            def ready_in_mode(mode: str = mode, name: str = name, footer: str = footer) -> None:
                _claude_profile(env, mode, question_answered=True)
                _, term = _start(env)
                try:
                    _ready(env, term)
                    if footer not in term.screen_text():
                        raise AssertionError(f"no {footer!r} in the footer")
                    rec.save(term, "empty", f"mode-{name}")
                finally:
                    _quit(env, term)

            rec.step(f"mode-{name}", ready_in_mode)

        def question() -> None:
            _claude_profile(env, "plan", question_answered=False)
            _, term = _start(env)
            try:
                # the first frame: the composer and the mode, before the question and the key hint
                term.wait_for(re.compile(r"❯[\s\S]*plan mode on"), timeout=env.spec.ready_timeout)
                first = term.screen_text()
                if AUTO_MODE_QUESTION not in first and not re.search(env.spec.ready, first):
                    rec.save(term, "empty", "first-frame-plan", text=first)
                else:
                    print("  the first frame was gone before it was read", flush=True)
                term.wait_for(AUTO_MODE_QUESTION, timeout=env.spec.ready_timeout)
                term.wait_quiet(1.0, timeout=20)
                rec.save(term, "dialog", "auto-mode-question")
            finally:
                _quit(env, term)

        rec.step("auto-mode-question", question)
    finally:
        if saved[0] is None:
            settings.unlink(missing_ok=True)
        else:
            settings.write_text(saved[0])
        (env.home / ".claude.json").write_text(saved[1])


def _edited(path: Path, edit) -> str:
    """Apply `edit` to the JSON file at `path`; its text before, to put back."""
    before = path.read_text()
    data = json.loads(before)
    edit(data)
    path.write_text(json.dumps(data))
    return before


def record_onboarding(env: CliEnv, rec: Recorder) -> None:
    """What a first start shows before any composer: claude's theme picker on a profile that never
    finished its onboarding; gemini's choice of how to sign in (no method chosen yet), then its
    API key question (an input box holding the key from GEMINI_API_KEY), and its folder-trust
    question (folder trust on, as it is by default). The rest of the test profile as it is."""
    no_auth = (env.home / ".gemini" / "settings.json", lambda d: d["security"].pop("auth", None))
    steps = {  # name: (file, edit, keys before it: [(shown, key)], what the screen shows)
        "claude": {"onboarding-theme": (env.home / ".claude.json",
                                        lambda d: [d.pop(k, None) for k in ("hasCompletedOnboarding", "theme")],
                                        [], r"Choose the text style")},
        "gemini": {"auth-method": (*no_auth, [], r"Use Gemini API Key"),
                   "api-key": (*no_auth, [(r"Use Gemini API Key", b"\r")], r"Enter Gemini API Key"),
                   "folder-trust": (env.home / ".gemini" / "settings.json",
                                    lambda d: d["security"]["folderTrust"].update(enabled=True),
                                    [], r"Do you trust the files in this folder\?")},
    }
    for name, (path, edit, before, shown) in steps.get(env.tool, {}).items():
        def first_start(name: str = name, path: Path = path, edit=edit, before=before, shown: str = shown) -> None:
            saved = _edited(path, edit)
            try:
                _, term = _start(env)
                try:
                    for question, key in before:
                        term.wait_for(re.compile(question), timeout=env.spec.ready_timeout)
                        term.wait_quiet(1.0, timeout=20)
                        term.key(key, after=0.3)
                    term.wait_for(re.compile(shown), timeout=env.spec.ready_timeout)
                    term.wait_quiet(1.0, timeout=20)
                    rec.save(term, "dialog", name)
                finally:
                    _quit(env, term)
            finally:
                path.write_text(saved)

        rec.step(name, first_start)


def record(tool: str, which: str, out_root: Path, only: set[str]) -> Recorder:
    bins = bin_dir(SETS[which].cache)
    version = installed_version(bins, tool) or which
    rec = Recorder(out_root / tool / version, only)
    print(f"{tool} {version} ({which})", flush=True)
    with tempfile.TemporaryDirectory(prefix=f"screens-{tool}-") as tmp, MockServer() as mock:
        mock.think_secs = 5.0
        env = CliEnv.create(tool, Path(tmp), mock, bins)
        try:
            record_main_session(env, rec)
            record_resumed(env, rec)
            record_untrusted(env, rec)
            record_claude_modes(env, rec)
            record_onboarding(env, rec)
        finally:
            env.reap_leftovers()
    return rec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tools", nargs="+", choices=sorted(SPECS))
    parser.add_argument("--set", default="pinned", choices=("pinned", "older"))
    parser.add_argument("--only", default="", help="comma-separated screen names to (re)record")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "screens")
    ns = parser.parse_args(argv)
    only = {n for n in ns.only.split(",") if n}
    failed = []
    for tool in ns.tools:
        rec = record(tool, ns.set, ns.out, only)
        failed += [f"{tool}: {f}" for f in rec.failed]
    for line in failed:
        print("FAILED " + line, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
