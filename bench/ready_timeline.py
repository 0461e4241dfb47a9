#!/usr/bin/env python3
"""Start-up (and reset) timelines of the real CLIs, run directly in a PTY: the data behind
the adapters' readiness fallback (issue 25).

    python bench/ready_timeline.py                      # pinned + older set, 4 CLIs, 3 runs each
    python bench/ready_timeline.py --tools codex --sets older --runs 1 -v
    python bench/ready_timeline.py --mode dialog        # start-up dialogs NOT pre-seeded
    python bench/ready_timeline.py --mode reset         # one turn, then the reset command
    python bench/ready_timeline.py --json out.json

Each run uses the integration suite's hermetic environment (integration/clienv.py: temp HOME,
allow-listed env, a local mock model) and runs the CLI itself, no wrapagent, in a 120x40 PTY
whose terminal queries are not answered (as in the integration driver). It logs the time of
every output chunk, when `ESC[?2004h` (bracketed paste on) first shows, when the adapter's
`ready_patterns` (all of them) first match the pyte-rendered screen, and every output gap of
>= 100 ms after bracketed paste came on and before the markers matched, with the screen at that
gap. Why: the fallback rule "bracketed paste on + output quiet for Q" must not fire while the
tool is still drawing (or showing a dialog) — the longest such gap is the floor for Q.

Nothing here is a test; numbers come from a shared, loaded 2-core box: read them as upper bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pexpect  # noqa: E402
import pyte  # noqa: E402

from integration import clienv  # noqa: E402
from integration.driver import _Sanitizer  # noqa: E402
from integration.install_clis import SETS, bin_dir, ensure_installed  # noqa: E402
from integration.mock_server import MockServer  # noqa: E402
from wrapagent.inject.adapters import adapter_for as get_adapter  # noqa: E402

BP_ON = b"\x1b[?2004h"
BP_OFF = b"\x1b[?2004l"
CURSOR_HIDE = b"\x1b[?25l"
CURSOR_SHOW = b"\x1b[?25h"
QUERIES = {b"\x1b[6n": "DSR cursor", b"\x1b[c": "DA1", b"\x1b[>c": "DA2", b"\x1b]11;?": "OSC11 bg",
           b"\x1b]10;?": "OSC10 fg", b"\x1b[?u": "kitty kbd query", b"\x1b[14t": "window px"}
GAP = 0.1
ANSWER_QUERIES = False  # --answer-queries
#: without a marker match, the start-up is over after this much quiet (opencode 1.18 is silent
#: for 3+ s on an empty screen after enabling bracketed paste, then draws)
NO_MARKER_QUIET = 10.0
RESET_COMMAND = {"codex": "/new", "claude": "/clear", "gemini": "/clear", "opencode": "/new"}


@dataclass
class Timeline:
    tool: str
    cli_set: str
    version: str
    mode: str
    chunks: list[tuple[float, int]] = field(default_factory=list)
    t_bp: float | None = None
    t_marker: float | None = None
    gaps: list[dict] = field(default_factory=list)  # after BP on, before the markers
    first_quiet_after_marker: float | None = None  # first gap >= 100 ms after the markers: when
    queries: list[tuple[float, str]] = field(default_factory=list)
    bp_state: bool = False
    cursor_hidden: bool = False
    screen: str = ""
    reset: dict = field(default_factory=dict)
    note: str = ""
    final_screen: str = ""

    @property
    def longest_gap(self) -> dict | None:
        return max(self.gaps, key=lambda g: g["len"], default=None)


def _screen_text(screen: pyte.Screen) -> str:
    return "\n".join(line.rstrip() for line in screen.display).strip("\n")


def _trim(text: str, limit: int = 600) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    out = "\n".join(lines)
    return out if len(out) <= limit else out[:limit] + " …"


def _unseed(env: clienv.CliEnv, variant: str) -> None:
    """Undo the pre-seeding of the start-up dialog that `variant` names."""
    tool = env.tool
    if tool == "codex":
        cfg = env.home / ".codex" / "config.toml"
        text = cfg.read_text()
        cfg.write_text(re.sub(r"\n\[projects\.[^\n]*\]\ntrust_level = \"trusted\"\n", "\n", text))
    elif tool == "claude":
        path = env.home / ".claude.json"
        if variant == "onboarding":
            path.unlink()
        else:
            data = json.loads(path.read_text())
            data["projects"] = {}
            path.write_text(json.dumps(data))
    elif tool == "gemini":
        path = env.home / ".gemini" / "settings.json"
        data = json.loads(path.read_text())
        data["security"]["folderTrust"]["enabled"] = True
        path.write_text(json.dumps(data))
    elif tool == "opencode":
        # no provider configured: what a first start shows
        (Path(env.env["XDG_CONFIG_HOME"]) / "opencode" / "opencode.json").unlink()


class Run:
    """One CLI in a PTY, read chunk by chunk with timestamps."""

    def __init__(self, env: clienv.CliEnv, tl: Timeline, cols: int = 120, rows: int = 40):
        self.env, self.tl = env, tl
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.sanitize = _Sanitizer()
        self.raw = bytearray()
        argv = [str(env.bin), *env.interactive_args()]
        self.t0 = time.monotonic()
        self.child = pexpect.spawn(argv[0], argv[1:], env=env.env, cwd=str(env.cwd), dimensions=(rows, cols),
                                   encoding=None, echo=False)
        self.fd = self.child.child_fd
        self.last = self.t0
        self.eof = False

    def now(self) -> float:
        return time.monotonic() - self.t0

    def pump(self, until, timeout: float, on_chunk=None, on_gap=None) -> bool:
        """Read until `until()` is true or `timeout`; `on_gap(len)` when output resumes after >= GAP."""
        deadline = time.monotonic() + timeout
        while not until():
            left = deadline - time.monotonic()
            if left <= 0 or self.eof:
                return False
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.02))
            if not ready:
                continue
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                data = b""
            if not data:
                self.eof = True
                continue
            t = time.monotonic()
            gap = t - self.last
            if gap >= GAP and on_gap:
                on_gap(self.last - self.t0, gap)
            self.last = t
            rel = t - self.t0
            tail = bytes(self.raw[-16:])
            self.raw += data
            window = tail + data
            for seq, name in QUERIES.items():
                if seq in window and seq not in tail:
                    self.tl.queries.append((round(rel, 3), name))
            self._track_modes(window)
            if ANSWER_QUERIES:
                self._answer(window, tail)
            try:
                self.stream.feed(self.sanitize(data))
            except Exception:  # pyte 0.8 chokes on a few sequences (as in integration/driver.py)
                self.tl.note = (self.tl.note + " pyte-error").strip()
            self.tl.chunks.append((round(rel, 4), len(data)))
            if on_chunk:
                on_chunk(rel, data)
        return True

    def _track_modes(self, window: bytes) -> None:
        for on, off, attr in ((BP_ON, BP_OFF, "bp_state"), (CURSOR_HIDE, CURSOR_SHOW, "cursor_hidden")):
            i_on, i_off = window.rfind(on), window.rfind(off)
            if i_on > i_off:
                setattr(self.tl, attr, True)
            elif i_off > i_on:
                setattr(self.tl, attr, False)

    def _answer(self, window: bytes, tail: bytes) -> None:
        """Answer as an xterm would (--answer-queries): a real terminal under wrapagent does."""
        replies = []
        for seq, reply in ((b"\x1b[6n", None), (b"\x1b[c", b"\x1b[?62;22c"), (b"\x1b[>c", b"\x1b[>41;354;0c"),
                           (b"\x1b]11;?", b"\x1b]11;rgb:0000/0000/0000\x1b\\"),
                           (b"\x1b]10;?", b"\x1b]10;rgb:ffff/ffff/ffff\x1b\\")):
            if window.count(seq) > tail.count(seq):
                if reply is None:
                    reply = f"\x1b[{self.screen.cursor.y + 1};{self.screen.cursor.x + 1}R".encode()
                replies.append(reply)
        for reply in replies:
            os.write(self.fd, reply)

    def quiet_for(self, secs: float) -> bool:
        return time.monotonic() - self.last >= secs

    def write(self, data: bytes) -> None:
        os.write(self.fd, data)

    def type(self, text: str) -> None:
        for ch in text:
            self.write(ch.encode())
            self.pump(lambda: False, 0.03)

    def close(self) -> None:
        try:
            self.child.close(force=True)
        except Exception:
            pass


def startup(env: clienv.CliEnv, tl: Timeline, timeout: float, verbose: bool) -> Run:
    adapter = get_adapter(env.tool)
    patterns = [re.compile(p) for p in adapter.ready_patterns]
    run = Run(env, tl)

    def on_chunk(rel: float, data: bytes) -> None:
        if tl.t_bp is None and BP_ON in run.raw:
            tl.t_bp = rel
        if tl.t_marker is None:
            text = _screen_text(run.screen)
            if all(p.search(text) for p in patterns):
                tl.t_marker = rel
                tl.screen = _trim(text, 1500)
        if verbose:
            print(f"  {rel:7.3f} +{len(data):6d} bp={tl.bp_state:d} hid={tl.cursor_hidden:d}", file=sys.stderr)

    def on_gap(start: float, length: float) -> None:
        if tl.t_bp is not None and tl.t_marker is None:
            tl.gaps.append({"at": round(start, 3), "len": round(length, 3), "cursor_hidden": tl.cursor_hidden,
                            "blank": not _screen_text(run.screen).strip(),
                            "screen": _trim(_screen_text(run.screen), 400)})
        elif tl.t_marker is not None and tl.first_quiet_after_marker is None:
            tl.first_quiet_after_marker = round(start, 3)

    # ready: the markers; without markers (a release they do not fit), BP on + NO_MARKER_QUIET
    def done() -> bool:
        if tl.t_marker is not None:
            return run.quiet_for(0.5)
        return tl.t_bp is not None and run.quiet_for(NO_MARKER_QUIET)

    run.pump(done, timeout, on_chunk, on_gap)
    if tl.t_marker is not None and tl.first_quiet_after_marker is None:
        tl.first_quiet_after_marker = round(run.last - run.t0, 3)
    tl.final_screen = _trim(_screen_text(run.screen), 5000)
    if tl.t_marker is None:
        tl.screen = _trim(_screen_text(run.screen), 1500)
        tl.note = "markers never matched" + (" (EOF)" if run.eof else "")
        if tl.t_bp is not None:
            # the gap that ended the wait is one too
            tl.gaps.append({"at": round(run.last - run.t0, 3), "len": round(time.monotonic() - run.last, 3),
                            "screen": _trim(_screen_text(run.screen), 400), "open": True})
    return run


def do_reset(env: clienv.CliEnv, run: Run, tl: Timeline) -> None:
    """One turn (`hello`), then the reset command; when the output goes quiet, do the
    adapter's reset_ready_patterns show?"""
    adapter = get_adapter(env.tool)
    settle = 1.2 if env.tool == "gemini" else 0.4
    run.pump(lambda: run.quiet_for(settle), 10)
    run.type("hello")
    run.pump(lambda: False, 0.3)
    run.write(b"\r")
    got = run.pump(lambda: b"MOCK-REPLY-1" in run.raw, 60)
    tl.reset["turn"] = "replied" if got else "no reply"
    run.pump(lambda: run.quiet_for(1.0), 20)
    cmd = RESET_COMMAND[env.tool]
    run.type(cmd)
    run.pump(lambda: run.quiet_for(0.4), 5)
    mark = len(run.raw)
    t_enter = time.monotonic()
    run.write(b"\r")
    patterns = [re.compile(p) for p in adapter.reset_ready_patterns]
    seen = {}
    gaps: list[float] = []

    def on_chunk(rel: float, data: bytes) -> None:
        if patterns and "marker" not in seen and all(p.search(_screen_text(run.screen)) for p in patterns):
            seen["marker"] = round(time.monotonic() - t_enter, 3)

    def on_gap(start: float, length: float) -> None:
        gaps.append(round(length, 3))

    run.pump(lambda: run.quiet_for(2.0), 30, on_chunk, on_gap)
    tl.reset.update(
        {
            "command": cmd,
            "reset_ready_patterns": list(adapter.reset_ready_patterns),
            "marker_after_s": seen.get("marker"),
            "quiet_after_s": round(run.last - t_enter, 3) if len(run.raw) > mark else 0.0,
            "bytes": len(run.raw) - mark,
            "gaps": gaps,
            "bp_on": tl.bp_state,
            "screen": _trim(_screen_text(run.screen), 800),
        }
    )


