"""Session history against the real CLIs: native session ids, transcripts, checkpoints, resume.

Per CLI, three starts of one conversation, with a guard that prints the `is_resume` it reads:

1. an interactive wrapped session: a message whose reply is full of dialog look-alikes
   (numbered Yes/No choices, `›`/`❯`/`●` lines, "Do you want to proceed?"), the tool quit.
   The message reaches the model after the guard's block (`is_resume False`); the record
   names the tool's own session (`native_session_id`) and its `transcript/` copy holds the
   message; the record has both work-tree checkpoints; the sessions repository is clean.
2. the tool's own resume option (`codex resume --last`, `claude --continue`, …), wrapped:
   the resumed transcript shows the look-alikes again above the composer, and the first typed
   message still gets the block, now `is_resume True`. Before the screen model the look-alikes
   were taken for a dialog, the session never became ready, and the message went bare;
   `codex resume` was "nowhere to inject: subcommand resume".
3. `wrapagent sessions resume last`: the same tool, wrapped, with its own resume option and
   the last session's id; the tool shows the earlier conversation, the next request the model
   gets carries the first message in its history, and the message gets the block again.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from .clienv import SPECS, send_message, tool_params

pytestmark = pytest.mark.integration

TIMEOUT = {"codex": 360, "claude": 360, "gemini": 480, "opencode": 600}
FIRST = "(lookalike) remember the word pelican-4711"
AFTER_RESUME = "and after the resume"
SECOND = "what was the word"
NATIVE_RESUME = {"codex": ["resume", "--last"], "claude": ["--continue"], "gemini": ["--resume", "latest"],
                 "opencode": ["--continue"]}
GUARD = """
[[prompt_guard]]
name = "resume"
command = "python3 -c 'import json,sys; print(\\"is_resume\\", json.load(sys.stdin)[\\"is_resume\\"])'"
"""
RESUME_ARGS = {
    "codex": lambda native, extra: [*extra, "resume", native],
    "claude": lambda native, extra: ["--resume", native, *extra],
    "gemini": lambda native, extra: ["--resume", native, *extra],
    "opencode": lambda native, extra: ["--session", native, *extra],
}


def block(is_resume: bool) -> str:
    return f'<prompt-guard name="resume">\nis_resume {is_resume}\n</prompt-guard>\n\n'


def converse(cli_env, term, text: str, since: int, reply: str = r"MOCK-REPLY") -> list[str]:
    """Type `text` into a ready composer, submit it, wait for the reply (`reply`, a pattern) and
    a quiet screen; the user texts of the turn the model got."""
    spec = cli_env.spec
    send_message(term, text, tail=text[-12:])
    texts = cli_env.mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout, since=since)
    term.wait_for(re.compile(reply), timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=30)
    return texts


def wait_ready_logged(cli_env, count: int, timeout: float = 120.0) -> None:
    """The session log of the `count`-th session says the composer was found."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        logs = sorted(cli_env.sessions_root().glob("*/session.log"), key=lambda p: p.stat().st_mtime)
        if len(logs) >= count and re.search(r"injection: \w+ ready after", logs[-1].read_text(errors="replace")):
            return
        time.sleep(0.1)
    raise AssertionError(f"session {count} never became ready")


def sessions_repo_status(cli_env) -> str:
    proc = subprocess.run(["git", "-C", str(cli_env.sessions_root()), "status", "--porcelain"],
                          capture_output=True, text=True, env=cli_env.env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_native_session_transcript_and_resume(cli_env, tool):
    spec = SPECS[tool]
    cli_env.write_wrapagent_config(hooks_toml=GUARD)
    mock = cli_env.mock
    args = cli_env.interactive_args()

    # 1. an ordinary interactive session, its reply full of dialog look-alikes
    term = cli_env.spawn(args)
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    wait_ready_logged(cli_env, 1)
    term.wait_quiet(spec.settle, timeout=10)
    texts = converse(cli_env, term, FIRST, mock.mark(), reply="Do you want to proceed")
    assert texts == [block(False) + FIRST], mock.summary()
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

    # 2. the tool's own resume option: the look-alikes above the composer, the block on the next message
    mark = mock.mark()
    native_args = cli_env.interactive_args(NATIVE_RESUME[tool])
    term = cli_env.spawn(native_args)
    term.wait_for("Do you want to proceed", timeout=spec.ready_timeout)   # the resumed transcript
    wait_ready_logged(cli_env, 2)
    term.wait_quiet(max(spec.settle, 0.5), timeout=15)
    # the reply drawn and the turn over before the quit keys: during a turn codex takes Ctrl-C
    # for an interrupt and claude its first Ctrl-C, so the tool would not exit
    texts = converse(cli_env, term, AFTER_RESUME, mark, reply=r"MOCK-REPLY-[2-9]")
    assert texts == [block(True) + AFTER_RESUME], mock.summary()
    assert term.quit(spec.quit_keys, gap=spec.quit_gap, timeout=60) == 0
    cli_env.assert_run_clean(term.run)
    record = cli_env.wait_session_record(native_args, timeout=60)
    native = record.get("native_session_id")
    assert native and record["is_resume"] is True, json.dumps(record, indent=1)

    # 3. `sessions resume last`: same tool, wrapped, its own resume option and that id
    mark = mock.mark()
    term = cli_env.spawn_wrapagent(["sessions", "resume", "last", "--", *args])
    term.wait_for(AFTER_RESUME, timeout=spec.ready_timeout)  # the conversation's end, on screen again
    wait_ready_logged(cli_env, 3)  # and a composer under it
    term.wait_quiet(spec.settle, timeout=10)
    texts = converse(cli_env, term, SECOND, mark, reply=r"MOCK-REPLY-[3-9]")
    assert texts == [block(True) + SECOND], mock.summary()
    request = mock.turn_requests(api=spec.api, since=mark)[-1]
    assert "pelican-4711" in json.dumps(request["body"], ensure_ascii=False), mock.summary()
    assert term.quit(spec.quit_keys, gap=spec.quit_gap, timeout=60) == 0
    cli_env.assert_run_clean(term.run)

    resumed = cli_env.wait_session_record(RESUME_ARGS[tool](native, args), timeout=60)
    assert resumed["id"] != record["id"] and resumed["is_resume"] is True
    assert resumed["native_session_id"] == native, resumed["native_sessions"]  # the same conversation, continued
    assert sessions_repo_status(cli_env) == ""
