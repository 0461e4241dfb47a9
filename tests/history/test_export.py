"""A session's conversation exported: the tool's transcripts read as turns, then written as Markdown."""

from __future__ import annotations

import json
import os
from pathlib import Path

from wrapagent.history.export import conversation, render_md, transcript_files

RECORD = {"id": "01KEXPORT", "tool": "demo", "tool_version": "1.0", "project_root": "/p", "cwd": "/p/sub",
          "started_at": "2026-03-09T10:00:00+00:00", "ended_at": "2026-03-09T10:05:00+00:00", "duration_s": 300,
          "exit_code": 0, "native_sessions": [{"transcript": "transcript/one.jsonl"},
                                              {"transcript": "../../etc/passwd"}, {"transcript": "transcript/gone"}]}


def _session(tmp_path: Path) -> Path:
    (tmp_path / "transcript").mkdir()
    lines = [{"type": "user", "text": "fix ```the``` bug"}, {"type": "assistant", "text": "done"}]
    (tmp_path / "transcript" / "one.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    return tmp_path


def test_only_the_transcripts_inside_the_session_folder_are_read(tmp_path: Path) -> None:
    assert [name for name, _ in transcript_files(RECORD, _session(tmp_path))] == ["transcript/one.jsonl"]


def test_the_conversation_from_the_transcript(tmp_path: Path) -> None:
    conv = conversation(RECORD, _session(tmp_path), dict(os.environ), with_files=False)
    assert conv["source"] == "transcript/one.jsonl"
    assert conv["turns"] == [{"n": 1, "user": "fix ```the``` bug", "agent": "done"}]
    assert conv["session"]["files_changed"] is None and conv["session"]["cwd"] == "/p/sub"


def test_markdown_keeps_the_message_verbatim_in_a_fence_it_cannot_close(tmp_path: Path) -> None:
    md = render_md(conversation(RECORD, _session(tmp_path), dict(os.environ), with_files=False))
    assert md.startswith("# Session 01KEXPORT\n\n- tool: demo 1.0\n- project: /p\n- folder: /p/sub\n")
    assert "- files changed: unknown (no checkpoints)\n- source: transcript/one.jsonl\n" in md
    assert "### You\n\n````text\nfix ```the``` bug\n````\n\n### demo\n\ndone\n" in md


def test_no_transcript_and_no_recording_says_so(tmp_path: Path) -> None:
    record = dict(RECORD, native_sessions=[], id="01KNONE")
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
    conv = conversation(record, tmp_path, env, with_files=False)
    assert (conv["source"], conv["turns"]) == ("none", [])
    assert "(no conversation found: no transcript and no recording)" in render_md(conv)


def test_changed_files_are_listed_up_to_a_limit() -> None:
    conv = {"session": dict(files_changed=[f"f{i}" for i in range(502)]), "source": "none", "turns": []}
    line = next(x for x in render_md(conv).splitlines() if x.startswith("- files changed:"))
    assert line.startswith("- files changed: `f0`, `f1`") and line.endswith(" and 2 more")
    conv["session"]["files_changed"] = []
    assert "- files changed: none" in render_md(conv)
