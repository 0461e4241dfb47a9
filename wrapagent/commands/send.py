"""`wrapagent send`: put a message into a running wrapped session from outside.

A session with `[send] enabled = true` listens on a Unix socket in its folder
(`session.send_channel`);
this side only finds the session, connects, hands over the text and, with
`--wait`, waits for the session's word on the delivery. Nothing here types
anything: the session does, at the agent's next stop, under the same rules
as the stop check's continuation.

Exit codes: 0 queued (or, with --wait, delivered); 1 refused (no running
session, not interactive, no channel, empty text); 2 usage; 3 not delivered
(the session ended first); 4 --wait timed out (the message stays queued).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence, TextIO

EXIT_REFUSED = 1
EXIT_NOT_DELIVERED = 3
EXIT_TIMEOUT = 4
CONNECT_TIMEOUT_SECS = 10.0

DESCRIPTION = """\
Send TEXT (or stdin) to a running wrapped session: it becomes the agent's
next user message, typed and submitted when the agent has stopped (as for
waiting_for_input), the composer is empty and you are not typing. Several
sends arrive in order, one per stop. By default: the session this runs in
(a hook's or an agent's: WRAPAGENT_SESSION_ID), else the newest running
top-level session of the current project."""

EPILOG = """\
needs `[send]` `enabled = true` in hooks.toml (the session takes messages).
exit codes: 0 queued (with --wait: delivered), 1 refused, 3 not delivered
(the session ended), 4 --wait timed out (the message stays queued).
example (a waiting_for_input hook): gh run watch && wrapagent send "CI is green\""""


class SendError(Exception):
    """One line for the user on stderr, and the exit code."""

    def __init__(self, message: str, code: int = EXIT_REFUSED) -> None:
        super().__init__(message)
        self.code = code


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="wrapagent send", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--session", metavar="ID|last",
                   help="a session id (prefix), or `last`: the newest running session of this project")
    p.add_argument("--guard", metavar="NAME",
                   help='wrap the text as <prompt-guard name="NAME">…</prompt-guard> (machine-sent context)')
    p.add_argument("--wait", action="store_true", help="wait until the message was delivered")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="with --wait: give up after S seconds (the message stays queued)")
    p.add_argument("text", nargs="*", metavar="TEXT", help="the message (words joined by spaces); "
                   "none: read stdin")
    return p


def main(args: Sequence[str], *, stdin: TextIO | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None, env: Mapping[str, str] | None = None,
         cwd: Path | None = None) -> int:
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    ns = parser().parse_args(list(args))
    if ns.timeout is not None and (not ns.wait or ns.timeout <= 0):
        stderr.write("wrapagent send: --timeout needs --wait and a positive number of seconds\n")
        return 2
    try:
        text = _text(ns.text, stdin)
        record = find_session(ns.session, env if env is not None else os.environ, cwd or Path.cwd())
        folder = _session_dir(record, env if env is not None else os.environ)
        return _send(record, folder, text, ns.guard, ns.wait, ns.timeout, stdout)
    except SendError as exc:
        from wrapagent.visible import visible

        stderr.write(visible(f"wrapagent send: {exc}") + "\n")  # names the project folder: inert
        return exc.code


def _text(words: list[str], stdin: TextIO) -> str:
    if words:
        text = " ".join(words)
    elif stdin.isatty():
        raise SendError("no text: give it as arguments or on stdin")
    else:
        text = stdin.read().rstrip("\n")  # `echo hi |` ends with a newline nobody meant to send
    if not text.strip():
        raise SendError("empty message: nothing to send")
    return text


# -- which session -------------------------------------------------------------------


def _is_running(record: Mapping[str, Any]) -> bool:
    from wrapagent.history.records import owner_alive

    return record.get("state") == "running" and owner_alive(record)


def _running_in(root: Path) -> list[dict[str, Any]]:
    """Running sessions under one sessions root, newest first (one listdir of its markers)."""
    from wrapagent.history.records import load_record, running_markers

    out = []
    for sid in running_markers(root, ""):
        record = load_record(root / sid)
        if record is not None and _is_running(record):
            out.append(record)
    out.sort(key=lambda r: str(r.get("id", "")), reverse=True)  # ULIDs: newest first
    return out


