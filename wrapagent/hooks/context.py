"""What hooks, guards and built-ins know about the session they run for."""

from __future__ import annotations

from wrapagent.values import Frozen
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from pathlib import Path


class GuardContext(Frozen):
    """The facts a guard or hook may depend on; frozen so a guard cannot alter them.

    A `values.Frozen`, not a dataclass: it is built before the tool starts,
    and importing `dataclasses` costs ~15 ms there.
    """

    __slots__ = ("project_root", "cwd", "tool", "session_id", "is_resume", "session_dir", "sessions_root",
                 "compaction")
    _defaults = {"is_resume": False, "session_dir": None, "sessions_root": None, "compaction": False}

    project_root: Path
    cwd: Path
    tool: str  # transport name: codex, claude, gemini, opencode, or the executable's name
    session_id: str
    is_resume: bool
    session_dir: Path | None
    sessions_root: Path | None
    compaction: bool
    """The blocks are for the message after a compaction (`/compact`, `/compress`, or the tool's
    own): the conversation went on, but its summary replaced the blocks given before."""
