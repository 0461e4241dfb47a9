"""`wrapagent sessions …`: read the session records wrapagent wrote, and act on their history.

    sessions list [--project PATH] [--tool NAME] [--limit N] [--json]
    sessions show ID [--json]          ID: a unique prefix (case-insensitive), or `last`
    sessions path [--project PATH]     the project's sessions repository (for `git -C … log`)
    sessions diff ID [--stat]          what the session changed in the work tree (git diff)
    sessions undo ID [--dry-run] [--force]   put the files it changed back as they were before it
    sessions prune [--older-than DAYS] [--project PATH] [--dry-run] [--yes]   drop old checkpoint refs
    sessions resume ID [-- TOOL_ARGS]  the same tool, wrapped, continuing its own session
    sessions replay ID [--speed X] [--idle-limit S]   play the session's recording in this terminal
    sessions export ID --format cast|md|json [-o FILE]   the recording, or the conversation
    sessions search TEXT [--tool T] [--project P | --all]   sessions whose messages or replies hold TEXT

The parser and dispatch live here; finding a record (`last`, prefixes) in
`sessions_find.py`, list and show in `sessions_show.py`, diff, prune and resume
in `sessions_history.py`, undo in `sessions_undo.py`, replay and export in
`sessions_replay.py`, search in `sessions_search.py`. list, show, path,
replay and export never write (export only its `-o FILE`).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import IO, Mapping, Sequence

from wrapagent import paths
from wrapagent.commands.sessions_find import SessionsError as _SessionsError
from wrapagent.commands.sessions_find import _resolve_project, all_records, find_record, pick, project_records
from wrapagent.commands.sessions_history import cmd_diff, cmd_prune, cmd_resume, resume_argv
from wrapagent.commands.sessions_undo import cmd_undo
from wrapagent.commands.sessions_show import (
    DEFAULT_LIMIT,
    cmd_list,
    cmd_show,
    format_exit,
    format_time,
    hook_rows,
    render_list,
    render_show,
    visible_text,
)

# Names other modules (doctor, tests) import from here.
__all__ = [
    "all_records", "cmd_diff", "cmd_list", "cmd_prune", "cmd_resume", "cmd_show", "cmd_undo",
    "find_record", "pick", "format_exit", "format_time", "hook_rows", "main", "project_records",
    "render_list", "render_show", "resume_argv", "visible_text",
]


# --------------------------------------------------------------------------- path


def cmd_path(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str], err: IO[str]) -> int:
    root = paths.sessions_root(_resolve_project(ns.project), env)
    out.write(f"{root}\n")
    if not root.exists():
        err.write("wrapagent sessions: (no session recorded for this project yet: the folder does not exist)\n")
    return 0

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
    show.add_argument("id", metavar="ID", help="session id or a unique prefix of it; `last` = the newest "
                      "session of the current project (else of all projects, said on stderr)")
    show.add_argument("--json", action="store_true", help="the record (plus `dir` and `log`) as JSON")
    pth = sub.add_parser("path", help="the project's sessions repository")
    pth.add_argument("--project", metavar="PATH", default=None, help="default: the current project")
    ref_help = ("session id or a unique prefix of it; `last` = the newest session of the current project")
    dif = sub.add_parser("diff", help="what the session changed in the work tree, as a git diff")
    dif.add_argument("id", metavar="ID", help=ref_help)
    dif.add_argument("--stat", action="store_true", help="only the diff stat")
    dif.add_argument("--turn", metavar="N", type=int, default=None, help="only what turn N changed")
    und = sub.add_parser("undo", help="put every file the session changed back as it was before it")
    und.add_argument("id", metavar="ID", help=ref_help)
    und.add_argument("--dry-run", action="store_true", help="list what undo would do, change nothing")
    und.add_argument("--turn", metavar="N", type=int, default=None, help="only what turn N changed")
    und.add_argument("--force", action="store_true",
                     help="undo even though another session of this repository ran at the same time "
                          "(never past a file changed after the session)")
    prn = sub.add_parser("prune", help="drop old sessions' checkpoints from the project's store")
    prn.add_argument("--older-than", metavar="DAYS", type=float, default=30.0,
                     help="sessions older than this many days (default 30; 0 = all)")
    prn.add_argument("--project", metavar="PATH", default=None, help="default: the current project")
    prn.add_argument("--dry-run", action="store_true", help="list the sessions whose checkpoints would go")
    prn.add_argument("--yes", action="store_true",
                     help="drop more than one session's without asking (scripts; otherwise asked at a terminal)")
    res = sub.add_parser("resume", help="start the session's tool again, wrapped, continuing its conversation")
    res.add_argument("id", metavar="ID", help=ref_help)
    res.add_argument("tool_args", metavar="TOOL_ARGS", nargs=argparse.REMAINDER,
                     help="more arguments for the tool (after `--`)")
    _replay_parsers(sub, ref_help)
    return parser


def _replay_parsers(sub, ref_help: str) -> None:
    rep = sub.add_parser("replay", help="play the session's recording in this terminal (q stops, space pauses)")
    rep.add_argument("id", metavar="ID", help=ref_help)
    rep.add_argument("--speed", metavar="X", type=float, default=1.0, help="playback speed (default 1)")
    rep.add_argument("--idle-limit", metavar="S", type=float, default=None,
                     help="at most S seconds between two events")
    exp = sub.add_parser("export", help="the session's recording (cast) or conversation (md, json)")
    exp.add_argument("id", metavar="ID", help=ref_help)
    exp.add_argument("--format", choices=("cast", "md", "json"), required=True,
                     help="cast: asciicast v3 (asciinema plays it); md: the conversation as Markdown; "
                          "json: the same as data")
    exp.add_argument("-o", "--output", metavar="FILE", default=None,
                     help="write a new file (0600) instead of standard output")
    sea = sub.add_parser("search", help="sessions whose messages or replies contain TEXT (exit 1: none)")
    sea.add_argument("text", metavar="TEXT", help="the text to find (case-insensitive)")
    sea.add_argument("--tool", metavar="T", default=None, help="only sessions of this tool")
    where = sea.add_mutually_exclusive_group()
    where.add_argument("--project", metavar="P", default=None, help="only this project's sessions")
    where.add_argument("--all", action="store_true", help="every project's sessions (the default)")


def main(args: Sequence[str], *, out: IO[str] | None = None, err: IO[str] | None = None,
         env: Mapping[str, str] | None = None, cwd: str | None = None) -> int:
    """`cwd` is where the command was typed: `last` means the newest session of that project."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    env = os.environ if env is None else env
    ns = _parser().parse_args(list(args))
    ns.cwd = os.getcwd() if cwd is None else cwd
    try:
        if ns.action == "list":
            return cmd_list(ns, out, env)
        if ns.action == "show":
            return cmd_show(ns, out, env, err)
        if ns.action == "diff":
            return cmd_diff(ns, out, env, err)
        if ns.action == "undo":
            return cmd_undo(ns, out, env, err)
        if ns.action == "prune":
            return cmd_prune(ns, out, env)
        if ns.action == "resume":
            if ns.tool_args[:1] == ["--"]:
                ns.tool_args = ns.tool_args[1:]
            return cmd_resume(ns, out, env, err)
        if ns.action in ("replay", "export"):
            from wrapagent.commands.sessions_replay import cmd_export, cmd_replay

            return (cmd_replay if ns.action == "replay" else cmd_export)(ns, out, env, err)
        if ns.action == "search":
            from wrapagent.commands.sessions_search import cmd_search

            return cmd_search(ns, out, env, err)
        return cmd_path(ns, out, env, err)
    except _SessionsError as exc:
        from wrapagent.visible import visible

        err.write(visible(f"wrapagent sessions: {exc}") + "\n")  # names folders and tools: inert
        return 1
