"""Finding a run's native sessions and copying their transcripts.

The layouts and first lines are those the pinned CLIs wrote against the mock
(integration/ checks the real thing): codex's `session_meta`, claude's
per-cwd folder of `<uuid>.jsonl`, gemini's `.project_root` + `chats/`,
opencode's SQLite `session` table and `opencode export`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from wrapagent.history import transcripts


def write_jsonl(path: Path, lines: list[dict], mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def world(tmp_path: Path) -> dict:
    home = tmp_path / "home"
    cwd = tmp_path / "work" / "my_proj.x"
    cwd.mkdir(parents=True)
    other = tmp_path / "work" / "other"
    other.mkdir()
    now = time.time()
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"), "PATH": os.environ["PATH"]}
    return {"home": home, "cwd": cwd, "other": other, "env": env, "started": now - 60, "ended": now,
            "old": now - 3600}


def collect(tool: str, w: dict, tmp_path: Path, **kw) -> tuple[dict, Path]:
    record: dict = {"warnings": []}
    session_dir = tmp_path / "session"
    session_dir.mkdir(exist_ok=True)
    transcripts.collect(tool, record, session_dir, cwd=w["cwd"], started=w["started"], ended=w["ended"],
                        env=w["env"], **kw)
    return record, session_dir


def codex_rollout(w: dict, name: str, session_id: str, cwd: Path, mtime: float, text: str) -> Path:
    path = w["home"] / ".codex" / "sessions" / "2026" / "11" / "23" / f"rollout-{name}-{session_id}.jsonl"
    return write_jsonl(path, [
        {"timestamp": "2026-11-23T23:34:43.559Z", "type": "session_meta",
         "payload": {"session_id": session_id, "id": session_id, "cwd": str(cwd), "originator": "codex-tui"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": text}]}},
    ], mtime)


def test_codex_matches_cwd_and_time_window_oldest_first(world: dict, tmp_path: Path) -> None:
    w = world
    codex_rollout(w, "a", "id-old", w["cwd"], w["old"], "an earlier run")
    codex_rollout(w, "b", "id-other", w["other"], w["ended"] - 5, "another project")
    codex_rollout(w, "c", "id-first", w["cwd"], w["ended"] - 30, "first conversation")
    codex_rollout(w, "d", "id-second", w["cwd"], w["ended"] - 10, "after /new")
    record, folder = collect("codex", w, tmp_path)
    assert [s["id"] for s in record["native_sessions"]] == ["id-first", "id-second"]
    assert record["native_session_id"] == "id-second"
    copied = (folder / record["native_sessions"][0]["transcript"]).read_text()
    assert "first conversation" in copied
    assert record["warnings"] == []


def test_codex_home_from_env(world: dict, tmp_path: Path) -> None:
    w = world
    w["env"]["CODEX_HOME"] = str(tmp_path / "codex-home")
    write_jsonl(tmp_path / "codex-home" / "sessions" / "2026" / "01" / "02" / "rollout-x-abc.jsonl",
                [{"type": "session_meta", "payload": {"id": "abc", "cwd": str(w["cwd"])}}], w["ended"] - 1)
    record, _ = collect("codex", w, tmp_path)
    assert record["native_session_id"] == "abc"


def test_claude_slug_folder_and_one_file_per_conversation(world: dict, tmp_path: Path) -> None:
    w = world
    slug = transcripts.claude_slug(w["cwd"])
    assert "/" not in slug and "." not in slug and "_" not in slug and slug.startswith("-")
    folder = w["home"] / ".claude" / "projects" / slug
    user = lambda sid, text: {"type": "user", "cwd": str(w["cwd"]), "sessionId": sid,  # noqa: E731
                              "message": {"role": "user", "content": text}}
    write_jsonl(folder / "11111111-aaaa.jsonl", [user("11111111-aaaa", "before /clear")], w["ended"] - 20)
    write_jsonl(folder / "22222222-bbbb.jsonl", [user("22222222-bbbb", "after /clear")], w["ended"] - 2)
    write_jsonl(folder / "33333333-cccc.jsonl", [user("33333333-cccc", "last week")], w["old"])
    write_jsonl(folder / "44444444-dddd.jsonl", [{"type": "mode", "sessionId": "44444444-dddd"}], w["ended"] - 1)
    record, out = collect("claude", w, tmp_path)
    assert [s["id"] for s in record["native_sessions"]] == ["11111111-aaaa", "22222222-bbbb"]
    assert record["native_session_id"] == "22222222-bbbb"
    assert "after /clear" in (out / record["native_sessions"][1]["transcript"]).read_text()


def test_gemini_finds_its_project_by_project_root(world: dict, tmp_path: Path) -> None:
    w = world
    tmp = w["home"] / ".gemini" / "tmp"
    for name, root in (("my-proj", w["cwd"]), ("other", w["other"])):
        (tmp / name).mkdir(parents=True)
        (tmp / name / ".project_root").write_text(str(root))
    first = {"sessionId": "447b68ce", "projectHash": "758c", "kind": "main"}
    write_jsonl(tmp / "my-proj" / "chats" / "session-2026-11-23T23-35-447b68ce.jsonl",
                [first, {"$set": {"messages": [{"type": "user", "content": [{"text": "hi gemini"}]}]}}],
                w["ended"] - 3)
    write_jsonl(tmp / "other" / "chats" / "session-2026-11-23T23-36-99999999.jsonl",
                [{"sessionId": "99999999"}], w["ended"] - 3)
    record, out = collect("gemini", w, tmp_path)
    assert record["native_session_id"] == "447b68ce"
    assert "hi gemini" in (out / record["native_sessions"][0]["transcript"]).read_text()


def opencode_db(w: dict, rows: list[tuple[str, Path, float]]) -> None:
    db = Path(w["env"]["XDG_DATA_HOME"]) / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, directory TEXT, title TEXT, "
                 "time_created INTEGER, time_updated INTEGER)")
    for sid, directory, updated in rows:
        conn.execute("INSERT INTO session VALUES (?, 'p', ?, 't', ?, ?)",
                     (sid, str(directory), int(updated * 1000) - 5000, int(updated * 1000)))
    conn.commit()
    conn.close()


def fake_opencode(tmp_path: Path, body: str) -> str:
    script = tmp_path / "bin" / "opencode"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


def test_opencode_reads_the_store_and_exports(world: dict, tmp_path: Path) -> None:
    w = world
    opencode_db(w, [("ses_old", w["cwd"], w["old"]), ("ses_other", w["other"], w["ended"] - 4),
                    ("ses_mine", w["cwd"], w["ended"] - 4)])
    exe = fake_opencode(tmp_path, 'test "$1" = export || exit 9\n'
                                  'echo "Exporting session: $2" >&2\n'
                                  'printf \'{"info": {"id": "%s"}, "cwd": "%s"}\\n\' "$2" "$(pwd)"\n')
    record, out = collect("opencode", w, tmp_path, executable=exe)
    assert record["native_session_id"] == "ses_mine"
    data = json.loads((out / record["native_sessions"][0]["transcript"]).read_text())
    assert data == {"info": {"id": "ses_mine"}, "cwd": str(w["cwd"])}
    assert record["native_sessions"][0]["source"] == "opencode export"  # a store laid out otherwise


def test_opencode_export_failure_is_a_warning(world: dict, tmp_path: Path) -> None:
    w = world
    opencode_db(w, [("ses_mine", w["cwd"], w["ended"] - 4)])
    exe = fake_opencode(tmp_path, 'echo "Error: Session not found" >&2; exit 1\n')
    record, out = collect("opencode", w, tmp_path, executable=exe)
    assert record["native_session_id"] == "ses_mine"
    assert "transcript" not in record["native_sessions"][0]
    assert "Session not found" in record["native_sessions"][0]["note"]
    assert any("Session not found" in x for x in record["warnings"])


def test_opencode_export_is_bounded_in_time(world: dict, tmp_path: Path) -> None:
    """Like the real launcher, the fake starts a child that holds the pipes; both are killed."""
    import psutil

    w = world
    opencode_db(w, [("ses_mine", w["cwd"], w["ended"] - 4)])
    exe = fake_opencode(tmp_path, f"sleep 600 &\necho $! > {tmp_path}/child.pid\nwait\n")
    record, _ = collect("opencode", w, tmp_path, executable=exe, timeout=1.0)
    assert "timed out" in record["native_sessions"][0]["note"]
    pid = int((tmp_path / "child.pid").read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_size_cap_keeps_whole_lines_and_says_so(world: dict, tmp_path: Path) -> None:
    w = world
    lines = [{"type": "session_meta", "payload": {"id": "big", "cwd": str(w["cwd"])}}]
    lines += [{"n": i, "pad": "x" * 100} for i in range(100)]
    write_jsonl(w["home"] / ".codex" / "sessions" / "2026" / "11" / "23" / "rollout-big.jsonl", lines,
                w["ended"] - 1)
    record, out = collect("codex", w, tmp_path, max_bytes=1000)
    entry = record["native_sessions"][0]
    copied = (out / entry["transcript"]).read_bytes()
    assert 0 < len(copied) <= 1000 and copied.endswith(b"\n")
    for line in copied.splitlines():
        json.loads(line)
    assert "size cap" in entry["note"]
    assert any("truncated" in x for x in record["warnings"])


def test_nothing_found_and_unknown_tools(world: dict, tmp_path: Path) -> None:
    record, out = collect("codex", world, tmp_path)
    assert record["native_session_id"] is None and record["native_sessions"] == []
    assert not (out / transcripts.TRANSCRIPT_DIR).exists()
    record, _ = collect("sh", world, tmp_path)
    assert "native_session_id" not in record


def test_a_broken_store_never_raises(world: dict, tmp_path: Path) -> None:
    db = Path(world["env"]["XDG_DATA_HOME"]) / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"not a database at all" * 100)
    record, _ = collect("opencode", world, tmp_path)
    assert any("cannot look for opencode" in x for x in record["warnings"])


def test_resume_args_per_tool() -> None:
    assert transcripts.resume_args("codex", "u-1", ["--no-daemon"]) == ["--no-daemon", "resume", "u-1"]
    assert transcripts.resume_args("claude", "u-1") == ["--resume", "u-1"]
    assert transcripts.resume_args("gemini", "u-1", ["-m", "x"]) == ["--resume", "u-1", "-m", "x"]
    assert transcripts.resume_args("opencode", "ses_1") == ["--session", "ses_1"]
    with pytest.raises(KeyError):
        transcripts.resume_args("sh", "x")


def test_nested_sessions_conversations_are_left_out(world: dict, tmp_path: Path) -> None:
    w = world
    codex_rollout(w, "a", "id-mine", w["cwd"], w["ended"] - 30, "the user's conversation")
    codex_rollout(w, "b", "id-subagent", w["cwd"], w["ended"] - 10, "a nested `codex exec`")
    root = tmp_path / "sessions"
    me = "01JAAAAAAAAAAAAAAAAAAAAAAA"
    for name, parent, native in (("01JAAAAAAAAAAAAAAAAAAAAAAB", me, "id-subagent"),
                                 ("01JAAAAAAAAAAAAAAAAAAAAAAC", "01JOTHER", "id-mine"),
                                 ("01H00000000000000000000000", me, "id-mine")):  # older: not a child
        (root / name).mkdir(parents=True)
        (root / name / "session.json").write_text(json.dumps(
            {"id": name, "parent_session": parent, "native_sessions": [{"id": native}]}))
    claimed = transcripts.claimed_by_children(root, me)
    assert claimed == {"id-subagent"}
    record, _ = collect("codex", w, tmp_path, exclude=claimed)
    assert [s["id"] for s in record["native_sessions"]] == ["id-mine"]
