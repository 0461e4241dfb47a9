"""In-process prompt guards ("built-ins"): git facts, environment, files.

Skeleton: the API is fixed so other modules can import it; bodies follow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wrapagent.context import GuardContext

BUILTIN_NAMES: tuple[str, ...] = (
    "branch_protection",
    "dirty_tree",
    "git_status",
    "git_diff",
    "recent_commits",
    "environment",
    "date",
    "directory_listing",
    "prompt_files",
)


def validate_args(name: str, args: Mapping[str, object]) -> dict[str, object]:
    """Return args with defaults filled; raise ValueError naming the bad key."""
    if name not in BUILTIN_NAMES:
        raise ValueError(f'unknown built-in guard "{name}"; known: {", ".join(BUILTIN_NAMES)}')
    return dict(args)


def run_builtin(name: str, args: Mapping[str, object], ctx: GuardContext, *, timeout: float = 5.0) -> str:
    """Text of the block body or "". Never raises for git problems, never prompts."""
    validate_args(name, args)
    return ""
