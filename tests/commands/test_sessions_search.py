"""`sessions search TEXT`: one line per message that holds it, across every project, exit 1 when none does."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from wrapagent.commands.sessions_search import LINE_CHARS, _around, cmd_search, session_dirs

SID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


def _world(tmp_path: Path) -> dict[str, str]:
    """One finished demo session in a project's sessions root, with its transcript."""
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path / "home")}
    folder = tmp_path / "state" / "wrapagent" / "projects" / "p-1234" / SID
    (folder / "transcript").mkdir(parents=True)
    (folder / "transcript" / "demo.jsonl").write_text("\n".join(json.dumps(e) for e in (
        {"type": "user", "text": "where do pelicans nest\x1b]0;t\x07"}, {"type": "assistant", "text": "on islands"})))
    (folder / "session.json").write_text(json.dumps({
        "id": SID, "tool": "demo", "state": "finished", "project_root": str(tmp_path / "home" / "p"),
        "started_at": "2026-03-09T10:00:00", "native_sessions": [{"transcript": "transcript/demo.jsonl"}]}))
    (folder.parent / ".running").mkdir()
    (folder.parent / "not-an-id").mkdir()
    return env


def search(env: dict[str, str], text: str) -> tuple[int, str]:
    out = io.StringIO()
    code = cmd_search(argparse.Namespace(text=text, tool=None, project=None, all=True), out, env, io.StringIO())
    return code, out.getvalue()


def test_only_session_folders_are_looked_at(tmp_path: Path) -> None:
    env = _world(tmp_path)
    assert [p.name for p in session_dirs(env)] == [SID]


def test_a_match_names_the_session_where_and_who_and_is_printed_inert(tmp_path: Path, monkeypatch) -> None:
    env = _world(tmp_path)
    monkeypatch.setenv("HOME", env["HOME"])  # a project under the home folder is shown as ~/…
    code, out = search(env, "PELICAN")
    assert code == 0
    (line,) = out.splitlines()
    assert line.startswith("01ARZ3N") and "  ~/p  demo  2026-03-09 10:00:00  turn 1 you: where do pelicans nest" in line
    assert "\x1b" not in line
    code, out = search(env, "islands")
    assert code == 0 and "turn 1 demo: on islands" in out


def test_nothing_found_is_exit_1_and_nothing_to_search_an_error(tmp_path: Path) -> None:
    env = _world(tmp_path)
    assert search(env, "walrus") == (1, "")
    with pytest.raises(Exception, match="nothing to search for"):
        search(env, "")


def test_a_long_line_is_cut_around_the_match() -> None:
    line = "x" * 500 + " needle " + "y" * 500
    cut = _around(line, "NEEDLE")
    assert "needle" in cut and cut.startswith("…") and cut.endswith("…") and len(cut) == LINE_CHARS + 2
    assert _around("short needle", "needle") == "short needle"