def dialog(env: clienv.CliEnv, tl: Timeline, timeout: float) -> Run:
    """Start with the dialog not pre-seeded; wait until output is quiet 3 s; record the state."""
    run = Run(env, tl)
    gaps: list[tuple[float, float]] = []

    def on_chunk(rel: float, data: bytes) -> None:
        if tl.t_bp is None and BP_ON in run.raw:
            tl.t_bp = rel

    run.pump(lambda: run.quiet_for(3.0), timeout, on_chunk, lambda s, n: gaps.append((round(s, 2), round(n, 2))))
    text = _screen_text(run.screen)
    patterns = [re.compile(p) for p in get_adapter(env.tool).ready_patterns]
    tl.screen = _trim(text, 5000)
    tl.t_marker = 0.0 if all(p.search(text) for p in patterns) else None
    tl.gaps = [{"at": s, "len": n} for s, n in gaps]
    tl.note = f"last output at {run.last - run.t0:.2f} s" + (" (EOF)" if run.eof else "")
    return run


def versions(cli_set: str) -> dict[str, str]:
    cache = SETS[cli_set].cache
    out = {}
    for tool in clienv.TOOLS:
        name = {"codex": "@openai/codex", "claude": "@anthropic-ai/claude-code", "gemini": "@google/gemini-cli",
                "opencode": "opencode-ai"}[tool]
        try:
            out[tool] = json.loads((cache / "node_modules" / name / "package.json").read_text())["version"]
        except OSError:
            out[tool] = "?"
    return out


