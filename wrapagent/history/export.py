"""A session's conversation, the same shape for every tool: as data (`conversation`) and as Markdown.

    {"session": {"id", "tool", "tool_version", "project", "cwd", "started_at", "ended_at",
                 "duration_s", "exit_code", "files_changed": [...] | null},
     "source": "transcript/<file>, …" | "recording" | "none",
     "turns": [{"n": 1, "user": "…", "agent": "…"}, …]}

The turns come from the tool's own transcripts copied into the session
folder (codex, claude, gemini, opencode, the demo agent:
`transcript_turns.py`): the user's message as the model got it, blocks
included, and the agent's reply. A tool without one (or a transcript that
was not copied) is read off the recording's screen (`cast_file.turns_from_screen`).
`files_changed` comes from the session's checkpoints (null when there are none).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Mapping

FILES_LIMIT = 500
"""At most this many changed files are listed (the rest counted)."""


def transcript_files(record: Mapping[str, Any], session_dir: Path) -> list[tuple[str, bytes]]:
    """(relative name, bytes) of the transcripts the session copied, oldest conversation first."""
    from wrapagent.history.private_files import open_private_read
    from wrapagent.history.transcript_turns import MAX_TRANSCRIPT_BYTES

    out = []
    for native in record.get("native_sessions") or []:
        rel = native.get("transcript") if isinstance(native, dict) else None
        if not isinstance(rel, str) or ".." in rel.split("/") or rel.startswith("/"):
            continue
        try:
            with os.fdopen(open_private_read(str(session_dir / rel)), "rb") as f:
                out.append((rel, f.read(MAX_TRANSCRIPT_BYTES)))
        except OSError:
            continue
    return out


def files_changed(record: Mapping[str, Any], env: Mapping[str, str] | None = None) -> list[str] | None:
    """The paths that differ between the session's `before` and `after` checkpoints; None if unknown."""
    from wrapagent import gitcmd

    info = record.get("checkpoints")
    if not isinstance(info, dict) or not info.get("before") or not info.get("after") or not info.get("repo"):
        return None
    try:
        result = gitcmd.run(info["repo"], ["diff", "--name-only", "-z", "--no-renames", info["before"],
                                           info["after"]], git_dir=info.get("git_dir"), timeout=10,
                            base_env=env)
    except gitcmd.GitError:
        return None
    if result.code != 0:
        return None
    names = [os.fsdecode(p) for p in result.stdout.split(b"\0") if p]
    return names


def session_header(record: Mapping[str, Any], env: Mapping[str, str] | None = None,
                   with_files: bool = True) -> dict[str, Any]:
    """The session's facts for the export's header (`with_files`: ask git what changed)."""
    return {
        "id": record.get("id"),
        "tool": record.get("tool"),
        "tool_version": record.get("tool_version"),
        "project": record.get("project_root"),
        "cwd": record.get("cwd"),
        "started_at": record.get("started_at"),
        "ended_at": record.get("ended_at"),
        "duration_s": record.get("duration_s"),
        "exit_code": record.get("exit_code"),
        "files_changed": files_changed(record, env) if with_files else None,
    }


def conversation(record: Mapping[str, Any], session_dir: Path, env: Mapping[str, str] | None = None,
                 *, with_files: bool = True, screens: bool = True) -> dict[str, Any]:
    """The session's conversation (module docstring); never raises for a missing or odd file.

    `screens=False` (the search index, at a session's end): a recording gives the messages'
    first words only, not the replies read off its screen (pyte is slow; the user waits).
    """
    from wrapagent.history.transcript_turns import turns_of

    header = session_header(record, env, with_files)
    source = "none"
    turns: list[dict[str, str]] = []
    files = transcript_files(record, session_dir)
    found = turns_of(str(record.get("tool") or ""), (data for _, data in files)) if files else None
    if found:
        turns, source = found, ", ".join(name for name, _ in files)
    else:
        screen = _screen_turns(record, env, screens)
        if screen:
            turns, source = screen, "recording"
    return {"session": header, "source": source,
            "turns": [{"n": i, "user": t["user"], "agent": t["agent"]} for i, t in enumerate(turns, 1)]}


def _screen_turns(record: Mapping[str, Any], env: Mapping[str, str] | None,
                  screens: bool) -> list[dict[str, str]]:
    from wrapagent.history import cast_file
    from wrapagent.history.recording_files import recording_path

    path = recording_path(str(record.get("id") or ""), env)
    if path is None:
        return []
    try:
        header, events = cast_file.load(path, None if screens else "m")
    except (OSError, cast_file.CastError):
        return []
    return cast_file.turns_from_screen(header, events, screens=screens)


# --------------------------------------------------------------------------- Markdown


def _fence(text: str) -> str:
    """`text` verbatim in a fenced block whose fence no run of backticks inside can close."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def render_md(conv: Mapping[str, Any]) -> str:
    """The conversation as Markdown: a header list, then per turn `### You` (verbatim) and the agent's reply."""
    s = conv["session"]
    tool = s.get("tool") or "agent"
    lines = [f"# Session {s.get('id')}", ""]
    version = f" {s['tool_version']}" if s.get("tool_version") else ""
    lines.append(f"- tool: {tool}{version}")
    lines.append(f"- project: {s.get('project')}")
    if s.get("cwd") and s.get("cwd") != s.get("project"):
        lines.append(f"- folder: {s.get('cwd')}")
    lines.append(f"- date: {s.get('started_at')} to {s.get('ended_at')} ({s.get('duration_s')} s)")
    lines.append(f"- exit code: {s.get('exit_code')}")
    lines.append(f"- files changed: {_files_line(s.get('files_changed'))}")
    lines.append(f"- source: {conv['source']}")
    lines.append("")
    if not conv["turns"]:
        lines += ["(no conversation found: no transcript and no recording)", ""]
    for turn in conv["turns"]:
        lines += [f"## Turn {turn['n']}", "", "### You", "", _fence(turn["user"]), "", f"### {tool}", ""]
        lines += [turn["agent"] or "(no reply)", ""]
    return "\n".join(lines)


def _files_line(files: list[str] | None) -> str:
    if files is None:
        return "unknown (no checkpoints)"
    if not files:
        return "none"
    shown = ", ".join(f"`{f}`" for f in files[:FILES_LIMIT])
    more = len(files) - FILES_LIMIT
    return shown + (f" and {more} more" if more > 0 else "")
