"""In-process prompt guards ("built-ins"): git facts, environment, project files.

A `[[prompt_guard]]` entry with `builtin = "<name>"` runs one of these instead
of a shell command. Each returns the body of one `<prompt-guard>` block, or ""
when there is nothing worth telling the agent.

This package is the one import point for callers (`BUILTIN_NAMES`,
`validate_args`, `run_builtin`, `cap_text`); the guards live in
`git.py`, `environment.py` and `files.py`, and are imported only when one
of theirs runs. Import-light because wrapagent is aliased to `codex`: the
config loader needs only the schema, and `subprocess`, `selectors`, `json`,
... are imported inside the functions that need them.
"""

from __future__ import annotations

from wrapagent.hooks.builtins.schema import BUILTIN_NAMES, validate_args
from wrapagent.hooks.builtins.truncate import TRUNCATED, cap_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from wrapagent.hooks.context import GuardContext

__all__ = ["BUILTIN_NAMES", "TRUNCATED", "cap_text", "run_builtin", "validate_args"]

# Which module of this package holds each built-in (its RUNNERS table).
_MODULES: dict[str, str] = {
    "branch_protection": "git",
    "dirty_tree": "git",
    "git_status": "git",
    "git_diff": "git",
    "recent_commits": "git",
    "environment": "environment",
    "date": "environment",
    "directory_listing": "files",
    "prompt_files": "files",
}


def run_builtin(name: str, args: Mapping[str, object], ctx: GuardContext, *, timeout: float = 5.0) -> str:
    """Text of the block body or "". Never raises for git problems, never prompts.

    `timeout` bounds the whole built-in (all its git calls together). Invalid
    `args` raise ValueError like `validate_args`: that is a configuration
    error, normally reported earlier by the config loader.
    """
    import time
    from importlib import import_module

    checked = validate_args(name, args)
    deadline = time.monotonic() + timeout
    runner = import_module(f"{__name__}.{_MODULES[name]}").RUNNERS[name]
    try:
        return runner(checked, ctx, deadline).strip("\n")
    except OSError:
        return ""  # the project root vanished, permissions, …: nothing to say