def one(tool: str, cli_set: str, mode: str, variant: str, timeout: float, verbose: bool) -> Timeline:
    bins = bin_dir(SETS[cli_set].cache)
    tl = Timeline(tool, cli_set, versions(cli_set)[tool], mode if not variant else f"{mode}:{variant}")
    with tempfile.TemporaryDirectory(prefix="ready-timeline-") as tmp:
        mock = MockServer(log_path=Path(tmp) / "mock.jsonl").start()
        try:
            env = clienv.CliEnv.create(tool, Path(tmp) / "root", mock, bins)
            if mode == "dialog":
                _unseed(env, variant)
                run = dialog(env, tl, timeout)
            else:
                run = startup(env, tl, timeout, verbose)
                if mode == "reset":
                    do_reset(env, run, tl)
            run.close()
            env.reap_leftovers(grace=1.0)
        finally:
            mock.stop()
    return tl


def report(tl: Timeline) -> str:
    lg = tl.longest_gap
    head = (f"{tl.tool} {tl.version} ({tl.cli_set}) [{tl.mode}] bp_on={_f(tl.t_bp)} marker={_f(tl.t_marker)} "
            f"gaps>=100ms={len(tl.gaps)} longest={_f(lg['len'] if lg else None)}"
            f"{' at ' + _f(lg['at']) if lg else ''} quiet_after_marker={_f(tl.first_quiet_after_marker)}"
            f" bp_state={tl.bp_state} cursor_hidden={tl.cursor_hidden} {tl.note}")
    lines = [head]
    if tl.queries:
        lines.append("  queries: " + ", ".join(f"{n}@{t}" for t, n in tl.queries[:8]))
    for g in tl.gaps if tl.mode == "startup" else []:
        lines.append(f"  gap {g['len']:.3f} s at {g['at']:.3f}{' (open)' if g.get('open') else ''}"
                     f"{' cursor-hidden' if g.get('cursor_hidden') else ''}: "
                     + g.get("screen", "").replace("\n", " ⏎ ")[:300])
    if tl.reset:
        r = dict(tl.reset)
        screen = r.pop("screen", "")
        lines.append(f"  reset: {json.dumps(r)}")
        lines.append("  screen after reset: " + screen.replace("\n", " ⏎ ")[:600])
    if tl.mode.startswith("dialog") or tl.t_marker is None:
        lines.append("  screen: " + tl.screen.replace("\n", " ⏎ ")[:1200])
    if tl.final_screen:
        lines.append("  final screen (last 6 lines): " + " ⏎ ".join(tl.final_screen.splitlines()[-6:]))
    return "\n".join(lines)


