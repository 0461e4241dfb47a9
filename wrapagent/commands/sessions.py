"""`wrapagent sessions …`: read the session records wrapagent wrote, and act on their history.

    sessions list [--project PATH] [--tool NAME] [--limit N] [--json]
    sessions show ID [--json]          ID: a unique prefix (case-insensitive), or `last`
    sessions path [--project PATH]     the project's sessions repository (for `git -C … log`)
    sessions diff ID [--stat]          what the session changed in the work tree (git diff)
    sessions undo ID                   put the files it changed back as they were before it
    sessions prune [--older-than DAYS] [--project PATH]   drop old checkpoint refs
    sessions resume ID [-- TOOL_ARGS]  the same tool, wrapped, continuing its own session

Records are read with `sessions.iter_records` (newest first: session ids are
ULIDs). list, show and path never write: a session still running shows as
`running`. diff, undo and prune work on the checkpoints of
`session/checkpoints.py`; resume on the native ids of `session/transcripts.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import IO, Any, Mapping, Sequence

from wrapagent import paths
from wrapagent.session.records import LOG_NAME, iter_records

INJECTED_STATUSES = ("delivered", "submitted")
DEFAULT_LIMIT = 20
LATEST_ALIASES = ("last", "latest")  # never ULID prefixes: Crockford base32 has no L or U


class _SessionsError(Exception):
    """A user-facing failure: one line on stderr, exit 1."""


# --------------------------------------------------------------------------- helpers


def injected(record: Mapping[str, Any]) -> bool:
    """True when the blocks reached the tool (delivered, or delivered and submitted)."""
    inj = record.get("injection") or {}
    return inj.get("status") in INJECTED_STATUSES


def format_time(iso: str | None) -> str:
    """An ISO timestamp as local `YYYY-MM-DD HH:MM:SS`; `-` when missing, as is when unparsable."""
    if not iso:
        return "-"
    import datetime as dt

    try:
        stamp = dt.datetime.fromisoformat(iso)
    except (TypeError, ValueError):
        return str(iso)
    if stamp.tzinfo is not None:
        stamp = stamp.astimezone()
    return stamp.strftime("%Y-%m-%d %H:%M:%S")


def format_duration(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return "-"
    if seconds < 60:
        return f"{seconds:.2f}s" if seconds < 10 else f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def format_exit(record: Mapping[str, Any]) -> str:
    code = record.get("exit_code")
    if code is None:
        # running, blocked (pre_run refused the launch), abandoned (wrapagent was killed)
        state = record.get("state")
        return state if state in ("running", "blocked", "abandoned") else "-"
    sig = record.get("signal")
    if sig:
        import signal as _signal

        try:
            name = _signal.Signals(sig).name
        except (ValueError, TypeError):
            name = f"signal {sig}"
        return f"{code} ({name})"
    return str(code)


def format_injected(record: Mapping[str, Any]) -> str:
    status = (record.get("injection") or {}).get("status")
    if status in INJECTED_STATUSES:
        return "yes"
    if status in ("lost", "pending"):
        return f"no ({status})"
    return "no"


def _project_name(record: Mapping[str, Any]) -> str:
    root = record.get("project_root")
    return os.path.basename(root.rstrip("/")) or root if root else "-"


def _resolve_project(project: str | None) -> Path:
    return paths.find_project_root(Path(project or ".").expanduser())


def visible_text(text: str) -> str:
    """Text as is, except control characters (not newline or tab) shown as `\\xNN`.

    Injected blocks are sanitised when built; this keeps an old or hand-edited
    record from driving the user's terminal.
    """
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\n\t" or not (code < 0x20 or 0x7F <= code < 0xA0):
            out.append(ch)
        else:
            out.append(f"\\x{code:02x}")
    return "".join(out)


def _summary(record: Mapping[str, Any]) -> dict[str, Any]:
    inj = record.get("injection") or {}
    return {
        "id": record.get("id"),
        "tool": record.get("tool"),
        "project_root": record.get("project_root"),
        "started_at": record.get("started_at"),
        "ended_at": record.get("ended_at"),
        "duration_s": record.get("duration_s"),
        "exit_code": record.get("exit_code"),
        "signal": record.get("signal"),
        "mode": record.get("mode"),
        "state": record.get("state"),
        "injected": injected(record),
        "injection_status": inj.get("status"),
        "dir": record.get("_dir"),
    }


# --------------------------------------------------------------------------- finding records


def all_records(env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every record of every project, newest first."""
    return iter_records(paths.all_sessions_roots(env))


