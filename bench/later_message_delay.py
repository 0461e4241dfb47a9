#!/usr/bin/env python3
"""How long the first key of a LATER message is held for `every_message` guards.

An every_message guard runs when the first key of each later message arrives
(session/conversation.py says why), and the key is held until its block is in
the composer. With the built-in guards `date` and `git_status` marked
every_message (a git project), run one interactive session per tool, send a
first message and then `--messages` later ones, each after the reply, and read
`first_key_delay_ms` of every later delivery from the session record; check
that each arrived as block + text (the demo agent's log or the mock's).

    python bench/later_message_delay.py                    # demo + installed CLIs
    python bench/later_message_delay.py --messages 8 demo codex

Target (issue 22): median < 150 ms with built-in guards. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HOOKS = ('[[prompt_guard]]\nname = "clock"\nbuiltin = "date"\nevery_message = true\n'
         '[[prompt_guard]]\nname = "git"\nbuiltin = "git_status"\nevery_message = true\n')


def later(record: dict) -> list[dict]:
    return [i for i in record.get("injections") or [] if (i.get("message") or 1) > 1]


def run_demo(root: Path, messages: int) -> tuple[list[float], int]:
    import pexpect

    home = root / "home"
    (home / ".config" / "wrapagent").mkdir(parents=True)
    (home / ".config" / "wrapagent" / "hooks.toml").write_text(HOOKS)
    proj = root / "proj"
    proj.mkdir()
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    log = root / "demo.jsonl"
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_STATE_HOME": str(home / "state"), "PATH": "/usr/bin:/bin",
           "WRAPAGENT_DEMO_LOG": str(log), "TERM": "xterm-256color"}
    child = pexpect.spawn(sys.executable, ["-m", "wrapagent", "demo"], env=env, cwd=str(proj),
                          dimensions=(40, 120), timeout=30)
    child.expect("demo> ")
    time.sleep(0.5)
    for n in range(1, messages + 2):
        for ch in f"message number {n}":
            child.send(ch)
            time.sleep(0.03)
        time.sleep(0.3)
        child.send("\r")
        child.expect(f"end of message {n}")
        child.expect("demo> ")
        time.sleep(0.5)
    child.send("/quit\r")
    child.expect(pexpect.EOF)
    child.close()
    record = json.loads(next((home / "state").glob("wrapagent/projects/*/*/session.json")).read_text())
    texts = [json.loads(line)["text"] for line in log.read_text().splitlines()]
    deliveries = later(record)
    exact = sum(texts[d["message"] - 1] == d["text"] + f"message number {d['message']}" for d in deliveries)
    return [d["first_key_delay_ms"] for d in deliveries if d["first_key_delay_ms"] is not None], exact


def run_cli(tool: str, root: Path, messages: int) -> tuple[list[float], int]:
    from integration.clienv import SPECS, CliEnv
    from integration.install_clis import bin_dir
    from integration.mock_server import MockServer

    with MockServer(root / "mock.jsonl") as mock:
        env = CliEnv.create(tool, root / "env", mock, bin_dir())
        env.write_wrapagent_config(hooks_toml=HOOKS)
        spec = SPECS[tool]
        term = env.spawn(env.interactive_args())
        try:
            term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
            term.wait_quiet(max(spec.settle, 0.5), timeout=15)
            mark = mock.mark()
            for n in range(1, messages + 2):
                text = f"message number {n}"
                term.type(text)
                term.wait_for(text, timeout=15)
                term.enter(after=0.3)
                mock.wait_for_turns(n, api=spec.api, timeout=spec.reply_timeout, since=mark)
                term.wait_for(f"MOCK-REPLY-{n}", timeout=spec.reply_timeout)
                term.wait_quiet(1.0, timeout=30)
            texts = mock.user_texts(api=spec.api, since=mark)
            term.quit(spec.quit_keys, gap=spec.quit_gap)
        finally:
            term.close()
        record = env.sessions()[-1]
    deliveries = later(record)
    exact = sum(texts[d["message"] - 1] == d["text"] + f"message number {d['message']}" for d in deliveries)
    return [d["first_key_delay_ms"] for d in deliveries if d["first_key_delay_ms"] is not None], exact


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tools", nargs="*", default=["demo", "codex", "claude", "gemini", "opencode"])
    parser.add_argument("--messages", type=int, default=6, help="later messages per session")
    args = parser.parse_args()
    rows = []
    for tool in args.tools:
        with tempfile.TemporaryDirectory(prefix=f"laterbench-{tool}-") as tmp:
            if tool == "demo":
                delays, exact = run_demo(Path(tmp), args.messages)
            else:
                from integration.install_clis import bin_dir

                if not (bin_dir() / tool).exists():
                    print(f"{tool}: not installed, skipped", file=sys.stderr)
                    continue
                delays, exact = run_cli(tool, Path(tmp), args.messages)
        print(f"{tool}: {delays}", file=sys.stderr)
        rows.append((tool, len(delays), statistics.median(delays) if delays else None,
                     min(delays) if delays else None, max(delays) if delays else None, exact))
    print("\n| tool | later messages | first-key hold median (ms) | min | max | exact bytes |")
    print("|---|---|---|---|---|---|")
    for tool, n, med, lo, hi, exact in rows:
        print(f"| {tool} | {n} | {med} | {lo} | {hi} | {exact}/{n} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
