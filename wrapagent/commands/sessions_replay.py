"""`sessions replay` and `sessions export`: a session's recording played again, its conversation written out.

    sessions replay ID [--speed X] [--idle-limit S]
    sessions export ID --format cast|md|json [-o FILE]

replay plays the asciicast in this terminal as `asciinema play` would:
each event after its interval (capped at `--idle-limit`, divided by
`--speed`); `q` or Ctrl-C stops, space pauses. The modes the recording
turned on (alternate screen, mouse, bracketed paste…) are turned off at the
end, however it ends. export writes the recording itself (`cast`, plain
asciicast v3 any asciinema player reads), or the conversation
(`history/export.py`) as Markdown or JSON.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import IO, Any, Mapping

from wrapagent.commands.sessions_find import SessionsError, pick

PAUSE_KEYS = (b" ",)
QUIT_KEYS = (b"q", b"\x03", b"\x04")


def _record(ns, env: Mapping[str, str], err: IO[str]) -> dict[str, Any]:
    record, note = pick(ns.id, env, ns.cwd, read_only=True)
    if note:
        from wrapagent.visible import visible

        err.write(visible(f"wrapagent sessions: {note}") + "\n")
    return record


def _recording(record: Mapping[str, Any], env: Mapping[str, str]) -> str:
    from wrapagent.history.recording_files import recording_path

    path = recording_path(str(record.get("id")), env)
    if path is None:
        info = record.get("recording")
        why = ("it was not recorded ([record] enabled = false, or not a terminal session)" if not info
               else "its recording is gone (older than [checkpoints] keep_days, or deleted)")
        raise SessionsError(f"session {record.get('id')}: no recording: {why}")
    return path


# --------------------------------------------------------------------------- replay


def cmd_replay(ns, out: IO[str], env: Mapping[str, str], err: IO[str]) -> int:
    from wrapagent.history import cast_file

    if ns.speed <= 0:
        raise SessionsError("--speed must be more than 0")
    if ns.idle_limit is not None and ns.idle_limit < 0:
        raise SessionsError("--idle-limit must be 0 or more")
    record = _record(ns, env, err)
    try:
        header, events = cast_file.load(_recording(record, env))
    except (OSError, cast_file.CastError) as exc:
        raise SessionsError(f"session {record.get('id')}: cannot read its recording: {exc}") from None
    idle = ns.idle_limit if ns.idle_limit is not None else header.get("idle_time_limit")
    out.flush()
    return Player(sys.stdin.fileno(), _out_fd(out)).play(
        cast_file.timed(events, ns.speed, idle if isinstance(idle, (int, float)) else None))


def _out_fd(out: IO[str]) -> int:
    try:
        return out.fileno()
    except (AttributeError, OSError, ValueError):
        return 1


class Player:
    """Writes `o` events to the terminal on time; keys: `q`/Ctrl-C stop, space pauses."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        from wrapagent.proxy.terminal import is_tty
        from wrapagent.proxy.terminal_modes import ModeTracker

        self.in_fd = in_fd
        self.out_fd = out_fd
        self.keys = is_tty(in_fd)
        self.modes = ModeTracker()

    def play(self, timed) -> int:
        from wrapagent.proxy import terminal

        if not self.keys:
            return self._play(timed)
        with terminal.raw_mode(self.in_fd):
            return self._play(timed)

    def _play(self, timed) -> int:
        from wrapagent.proxy.loop_state import write_all

        try:
            for wait, (_, code, data) in timed:
                if wait > 0 and not self._wait(wait):
                    return 0
                if code == "o":
                    chunk = data.encode("utf-8", "replace")
                    self.modes.feed(chunk, len(chunk))
                    if not write_all(self.out_fd, chunk):
                        return 0
        finally:
            reset = self.modes.reset_sequence()
            if reset:
                write_all(self.out_fd, reset)
        return 0

    def _wait(self, secs: float) -> bool:
        """Sleep `secs` (more while paused); False when the user asked to stop."""
        import select

        end = time.monotonic() + secs
        paused, paused_at = False, 0.0
        while True:
            left = None if paused else end - time.monotonic()
            if left is not None and left <= 0:
                return True
            if not self.keys:
                time.sleep(left or 0)
                return True
            readable, _, _ = select.select([self.in_fd], [], [], left)
            if not readable:
                continue
            key = os.read(self.in_fd, 64)
            if not key or key[:1] in QUIT_KEYS:
                return False
            if key[:1] in PAUSE_KEYS:
                if paused:
                    end = time.monotonic() + max(end - paused_at, 0.0)
                else:
                    paused_at = time.monotonic()
                paused = not paused


# --------------------------------------------------------------------------- export


def cmd_export(ns, out: IO[str], env: Mapping[str, str], err: IO[str]) -> int:
    record = _record(ns, env, err)
    if ns.format == "cast":
        data = _cast_bytes(record, env)
    else:
        from wrapagent.history.export import conversation, render_md

        folder = Path(record.get("_dir") or "")
        conv = conversation(record, folder, env)
        if ns.format == "md":
            data = render_md(conv).encode("utf-8", "surrogateescape")
        else:
            import json

            data = (json.dumps(conv, indent=2, ensure_ascii=False) + "\n").encode("utf-8", "surrogateescape")
    if ns.output in (None, "-"):
        out.flush()
        target = getattr(out, "buffer", None)
        if target is not None:
            target.write(data)
            target.flush()
        else:
            out.write(data.decode("utf-8", "replace"))
        return 0
    _write_file(ns.output, data)
    err.write(f"wrapagent sessions: wrote {len(data)} bytes to {ns.output}\n")
    return 0


def _cast_bytes(record: Mapping[str, Any], env: Mapping[str, str]) -> bytes:
    from wrapagent.history import cast_file

    path = _recording(record, env)
    try:
        data = cast_file.read_bytes(path)
        cast_file.parse(data)
    except (OSError, cast_file.CastError) as exc:
        raise SessionsError(f"session {record.get('id')}: cannot read its recording: {exc}") from None
    return data


def _write_file(name: str, data: bytes) -> None:
    """`-o FILE`: a new file, 0600 (a recording shows all the tool showed); never over an existing one."""
    from wrapagent.history.private_files import create_private

    try:
        fd = create_private(name)
    except FileExistsError:
        raise SessionsError(f"{name} exists: not overwritten (choose another name, or remove it)") from None
    except OSError as exc:
        raise SessionsError(f"cannot create {name}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "wb") as f:
        f.write(data)
