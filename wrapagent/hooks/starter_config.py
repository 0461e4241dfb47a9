"""A commented starter `hooks.toml`, written by `wrapagent config init`-style commands.

The file doubles as documentation: everything wrapagent understands is shown,
and only the cheap, always-useful guards are switched on, so a new user gets
value at once and learns the rest by uncommenting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wrapagent.hooks import events

if TYPE_CHECKING:
    from pathlib import Path

_TEMPLATE = """\
# wrapagent hooks.toml
#
# Global file:  ~/.config/wrapagent/hooks.toml   ($XDG_CONFIG_HOME/wrapagent/hooks.toml)
# Project file: <project root>/.wrapagent/hooks.toml  (used only once trusted: `wrapagent trust`)
# A project file replaces the global lifecycle hooks event by event, and its
# [[prompt_guard]] list (if present) replaces the global list; with
#   [extend]
#   prompt_guard = true
# in the project file its guards come after the global ones instead.
# Check this file with `wrapagent config check`.

# ---------------------------------------------------------------------------
# Prompt guards
# ---------------------------------------------------------------------------
# Each guard produces one <prompt-guard name="..."> block, prepended to your
# first message to the agent. A guard that prints nothing adds no block.
#
#   name          the block's name (required)
#   builtin       one of wrapagent's built-in guards   } exactly one
#   command       a shell command; its stdout is used  } of the two
#   args          options of a built-in guard (a table)
#   timeout_secs  give up after this many seconds (default 10)
#
# Command guards run with `sh -c` and read a JSON object on stdin:
# {"project_root", "session_id", "tool", "is_resume", "compaction", "cwd"}.
# Placeholders such as {project_root} are substituted, already shell-quoted.

# On main/master/dev/develop: ask the agent to create a branch before committing.
[[prompt_guard]]
name = "branch_protection"
builtin = "branch_protection"
# args = { branches = ["main", "master", "dev", "develop", "release/*"] }

# When resuming a session: remind the agent of uncommitted and unpushed work.
[[prompt_guard]]
name = "dirty_tree"
builtin = "dirty_tree"
# args = { always = false, max_bytes = 4000 }   # always = true: every session

# Branch, upstream ahead/behind, and `git status --short`.
[[prompt_guard]]
name = "git_status"
builtin = "git_status"
args = { max_bytes = 4000 }

# More built-ins (uncomment to use):
#
# [[prompt_guard]]
# name = "git_diff"
# builtin = "git_diff"                          # uncommitted changes to tracked files
# args = { mode = "stat", max_bytes = 8000 }    # mode = "stat" | "full"
#
# [[prompt_guard]]
# name = "recent_commits"
# builtin = "recent_commits"
# args = { count = 10, max_bytes = 4000 }
#
# [[prompt_guard]]
# name = "environment"
# builtin = "environment"     # OS, architecture, shell, cwd, project root, date, time zone
#
# [[prompt_guard]]
# name = "date"
# builtin = "date"            # today's date and time zone only
#
# [[prompt_guard]]
# name = "directory_listing"
# builtin = "directory_listing"   # top of the tree, without what git ignores
# args = { depth = 2, max_entries = 200 }
#
# [[prompt_guard]]
# name = "prompt_files"
# builtin = "prompt_files"    # files from the project root, each under "== NAME =="
# args = { files = ["AGENTS.md", "GUIDELINES.md"], max_bytes = 16000 }
#
# A command guard:
#
# [[prompt_guard]]
# name = "todo"
# command = "cat {project_root}/TODO.md"
# timeout_secs = 5

# ---------------------------------------------------------------------------
# Lifecycle hooks
# ---------------------------------------------------------------------------
# Shell commands run around each wrapped session.
#
#   enabled       false switches the hook off (default true)
#   command       run with `sh -c` in its own process group
#   timeout_secs  then SIGTERM, then SIGKILL (default 30)
#
@EVENTS@
@PLACEHOLDERS@

