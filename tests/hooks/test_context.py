"""What a guard or hook knows about its session: set once, read by everyone, changed by none."""

from __future__ import annotations

from pathlib import Path

import pytest

from wrapagent.hooks.context import GuardContext


def test_the_facts_with_their_defaults() -> None:
    ctx = GuardContext(project_root=Path("/p"), cwd=Path("/p/src"), tool="codex", session_id="01K")
    assert (ctx.is_resume, ctx.session_dir, ctx.sessions_root, ctx.compaction) == (False, None, None, False)
    assert ctx.cwd == Path("/p/src") and ctx.tool == "codex"


def test_a_guard_cannot_alter_them() -> None:
    ctx = GuardContext(project_root=Path("/p"), cwd=Path("/p"), tool="codex", session_id="01K")
    with pytest.raises((AttributeError, TypeError)):
        ctx.session_id = "someone-else"  # type: ignore[misc]
    assert ctx.session_id == "01K"


def test_a_fact_it_does_not_know_is_refused() -> None:
    with pytest.raises(TypeError):
        GuardContext(project_root=Path("/p"), cwd=Path("/p"), tool="codex", session_id="01K", secret="x")


def test_the_blocks_after_a_compaction_say_so() -> None:
    ctx = GuardContext(project_root=Path("/p"), cwd=Path("/p"), tool="claude", session_id="01K", compaction=True,
                       is_resume=True)
    assert ctx.compaction and ctx.is_resume
