"""`sessions list` and `sessions show`: render the records wrapagent wrote, never writing.

A session still running shows as `running`. `show` includes the checkpoints'
diff stat (`history_lines`), read from the project's repository.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import IO, Any, Mapping, Sequence

from wrapagent.commands.sessions_find import _resolve_project, all_records, pick, project_records
from wrapagent.history.records import LOG_NAME, dumps
from wrapagent.visible import field as _cell
from wrapagent.visible import json_text
from wrapagent.visible import visible as visible_text  # the name other commands import from here

INJECTED_STATUSES = ("delivered", "submitted")
DEFAULT_LIMIT = 20


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


def ready_text(inj: Mapping[str, Any], tool: Any) -> str | None:
    """When and by which rule the tool was seen ready: "ready after 1.20s (generic rule: …)".

    "generic" means the tool's own screen markers never showed and the
    fallback (bracketed paste on, output quiet) fired: its screen changed.
    """
    after = inj.get("ready_after_s")
    by = inj.get("ready_by")
    if not isinstance(after, (int, float)) or isinstance(after, bool):
        return None if by is None else f"ready ({_rule_text(by, tool)})"
    text = f"ready after {after:.2f}s"
    return text if by is None else f"{text} ({_rule_text(by, tool)})"


def _rule_text(by: Any, tool: Any) -> str:
    if by == "marker":
        return "its own screen markers"
    if by == "quiet":
        return "output quiet after the reset"
    if by == "generic":
        from wrapagent.inject.adapters import KNOWN_TOOLS

        if tool not in (*KNOWN_TOOLS, "demo"):  # a tool without an adapter: the only rule there is
            return "generic rule"
        return f"generic rule: {_cell(tool)}'s own markers did not show"
    return f"rule {_cell(by)}"


def format_injected(record: Mapping[str, Any]) -> str:
    status = (record.get("injection") or {}).get("status")
    if status in INJECTED_STATUSES:
        return "yes"
    if status in ("lost", "pending", "not delivered"):
        return f"no ({status})"
    return "no"

def _project_name(record: Mapping[str, Any]) -> str:
    root = record.get("project_root")
    return os.path.basename(root.rstrip("/")) or root if isinstance(root, str) and root else "-"

# Every field shown comes from a record, and a record holds what a cloned
# repository chose (its folder's name), what the user typed and what hooks
# said: all of it goes through `wrapagent.visible` (docs/security.md). One-line
# cells and fields through `_cell`, multi-line texts (the injected blocks,
# the log) through `visible_text`, which keeps their newlines.

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
        "ready_by": inj.get("ready_by"),
        "tool_version": record.get("tool_version"),
        "dir": record.get("_dir"),
    }

def read_log(record: Mapping[str, Any]) -> str | None:
    folder = record.get("_dir")
    if not folder:
        return None
    try:
        return (Path(folder) / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None

# --------------------------------------------------------------------------- list


def render_list(records: Sequence[Mapping[str, Any]], total: int, *, filtered: bool = False,
                prefixes: Mapping[str, str] | None = None, colour: bool = False) -> str:
    """The table; ids cut to `prefixes` (shortest unique), blocked/abandoned coloured when `colour`."""
    if not records:
        return "no sessions match\n" if filtered else "no sessions recorded\n"
    prefixes = prefixes or {}
    header = ("ID", "TOOL", "PROJECT", "STARTED", "DURATION", "EXIT", "INJECTED")
    rows = [header] + [
        (
            _cell(prefixes.get(str(r.get("id")), str(r.get("id", "?")))),
            _cell(r.get("tool", "?")),
            _cell(_project_name(r)),
            _cell(format_time(r.get("started_at"))),
            _cell(format_duration(r.get("duration_s"))),
            _cell(format_exit(r)),
            _cell(format_injected(r)),
        )
        for r in records
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    from wrapagent.commands.colour import paint

    states = {"blocked": "1;31", "abandoned": "33", "running": "36"}
    lines = ["  ".join(paint(cell, states.get(cell, "") if i == 5 else "", colour)
                       + " " * (widths[i] - len(cell)) for i, cell in enumerate(row)).rstrip() for row in rows]
    if total > len(records):
        lines.append(f"({total - len(records)} older session(s) not shown; --limit 0 shows all)")
    return "\n".join(lines) + "\n"


def cmd_list(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str]) -> int:
    if ns.project is not None:
        records = project_records(_resolve_project(ns.project), env)
    else:
        records = all_records(env)
    everything = records if ns.project is None else all_records(env)  # what ids must be unique among
    filtered = bool(records) and bool(ns.tool)
    if ns.tool:
        records = [r for r in records if ns.tool in (r.get("tool"), r.get("transport"))]
    total = len(records)
    if ns.limit and ns.limit > 0:
        records = records[: ns.limit]
    if ns.json:
        # Each entry as a record stores it (bytes that are not UTF-8 escaped, listed in its `escaped`).
        entries = [json.loads(dumps(_summary(r), indent=None)) for r in records]
        out.write(json_text(json.dumps(entries, indent=2, ensure_ascii=False)) + "\n")
    else:
        from wrapagent.commands.colour import enabled
        from wrapagent.commands.sessions_ids import unique_prefixes

        prefixes = unique_prefixes(str(r.get("id", "")) for r in everything)
        out.write(render_list(records, total, filtered=filtered, prefixes=prefixes, colour=enabled(out)))
    return 0

# --------------------------------------------------------------------------- show


def hook_rows(hooks: Sequence[Mapping[str, Any]], indent: str = "  ", *,
              blocked_reason: str | None = None) -> list[str]:
    """The hook outcomes as an aligned table (name, kind, exit, duration, timed out).

    `blocked_reason` (a record whose pre_run refused the launch): that exit 2
    is the refusal it meant, not an error of the hook.
    """
    if not hooks:
        return [f"{indent}(none ran)"]
    header = ("NAME", "KIND", "EXIT", "DURATION", "TIMED OUT")
    rows = [header]
    for h in hooks:
        code = h.get("exit_code")
        runs = h.get("runs")
        rows.append((
            _cell(h.get("name", "?")) + (f" x{runs}" if isinstance(runs, int) and runs > 1 else ""),
            _cell(h.get("kind", "?")),
            "-" if code is None else _cell(code),
            format_duration(h.get("duration_s")),
            "yes" if h.get("timed_out") else "no",
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [indent + "  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip() for row in rows]
    for h in hooks:
        if blocked_reason is not None and h.get("name") == "pre_run" and h.get("exit_code") == 2:
            lines.append(f"{indent}pre_run: refused the launch: {visible_text(blocked_reason or '(no reason given)')}")
        elif h.get("error"):
            lines.append(f"{indent}{_cell(h.get('name'))}: error: {visible_text(str(h['error']))}")
    return lines


def _bytes(n: Any) -> str:
    if not isinstance(n, int) or isinstance(n, bool):
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def compaction_rows(record: Mapping[str, Any]) -> list[str]:
    """The conversations' compactions (their summary replaced the blocks; the next message got new ones)."""
    rows = [c for c in record.get("compactions") or [] if isinstance(c, Mapping)]
    if not rows:
        return []
    out = [f"Compactions: {len(rows)}"]
    for c in rows:
        out.append(f"  conversation {_cell(c.get('conversation', '?'))}: {_cell(c.get('how') or '-')} "
                   f"at {_cell(format_time(c['at']) if c.get('at') else '-')}")
    return out


