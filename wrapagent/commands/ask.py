"""A yes from the person at the terminal, before a command drops what cannot be brought back.

`sessions prune` (more than one session's checkpoints) and `uninstall` (the
session history) ask the same way: only a terminal can answer, so a script
or a pipe never says yes by accident; it passes `--yes` when it means it.
"""

from __future__ import annotations

from typing import IO


def yes_at_terminal(stdin: IO[str], out: IO[str], question: str) -> bool:
    """Write `question` + ` [y/N] ` and read the answer; True only for y/yes typed at a terminal."""
    try:
        interactive = stdin.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        interactive = False
    if not interactive:
        return False
    out.write(f"{question} [y/N] ")
    out.flush()
    return stdin.readline().strip().lower() in ("y", "yes")
