"""opencode's conversations read from its database, as `opencode export` prints them.

The schema and rows are those opencode 1.18.33 wrote against the mock; the
expected document is what its `opencode export` printed for them (the
integration suite compares the two on both pinned releases).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from wrapagent.history import opencode_db, transcripts

SCHEMA = """
CREATE TABLE `session` (
  `id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text,
  `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text NOT NULL,
  `version` text NOT NULL, `share_url` text, `summary_additions` integer, `summary_deletions` integer,
  `summary_files` integer, `summary_diffs` text, `metadata` text, `cost` real DEFAULT 0 NOT NULL,
  `tokens_input` integer DEFAULT 0 NOT NULL, `tokens_output` integer DEFAULT 0 NOT NULL,
  `tokens_reasoning` integer DEFAULT 0 NOT NULL, `tokens_cache_read` integer DEFAULT 0 NOT NULL,
  `tokens_cache_write` integer DEFAULT 0 NOT NULL, `revert` text, `permission` text, `agent` text,
  `model` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `time_compacting` integer, `time_archived` integer);
CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
"""

SID = "ses_de8e0cfb8ffeo6ac5UVUWpBR4l"
USER = {"role": "user", "time": {"created": 1795684249718}, "agent": "build",
        "model": {"providerID": "mock", "modelID": "mock-model"}, "summary": {"diffs": []}}
REPLY = {"parentID": "msg_2171f3076001DruOruwJH3ZML3", "role": "assistant", "mode": "build", "agent": "build",
         "cost": 0, "time": {"created": 1795684249740, "completed": 1795684251560}, "finish": "stop"}
PARTS = [  # (id, message id, data), inserted out of order on purpose
    ("prt_2171f30a0002", "msg_2171f308c001ysf6d5Y9d2KsJ5", {"type": "text", "text": "MOCK-REPLY-1"}),
    ("prt_2171f307800186jK0UOFJjbYLR", "msg_2171f3076001DruOruwJH3ZML3", {"type": "text", "text": "hello there"}),
    ("prt_2171f30a0001", "msg_2171f308c001ysf6d5Y9d2KsJ5", {"type": "step-start", "snapshot": "88cf"}),
]


def make_store(path: Path, cwd: str, updated_ms: int) -> Path:
    """opencode's database with one conversation of two messages."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, path, title, version, summary_additions, "
        "summary_deletions, summary_files, cost, tokens_input, tokens_output, agent, model, time_created, "
        "time_updated) VALUES (?, '43e7', 'sunny-tiger', ?, '', 'Mock session title', '1.18.33', 0, 0, 0, "
        "0.0, 20, 10, 'build', '{\"id\":\"mock-model\",\"providerID\":\"mock\"}', ?, ?)",
        (SID, cwd, updated_ms - 4000, updated_ms))
    conn.execute("INSERT INTO message VALUES ('msg_2171f308c001ysf6d5Y9d2KsJ5', ?, 2, 2, ?)",
                 (SID, json.dumps(REPLY)))
    conn.execute("INSERT INTO message VALUES ('msg_2171f3076001DruOruwJH3ZML3', ?, 1, 1, ?)",
                 (SID, json.dumps(USER)))
    for part_id, message_id, data in PARTS:
        conn.execute("INSERT INTO part VALUES (?, ?, ?, 1, 1, ?)", (part_id, message_id, SID, json.dumps(data)))
    conn.commit()
    conn.close()
    return path


def expected(cwd: str, updated_ms: int) -> dict:
    """What `opencode export` prints for that conversation."""
    def part(part_id: str, message_id: str, data: dict) -> dict:
        return {**data, "id": part_id, "sessionID": SID, "messageID": message_id}

    return {
        "info": {"id": SID, "slug": "sunny-tiger", "projectID": "43e7", "directory": cwd, "path": "",
                 "title": "Mock session title", "agent": "build", "model": {"id": "mock-model", "providerID": "mock"},
                 "version": "1.18.33", "summary": {"additions": 0, "deletions": 0, "files": 0}, "cost": 0,
                 "tokens": {"input": 20, "output": 10, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                 "time": {"created": updated_ms - 4000, "updated": updated_ms}},
        "messages": [
            {"info": {**USER, "id": "msg_2171f3076001DruOruwJH3ZML3", "sessionID": SID},
             "parts": [part(*PARTS[1])]},
            {"info": {**REPLY, "id": "msg_2171f308c001ysf6d5Y9d2KsJ5", "sessionID": SID},
             "parts": [part(*PARTS[2]), part(*PARTS[0])]},
        ],
    }


def test_the_document_is_the_export_with_messages_and_parts_in_id_order(tmp_path: Path) -> None:
    db = make_store(tmp_path / "opencode.db", "/w/proj", 1795684253240)
    data = opencode_db.read_export(db, SID)
    assert data is not None and data.endswith(b"}\n")
    document = json.loads(data)
    assert document == expected("/w/proj", 1795684253240)
    assert json.dumps(document["info"]["cost"]) == "0"  # a REAL column, printed as opencode prints it


def test_a_missing_conversation_or_an_unknown_layout_gives_none(tmp_path: Path) -> None:
    db = make_store(tmp_path / "opencode.db", "/w/proj", 1795684253240)
    assert opencode_db.read_export(db, "ses_not_there") is None
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE session DROP COLUMN slug")  # a release that laid its store out otherwise
    conn.commit()
    conn.close()
    assert opencode_db.read_export(db, SID) is None


@pytest.mark.parametrize("content", [b"", b"not a database at all" * 100])
def test_an_unreadable_store_gives_none(tmp_path: Path, content: bytes) -> None:
    db = tmp_path / "opencode.db"
    db.write_bytes(content)
    assert opencode_db.read_export(db, SID) is None
    assert opencode_db.read_export(tmp_path / "missing.db", SID) is None


def test_a_broken_row_gives_none(tmp_path: Path) -> None:
    db = make_store(tmp_path / "opencode.db", "/w/proj", 1795684253240)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE part SET data = '{not json' WHERE id = 'prt_2171f30a0001'")
    conn.commit()
    conn.close()
    assert opencode_db.read_export(db, SID) is None


@pytest.mark.parametrize("data_dir", ["data", "da?ta #1 100%"])
def test_the_run_copies_it_without_running_opencode(tmp_path: Path, data_dir: str) -> None:
    """After the tool exited the user waits: no `opencode export` (a whole opencode start) is run.
    A `?`, `#` or `%` in a folder's name is part of the database's path (not a URI's query)."""
    cwd = tmp_path / "work" / "proj"
    cwd.mkdir(parents=True)
    data_home = tmp_path / data_dir
    now = time.time()
    make_store(data_home / "opencode" / "opencode.db", str(cwd), int((now - 4) * 1000))
    ran = tmp_path / "export-ran"
    exe = tmp_path / "bin" / "opencode"
    exe.parent.mkdir()
    exe.write_text(f"#!/bin/sh\ntouch {ran}\nexit 3\n")
    exe.chmod(0o755)
    record: dict = {"warnings": []}
    out = tmp_path / "session"
    out.mkdir()
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(data_home), "PATH": os.environ["PATH"]}
    transcripts.collect("opencode", record, out, cwd=cwd, started=now - 60, ended=now, env=env,
                        executable=str(exe))
    assert not ran.exists() and record["warnings"] == []
    entry = record["native_sessions"][0]
    assert entry["id"] == SID and "note" not in entry
    assert entry["source"] == str(data_home / "opencode" / "opencode.db")  # what `sessions show` says
    assert json.loads((out / entry["transcript"]).read_bytes()) == expected(str(cwd), int((now - 4) * 1000))
