"""The date and environment built-ins: today's date with its zone, and where the agent runs."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from builtin_repos import ctx_for, run
from wrapagent.hooks.builtins import environment, run_builtin

PINNED = datetime(2026, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=1), "CET"))


def test_date(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(environment, "_now", lambda: PINNED)
    monkeypatch.setenv("TZ", "Europe/Paris")
    assert run("date", tmp_path) == "Today's date: 2026-03-04 (Wednesday), time zone Europe/Paris (UTC+01:00)."


def test_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(environment, "_now", lambda: PINNED)
    monkeypatch.setenv("TZ", "CET")
    monkeypatch.setenv("SHELL", "/bin/zsh")
    sub = tmp_path / "src"
    out = run_builtin("environment", {}, ctx_for(tmp_path, cwd=sub)).splitlines()
    assert out[0].startswith(f"OS: {os.uname().sysname} ")
    assert out[1:] == [
        f"Architecture: {os.uname().machine}",
        "Shell: /bin/zsh",
        f"Working directory: {sub}",
        f"Project root: {tmp_path}",
        "Date: 2026-03-04 05:06 (Wednesday), time zone CET (UTC+01:00)",
    ]


def test_without_an_iana_name_the_abbreviation_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(environment, "_now", lambda: PINNED)
    monkeypatch.setenv("TZ", "CET-1")
    assert "time zone CET (UTC+01:00)" in run("date", tmp_path)
