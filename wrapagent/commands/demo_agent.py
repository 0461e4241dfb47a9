"""A tiny terminal agent that shows exactly what it received.

`wrapagent demo` runs it under wrapagent with the user's real config, so a
newcomer sees injection work with no coding CLI installed. Tests use it as a
fast stand-in for the real CLIs: it behaves like them where it matters
(bracketed paste enabled, a prompt drawn when ready, `\\r` submits, `\\n`
inserts a newline, `/…` commands, `/clear` and `/new` start a new
conversation) and it can log every message it received, byte for byte, as
JSON lines (`--log FILE` or `WRAPAGENT_DEMO_LOG`), and what it did (replies,
resets) to another file, in order (`WRAPAGENT_DEMO_EVENTS`): a hook may append
to the same file, and a test then reads who came first without timing anything.

Like the real CLIs while the model works, a message containing `(think)`
animates a spinner for `--think-secs` (default 3, or WRAPAGENT_DEMO_THINK_SECS)
before the reply; one containing `(ask)` first shows a permission prompt
that waits for Enter; one containing `(choose)` a question answered by one
key (`1` or `2`, no Enter); one containing `(full)` fills its context, so after
the reply it compacts the conversation by itself, saying so on a line of its
own (`(conversation compacted automatically)`), as the real CLIs do when their
context window fills; one containing `(long N)` prints N lines of output
before its reply, in one burst, as an agent printing a long diff or test log
does (tests use it to put the screen emulator behind the output). Like them
too, ↑ on the prompt recalls the last message into it, and shift+tab
switches a mode (redrawing the prompt, its text unchanged).

WRAPAGENT_DEMO_PASTE_ENTER=joins makes it read input as gemini 0.61 does: an
Enter that comes in the same read right after a paste's end is part of the
paste (a newline), not a submission; tests use it to see held keys released
as one burst.

WRAPAGENT_DEMO_DROP_PASTES=N makes its composer drop its first N pastes
without a trace (nothing drawn, nothing kept), like a composer that is not
listening yet; tests use it to see the delivery receipt fail.

It edits files on request, so diff, undo and redo can be tried with no
coding CLI: a message `write PATH TEXT` writes TEXT and a newline to PATH,
`rm PATH` removes it (PATH relative to the folder it runs in, never outside
it, never through a link); it replies as usual.

Usage: python -m wrapagent.commands.demo_agent [--log FILE] [--think-secs S] [-p] [PROMPT] | --version
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


class Transcript:
    """The demo agent's own transcript, as a real CLI keeps one: a JSONL file per conversation.

    In wrapagent's state folder (`session/transcripts.py`, `find_demo`), 0600,
    created new (never through a link); a reset starts the next file. A
    transcript that cannot be written is no reason to fail the demo.
    """

    def __init__(self) -> None:
        import time

        self.stamp = time.strftime("%Y%m%dT%H%M%S")
        self.fd = -1
        self.conversation = 0

    def start(self, conversation: int) -> None:
        import uuid

        from wrapagent.history.private_files import create_private, private_dir
        from wrapagent.history.transcripts import demo_transcripts_dir

        self.close()
        self.conversation = conversation
        try:
            folder = private_dir(str(demo_transcripts_dir(os.environ)))
            name = f"{self.stamp}-{os.getpid()}-{conversation}.jsonl"
            self.fd = create_private(os.path.join(folder, name))
        except OSError:
            self.fd = -1
            return
        self.write("session", id=str(uuid.uuid4()), cwd=os.getcwd(),
                   wrapagent_session=os.environ.get("WRAPAGENT_SESSION_ID"))

    def write(self, kind: str, **fields: object) -> None:
        if self.fd < 0:
            return
        try:
            os.write(self.fd, (json.dumps({"type": kind, **fields}) + "\n").encode())
        except OSError:
            pass

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


SPINNER = "|/-\\"
SPIN_SECS = 0.1


class Agent:
    def __init__(self, log_path: str | None, out: TextIO, think_secs: float = 3.0,
                 events_path: str | None = None) -> None:
        self.log_path = log_path
        self.events_path = events_path
        self.out = out
        self.count = 0
        self.conversation = 1
        self.think_secs = think_secs
        self.asking: str | None = None
        """A message waiting for the user's Enter at the permission prompt."""
        self.choosing: str | None = None
        """A message waiting for a one-key answer (`1` or `2`)."""
        self.last: str = ""
        """The last message submitted: ↑ recalls it."""
        self.mode = "default"
        self.transcript = Transcript()

    def event(self, what: str, **fields: object) -> None:
        """Append an event (message, reply, reset) to the events file, if any."""
        if self.events_path:
            with open(self.events_path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"event": what, **fields}) + "\n")

    def think(self) -> None:
        """A spinner with a timer, redrawn every 0.1 s, like the real CLIs while the model works."""
        import time

        start = time.monotonic()
        tick = 0
        while (elapsed := time.monotonic() - start) < self.think_secs:
            self.out.write(f"\r{SPINNER[tick % 4]} thinking {elapsed:4.1f}s")
            self.out.flush()
            tick += 1
            time.sleep(SPIN_SECS)
        self.out.write("\r\x1b[K")

    def submit(self, text: str) -> None:
        """A typed message: ask first if it says `(ask)`, else think if it says `(think)`, then reply."""
        self.last = text
        if "(ask)" in text:
            self.asking = text
            self.out.write("\r\nallow the demo tool to run? press Enter to allow\r\n")
            return
        if "(choose)" in text:
            self.choosing = text
            self.out.write("\r\nrun the tests first?\r\n> 1. Yes\r\n  2. No\r\npress 1 or 2\r\n")
            return
        if "(think)" in text:
            self.out.write("\r\n")
            self.think()
        self.print_long(text)
        self.receive(text, "tty")
        if "(full)" in text:
            self.compact_by_itself()

    def print_long(self, text: str) -> None:
        """`(long N)`: N lines of output at once, before the reply."""
        import re

        found = re.search(r"\(long (\d{1,7})\)", text)
        if found is None:
            return
        count = int(found.group(1))
        self.out.write("\r\n" + "".join(f"output line {i} of {count}\r\n" for i in range(1, count + 1)))
        self.out.flush()

    def compact_by_itself(self) -> None:
        """Its context is full: the conversation is replaced by a summary, and it says so."""
        self.event("compaction", conversation=self.conversation)
        self.out.write("(conversation compacted automatically)\r\n")
        self.out.flush()

    def allowed(self) -> None:
        text, self.asking = self.asking, None
        assert text is not None
        self.out.write("allowed\r\n")
        self.think()
        self.receive(text, "tty")

    def chose(self, key: str) -> None:
        text, self.choosing = self.choosing, None
        assert text is not None
        self.out.write(f"chose {key}\r\n")
        self.receive(text, "tty")

    def reset(self, command: str) -> None:
        self.conversation += 1
        self.event("reset", command=command, conversation=self.conversation)
        self.transcript.close()  # the next message starts the next conversation's file
        self.out.write(f"\r\n(new conversation {self.conversation})\r\n")

    def receive(self, text: str, how: str) -> None:
        """Show (and log) a message exactly as it arrived."""
        self.count += 1
        self.event("message", n=self.count)
        if self.transcript.conversation != self.conversation or self.transcript.fd < 0:
            self.transcript.start(self.conversation)
        self.transcript.write("user", text=text)
        if self.log_path:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"n": self.count, "how": how, "text": text,
                                    "conversation": self.conversation}) + "\n")
        body = text.replace("\n", "\r\n" if how == "tty" else "\n")
        nl = "\r\n" if how == "tty" else "\n"
        self.out.write(f"{nl}--- message {self.count} received ({len(text)} chars) ---{nl}"
                       f"{body}{nl}--- end of message {self.count} ---{nl}")
        done = edit_files(text)
        if done:
            self.out.write(f"{done}{nl}")
        reply = f"MOCK-REPLY-{self.count}"
        self.out.write(f"reply: {reply}{nl}")
        self.out.flush()
        self.transcript.write("assistant", text=reply)
        self.event("reply", n=self.count)