def _f(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", default=",".join(clienv.TOOLS))
    ap.add_argument("--sets", default="pinned,older")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mode", choices=("startup", "dialog", "reset"), default="startup")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--answer-queries", action="store_true",
                    help="answer DSR / DA1 / DA2 / OSC 10,11 queries as an xterm would (default: silent, as the driver)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    global ANSWER_QUERIES
    ANSWER_QUERIES = args.answer_queries
    results = []
    for cli_set in args.sets.split(","):
        ensure_installed(quiet=True, cli_set=cli_set)
        for tool in args.tools.split(","):
            variants = [""]
            if args.mode == "dialog":
                variants = ["trust", "onboarding"] if tool == "claude" else ["trust" if tool != "opencode" else "noconfig"]
            for variant in variants:
                runs = []
                for _ in range(args.runs if args.mode == "startup" else 1):
                    tl = one(tool, cli_set, args.mode, variant, args.timeout, args.verbose)
                    print(report(tl), flush=True)
                    runs.append(tl)
                    results.append(tl)
                if len(runs) > 1:
                    lgs = [r.longest_gap["len"] for r in runs if r.longest_gap]
                    mk = [r.t_marker for r in runs if r.t_marker is not None]
                    print(f"== {tool} {runs[0].version}: marker median {_f(statistics.median(mk)) if mk else '-'}"
                          f" longest gap max {_f(max(lgs)) if lgs else '-'}", flush=True)
    if args.json:
        args.json.write_text(json.dumps([tl.__dict__ for tl in results], indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