# Before the tool starts. A pre_run hook that exits 2 refuses the launch: the
# tool is not started, wrapagent prints the hook's reason (its stderr, else its
# stdout) on one line and exits 2, and the session is recorded as "blocked"
# (session_complete still runs, post_run does not). Any other failure is only
# a warning. This one refuses to start an agent on main/master with uncommitted
# changes (hooks run in the project root):
# [pre_run]
# enabled = true
# command = 'b=$(git symbolic-ref --short -q HEAD) || exit 0; case "$b" in main|master) ;; *) exit 0 ;; esac; test -z "$(git status --porcelain)" || { echo "on $b with uncommitted changes: commit or stash them, or switch to a branch" >&2; exit 2; }'
# timeout_secs = 10

# The agent stopped working and waits for you: after each of your
# submissions, once its output was quiet for quiet_secs (its spinner stops).
# Once per wait, in the background (it never delays a key). wrapagent sees
# the screen, not the agent: a long silent tool run looks like a wait too.
# {reason} says why: "idle" (its turn ended) or "dialog" (an approval or a
# question is up on its screen: fired as soon as it shows, without the quiet
# wait; the quiet wait that follows does not fire again). The hook
# also reads {"session_id", "tool", "turn", "reason"} as JSON
# on stdin. A desktop notification; on macOS, instead of notify-send:
#   command = "osascript -e 'display notification \\"needs you ({reason})\\" with title \\"{tool}\\"'"
# [waiting_for_input]
# enabled = true
# command = 'notify-send "{tool}" "needs you ({reason}), turn {turn}"'
# quiet_secs = 3          # default per tool (3 for codex, claude, gemini, opencode)
# timeout_secs = 10

# After the tool exits.
# [post_run]
# enabled = true
# command = "echo {tool} exited with {exit_code} >> ~/wrapagent.log"
# timeout_secs = 30

# After the session record is saved. Without this section wrapagent commits
# the record to the sessions repository; `enabled = false` turns that off.
# [session_complete]
# enabled = true
# command = "cd {sessions_root} && git --git-dir=.git --work-tree=. add -- {session_id}/ && git --git-dir=.git --work-tree=. commit -q --allow-empty -m 'session {session_id} complete' -- {session_id}/"
# timeout_secs = 30
"""


def _event_list() -> str:
    """Every event of the registry with when it fires and its default timeout."""
    lines = ["# Events:"]
    width = max(len(event.name) for event in events.REGISTRY) + 2
    for event in events.REGISTRY:
        lines.append(f"#   [{event.name}]".ljust(width + 6) + f" {event.fires} (timeout {event.default_timeout:g} s)")
    return "\n".join(lines) + "\n#\n"


def _missing_examples(template: str) -> str:
    """A commented section for each registry event the hand-written examples do not show."""
    out = []
    for event in events.REGISTRY:
        if f"# [{event.name}]" in template:
            continue
        out.append(f"\n# {event.fires[:1].upper()}{event.fires[1:]}.\n# [{event.name}]\n# enabled = true\n"
                   f"# command = \"echo {event.name} {{session_id}} >> ~/wrapagent.log\"\n"
                   f"# timeout_secs = {event.default_timeout:g}\n")
    return "".join(out)


def starter_hooks_toml() -> str:
    """The starter file: the hand-written template with the registry's events and placeholders."""
    text = _TEMPLATE.replace("@EVENTS@\n", _event_list()).replace("@PLACEHOLDERS@\n", events.placeholder_comment())
    return text + _missing_examples(text)


STARTER_HOOKS_TOML = starter_hooks_toml()


def write_starter(path: Path, *, force: bool = False) -> Path:
    """Write STARTER_HOOKS_TOML to `path` (creating parent dirs); return the path.

    Refuses to overwrite an existing file unless `force`: a user's hooks file
    is configuration they wrote, and losing it to a typo'd command is worse
    than one extra flag.
    """
    from wrapagent.errors import WrapagentError

    if path.is_dir():
        raise WrapagentError(f"{path} is a directory; give the path of a hooks.toml file")
    if (path.exists() or path.is_symlink()) and not force:
        raise WrapagentError(f"{path} already exists; use --force to overwrite it")
    # With --force, write through a symlink (dotfile managers) instead of replacing it.
    target = path.resolve() if path.is_symlink() else path
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(STARTER_HOOKS_TOML, encoding="utf-8")
        tmp.replace(target)  # atomic: never a half-written hooks file
    except OSError as exc:
        raise WrapagentError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
