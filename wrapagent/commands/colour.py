"""Colour for wrapagent's own output: on at a terminal, off with NO_COLOR or when piped.

`--color=auto|always|never` (any subcommand, before `--`) sets the mode for
the process; `auto` follows https://no-color.org (NO_COLOR set and not empty
turns colour off) and colours only a terminal that is not `dumb`. The same
decision is handed to git (`sessions diff`) through `git_color_args`, so a
NO_COLOR user gets no colour from git either.

Never imported on the launch path of a wrapped tool: only subcommands use it.
"""

from __future__ import annotations

import os
from typing import IO, Mapping

MODES = ("auto", "always", "never")
_mode = "auto"

RED, YELLOW, GREEN, CYAN, BOLD, DIM = "31", "33", "32", "36", "1", "2"


def set_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"--color: {mode!r} is not one of {', '.join(MODES)}")
    global _mode
    _mode = mode


def mode() -> str:
    return _mode


def take_option(args: list[str]) -> list[str]:
    """`args` without `--color[=WHEN]` (before any `--`); the mode is set from it.

    Accepted anywhere among a subcommand's own words, as git takes it, so
    every subcommand has it without each parser knowing about it.
    """
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out.extend(args[i:])
            break
        if arg == "--color" or arg == "--colour":
            if i + 1 < len(args) and args[i + 1] in MODES:
                set_mode(args[i + 1])
                i += 2
                continue
            set_mode("always")  # a bare --color, as ls and grep take it
        elif arg.startswith(("--color=", "--colour=")):
            set_mode(arg.split("=", 1)[1])
        else:
            out.append(arg)
        i += 1
    return out


def enabled(stream: IO[str] | None, env: Mapping[str, str] | None = None) -> bool:
    """Whether to colour what goes to `stream`."""
    if _mode != "auto":
        return _mode == "always"
    env = os.environ if env is None else env
    if env.get("NO_COLOR", ""):
        return False
    if env.get("TERM", "") == "dumb":
        return False
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):
        return False


def paint(text: str, code: str, on: bool) -> str:
    """`text` in SGR `code` when `on` (reset right after, so a cut line never bleeds colour)."""
    return f"\x1b[{code}m{text}\x1b[0m" if on and text and code else text


def git_color_args(stream: IO[str] | None, env: Mapping[str, str] | None = None) -> list[str]:
    """`--color=always` / `--no-color` for a git command writing to `stream`, per wrapagent's decision.

    git itself ignores NO_COLOR; passing the decision keeps `sessions diff` in
    step with the rest of wrapagent's output.
    """
    if _mode == "always":
        return ["--color=always"]
    if _mode == "never" or (env if env is not None else os.environ).get("NO_COLOR", ""):
        return ["--no-color"]
    return []  # auto at a terminal or a pipe: git decides as it always does (color.ui)