def find_session(ref: str | None, env: Mapping[str, str], cwd: Path) -> dict[str, Any]:
    """The record of the session to send to; a SendError that says why there is none."""
    from wrapagent import paths

    project = paths.find_project_root(cwd)
    own = env.get("WRAPAGENT_SESSION_ID")
    if ref is None and own:
        # A hook of a session, or the agent inside it: its own session, not whichever is newest.
        ref = own
    if ref is None or ref.strip().lower() in ("last", "latest"):
        root = paths.sessions_root(project, env)
        running = [r for r in _running_in(root) if r.get("project_root") in (None, str(project))]
        if ref is None:
            running = [r for r in running if not r.get("parent_session")]
        if not running:
            which = "running wrapagent session" if ref is not None else "running wrapagent session (top-level)"
            raise SendError(f"no {which} in {project}: start one with `wrapagent TOOL`, "
                            "or name one with --session ID")
        record = running[0]
    else:
        from wrapagent.commands.sessions_find import SessionsError, find_record

        try:
            record = find_record(ref, env)
        except SessionsError as exc:
            raise SendError(str(exc)) from None
        if not _is_running(record):
            state = record.get("state") or "unknown"
            if state == "running":
                state = "abandoned: its wrapagent is gone"
            raise SendError(f"session {record.get('id')} is not running ({state})")
    if record.get("mode") != "pty":
        raise SendError(f"session {record.get('id')} is not interactive (its tool runs without a "
                        "terminal): there is no composer to type a message into")
    return record


def _session_dir(record: Mapping[str, Any], env: Mapping[str, str]) -> Path:
    if record.get("_dir"):
        return Path(str(record["_dir"]))
    from wrapagent import paths

    return paths.sessions_root(str(record.get("project_root") or ""), env) / str(record["id"])


# -- the exchange ----------------------------------------------------------------------


def _send(record: Mapping[str, Any], folder: Path, text: str, guard: str | None, wait: bool,
          timeout: float | None, stdout: TextIO) -> int:
    import socket

    from wrapagent.session.send_channel import SOCKET_NAME, connect

    sid = record["id"]
    path = str(folder / SOCKET_NAME)
    try:
        sock = connect(path, timeout=CONNECT_TIMEOUT_SECS)
    except FileNotFoundError:
        raise SendError(f"session {sid} does not take messages: add `[send]` with `enabled = true` "
                        "to hooks.toml (or it is a one-shot run, or it is ending now)") from None
    except OSError as exc:
        raise SendError(f"session {sid} is not taking messages ({exc.strerror or exc})") from None
    with sock:
        try:
            sock.sendall(json.dumps({"text": text, "guard": guard, "wait": wait}).encode() + b"\n")
            reader = sock.makefile("rb")
            answer = _line(reader)
        except (OSError, ValueError) as exc:
            raise SendError(f"session {sid}: no answer from its send channel: {exc}") from None
        if "error" in answer or "queued" not in answer:
            raise SendError(f"session {sid} refused the message: {answer.get('error', 'no reason given')}")
        if not wait:
            stdout.write(f"queued for session {sid} (message {answer.get('queued')}): "
                         "delivered when the agent stops and the composer is empty\n")
            return 0
        sock.settimeout(timeout)
        try:
            outcome = _line(reader)
        except socket.timeout:
            raise SendError(f"timeout: not delivered within {timeout:g}s; the message stays queued "
                            f"in session {sid}", EXIT_TIMEOUT) from None
        except (OSError, ValueError):
            outcome = {"error": "the session ended"}
    if outcome.get("delivered_at"):
        stdout.write(f"delivered to session {sid} at {outcome['delivered_at']}\n")
        return 0
    raise SendError(f"not delivered: {outcome.get('error') or 'the session ended'}", EXIT_NOT_DELIVERED)


def _line(reader) -> dict[str, Any]:
    line = reader.readline()
    if not line:
        raise ValueError("the connection closed")
    answer = json.loads(line.decode("utf-8"))
    if not isinstance(answer, dict):
        raise ValueError("not a JSON object")
    return answer
