"""Session ids and records."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from wrapagent.history.ids import CROCKFORD as _CROCKFORD, new_session_id


def decode_ms(ulid: str) -> int:
    value = 0
    for ch in ulid:
        value = value * 32 + _CROCKFORD.index(ch)
    return value >> 80


def test_session_id_is_a_ulid() -> None:
    before = time.time_ns() // 1_000_000
    sid = new_session_id()
    after = time.time_ns() // 1_000_000
    assert re.fullmatch(r"[0-7][0-9A-HJKMNP-TV-Z]{25}", sid)
    assert before <= decode_ms(sid) <= after
    assert len({new_session_id() for _ in range(1000)}) == 1000


def test_session_ids_sort_by_time() -> None:
    first = new_session_id()
    time.sleep(0.002)
    assert new_session_id() > first


def test_tool_that_cannot_start_still_gets_a_finished_committed_record(tmp_path: Path) -> None:
    tool = tmp_path / "badtool"
    tool.write_text("#!/nonexistent/interpreter\n")
    tool.chmod(0o755)
    proc = subprocess.run([sys.executable, "-m", "wrapagent", str(tool)], cwd=tmp_path,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
    assert proc.returncode == 127
    assert proc.stderr.count("\n") == 1 and "interpreter" in proc.stderr
    state = Path(os.environ["XDG_STATE_HOME"])
    (record_path,) = state.glob("wrapagent/projects/*/*/session.json")
    record = json.loads(record_path.read_text())
    assert record["exit_code"] == 127 and record["state"] == "finished"
    assert any("interpreter" in w for w in record["warnings"])
    log = subprocess.run(["git", "-C", str(record_path.parent.parent), "log", "--format=%s"],
                         capture_output=True, text=True).stdout
    assert f"session {record['id']} complete" in log