def edit_files(text: str) -> str | None:
    """`write PATH TEXT` / `rm PATH` (a line of the message each): what was done, or None.

    Only below the current folder: a path that leaves it (`..`, absolute)
    or goes through a link is refused, as an agent's sandbox would.
    """
    said = []
    for line in text.splitlines():
        words = line.strip().split(" ", 2)
        if not words or words[0] not in ("write", "rm") or len(words) < 2:
            continue
        path = words[1]
        here = os.path.realpath(".")
        full = os.path.realpath(os.path.join(here, os.path.dirname(path)))
        if os.path.isabs(path) or not (full == here or full.startswith(here + os.sep)):
            said.append(f"refused: {path} is outside this folder")
            continue
        target = os.path.join(full, os.path.basename(path))
        try:
            if words[0] == "write":
                os.makedirs(full, exist_ok=True)
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                with os.fdopen(os.open(target, flags, 0o644), "w", encoding="utf-8") as f:
                    f.write((words[2] if len(words) > 2 else "") + "\n")
                said.append(f"wrote {path}")
            else:
                os.unlink(target)
                said.append(f"removed {path}")
        except OSError as exc:
            said.append(f"{words[0]} {path}: {exc.strerror or exc}")
    return "; ".join(said) or None


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
    from wrapagent.inject.keys import (BACKSPACE, ENTER, INTERRUPT, KEY, NEWLINE, PASTE_END, PASTE_START,
                                       TEXT, tokenize)

    buf: list[str] = []
    in_paste = False
    interrupts = 0
    enter_joins_paste = os.environ.get("WRAPAGENT_DEMO_PASTE_ENTER") == "joins"
    drops = _drops()
    dropping = False
    while True:
        data = os.read(fd, 65536)
        if not data:
            return 0
        after_paste = False
        for tok in tokenize(data):
            kind = tok.kind
            if dropping:
                dropping = kind != PASTE_END
                continue
            if kind == PASTE_START and drops > 0:
                drops -= 1
                dropping = True
                continue
            if kind == PASTE_START:
                in_paste = True
                continue
            if kind == PASTE_END:
                in_paste = False
                after_paste = enter_joins_paste
                continue
            if after_paste and kind == ENTER:
                buf.append("\n")  # gemini: an Enter in the paste's own read belongs to the paste
                out.write("\r\n")
                continue
            after_paste = False
            if in_paste and kind in (ENTER, NEWLINE):
                # Terminals send newlines inside a paste as \r: keep them as \n.
                buf.append("\n")
                out.write("\r\n")
                continue
            text = tok.data.decode("utf-8", "replace")
            if agent.choosing is not None and not in_paste:
                if kind == TEXT and text[:1] in ("1", "2"):
                    agent.chose(text[:1])
                    out.write(PROMPT)
                continue  # a one-key question: nothing reaches the prompt
            if kind == KEY and tok.data in (b"\x1b[A", b"\x1bOA") and not buf and agent.last:
                buf[:] = list(agent.last)  # history recall: the last message back on the prompt
                out.write("\r\x1b[K" + PROMPT + agent.last)
            elif kind == KEY and tok.data == b"\x1b[Z":
                agent.mode = "plan" if agent.mode == "default" else "default"
                out.write(f"\r\x1b[K(mode: {agent.mode})\r\n" + PROMPT + "".join(buf))
            elif kind == TEXT or (in_paste and kind not in (PASTE_START, PASTE_END)):
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
                if agent.asking is not None and not message:
                    agent.allowed()
                elif message.strip() in ("/clear", "/new"):
                    agent.reset(message.strip())
                elif message.startswith("/"):
                    out.write(f"\r\n(command {message.strip()} ignored by the demo agent)\r\n")
                elif message:
                    agent.submit(message)
                else:
                    out.write("\r\n")
                if agent.asking is not None or agent.choosing is not None:
                    continue
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