def project_records(project_root: Path, env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The records of one project, newest first.

    With `WRAPAGENT_SESSIONS_ROOT` set all projects share one root, so the
    record's own `project_root` decides.
    """
    records = iter_records([paths.sessions_root(project_root, env)])
    return [r for r in records if r.get("project_root") in (None, str(project_root))]


def find_record(ref: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The record whose id starts with `ref` (case-insensitive); `last` = the newest one."""
    records = all_records(env)
    ref = ref.strip()
    if not ref:
        raise _SessionsError("empty session id")
    if ref.lower() in LATEST_ALIASES:
        if not records:
            raise _SessionsError("no sessions recorded yet")
        return records[0]
    wanted = ref.upper()
    matches = [r for r in records if str(r.get("id", "")).upper().startswith(wanted)]
    exact = [r for r in matches if str(r.get("id", "")).upper() == wanted]
    if exact:
        return exact[0]
    if not matches:
        raise _SessionsError(f"no session matches {ref!r} (see `wrapagent sessions list`)")
    if len(matches) > 1:
        shown = ", ".join(str(r.get("id")) for r in matches[:5])
        more = " …" if len(matches) > 5 else ""
        raise _SessionsError(f"{ref!r} matches {len(matches)} sessions ({shown}{more}); give more characters")
    return matches[0]


def read_log(record: Mapping[str, Any]) -> str | None:
    folder = record.get("_dir")
    if not folder:
        return None
    try:
        return (Path(folder) / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


# --------------------------------------------------------------------------- list


def render_list(records: Sequence[Mapping[str, Any]], total: int) -> str:
    if not records:
        return "no sessions recorded\n"
    header = ("ID", "TOOL", "PROJECT", "STARTED", "DURATION", "EXIT", "INJECTED")
    rows = [header] + [
        (
            str(r.get("id", "?")),
            str(r.get("tool", "?")),
            _project_name(r),
            format_time(r.get("started_at")),
            format_duration(r.get("duration_s")),
            format_exit(r),
            format_injected(r),
        )
        for r in records
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    if total > len(records):
        lines.append(f"({total - len(records)} older session(s) not shown; --limit 0 shows all)")
    return "\n".join(lines) + "\n"


def cmd_list(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str]) -> int:
    if ns.project is not None:
        records = project_records(_resolve_project(ns.project), env)
    else:
        records = all_records(env)
    if ns.tool:
        records = [r for r in records if ns.tool in (r.get("tool"), r.get("transport"))]
    total = len(records)
    if ns.limit and ns.limit > 0:
        records = records[: ns.limit]
    if ns.json:
        json.dump([_summary(r) for r in records], out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        out.write(render_list(records, total))
    return 0


# --------------------------------------------------------------------------- show


def hook_rows(hooks: Sequence[Mapping[str, Any]], indent: str = "  ") -> list[str]:
    """The hook outcomes as an aligned table (name, kind, exit, duration, timed out)."""
    if not hooks:
        return [f"{indent}(none ran)"]
    header = ("NAME", "KIND", "EXIT", "DURATION", "TIMED OUT")
    rows = [header]
    for h in hooks:
        code = h.get("exit_code")
        runs = h.get("runs")
        rows.append((
            str(h.get("name", "?")) + (f" x{runs}" if isinstance(runs, int) and runs > 1 else ""),
            str(h.get("kind", "?")),
            "-" if code is None else str(code),
            format_duration(h.get("duration_s")),
            "yes" if h.get("timed_out") else "no",
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [indent + "  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip() for row in rows]
    for h in hooks:
        if h.get("error"):
            lines.append(f"{indent}{h.get('name')}: error: {visible_text(str(h['error']))}")
    return lines


def _bytes(n: Any) -> str:
    if not isinstance(n, int) or isinstance(n, bool):
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _later_injections(injections: Sequence[Mapping[str, Any]], first_text: str | None) -> list[str]:
    """One line per conversation started by a reset; its text only when it differs from the first."""
    out: list[str] = []
    for inj in injections[1:]:
        details = [str(inj.get("status") or "none")]
        if inj.get("at"):
            details.append(f"at {format_time(inj['at'])}")
        if inj.get("first_key_delay_ms") is not None:
            details.append(f"first key held {inj['first_key_delay_ms']} ms")
        out.append(f"Injection after reset, conversation {inj.get('conversation', '?')}: {', '.join(details)}")
        out.extend(f"  note: {visible_text(str(n))}" for n in inj.get("notes") or [])
        text = inj.get("text")
        if text and text != first_text:
            shown = visible_text(text)
            out.append(f"--- injected text ({len(text)} chars), verbatim ---")
            out.append(shown[:-1] if shown.endswith("\n") else shown + "\n(no newline at end)")
            out.append("--- end of injected text ---")
        elif text:
            out.append("  (same text as the first conversation)")
    return out


TURNS_SHOWN = 20


def _seconds_between(start: str | None, end: str | None) -> str:
    import datetime as dt

    try:
        delta = dt.datetime.fromisoformat(str(end)) - dt.datetime.fromisoformat(str(start))
    except (TypeError, ValueError):
        return "?"
    return f"{delta.total_seconds():.1f}s"


def _turn_rows(record: Mapping[str, Any]) -> list[str]:
    """`Turns: N` and one compact line per turn: submitted, and when the agent went quiet."""
    turns = record.get("turns") or []
    if not turns:
        return []
    total = record.get("turns_total") or len(turns)
    out = ["", f"Turns: {total}"]
    for turn in turns[:TURNS_SHOWN]:
        quiet = turn.get("quiet_at")
        waits = f", {turn['waits']} waits" if turn.get("waits") else ""
        out.append(f"  #{turn.get('n')}  submitted {format_time(turn.get('at'))}"
                   + (f", waiting after {_seconds_between(turn.get('at'), quiet)}{waits}" if quiet
                      else ", not seen waiting"))
    if total > TURNS_SHOWN:
        out.append(f"  ... {total - TURNS_SHOWN} more")
    return out


def render_show(record: Mapping[str, Any], log: str | None) -> str:
    import shlex

    inj = record.get("injection") or {}
    argv = record.get("argv") or []
    out = [f"session {record.get('id')}"]

    def field(label: str, value: Any) -> None:
        out.append(f"  {label:<11} {visible_text(str(value))}")

    field("tool", f"{record.get('tool')} (transport {record.get('transport')}, mode {record.get('mode')})")
    field("argv", " ".join(shlex.quote(str(a)) for a in argv) if argv else "-")
    field("executable", record.get("executable") or "-")
    field("project", record.get("project_root") or "-")
    field("cwd", record.get("cwd") or "-")
    field("started", format_time(record.get("started_at")))
    field("ended", format_time(record.get("ended_at")))
    field("duration", format_duration(record.get("duration_s")))
    field("exit", format_exit(record))
    field("resources", f"cpu {format_duration(record.get('cpu_seconds'))}, "
                       f"peak rss {_bytes(record.get('peak_rss_bytes'))}")
    depth = record.get("depth") or 0
    parent = record.get("parent_session")
    if parent or depth:
        field("parent", f"{parent or '-'} (depth {depth})")
    if record.get("is_resume"):
        field("resume", "yes")
    field("directory", record.get("_dir") or "-")
    out.extend(history_lines(record))

    out.append("")
    status = inj.get("status") or "none"
    details = [f"path {inj.get('path') or '-'}", f"attempts {inj.get('attempts', 0)}"]
    if inj.get("ready_after_s") is not None:
        details.append(f"ready after {inj['ready_after_s']:.2f}s")
    if inj.get("first_key_delay_ms") is not None:
        details.append(f"first key held {inj['first_key_delay_ms']} ms")
    out.append(f"Injection: {status} ({', '.join(details)})")
    if inj.get("at"):
        out.append(f"  at {format_time(inj['at'])}")
    for note in inj.get("notes") or []:
        out.append(f"  note: {visible_text(str(note))}")
    text = inj.get("text")
    if text:
        out.append(f"--- injected text ({len(text)} chars), verbatim ---")
        shown = visible_text(text)
        # Verbatim, trailing blank line included; the end marker starts its own line.
        out.append(shown[:-1] if shown.endswith("\n") else shown + "\n(no newline at end)")
        out.append("--- end of injected text ---")
    else:
        out.append("  (no injected text)")
    out.extend(_later_injections(record.get("injections") or [], text))
    out.extend(_turn_rows(record))

    out.append("")
    out.append("Hooks:")
    out.extend(hook_rows(record.get("hooks") or []))

    warnings = record.get("warnings") or []
    if warnings:
        out.append("")
        out.append("Warnings:")
        out.extend(f"  {visible_text(str(w))}" for w in warnings)

    out.append("")
    folder = record.get("_dir")
    log_path = Path(folder) / LOG_NAME if folder else None
    if log is None:
        out.append("Log: (none: nothing was logged)")
    else:
        out.append(f"Log ({log_path}):")
        out.extend(f"  {visible_text(line)}" for line in log.rstrip("\n").split("\n"))
    return "\n".join(out) + "\n"


def history_lines(record: Mapping[str, Any]) -> list[str]:
    """The native session, transcripts and checkpoints of a record, for `show`."""
    out = ["", "History:"]
    native = record.get("native_session_id")
    sessions = record.get("native_sessions") or []
    out.append(f"  native id   {visible_text(str(native)) if native else '-'}")
    folder = record.get("_dir")
    for entry in sessions:
        where = entry.get("transcript")
        shown = str(Path(folder) / where) if folder and where else "(not copied)"
        note = f" ({entry['note']})" if entry.get("note") else ""
        out.append(f"  transcript  {visible_text(str(entry.get('id')))}: {visible_text(shown)}{visible_text(note)}")
    info = record.get("checkpoints")
    if not isinstance(info, dict):
        out.append("  checkpoints -")
        return out
    if info.get("status") != "taken" or not info.get("after"):
        out.append(f"  checkpoints {info.get('status') or 'none'}: {visible_text(str(info.get('note') or '-'))}")
        return out
    out.append(f"  checkpoints {info.get('before', '')[:12]} → {info.get('after', '')[:12]} "
               f"({info.get('ref')}/…, in {info.get('repo')})")
    from wrapagent.session import checkpoints

    try:
        stat = checkpoints.diff_stat(info)
    except checkpoints.CheckpointError as exc:
        out.append(f"  ({visible_text(str(exc))})")
        return out
    if not stat.strip():
        out.append("  (the session changed no file)")
    out.extend(f"  {visible_text(line)}" for line in stat.rstrip("\n").split("\n") if line)
    return out


def cmd_show(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str]) -> int:
    record = find_record(ns.id, env)
    log = read_log(record)
    if ns.json:
        data = {k: v for k, v in record.items() if k != "_dir"}
        data["dir"] = record.get("_dir")
        data["log"] = log
        json.dump(data, out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        out.write(render_show(record, log))
    return 0


# --------------------------------------------------------------------------- path


def cmd_path(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str], err: IO[str]) -> int:
    root = paths.sessions_root(_resolve_project(ns.project), env)
    out.write(f"{root}\n")
    if not root.exists():
        err.write("wrapagent sessions: (no session recorded for this project yet: the folder does not exist)\n")
    return 0


# --------------------------------------------------------------------------- diff, undo, prune, resume


def _checkpoints_of(ns: argparse.Namespace, env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    record = find_record(ns.id, env)
    info = record.get("checkpoints")
    if not isinstance(info, dict):
        raise _SessionsError(f"session {record.get('id')} has no checkpoints (recorded before they existed)")
    return record, info


def cmd_diff(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str]) -> int:
    """`git diff before after`, run on the user's terminal so pager and colour are git's own."""
    from wrapagent import gitcmd
    from wrapagent.session import checkpoints

    _, info = _checkpoints_of(ns, env)
    try:
        repo, args = checkpoints.diff_args(info, ns.stat, env)
    except checkpoints.CheckpointError as exc:
        raise _SessionsError(str(exc)) from None
    out.flush()
    try:
        return gitcmd.run(repo.top, args, git_dir=repo.git_dir, work_tree=repo.top, interactive=True,
                          base_env=env).code
    except gitcmd.GitError as exc:
        raise _SessionsError(str(exc)) from None


def cmd_undo(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str]) -> int:
    from wrapagent.session import checkpoints

    record, info = _checkpoints_of(ns, env)
    try:
        restored = checkpoints.undo(info, env)
    except checkpoints.CheckpointError as exc:
        raise _SessionsError(str(exc)) from None
    if not restored:
        out.write(f"session {record.get('id')} changed no file: nothing to undo\n")
        return 0
    verbs = {"A": "removed (created by the session)", "D": "restored (deleted by the session)"}
    out.write(f"undid session {record.get('id')} in {info.get('repo')}:\n")
    for status, path in restored:
        out.write(f"  {visible_text(path)}: {verbs.get(status, 'restored')}\n")
    return 0


def cmd_prune(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str]) -> int:
    from wrapagent.session import checkpoints

    if ns.older_than < 0:
        raise _SessionsError("--older-than must be 0 or more days")
    root = _resolve_project(ns.project)
    try:
        dropped = checkpoints.prune(root, ns.older_than, env)
    except checkpoints.CheckpointError as exc:
        raise _SessionsError(str(exc)) from None
    out.write(f"dropped the checkpoints of {len(dropped)} session(s) older than {ns.older_than:g} day(s)"
              f" in {root}\n")
    for session_id in dropped:
        out.write(f"  {session_id}\n")
    return 0


def resume_argv(record: Mapping[str, Any], extra: Sequence[str]) -> tuple[str, list[str], str]:
    """(tool, the tool's arguments, the directory to run in) that continue a recorded session."""
    from wrapagent.session.transcripts import resume_args

    native = record.get("native_session_id")
    tool = str(record.get("transport") or record.get("tool") or "")
    if not native:
        raise _SessionsError(f"session {record.get('id')} has no native session id of {tool or 'its tool'} "
                             "to resume (see `wrapagent sessions show`)")
    try:
        args = resume_args(tool, str(native), extra)
    except KeyError:
        raise _SessionsError(f"wrapagent does not know how {tool!r} resumes a session") from None
    return str(record.get("tool") or tool), args, str(record.get("cwd") or ".")


def cmd_resume(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str]) -> int:
    """Start the same tool, wrapped, in the session's directory, continuing its conversation."""
    record = find_record(ns.id, env)
    tool, args, cwd = resume_argv(record, ns.tool_args)
    try:
        os.chdir(cwd)
    except OSError as exc:
        raise _SessionsError(f"cannot enter the session's directory {cwd}: {exc.strerror}") from None
    out.flush()
    # A fresh wrapagent, as if the user typed `wrapagent TOOL ARGS` there: its
    # own session record, hooks and signal dispositions.
    argv = [sys.executable, "-m", "wrapagent", "--", tool, *args]
    try:
        os.execve(sys.executable, argv, dict(env))
    except OSError as exc:
        raise _SessionsError(f"cannot start wrapagent again: {exc.strerror}") from None
    return 126  # not reached


# --------------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="wrapagent sessions",
                                     description="List and inspect recorded sessions.")
    sub = parser.add_subparsers(dest="action", required=True)
    lst = sub.add_parser("list", help="sessions, newest first (all projects unless --project)")
    lst.add_argument("--project", metavar="PATH", default=None,
                     help="only this project's sessions (`--project .` for the current one)")
    lst.add_argument("--tool", metavar="NAME", default=None, help="only sessions of this tool")
    lst.add_argument("--limit", metavar="N", type=int, default=DEFAULT_LIMIT,
                     help=f"at most N sessions (default {DEFAULT_LIMIT}; 0 = all)")
    lst.add_argument("--json", action="store_true", help="a JSON array instead of a table")
    show = sub.add_parser("show", help="one session: record, injected text, hooks, log")
    show.add_argument("id", metavar="ID", help="session id or a unique prefix of it; `last` = newest")
    show.add_argument("--json", action="store_true", help="the record (plus `dir` and `log`) as JSON")
    pth = sub.add_parser("path", help="the project's sessions repository")
    pth.add_argument("--project", metavar="PATH", default=None, help="default: the current project")
    ref_help = "session id or a unique prefix of it; `last` = newest"
    dif = sub.add_parser("diff", help="what the session changed in the work tree, as a git diff")
    dif.add_argument("id", metavar="ID", help=ref_help)
    dif.add_argument("--stat", action="store_true", help="only the diff stat")
    und = sub.add_parser("undo", help="put every file the session changed back as it was before it")
    und.add_argument("id", metavar="ID", help=ref_help)
    prn = sub.add_parser("prune", help="drop old sessions' checkpoints (git refs) from the project")
    prn.add_argument("--older-than", metavar="DAYS", type=float, default=30.0,
                     help="sessions older than this many days (default 30; 0 = all)")
    prn.add_argument("--project", metavar="PATH", default=None, help="default: the current project")
    res = sub.add_parser("resume", help="start the session's tool again, wrapped, continuing its conversation")
    res.add_argument("id", metavar="ID", help=ref_help)
    res.add_argument("tool_args", metavar="TOOL_ARGS", nargs=argparse.REMAINDER,
                     help="more arguments for the tool (after `--`)")
    return parser


def main(args: Sequence[str], *, out: IO[str] | None = None, err: IO[str] | None = None,
         env: Mapping[str, str] | None = None) -> int:
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    env = os.environ if env is None else env
    ns = _parser().parse_args(list(args))
    try:
        if ns.action == "list":
            return cmd_list(ns, out, env)
        if ns.action == "show":
            return cmd_show(ns, out, env)
        if ns.action == "diff":
            return cmd_diff(ns, out, env)
        if ns.action == "undo":
            return cmd_undo(ns, out, env)
        if ns.action == "prune":
            return cmd_prune(ns, out, env)
        if ns.action == "resume":
            if ns.tool_args[:1] == ["--"]:
                ns.tool_args = ns.tool_args[1:]
            return cmd_resume(ns, out, env)
        return cmd_path(ns, out, env, err)
    except _SessionsError as exc:
        err.write(f"wrapagent sessions: {exc}\n")
        return 1
