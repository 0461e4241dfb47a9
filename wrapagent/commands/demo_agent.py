"""A tiny terminal agent that shows exactly what it received.

`wrapagent demo` runs it under wrapagent with the user's real config, so a
newcomer sees injection work with no coding CLI installed. Tests use it as a
fast stand-in for the real CLIs: it behaves like them where it matters
(bracketed paste enabled, a prompt drawn when ready, `\\r` submits, `\\n`
inserts a newline, `/…` commands) and it can log every message it received,
byte for byte, as JSON lines (`--log FILE` or `WRAPAGENT_DEMO_LOG`).

Usage: python -m wrapagent.commands.demo_agent [--log FILE] [-p] [PROMPT]
"""

from __future__ import annotations

import json
import os
import signal
import sys
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import TextIO

PROMPT = "demo> "
BANNER = ("wrapagent demo agent: type a message and press Enter; "
          "/quit or Ctrl-D to leave.")


class Agent:
    def __init__(self, log_path: str | None, out: TextIO) -> None:
        self.log_path = log_path
        self.out = out
        self.count = 0

    def receive(self, text: str, how: str) -> None:
        """Show (and log) a message exactly as it arrived."""
        self.count += 1
        if self.log_path:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"n": self.count, "how": how, "text": text}) + "\n")
        body = text.replace("\n", "\r\n" if how == "tty" else "\n")
        nl = "\r\n" if how == "tty" else "\n"
        self.out.write(f"{nl}--- message {self.count} received ({len(text)} chars) ---{nl}"
                       f"{body}{nl}--- end of message {self.count} ---{nl}")
        self.out.write(f"reply: MOCK-REPLY-{self.count}{nl}")
        self.out.flush()


def _one_shot(agent: Agent, prompt: str | None) -> int:
    text = prompt if prompt is not None else sys.stdin.read()
    agent.receive(text, "pipe")
    return 0


def _interactive(agent: Agent, initial: str | None) -> int:
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    out = sys.stdout
    try:
        tty.setraw(fd)
        out.write("\x1b[?2004h" + BANNER + "\r\n")
        if initial is not None:
            agent.receive(initial, "tty")
        out.write(PROMPT)
        out.flush()
        return _loop(agent, fd, out)
    finally:
        out.write("\x1b[?2004l")
        out.flush()
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _loop(agent: Agent, fd: int, out: TextIO) -> int:
    from wrapagent.inject.keys import (BACKSPACE, ENTER, INTERRUPT, NEWLINE, PASTE_END, PASTE_START,
                                       TEXT, tokenize)

    buf: list[str] = []
    in_paste = False
    interrupts = 0
    while True:
        data = os.read(fd, 65536)
        if not data:
            return 0
        for tok in tokenize(data):
            kind = tok.kind
            if kind == PASTE_START:
                in_paste = True
                continue
            if kind == PASTE_END:
                in_paste = False
                continue
            if in_paste and kind in (ENTER, NEWLINE):
                # Terminals send newlines inside a paste as \r: keep them as \n.
                buf.append("\n")
                out.write("\r\n")
                continue
            text = tok.data.decode("utf-8", "replace")
            if kind == TEXT or (in_paste and kind not in (PASTE_START, PASTE_END)):
                buf.append(text)
                out.write(text)
                interrupts = 0
            elif kind == NEWLINE:
                buf.append("\n")
                out.write("\r\n")
            elif kind == BACKSPACE and buf:
                buf.pop()
                out.write("\b \b")
            elif kind == ENTER:
                message = "".join(buf)
                buf.clear()
                if message.strip() == "/quit":
                    out.write("\r\nbye\r\n")
                    out.flush()
                    return 0
                if message.startswith("/"):
                    out.write(f"\r\n(command {message.strip()} ignored by the demo agent)\r\n")
                elif message:
                    agent.receive(message, "tty")
                else:
                    out.write("\r\n")
                out.write(PROMPT)
            elif kind == INTERRUPT and tok.data == b"\x03":
                interrupts += 1
                if not buf and interrupts >= 2:
                    out.write("\r\n")
                    out.flush()
                    return 0
                buf.clear()
                out.write("\r\n(cleared; Ctrl-C again to quit)\r\n" + PROMPT)
            elif tok.data == b"\x04" and not buf:
                out.write("\r\n")
                out.flush()
                return 0
        out.flush()


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    log_path = os.environ.get("WRAPAGENT_DEMO_LOG")
    one_shot = False
    prompt: str | None = None
    while args:
        arg = args.pop(0)
        if arg == "--log" and args:
            log_path = args.pop(0)
        elif arg in ("-p", "--print"):
            one_shot = True
        elif arg in ("--resume", "--no-paste", "--typed"):
            continue
        elif arg == "--":
            prompt = " ".join(args)
            break
        else:
            prompt = arg
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    agent = Agent(log_path, sys.stdout)
    if one_shot or not (sys.stdin.isatty() and sys.stdout.isatty()):
        return _one_shot(agent, prompt)
    return _interactive(agent, prompt)


if __name__ == "__main__":
    sys.exit(main())