def undelivered(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The deliveries whose blocks the screen never showed in the composer (status `not delivered`)."""
    injections = record.get("injections") or [record.get("injection") or {}]
    return [i for i in injections if isinstance(i, Mapping) and i.get("status") == "not delivered"]


def undelivered_rows(record: Mapping[str, Any]) -> list[str]:
    """One line per message that went to the model without its blocks (the receipt failed)."""
    rows = undelivered(record)
    if not rows:
        return []
    out = [f"Undelivered blocks: {len(rows)}"]
    for inj in rows:
        why = next((str(n)[len("not delivered: "):] for n in inj.get("notes") or []
                    if str(n).startswith("not delivered: ")), "-")
        out.append(f"  conversation {_cell(inj.get('conversation', '?'))}, message {_cell(inj.get('message', 1))}: "
                   f"{visible_text(why)}")
    return out


def _later_injections(injections: Sequence[Mapping[str, Any]], first_text: str | None,
                      tool: Any = None) -> list[str]:
    """One line per later delivery (a reset's conversation, an every_message guard's later message);
    its text only when it differs from the first."""
    out: list[str] = []
    for inj in injections[1:]:
        details = [_cell(inj.get("status") or "none")]
        ready = ready_text(inj, tool)
        if ready:
            details.append(ready)
        if inj.get("at"):
            details.append(f"at {_cell(format_time(inj['at']))}")
        if inj.get("first_key_delay_ms") is not None:
            details.append(f"first key held {_cell(inj['first_key_delay_ms'])} ms")
        message = inj.get("message") or 1
        what = (f"Injection after reset, conversation {_cell(inj.get('conversation', '?'))}" if message == 1
                else f"Injection for message {_cell(message)} of conversation {_cell(inj.get('conversation', '?'))}")
        if inj.get("compaction"):
            what = (f"Injection after compaction, message {_cell(message)} of conversation "
                    f"{_cell(inj.get('conversation', '?'))}")
        out.append(f"{what}: {', '.join(details)}")
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
        # quiet_at is when the output went quiet; waiting_for_input fires quiet_secs after that
        by = f" by {_cell(turn['by'])}" if turn.get("by") else ""
        stopped = ", interrupted by the user" if turn.get("interrupted") else ""
        out.append(f"  #{_cell(turn.get('n'))}  submitted{by} {_cell(format_time(turn.get('at')))}"
                   + (f", output quiet from +{_seconds_between(turn.get('at'), quiet)} (seen waiting "
                      f"quiet_secs later){waits}" if quiet else ", not seen waiting") + stopped)
        files = turn.get("files")
        if isinstance(files, list):
            shown = ", ".join(_cell(f) for f in files[:8]) + (f" … and {len(files) - 8} more" if len(files) > 8 else "")
            out.append(f"      changed: {shown}" if files else "      changed no file")
    if total > TURNS_SHOWN:
        out.append(f"  ... {total - TURNS_SHOWN} more")
    return out


def _sent_rows(record: Mapping[str, Any]) -> list[str]:
    """Messages from `wrapagent send`: when each came, its text, when it went in (or why not)."""
    sent = record.get("sent")
    if not sent:
        return []
    out = ["", f"Sent (wrapagent send): {len(sent)}"]
    for item in sent:
        if item.get("status") == "delivered":
            how = f"delivered {format_time(item.get('delivered_at'))} as turn {item.get('turn')}"
        else:
            how = f"{visible_text(str(item.get('status')))}: {visible_text(str(item.get('reason') or '-'))}"
        out.append(f"  #{item.get('n')}  came {format_time(item.get('at'))}, {how}:")
        out.extend(f"    {visible_text(line)}" for line in str(item.get("text") or "").split("\n"))
    return out


def _stop_check_rows(record: Mapping[str, Any]) -> list[str]:
    """`[stop_check]`: its runs, each continuation wrapagent submitted (verbatim), what was not sent."""
    entry = record.get("stop_check")
    if not entry:
        return []
    runs = entry.get("runs") or []
    conts = entry.get("continuations") or []
    out = ["", f"Stop check: {len(runs)} run(s), {len(conts)} continuation(s) "
               f"(max {entry.get('max_continues', '?')} in a row)"]
    for cont in conts:
        out.append(f"  continuation as turn {cont.get('turn')} (after turn {cont.get('after_turn')}) "
                   f"at {format_time(cont.get('at'))}:")
        out.extend(f"    {visible_text(line)}" for line in str(cont.get("text") or "").split("\n"))
    for item in entry.get("not_sent") or []:
        out.append(f"  after turn {item.get('after_turn')}: not sent ({visible_text(str(item.get('reason')))})")
    for turn in entry.get("interrupted") or []:
        out.append(f"  after turn {_cell(turn)}: not run (the user interrupted the agent)")
    failing = entry.get("still_failing")
    if failing:
        out.append(f"  still failing at turn {failing.get('turn')} after "
                   f"{failing.get('after_continues')} continuation(s) in a row: the agent was let stop")
    return out


def render_show(record: Mapping[str, Any], log: str | None) -> str:
    import shlex

    inj = record.get("injection") or {}
    argv = record.get("argv") or []
    out = [f"session {_cell(record.get('id'))}"]

    def field(label: str, value: Any) -> None:
        out.append(f"  {label:<11} {_cell(value)}")

    field("tool", f"{record.get('tool')} (transport {record.get('transport')}, mode {record.get('mode')})")
    if "tool_version" in record:  # records from before it was recorded have none
        running = record.get("state") == "running"
        field("version", record.get("tool_version") or ("(recorded when it ends)" if running else "unknown"))
    field("argv", " ".join(shlex.quote(str(a)) for a in argv) if argv else "-")
    field("executable", record.get("executable") or "-")
    field("project", record.get("project_root") or "-")
    field("cwd", record.get("cwd") or "-")
    field("started", format_time(record.get("started_at")))
    field("ended", format_time(record.get("ended_at")))
    field("duration", format_duration(record.get("duration_s")))
    if record.get("state") == "blocked":
        field("exit", f"blocked: pre_run refused the launch: {record.get('blocked_reason') or '(no reason given)'}")
    else:
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
    status = _cell(inj.get("status") or "none")
    details = [f"path {_cell(inj.get('path') or '-')}", f"attempts {_cell(inj.get('attempts', 0))}"]
    ready = ready_text(inj, record.get("transport"))
    if ready:
        details.append(ready)
    if inj.get("first_key_delay_ms") is not None:
        details.append(f"first key held {_cell(inj['first_key_delay_ms'])} ms")
    out.append(f"Injection: {status} ({', '.join(details)})")
    if inj.get("at"):
        out.append(f"  at {_cell(format_time(inj['at']))}")
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
    out.extend(_later_injections(record.get("injections") or [], text, record.get("transport")))
    out.extend(undelivered_rows(record))
    out.extend(compaction_rows(record))
    out.extend(_turn_rows(record))
    out.extend(_stop_check_rows(record))
    out.extend(_sent_rows(record))

    out.append("")
    out.append("Hooks:")
    blocked = str(record.get("blocked_reason") or "") if record.get("state") == "blocked" else None
    out.extend(hook_rows(record.get("hooks") or [], blocked_reason=blocked))

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
        out.append(f"Log ({_cell(log_path)}):")
        out.extend(f"  {visible_text(line)}" for line in log.rstrip("\n").split("\n"))
    return "\n".join(out) + "\n"


def recording_cell(record: Mapping[str, Any]) -> str:
    """Where the session's recording is and what it holds (`sessions replay` plays it)."""
    rec = record.get("recording")
    if not isinstance(rec, dict):
        return "-"
    size = f"{rec.get('bytes', 0)} bytes" + (f", {rec['gz_bytes']} compressed" if rec.get("gz_bytes") else "")
    extra = "".join(f"; {text}" for key, text in (("capped", "stopped at its size cap"),
                                                  ("dropped_bytes", "output dropped"), ("note", rec.get("note")),
                                                  ("error", rec.get("error"))) if rec.get(key))
    gone = "" if rec.get("file") and Path(str(rec["file"])).exists() else " (gone: keep_days)"
    return visible_text(f"{rec.get('file')}{gone} ({rec.get('markers', 0)} markers, {size}{extra})")


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
    out.append(f"  recording   {recording_cell(record)}")
    info = record.get("checkpoints")
    if not isinstance(info, dict):
        out.append("  checkpoints -")
        return out
    if info.get("status") != "taken" or not info.get("after"):
        out.append(f"  checkpoints {_cell(info.get('status') or 'none')}: {_cell(info.get('note') or '-')}")
        return out
    out.append(f"  checkpoints {_cell(str(info.get('before', ''))[:12])} → {_cell(str(info.get('after', ''))[:12])} "
               f"({_cell(info.get('ref'))}/…, in {_cell(info.get('repo'))})")
    if info.get("undone_at"):
        out.append(f"  undone      on {format_time(info['undone_at'])} (`wrapagent sessions undo`)")
    from wrapagent.history import checkpoint_access, checkpoints

    try:
        stat = checkpoint_access.diff_stat(info)
    except checkpoints.CheckpointError as exc:
        out.append(f"  ({visible_text(str(exc))})")
        return out
    if not stat.strip():
        out.append("  (the session changed no file)")
    out.extend(f"  {visible_text(line)}" for line in stat.rstrip("\n").split("\n") if line)
    return out


def cmd_show(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str], err: IO[str]) -> int:
    record, note = pick(ns.id, env, ns.cwd, read_only=True)
    if note:
        err.write(visible_text(f"wrapagent sessions: {note}") + "\n")
    log = read_log(record)
    if ns.json:
        data = {k: v for k, v in record.items() if k != "_dir"}
        data["dir"] = record.get("_dir")
        data["log"] = log
        # The record's own JSON form (bytes that are not UTF-8 escaped, `escaped` listing
        # them), with what could act on a terminal as \\u escapes: the same document.
        out.write(json_text(dumps(data)) + "\n")
    else:
        out.write(render_show(record, log))
    return 0
