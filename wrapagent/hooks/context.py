"""What hooks, guards and built-ins know about the session they run for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GuardContext:
    """The facts a guard or hook may depend on; frozen so a guard cannot alter them."""

    project_root: Path
    cwd: Path
    tool: str  # transport name: codex, claude, gemini, opencode, or the executable's name
    session_id: str
    is_resume: bool = False
    session_dir: Path | None = None
    sessions_root: Path | None = None
