"""Transcripts read as turns (each tool's format), the Markdown shape, and the search index."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from wrapagent.history import search_index
from wrapagent.history.export import conversation, render_md
from wrapagent.history.transcript_turns import turns_of

BLOCKS = '<prompt-guard name="g">\nguard says\n</prompt-guard>\n\n'


def jsonl(*entries: dict) -> bytes:
    return "".join(json.dumps(e) + "\n" for e in entries).encode()


# Shapes taken from the pinned releases' transcripts (cut to what the readers look at).
CODEX = jsonl(
    {"type": "session_meta", "payload": {"id": "x", "cwd": "/p"}},
    {"type": "response_item", "payload": {"type": "message", "role": "user",
                                          "content": [{"type": "input_text", "text": "<environment_context>…"}]}},
    {"type": "event_msg", "payload": {"type": "item_completed", "item": {
        "type": "UserMessage", "content": [{"type": "text", "text": BLOCKS + "hello codex"}]}}},
    {"type": "event_msg", "payload": {"type": "item_completed", "item": {
        "type": "AgentMessage", "content": [{"type": "Text", "text": "MOCK-REPLY-1"}]}}},
)
CLAUDE = jsonl(
    {"type": "user", "message": {"role": "user", "content": BLOCKS + "hello claude"}},
    {"type": "api-request-blob", "message": {"role": "user", "content": [{"type": "text", "text": "system"}]}},
    {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "MOCK-REPLY-1"}]}},
    {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": "ls output"}]}},
    {"type": "user", "isMeta": True, "message": {"role": "user", "content": "caveat"}},
)
GEMINI = jsonl(
    {"sessionId": "s", "projectHash": "h"},
    {"$set": {"messages": [{"type": "user", "content": [{"text": "<session_context>…"}]}]}},
    {"id": "1", "type": "user", "content": [{"text": BLOCKS + "hello gemini"}]},
    {"id": "2", "type": "gemini", "content": "MOCK-REPLY-1"},
)
OPENCODE = json.dumps({"info": {"id": "ses_1"}, "messages": [
    {"info": {"role": "user"}, "parts": [{"type": "text", "text": BLOCKS + "hello opencode"}]},
    {"info": {"role": "assistant"}, "parts": [{"type": "step-start"}, {"type": "text", "text": "MOCK-REPLY-1"}]},
]}).encode()


@pytest.mark.parametrize("tool,data", [("codex", CODEX), ("claude", CLAUDE), ("gemini", GEMINI),
                                       ("opencode", OPENCODE)])
def test_each_tools_transcript_gives_the_same_turns(tool: str, data: bytes) -> None:
    assert turns_of(tool, [data]) == [{"user": BLOCKS + f"hello {tool}", "agent": "MOCK-REPLY-1"}]


def test_an_unknown_tool_has_no_reader_and_garbage_gives_no_turns() -> None:
    assert turns_of("aider", [b"{}"]) is None
    assert turns_of("codex", [b"\x00not json\n[1, 2]\n"]) == []


def session_folder(tmp_path: Path, tool: str = "demo", **extra) -> tuple[dict, Path]:
    folder = tmp_path / "01ARZ3NDEKTSV4RRFFQ69G5FAV"
    (folder / "transcript").mkdir(parents=True)
    (folder / "transcript" / "demo-1.jsonl").write_bytes(jsonl(
        {"type": "session", "id": "1", "cwd": "/p"},
        {"type": "user", "text": BLOCKS + "first ``` fence"}, {"type": "assistant", "text": "**reply** one"},
        {"type": "user", "text": "second"}, {"type": "assistant", "text": "reply two"}))
    record = {"id": folder.name, "tool": tool, "project_root": "/p", "cwd": "/p", "exit_code": 0,
              "started_at": "2026-11-25T10:00:00+00:00", "ended_at": "2026-11-25T10:05:00+00:00",
              "native_sessions": [{"id": "1", "transcript": "transcript/demo-1.jsonl"},
                                  {"id": "2", "transcript": "../../etc/passwd"}], **extra}
    return record, folder


def test_markdown_has_the_header_then_each_turn_verbatim(tmp_path: Path) -> None:
    record, folder = session_folder(tmp_path)
    md = render_md(conversation(record, folder, {"XDG_STATE_HOME": str(tmp_path)}))
    assert md.startswith(f"# Session {record['id']}\n\n- tool: demo\n- project: /p\n")
    assert "- files changed: unknown (no checkpoints)" in md and "- source: transcript/demo-1.jsonl" in md
    turn1, turn2 = md.split("## Turn 1\n", 1)[1].split("## Turn 2\n", 1)
    assert "### You\n\n````text\n" + BLOCKS + "first ``` fence\n````" in turn1  # a fence its text cannot close
    assert "### demo\n\n**reply** one" in turn1 and "second" in turn2 and "reply two" in turn2


def test_a_session_without_transcript_or_recording_says_so(tmp_path: Path) -> None:
    record = {"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "tool": "aider"}
    conv = conversation(record, tmp_path, {"XDG_STATE_HOME": str(tmp_path)})
    assert conv["source"] == "none" and conv["turns"] == []
    assert "(no conversation found" in render_md(conv)


@pytest.fixture(params=["fts5", "like"])
def index(request, tmp_path: Path, monkeypatch):
    """The index in both modes: FTS5 (trigram), and the LIKE fallback of an SQLite without it."""
    if request.param == "like":
        monkeypatch.setattr(search_index, "FTS_SCHEMA", "CREATE VIRTUAL TABLE x USING no_such_module(a)")
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    conn = search_index.connect(env)
    assert search_index.mode(conn) == request.param
    yield conn, env
    conn.close()


def add(conn, sid: str, tool: str, project: str, turns: list[tuple[str, str]], started: str) -> None:
    record = {"id": sid, "tool": tool, "project_root": project, "started_at": started}
    conv = {"source": "transcript", "turns": [{"n": i, "user": u, "agent": a} for i, (u, a) in enumerate(turns, 1)]}
    with conn:
        search_index.add(conn, record, "/x", conv)


def test_search_finds_substrings_case_insensitively_newest_first(index) -> None:
    conn, env = index
    add(conn, "A" * 26, "codex", "/p1", [("Fix the AUTH middleware\nplease", "done: auth.py")], "2026-11-01")
    add(conn, "B" * 26, "claude", "/p2", [("unrelated", "the migration ran")], "2026-11-02")
    hits = search_index.search(conn, "auth")
    assert [(h.id[0], h.who, h.line) for h in hits] == [("A", "user", "Fix the AUTH middleware"),
                                                         ("A", "agent", "done: auth.py")]
    assert [h.id[0] for h in search_index.search(conn, "igrat")] == ["B"]  # inside a word
    assert search_index.search(conn, "auth", tool="claude") == []
    assert [h.id[0] for h in search_index.search(conn, "the", project="/p2")] == ["B"]
    assert search_index.search(conn, "zebra") == []
    assert [h.id[0] for h in search_index.search(conn, "ix")] == ["A"]  # under three characters: LIKE
    assert search_index.search(conn, '"; DROP TABLE messages; --') == []
    assert search_index.search(conn, "100%") == []


def test_indexing_a_session_again_replaces_it(index) -> None:
    conn, env = index
    add(conn, "A" * 26, "codex", "/p", [("old words", "")], "2026-11-01")
    add(conn, "A" * 26, "codex", "/p", [("new words", "")], "2026-11-01")
    assert search_index.search(conn, "old words") == [] and len(search_index.search(conn, "new words")) == 1


def test_the_index_file_is_private_and_never_a_link(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    search_index.connect(env).close()
    path = search_index.index_path(env)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    os.unlink(path)
    os.symlink(tmp_path / "elsewhere", path)
    with pytest.raises(OSError):
        search_index.connect(env)
    assert not (tmp_path / "elsewhere").exists()


def test_catch_up_indexes_finished_sessions_it_does_not_know(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    record, folder = session_folder(tmp_path, state="finished")
    (folder / "session.json").write_text(json.dumps(record))
    running = tmp_path / "01ARZ3NDEKTSV4RRFFQ69G5FAW"
    running.mkdir()
    (running / "session.json").write_text(json.dumps({"id": running.name, "state": "running"}))
    conn = search_index.connect(env)
    assert search_index.catch_up(conn, [folder, running], env) == 1
    assert search_index.catch_up(conn, [folder, running], env) == 0
    assert [h.turn for h in search_index.search(conn, "reply two")] == [2]
    conn.close()