def _drops() -> int:
    """WRAPAGENT_DEMO_DROP_PASTES: how many pastes the composer drops (0 unless a number)."""
    value = os.environ.get("WRAPAGENT_DEMO_DROP_PASTES", "")
    return int(value) if value.isdigit() else 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    log_path = os.environ.get("WRAPAGENT_DEMO_LOG")
    think = os.environ.get("WRAPAGENT_DEMO_THINK_SECS", "3")
    one_shot = False
    prompt: str | None = None
    while args:
        arg = args.pop(0)
        if arg == "--log" and args:
            log_path = args.pop(0)
        elif arg in ("-p", "--print"):
            one_shot = True
        elif arg == "--think-secs" and args:
            think = args.pop(0)
        elif arg in ("--resume", "--no-paste", "--typed"):
            continue
        elif arg == "--version":  # as the real CLIs answer it (a session looks up its tool's release)
            from wrapagent import __version__

            sys.stdout.write(f"wrapagent demo agent {__version__}\n")
            return 0
        elif arg == "--":
            prompt = " ".join(args)
            break
        else:
            prompt = arg
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    agent = Agent(log_path, sys.stdout, think_secs=float(think),
                  events_path=os.environ.get("WRAPAGENT_DEMO_EVENTS"))
    if one_shot or not (sys.stdin.isatty() and sys.stdout.isatty()):
        return _one_shot(agent, prompt)
    return _interactive(agent, prompt)


if __name__ == "__main__":
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # `wrapagent demo -p hi | head -c1`: quiet, as git is
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # for the exit's own flush
        code = 141
    sys.exit(code)
