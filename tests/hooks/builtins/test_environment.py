"""The date and environment built-ins: today's date with its zone, and where the agent runs."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from wrapagent.hooks.builtins import environment, run_builtin
from wrapagent.hooks.context import GuardContext

PINNED = datetime(2026, 3, 9, 14, 5, tzinfo=timezone(timedelta(hours=5, minutes=30), "IST"))


@pytest.fixture
def pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "_now", lambda: PINNED)


def ctx_for(root: Path) -> GuardContext:
    return GuardContext(project_root=root, cwd=root / "sub", tool="codex", session_id="s1")


def test_the_date_line_names_the_weekday_and_the_zone(pinned, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    assert run_builtin("date", {}, ctx_for(tmp_path)) == \
        "Today's date: 2026-03-09 (Monday), time zone Asia/Kolkata (UTC+05:30)."


def test_without_an_iana_name_the_abbreviation_is_used(pinned, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("TZ", "IST-5:30")
    assert "time zone IST (UTC+05:30)" in run_builtin("date", {}, ctx_for(tmp_path))


def test_the_environment_says_where_the_agent_runs(pinned, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("SHELL", "/bin/zsh")
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    lines = run_builtin("environment", {}, ctx_for(tmp_path)).splitlines()
    assert lines[0].startswith(f"OS: {os.uname().sysname} ")
    assert lines[1:] == [f"Architecture: {os.uname().machine}", "Shell: /bin/zsh",
                         f"Working directory: {tmp_path / 'sub'}", f"Project root: {tmp_path}",
                         "Date: 2026-03-09 14:05 (Monday), time zone Asia/Kolkata (UTC+05:30)"]
