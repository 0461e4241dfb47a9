"""Session history against the real CLIs: native session ids, transcripts, checkpoints, resume.

Per CLI, one interactive wrapped session (a message typed, the reply seen,
the tool quit), then `wrapagent sessions resume last` in a new terminal:

- the record names the tool's own session (`native_session_id`) and its
  `transcript/` copy holds the message the user typed; the record also has
  both work-tree checkpoints; the sessions repository is clean (committed);
- `sessions resume` starts the same tool, wrapped, with its own resume
  option and that id; the tool shows the earlier conversation, and the next
  request the model gets carries the earlier message in its history.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from .clienv import SPECS, tool_params

pytestmark = pytest.mark.integration

TIMEOUT = {"codex": 200, "claude": 200, "gemini": 260, "opencode": 360}
FIRST = "remember the word pelican-4711"
SECOND = "what was the word"
RESUME_ARGS = {
    "codex": lambda native, extra: [*extra, "resume", native],
    "claude": lambda native, extra: ["--resume", native, *extra],
    "gemini": lambda native, extra: ["--resume", native, *extra],
    "opencode": lambda native, extra: ["--session", native, *extra],
}


def converse(cli_env, term, text: str, turns: int, since: int) -> None:
    """Type `text` into a ready composer, submit it, wait for the reply, leave the screen quiet."""
    spec = cli_env.spec
    term.type(text)
    term.wait_for(text[-12:], timeout=15)
    term.enter(after=0.3)
    cli_env.mock.wait_for_turns(turns, api=spec.api, timeout=spec.reply_timeout, since=since)
    term.wait_for("MOCK-REPLY", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=30)


def sessions_repo_status(cli_env) -> str:
    proc = subprocess.run(["git", "-C", str(cli_env.sessions_root()), "status", "--porcelain"],
                          capture_output=True, text=True, env=cli_env.env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_native_session_transcript_and_resume(cli_env, tool):
    spec = SPECS[tool]
    args = cli_env.interactive_args()

    # 1. an ordinary interactive session
    term = cli_env.spawn(args)
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    converse(cli_env, term, FIRST, 1, cli_env.mock.mark())
    assert term.quit(spec.quit_keys, gap=spec.quit_gap, timeout=60) == 0
    cli_env.assert_run_clean(term.run)

    record = cli_env.wait_session_record(args, timeout=60)
    native = record.get("native_session_id")
    assert native, json.dumps(record, indent=1)
    assert record["native_sessions"][-1]["id"] == native
    folder = Path(record["_path"]).parent
    copies = [folder / s["transcript"] for s in record["native_sessions"] if s.get("transcript")]
    assert copies and all(p.parent.name == "transcript" for p in copies), record["native_sessions"]
    assert any(FIRST in p.read_text(encoding="utf-8", errors="replace") for p in copies)
    if tool == "opencode":
        assert cli_env.assert_transcripts_are_opencode_exports(record) == len(copies)
    checkpoints = record["checkpoints"]
    assert checkpoints["status"] == "taken" and checkpoints["before"] and checkpoints["after"], checkpoints
    assert sessions_repo_status(cli_env) == ""

    # 2. resume it: same tool, wrapped, its own resume option, the earlier conversation on screen
    mark = cli_env.mock.mark()
    term = cli_env.spawn_wrapagent(["sessions", "resume", "last", "--", *args])
    term.wait_for("pelican-4711", timeout=spec.ready_timeout)
    # a composer under an earlier conversation: what the screen shows after a reply
    term.wait_for(re.compile(spec.redrawn), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    converse(cli_env, term, SECOND, 1, mark)
    request = cli_env.mock.turn_requests(api=spec.api, since=mark)[-1]
    assert FIRST in json.dumps(request["body"], ensure_ascii=False), cli_env.mock.summary()
    assert term.quit(spec.quit_keys, gap=spec.quit_gap, timeout=60) == 0
    cli_env.assert_run_clean(term.run)

    resumed = cli_env.wait_session_record(RESUME_ARGS[tool](native, args), timeout=60)
    assert resumed["id"] != record["id"] and resumed["is_resume"] is True
    assert resumed["native_session_id"] == native, resumed["native_sessions"]  # the same conversation, continued
    assert sessions_repo_status(cli_env) == ""
