"""`wrapagent send [--session ID|last] [--guard NAME] [--wait] [TEXT…]`: the next user message of a
running wrapped session, from outside it (a file watcher, CI, a waiting_for_input hook).

The session takes it through its socket (`session/send_channel.py`) and types
and submits it when the agent has stopped and the user's composer is empty.
Exit 0 once queued (or, with `--wait`, once delivered); 1 with the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from pathlib import Path
from typing import IO, Any, Mapping, Sequence


class SendError(Exception):
    """One line for the user, exit 1."""


def _running_session(ref: str | None, env: Mapping[str, str]) -> dict[str, Any]:
    from wrapagent import paths
    from wrapagent.commands.sessions_find import SessionsError, find_record, project_records

    if ref:
        try:
            record = find_record(ref, env)
        except SessionsError as exc:
            raise SendError(str(exc)) from None
        if record.get("state") != "running":
            raise SendError(f"session {record.get('id')} is not running ({record.get('state')})")
        return record
    root = paths.find_project_root(Path.cwd())
    running = [r for r in project_records(root, env)
               if r.get("state") == "running" and not (r.get("depth") or 0)]
    if not running:
        raise SendError(f"no running wrapagent session in {root}")
    return running[0]  # newest first


def _socket_path(record: Mapping[str, Any]) -> str:
    from wrapagent.session.send_channel import SOCKET_NAME

    folder = record.get("_dir")
    path = os.path.join(str(folder), SOCKET_NAME) if folder else ""
    if not path or not os.path.exists(path):
        why = ("it is not interactive" if record.get("mode") != "pty" else
               "it does not take messages: add `[send]` with `enabled = true` to hooks.toml")
        raise SendError(f"session {record.get('id')}: {why}")
    return path


def send(text: str, record: Mapping[str, Any], *, guard: str | None, wait: bool,
         timeout: float | None) -> dict[str, Any]:
    """Queue `text` in the session; with `wait`, the delivery's outcome. Raises SendError."""
    from wrapagent.session.send_channel import short_path

    path = _socket_path(record)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with short_path(path) as where:
            try:
                sock.connect(where)
            except OSError as exc:
                raise SendError(f"session {record.get('id')} is not taking messages ({exc.strerror})") from None
        sock.sendall(json.dumps({"text": text, "guard": guard, "wait": wait}).encode("utf-8") + b"\n")
        sock.settimeout(timeout)
        reader = sock.makefile("rb")
        answers = []
        try:
            for line in reader:
                answers.append(json.loads(line))
                if "error" in answers[-1] or not wait or "delivered_at" in answers[-1]:
                    break
        except (socket.timeout, TimeoutError):
            raise SendError(f"not delivered within {timeout:g}s (still queued in the session)") from None
    finally:
        sock.close()
    if not answers:
        raise SendError("the session closed the connection without an answer")
    last = answers[-1]
    if "error" in last:
        raise SendError(f"not delivered: {last['error']}")
    if wait and "delivered_at" not in last:
        raise SendError("not delivered: the session ended")
    return last


def main(args: Sequence[str], *, stdin: IO[str] | None = None, out: IO[str] | None = None,
         err: IO[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="wrapagent send",
        description="Send TEXT (or stdin) as the next user message of a running wrapped session: "
                    "typed and submitted when the agent has stopped and your composer is empty.")
    parser.add_argument("text", nargs="*", help="the message (default: read stdin)")
    parser.add_argument("--session", metavar="ID", default=None,
                        help="a session id (prefix) or `last` (default: the newest running session of this project)")
    parser.add_argument("--guard", metavar="NAME", default=None,
                        help='wrap the text as <prompt-guard name="NAME">…</prompt-guard>')
    parser.add_argument("--wait", action="store_true", help="wait until it was delivered")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECS", help="with --wait: give up after SECS")
    ns = parser.parse_args(list(args))
    stdin = sys.stdin if stdin is None else stdin
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    env = os.environ if env is None else env
    text = " ".join(ns.text) if ns.text else stdin.read()
    try:
        if not text.strip():
            raise SendError("nothing to send")
        record = _running_session(ns.session, env)
        answer = send(text, record, guard=ns.guard, wait=ns.wait, timeout=ns.timeout)
    except SendError as exc:
        err.write(f"wrapagent send: {exc}\n")
        return 1
    if "delivered_at" in answer:
        out.write(f"delivered to session {record.get('id')} at {answer['delivered_at']}\n")
    else:
        out.write(f"queued for session {record.get('id')} (message {answer.get('queued')})\n")
    return 0
