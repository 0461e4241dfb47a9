"""Which programs are coding agents: wrapagent types into those only.

wrapagent proxies and records any program, but it types on its own (the blocks
before the first message, a stop check's continuation, `wrapagent send`) only
into an agent's composer. A shell, a REPL or an editor would run the guard
text as commands or code, so "turns on bracketed paste" is no test of an
agent: the list below is, plus the names the user adds in the config
(`[agents] programs = [...]`).

The list is data: a new agent TUI is one line here. Names are matched on the
program's base name, case-insensitively, with a Windows-style `.exe`/`.cmd`
suffix and a version suffix (`aider3`, `goose-1.2`) ignored, so a wrapper
script or a pinned copy is recognised too.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable

BUILTIN_AGENTS: tuple[str, ...] = (
    # the four CLIs wrapagent has adapters for, and their package names
    "codex",
    "claude",
    "claude-code",
    "gemini",
    "gemini-cli",
    "opencode",
    # wrapagent's own demo agent
    "demo",
    # other agent TUIs, known by name (generic readiness; no adapter of their own)
    "aider",
    "qwen",
    "qwen-code",
    "goose",
    "crush",
    "cursor-agent",
    "amp",
    "copilot",
    "kimi",
    "kiro-cli",
    "plandex",
    "cline",
    "auggie",
    "droid",
    "openhands",
    "kilocode",
)
"""Programs known to be coding agents with a composer (interactive message input)."""

KNOWN_NON_AGENTS: tuple[str, ...] = (
    "sh", "bash", "zsh", "fish", "dash", "ksh", "tcsh", "csh", "nu", "pwsh", "xonsh",
    "python", "python3", "ipython", "node", "irb", "ruby", "ghci", "lua", "R", "julia",
    "psql", "mysql", "sqlite3", "redis-cli",
    "vim", "nvim", "vi", "emacs", "nano", "helix", "hx", "micro", "less", "more", "man",
    "top", "htop", "tmux", "screen", "ssh", "git",
)
"""Programs named in `doctor --probe`'s answer as "not an agent" with a reason: shells,
REPLs, editors, pagers. Not needed to decide (anything not listed as an agent is not one);
it only lets the answer say what kind the program is."""

_SUFFIXES = re.compile(r"(\.(exe|cmd|bat|js|mjs|sh))$", re.IGNORECASE)
_VERSION = re.compile(r"[-_.]?v?\d+(\.\d+)*$")


def program_name(program: str) -> str:
    """The name a program is known by: base name, lower case, no `.exe`/version suffix."""
    name = os.path.basename(program.rstrip("/")).strip().lower()
    name = _SUFFIXES.sub("", name)
    stripped = _VERSION.sub("", name)
    return stripped or name


def _names(configured: Iterable[str]) -> set[str]:
    return {program_name(c) for c in configured if isinstance(c, str) and c.strip()}


def is_agent(program: str, configured: Iterable[str] = ()) -> bool:
    """True when `program` (a name or a path) is a coding agent wrapagent may type into.

    `configured`: the names (or paths) the user listed in the config as agents.
    """
    name = program_name(program)
    if not name:
        return False
    return name in _BUILTIN or name in _names(configured)


def kind_of(program: str, configured: Iterable[str] = ()) -> str:
    """What `doctor --probe` says a program is: "agent (built in)", "agent (configured)",
    "shell, REPL or editor", or "not an agent"."""
    name = program_name(program)
    if name in _BUILTIN:
        return "agent (built in)"
    if name in _names(configured):
        return "agent (configured)"
    if name in _NON_AGENTS:
        return "shell, REPL or editor"
    return "not an agent"


_BUILTIN = frozenset(program_name(n) for n in BUILTIN_AGENTS)
_NON_AGENTS = frozenset(program_name(n) for n in KNOWN_NON_AGENTS)
